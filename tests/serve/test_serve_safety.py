"""``sentvec serve`` safety, over HTTP against a real server process: the API key, the bounded
queue (429 + Retry-After), and SIGTERM during a burst (no accepted request lost)."""

from __future__ import annotations

import asyncio
import signal
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from sentvec.serve import start_server  # noqa: E402

KEY = "sk-test-0123456789abcdef"
LONG = "a fairly long sentence about nothing in particular, said again and again " * 20


@pytest.fixture(scope="module")
def server(tiny_minilm_dir):
    with start_server(
        *[str(tiny_minilm_dir), "--name", "tiny"],
        *["--precision", "float32"],  # as the oracle (auto is bfloat16 on a CPU with it)
        *["--max-batch-size", "2", "--max-queue-items", "16", "--max-input-items", "8"],
        env={"SENTVEC_API_KEY": KEY},
    ) as srv:
        yield srv


AUTH = {"Authorization": f"Bearer {KEY}"}


def test_key_is_required_everywhere_but_health(server):
    for path in ("/v1/models", "/info", "/metrics"):
        assert httpx.get(server.url + path).status_code == 401
        assert httpx.get(server.url + path, headers=AUTH).status_code == 200
    r = httpx.post(server.url + "/v1/embeddings", json={"input": "hello"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert r.headers["www-authenticate"] == "Bearer"
    r = httpx.post(
        server.url + "/embed", json={"inputs": "hello"}, headers={"Authorization": "Bearer nope"}
    )
    assert r.status_code == 401 and set(r.json()) == {"error", "error_type"}
    assert "Incorrect API key" in r.json()["error"]
    r = httpx.post(server.url + "/embed", json={"inputs": "hello"}, headers={"Authorization": KEY})
    assert r.status_code == 401  # the key without "Bearer "
    for scheme in ("bearer", "BEARER"):  # the scheme is case-insensitive (RFC 9110 11.1)
        r = httpx.post(
            server.url + "/embed",
            json={"inputs": "hello"},
            headers={"Authorization": f"{scheme} {KEY}"},
        )
        assert r.status_code == 200
    assert httpx.get(server.url + "/health").status_code == 200


def test_openai_client_with_and_without_the_key(server, tiny_minilm):
    good = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
    res = good.embeddings.create(model="tiny", input=["hello there"], encoding_format="float")
    assert np.abs(np.array(res.data[0].embedding) - tiny_minilm.encode("hello there")).max() <= 1e-6
    bad = openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.embeddings.create(model="tiny", input="hello")


def test_key_is_not_on_the_command_line_nor_in_the_log(server, capsys):
    from sentvec.cli import main

    for argv in (["--api-key", KEY], [f"--api-key={KEY}"]):
        with pytest.raises(SystemExit) as exc:
            main(["serve", "minilm", *argv])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert KEY not in err
        assert "--api-key-file FILE or $SENTVEC_API_KEY" in err
    # a mistyped option is unknown to argparse: its value is not echoed either
    for argv in (
        ["minilm", "--api-ke", KEY],
        ["minilm", f"--api-ke={KEY}"],
        ["--api-ke", KEY, "x"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(["serve", *argv])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert KEY not in err
        assert "unrecognized arguments: --api-ke" in err
    assert KEY not in server.output()


def test_full_queue_is_a_429_with_retry_after(server):
    async def burst():
        async with httpx.AsyncClient(base_url=server.url, headers=AUTH, timeout=120) as c:
            return await asyncio.gather(
                *(
                    c.post("/v1/embeddings", json={"input": [f"{i} {j} {LONG}" for j in range(8)]})
                    for i in range(6)
                )
            )

    responses = asyncio.run(burst())
    codes = sorted(r.status_code for r in responses)
    assert 429 in codes and 200 in codes and set(codes) <= {200, 429}
    for r in responses:
        if r.status_code == 429:
            assert r.headers["retry-after"] == "1"
            assert r.json()["error"]["code"] == "rate_limit_exceeded"
            assert "--max-queue-items" in r.json()["error"]["message"]
        else:
            assert len(r.json()["data"]) == 8


def _in_progress(url: str) -> float:
    text = httpx.get(url + "/metrics", headers=AUTH).text
    for line in text.splitlines():
        if line.startswith('sentvec_requests_in_progress{model="tiny"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_sigterm_during_a_burst_loses_no_accepted_request(server, tiny_minilm):
    """Runs last: it stops the module's server."""
    texts = [f"request {i}: {LONG}" for i in range(12)]

    async def burst():
        async with httpx.AsyncClient(base_url=server.url, headers=AUTH, timeout=120) as c:
            tasks = [
                asyncio.create_task(c.post("/embed", json={"inputs": t, "truncate": True}))
                for t in texts
            ]
            deadline = time.monotonic() + 60
            while await asyncio.to_thread(_in_progress, server.url) < len(texts):
                assert time.monotonic() < deadline, "the burst never was in flight at once"
                await asyncio.sleep(0.02)
            server.proc.send_signal(signal.SIGTERM)  # all 12 accepted, most still queued
            return await asyncio.gather(*tasks)

    responses = asyncio.run(burst())
    assert [r.status_code for r in responses] == [200] * len(texts)
    with pytest.warns(UserWarning, match="truncated to"):
        want = tiny_minilm.encode(texts, normalize=True)
    got = np.array([r.json()[0] for r in responses])
    assert np.abs(got - want).max() <= 1e-5
    assert server.proc.wait(60) == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health")
