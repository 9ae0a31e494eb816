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

from sentvec.cli._args import (
    add_evaluation_options,
    add_transformer_options,
    check_output_path,
    check_outputs_not_inputs,
    device_options,
    layer_list,
    load_transformer,
    positive_int,
    positive_int_list,
    progress,
    slug,
    sts_tasks_for,
    vector_cache,
)

DEFAULT_KS = "8,16,32,64,128,256"
DEFAULT_CORPUS_SIZE = 10_000


def run_whiten_sweep(args: argparse.Namespace) -> int:
    """``sentvec whiten-sweep``: STS average versus whitening dimension k."""
    from sentvec._data import corpus_sample_path
    from sentvec._io import atomic_write_json, atomic_write_text, read_text_lines
    from sentvec._validation import check_path_exists, check_positive_int
    from sentvec.cache import pooled_layer_vectors
    from sentvec.evaluation import (
        WhiteningSweep,
        combine_layers,
        plot_whitening_sweep,
        prepare_corpus,
        unique_sentences,
        whitening_sweep,
    )

    t0 = time.perf_counter()
    check_outputs_not_inputs({"--out": args.out}, {"--model": args.model, "--corpus": args.corpus})
    out = check_output_path(args.out, what="--out", kind="dir")  # before the work
    path = None
    if not args.no_corpus:
        path = check_path_exists(args.corpus or corpus_sample_path(), what="corpus file")
        size = check_positive_int("corpus_size", args.corpus_size)
    encoder = load_transformer(
        args.model,
        **device_options(args),
        layers=tuple(args.layers),
        pooling=args.pooling,
        max_length=args.max_length,
    )
    tasks = sts_tasks_for(args, encoder)
    variant = tasks[0].variant
    sentences = unique_sentences(tasks)
    cache = vector_cache(args)
    vecs, _, sts_s = pooled_layer_vectors(
        encoder,
        sentences,
        pooling=args.pooling,
        text_variant=variant,
        cache=cache,
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
    )
    layers = tuple(encoder.layer_indices)
    sts_vectors = combine_layers(vecs[args.pooling], layers)
    corpus_vectors, corpus_info, corpus_s = None, {}, 0.0
    if path is not None:
        lines = read_text_lines(path, what="corpus", max_lines=size)
        prep = args.corpus_preprocessing
        if prep == "auto":
            prep = "moses-lower" if variant == "senteval" else "none"
        corpus, n_excluded = prepare_corpus(lines, prep, exclude=sentences)
        if len(corpus) < 2:
            raise ValueError(f"the corpus {str(path)!r} has fewer than 2 usable sentences")
        cvecs, _, corpus_s = pooled_layer_vectors(
            encoder,
            corpus,
            pooling=args.pooling,
            text_variant=f"corpus:{prep}",
            cache=cache,
            batch_size=args.batch_size,
            show_progress_bar=progress(args),
        )
        corpus_vectors = combine_layers(cvecs[args.pooling], layers)
        label = str(path) if args.corpus else f"packaged: {Path(path).name}"
        corpus_info = {
            "path": label,
            "preprocessing": prep,
            "n_read": len(lines),
            "n_used": len(corpus),
            "n_excluded": n_excluded,
        }
    t1 = time.perf_counter()
    d = sts_vectors.shape[1]
    ks = sorted({k for k in args.k if k <= d} | {d})
    skipped = sorted(k for k in args.k if k > d)
    if skipped:
        print(f"note: k={skipped} exceed the dimension d={d} and were skipped", file=sys.stderr)
    points = whitening_sweep(
        sts_vectors,
        tasks,
        sentences,
        ks=ks,
        corpus_vectors=corpus_vectors,
        aggregation=args.aggregation,
    )
    sweep = WhiteningSweep(
        model=args.model,
        layers=layers,
        pooling=args.pooling,
        text_variant=variant,
        aggregation=args.aggregation,
        dim=d,
        corpus=corpus_info,
        points=points,
        timings={
            "sts_vectors_s": sts_s,
            "corpus_vectors_s": corpus_s,
            "scoring_s": time.perf_counter() - t1,
            "total_s": time.perf_counter() - t0,
        },
    )
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
