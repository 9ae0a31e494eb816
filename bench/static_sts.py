"""STS block of static embedding models under sentvec's post-processing, one scorer for all.

For each model (``load_encoder`` names: Model2Vec / StaticEmbedding directories, ``wordllama``,
``wordllama-128``, ``wordllama-64``) and each text variant (``senteval``: SentEval's tokenized,
lower-cased STS files, the variant of the MiniLM and Sent2Vec rows in docs/REPRODUCTION.md;
``raw``: the official files), prints a Markdown table of Spearman x 100 ("mean" aggregation,
7 STS tasks) with four rows:

* none;
* per-year whitening (WhiteningBERT's transductive protocol: fitted on both sides of each STS
  year's scored pairs);
* corpus whitening: one Whitening fitted on the model's vectors of the first ``--corpus-lines``
  lines of the reference corpus (tokenized + lower-cased for ``senteval``, raw for ``raw``);
* ABTT per year (all-but-the-top, ``D = max(1, round(d / 100))``).

Usage::

    nice -n 10 python bench/static_sts.py MODEL [MODEL ...] [--corpus-lines 100000]
"""

from __future__ import annotations

import argparse
import lzma
import os
import sys
import time
import warnings
from itertools import islice
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CORPUS = {
    "raw": Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz"),
    "senteval": Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz"),
}
TASKS = ["STSBenchmark", "SICKRelatedness", "STS12", "STS13", "STS14", "STS15", "STS16"]
SHORT = ["STSB", "SICK", "STS12", "STS13", "STS14", "STS15", "STS16"]


def corpus_lines(variant: str, n: int) -> list[str]:
    with lzma.open(CORPUS[variant], "rt", encoding="utf-8") as fh:
        return [x for x in (ln.strip() for ln in islice(fh, n)) if x]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--corpus-lines", type=int, default=100_000)
    ap.add_argument("--variants", default="senteval,raw")
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    from sentvec import STSScorer, Whitening, load_encoder, load_sts
    from sentvec.evaluation import unique_sentences
    from sentvec.whitening import AllButTheTop, default_abtt_components

    print(f"load average at start: {os.getloadavg()}")
    for variant in args.variants.split(","):
        tasks = load_sts(TASKS, variant=variant)
        sentences = unique_sentences(tasks)
        scorer = STSScorer(tasks, sentences)
        corpus = corpus_lines(variant, args.corpus_lines)
        print(
            f"\n### {variant} text ({len(sentences):,} STS sentences, {len(corpus):,} corpus lines)\n"
        )
        print("| model | post-processing | " + " | ".join(SHORT) + " | Avg. |")
        print("|---|---|" + "---:|" * (len(SHORT) + 1))
        for name in args.models:
            t0 = time.perf_counter()
            enc = load_encoder(name)
            emb = enc.encode(sentences)
            W = Whitening().fit(enc.encode(corpus))
            D = default_abtt_components(emb.shape[1])
            rows = {
                "none": scorer.score(emb),
                "per-year whitening": scorer.score(emb, whitening="year"),
                f"corpus whitening ({len(corpus) // 1000}k lines)": scorer.score(emb, whitening=W),
                f"ABTT per year (D={D})": scorer.score(
                    emb, whitening="year", postprocessor=AllButTheTop(D)
                ),
            }
            label = f"{Path(name).name} (d={emb.shape[1]})"
            for post, res in rows.items():
                cells = " | ".join(f"{res.task_scores[t]:.2f}" for t in TASKS)
                print(f"| {label} | {post} | {cells} | {res.average:.2f} |")
            print(
                f"<!-- {name}: {time.perf_counter() - t0:.1f} s, load {os.getloadavg()[0]:.2f} -->"
            )


if __name__ == "__main__":
    main()
