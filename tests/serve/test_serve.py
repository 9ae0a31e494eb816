"""``sentvec serve``, started for real in a subprocess and spoken to over HTTP: the official
``openai`` client and TEI's ``/embed`` against ``encode`` of the same model, batching, truncation,
``dimensions`` and every malformed request."""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from sentvec.serve import start_server  # noqa: E402

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
BIN = REF / "tiny-bigram.bin"
SENTENCES = [
    line.strip()
    for line in (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
TEXTS = SENTENCES[:5]
MAX_ITEMS = 64
MAX_BYTES = 200_000
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def pipeline_dir(tiny_minilm, tmp_path_factory):
    """The 2-layer MiniLM whitened with 32 components (eigen solver), saved as a pipeline."""
    from sentvec import Pipeline, Whitening

    X = tiny_minilm.encode(SENTENCES[100:400])
    path = tmp_path_factory.mktemp("serve") / "white"
    Pipeline(tiny_minilm, Whitening(n_components=32).fit(X)).save(path)
    return path


@pytest.fixture(scope="module")
def server(tiny_minilm_dir, pipeline_dir, request):
    """One server for the module, with the four models; it loads while the oracles load."""
    srv = start_server(
        *[str(tiny_minilm_dir), str(BIN), str(pipeline_dir), "minilm"],
        *["--name", "tiny", "--name", "s2v", "--name", "white", "--name", "minilm"],
        *["--max-input-items", str(MAX_ITEMS), "--max-request-bytes", str(MAX_BYTES)],
        *["--precision", "float32"],  # as the oracles (auto is bfloat16 on a CPU with it)
        wait=False,
    )
    with srv:
        request.getfixturevalue("oracles")
        srv.wait_ready()
        yield srv


@pytest.fixture(scope="module")
def oracles(tiny_minilm, pipeline_dir):
    """The in-process encoders, computing with the torch thread count the server runs with.

    A one-sentence forward pass splits its reductions across threads, so its last bit
    depends on the thread count; an earlier test of the suite may have changed this
    process's (Dask workers in-process set it to 1). The server is a fresh process.
    """
    import subprocess
    import sys

    import torch

    from sentvec import Pipeline, Sent2Vec, load_encoder

    fresh = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True,
        text=True,
        check=True,
    )
    before = torch.get_num_threads()
    torch.set_num_threads(int(fresh.stdout))
    try:
        yield {
            "tiny": tiny_minilm,
            "s2v": Sent2Vec.load(BIN),
            "white": Pipeline.load(pipeline_dir),
            "minilm": load_encoder("minilm", device="cpu"),
        }
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


MODELS = ["tiny", "s2v", "white", "minilm"]


@pytest.mark.parametrize("name", MODELS)
def test_openai_client_float_equals_encode(client, oracles, name):
    res = client.embeddings.create(model=name, input=TEXTS, encoding_format="float")
    got = np.array([d.embedding for d in res.data])
    want = oracles[name].encode(TEXTS)
    assert [d.index for d in res.data] == list(range(len(TEXTS)))
    assert res.model == name and res.object == "list"
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-6
    assert res.usage.prompt_tokens == res.usage.total_tokens > 0


@pytest.mark.parametrize("name", MODELS)
def test_openai_client_base64_is_exact(client, oracles, name):
    res = client.embeddings.create(model=name, input=TEXTS, encoding_format="base64")
    got = np.stack([np.frombuffer(base64.b64decode(d.embedding), dtype="<f4") for d in res.data])
    np.testing.assert_array_equal(got, oracles[name].encode(TEXTS))
    # the client's default (it asks for base64 and decodes it) gives the same floats
    res = client.embeddings.create(model=name, input=TEXTS[0])
    want = oracles[name].encode(TEXTS[:1])[0]  # alone: padding-free, as the server ran it
    np.testing.assert_array_equal(np.array(res.data[0].embedding, dtype=np.float32), want)


@pytest.mark.parametrize("dim", [1, 2, 3, 16, 300])
def test_base64_body_is_what_orjson_writes_for_each_row(dim):
    """The base64 answer is built with array operations; it must be byte for byte the JSON of
    one dict per row with that row's base64, at every index width and row width."""
    from types import SimpleNamespace

    import orjson

    from sentvec.serve.protocol import openai_response_body
    from sentvec.serve.served_model import TokenCounts

    rng = np.random.default_rng(dim)
    for n in (1, 9, 10, 11, 100, 101, 1001):
        vectors = rng.standard_normal((n, dim)).astype(np.float32)
        vectors[0, 0], vectors[-1] = np.nan, 0.0
        call = SimpleNamespace(encoding_format="base64", model=SimpleNamespace(name='m"é'))
        counts = TokenCounts(np.arange(n), None)
        rows = [
            {"object": "embedding", "index": i, "embedding": base64.b64encode(v).decode()}
            for i, v in enumerate(vectors.astype("<f4"))
        ]
        usage = {"prompt_tokens": counts.processed, "total_tokens": counts.processed}
        expected = {"object": "list", "data": rows, "model": 'm"é', "usage": usage}
        assert openai_response_body(call, vectors, counts) == orjson.dumps(expected)


@pytest.mark.parametrize("name", ["tiny", "s2v", "white"])
def test_tei_embed_equals_encode(server, oracles, name):
    r = httpx.post(server.url + "/embed", json={"inputs": TEXTS, "model": name})
    assert r.status_code == 200
    got = np.array(r.json())
    assert np.abs(got - oracles[name].encode(TEXTS, normalize=True)).max() <= 1e-6
    r = httpx.post(
        server.url + "/embed", json={"inputs": TEXTS[0], "normalize": False, "model": name}
    )
    got = np.array(r.json())
    assert got.shape == (1, oracles[name].encode(TEXTS[:1]).shape[1])  # a list per input
    assert np.abs(got[0] - oracles[name].encode(TEXTS[0])).max() <= 1e-6


def test_embed_without_model_uses_the_first(server, oracles):
    r = httpx.post(server.url + "/embed", json={"inputs": TEXTS[:2]})
    assert (
        np.abs(np.array(r.json()) - oracles["tiny"].encode(TEXTS[:2], normalize=True)).max() <= 1e-6
    )


def test_dimensions_of_a_whitened_pipeline_is_the_whitening_with_k(client, oracles, tiny_minilm):
    from sentvec import Whitening

    k = 8
    res = client.embeddings.create(
        model="white", input=TEXTS, dimensions=k, encoding_format="float"
    )
    got = np.array([d.embedding for d in res.data])
    # independent oracle: the whitening fitted with k components on the same vectors
    X = tiny_minilm.encode(SENTENCES[100:400])
    want = Whitening(n_components=k).fit(X).transform(tiny_minilm.encode(TEXTS))
    assert got.shape == (len(TEXTS), k)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize("name", ["tiny", "s2v"])
def test_dimensions_elsewhere_is_a_400_saying_why(client, name):
    with pytest.raises(openai.BadRequestError) as err:
        client.embeddings.create(model=name, input="hello", dimensions=8)
    assert err.value.status_code == 400
    assert "whitened pipeline" in err.value.body["message"]
    assert err.value.body["param"] == "dimensions"


def test_truncation_is_reported_never_silent(server, oracles):
    long_text = "the quick brown fox jumps over the lazy dog " * 60  # > 256 tokens
    r = httpx.post(
        server.url + "/v1/embeddings", json={"model": "tiny", "input": [long_text, "short one"]}
    )
    assert r.status_code == 200
    body = r.json()
    assert r.headers["x-sentvec-truncated-inputs"] == "1"
    assert body["usage"]["truncated_inputs"] == 1
    info = httpx.get(server.url + "/info").json()
    limit = {m["name"]: m for m in info["sentvec"]["models"]}["tiny"]["max_input_length"]
    assert body["usage"]["prompt_tokens"] == limit + 4  # "short one" is [CLS] short one [SEP]
    with pytest.warns(UserWarning, match="truncated to"):  # in-process, encode warns
        want = oracles["tiny"].encode([long_text, "short one"])
    assert np.abs(np.array([d["embedding"] for d in body["data"]]) - want).max() <= 1e-6
    # TEI: truncate=false (its default) refuses, truncate=true truncates and says so
    r = httpx.post(server.url + "/embed", json={"inputs": ["ok", long_text]})
    assert r.status_code == 413
    assert r.json()["error_type"] == "validation"
    assert "inputs[1]" in r.json()["error"] and "truncate=true" in r.json()["error"]
    r = httpx.post(server.url + "/embed", json={"inputs": [long_text], "truncate": True})
    assert r.status_code == 200 and r.headers["x-sentvec-truncated-inputs"] == "1"


BAD_OPENAI = [
    (b"", 400, "body is empty"),
    (b"{", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (b'{"model": "tiny"}', 400, "'input' is required"),
    (b'{"input": []}', 400, "empty list"),
    (b'{"input": ""}', 400, "input[0] is empty"),
    (b'{"input": ["a", "  "]}', 400, "input[1] is empty or whitespace"),
    (b'{"input": [1, 2, 3]}', 400, "token ids"),
    (b'{"input": ["a", null]}', 400, "input[1] must be a string"),
    (b'{"input": 5}', 400, "must be a string or a list of strings"),
    (b'{"input": {"a": 1}}', 400, "must be a string or a list of strings"),
    (b'{"input": "a", "model": "nope"}', 404, "does not exist"),
    (b'{"input": "a", "model": 3}', 400, "'model' must be a string"),
    (b'{"input": "a", "encoding_format": "int8"}', 400, "'float' or 'base64'"),
    (b'{"input": "a", "dimensions": 0}', 400, "positive integer"),
    (b'{"input": "a", "dimensions": true}', 400, "positive integer"),
    (b'{"input": "a", "inputs": "b"}', 400, "unrecognized request argument 'inputs'"),
    (b'{"input": "caf\xe9"}', 400, "not valid UTF-8"),
    (b'{"input": "\\ud800"}', 400, "not valid"),
    (b'{"input": NaN}', 400, "not valid JSON"),
]


@pytest.mark.parametrize("body,status,message", BAD_OPENAI)
def test_bad_openai_request(server, body, status, message):
    r = httpx.post(
        server.url + "/v1/embeddings", content=body, headers={"content-type": "application/json"}
    )
    assert r.status_code == status
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert message in err["message"]
    assert err["type"] == "invalid_request_error"
    assert "Traceback" not in r.text


BAD_TEI = [
    (b"{", 400, "not valid JSON"),
    (b'{"inputs": []}', 422, "empty list"),
    (b'{"inputs": ""}', 422, "inputs[0] is empty"),
    (b'{"inputs": "a", "normalize": "yes"}', 422, "'normalize' must be true or false"),
    (b'{"inputs": "a", "truncation_direction": "left"}', 422, "not supported"),
    (b'{"inputs": "a", "prompt_name": "query"}', 422, "not supported"),
    (b'{"input": "a"}', 422, "unrecognized request argument 'input'"),
]


@pytest.mark.parametrize("body,status,message", BAD_TEI)
def test_bad_tei_request(server, body, status, message):
    r = httpx.post(server.url + "/embed", content=body, headers=JSON)
    assert r.status_code == status
    assert set(r.json()) == {"error", "error_type"}
    assert message in r.json()["error"]
    assert "Traceback" not in r.text


def test_limits_are_413_naming_the_limit(server):
    r = httpx.post(server.url + "/v1/embeddings", json={"input": ["a"] * (MAX_ITEMS + 1)})
    assert r.status_code == 413
    assert f"limit of {MAX_ITEMS}" in r.json()["error"]["message"]
    assert "--max-input-items" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/embeddings", json={"input": ["x" * (MAX_BYTES // 2)] * 3})
    assert r.status_code == 413
    assert f"limit of {MAX_BYTES} bytes" in r.json()["error"]["message"]

    def chunks():  # no Content-Length: counted while streaming
        for _ in range(5):
            yield b" " * (MAX_BYTES // 2)

    r = httpx.post(server.url + "/embed", content=chunks(), headers=JSON)
    assert r.status_code == 413 and "--max-request-bytes" in r.json()["error"]


def test_unknown_route_and_method(server):
    r = httpx.get(server.url + "/v1/nope")
    assert r.status_code == 404 and "error" in r.json()
    r = httpx.get(server.url + "/v1/embeddings")
    assert r.status_code == 405 and "not allowed" in r.json()["error"]["message"]


def test_models_info_health(server, client):
    assert [m.id for m in client.models.list().data] == MODELS
    info = httpx.get(server.url + "/info").json()
    assert info["model_id"] == "tiny"
    assert info["max_client_batch_size"] == MAX_ITEMS
    # the default model is a transformer: its batch bounds (Sent2Vec's are wider)
    assert (info["max_batch_tokens"], info["max_batch_requests"]) == (16384, 256)
    assert info["model_type"] == {"embedding": {"pooling": "mean"}}
    dims = {m["name"]: m["dim"] for m in info["sentvec"]["models"]}
    assert dims == {"tiny": 384, "s2v": 16, "white": 32, "minilm": 384}
    r = httpx.get(server.url + "/health")
    assert r.status_code == 200 and r.content == b""


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_concurrent_requests_are_batched_and_answered_in_order(server, oracles):
    groups = [SENTENCES[10 + 3 * i : 13 + 3 * i] for i in range(24)]
    before = httpx.get(server.url + "/metrics").text

    async def burst():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            return await asyncio.gather(
                *(c.post("/v1/embeddings", json={"model": "tiny", "input": g}) for g in groups)
            )

    responses = asyncio.run(burst())
    after = httpx.get(server.url + "/metrics").text
    for g, r in zip(groups, responses, strict=True):
        assert r.status_code == 200
        got = np.array([d["embedding"] for d in r.json()["data"]])
        assert np.abs(got - oracles["tiny"].encode(g)).max() <= 1e-5  # padded with others
    batches = _metric(after, "sentvec_batch_size_count", model="tiny") - _metric(
        before, "sentvec_batch_size_count", model="tiny"
    )
    items = _metric(after, "sentvec_batch_size_sum", model="tiny") - _metric(
        before, "sentvec_batch_size_sum", model="tiny"
    )
    assert items == 3 * len(groups)
    assert batches < len(groups)  # requests were gathered into batches
    assert (
        _metric(after, "sentvec_requests_total", route="/v1/embeddings", model="tiny", status="200")
        >= 24
    )
    assert 'sentvec_queue_depth{model="tiny"}' in after
    assert "sentvec_request_duration_seconds_bucket" in after


def test_client_that_disconnects_costs_only_its_own_work(server):
    long_texts = [
        f"{i} " + "a fairly long sentence about nothing in particular " * 30
        for i in range(MAX_ITEMS)
    ]
    before = _metric(
        httpx.get(server.url + "/metrics").text, "sentvec_batch_size_sum", model="tiny"
    )

    async def scenario():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            slow = asyncio.create_task(
                c.post("/v1/embeddings", json={"model": "tiny", "input": long_texts})
            )
            for _ in range(500):  # wait until the slow request is being encoded
                m = (await c.get("/metrics")).text
                if _metric(m, "sentvec_requests_in_progress", model="tiny") >= 1:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            async with httpx.AsyncClient(base_url=server.url, timeout=0.3) as impatient:
                with pytest.raises(httpx.TimeoutException):
                    await impatient.post(
                        "/v1/embeddings", json={"model": "tiny", "input": SENTENCES[:10]}
                    )
            return await slow

    r = asyncio.run(scenario())
    assert r.status_code == 200
    metrics = httpx.get(server.url + "/metrics").text
    encoded = _metric(metrics, "sentvec_batch_size_sum", model="tiny") - before
    assert encoded == MAX_ITEMS  # the 10 texts of the client that left were never encoded
    assert _metric(metrics, "sentvec_requests_total", model="tiny", status="499") >= 1
    assert re.search(r'sentvec_requests_in_progress\{model="tiny"\} 0\.0', metrics)
