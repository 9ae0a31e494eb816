"""Identity check of the compiled Moses tokenizer against sacremoses, on the full data.

1. The 1M-sentence reference corpus: every line of
   ``/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz`` tokenized by
   ``sentvec.sent2vec.moses.MosesTokenizer(lowercase=True)`` against the same line of its twin
   ``enwiki-2015-sentences-1M.tok.lower.txt.xz`` (made with sacremoses
   ``MosesTokenizer("en").tokenize(line.strip(), escape=False)``, joined by spaces,
   lower-cased; ``shared/data/MANIFEST.md``).
2. The STS raw files (``/work/shared/data/raw``: STS12-16 inputs, STS-B csv, SICK): every
   distinct tab-separated field, against sacremoses run here (``--sts-sample N``: a seeded
   sample of N fields instead of all).

Both of the tokenizer's paths are checked on both sets: ``tokenize_lines`` (str in, str out:
``embed``, ``encode``, training ...) and ``tokenize_utf8`` (UTF-8 bytes in and out, lower-cased
in the kernel: ``sentvec tokenize``), each against the reference.

Prints the lines compared, the mismatches (the first ``--show`` of them), the lines left to
sacremoses by the kernel (its fallback), the lines the UTF-8 path left to the str path, and the
load average. Exit status 1 on any mismatch.

Usage::

    python bench/moses_identity.py [--corpus-lines N] [--sts-sample N] [--threads 2]
"""

from __future__ import annotations

import argparse
import lzma
import os
import random
import sys
import time
from itertools import islice
from pathlib import Path

DATA = Path("/work/shared/data")
RAW = DATA / "corpus" / "enwiki-2015-sentences-1M.txt.xz"
TWIN = DATA / "corpus" / "enwiki-2015-sentences-1M.tok.lower.txt.xz"
BATCH = 65536


def _lines(path: Path, limit: int | None):
    with lzma.open(path, "rt", encoding="utf-8", newline="\n") as fh:
        for line in islice(fh, limit):
            yield line[:-1] if line.endswith("\n") else line


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"load average {a:.2f} {b:.2f} {c:.2f}"


def _check_utf8(tok, lines: list[str], want: list[str], first: int, show: int, bad: int) -> int:
    """Mismatches of ``tokenize_utf8`` on ``lines`` (joined by newlines) against ``want``."""
    got = tok.tokenize_utf8("\n".join(lines).encode("utf-8", "surrogateescape"))
    got_lines = got.decode("utf-8", "surrogateescape").split("\n")[:-1]
    if len(got_lines) != len(lines):
        raise SystemExit(f"tokenize_utf8 gave {len(got_lines)} lines for {len(lines)}")
    for i, (g, w) in enumerate(zip(got_lines, want, strict=True)):
        if g != w:
            bad += 1
            if bad <= show:
                print(
                    f"  utf8 path, line {first + i}: {lines[i]!r}\n    ours {g!r}\n    ref  {w!r}"
                )
    return bad


def check_corpus(tok, limit: int | None, show: int) -> int:
    t0 = time.perf_counter()
    bad = bad_utf8 = n = 0
    tok_s = utf8_s = 0.0
    raw, twin = _lines(RAW, limit), _lines(TWIN, limit)
    while True:
        batch = list(islice(raw, BATCH))
        want = list(islice(twin, len(batch)))
        if not batch:
            break
        if len(want) != len(batch):
            raise SystemExit(f"{TWIN} has fewer lines than {RAW}")
        t = time.perf_counter()
        got = tok.tokenize_lines(batch)
        tok_s += time.perf_counter() - t
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if g != w:
                bad += 1
                if bad <= show:
                    print(f"  line {n + i + 1}: {batch[i]!r}\n    ours {g!r}\n    ref  {w!r}")
        t = time.perf_counter()
        bad_utf8 = _check_utf8(tok, batch, want, n + 1, show, bad_utf8)
        utf8_s += time.perf_counter() - t
        n += len(batch)
    if next(twin, None) is not None:
        raise SystemExit(f"{TWIN} has more lines than {RAW}")
    print(
        f"corpus: {n:,} lines, {bad} mismatches (str path), {bad_utf8} (UTF-8 path); "
        f"{tok.n_fallback} left to sacremoses ({100 * tok.n_fallback / max(n, 1):.4f} %), "
        f"{tok.n_in_python} by the UTF-8 path to the str path "
        f"({100 * tok.n_in_python / max(n, 1):.4f} %); tokenizing {tok_s:.1f} s (str), "
        f"{utf8_s:.1f} s (UTF-8, with encoding and decoding), total "
        f"{time.perf_counter() - t0:.1f} s; {_load()}"
    )
    return bad + bad_utf8


def sts_fields(root: Path) -> list[str]:
    out: set[str] = set()
    for p in sorted(root.rglob("*")):
        if p.is_file() and ("input" in p.name or p.suffix == ".csv" or p.name.startswith("SICK")):
            text = p.read_text(encoding="utf-8", errors="surrogateescape")
            for line in text.split("\n"):
                out.update(line.split("\t"))
    return sorted(out)


def check_sts(tok, root: Path, sample: int | None, show: int) -> int:
    from sentvec.sent2vec.moses import sacremoses_tokens

    fields = sts_fields(root)
    if sample is not None and sample < len(fields):
        fields = random.Random(0).sample(fields, sample)
    before, before_py = tok.n_fallback, tok.n_in_python
    t = time.perf_counter()
    got = tok.tokenize_lines(fields)
    ours = time.perf_counter() - t
    t = time.perf_counter()
    want = [" ".join(sacremoses_tokens(f, lowercase=True)) for f in fields]
    ref = time.perf_counter() - t
    bad_utf8 = _check_utf8(tok, fields, want, 1, show, 0)
    bad = bad_utf8
    for f, g, w in zip(fields, got, want, strict=True):
        if g != w:
            bad += 1
            if bad <= show:
                print(f"  {f!r}\n    ours {g!r}\n    ref  {w!r}")
    print(
        f"STS raw ({root}): {len(fields):,} distinct fields, {bad - bad_utf8} mismatches "
        f"(str path), {bad_utf8} (UTF-8 path), {tok.n_fallback - before} left "
        f"to sacremoses, {tok.n_in_python - before_py} by the UTF-8 path to the str path; ours "
        f"{ours:.2f} s, sacremoses "
        f"{ref:.1f} s (x{ref / ours:.0f}); {_load()}"
    )
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus-lines", type=int, default=None, help="first N lines only")
    ap.add_argument("--sts-sample", type=int, default=None, help="N random STS fields")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--no-sts", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--show", type=int, default=20, help="mismatches printed")
    args = ap.parse_args()
    from sentvec.sent2vec.moses import MosesTokenizer, sacremoses_version

    tok = MosesTokenizer(lowercase=True, num_threads=args.threads)
    tok.load()
    print(f"sacremoses {sacremoses_version()}; {tok!r}; {_load()}")
    bad = 0
    if not args.no_sts:
        bad += check_sts(tok, DATA / "raw", args.sts_sample, args.show)
    if not args.no_corpus:
        bad += check_corpus(tok, args.corpus_lines, args.show)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
