"""``sentvec eval-sts`` (the Table 1 block, MiniLM by default) in float32 and in bfloat16.

Runs the whole command once per precision (``--precision float32`` / ``bfloat16``), fresh
processes, no vector cache, alternating which goes first on each repeat, and prints:

* every cell of the two blocks (configuration x task, Spearman x 100) and their difference,
  the largest absolute difference and the cell where it is: the quality bound asks that no cell
  moves by more than 0.05;
* the wall time of each command (median over repeats) and the ratio float32 / bfloat16, with
  the load average at the start of each run.

Usage::

    python bench/precision.py [--model minilm] [--repeats 1] [--tasks STS12,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRECISIONS = ("float32", "bfloat16")


def eval_sts_cells(options: list[str], out: Path, env: dict[str, str] | None = None) -> dict:
    """Run ``sentvec eval-sts --no-cache --no-progress OPTIONS --json OUT`` in a fresh process;
    its wall time, the load average before it, and every cell as ``{(row label, task): score}``
    (``"Avg"`` for a row's average)."""
    argv = [sys.executable, "-m", "sentvec", "eval-sts", "--no-cache", "--no-progress"]
    argv += [*options, "--json", str(out)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **(env or {}))
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr[-2000:]}")
    rows = json.loads(out.read_text())["rows"]
    cells = {
        (row["label"], task): float(score)
        for row in rows
        for task, score in row["result"]["task_scores"].items()
    }
    for row in rows:
        cells[(row["label"], "Avg")] = float(row["result"]["average"])
    return {"wall_s": wall, "load1": load, "cells": cells}


def run(precision: str, args: argparse.Namespace, out: Path) -> dict:
    options = ["--model", args.model, "--precision", precision]
    if args.tasks:
        options += ["--tasks", args.tasks]
    return eval_sts_cells(options, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--tasks", default=None, help="default: the seven STS test sets")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {p: [] for p in PRECISIONS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            order = PRECISIONS if r % 2 == 0 else PRECISIONS[::-1]
            for p in order:
                res = run(p, args, Path(tmp) / f"{p}-{r}.json")
                runs[p].append(res)
                print(f"{p:9s} run {r + 1}: {res['wall_s']:7.1f} s (load {res['load1']:.1f})")
    f32, bf16 = runs["float32"][0]["cells"], runs["bfloat16"][0]["cells"]
    print(f"\n{'configuration':40s} {'task':8s} {'float32':>8s} {'bfloat16':>9s} {'diff':>7s}")
    worst = max(f32, key=lambda c: abs(bf16[c] - f32[c]))
    for cell in f32:
        d = bf16[cell] - f32[cell]
        print(f"{cell[0][:40]:40s} {cell[1]:8s} {f32[cell]:8.2f} {bf16[cell]:9.2f} {d:+7.3f}")
    print(
        f"\nlargest |diff|: {abs(bf16[worst] - f32[worst]):.3f} at {worst[0]} / {worst[1]} "
        "(bound 0.05)"
    )
    med = {p: statistics.median(r["wall_s"] for r in runs[p]) for p in PRECISIONS}
    print(
        f"whole command, median of {args.repeats}: float32 {med['float32']:.1f} s, "
        f"bfloat16 {med['bfloat16']:.1f} s, ratio {med['float32'] / med['bfloat16']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
