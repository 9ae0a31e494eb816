"""The L1 variant of Sent2Vec (paper appendix B, Tables 6-7), measured on the reference corpus.

Trains Sent2Vec on the 1M-sentence Wikipedia reference corpus with the reference flags of
``sent2vec_quality.py`` (dim 100, epoch 5, lr 0.2, wordNgrams 2, minCount 5, minCountLabel 5,
neg 10, t 1e-4, dropoutK 4, bucket 2,000,000, thread 2; ``update="target"``, the official
per-target semantics) with the L1 weight ``--tau`` (proximal soft-threshold after every update,
``Sent2VecTrainer(l1=tau)``), then evaluates the model:

* STS14 (six subsets, mean) and SICK-R test: Spearman / Pearson x 100 (paper Table 2 protocol,
  ``sent2vec_quality.evaluate``);
* the six transfer tasks (MRPC, MR, CR, SUBJ, MPQA, TREC) with ``evaluate_transfer`` (default
  protocol) on Moses-tokenised, lower-cased text, as the README's transfer table;
* sparsity: the share of exact zeros in the input matrix (word rows, hashed-bigram rows and
  both) and the output matrix, and of all-zero word rows.

One run per call; the JSON goes to ``--out`` (default ``docs/results/``). ``--summary`` prints the
Markdown table of all runs found there.

Usage::

    nice python bench/sent2vec_l1.py --tau 0.0005 --seed 1 > runs/l1-0.0005-1.log 2>&1
    python bench/sent2vec_l1.py --summary
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
TASKS = ("MRPC", "MR", "CR", "SUBJ", "MPQA", "TREC")


def sparsity(model) -> dict:
    """Share of exact zeros per matrix block (the words first, then the hash buckets)."""
    import numpy as np

    nw = model.nwords
    inp, out = model.input_matrix, model.output_matrix
    words, buckets = inp[:nw], inp[nw:]
    return {
        "input_words_zero_share": float(np.mean(words == 0)),
        "input_buckets_zero_share": float(np.mean(buckets == 0)),
        "input_zero_share": float(np.mean(inp == 0)),
        "output_zero_share": float(np.mean(out == 0)),
        "input_word_rows_all_zero": int(np.sum(~words.any(axis=1))),
        "input_bucket_rows_all_zero": int(np.sum(~buckets.any(axis=1))),
        "nwords": int(nw),
        "n_buckets": int(buckets.shape[0]),
        "dim": int(inp.shape[1]),
    }


def transfer(model) -> dict:
    from sentvec.evaluation.transfer import evaluate_transfer
    from sentvec.sent2vec.preprocessing import Preprocessing

    prep = Preprocessing(lowercase=True, tokenizer="moses").prepare
    res = {}
    for task in TASKS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zero vectors are counted in the result
            r = evaluate_transfer(model, task, preprocess=prep)
        res[task] = r.to_dict()
        print(
            f"{task}: {r.accuracy:.2f}" + ("" if r.f1 is None else f" / {r.f1:.2f}"),
            f"({r.wall_seconds:.0f} s)",
            flush=True,
        )
    return res


def run(tau: float, seed: int, out_dir: Path) -> Path:
    from sent2vec_quality import FLAGS, evaluate
    from sent2vec_train import corpus_path

    from sentvec.sent2vec.trainer import Sent2VecTrainer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = corpus_path(None)
    load0 = os.getloadavg()
    tr = Sent2VecTrainer(**FLAGS, update="target", l1=tau, seed=seed)
    t0 = time.perf_counter()
    model = tr.fit(path)
    wall = time.perf_counter() - t0
    print(f"trained tau={tau} seed={seed} in {wall:.0f} s (load {load0})", flush=True)
    rec = {
        "tau": tau,
        "seed": seed,
        "flags": dict(FLAGS, update="target", l1=tau),
        "train_wall_s": wall,
        "loadavg_at_start": load0,
        "train_report": tr.report_.to_dict(),
        "sparsity": sparsity(model),
    }
    print(json.dumps(rec["sparsity"]), flush=True)
    rec["sts"] = evaluate(model)
    print(json.dumps(rec["sts"]), flush=True)
    t1 = time.perf_counter()
    rec["transfer"] = transfer(model)
    rec["transfer_wall_s"] = time.perf_counter() - t1
    rec["loadavg_at_end"] = os.getloadavg()
    from sentvec._io import atomic_write_json

    dest = out_dir / f"sent2vec-wiki1m-l1-tau{tau:g}-seed{seed}.json"
    atomic_write_json(dest, rec)
    print(f"wrote {dest}", flush=True)
    return dest


def summary(out_dir: Path) -> str:
    import numpy as np

    rows = []
    for p in sorted(out_dir.glob("sent2vec-wiki1m-l1-tau*-seed*.json")):
        r = json.loads(p.read_text())
        t = r["transfer"]
        accs = [t[k]["accuracy"] for k in TASKS]
        rows.append(
            (
                r["tau"],
                r["seed"],
                r["sts"]["STS14"]["mean"],
                r["sts"]["SICK-R test"],
                t["MRPC"]["f1"],
                accs,
                float(np.mean(accs)),
                r["sparsity"],
            )
        )
    head = (
        "| τ | seed | STS14 mean | SICK-R test | MSRP (acc / F1) | MR | CR | SUBJ | MPQA | "
        "TREC | Avg | zeros: input words / buckets / output |"
    )
    lines = [head, "|---" * 12 + "|"]
    for tau, seed, sts, sick, f1, accs, avg, sp in sorted(rows):
        lines.append(
            f"| {tau:g} | {seed} | {sts[0]:.2f} / {sts[1]:.2f} | {sick[0]:.2f} / {sick[1]:.2f} | "
            f"{accs[0]:.1f} / {f1:.1f} | "
            + " | ".join(f"{a:.1f}" for a in accs[1:])
            + f" | {avg:.2f} | {100 * sp['input_words_zero_share']:.1f} % / "
            f"{100 * sp['input_buckets_zero_share']:.1f} % / {100 * sp['output_zero_share']:.1f} % |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tau", type=float, default=0.0005)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    ap.add_argument("--summary", action="store_true", help="print the table of the saved runs")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary(args.out), end="")
    else:
        run(args.tau, args.seed, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
