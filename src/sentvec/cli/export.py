"""``sentvec export``: write a pipeline as a sentence-transformers model directory.

The directory loads with plain ``SentenceTransformer(DIR)`` (no sentvec needed): Transformer,
a WeightedLayerPooling when layers are averaged, Pooling, and the post-processing (x - mu) A
(whitening, or a saved all-but-the-top / common-component removal) as two Dense layers: the
centring (weight I, bias -mu), then A^T. --serving-compatible keeps to what
text-embeddings-inference reads (last layer, cls or mean pooling, one 2_Dense; the centring is
folded into the final LayerNorm bias) and refuses anything else.

--format model2vec writes a Sent2Vec unigram model or a static model (with a fitted
post-processor folded into its rows) as a Model2Vec directory instead (model2vec's
StaticModel and sentence-transformers' StaticEmbedding load it).

Examples::

    sentvec export --model minilm --layers 1,-1 --pooling mean --whiten corpus.txt --n-components 256 --output minilm-whitened
    sentvec export --model my-pipeline/ --output my-pipeline-st --sts
    sentvec export --model minilm --layers=-1 --whiten corpus.txt --output tei-model --serving-compatible
    sentvec export --model unigram.bin --format model2vec --output unigram-m2v
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sentvec.cli._args import (
    MODEL_HELP,
    add_configuration_options,
    plain_text,
    positive_int,
    read_corpus_file,
    sts_task_list,
)


def register(subparsers: Any) -> None:
    """Add the ``export`` sub-command."""
    p = subparsers.add_parser(
        "export",
        help="write a pipeline as a sentence-transformers directory (optionally TEI-compatible)",
        description=plain_text("\n\n".join(__doc__.split("\n\n")[1:3])),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    add_configuration_options(
        p,
        pooling_help="token pooling (default mean, or the saved encoder's)",
        layers_default="default 1,-1",
        whiten_default=None,
        whiten_metavar="FILE|DIR",
        whiten_help="a text file of sentences (one per line) to fit the whitening on, "
        "encoded with the same encoder; or a saved Whitening, AllButTheTop, "
        "CommonComponentRemoval or pipeline directory (default: a pipeline's "
        "own post-processor, else none)",
        n_components_help="dimensions kept by the whitening fitted on --whiten FILE (default all)",
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="directory to write (new, empty, or an earlier export, replaced whole)",
    )
    p.add_argument(
        "--format",
        choices=("sentence-transformers", "model2vec"),
        default="sentence-transformers",
        help="sentence-transformers (a transformer pipeline) or model2vec (a Sent2Vec "
        "unigram model or a static model)",
    )
    p.add_argument(
        "--pretokenized",
        action="store_true",
        help="--format model2vec of a Sent2Vec model that Moses-tokenizes: export it for "
        "already tokenized text instead of refusing",
    )
    p.add_argument(
        "--serving-compatible",
        action="store_true",
        help="only what text-embeddings-inference reads: last layer alone, cls or "
        "mean pooling, 1_Pooling and 2_Dense; refuse other pipelines",
    )
    p.add_argument(
        "--sts",
        nargs="?",
        const="stsb,sick,sts12,sts13,sts14,sts15,sts16",
        type=sts_task_list,
        default=None,
        metavar="T1,T2,...",
        help="evaluate the exported pipeline on STS (default all seven tasks) and "
        "put the table in the model card",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="STS data root for --sts (default: $SENTVEC_DATA or the packaged copy)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=32,
        help="sentences per forward pass (default 32)",
    )
    p.add_argument(
        "--device", default=None, help="torch device (default: cuda if available, else cpu)"
    )
    p.set_defaults(func=run)


def _whitening(args: argparse.Namespace, encoder: Any) -> tuple[Any, str | None]:
    """The fitted Whitening of --whiten (or None) and how the model card names its corpus."""
    if args.whiten is None:
        if args.n_components is not None:
            raise ValueError("--n-components needs --whiten FILE (a corpus to fit on)")
        return None, None
    path = Path(args.whiten).expanduser()
    if path.is_dir():
        from sentvec import load_whitening

        if args.n_components is not None:
            raise ValueError("--n-components cannot change a saved Whitening; it keeps its own k")
        return load_whitening(path), f"the saved post-processor {path.name!r}"
    if not path.is_file():
        raise FileNotFoundError(
            f"--whiten {args.whiten!r} is neither a text file nor a saved "
            "Whitening or pipeline directory"
        )
    from sentvec import Whitening

    if args.n_components is not None and args.n_components > encoder.hidden_size:
        raise ValueError(
            f"--n-components {args.n_components} is invalid; the encoder's vectors "
            f"have {encoder.hidden_size} dimensions"
        )
    corpus, _ = read_corpus_file(path)
    X = encoder.encode(corpus, batch_size=args.batch_size)
    return Whitening(args.n_components).fit(X), f"{path.name} ({len(corpus)} lines)"


def _run_model2vec(args: argparse.Namespace) -> int:
    """``--format model2vec``: a static table and tokenizer in Model2Vec's layout."""
    from sentvec import Pipeline, load_encoder
    from sentvec.integrations.model2vec import export_model2vec, sent2vec_static_encoder

    if args.serving_compatible or args.sts or args.pooling or args.layers:
        raise ValueError(
            "--serving-compatible, --sts, --pooling and --layers apply to "
            "--format sentence-transformers only"
        )
    model = load_encoder(args.model)
    encoder = model.encoder if isinstance(model, Pipeline) else model
    if type(encoder).__name__ == "Sent2Vec":  # refuse bigram / Moses before any fitting
        encoder = sent2vec_static_encoder(encoder, pretokenized=args.pretokenized)
    if args.whiten is not None:
        if isinstance(model, Pipeline) and model.whitening is not None:
            raise ValueError(f"--model {args.model!r} has its own whitening; leave out --whiten")
        path = Path(args.whiten).expanduser()
        if path.is_dir():
            from sentvec import load_whitening

            post = load_whitening(path)
        else:
            from sentvec import Whitening

            corpus, _ = read_corpus_file(path)
            post = Whitening(args.n_components).fit(encoder.encode(corpus))
        model = Pipeline(encoder, post)
    elif isinstance(model, Pipeline):
        model = Pipeline(encoder, model.whitening)
    else:
        model = encoder
    out = export_model2vec(model, args.output, pretokenized=args.pretokenized)
    print(f"wrote {out}: Model2Vec format, {type(model).__name__}")
    print(f"load it with: StaticModel.from_pretrained({str(out)!r})")
    return 0


def _is_static(name: str) -> bool:
    """A format whose encoder is a ``StaticEncoder`` (Model2Vec, StaticEmbedding, WordLlama)."""
    from sentvec.encoders.formats import detect_format

    fmt = detect_format(name)
    return fmt is not None and fmt.encoder_type == "static"


def run(args: argparse.Namespace) -> int:
    """Entry point of ``sentvec export``; returns the exit code."""
    if args.format == "model2vec" or _is_static(args.model):
        # a static model's Model2Vec directory is also a sentence-transformers one
        return _run_model2vec(args)
    if args.pretokenized:
        raise ValueError("--pretokenized applies to --format model2vec only")
    from sentvec import Pipeline, load_encoder
    from sentvec._io import check_replaceable_directory
    from sentvec._path_checks import check_outputs_not_inputs
    from sentvec.integrations.sentence_transformers import EXPORT_FORMAT, EXPORT_MARKER

    check_outputs_not_inputs(
        {"--output": args.output},
        {"--model": args.model, "--whiten": args.whiten},
        replaced_dirs=("--output",),
    )
    check_replaceable_directory(
        args.output,
        marker=EXPORT_MARKER,
        marker_format=EXPORT_FORMAT,
        kind="a sentvec sentence-transformers export",
    )
    overrides = {"pooling": args.pooling, "layers": args.layers, "device": args.device}
    model = load_encoder(args.model, **{k: v for k, v in overrides.items() if v is not None})
    from sentvec.integrations import check_exportable, export_sentence_transformers

    # refuse what cannot be exported before the (possibly long) whitening fit
    encoder, own = check_exportable(model, serving_compatible=args.serving_compatible)
    whitening, corpus_name = _whitening(args, encoder)
    if whitening is not None and own is not None:
        raise ValueError(
            f"--model {args.model!r} is a pipeline with its own whitening; leave "
            "out --whiten, or give its encoder directory"
        )
    pipeline = Pipeline(encoder, whitening if whitening is not None else own)
    if own is not None:
        corpus_name = f"the whitening of the pipeline {Path(args.model).name!r}"
    sts = None
    if args.sts:
        from sentvec import evaluate_sts, load_sts

        tasks = load_sts(args.sts, data_dir=args.data, variant=pipeline.preferred_text_variant)
        sts = evaluate_sts(pipeline, tasks, batch_size=args.batch_size)
        print(
            "STS (Spearman x 100): "
            + ", ".join(f"{t} {v:.2f}" for t, v in sts.task_scores.items())
            + f"; avg {sts.average:.2f}"
        )
    out = export_sentence_transformers(
        pipeline,
        args.output,
        whitening_corpus=corpus_name,
        serving_compatible=args.serving_compatible,
        sts=sts,
    )
    post = "no post-processing"
    if pipeline.whitening is not None:
        from sentvec.whitening import postprocessor_type_of

        kind = postprocessor_type_of(pipeline.whitening)
        post = f"{kind} {'k' if kind == 'whitening' else 'D'}={pipeline.whitening.n_components_}"
    print(
        f"wrote {out}: {encoder.pooling} pooling, hidden states "
        f"{list(encoder.layer_indices)}, "
        + post
        + (", serving-compatible" if args.serving_compatible else "")
    )
    print(f"load it with: SentenceTransformer({str(out)!r})")
    return 0
