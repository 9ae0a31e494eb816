"""Sent2Vec training speed: ``sentvec train-sent2vec`` against the official binary, whole commands.

Both tools train on the reference corpus with the reference flags of ``docs/baselines.md``
(uni+bigrams, dim 100, 1 epoch, lr 0.2, minCount 5, minCountLabel 5, neg 10, t 1e-4, dropoutK 4,
bucket 2,000,000, 2 threads) and write an official ``.bin`` file; each run is a fresh process,
timed from its start to its exit (what a user's stopwatch sees). The runs alternate (official,
sentvec, sentvec, official, ...: the machine's load drifts) and the medians of ``--repeats`` runs
are printed, with the ratios

* whole command: official wall / sentvec wall;
* training loop: official loop / sentvec loop. sentvec's loop time is ``train_seconds`` of its
  ``--report``; the official binary prints no timing, so its loop is timed from its first
  ``Progress:`` line on stderr (printed within the first 100 tokens of training) to its final
  ``Progress: 100.0%`` line;
* outside the loop: the rest of each command (reading the corpus, building the vocabulary,
  initialising the matrices, saving, interpreter start);

and peak RSS of each process (``wait4``), and the load average (1 minute) before every run.

The official binary is not part of sentvec; build it as ``bench/README.md`` says and pass its
path with ``--official``. Without it only sentvec runs (and no ratio is printed).

Usage::

    python bench/sent2vec_train.py --official /work/official/fasttext --repeats 3
    python bench/sent2vec_train.py --lines 200000        # a prefix of the corpus, sentvec only
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_XZ = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")
CACHE = ROOT / ".cache"
FLAGS = [
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
    "-t",
    "0.0001",
    "-dropoutK",
    "4",
    "-bucket",
    "2000000",
    "-loss",
    "ns",
]


def corpus_path(lines: int | None) -> Path:
    """Decompress the reference corpus once into .cache/ (and a prefix of ``lines`` lines)."""
    CACHE.mkdir(exist_ok=True)
    full = CACHE / "wiki1m.tok.lower.txt"
    if not full.exists():
        tmp = full.with_suffix(".tmp")
        with lzma.open(CORPUS_XZ, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 16 << 20)
        tmp.rename(full)
    if not lines:
        return full
    part = CACHE / f"wiki1m.first{lines}.txt"
    if not part.exists():
        tmp = part.with_suffix(".tmp")
        with open(full, "rb") as src, open(tmp, "wb") as dst:
            for i, line in enumerate(src):
                if i >= lines:
                    break
                dst.write(line)
        tmp.rename(part)
    return part


def run(cmd: list[str], env: dict[str, str] | None = None, watch_progress: bool = False) -> dict:
    """Run ``cmd``; wall seconds, peak RSS (MiB) and, for the official binary, its loop span."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    marks: dict[str, float] = {}
    tail = bytearray()

    def read() -> None:
        while True:
            chunk = p.stderr.read1(1 << 16)
            if not chunk:
                return
            now = time.perf_counter()
            if watch_progress and b"Progress:" in chunk:
                marks.setdefault("first", now)
                if b"100.0%" in chunk:
                    marks["last"] = now
            tail[:] = (tail + chunk)[-4000:]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited with {p.returncode}: {tail.decode(errors='replace')}")
    out = {
        "wall_s": wall,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }
    if watch_progress and "first" in marks and "last" in marks:
        out["loop_s"] = marks["last"] - marks["first"]
    return out


def run_sentvec(path: Path, out_dir: Path, threads: int) -> dict:
    report = out_dir / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = run(
        [
            sys.executable,
            "-m",
            "sentvec",
            "train-sent2vec",
            "-input",
            str(path),
            "-output",
            str(out_dir / "sentvec.bin"),
            *FLAGS,
            "-thread",
            str(threads),
            "--report",
            str(report),
        ],
        env=env,
    )
    rep = json.loads(report.read_text())
    return r | {
        "loop_s": rep["train_seconds"],
        "vocab_s": rep["vocab_seconds"],
        "convert_s": rep["convert_seconds"],
        "init_s": rep["init_seconds"],
    }


def run_official(binary: Path, path: Path, out_dir: Path, threads: int) -> dict:
    return run(
        [
            str(binary),
            "sent2vec",
            "-input",
            str(path),
            "-output",
            str(out_dir / "official"),
            *FLAGS,
            "-thread",
            str(threads),
        ],
        watch_progress=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--official",
        type=Path,
        default=None,
        help="the official fasttext binary (bench/README.md says how to build it)",
    )
    ap.add_argument("--lines", type=int, default=None, help="use the first N corpus lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each tool, alternating")
    ap.add_argument("--json", type=Path, default=None, help="write the runs as JSON here")
    args = ap.parse_args(argv)
    if args.official is not None and not os.access(args.official, os.X_OK):
        ap.error(f"--official {str(args.official)!r} is not an executable file")
    path = corpus_path(args.lines)
    print(f"corpus: {path} ({path.stat().st_size / 2**20:.0f} MiB)", flush=True)
    tools = ["official", "sentvec"] if args.official else ["sentvec"]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="s2v-bench-") as tmp:
        for rep in range(args.repeats):
            for tool in tools if rep % 2 == 0 else tools[::-1]:
                load = os.getloadavg()[0]
                if tool == "official":
                    row = run_official(args.official, path, Path(tmp), args.threads)
                else:
                    row = run_sentvec(path, Path(tmp), args.threads)
                row |= {"tool": tool, "repeat": rep, "load1": load}
                if "loop_s" in row:
                    row["outside_s"] = row["wall_s"] - row["loop_s"]
                rows.append(row)
                print(
                    json.dumps(
                        {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
                    ),
                    flush=True,
                )
    print()
    med: dict[str, dict[str, float]] = {}
    keys = ("wall_s", "loop_s", "outside_s", "peak_rss_mib", "cpu_s", "load1")
    for tool in tools:
        mine = [r for r in rows if r["tool"] == tool]
        med[tool] = {
            k: statistics.median(r[k] for r in mine) for k in keys if all(k in r for r in mine)
        }
    print(f"medians of {args.repeats} alternating runs, {args.threads} threads:")
    print(
        f"{'tool':10s} {'whole s':>8s} {'loop s':>7s} {'outside s':>9s} {'RSS MiB':>8s} "
        f"{'load':>5s}"
    )
    for tool, m in med.items():
        print(
            f"{tool:10s} {m['wall_s']:8.1f} {m.get('loop_s', float('nan')):7.1f} "
            f"{m.get('outside_s', float('nan')):9.1f} {m['peak_rss_mib']:8.0f} "
            f"{m['load1']:5.2f}"
        )
    if "official" in med:
        o, s = med["official"], med["sentvec"]
        print(
            f"ratio official/sentvec: whole command {o['wall_s'] / s['wall_s']:.2f}x, "
            f"training loop {o.get('loop_s', float('nan')) / s['loop_s']:.2f}x; "
            f"peak RSS sentvec/official {s['peak_rss_mib'] / o['peak_rss_mib']:.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
