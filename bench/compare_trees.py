"""Whole sentvec commands from two source trees, same sitting, alternating: did a change slow a path?

Each contender is a source tree (``OLD/src`` and ``NEW/src``, e.g. a ``git worktree`` of the
commit before a refactor and the working tree). Every command runs as a fresh process with
``PYTHONPATH`` set to that tree, so the whole command is timed: imports, model load, the work,
the write. One untimed warm-up per tree and command (numba compiles and the vector cache fills
per tree, since the cache keys include the encoding code); then ``--repeats`` rounds, the order
of the trees reversed every round. Prints per command the median seconds of each tree, the
ratio NEW / OLD (above 1: NEW is slower) and the one-minute load average of every run.

Commands (inputs: the packaged 10k-line Wikipedia sample and the shipped test models):

* ``import``: ``python -c "import sentvec.cli"``;
* ``embed``: ``sentvec embed tiny-bigram.bin`` on the 10k lines (Sent2Vec, text to ``.npy``);
* ``encode-static``: ``sentvec encode --model wordllama`` on the 10k lines (a static model);
* ``encode-minilm``: ``sentvec encode --model minilm`` on the first 2,000 lines (a transformer);
* ``eval-sts-cached``: ``sentvec eval-sts --model minilm --tasks STS16`` with its vectors cached;
* ``train-sent2vec``: ``sentvec train-sent2vec`` on the 10k lines (dim 50, 2 epochs, 2 threads).

Usage::

    python bench/compare_trees.py OLD_TREE NEW_TREE [--repeats 3] [--only embed,import]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "src" / "sentvec" / "data" / "corpus" / "enwiki-2015-sentences-sample10k.txt"
BIGRAM = ROOT / "tests" / "data" / "sent2vec-reference" / "tiny-bigram.bin"


def commands(work: Path) -> dict[str, list[str]]:
    """Each command's argv; ``OUT`` is replaced by a fresh output path per run."""
    lines2k = work / "lines2k.txt"
    if not lines2k.exists():
        with open(SAMPLE, encoding="utf-8") as f:
            lines2k.write_text("".join(f.readline() for _ in range(2000)), encoding="utf-8")
    cli = [sys.executable, "-m", "sentvec"]
    return {
        "import": [sys.executable, "-c", "import sentvec.cli"],
        "embed": [*cli, "embed", str(BIGRAM), "--input", str(SAMPLE), "--output", "OUT.npy"],
        "encode-static": [
            *cli, "encode", "--model", "wordllama", "--input", str(SAMPLE), "--output", "OUT",
            "--quiet",
        ],
        "encode-minilm": [
            *cli, "encode", "--model", "minilm", "--input", str(lines2k), "--output", "OUT",
            "--quiet",
        ],
        "eval-sts-cached": [*cli, "eval-sts", "--model", "minilm", "--tasks", "STS16"],
        "train-sent2vec": [
            *cli, "train-sent2vec", "--input", str(SAMPLE), "--output", "OUT", "--dim", "50",
            "--epoch", "2", "--thread", "2", "--no-progress",
        ],
    }  # fmt: skip


def run_once(argv: list[str], tree: Path, work: Path) -> float:
    out = work / f"out-{time.monotonic_ns()}"
    argv = [a.replace("OUT", str(out)) if a.startswith("OUT") else a for a in argv]
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} under {tree} failed:\n{done.stderr[-2000:]}")
    for p in work.glob(out.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="the tree before the change (holds src/sentvec)")
    ap.add_argument("new", type=Path, help="the tree after the change")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated command names")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sentvec-compare-") as tmp:
        work = Path(tmp)
        cmds = commands(work)
        names = [n for n in cmds if not args.only or n in args.only.split(",")]
        trees = {"old": args.old.resolve(), "new": args.new.resolve()}
        print(f"old {trees['old']}  new {trees['new']}  repeats {args.repeats}")
        print(f"{'command':<18}{'old s':>9}{'new s':>9}{'new/old':>9}  load averages")
        for name in names:
            for tree in trees.values():  # warm-up: compiles, caches
                run_once(cmds[name], tree, work)
            times: dict[str, list[float]] = {"old": [], "new": []}
            loads = []
            for r in range(args.repeats):
                order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
                for label in order:
                    times[label].append(run_once(cmds[name], trees[label], work))
                    loads.append(os.getloadavg()[0])
            old, new = statistics.median(times["old"]), statistics.median(times["new"])
            load_text = " ".join(f"{x:.1f}" for x in loads)
            print(f"{name:<18}{old:>9.2f}{new:>9.2f}{new / old:>9.3f}  {load_text}", flush=True)


if __name__ == "__main__":
    main()
