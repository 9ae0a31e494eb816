"""``sentvec serve`` from several source trees, alternated in one sitting (Sent2Vec, base64).

Each ``TAG=SRC`` starts ``python -m sentvec serve tiny-bigram.bin --workers W`` with ``SRC``
(a directory holding the ``sentvec`` package, e.g. a copy of ``src/`` before a change) first on
``PYTHONPATH``; all servers load first, then the runs alternate (the order reversed every other
round). Each run sends ``-n`` requests of 256 sentences with ``encoding_format=base64`` at
concurrency ``-c`` through ``bench/serve.py``'s generator and prints requests/s, the server's CPU
per request (all its processes), the generator's, and the whole machine's cores (more than
server plus generator: another job shared them). Medians per tag at the end.

Usage::

    python bench/serve_ab.py before=/tmp/src-before after=src --workers 2 -n 800 --reps 6
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import serve as B  # noqa: E402  (bench/serve.py: generator, CPU accounting)

from sentvec.serve import ServerProcess  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import httpx

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("variants", nargs="+", metavar="TAG=SRC")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("-n", type=int, default=1000, help="requests per run")
    p.add_argument("-c", type=int, default=8, help="concurrency")
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args(argv)
    sentences = [
        s.strip()
        for s in (B.REF / "train-sample.txt").read_text(encoding="utf-8").splitlines()
        if s.strip()
    ]
    m = len(sentences) - 256
    bodies = [
        {
            "model": "s2v",
            "input": sentences[(i * 256) % m : (i * 256) % m + 256],
            "encoding_format": "base64",
        }
        for i in range(a.n)
    ]
    servers = []
    for variant in a.variants:
        tag, _, src = variant.partition("=")
        argv_ = [sys.executable, "-m", "sentvec", "serve", str(B.REF / "tiny-bigram.bin")]
        argv_ += ["--name", "s2v", "--host", "127.0.0.1", "--port", "{PORT}"]
        argv_ += ["--log-level", "warning", "--workers", str(a.workers)]
        env = {"PYTHONPATH": str(Path(src).resolve())}
        servers.append((tag, ServerProcess(argv_, env=env, wait=False, timeout=300)))
    results: dict[str, list[dict]] = {tag: [] for tag, _ in servers}
    try:
        for _, srv in servers:
            srv.wait_ready()
            for _ in range(50):  # every worker loaded (each answers /health on its own)
                if all(
                    httpx.get(srv.url + "/health").status_code == 200 for _ in range(4 * a.workers)
                ):
                    break
                time.sleep(0.2)
            B.load(srv.url, bodies[:50], a.c)
        print(f"servers ready; {B.uptime()}", flush=True)
        for rep in range(a.reps):
            for tag, srv in servers if rep % 2 == 0 else servers[::-1]:
                B.load(srv.url, bodies[:20], a.c)
                c0 = B.server_cpu(srv)
                r = B.timed_load(srv, bodies, a.c)
                r["ms"] = (B.server_cpu(srv) - c0) / a.n * 1000
                results[tag].append(r)
                print(
                    f"  {tag:10s} {r['rps']:7.0f} req/s  server {r['ms']:.3f} ms/req  generator "
                    f"{r['gen_cpu'] / r['rps'] * 1000:.3f} ms/req  machine {r['machine']:.2f} cores",
                    flush=True,
                )
        for tag, _ in servers:
            runs = results[tag]
            print(
                f"median {tag:10s} {statistics.median(r['rps'] for r in runs):7.0f} req/s  "
                f"server {statistics.median(r['ms'] for r in runs):.3f} ms/req  "
                f"p99 {statistics.median(r['p99'] for r in runs):.1f} ms"
            )
        print(f"end; {B.uptime()}")
    finally:
        for _, srv in servers:
            srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
