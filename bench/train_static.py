"""``train_static``: the recipe's variants scored on dev, the chosen one on the 7 STS test sets.

Every variant trains from the same stored teacher features (``--features``, written by
``sentvec.featurize_corpus`` / ``sentvec train-static``; read only) and the same distilled
initial rows (``--init``, a ``sentvec distill`` directory of the same teacher and corpus), so a
variant costs only its training. Each variant is scored on STS-B dev + SICK trial (the
selection set: the defaults were chosen on it alone); ``--test`` also scores the 7 STS test
sets (SentEval text, Spearman x 100, "mean" aggregation, no whitening: the README's scorer).
Transfer tasks: ``sentvec eval-transfer --model DIR --tasks MRPC,MR,CR,SUBJ,MPQA,TREC,SST2``
on a model kept with ``--save``. Each record carries ``uptime``'s load average and
the times of the steps. Any Model2Vec directory (a tokenlearn or WordLlama output) is scored
the same way with ``--score-only DIR``.

Usage::

    python bench/train_static.py --corpus shared/data/corpus/enwiki-2015-sentences-1M.txt.xz \\
        --features /work/features/minilm --init /work/features/distill-minilm-256 \\
        --variants defaults,loss=mse,loss=contrastive,init=random --out docs/results/train-static
    python bench/train_static.py --score-only some-model2vec-dir --test --out /tmp/peer
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def score(model: Any, *, test: bool) -> dict[str, Any]:
    """Dev (STS-B dev + SICK trial), optionally the 7 STS test sets."""
    from sentvec import evaluate_sts
    from sentvec.evaluation import load_sts

    out: dict[str, Any] = {}
    r = evaluate_sts(model, load_sts(["STSB", "SICK"], split="dev"), aggregation="mean")
    out["dev"] = {**{k: round(v, 2) for k, v in r.task_scores.items()}}
    out["dev"]["avg"] = round(r.average, 2)
    if test:
        r = evaluate_sts(model, load_sts(), aggregation="mean")
        out["test"] = {k: round(v, 2) for k, v in r.task_scores.items()}
        out["test"]["avg"] = round(r.average, 2)
    return out


def parse_variant(text: str) -> dict[str, Any]:
    if text == "defaults":
        return {}
    opts: dict[str, Any] = {}
    for part in text.split("+"):
        key, value = part.split("=", 1)
        for cast in (int, float):
            try:
                opts[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            opts[key] = value
    return opts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--corpus")
    ap.add_argument("--features")
    ap.add_argument("--init", default="distill")
    ap.add_argument("--variants", default="defaults", help="comma-separated; key=value+key=value")
    ap.add_argument("--max-sentences", type=int, default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--save", action="store_true", help="keep each variant's model in --out")
    ap.add_argument("--test", action="store_true")
    ap.add_argument("--score-only", default=None, metavar="DIR")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.score_only:
        from sentvec import load_encoder

        rec = {"model": args.score_only, "load_average": load_average()}
        rec.update(score(load_encoder(args.score_only), test=args.test))
        print(json.dumps(rec))
        (out / f"score-{Path(args.score_only).name}.json").write_text(json.dumps(rec, indent=2))
        return
    from sentvec import train_static
    from sentvec.static_training.featurize import contiguous_sentences, read_features_manifest

    available = contiguous_sentences(read_features_manifest(args.features))
    for text in args.variants.split(","):
        opts = parse_variant(text)
        opts.setdefault("max_sentences", args.max_sentences or available)
        opts.setdefault("init", args.init)
        t0 = time.perf_counter()
        load = load_average()
        model = train_static(
            args.model,
            args.corpus,
            out / f"model-{text}" if args.save else None,
            features=args.features,
            show_progress_bar=False,
            **opts,
        )
        rec = {
            "variant": text,
            "load_average_at_start": load,
            "wall_s": round(time.perf_counter() - t0, 1),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "record": model.config["sentvec_train_static"],
        }
        rec.update(score(model, test=args.test))
        print(json.dumps({k: rec[k] for k in rec if k != "record"}), flush=True)
        name = text.replace("=", "-").replace("+", "_")
        (out / f"variant-{name}.json").write_text(json.dumps(rec, indent=2))


if __name__ == "__main__":
    main()
