"""``sentvec whiten-sweep``: STS average versus the whitening dimension k.

The whitening is fitted per STS year (the paper's protocol) and on an outside corpus (default:
the packaged Wikipedia sample); writes JSON, Markdown and a PNG.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec.cli._args import (
    add_evaluation_options,
    add_transformer_options,
    device_options,
    layer_list,
    load_transformer,
    positive_int,
    positive_int_list,
    progress,
    slug,
    vector_cache,
)

DEFAULT_KS = "8,16,32,64,128,256"
DEFAULT_CORPUS_SIZE = 10_000


def run_whiten_sweep(args: argparse.Namespace) -> int:
    """``sentvec whiten-sweep``: STS average versus whitening dimension k."""
    import dataclasses

    from sentvec._data import corpus_sample_path
    from sentvec._io import atomic_write_json, atomic_write_text
    from sentvec._validation import check_path_exists, check_positive_int
    from sentvec.encoders import output_dimension
    from sentvec.evaluation import evaluate_whitening_sweep, plot_whitening_sweep

    t0 = time.perf_counter()
    check_outputs_not_inputs({"--out": args.out}, {"--model": args.model, "--corpus": args.corpus})
    out = check_output_path(args.out, what="--out", kind="dir")  # before the work
    path = None
    if not args.no_corpus:
        path = check_path_exists(args.corpus or corpus_sample_path(), what="corpus file")
        check_positive_int("corpus_size", args.corpus_size)
    encoder = load_transformer(
        args.model,
        **device_options(args),
        layers=tuple(args.layers),
        pooling=args.pooling,
        max_length=args.max_length,
    )
    d = output_dimension(encoder)
    ks: list[int | None] = [*args.k, None]  # None: d, always swept
    skipped: list[int] = []
    if d is not None:  # before encoding: a k above d is left out and said so
        ks = sorted({k for k in args.k if k <= d} | {d})
        skipped = sorted(k for k in args.k if k > d)
    if skipped:
        print(f"note: k={skipped} exceed the dimension d={d} and were skipped", file=sys.stderr)
    sweep = evaluate_whitening_sweep(
        encoder,
        ks,
        args.tasks,
        corpus=path,
        corpus_size=args.corpus_size,
        corpus_preprocessing=args.corpus_preprocessing,
        corpus_label=None if args.corpus else f"packaged: {Path(str(path)).name}",
        aggregation=args.aggregation,
        cache=vector_cache(args),
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
        data_dir=args.data,
        variant=args.variant,
        model=args.model,
    )
    timings = {**sweep.timings, "total_s": time.perf_counter() - t0}  # the load included
    sweep = dataclasses.replace(sweep, timings=timings)
    stem = f"{slug(args.model)}-{args.pooling}"
    atomic_write_json(out / f"{stem}-whiten-sweep.json", sweep.to_dict())
    atomic_write_text(out / f"{stem}-whiten-sweep.md", sweep.to_markdown())
    plot_whitening_sweep(sweep, out / f"{stem}-whiten-sweep.png")
    print(sweep.to_markdown())
    return 0


def register(subparsers: Any) -> None:
    """Add the ``whiten-sweep`` sub-command."""
    s = subparsers.add_parser(
        "whiten-sweep",
        help="STS average versus whitening dimension k",
        description="STS average against the number of kept whitening dimensions k, with the "
        "whitening fitted per year and on an outside corpus; writes JSON, "
        "Markdown and a PNG.",
    )
    add_transformer_options(s)
    s.add_argument(
        "--layers", type=layer_list, default=(1, -1), help="hidden states to combine (default 1,-1)"
    )
    s.add_argument(
        "--k",
        type=positive_int_list,
        default=positive_int_list(DEFAULT_KS),
        help=f"dimensions to keep (default {DEFAULT_KS}; d is always added)",
    )
    s.add_argument(
        "--corpus",
        default=None,
        help="outside corpus, one sentence per line (default: the packaged "
        "10,000-sentence Wikipedia sample)",
    )
    s.add_argument(
        "--corpus-size",
        type=positive_int,
        default=DEFAULT_CORPUS_SIZE,
        help=f"first N lines of the corpus (default {DEFAULT_CORPUS_SIZE})",
    )
    s.add_argument(
        "--corpus-preprocessing",
        default="auto",
        choices=("auto", "none", "lower", "moses-lower"),
        help="auto: moses-lower for the senteval STS text, none for raw",
    )
    s.add_argument("--no-corpus", action="store_true", help="per-year fit only")
    add_evaluation_options(s)
    s.set_defaults(func=run_whiten_sweep)
