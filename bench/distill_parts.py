"""The steps ``sentvec distill`` sped up, old way against new, on the first 100,000 lines of
the 1M corpus: alternating runs, medians, load average beside each (docs/distill.md).

* ``count``: tokenizing the lines one encoding per line (``encode_batch_fast``) against
  :class:`sentvec.distill.corpus.WordTokenCache` (each distinct whitespace word once);
* ``words``: picking the 2,000 corpus words with a loop over sentences (the former
  ``corpus_words``, transcribed here) against the numpy ``corpus_words``;
* ``retokenize``: tokenizing the lines again with the extended vocabulary against
  :func:`sentvec.distill.vocabulary.retokenize`.

Each pair is checked equal. Run it under ``flock -x /work/notes/bench.lock``::

    python bench/distill_parts.py --corpus shared/data/corpus/enwiki-2015-sentences-1M.txt.xz
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def old_corpus_words(sample, tokens, n, skip_ids=(), prefix="##", max_chars=100):
    """``corpus_words`` before this change (a loop over sentences and a Counter)."""
    cont = np.fromiter((t.startswith(prefix) for t in tokens), dtype=bool, count=len(tokens))
    skip = set(int(i) for i in skip_ids)
    counts: Counter = Counter()
    for s in sample:
        if len(s) < 2:
            continue
        starts = np.flatnonzero(~cont[s])
        ends = np.append(starts[1:], len(s))
        for a, b in zip(starts[ends - starts > 1], ends[ends - starts > 1], strict=False):
            counts[tuple(int(i) for i in s[a:b])] += 1
    out = []
    for ids, c in counts.most_common():
        if skip.intersection(ids):
            continue
        word = tokens[ids[0]] + "".join(tokens[i][len(prefix) :] for i in ids[1:])
        if len(word) <= max_chars:
            out.append((word, ids, c))
            if len(out) == n:
                break
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--lines", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    from tokenizers import Tokenizer

    from sentvec.distill.corpus import WordTokenCache
    from sentvec.distill.vocabulary import corpus_words, extend_wordpiece, retokenize
    from sentvec.encoders.models import resolve_model
    from sentvec.sent2vec.dictionary import open_binary

    tok = Tokenizer.from_file(str(Path(resolve_model("minilm")) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    lines: list[str] = []
    with open_binary(Path(args.corpus)) as fh:
        for raw in fh:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                lines.append(line)
            if len(lines) >= args.lines:
                break
    vocab = tok.get_vocab(with_added_tokens=True)
    tokens = sorted(vocab, key=vocab.get)
    unk = vocab["[UNK]"]
    sample = [
        np.asarray(e.ids, np.int64) for e in tok.encode_batch_fast(lines, add_special_tokens=False)
    ]
    words = corpus_words(sample, tokens, 2000, skip_ids=[unk])
    spec = json.loads(tok.to_str())
    new = Tokenizer.from_str(json.dumps(extend_wordpiece(spec, [w for w, _, _ in words])))

    def by_line(t):
        return [
            np.asarray(e.ids, np.int64)
            for e in t.encode_batch_fast(lines, add_special_tokens=False)
        ]

    def cached():
        cache, out = WordTokenCache(tok), []
        for i in range(0, len(lines), 8192):  # count_corpus_tokens's batches
            out += cache.encode(lines[i : i + 8192])
        return out

    pairs = {
        "count": (lambda: by_line(tok), cached),
        "words": (
            lambda: old_corpus_words(sample, tokens, 2000, skip_ids=[unk]),
            lambda: corpus_words(sample, tokens, 2000, skip_ids=[unk]),
        ),
        "retokenize": (
            lambda: by_line(new),
            lambda: retokenize(sample, tokens, new, lines, unk_id=unk),
        ),
    }
    result: dict = {"lines": len(lines), "load_start": load_average()}
    for name, (old, fast) in pairs.items():
        times: dict[str, list[float]] = {"old": [], "new": []}
        outs = {}
        for run in range(args.runs):
            for who in ("old", "new") if run % 2 == 0 else ("new", "old"):
                fn = old if who == "old" else fast
                t0 = time.perf_counter()
                outs[who] = fn()
                times[who].append(time.perf_counter() - t0)
        a, b = outs["old"], outs["new"]
        same = (
            a == b
            if name == "words"
            else all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        )
        med = {k: statistics.median(v) for k, v in times.items()}
        result[name] = {
            "times_s": times,
            "median_s": med,
            "equal": bool(same),
            "load": load_average(),
        }
        print(
            f"{name:10s} old {med['old']:6.2f} s  new {med['new']:6.2f} s  (runs {times}) "
            f"equal {same}  load {load_average()}",
            flush=True,
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
