"""``sentvec tokenize`` (compiled Moses, lower-cased) against sacremoses, whole commands.

Each command is a fresh process reading a text file and writing the tokenized text, alternating
(the order reverses every repeat), after one untimed warm-up each (page cache, numba cache,
Moses tables):

* ``sentvec tokenize -i IN -o OUT`` (this checkout; 2 kernel threads on a 2-core machine);
* ``sacremoses -l en -j 2 -q tokenize < IN > OUT`` (sacremoses' own CLI with its 2 processes;
  it always XML-escapes, its ``-x`` flag defaulting to on, and does not lower-case: its output
  is unescaped and lower-cased before the comparison);
* with ``--baseline-src DIR``: ``sentvec tokenize`` of another checkout (e.g. the one before the
  compiled tokenizer, which called sacremoses line by line in one process).

Inputs: the first ``--lines`` lines of the 1M raw corpus for every command (sacremoses takes
minutes per 100,000 lines), and the whole 1M corpus for ``sentvec tokenize`` alone
(``--full-repeats`` runs). Printed: medians, ratios, CPU time, peak RSS, load average, and
whether the outputs agree (sacremoses' output lower-cased against sentvec's).

With ``--whole-corpus LOCK`` it instead times both commands on the WHOLE 1M corpus, each hold
of the exclusive bench lock (``flock(2)`` on LOCK, the lock ``flock -x LOCK`` takes) kept under
about 12 minutes: sacremoses' CLI (``-j 2``) runs on the two halves of the corpus in two holds
and its time is the sum of the halves (two start-ups instead of one: slightly against
sacremoses' favour by ~2 s); ``sentvec tokenize`` runs on the whole file three times, once in
each hold, before, between and after the halves:

* hold 1: sentvec (whole) #1, sacremoses half 1;
* hold 2: sacremoses half 2, sentvec (whole) #2;
* hold 3: sentvec (whole) #3.

The load average is printed at the start and end of every hold, and the tokens of the two
outputs are compared on all lines afterwards (under the shared lock).

Usage::

    python bench/moses_tokenize.py [--lines 20000] [--repeats 3] [--full-repeats 3]
        [--baseline-src /path/to/older/src]
    python bench/moses_tokenize.py --whole-corpus /work/notes/bench.lock
    python bench/moses_tokenize.py --whole-corpus /work/notes/bench.lock --rounds 3

With ``--rounds N`` both commands run on the whole file N times each, alternating, in one hold
(sacremoses' CLI with 2 processes took 2.5 minutes for the whole corpus on a quiet machine, so
three rounds fit in one hold of about 9 minutes).
"""

from __future__ import annotations

import argparse
import fcntl
import lzma
import os
import statistics
import sys
import tempfile
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sent2vec_infer import RAW_CORPUS, run_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _sentvec(src: Path, inp: Path, out: Path) -> tuple[list[str], Path, Path, dict]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "sentvec", "tokenize", "-i", str(inp), "-o", str(out)]
    return argv, Path(os.devnull), Path(os.devnull), env


def _run(argv, stdin, stdout, env=None) -> dict:
    old = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        return run_process(argv, stdin, stdout)
    finally:
        os.environ.clear()
        os.environ.update(old)


#: The sacremoses CLI always XML-escapes (its ``-x`` flag defaults to on): its escapes, undone
#: in the reverse order of ``MosesTokenizer.escape_xml`` (``&amp;`` last).
_ESCAPES = [("&#124;", "|"), ("&lt;", "<"), ("&gt;", ">"), ("&apos;", "'"), ("&quot;", '"'),
            ("&#91;", "["), ("&#93;", "]"), ("&amp;", "&")]  # fmt: skip


def _unescape(text: str) -> str:
    for escaped, char in _ESCAPES:
        text = text.replace(escaped, char)
    return text


def _hold(lock: Path, shared: bool = False):
    """Context manager: the bench lock, exclusive (timed work) or shared; prints the load."""
    import contextlib
    import time

    @contextlib.contextmanager
    def held():
        with open(lock, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            t0 = time.time()
            print(
                f"  [{'shared' if shared else 'exclusive'} lock taken {time.strftime('%H:%M:%S')}, "
                f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}]",
                flush=True,
            )
            try:
                yield
            finally:
                print(
                    f"  [lock released after {time.time() - t0:.0f} s, load "
                    f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}]",
                    flush=True,
                )
                fcntl.flock(fh, fcntl.LOCK_UN)

    return held()


def whole_corpus(lock: Path, src: Path) -> int:
    """Both commands on the whole 1M corpus, in three holds of the exclusive lock."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        full = tmp / "raw1m.txt"
        with lzma.open(RAW_CORPUS, "rb") as fi, open(full, "wb") as fo:
            while chunk := fi.read(1 << 24):
                fo.write(chunk)
        with open(full, "rb") as fi:
            lines = fi.readlines()
        n = len(lines)
        halves = [tmp / "half1.txt", tmp / "half2.txt"]
        halves[0].write_bytes(b"".join(lines[: n // 2]))
        halves[1].write_bytes(b"".join(lines[n // 2 :]))
        del lines
        warm = tmp / "warm.txt"
        with open(full, "rb") as fi, open(warm, "wb") as fo:
            fo.writelines(islice(fi, 2000))
        ours = _sentvec(src, full, tmp / "ours.txt")
        sacre = [
            (
                ["sacremoses", "-l", "en", "-j", "2", "-q", "tokenize"],
                h,
                tmp / f"sacre{i}.txt",
                None,
            )
            for i, h in enumerate(halves)
        ]
        ours_runs, sacre_runs = [], []

        def timed(label, case, into):
            r = _run(*case)
            into.append(r)
            print(
                f"  {label}: {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU, "
                f"{r['rss_mib']:.0f} MiB, load1 at start {r['load1']:.2f}",
                flush=True,
            )

        print(f"whole corpus: {n:,} lines; halves of {n // 2:,} and {n - n // 2:,} lines")
        with _hold(lock):  # hold 1
            _run(*_sentvec(src, warm, tmp / "w1.txt"))  # untimed warm-ups
            _run(sacre[0][0], warm, tmp / "w2.txt")
            timed("sentvec tokenize, whole corpus #1", ours, ours_runs)
            timed("sacremoses -j 2, half 1", sacre[0], sacre_runs)
        with _hold(lock):  # hold 2
            timed("sacremoses -j 2, half 2", sacre[1], sacre_runs)
            timed("sentvec tokenize, whole corpus #2", ours, ours_runs)
        with _hold(lock):  # hold 3
            timed("sentvec tokenize, whole corpus #3", ours, ours_runs)
        with _hold(lock, shared=True):
            ours_lines = (tmp / "ours.txt").read_text(encoding="utf-8").split("\n")
            sacre_text = "".join(p.read_text(encoding="utf-8") for _, _, p, _ in sacre)
            sacre_lines = _unescape(sacre_text).lower().split("\n")
            same = sum(
                a.split() == b.split() for a, b in zip(ours_lines[:n], sacre_lines[:n], strict=True)
            )
        print(
            f"tokens equal on {same:,} of {n:,} lines "
            f"(line counts {len(ours_lines) - 1:,} and {len(sacre_lines) - 1:,})"
        )
    s_total = sum(r["wall_s"] for r in sacre_runs)
    s_cpu = sum(r["cpu_s"] for r in sacre_runs)
    o_med = statistics.median(r["wall_s"] for r in ours_runs)
    print(
        f"sacremoses -j 2 tokenize, whole corpus (sum of the halves): {s_total:.1f} s "
        f"({n / s_total:,.0f} lines/s, {s_cpu:.1f} s CPU)"
    )
    print(
        f"sentvec tokenize, whole corpus: median {o_med:.2f} s ({n / o_med:,.0f} lines/s); runs "
        + " ".join(f"{r['wall_s']:.2f}" for r in ours_runs)
    )
    print(f"sacremoses / sentvec: x{s_total / o_med:.1f}")
    return 0


def whole_corpus_alternating(lock: Path, src: Path, rounds: int) -> int:
    """Both commands on the whole 1M corpus, ``rounds`` times each, alternating (the order
    reverses every round), in ONE hold of the exclusive lock; the outputs' tokens compared on
    every line (under the shared lock)."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        full = tmp / "raw1m.txt"
        with lzma.open(RAW_CORPUS, "rb") as fi, open(full, "wb") as fo:
            while chunk := fi.read(1 << 24):
                fo.write(chunk)
        with open(full, "rb") as fi:
            n = sum(1 for _ in fi)
        warm = tmp / "warm.txt"
        with open(full, "rb") as fi, open(warm, "wb") as fo:
            fo.writelines(islice(fi, 2000))
        sacre_argv = ["sacremoses", "-l", "en", "-j", "2", "-q", "tokenize"]
        cases = {
            "sentvec tokenize": _sentvec(src, full, tmp / "ours.txt"),
            "sacremoses -j 2 tokenize": (sacre_argv, full, tmp / "sacre.txt", None),
        }
        runs: dict[str, list[dict]] = {k: [] for k in cases}
        print(f"whole corpus: {n:,} lines; {rounds} alternating rounds", flush=True)
        with _hold(lock):
            _run(*_sentvec(src, warm, tmp / "w1.txt"))  # untimed warm-ups
            _run(sacre_argv, warm, tmp / "w2.txt")
            for r in range(rounds):
                for name in list(cases) if r % 2 == 0 else list(cases)[::-1]:
                    x = _run(*cases[name])
                    runs[name].append(x)
                    print(
                        f"  {name}: {x['wall_s']:.2f} s wall, {x['cpu_s']:.2f} s CPU, "
                        f"{x['rss_mib']:.0f} MiB, load1 at start {x['load1']:.2f}",
                        flush=True,
                    )
        with _hold(lock, shared=True):
            ours_lines = (tmp / "ours.txt").read_text(encoding="utf-8").split("\n")
            sacre_text = (tmp / "sacre.txt").read_text(encoding="utf-8")
            sacre_lines = _unescape(sacre_text).lower().split("\n")
            same = sum(
                a.split() == b.split() for a, b in zip(ours_lines[:n], sacre_lines[:n], strict=True)
            )
        print(f"tokens equal on {same:,} of {n:,} lines")
    med = {k: statistics.median(x["wall_s"] for x in v) for k, v in runs.items()}
    for k, v in runs.items():
        print(
            f"{k}: median {med[k]:.2f} s ({n / med[k]:,.0f} lines/s); runs "
            + " ".join(f"{x['wall_s']:.2f}" for x in v)
        )
    print(f"sacremoses / sentvec: x{med['sacremoses -j 2 tokenize'] / med['sentvec tokenize']:.1f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--full-repeats", type=int, default=3)
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--whole-corpus", type=Path, default=None, metavar="LOCK")
    ap.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="with --whole-corpus: both commands on the whole file, this many alternating "
        "rounds in one hold (instead of sacremoses on two halves in two holds)",
    )
    ap.add_argument(
        "--src", type=Path, default=ROOT / "src", help="sentvec source tree (default: this one)"
    )
    args = ap.parse_args()
    if args.whole_corpus is not None and args.rounds:
        return whole_corpus_alternating(args.whole_corpus, args.src, args.rounds)
    if args.whole_corpus is not None:
        return whole_corpus(args.whole_corpus, args.src)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        full = tmp / "raw1m.txt"
        with lzma.open(RAW_CORPUS, "rb") as fi, open(full, "wb") as fo:
            while chunk := fi.read(1 << 24):
                fo.write(chunk)
        part = tmp / "part.txt"
        with open(full, "rb") as fi, open(part, "wb") as fo:
            fo.writelines(islice(fi, args.lines))
        cases = {
            "sentvec tokenize (compiled)": _sentvec(ROOT / "src", part, tmp / "ours.txt"),
            "sacremoses -j 2 tokenize": (
                ["sacremoses", "-l", "en", "-j", "2", "-q", "tokenize"],
                part,
                tmp / "sacre.txt",
                None,
            ),
        }
        if args.baseline_src:
            cases["sentvec tokenize (baseline src)"] = _sentvec(
                args.baseline_src, part, tmp / "base.txt"
            )
        names = list(cases)
        for name in names:
            _run(*cases[name])
        ours = (tmp / "ours.txt").read_text(encoding="utf-8").split("\n")
        sacre = _unescape((tmp / "sacre.txt").read_text(encoding="utf-8")).lower().split("\n")
        # tokens compared: with return_str the CLI keeps the trailing space of ` . ' `
        same = sum(a.split() == b.split() for a, b in zip(ours, sacre, strict=False))
        print(
            f"{args.lines:,} lines: sentvec's tokens == lower(XML-unescaped sacremoses CLI output) on "
            f"{same:,} of {len(ours) - 1:,}"
        )
        runs: dict[str, list[dict]] = {n: [] for n in names}
        for r in range(args.repeats):
            for name in names if r % 2 == 0 else names[::-1]:
                runs[name].append(_run(*cases[name]))
        full_case = _sentvec(ROOT / "src", full, tmp / "full.txt")
        full_runs = [_run(*full_case) for _ in range(args.full_repeats)]
    med = {n: statistics.median(x["wall_s"] for x in rs) for n, rs in runs.items()}
    print(f"{'command (first ' + f'{args.lines:,} lines)':40s} {'median s':>9s} {'lines/s':>10s}"
          f" {'CPU s':>7s} {'RSS MiB':>8s}  runs s (load1)")  # fmt: skip
    for n, rs in runs.items():
        cpu = statistics.median(x["cpu_s"] for x in rs)
        rss = statistics.median(x["rss_mib"] for x in rs)
        detail = " ".join(f"{x['wall_s']:.2f} ({x['load1']:.1f})" for x in rs)
        print(f"{n:40s} {med[n]:9.2f} {args.lines / med[n]:10,.0f} {cpu:7.2f} {rss:8.0f}  {detail}")
    ours_m = med["sentvec tokenize (compiled)"]
    for n in names[1:]:
        print(f"{n} / sentvec tokenize (compiled): x{med[n] / ours_m:.1f}")
    f_med = statistics.median(x["wall_s"] for x in full_runs)
    detail = " ".join(f"{x['wall_s']:.2f} ({x['load1']:.1f})" for x in full_runs)
    print(
        f"sentvec tokenize, whole 1M corpus (1,064,720 lines): median {f_med:.2f} s "
        f"({1_064_720 / f_med:,.0f} lines/s); runs {detail}"
    )
    for n in names[1:]:
        est = med[n] * 1_064_720 / args.lines
        print(
            f"  {n}, scaled linearly from {args.lines:,} lines to 1M: {est:.0f} s "
            f"(x{est / f_med:.1f} sentvec's measured 1M run)"
        )
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
