"""Sent2Vec inference throughput: ``Sent2Vec.encode`` vs a plain Python/numpy peer, same run.

Encodes the first 100,000 sentences of the reference corpus
(``/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz``, read with lzma) with

* ``tests/data/sent2vec-reference/tiny-bigram.bin`` (official file, dim 16, bucket 20,000),
* a synthetic dim-100 bigram model (vocabulary of those sentences, minCount 5, bucket 2,000,000,
  random float32 rows; the size of the official dim-100 reference model), unless ``--no-synthetic``,
* any model paths given as arguments (official ``.bin`` or sentvec directories).

For each: load time, sentences/s with 1 and 2 kernel threads (best and median of ``--repeats``),
the ratio to the peer (dict lookup + numpy mean of rows, on the first ``--peer-sentences``
sentences) measured in this run, and the official wrapper's figures from
``/work/shared/docs/baselines.md`` (83k/s with 1 thread, 145k/s with 2, dim 100; not measured here).
Peak RSS is printed at the end. The vectors of the two paths are checked to agree (max abs diff).

Usage::

    python bench/sent2vec_infer.py [MODEL ...] [--sentences 100000] [--repeats 3] [--no-synthetic]
"""

from __future__ import annotations

import argparse
import lzma
import resource
import statistics
import sys
import tempfile
import time
import warnings
from itertools import islice
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")
TINY = ROOT / "tests" / "data" / "sent2vec-reference" / "tiny-bigram.bin"
OFFICIAL = {1: 83_000, 2: 145_000}  # baselines.md, dim 100, embed_sentences


def peer_encode(model, sentences: list[str]) -> np.ndarray:
    """Straightforward implementation: Python lookups and hashing, numpy mean of rows."""
    lookup = model.dictionary.word2id
    nwords, bucket, n = model.nwords, model.dictionary.bucket, model.dictionary.word_ngrams
    mat = model.input_matrix
    out = np.zeros((len(sentences), model.dim), dtype=np.float32)
    for k, s in enumerate(sentences):
        ids = [lookup[t] for t in s.split() if t in lookup]
        rows = list(ids)
        if n > 1:
            rows += [nwords + (a * 116049371 + b) % bucket for a, b in zip(ids, ids[1:])]
        if rows:
            out[k] = mat[rows].mean(axis=0)
    return out


def synthetic_model(sentences: list[str], dim: int, bucket: int):
    from sentvec.sent2vec.dictionary import Dictionary
    from sentvec.sent2vec.model import Sent2Vec

    d = Dictionary.from_corpus(sentences, min_count=5, bucket=bucket, word_ngrams=2)
    rng = np.random.default_rng(0)
    inp = np.empty((d.nwords + bucket + 1, dim), dtype=np.float32)
    step = 200_000
    for lo in range(0, inp.shape[0], step):
        hi = min(inp.shape[0], lo + step)
        inp[lo:hi] = rng.uniform(-1 / dim, 1 / dim, (hi - lo, dim)).astype(np.float32)
    return Sent2Vec(d, inp, np.zeros((d.nwords, dim), np.float32), args={"dim": dim})


def bench_model(label: str, model, load_s: float, sentences: list[str], repeats: int,
                peer_n: int) -> None:
    print(f"\n== {label}: dim {model.dim}, nwords {model.nwords}, bucket "
          f"{model.dictionary.bucket}, load {load_s:.2f} s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        model.encode(sentences[:1000], num_threads=1)  # JIT load / compile
        print(f"warm-up (kernel load/compile + 1000 sentences): {time.perf_counter() - t:.2f} s")
        sub = sentences[:peer_n]
        t = time.perf_counter()
        ref = peer_encode(model, sub)
        peer = len(sub) / (time.perf_counter() - t)
        ours_sub = model.encode(sub, num_threads=1)
        diff = float(np.abs(ours_sub - ref).max())
        print(f"peer (python lookups + numpy mean): {peer:,.0f} sentences/s on {len(sub):,}; "
              f"max |ours - peer| = {diff:.2e}")
        for threads in (1, 2):
            rates = []
            for _ in range(repeats):
                t = time.perf_counter()
                model.encode(sentences, num_threads=threads)
                rates.append(len(sentences) / (time.perf_counter() - t))
            best, med = max(rates), statistics.median(rates)
            official = OFFICIAL[threads]
            note = ("" if model.dim == 100
                    else f" (official figure is for dim 100, this is {model.dim})")
            print(f"{threads} thread(s): best {best:,.0f}/s, median {med:,.0f}/s; "
                  f"x{best / peer:.1f} the peer (same run); x{best / official:.2f} the official "
                  f"wrapper's {official:,}/s from baselines.md{note}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", help="more models to time (.bin or sentvec directory)")
    p.add_argument("--sentences", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--peer-sentences", type=int, default=10_000)
    p.add_argument("--no-synthetic", action="store_true", help="skip the synthetic dim-100 model")
    args = p.parse_args(argv)

    from sentvec.sent2vec.model import Sent2Vec

    with lzma.open(CORPUS, "rt", encoding="utf-8") as fh:
        sentences = [line.rstrip("\n") for line in islice(fh, args.sentences)]
    ntok = sum(len(s.split()) for s in sentences)
    print(f"{len(sentences):,} sentences, {ntok:,} tokens from {CORPUS.name}")

    t = time.perf_counter()
    tiny = Sent2Vec.load(TINY)
    bench_model("tiny-bigram.bin (official file)", tiny, time.perf_counter() - t, sentences,
                args.repeats, args.peer_sentences)
    if not args.no_synthetic:
        t = time.perf_counter()
        synth = synthetic_model(sentences, 100, 2_000_000)
        build = time.perf_counter() - t
        with tempfile.TemporaryDirectory() as tmp:
            synth.save_bin(Path(tmp) / "synth.bin")
            del synth
            t = time.perf_counter()
            synth = Sent2Vec.load(Path(tmp) / "synth.bin")
            load_s = time.perf_counter() - t
        print(f"\n(synthetic model built in {build:.1f} s, written as .bin and re-loaded)")
        bench_model("synthetic dim-100 bigram model (.bin)", synth, load_s, sentences,
                    args.repeats, args.peer_sentences)
        del synth
    for path in args.models:
        t = time.perf_counter()
        m = Sent2Vec.load(path)
        bench_model(path, m, time.perf_counter() - t, sentences, args.repeats,
                    args.peer_sentences)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS: {rss:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
