"""``sentvec report``: one Markdown report of Table 1-style rows for every available encoder.

CLS / AVG x last / L1 / L1+last, each without and with whitening, under the three STS
aggregations (:mod:`sentvec.evaluation.report` computes each encoder's rows,
:mod:`sentvec.evaluation.table1` renders the page). With ``--post-processing``: the table of
none / whitening / whitening-k / ABTT / SIF / uSIF.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec.cli._args import (
    add_evaluation_options,
    device_options,
    display_name,
    load_transformer,
    positive_int,
    progress,
    str_list,
    sts_tasks_for,
    vector_cache,
)


def _post_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {"whitening_k": args.whitening_k, "abtt_components": args.abtt_components}


def _report_transformer(
    name: str, args: argparse.Namespace, cache: Any, post: list, notes: list
) -> tuple[Any, dict]:
    from sentvec.evaluation import transformer_report

    encoder = load_transformer(name, **device_options(args))
    block = transformer_report(
        encoder,
        display_name(name),
        sts_tasks_for(args, encoder),
        cache=cache,
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
        post_processing=args.post_processing,
        token_corpus=args.token_corpus,
        token_corpus_lines=args.token_corpus_lines,
        **_post_kwargs(args),
    )
    post += block.postprocessing
    notes += block.notes
    return block.rows, block.info


def _report_sent2vec(
    encoder: Any,
    path: str,
    args: argparse.Namespace,
    post: list,
    notes: list,
    *,
    kind: str = "Sent2Vec",
) -> tuple[Any, dict]:
    """Rows of an encoder without pooling or layers: a Sent2Vec model, or (``kind``
    ``"Static"``) a static embedding model."""
    from sentvec.evaluation import sentence_encoder_report

    block = sentence_encoder_report(
        encoder,
        f"{kind} ({Path(path).name})",
        sts_tasks_for(args, encoder),
        post_processing=args.post_processing,
        **_post_kwargs(args),
    )
    post += block.postprocessing
    notes += block.notes
    return block.rows, block.info


def _load_static(name: str) -> Any:
    """A static embedding model (Model2Vec / StaticEmbedding directory, WordLlama alias)."""
    from sentvec.encoders import StaticEncoder, load_encoder

    encoder = load_encoder(name)
    if not isinstance(encoder, StaticEncoder):
        raise ValueError(f"{name!r} is not a static embedding model")
    return encoder


def run_report(args: argparse.Namespace) -> int:
    """``sentvec report``: Table 1-style rows for every available encoder."""
    from sentvec._io import atomic_write_text
    from sentvec._validation import check_path_exists
    from sentvec.evaluation import render_report

    # inputs and output first: a bad path must not cost the transformer forward passes
    check_outputs_not_inputs(
        {"--out": args.out},
        {
            "--sent2vec": args.sent2vec,
            "--token-corpus": args.token_corpus,
            **{f"--models {m}": m for m in args.models},
        },
    )
    check_output_path(args.out, what="--out")
    sent2vec = None
    if args.sent2vec:
        from sentvec.encoders import load_encoder

        sent2vec = load_encoder(check_path_exists(args.sent2vec, what="Sent2Vec model"))
    cache = vector_cache(args)
    rows: list[Any] = []
    infos: list[dict] = []
    skipped: list[tuple[str, str]] = []
    post: list[Any] = []
    notes: list[str] = []
    for name in args.models:
        try:
            r, info = _report_transformer(name, args, cache, post, notes)
        except (FileNotFoundError, OSError, ImportError) as exc:
            skipped.append((name, str(exc)))
            print(f"skipped {name}: {exc}", file=sys.stderr)
            continue
        rows += r
        infos.append(info)
    if sent2vec is not None:
        r, info = _report_sent2vec(sent2vec, args.sent2vec, args, post, notes)
        rows += r
        infos.append(info)
    for name in args.static or []:
        try:
            static = _load_static(name)
        except (FileNotFoundError, OSError, ImportError, ValueError) as exc:
            skipped.append((name, str(exc)))
            print(f"skipped {name}: {exc}", file=sys.stderr)
            continue
        r, info = _report_sent2vec(static, name, args, post, notes, kind="Static")
        rows += r
        infos.append(info)
    if not rows:
        raise ValueError(
            "no encoder could be evaluated: " + "; ".join(f"{n}: {w}" for n, w in skipped)
        )
    command = f"sentvec report --models {','.join(args.models)}"
    if args.sent2vec:
        command += f" --sent2vec {args.sent2vec}"
    if args.static:
        command += f" --static {','.join(args.static)}"
    if args.tasks:
        command += f" --tasks {','.join(args.tasks)}"
    if args.post_processing:
        command += " --post-processing"
        if args.token_corpus:
            command += f" --token-corpus {args.token_corpus}"
        if args.token_corpus_lines:
            command += f" --token-corpus-lines {args.token_corpus_lines}"
    text = render_report(
        rows, infos, skipped, command=command, postprocessing=post, postprocessing_notes=notes
    )
    atomic_write_text(args.out, text)
    print(f"wrote {args.out} ({len(rows)} rows, {len(skipped)} skipped)")
    return 0


def register(subparsers: Any) -> None:
    """Add the ``report`` sub-command."""
    r = subparsers.add_parser(
        "report",
        help="Markdown report of Table 1-style rows",
        description="One Markdown report with Table 1-style rows (CLS / AVG / L1 / L1+Llast, "
        "with and without whitening) for every available encoder, and the three "
        "STS aggregations side by side.",
    )
    r.add_argument(
        "--models",
        type=str_list,
        default=["minilm", "mpnet"],
        help="comma-separated transformer models (default minilm,mpnet)",
    )
    r.add_argument("--sent2vec", default=None, help="a Sent2Vec model (.bin or directory)")
    r.add_argument(
        "--static",
        type=str_list,
        default=None,
        metavar="M1,M2,...",
        help="static embedding models, one row each: Model2Vec or StaticEmbedding "
        "directories, wordllama, wordllama-128, wordllama-64",
    )
    r.add_argument(
        "--out",
        default="docs/REPRODUCTION.md",
        help="Markdown report (default docs/REPRODUCTION.md)",
    )
    r.add_argument(
        "--post-processing",
        action="store_true",
        help="add the post-processing table: none / whitening / whitening-k / ABTT "
        "/ SIF / uSIF, each fitted per STS year",
    )
    r.add_argument(
        "--token-corpus",
        default=None,
        help="text file (.xz/.gz ok) whose token counts give the transformers' SIF / "
        "uSIF word probabilities",
    )
    r.add_argument(
        "--token-corpus-lines",
        type=positive_int,
        default=None,
        help="count only the first N lines of --token-corpus",
    )
    r.add_argument(
        "--whitening-k",
        type=positive_int,
        default=None,
        help="k of the whitening-k rows (default d // 3)",
    )
    r.add_argument(
        "--abtt-components",
        type=positive_int,
        default=None,
        help="D of the ABTT rows (default max(1, round(d / 100)))",
    )
    add_evaluation_options(r)
    r.set_defaults(func=run_report)
