"""``sentvec layers``: WhiteningBERT Figures 1 and 2 for one model.

All pairs of hidden states and the best combination per size, without and with whitening, from
one forward pass (per-layer vectors cached on disk: ``$SENTVEC_CACHE`` or ``~/.cache/sentvec``;
``--no-cache`` disables), written as JSON, Markdown and two PNG figures. ``--postprocess abtt``
fits all-but-the-top per year in place of the whitening (same cached vectors; files named
``...-abttD-...``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec.cli._args import (
    add_evaluation_options,
    add_postprocess_options,
    add_transformer_options,
    check_postprocess_options,
    device_options,
    int_at_least,
    load_transformer,
    positive_int,
    progress,
    report_warnings,
    slug,
    sts_tasks_for,
    vector_cache,
    year_postprocessor,
)


def _eval_sts_command(
    args: argparse.Namespace, layers: tuple[int, ...], whitening: str, postprocessor: Any = None
) -> str | None:
    """The ``sentvec eval-sts`` command that scores one combination of this ``layers`` run
    exactly (same model, pooling, tasks, data, text variant, aggregation, k, device and
    precision); ``None`` when eval-sts has no equivalent (``--max-length``)."""
    import shlex

    if args.max_length is not None:
        return None
    parts = [
        "sentvec",
        "eval-sts",
        "--model",
        args.model,
        "--pooling",
        args.pooling,
        "--layers",
        ",".join(str(i) for i in layers),
    ]
    if whitening == "year":
        parts += ["--whiten", "year"]
        if postprocessor is not None:
            parts += ["--postprocess", "abtt", "--abtt-components", str(postprocessor.n_components)]
        if args.k is not None:
            parts += ["--n-components", str(args.k)]
    if args.aggregation != "mean":
        parts += ["--aggregation", args.aggregation]
    for flag, value in (
        ("--tasks", ",".join(args.tasks or ())),
        ("--data", args.data),
        ("--variant", args.variant),
        ("--model-backend", args.model_backend),
        ("--device", args.device),
        ("--precision", None if args.precision == "auto" else args.precision),  # auto: default
        ("--cache-dir", args.cache_dir),  # eval-sts reads this run's vectors from there
    ):
        if value:
            parts += [flag, value]
    if args.no_cache:
        parts.append("--no-cache")
    return shlex.join(parts)


def run_layers(args: argparse.Namespace) -> int:
    """``sentvec layers``: Figures 1 and 2 for one model."""
    from sentvec._io import atomic_write_json, atomic_write_text
    from sentvec.evaluation import analyze_layers, plot_pair_heatmap, plot_size_curve

    t0 = time.perf_counter()
    if args.max_combination is not None and args.max_combination < 0:
        raise ValueError(f"max_combination={args.max_combination} is invalid; expected >= 0")
    check_postprocess_options(args, "--k")
    check_outputs_not_inputs({"--out": args.out}, {"--model": args.model})
    out = check_output_path(args.out, what="--out", kind="dir")  # before the work
    encoder = load_transformer(args.model, max_length=args.max_length, **device_options(args))
    postprocessor = year_postprocessor(args, encoder)
    tasks = sts_tasks_for(args, encoder)
    cache = vector_cache(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        analysis = analyze_layers(
            encoder,
            tasks,
            pooling=args.pooling,
            max_layers=args.max_combination or None,
            include_embedding_layer=not args.no_embedding_layer,
            exhaustive_limit=args.exhaustive_limit,
            beam_width=args.beam_width,
            search=args.max_combination != 0,
            aggregation=args.aggregation,
            n_components=args.k,
            postprocessor=postprocessor,
            cache=cache,
            batch_size=args.batch_size,
            show_progress_bar=progress(args),
            model_name=args.model,
            background_save=True,
        )  # a new cache entry is written during the files and plots
    report_warnings(caught)
    stem = f"{slug(args.model)}-{args.pooling}" + (
        "" if postprocessor is None else f"-abtt{postprocessor.n_components}"
    )
    data = analysis.to_dict()
    data["timings"]["total_s"] = time.perf_counter() - t0
    atomic_write_json(out / f"{stem}-layers.json", data)
    atomic_write_text(
        out / f"{stem}-layers.md",
        analysis.to_markdown() + f"- total command wall time: {data['timings']['total_s']:.1f} s\n",
    )
    plot_pair_heatmap(analysis, out / f"{stem}-fig1-pairs.png")
    if analysis.by_size:
        plot_size_curve(analysis, out / f"{stem}-fig2-sizes.png")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.finish_writes()  # a failed write is a CacheWarning: the results stand
    report_warnings(caught)
    for w in analysis.whitening_modes:
        best = analysis.best_pair(w)
        again = _eval_sts_command(args, best.layers, w, postprocessor)
        print(
            f"{analysis.mode_label(w)}: best single layer or pair: {best.label} = {best.average:.2f}"
            + (f" (the same score: {again})" if again else "")
        )
        for s in analysis.curve(w):
            print(
                f"  {s.n_layers} layers: {s.best.label} = {s.best.average:.2f} "
                f"[{s.method}, {s.n_evaluated}/{s.n_possible}]"
            )
    t = analysis.timings
    print(
        f"vectors {t.forward_s:.1f} s ({'cache hit' if t.cache_hit else 'forward pass'}), "
        f"pairs {t.pairs_s:.1f} s, size search {t.search_s:.1f} s, "
        f"total {data['timings']['total_s']:.1f} s; wrote {out}/{stem}-*"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add the ``layers`` sub-command."""
    p = subparsers.add_parser(
        "layers",
        help="WhiteningBERT Figures 1-2: layer combinations",
        description="Score every pair of hidden states (Figure 1 heat map) and the best "
        "combination of each size (Figure 2) on the STS tasks, with and without "
        "per-year whitening (or all-but-the-top: --postprocess abtt), from one "
        "forward pass; writes JSON, Markdown and PNGs.",
    )
    add_transformer_options(p)
    p.add_argument(
        "--max-combination",
        type=int_at_least(0),
        default=None,
        help="largest number of combined hidden states in the Figure-2 search "
        "(default: all; 0 = pairs only)",
    )
    p.add_argument(
        "--exhaustive-limit",
        type=positive_int,
        default=128,
        help="sizes with at most this many combinations are searched exhaustively; "
        "larger ones by beam search",
    )
    p.add_argument(
        "--beam-width",
        type=positive_int,
        default=8,
        help="combinations kept per size by the beam search (default 8)",
    )
    p.add_argument(
        "--no-embedding-layer",
        action="store_true",
        help="exclude hidden state 0 from the Figure-2 candidates",
    )
    p.add_argument(
        "--k", type=positive_int, default=None, help="whitening dimension (default: all)"
    )
    add_postprocess_options(p)
    add_evaluation_options(p)
    p.set_defaults(func=run_layers)
