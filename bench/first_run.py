"""First use after install: seconds the first ``train-sent2vec`` and ``embed`` spend compiling.

Runs each command twice in fresh processes, first with an empty numba cache
(``NUMBA_CACHE_DIR`` pointed at a new directory, as on a fresh install), then with the cache
that run filled; the difference of the wall times is the compile time (the work itself is the
same, and small: the 10,000-line sample corpus, a small model). The CPU time (user + system)
of each process is read with ``wait4``, so the compile cost is also given as CPU seconds, which
a loaded machine inflates less than wall time. Alternates ``--repeats`` times and prints
medians, with the load average.

Usage::

    python bench/first_run.py [--repeats 3]
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
SAMPLE = ROOT / "tests" / "data" / "sent2vec-reference" / "train-sample.txt"
SENTENCES = ROOT / "tests" / "data" / "sent2vec-reference" / "sentences.txt"
TRAIN_FLAGS = [
    "-dim",
    "100",
    "-epoch",
    "1",
    "-lr",
    "0.2",
    "-wordNgrams",
    "2",
    "-minCount",
    "5",
    "-minCountLabel",
    "5",
    "-neg",
    "10",
    "-thread",
    "2",
    "-t",
    "0.0001",
    "-dropoutK",
    "4",
    "-bucket",
    "200000",
]


def timed(cmd: list[str], cache: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one run of ``cmd`` in a fresh process."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sv = [sys.executable, "-m", "sentvec"]
    rows: dict[str, list[tuple[tuple[float, float], tuple[float, float]]]] = {
        "train-sent2vec": [],
        "embed": [],
    }
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "m.bin"
        for r in range(args.repeats):
            cache = Path(tmp) / f"cache{r}"
            train = sv + [
                "train-sent2vec",
                "-input",
                str(SAMPLE),
                "-output",
                str(model),
                *TRAIN_FLAGS,
                "--progress",
            ]
            embed = sv + [
                "embed",
                str(model),
                "--input",
                str(SENTENCES),
                "--output",
                str(Path(tmp) / "v.npy"),
            ]
            loads.append(os.getloadavg()[0])
            cold_t = timed(train, cache)
            warm_t = timed(train, cache)
            cold_e = timed(embed, cache)
            warm_e = timed(embed, cache)
            loads.append(os.getloadavg()[0])
            rows["train-sent2vec"].append((cold_t, warm_t))
            rows["embed"].append((cold_e, warm_e))
            print(
                f"repeat {r}: train {cold_t[0]:.1f} s cold / {warm_t[0]:.1f} s cached "
                f"(CPU {cold_t[1]:.1f} / {warm_t[1]:.1f} s); embed {cold_e[0]:.1f} s / "
                f"{warm_e[0]:.1f} s (CPU {cold_e[1]:.1f} / {warm_e[1]:.1f} s)",
                flush=True,
            )
    print(
        f"load average (1 min) before/after each repeat: {min(loads):.2f}-{max(loads):.2f}; "
        f"now {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for name, pairs in rows.items():
        cold = statistics.median(p[0][0] for p in pairs)
        warm = statistics.median(p[1][0] for p in pairs)
        comp = statistics.median(p[0][0] - p[1][0] for p in pairs)
        comp_cpu = statistics.median(p[0][1] - p[1][1] for p in pairs)
        print(
            f"{name:15s} cold {cold:5.1f} s, cached {warm:5.1f} s, compiling {comp:5.1f} s "
            f"wall, {comp_cpu:5.1f} s CPU (median of {len(pairs)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
