"""Sent2Vec quality: train on the reference corpus and score STS14 and SICK-R like the paper.

Trains sentvec's Sent2Vec on the 1M-sentence Wikipedia reference corpus with the reference
flags (dim 100, epoch 5, lr 0.2, wordNgrams 2, minCount 5, minCountLabel 5, neg 10, t 1e-4,
dropoutK 4, bucket 2,000,000, thread 2), for each requested update mode, saves each model under
``runs/`` (git-ignored) and evaluates it with the paper's Table 2 protocol: cosine of the two
sentence vectors, Spearman and Pearson x 100, one vector per distinct sentence; STS14 SentEval
files (already lower-cased, six subsets, unweighted mean) and SICK-R test (sentences
lower-cased). The official binary's figures (data/sent2vec-reference/README.md, run a) are
printed alongside; the claim is "within 1 point or better".

Usage::

    nohup python bench/sent2vec_quality.py --update both > runs/s2v_quality.log 2>&1 &
    python bench/sent2vec_quality.py --eval-only runs/sent2vec-wiki1m-sentence
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: Official binary, run a (Spearman, Pearson) x 100.
OFFICIAL = {
    "STS14": {
        "deft-forum": (30.50, 30.11),
        "deft-news": (59.68, 61.07),
        "headlines": (42.05, 44.89),
        "images": (50.17, 51.46),
        "OnWN": (51.60, 48.66),
        "tweet-news": (57.11, 61.95),
        "mean": (48.52, 49.69),
    },
    "SICK-R test": (55.14, 58.49),
}
FLAGS = dict(
    dim=100,
    epoch=5,
    lr=0.2,
    word_ngrams=2,
    min_count=5,
    min_count_label=5,
    neg=10,
    t=1e-4,
    dropout_k=4,
    bucket=2_000_000,
    thread=2,
)


def evaluate(model) -> dict:
    """STS14 (6 subsets) and SICK-R test, Spearman / Pearson x 100, cosine, distinct sentences."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentvec.evaluation import load_sts, score_sts, unique_sentences

    out = {}
    for name, lower in (("STS14", False), ("SICKRelatedness", True)):
        tasks = load_sts([name], variant="senteval", split="test")
        sents = unique_sentences(tasks)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zero vectors are counted in the result
            emb = model.encode([s.lower() for s in sents] if lower else sents)
        res = score_sts(tasks, sents, emb)
        if name == "STS14":
            sub = {
                k: (res.subset_scores[name][k], res.subset_pearson[name][k])
                for k in res.subset_scores[name]
            }
            sub["mean"] = (
                res.scores_by_aggregation["mean"][name],
                res.pearson_by_aggregation["mean"][name],
            )
            out["STS14"] = sub
        else:
            out["SICK-R test"] = (res.task_scores[name], res.task_pearson[name])
        out.setdefault("zero_vectors", 0)
        out["zero_vectors"] += res.n_zero_vectors
    return out


def print_table(rows: dict[str, dict]) -> None:
    subsets = ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news", "mean"]
    head = "| run | " + " | ".join(subsets[:-1]) + " | STS14 mean | SICK-R test |"
    print(head)
    print("|" + "---|" * (len(subsets) + 2))
    for name, r in {"official (run a)": OFFICIAL, **rows}.items():
        cells = [f"{r['STS14'][s][0]:.2f} / {r['STS14'][s][1]:.2f}" for s in subsets]
        sick = r["SICK-R test"]
        print(f"| {name} | " + " | ".join(cells) + f" | {sick[0]:.2f} / {sick[1]:.2f} |")
    for name, r in rows.items():
        d = [r["STS14"]["mean"][i] - OFFICIAL["STS14"]["mean"][i] for i in (0, 1)]
        d += [r["SICK-R test"][i] - OFFICIAL["SICK-R test"][i] for i in (0, 1)]
        ok = all(x >= -1.0 for x in d)
        print(
            f"{name}: delta vs official STS14 {d[0]:+.2f} / {d[1]:+.2f}, SICK-R test "
            f"{d[2]:+.2f} / {d[3]:+.2f} -> {'within 1 point or better' if ok else 'WORSE'}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", choices=["sentence", "target", "both"], default="both")
    ap.add_argument("--lines", type=int, default=None, help="train on the first N lines only")
    ap.add_argument("--epoch", type=int, default=FLAGS["epoch"])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "runs")
    ap.add_argument(
        "--eval-only",
        type=Path,
        nargs="*",
        default=None,
        help="evaluate saved model(s) instead of training",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tag", default="", help="suffix of the saved model and JSON names")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    from sentvec.sent2vec.model import Sent2Vec

    rows: dict[str, dict] = {}
    if args.eval_only:
        for p in args.eval_only:
            rows[p.name] = evaluate(Sent2Vec.load(p))
            print(json.dumps({p.name: rows[p.name]}), flush=True)
    else:
        from sent2vec_train import corpus_path

        from sentvec.sent2vec.trainer import Sent2VecTrainer

        path = corpus_path(args.lines)
        args.out_dir.mkdir(parents=True, exist_ok=True)
        modes = ["sentence", "target"] if args.update == "both" else [args.update]
        for mode in modes:
            flags = dict(FLAGS, epoch=args.epoch)
            tr = Sent2VecTrainer(
                **flags, update=mode, seed=args.seed, show_progress_bar=args.progress
            )
            t0 = time.perf_counter()
            model = tr.fit(path)
            wall = time.perf_counter() - t0
            suffix = f"-first{args.lines}" if args.lines else ""
            tag = f"-{args.tag}" if args.tag else ""
            dest = args.out_dir / f"sent2vec-wiki1m{suffix}-{mode}{tag}"
            model.save(dest)
            rep = tr.report_
            print(
                json.dumps(
                    {
                        "mode": mode,
                        "saved": str(dest),
                        "wall_s": wall,
                        "train_s": rep.train_seconds,
                        "words_per_sec_per_thread": rep.words_per_sec_per_thread,
                        "epoch_loss": [e.loss for e in rep.epochs],
                    }
                ),
                flush=True,
            )
            rows[f"sentvec update={mode}{tag}"] = evaluate(model) | {
                "train_report": rep.to_dict(),
                "wall_s": wall,
                "saved": str(dest),
            }
            print(json.dumps({mode: rows[f"sentvec update={mode}{tag}"]}), flush=True)
            del model
        name = f"sent2vec_quality{'-' + args.tag if args.tag else ''}.json"
        (args.out_dir / name).write_text(json.dumps(rows, indent=2))
    print()
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
