"""``sentvec eval-transfer``: SentEval-style transfer tasks (Sent2Vec paper Table 1 columns).

Logistic regression on frozen sentence vectors: MR, CR, SUBJ, MPQA by 10-fold CV, TREC and MRPC
train/test, SST2 train/dev/test; C chosen from 2^-2..2^4 by inner 5-fold CV (SST2: dev).
--protocol senteval reproduces SentEval's scikit-learn path instead (C in 2^-2..2^3, TREC/MRPC
2^-1..2^5; inner folds = --kfold; lbfgs tol 1e-4, 100 iterations, cold fits; float32 features;
accuracies rounded to 2 decimals per fold). Prints a Markdown table in the paper's column order:
MRPC (acc / F1), MR, CR, SUBJ, MPQA, TREC, Avg (of those six, MRPC by accuracy), SST2.

Examples::

    sentvec eval-transfer --model minilm --json minilm-transfer.json
    sentvec eval-transfer --model runs/sent2vec-wiki1m-sentence --preprocess moses-lower
    sentvec eval-transfer --model minilm --tasks MR,CR,SST2 --n-jobs 2
    sentvec eval-transfer --model minilm --protocol senteval
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from sentvec.cli._args import (
    MODEL_HELP,
    add_device_options,
    device_options,
    int_at_least,
    positive_int,
)

_DEFAULT_TASKS = ("MRPC", "MR", "CR", "SUBJ", "MPQA", "TREC")
_ALIASES = {"msrp": "MRPC", "sst": "SST2", "sst-2": "SST2"}
_PREPROCESS_HELP = {
    "none": "sentences as the task files hold them (whitespace-normalised)",
    "lower": "lower-cased",
    "moses-lower": "Moses-tokenised (sacremoses, en) then lower-cased: the reference corpus "
    "recipe, for Sent2Vec models trained on it without a preprocessing record",
}


def _tasks(text: str) -> list[str]:
    from sentvec.evaluation.transfer_data import TRANSFER_TASKS

    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name = _ALIASES.get(part.lower(), part.upper())
        if name not in TRANSFER_TASKS:
            raise argparse.ArgumentTypeError(
                f"unknown task {part!r}; expected some of {list(TRANSFER_TASKS)} (MSRP = MRPC)"
            )
        if name not in out:
            out.append(name)
    if not out:
        raise argparse.ArgumentTypeError("expected at least one task name")
    return out


def register(subparsers: Any) -> None:
    """Add the ``eval-transfer`` sub-command."""
    p = subparsers.add_parser(
        "eval-transfer",
        help="transfer tasks (MRPC MR CR SUBJ MPQA TREC SST2) with logistic regression",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    p.add_argument(
        "--tasks",
        type=_tasks,
        default=list(_DEFAULT_TASKS),
        metavar="T1,T2,...",
        help="tasks among MRPC (=MSRP), MR, CR, SUBJ, MPQA, TREC, SST2 (default: the paper's six)",
    )
    p.add_argument(
        "--preprocess",
        choices=tuple(_PREPROCESS_HELP),
        default="none",
        help="; ".join(f"{k} = {v}" for k, v in _PREPROCESS_HELP.items()) + " (default none)",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="evaluation data root holding downstream/ (default: $SENTVEC_DATA or the "
        "packaged copy)",
    )
    p.add_argument(
        "--protocol",
        choices=("sentvec", "senteval"),
        default="sentvec",
        help="classifier protocol: sentvec (default; settings below) or senteval "
        "(SentEval's scikit-learn path exactly; fixes --inner-kfold)",
    )
    p.add_argument(
        "--seed",
        type=int_at_least(0, 2**32 - 1),
        default=1111,
        help="fold shuffling seed, 0 to 4294967295 (default 1111, SentEval's)",
    )
    p.add_argument(
        "--kfold", type=int_at_least(2), default=10, help="outer folds, >= 2 (default 10)"
    )
    p.add_argument(
        "--inner-kfold",
        type=int_at_least(2),
        default=None,
        help="inner folds choosing C, >= 2 (default 5; senteval: = --kfold)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="passed to the encoder (default: the encoder's own)",
    )
    p.add_argument(
        "--n-jobs",
        type=positive_int,
        default=1,
        help="threads for independent logistic-regression fits (default 1)",
    )
    add_device_options(p)
    p.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    p.set_defaults(func=run)


def _preprocess_fn(name: str) -> tuple[Any, bool]:
    if name == "moses-lower":
        from sentvec.sent2vec.preprocessing import Preprocessing

        # prepare_batch: each split goes through the compiled Moses tokenizer in one call
        return Preprocessing(lowercase=True, tokenizer="moses"), False
    return None, name == "lower"


def run(args: argparse.Namespace) -> int:
    """Evaluate each task, print the table; return 0."""
    from sentvec._io import atomic_write_json
    from sentvec.encoders import load_encoder
    from sentvec.encoders.base import describe_encoder
    from sentvec.evaluation.transfer import evaluate_transfer, transfer_table_markdown

    if args.protocol == "senteval" and args.inner_kfold is not None:
        raise ValueError(
            "--inner-kfold cannot be combined with --protocol senteval: SentEval's "
            "inner folds are --kfold"
        )
    t_start = time.perf_counter()
    from sentvec._path_checks import check_outputs_not_inputs

    check_outputs_not_inputs({"--json": args.json}, {"--model": args.model})
    if args.json:  # before the work: a bad path must not fail after it
        from sentvec._path_checks import check_output_path

        check_output_path(args.json, what="--json")
    encoder = load_encoder(args.model, **device_options(args))
    desc = describe_encoder(encoder)
    preprocess, lowercase = _preprocess_fn(args.preprocess)
    results = []
    for task in args.tasks:
        r = evaluate_transfer(
            encoder,
            task,
            protocol=args.protocol,
            data_dir=args.data,
            seed=args.seed,
            kfold=args.kfold,
            inner_kfold=args.inner_kfold,
            batch_size=args.batch_size,
            preprocess=preprocess,
            lowercase=lowercase,
            n_jobs=args.n_jobs,
        )
        f1 = "" if r.f1 is None else f" F1 {r.f1:.2f}"
        print(
            f"{task}: acc {r.accuracy:.2f}{f1} (n={r.n_samples}, C={_cs(r.c)}, "
            f"encode {r.encode_seconds:.1f} s, total {r.wall_seconds:.1f} s wall, "
            f"{r.cpu_seconds:.1f} s CPU)",
            file=sys.stderr,
        )
        results.append(r)
    wall = time.perf_counter() - t_start
    cpu = time.process_time()
    name = str(desc.get("model") or desc.get("source") or args.model)
    table = transfer_table_markdown(results, name=name)
    print(
        f"model: {args.model} ({desc.get('encoder', '?')}); text: {args.preprocess} = "
        f"{_PREPROCESS_HELP[args.preprocess]}"
    )
    print(f"protocol: {results[0].protocol if len(results) == 1 else _protocol_summary(args)}")
    print()
    print(table, end="")
    print(f"\nwall time: {wall:.1f} s (CPU time of this process: {cpu:.1f} s)")
    if args.json:
        atomic_write_json(
            args.json,
            {
                "format": "sentvec-transfer-results",
                "version": 1,
                "model_arg": args.model,
                "model": desc,
                "preprocess": args.preprocess,
                "protocol": args.protocol,
                "wall_seconds": wall,
                "cpu_seconds": cpu,
                "table_markdown": table,
                "results": [r.to_dict() for r in results],
            },
        )
    return 0


def _cs(cs: tuple[float, ...]) -> str:
    vals = sorted(set(cs))
    return ",".join(f"{c:g}" for c in vals)


def _protocol_summary(args: argparse.Namespace) -> str:
    if args.protocol == "senteval":
        return (
            f"SentEval scikit-learn path: L2 logistic regression (lbfgs, tol 1e-4, max_iter "
            f"100, cold fits) on raw float32 vectors; MR CR SUBJ MPQA: {args.kfold}-fold "
            f"stratified CV (seed {args.seed}), C in 2^-2..2^3 by inner {args.kfold}-fold CV; "
            f"TREC, MRPC: train/test, C in 2^-1..2^5 by {args.kfold}-fold CV on train; MRPC "
            "features [|u-v|, u*v]; SST2: C in 2^-2..2^3 by dev accuracy; accuracies rounded "
            "to 2 decimals per fold"
        )
    inner = 5 if args.inner_kfold is None else args.inner_kfold
    return (
        f"L2 logistic regression (lbfgs) on raw vectors, C in 2^-2..2^4 by inner "
        f"{inner}-fold stratified CV; MR CR SUBJ MPQA: {args.kfold}-fold stratified "
        f"CV (seed {args.seed}); TREC, MRPC: train/test; MRPC features [|u-v|, u*v]; SST2: C "
        "by dev accuracy"
    )
