"""``sentvec eval-sts``: STS evaluation (WhiteningBERT Table 1 protocol).

Without configuration options it prints the WhiteningBERT Table 1 block for one model (default
``minilm``): CLS last layer; AVG last layer; AVG L1; AVG L1+L_last; AVG L1+L_last + whitening
(fitted per task on its scored pairs, the paper's protocol), all five rows from ONE forward pass
per distinct sentence (``encode_layers`` with both poolings). With ``--pooling``, ``--layers`` or
``--whiten`` it evaluates that one configuration. A transformer's pooled per-layer vectors are
kept in the same disk cache as ``sentvec layers`` (``--cache-dir``, default ``$SENTVEC_CACHE`` or
``~/.cache/sentvec``; ``--no-cache`` disables it): a second run of any configuration of the same
model and data re-scores without a forward pass, and so does a run over a subset of the tasks
(the per-layer entries serve any subset of their sentences, with any layers).

Examples::

    sentvec eval-sts
    sentvec eval-sts --model mpnet --json table1.json
    sentvec eval-sts --pooling mean --layers 1,-1 --whiten year --n-components 128
    sentvec eval-sts --layers=-1 --whiten corpus.txt --aggregation all
    sentvec eval-sts --layers 1,-1 --whiten year --postprocess abtt --abtt-components 4
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from sentvec.cli._args import (
    MODEL_HELP,
    add_cache_options,
    add_configuration_options,
    add_device_options,
    add_postprocess_options,
    add_progress_option,
    check_postprocess_options,
    device_options,
    plain_text,
    positive_int,
    progress,
    read_corpus_file,
    report_warnings,
    sts_task_list,
    vector_cache,
    year_postprocessor,
)

_AGGREGATION_HELP = {
    "mean": "unweighted mean over subsets (WhiteningBERT)",
    "wmean": "mean over subsets weighted by pair count (SentEval)",
    "all": "Spearman over all subsets' pairs concatenated (SimCSE)",
}
_VARIANT_HELP = {
    "senteval": "SentEval files: Moses-tokenised, STS lower-cased",
    "raw": "official untokenised, cased files",
}


def register(subparsers: Any) -> None:
    """Add the ``eval-sts`` sub-command."""
    p = subparsers.add_parser(
        "eval-sts",
        help="STS evaluation; no options: the WhiteningBERT Table 1 block for one model",
        description=plain_text(__doc__.split("\n\n")[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    add_configuration_options(
        p,
        pooling_help="token pooling (one configuration; default mean)",
        layers_default="one configuration; default 1,-1",
        whiten_default=None,
        whiten_metavar="{none,year,FILE,DIR}",
        whiten_help="none; year (fit per task on its scored pairs, the paper's protocol); a "
        "text file of sentences (one per line) encoded with the same encoder; or "
        "a saved Whitening or pipeline directory (one configuration; default "
        "none)",
        n_components_help="dimensions kept by the whitening (BERT-whitening's k; default all)",
    )
    add_postprocess_options(p)
    p.add_argument(
        "--aggregation",
        choices=tuple(_AGGREGATION_HELP),
        default="mean",
        help="task score over subsets: "
        + "; ".join(f"{k} = {v}" for k, v in _AGGREGATION_HELP.items())
        + " (default mean)",
    )
    p.add_argument(
        "--zero-vectors",
        choices=("senteval", "whiteningbert"),
        default=None,
        help="cosine of a pair with a zero vector (e.g. an all-OOV Sent2Vec sentence): "
        "senteval = 0 (SentEval, default); whiteningbert = the WhiteningBERT "
        "authors' unwhitened evaluator, 1.0 for two zero vectors and 0.5 for one "
        "(one configuration)",
    )
    p.add_argument(
        "--tasks",
        type=sts_task_list,
        default=None,
        metavar="T1,T2,...",
        help="STS tasks (STS12..STS16, STSB, SICK; default all seven)",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="evaluation data root (default: $SENTVEC_DATA or the packaged copy)",
    )
    p.add_argument(
        "--variant",
        choices=tuple(_VARIANT_HELP),
        default=None,
        help="STS text fed to the model: "
        + "; ".join(f"{k} = {v}" for k, v in _VARIANT_HELP.items())
        + " (default: the encoder's preference, senteval for transformers)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=32,
        help="sentences per forward pass (default 32)",
    )
    add_device_options(p)
    add_cache_options(p)
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    add_progress_option(p)
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- helpers
def _header(
    encoder_desc: dict[str, Any], tasks: list[Any], n_sentences: int, aggregation: str
) -> list[str]:
    from sentvec.evaluation import TABLE_COLUMNS

    short = dict(TABLE_COLUMNS)
    model = (
        encoder_desc.get("model") or encoder_desc.get("source") or encoder_desc.get("encoder", "?")
    )
    arch = ""
    if encoder_desc.get("num_layers") is not None:  # a transformer: its size and precision
        arch = (
            f" ({encoder_desc['num_layers']} layers x {encoder_desc.get('hidden_size')}, "
            f"{encoder_desc.get('precision', 'float32')})"
        )
    variant = tasks[0].variant if tasks else "?"
    counts = ", ".join(f"{short.get(t.name, t.name)} {t.n_pairs}" for t in tasks)
    total = sum(t.n_pairs for t in tasks)
    return [
        f"model: {model}{arch}",
        f"text: {variant} = {_VARIANT_HELP.get(variant, variant)}",
        f"metric: Spearman x 100 of cosine similarity; aggregation: {aggregation} = "
        f"{_AGGREGATION_HELP[aggregation]}; Avg = mean of the task scores",
        f"pairs: {counts} ({total} pairs, {n_sentences} distinct sentences)",
    ]


def _finish_cache(args: argparse.Namespace) -> None:
    """Wait for the cache writes; a failed one is a warning (the results stand)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args.vector_cache.finish_writes()
    report_warnings(caught)


def _vectors_note(hit: bool) -> str:
    return (
        "vectors from the cache (no forward pass)"
        if hit
        else "ONE forward pass per distinct sentence"
    )


def _render(rows: dict[str, Any], markdown: bool) -> str:
    from sentvec.evaluation import results_table_markdown, results_table_text

    return (results_table_markdown if markdown else results_table_text)(rows)


def _write_json(path: str, payload: dict[str, Any]) -> None:
    from sentvec._io import atomic_write_json

    atomic_write_json(path, payload)


# --------------------------------------------------------------------------- modes
def _table1(args: argparse.Namespace, t_start: float) -> int:
    from sentvec.encoders import LayeredEncoder
    from sentvec.encoders.loading import describe_without_loading, load_encoder
    from sentvec.evaluation import evaluate_table1

    model: Any = args.model
    if describe_without_loading(model, **device_options(args)) is None:  # not a local transformer
        encoder = load_encoder(model, **device_options(args))
        if not isinstance(encoder, LayeredEncoder):
            print(
                f"note: {type(encoder).__name__} has no layers or token pooling; evaluating "
                "its own vectors (one row) instead of the Table 1 block",
                file=sys.stderr,
            )
            return _single(args, t_start, encoder=encoder)
        model = encoder
    block = evaluate_table1(
        model,
        args.tasks,
        cache=args.vector_cache,
        n_components=args.n_components,
        aggregation=args.aggregation,
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
        data_dir=args.data,
        variant=args.variant,
        load_options=device_options(args),
        background_save=True,
    )
    desc, tasks, sentences, rows, hit = (
        block.description,
        block.tasks,
        block.sentences,
        block.rows,
        block.cache_hit,
    )
    t_encode, t_score = block.timing_s["encode"], block.timing_s["score"]
    wall = time.perf_counter() - t_start
    t_load = wall - t_encode - t_score
    k = args.n_components

    print("WhiteningBERT Table 1 block")
    for line in _header(desc, tasks, len(sentences), args.aggregation):
        print(line)
    print(
        f"whitening: fitted per task on both sentences of all its scored pairs (duplicates "
        f"kept; transductive, the paper's protocol){'; k=' + str(k) if k else ''}"
    )
    print()
    print(_render(rows, args.markdown), end="")
    print()
    how = "" if hit else f" (encode_layers, cls+mean pooling, batch {args.batch_size})"
    print(
        f"time: load {t_load:.1f} s; {_vectors_note(hit)}{how} {t_encode:.1f} s; "
        f"scoring {t_score:.1f} s; wall {wall:.1f} s"
    )
    if args.json:
        _write_json(
            args.json,
            {
                "command": "eval-sts",
                "mode": "table1",
                "encoder": desc,
                "aggregation": args.aggregation,
                "text_variant": tasks[0].variant,
                "n_sentences": len(sentences),
                "n_pairs": {t.name: t.n_pairs for t in tasks},
                "timing_s": {"load": t_load, "encode": t_encode, "score": t_score, "wall": wall},
                "cache_hit": hit,
                "rows": [{"label": label, "result": res.to_dict()} for label, res in rows.items()],
            },
        )
        print(f"wrote {args.json}")
    _finish_cache(args)
    return 0


def _resolve_whitening(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """--whiten -> (value for evaluate_sts, metadata)."""
    w = args.whiten or "none"
    check_postprocess_options(args, "--n-components")
    if args.postprocess == "abtt" and w == "none":
        raise ValueError("--postprocess abtt needs --whiten year or a corpus FILE")
    if w in ("none", "year"):
        if w == "none" and args.n_components is not None:
            raise ValueError("--n-components needs --whiten year, a corpus FILE or a Whitening DIR")
        return w, {}
    path = Path(w).expanduser()
    if path.is_dir():
        from sentvec.encoders import load_whitening

        if args.n_components is not None:
            raise ValueError("--n-components cannot change a saved Whitening; it keeps its own k")
        if args.postprocess != "whitening":
            raise ValueError(
                f"--postprocess {args.postprocess} is for --whiten year or a corpus "
                "FILE; a saved DIR applies the post-processor it holds"
            )
        # a saved Whitening, or a saved pipeline's whitening (as `encode --whitening` takes)
        fitted = load_whitening(path)
        return fitted, {"whitening_source": f"saved {type(fitted).__name__} {str(path)!r}"}
    if path.is_file():
        corpus, blank = read_corpus_file(path)
        return corpus, {
            "whitening_source": f"corpus file {str(path)!r}",
            "whitening_corpus_lines": len(corpus),
            "whitening_corpus_blank_lines_skipped": blank,
        }
    raise FileNotFoundError(
        f"--whiten {w!r} is not 'none', 'year', an existing text file or a saved Whitening "
        "(or pipeline) directory"
    )


def _single(args: argparse.Namespace, t_start: float, *, encoder: Any = None) -> int:
    from sentvec.encoders import check_whitening_fits, output_dimension
    from sentvec.evaluation import evaluate_sts_model, unique_sentences
    from sentvec.whitening import check_n_components

    whitening, wmeta = _resolve_whitening(args)

    def checked_postprocessor(encoder: Any) -> Any:
        """--n-components and a saved --whiten against the encoder's width, before encoding;
        the --postprocess estimator sized to it."""
        check_n_components(args.n_components, output_dimension(encoder), name="--n-components")
        postprocessor = year_postprocessor(args, encoder)
        if not isinstance(whitening, (str, list)):  # a saved DIR's fitted post-processor
            check_whitening_fits(encoder, whitening, what=f"--whiten {args.whiten!r}")
        return postprocessor

    evaluation = evaluate_sts_model(
        args.model if encoder is None else encoder,
        args.tasks,
        cache=args.vector_cache,
        pooling=None if encoder is not None else args.pooling,
        layers=None if encoder is not None else args.layers,
        whitening=whitening,
        n_components=args.n_components,
        aggregation=args.aggregation,
        postprocessor_for=checked_postprocessor,
        zero_vectors=args.zero_vectors or "senteval",
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
        data_dir=args.data,
        variant=args.variant,
        metadata=wmeta,
        load_options=device_options(args),
        background_save=True,
    )
    tasks, hit = evaluation.tasks, evaluation.cache_hit
    t_eval = evaluation.timing_s["encode_and_score"]
    wall = time.perf_counter() - t_start
    t_load = wall - t_eval
    result = evaluation.result.replace(
        metadata={
            **evaluation.result.metadata,
            "timing_s": {"load": t_load, "encode_and_score": t_eval, "wall": wall},
            "cache_hit": hit,
        }
    )
    meta = result.metadata
    label = _config_label(meta, result, model=args.model)
    for line in _header(meta, tasks, len(unique_sentences(tasks)), args.aggregation):
        print(line)
    w = result.whitening
    inner = meta.get("pipeline_whitening")
    if inner:
        print(
            f"pipeline: {meta.get('pipeline', '?')}: its own Whitening (k={inner.get('n_components')}, "
            f"fitted on {inner.get('n_samples_seen')} rows) is applied inside the model"
        )
    method = _method_label(meta)
    if w.mode == "none":
        print("whitening: none" + (" (besides the pipeline's)" if inner else ""))
    elif method:
        print(
            f"post-processing: {method} ({w.mode}): "
            f"{w.fit_corpus or meta.get('whitening_source')}"
            f"{f' ({w.fit_size} rows)' if w.fit_size else ''}"
            f"{'; ' + meta['whitening_source'] if 'whitening_source' in meta else ''}"
        )
    else:
        print(
            f"whitening: {w.mode}; fitted on {w.fit_corpus or meta.get('whitening_source')}"
            f"{f' ({w.fit_size} rows)' if w.fit_size else ''}"
            f"{f'; k={w.n_components}' if w.n_components else ''}"
            f"{'; ' + meta['whitening_source'] if 'whitening_source' in meta else ''}"
        )
    print()
    print(_render({label: result}, args.markdown), end="")
    print()
    what = "score (vectors from the cache)" if hit else "encode + score"
    print(f"time: load {t_load:.1f} s; {what} {t_eval:.1f} s; wall {wall:.1f} s")
    if args.json:
        result.to_json(args.json)
        print(f"wrote {args.json}")
    _finish_cache(args)
    return 0


def _method_label(meta: dict[str, Any]) -> str | None:
    """``"AllButTheTop(n_components=4)"`` for a post-processor other than a Whitening (those
    keep the "whitening" wording), else None."""
    from sentvec.evaluation import postprocessing_label

    pp = meta.get("postprocessing")
    return (
        None
        if not isinstance(pp, dict) or pp.get("method") == "Whitening"
        else (postprocessing_label(pp))
    )


def _config_label(meta: dict[str, Any], result: Any, model: str | None = None) -> str:
    pooling = meta.get("pooling")
    if pooling is None:  # no layers to name: the model as the user named it (alias or file)
        label = Path(model).name if model else str(meta.get("encoder", "model"))
    else:
        token = {"mean": "AVG", "cls": "CLS", "max": "MAX"}.get(pooling, pooling)
        idx = meta.get("layer_indices") or meta.get("layers") or []
        label = f"{token}  " + "+".join(f"L{i}" for i in idx)
    inner = meta.get("pipeline_whitening")
    if inner:
        label += f" + pipeline whitening (k={inner.get('n_components')})"
    method = _method_label(meta)
    if result.whitening.mode != "none" and method:
        label += f" + {method}"
    elif result.whitening.mode != "none":
        label += " + whitening"
        if result.whitening.n_components:
            label += f" (k={result.whitening.n_components})"
    return label


def run(args: argparse.Namespace) -> int:
    """Entry point of ``sentvec eval-sts``; returns the exit code."""
    t_start = time.perf_counter()
    from sentvec._path_checks import check_outputs_not_inputs

    check_outputs_not_inputs(
        {"--json": args.json}, {"--model": args.model, "--whiten": args.whiten}
    )
    if args.json:  # before the work: a bad path must not fail after the evaluation
        from sentvec._path_checks import check_output_path

        check_output_path(args.json, what="--json")
    single = (
        args.pooling is not None
        or args.layers is not None
        or args.whiten is not None
        or args.zero_vectors is not None
    )
    if not single and (args.postprocess != "whitening" or args.abtt_components is not None):
        raise ValueError(
            "--postprocess / --abtt-components need --whiten year or a corpus FILE "
            "(the Table 1 block has its own whitening row)"
        )
    args.vector_cache = vector_cache(args)
    return _single(args, t_start) if single else _table1(args, t_start)
