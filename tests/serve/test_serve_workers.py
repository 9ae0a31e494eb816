"""``sentvec serve --workers 2``: two server processes behind one port, each loading the model
(uvicorn's factory ``sentvec.serve.app:app_from_environment``), answering like ``encode``, with
``/metrics`` summed over both workers (prometheus-client's multiprocess mode in a private
temporary directory that the server removes when it stops). On Linux each worker listens on a
socket of its own (SO_REUSEPORT), so the kernel spreads the connections over them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from sentvec.serve import ServerProcess, start_server  # noqa: E402
from sentvec.serve.process import WORKER_HEADER  # noqa: E402

BIN = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"


def _requests_total(text: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("sentvec_requests_total{") and 'route="/v1/embeddings"' in line
    )


def _listening(port: int) -> int:
    """How many sockets listen on ``port`` (``/proc/net/tcp``: state 0A is LISTEN)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for r in rows if r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A")


def _environ(pid: str) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(x.decode().split("=", 1) for x in raw if b"=" in x)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_two_workers_serve_the_bin_and_sum_their_metrics(tmp_path):
    from sentvec import Sent2Vec

    key_file = tmp_path / "key"
    key_file.write_text("sk-workers\n", encoding="utf-8")
    srv = start_server(str(BIN), "--workers", "2", "--api-key-file", str(key_file))
    with srv:
        children = subprocess.run(
            ["pgrep", "-P", str(srv.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        workers = [  # uvicorn's spawned workers (not multiprocessing's resource tracker)
            p for p in children if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()
        ]
        assert len(workers) == 2
        if sys.platform.startswith("linux"):  # a listening socket per worker (SO_REUSEPORT)
            assert _listening(srv.port) == 2
        metrics_dir = _environ(workers[0])["PROMETHEUS_MULTIPROC_DIR"]
        assert os.path.isdir(metrics_dir)
        # start_server returned once both answered; /health names the worker that answers
        health = [httpx.get(srv.url + "/health") for _ in range(40)]  # a new connection each
        assert {r.status_code for r in health} == {200}
        assert {r.headers[WORKER_HEADER] for r in health} == set(workers)
        texts = [f"the {i} cat sat on the mat" for i in range(40)]
        headers = {"Authorization": "Bearer sk-workers"}
        got = []
        for t in texts:  # a new connection each: the two workers share them
            r = httpx.post(srv.url + "/v1/embeddings", json={"input": t}, headers=headers)
            got.append(r.json())
        r = httpx.post(srv.url + "/v1/embeddings", json={"input": "x"})
        assert r.status_code == 401
        vecs = np.array([g["data"][0]["embedding"] for g in got])
        assert got[0]["model"] == "tiny-bigram"
        assert np.abs(vecs - Sent2Vec.load(BIN).encode(texts)).max() <= 1e-6
        # every scrape, whichever worker answers it, counts the requests of both
        per_pid = {p: 0 for p in workers}
        for name in os.listdir(metrics_dir):
            for p in workers:
                per_pid[p] += name.endswith(f"_{p}.db")
        assert all(per_pid.values()), per_pid  # both workers keep their values there
        totals = {
            _requests_total(httpx.get(srv.url + "/metrics", headers=headers).text) for _ in range(8)
        }
        assert totals == {float(len(texts))}  # each answered request counted once
        # a model without a token limit: TEI's max_input_length is the longest whole input
        info = httpx.get(srv.url + "/info", headers=headers).json()
        assert info["max_input_length"] == (8 << 20) // 2
        assert info["sentvec"]["models"][0]["max_input_length"] is None
    assert srv.proc.returncode == 0
    assert not os.path.exists(os.path.dirname(metrics_dir))  # the private directory is gone


#: Two workers behind one port, as ``/health`` shows them: worker 1 alone answers the first
#: 100 connections (worker 2 is not listening yet), then they take turns, worker 2 answering 503
#: (loading its models) 3 times before its first 200. ``/both`` says whether worker 2 is ready.
LATE_SECOND_WORKER = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

seen = {"health": 0, "second": 0}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/both":
            status, worker = (200 if seen["second"] > 3 else 503), "1"
        else:
            seen["health"] += 1
            worker = "1" if seen["health"] <= 100 or seen["health"] % 2 else "2"
            if worker == "2":
                seen["second"] += 1
            status = 503 if worker == "2" and seen["second"] <= 3 else 200
        self.send_response(status)
        self.send_header("HEADER", worker)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
""".replace("HEADER", WORKER_HEADER, 1)


def test_a_server_with_workers_is_ready_when_each_worker_has_answered_200(tmp_path):
    """However many 200s one worker gives in a row, the server is not ready until the other
    has answered 200 too (the wait is bounded by ``timeout``)."""
    script = tmp_path / "late_second_worker.py"
    script.write_text(LATE_SECOND_WORKER, encoding="utf-8")
    argv = [sys.executable, str(script), "{PORT}"]
    with ServerProcess(argv, workers=2, timeout=60) as srv:
        assert httpx.get(srv.url + "/both").status_code == 200
    with ServerProcess(argv, workers=3, timeout=3, wait=False) as srv:
        with pytest.raises(RuntimeError, match="not ready in 3 s"):
            srv.wait_ready()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_stop_when_the_supervisor_is_killed():
    srv = start_server(str(BIN), "--workers", "2")
    with srv:
        children = subprocess.run(
            ["pgrep", "-P", str(srv.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        workers = [p for p in children if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(workers) == 2
        srv.proc.kill()  # SIGKILL: no chance to stop its workers itself
        srv.proc.wait(10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(map(_running, workers)):
            time.sleep(0.1)
        alive = [p for p in workers if _running(p)]
        for p in alive:  # a failing run leaves no orphan behind
            os.kill(int(p), signal.SIGKILL)
        assert not alive, f"workers {alive} outlived the supervisor"


def _running(pid: str) -> bool:
    """Whether process ``pid`` runs (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_supervisors_metrics_folder_is_removed_by_the_next_run(tmp_path, monkeypatch):
    import tempfile

    from sentvec._tempdirs import make_run_dir

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    srv = start_server(str(BIN), "--workers", "2", env={"TMPDIR": str(tmp)})
    with srv:
        children = subprocess.run(
            ["pgrep", "-P", str(srv.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        workers = [p for p in children if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        run_dir = Path(_environ(workers[0])["PROMETHEUS_MULTIPROC_DIR"]).parent
        assert run_dir.parent == tmp and run_dir.name.startswith(f"sentvec-serve-{srv.proc.pid}-")
        srv.proc.kill()  # SIGKILL: its finally block that removes the folder never runs
        srv.proc.wait(10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(map(_running, workers)):
            time.sleep(0.1)
        for p in workers:  # a failing run leaves no orphan behind
            if _running(p):
                os.kill(int(p), signal.SIGKILL)
    assert run_dir.is_dir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    nxt = make_run_dir("serve")  # the next run folder made there (serve, distill, training)
    assert not run_dir.exists()
    assert [p.name for p in tmp.iterdir()] == [nxt.name]


#: ``run_server`` called from Python, as ``sentvec serve MODEL --workers 2 --port PORT`` does.
RUN_SERVER = """
import sys

from sentvec.serve import ServeSettings, run_server

settings = ServeSettings(models=[["tiny", sys.argv[2]]]).check()
sys.exit(run_server(settings, port=int(sys.argv[1]), workers=2))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_run_server_supervises_workers_from_python(tmp_path):
    from sentvec import Sent2Vec

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    src = str(Path(__file__).resolve().parents[1] / "src")
    argv = [sys.executable, "-c", RUN_SERVER, "{PORT}", str(BIN)]
    env = {
        "TMPDIR": str(tmp),
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
    }
    with ServerProcess(argv, workers=2, env=env) as srv:
        health = {httpx.get(srv.url + "/health").headers[WORKER_HEADER] for _ in range(40)}
        assert len(health) == 2  # both workers answer behind the one port
        r = httpx.post(srv.url + "/v1/embeddings", json={"input": "the cat sat", "model": "tiny"})
        got = np.array(r.json()["data"][0]["embedding"])
        assert np.abs(got - Sent2Vec.load(BIN).encode(["the cat sat"])[0]).max() <= 1e-6
        assert [p.name.startswith("sentvec-serve-") for p in tmp.iterdir()] == [True]
    assert srv.proc.returncode == 0  # SIGTERM: a graceful stop
    assert list(tmp.iterdir()) == []  # the metrics run folder is removed
