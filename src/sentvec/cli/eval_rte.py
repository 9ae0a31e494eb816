"""``sentvec eval-rte``: zero-shot RTE by a cosine threshold (WhiteningBERT Table 3).

Encodes both sentences of the 277 GLUE RTE development pairs, whitens them (by default fitted on
both sides of the pairs, the paper's protocol), predicts entailment where cosine > --threshold
(0.5, the paper's) and prints the accuracy beside the majority-class baseline (146/277 = 52.7),
the share of pairs predicted entailment, the ROC AUC of the cosine, the best threshold on these
pairs (an upper bound) and the accuracy at every threshold from -1 to 1.

Examples::

    sentvec eval-rte
    sentvec eval-rte --model minilm --layers=-1 --whiten none --json rte.json
    sentvec eval-rte --model tiny-bigram.bin --threshold 0.3 --plot rte.png
    sentvec eval-rte --whiten corpus.txt --n-components 128
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec.cli._args import (
    MODEL_HELP,
    add_configuration_options,
    add_device_options,
    add_progress_option,
    device_options,
    float_range,
    plain_text,
    positive_int,
    progress,
    read_corpus_file,
)

_VARIANT_HELP = {
    "senteval": "Moses-tokenised and lower-cased by sentvec (sacremoses), as the SentEval STS "
    "files and the reference Sent2Vec corpus",
    "raw": "as the file holds it",
}


def register(subparsers: Any) -> None:
    """Add the ``eval-rte`` sub-command."""
    p = subparsers.add_parser(
        "eval-rte",
        help="zero-shot RTE by a cosine threshold (WhiteningBERT Table 3)",
        description=plain_text(__doc__.split("\n\n")[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    add_configuration_options(
        p,
        pooling_help="token pooling of a transformer (default: the model's, mean)",
        layers_default="default: the model's, 1,-1 = the paper's L1+L_last",
        whiten_default="task",
        whiten_metavar="{none,task,FILE,DIR}",
        whiten_help="task (default, the paper's protocol: fitted on both sentences of the 277 "
        "pairs); none; a text file of sentences (one per line) encoded with the same "
        "encoder; or a saved Whitening / post-processor / pipeline directory",
        n_components_help="dimensions kept by a whitening fitted here (task or FILE; default all)",
    )
    p.add_argument(
        "--threshold",
        type=float_range(-1.0, 1.0),
        default=0.5,
        help="predict entailment where cosine > THRESHOLD (default 0.5, the paper's)",
    )
    p.add_argument(
        "--variant",
        choices=tuple(_VARIANT_HELP),
        default=None,
        help="text fed to the model: "
        + "; ".join(f"{k} = {v}" for k, v in _VARIANT_HELP.items())
        + " (default: the encoder's preference, as eval-sts: senteval)",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="evaluation data root holding downstream/RTE/dev.tsv (default: $SENTVEC_DATA "
        "or the packaged copy)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="sentences per forward pass (default: the encoder's, 32)",
    )
    add_device_options(p)
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the result as JSON")
    p.add_argument(
        "--plot", default=None, metavar="PNG", help="also plot accuracy against the threshold"
    )
    add_progress_option(p)
    p.set_defaults(func=run)


def _resolve_whitening(args: argparse.Namespace) -> tuple[Any, str]:
    """--whiten -> (value for evaluate_rte, what it is in words)."""
    w = args.whiten
    if w in ("none", "task"):
        if w == "none" and args.n_components is not None:
            raise ValueError("--n-components needs --whiten task or a corpus FILE")
        return w, w
    path = Path(w).expanduser()
    if path.is_dir():
        from sentvec.encoders import load_whitening

        if args.n_components is not None:
            raise ValueError("--n-components cannot change a saved Whitening; it keeps its own k")
        fitted = load_whitening(path)
        return fitted, f"saved {type(fitted).__name__} {str(path)!r}"
    if path.is_file():
        corpus, blank = read_corpus_file(path)
        return corpus, (
            f"corpus file {str(path)!r} ({len(corpus)} lines, {blank} blank skipped), "
            "encoded as given"
        )
    raise FileNotFoundError(
        f"--whiten {w!r} is not 'none', 'task', an existing text file or a saved Whitening "
        "(or pipeline) directory"
    )


def _check_outputs(args: argparse.Namespace) -> None:
    """Output paths writable, distinct, and none of them the --whiten input (before any work)."""
    outs = {name: p for name, p in (("--json", args.json), ("--plot", args.plot)) if p}
    for name, p in outs.items():
        check_output_path(p, what=name)
    real = {name: os.path.realpath(p) for name, p in outs.items()}
    if len(set(real.values())) < len(real):
        raise ValueError("--json and --plot name the same file")
    whiten = None if args.whiten in ("none", "task") else args.whiten
    check_outputs_not_inputs(outs, {"--whiten": whiten, "--model": args.model, "--data": args.data})


def run(args: argparse.Namespace) -> int:
    """Entry point of ``sentvec eval-rte``; returns the exit code."""
    from sentvec.encoders import check_whitening_fits, load_encoder
    from sentvec.evaluation import evaluate_rte, load_rte, rte_threshold_table

    t_start = time.perf_counter()
    _check_outputs(args)
    whitening, how = _resolve_whitening(args)
    data = load_rte(data_dir=args.data)
    encoder = load_encoder(
        args.model, pooling=args.pooling, layers=args.layers, **device_options(args)
    )
    if hasattr(whitening, "transform"):  # its width is known before encoding
        check_whitening_fits(encoder, whitening, what=f"--whiten {args.whiten!r}")
    t_load = time.perf_counter() - t_start
    t0 = time.perf_counter()
    result = evaluate_rte(
        encoder,
        data,
        whitening=whitening,
        n_components=args.n_components,
        threshold=args.threshold,
        variant=args.variant,
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
    )
    t_eval = time.perf_counter() - t0
    r, meta = result, result.metadata
    model = meta.get("model") or meta.get("source") or meta.get("encoder", args.model)
    idx = meta.get("layer_indices") or meta.get("layers")
    config = ", ".join(
        ([f"{meta['pooling']} pooling"] if meta.get("pooling") else [])
        + (["hidden states " + "+".join(str(i) for i in idx)] if idx else [])
    )
    print(
        f"RTE dev (GLUE, WhiteningBERT Table 3 protocol): {r.n_pairs} pairs, "
        f"{r.n_entailment} entailment"
    )
    print(f"model: {model}" + (f" ({config})" if config else ""))
    variant = meta["text_variant"]
    print(f"text: {variant} = {_VARIANT_HELP.get(variant, variant)}")
    w = r.whitening
    print(
        f"whitening: {how}"
        + (f"; fitted on {w.fit_corpus} ({w.fit_size} rows)" if w.mode == "task" else "")
        + (f"; k={w.n_components}" if w.n_components else "")
    )
    print(f"rule: entailment where cosine > {r.threshold:g}")
    print()
    print(
        f"accuracy: {r.accuracy:.1f} ({r.n_correct}/{r.n_pairs} right); predicted "
        f"entailment: {r.predicted_entailment:.1f} % of the pairs"
    )
    print(f"majority class ({r.majority_label} everywhere): {r.majority_accuracy:.1f}")
    print(
        f"cosine: mean {r.mean_cosine_entailment:.3f} (entailment) vs "
        f"{r.mean_cosine_not_entailment:.3f} (not); ROC AUC {r.auc:.1f}"
    )
    print(
        f"best threshold on these pairs: {r.best_threshold:+.3f} -> {r.best_accuracy:.1f} "
        "(chosen on the test pairs: an upper bound, not a zero-shot score)"
    )
    if r.n_zero_cosine_pairs:
        print(f"zero vectors: {r.n_zero_vectors}; {r.n_zero_cosine_pairs} pair(s) scored cosine 0")
    print()
    print(rte_threshold_table(r, markdown=args.markdown), end="")
    print()
    wall = time.perf_counter() - t_start
    print(f"time: load {t_load:.1f} s; encode + score {t_eval:.1f} s; wall {wall:.1f} s")
    if args.plot:
        from sentvec.evaluation import plot_rte_thresholds

        plot_rte_thresholds(r, args.plot)
        print(f"wrote {args.plot}")
    if args.json:
        from sentvec._io import atomic_write_json

        atomic_write_json(
            args.json,
            {
                "command": "eval-rte",
                "config": {
                    "model": args.model,
                    "pooling": meta.get("pooling"),  # as used (the model's own if not given)
                    "layers": meta.get("layers"),
                    "layer_indices": meta.get("layer_indices"),
                    "whiten": args.whiten,
                    "whitening_source": how,
                    "n_components": args.n_components,
                    "threshold": args.threshold,
                    "variant": variant,
                    "data": meta.get("data"),
                },
                **r.to_dict(),
                "timing_s": {"load": t_load, "encode_and_score": t_eval, "wall": wall},
            },
        )
        print(f"wrote {args.json}")
    return 0
