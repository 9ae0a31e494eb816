"""Sent2Vec training speed: sentvec against gensim Word2Vec CBOW, measured in the same run.

Trains sentvec's Sent2Vec (uni+bigrams, the reference flags of docs/baselines.md: dim 100,
epoch 1, lr 0.2, minCount 5, minCountLabel 5, neg 10, t 1e-4, dropoutK 4, bucket 2,000,000,
2 threads) and gensim ``Word2Vec(vector_size=100, window=10, negative=10, sample=1e-4,
min_count=5, workers=2, epochs=1, sg=0)`` (``build_vocab``, then a timed ``train``) on the
reference corpus, and prints words/s/thread of both training loops, their ratio and the
end-to-end wall times. words = corpus tokens (in and out of vocabulary) trained, for both (sentvec's official run length
makes an epoch ~1.056 passes on this corpus; words/s accounts for it).

The target (docs/baselines.md): sentvec >= 2x the official binary, i.e. >= 1.0x gensim CBOW,
training loop against training loop. The machine is shared: timings vary by tens of percent
between runs; only the ratio within one run means something. Use ``--repeats`` to alternate.

Usage::

    python bench/sent2vec_train.py                # full corpus (28M tokens), both tools
    python bench/sent2vec_train.py --lines 200000 --update both
"""

from __future__ import annotations

import argparse
import json
import logging
import lzma
import resource
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_XZ = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")
CACHE = ROOT / ".cache"


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


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_sentvec(path: Path, args: argparse.Namespace, update: str) -> dict:
    from sentvec.sent2vec.trainer import Sent2VecTrainer

    tr = Sent2VecTrainer(dim=args.dim, epoch=args.epoch, lr=0.2, min_count=5, min_count_label=5,
                         neg=10, t=1e-4, dropout_k=4, bucket=2_000_000, word_ngrams=2,
                         thread=args.threads, update=update, show_progress_bar=args.progress)
    t0 = time.perf_counter()
    model = tr.fit(path)
    e2e = time.perf_counter() - t0
    rep = tr.report_
    trained = sum(e.tokens for e in rep.epochs)  # official run length: ~1.056 passes per epoch
    out = {"tool": f"sentvec ({update})", "loop_s": rep.train_seconds, "e2e_s": e2e,
           "words": round(trained * rep.raw_tokens / rep.n_tokens), "threads": args.threads,
           "wpst": rep.words_per_sec_per_thread, "vocab_s": rep.vocab_seconds,
           "convert_s": rep.convert_seconds, "init_s": rep.init_seconds,
           "loss": rep.epochs[-1].loss, "peak_rss_mib": peak_rss_mib()}
    if args.infer:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            sents = [next(fh).rstrip("\n") for _ in range(min(args.infer, rep.n_sentences))]
        model.encode(sents[:1000])
        t0 = time.perf_counter()
        model.encode(sents)
        out["infer_sent_per_s"] = len(sents) / (time.perf_counter() - t0)
    return out


def run_gensim(path: Path, args: argparse.Namespace) -> dict:
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    t0 = time.perf_counter()
    m = Word2Vec(vector_size=args.dim, window=10, negative=10, sample=1e-4, min_count=5,
                 workers=args.threads, epochs=args.epoch, sg=0)
    if args.gensim_corpus_file:
        m.build_vocab(corpus_file=str(path))
        t1 = time.perf_counter()
        m.train(corpus_file=str(path), total_examples=m.corpus_count,
                total_words=m.corpus_total_words, epochs=args.epoch)
    else:
        m.build_vocab(LineSentence(str(path)))
        t1 = time.perf_counter()
        m.train(LineSentence(str(path)), total_examples=m.corpus_count, epochs=args.epoch)
    t2 = time.perf_counter()
    words = m.corpus_total_words * args.epoch
    return {"tool": "gensim CBOW" + (" (corpus_file)" if args.gensim_corpus_file else ""),
            "loop_s": t2 - t1, "e2e_s": t2 - t0, "words": words, "threads": args.threads,
            "wpst": words / (t2 - t1) / args.threads}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=None, help="use the first N corpus lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epoch", type=int, default=1)
    ap.add_argument("--update", choices=["sentence", "target", "both"], default="target")
    ap.add_argument("--repeats", type=int, default=1, help="alternate the tools N times")
    ap.add_argument("--no-gensim", action="store_true")
    ap.add_argument("--gensim-corpus-file", action="store_true",
                    help="train gensim in corpus_file mode (default: LineSentence iterable)")
    ap.add_argument("--infer", type=int, default=100_000,
                    help="also time encode() on this many corpus sentences (0: skip)")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    path = corpus_path(args.lines)
    print(f"corpus: {path} ({path.stat().st_size / 2**20:.0f} MiB)", flush=True)
    updates = ["sentence", "target"] if args.update == "both" else [args.update]
    rows: list[dict] = []
    for rep in range(args.repeats):
        order = [("sentvec", u) for u in updates] + ([] if args.no_gensim else [("gensim", "")])
        if rep % 2:
            order.reverse()  # alternate who runs first: the machine's load drifts
        for tool, upd in order:
            row = run_sentvec(path, args, upd) if tool == "sentvec" else run_gensim(path, args)
            rows.append(row | {"repeat": rep})
            print(json.dumps(rows[-1]), flush=True)
    print()
    print(f"{'tool':28s} {'loop s':>8s} {'e2e s':>8s} {'words/s/thread':>15s}")
    for r in rows:
        print(f"{r['tool']:28s} {r['loop_s']:8.1f} {r['e2e_s']:8.1f} {r['wpst']:15,.0f}")
    if not args.no_gensim:
        for rep in range(args.repeats):
            g = [r for r in rows if r["repeat"] == rep and r["tool"].startswith("gensim")][0]
            for r in rows:
                if r["repeat"] == rep and r["tool"].startswith("sentvec"):
                    print(f"repeat {rep}: {r['tool']} / gensim CBOW, training loop words/s: "
                          f"{r['wpst'] / g['wpst']:.2f}x; end to end: "
                          f"{g['e2e_s'] / r['e2e_s']:.2f}x")
    for r in rows:
        if "infer_sent_per_s" in r:
            print(f"{r['tool']}: encode {r['infer_sent_per_s']:,.0f} sentences/s; "
                  f"peak RSS {r['peak_rss_mib']:,.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
