"""``sentvec eval-sts`` (Table 1 block, MiniLM) first and second runs, whole commands.

Fresh processes, each with its own empty ``--cache-dir`` for the first run, then ``--repeats``
second runs reading that cache; with ``--baseline-src DIR`` the same for another checkout (e.g.
the one before this change), alternating which goes first. Printed per command: wall time from
outside, user and system CPU, the command's own ``time:`` line, and the load average at its start;
then the medians and whether the tables (the lines between the header and the ``time:`` line)
are identical across all runs.

Run it under the exclusive bench lock::

    flock -x /work/notes/bench.lock python bench/eval_sts_cache.py [--repeats 3]
        [--baseline-src /path/to/older/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(src: Path, cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    argv = [sys.executable, "-m", "sentvec", "eval-sts", "--no-progress", "--cache-dir", str(cache)]
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {err.decode()[-2000:]}")
    text = out.decode()
    lines = text.splitlines()
    own = next((ln for ln in lines if ln.startswith("time:")), "")
    table = [ln for ln in lines if not ln.startswith("time:")]
    return {"wall_s": wall, "load1": load, "own": own, "table": table}


def cpu_of(fn, *args) -> tuple[dict, float, float]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = fn(*args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="default: this checkout's")
    ap.add_argument(
        "--baseline-first", action="store_true", help="the baseline's first run goes first"
    )
    args = ap.parse_args()
    srcs = {"this checkout": args.src}
    if args.baseline_src:
        srcs["baseline"] = args.baseline_src
    names = list(srcs)[::-1] if args.baseline_first else list(srcs)
    tables = []
    firsts: dict[str, dict] = {}
    seconds: dict[str, list[dict]] = {n: [] for n in names}
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        caches = {n: Path(tmp) / f"cache{i}" for i, n in enumerate(names)}
        for n in names:
            r, u, s = cpu_of(run, srcs[n], caches[n])
            r.update(user_s=u, sys_s=s)
            firsts[n] = r
            tables.append(r["table"])
            print(f"first run, {n}: {r['wall_s']:.1f} s wall, {u:.1f} s user, {s:.1f} s sys, "
                  f"load1 {r['load1']:.2f}; {r['own']}", flush=True)  # fmt: skip
        for rep in range(args.repeats):
            for n in names if rep % 2 == 0 else names[::-1]:
                r, u, s = cpu_of(run, srcs[n], caches[n])
                r.update(user_s=u, sys_s=s)
                seconds[n].append(r)
                tables.append(r["table"])
                print(f"second run, {n}: {r['wall_s']:.1f} s wall, {u:.1f} s user, {s:.1f} s "
                      f"sys, load1 {r['load1']:.2f}; {r['own']}", flush=True)  # fmt: skip
    for n in names:
        if not seconds[n]:
            print(f"{n}: first run {firsts[n]['wall_s']:.1f} s")
            continue
        med = statistics.median(r["wall_s"] for r in seconds[n])
        runs = ", ".join(f"{r['wall_s']:.1f}" for r in seconds[n])
        print(
            f"{n}: first run {firsts[n]['wall_s']:.1f} s; second runs {runs} s, median {med:.1f} s"
        )
    print(f"tables identical across all {len(tables)} runs: {all(t == tables[0] for t in tables)}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
