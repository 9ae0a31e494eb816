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

Usage::

    python bench/moses_tokenize.py [--lines 20000] [--repeats 3] [--full-repeats 3]
        [--baseline-src /path/to/older/src]
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--full-repeats", type=int, default=3)
    ap.add_argument("--baseline-src", type=Path, default=None)
    args = ap.parse_args()
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
