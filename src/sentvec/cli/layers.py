"""``sentvec layers``, ``sentvec whiten-sweep`` and ``sentvec report``.

* ``layers``: WhiteningBERT Figures 1 and 2 for one model (all pairs of hidden states and the
  best combination per size, without and with whitening) from one forward pass, written as JSON,
  Markdown and two PNG figures.
* ``whiten-sweep``: STS average versus whitening dimension k, whitening fitted per STS year
  (the paper's protocol) and on an outside corpus (default: the packaged Wikipedia sample).
* ``report``: one Markdown report with Table 1-style rows (CLS / AVG x last / L1 / L1+last,
  each without and with whitening) for every available encoder, under the three STS
  aggregations.

Per-layer vectors are cached on disk (``$SENTVEC_CACHE`` or ``~/.cache/sentvec``;
``--no-cache`` disables), so a second run of any of the three commands skips the forward pass.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from sentvec.cli._args import (
    check_output_path,
    layer_list,
    positive_int,
    positive_int_list,
    sts_task_list,
    sts_tasks_for,
)

DEFAULT_KS = "8,16,32,64,128,256"
DEFAULT_CORPUS_SIZE = 10_000


# --------------------------------------------------------------------------- shared options
def _str_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", type=sts_task_list, default=None,
                   help="comma-separated STS tasks (STS12..STS16, STSB, SICK; default all seven)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="evaluation data root (default: $SENTVEC_DATA or the packaged copy)")
    p.add_argument("--variant", choices=("senteval", "raw"), default=None,
                   help="STS text fed to the model (default: the encoder's preference, "
                        "'senteval' = tokenized and lower-cased as in the paper)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="sentences per forward pass (default: the encoder's, 32)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--cache-dir", default=None, help="cache root (default: $SENTVEC_CACHE or "
                                                     "~/.cache/sentvec)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _cache(args: argparse.Namespace) -> Any:
    from sentvec.cache import VectorCache

    return VectorCache(args.cache_dir, enabled=not args.no_cache)


def _slug(name: str) -> str:
    base = Path(name).name if ("/" in name or "\\" in name) else name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-").lower() or "model"


def _display_name(name: str) -> str:
    """An alias as given; a path by its last component."""
    return Path(name).name if ("/" in name or "\\" in name) else name


def _load_transformer(name: str, device: str | None = None, **overrides: Any) -> Any:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentvec.pipeline import EncoderOptionsError, load_encoder

    try:
        enc = load_encoder(name, device=device, **overrides)
    except EncoderOptionsError:  # a Sent2Vec model or pipeline: no layers to choose from
        enc = load_encoder(name)
    if not callable(getattr(enc, "encode_layers", None)):
        raise ValueError(f"model {name!r} ({type(enc).__name__}) has no hidden layers; "
                         "this command needs a transformer encoder")
    return enc


def _progress(args: argparse.Namespace) -> bool | None:
    return False if args.quiet else None


def _report_warnings(records: list[Any]) -> None:
    """Print each distinct warning once, with how many scorings raised it."""
    counts: dict[str, int] = {}
    for r in records:
        text = f"{r.category.__name__}: {r.message}"
        counts[text] = counts.get(text, 0) + 1
    for text, n in counts.items():
        print(f"warning ({n}x): {text}", file=sys.stderr)


# --------------------------------------------------------------------------- sentvec layers
def _eval_sts_command(args: argparse.Namespace, layers: tuple[int, ...],
                      whitening: str) -> str | None:
    """The ``sentvec eval-sts`` command that scores one combination of this ``layers`` run
    exactly (same model, pooling, tasks, data, text variant, aggregation and k); ``None`` when
    eval-sts has no equivalent (``--max-length``)."""
    import shlex

    if args.max_length is not None:
        return None
    parts = ["sentvec", "eval-sts", "--model", args.model, "--pooling", args.pooling,
             "--layers", ",".join(str(i) for i in layers)]
    if whitening == "year":
        parts += ["--whiten", "year"]
        if args.k is not None:
            parts += ["--n-components", str(args.k)]
    if args.aggregation != "mean":
        parts += ["--aggregation", args.aggregation]
    for flag, value in (("--tasks", ",".join(args.tasks or ())), ("--data", args.data),
                        ("--variant", args.variant)):
        if value:
            parts += [flag, value]
    return shlex.join(parts)


def run_layers(args: argparse.Namespace) -> int:
    """``sentvec layers``: Figures 1 and 2 for one model."""
    from sentvec._io import atomic_write_json, atomic_write_text
    from sentvec.evaluation.layers import analyze_layers
    from sentvec.evaluation.plots import plot_pair_heatmap, plot_size_curve

    t0 = time.perf_counter()
    if args.max_combination is not None and args.max_combination < 0:
        raise ValueError(f"max_combination={args.max_combination} is invalid; expected >= 0")
    out = check_output_path(args.out, what="--out", kind="dir")  # before the work
    encoder = _load_transformer(args.model, args.device, max_length=args.max_length)
    tasks = sts_tasks_for(args, encoder)
    # matplotlib is imported when plotting, while a new cache entry is being written: a warm-up
    # thread during the forward pass would hold the GIL that the forward pass needs after
    # every torch operation
    cache = _cache(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        analysis = analyze_layers(
            encoder, tasks, pooling=args.pooling, max_layers=args.max_combination or None,
            include_embedding_layer=not args.no_embedding_layer,
            exhaustive_limit=args.exhaustive_limit, beam_width=args.beam_width,
            search=args.max_combination != 0, aggregation=args.aggregation,
            n_components=args.k, cache=cache, batch_size=args.batch_size,
            show_progress_bar=_progress(args), model_name=args.model,
            background_save=True)  # a new cache entry is written during the files and plots
    _report_warnings(caught)
    stem = f"{_slug(args.model)}-{args.pooling}"
    data = analysis.to_dict()
    data["timings"]["total_s"] = time.perf_counter() - t0
    atomic_write_json(out / f"{stem}-layers.json", data)
    atomic_write_text(out / f"{stem}-layers.md", analysis.to_markdown()
                      + f"- total command wall time: {data['timings']['total_s']:.1f} s\n")
    plot_pair_heatmap(analysis, out / f"{stem}-fig1-pairs.png")
    if analysis.by_size:
        plot_size_curve(analysis, out / f"{stem}-fig2-sizes.png")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.finish_writes()  # a failed write is a CacheWarning: the results stand
    _report_warnings(caught)
    for w in analysis.whitening_modes:
        best = analysis.best_pair(w)
        again = _eval_sts_command(args, best.layers, w)
        print(f"whitening={w}: best single layer or pair: {best.label} = {best.average:.2f}"
              + (f" (the same score: {again})" if again else ""))
        for s in analysis.curve(w):
            print(f"  {s.n_layers} layers: {s.best.label} = {s.best.average:.2f} "
                  f"[{s.method}, {s.n_evaluated}/{s.n_possible}]")
    t = analysis.timings
    print(f"vectors {t.forward_s:.1f} s ({'cache hit' if t.cache_hit else 'forward pass'}), "
          f"pairs {t.pairs_s:.1f} s, size search {t.search_s:.1f} s, "
          f"total {data['timings']['total_s']:.1f} s; wrote {out}/{stem}-*")
    return 0


# --------------------------------------------------------------------------- whiten-sweep
def run_whiten_sweep(args: argparse.Namespace) -> int:
    """``sentvec whiten-sweep``: STS average versus whitening dimension k."""
    from sentvec._data import corpus_sample_path
    from sentvec._io import atomic_write_json, atomic_write_text, read_text_lines
    from sentvec._validation import check_path_exists, check_positive_int
    from sentvec.evaluation.layers import combine_layers, pooled_layer_vectors
    from sentvec.evaluation.plots import plot_whitening_sweep
    from sentvec.evaluation.sweep import WhiteningSweep, prepare_corpus, whitening_sweep
    from sentvec.evaluation.sts import unique_sentences

    t0 = time.perf_counter()
    out = check_output_path(args.out, what="--out", kind="dir")  # before the work
    path = None
    if not args.no_corpus:
        path = check_path_exists(args.corpus or corpus_sample_path(), what="corpus file")
        size = check_positive_int("corpus_size", args.corpus_size)
    encoder = _load_transformer(args.model, args.device, layers=tuple(args.layers),
                                pooling=args.pooling, max_length=args.max_length)
    tasks = sts_tasks_for(args, encoder)
    variant = tasks[0].variant
    sentences = unique_sentences(tasks)
    cache = _cache(args)
    vecs, _, sts_s = pooled_layer_vectors(encoder, sentences, pooling=args.pooling,
                                          text_variant=variant, cache=cache,
                                          batch_size=args.batch_size,
                                          show_progress_bar=_progress(args))
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
            encoder, corpus, pooling=args.pooling, text_variant=f"corpus:{prep}", cache=cache,
            batch_size=args.batch_size, show_progress_bar=_progress(args))
        corpus_vectors = combine_layers(cvecs[args.pooling], layers)
        label = str(path) if args.corpus else f"packaged: {Path(path).name}"
        corpus_info = {"path": label, "preprocessing": prep, "n_read": len(lines),
                       "n_used": len(corpus), "n_excluded": n_excluded}
    t1 = time.perf_counter()
    d = sts_vectors.shape[1]
    ks = sorted({k for k in args.k if k <= d} | {d})
    skipped = sorted(k for k in args.k if k > d)
    if skipped:
        print(f"note: k={skipped} exceed the dimension d={d} and were skipped", file=sys.stderr)
    points = whitening_sweep(sts_vectors, tasks, sentences, ks=ks,
                             corpus_vectors=corpus_vectors, aggregation=args.aggregation)
    sweep = WhiteningSweep(
        model=args.model, layers=layers, pooling=args.pooling, text_variant=variant,
        aggregation=args.aggregation, dim=d, corpus=corpus_info, points=points,
        timings={"sts_vectors_s": sts_s, "corpus_vectors_s": corpus_s,
                 "scoring_s": time.perf_counter() - t1, "total_s": time.perf_counter() - t0})
    stem = f"{_slug(args.model)}-{args.pooling}"
    atomic_write_json(out / f"{stem}-whiten-sweep.json", sweep.to_dict())
    atomic_write_text(out / f"{stem}-whiten-sweep.md", sweep.to_markdown())
    plot_whitening_sweep(sweep, out / f"{stem}-whiten-sweep.png")
    print(sweep.to_markdown())
    return 0


# --------------------------------------------------------------------------- report
def _report_transformer(name: str, args: argparse.Namespace, cache: Any) -> tuple[Any, dict]:
    from sentvec.evaluation.layers import pooled_layer_vectors
    from sentvec.evaluation.table1 import table1_rows
    from sentvec.evaluation.sts import unique_sentences

    encoder = _load_transformer(name, args.device)
    tasks = sts_tasks_for(args, encoder)
    sentences = unique_sentences(tasks)
    vecs, hit, secs = pooled_layer_vectors(encoder, sentences, pooling=("cls", "mean"),
                                           text_variant=tasks[0].variant, cache=cache,
                                           batch_size=args.batch_size,
                                           show_progress_bar=_progress(args))
    t0 = time.perf_counter()
    rows = table1_rows(_display_name(name), vecs, tasks, sentences)
    info = {"model": _display_name(name), "description": encoder.config_dict(), "n_sentences": len(sentences),
            "text_variant": tasks[0].variant, "vectors_s": secs, "cache_hit": hit,
            "scoring_s": time.perf_counter() - t0}
    return rows, info


def _report_sent2vec(encoder: Any, path: str, args: argparse.Namespace) -> tuple[Any, dict]:
    from sentvec.evaluation.sts import STSScorer, unique_sentences
    from sentvec.evaluation.table1 import Table1Row

    tasks = sts_tasks_for(args, encoder)
    sentences = unique_sentences(tasks)
    t0 = time.perf_counter()
    emb = encoder.encode(sentences)
    secs = time.perf_counter() - t0
    label = f"Sent2Vec ({Path(path).name})"
    scorer = STSScorer(tasks, sentences)
    rows = tuple(Table1Row(label, "-", "-", w,
                           scorer.score(emb, whitening="year" if w else "none"))
                 for w in (False, True))
    desc = encoder.config_dict() if callable(getattr(encoder, "config_dict", None)) else {}
    return rows, {"model": label, "description": desc, "n_sentences": len(sentences),
                  "text_variant": tasks[0].variant, "vectors_s": secs, "cache_hit": False,
                  "scoring_s": time.perf_counter() - t0 - secs}


def _describe(d: dict[str, Any]) -> str:
    """One line from an encoder's ``config_dict()`` (transformer or Sent2Vec)."""
    parts = []
    if d.get("num_layers") is not None:
        parts.append(f"{d['num_layers']} layers")
    dim = d.get("hidden_size", d.get("dim"))
    if dim is not None:
        parts.append(f"d = {dim}")
    if d.get("max_length") is not None:
        parts.append(f"max_length {d['max_length']}")
    args = d.get("args") or {}
    for key in ("wordNgrams", "epoch", "minCount"):
        if key in args:
            parts.append(f"{key} {args[key]}")
    if d.get("nwords") is not None:
        parts.append(f"{d['nwords']} words")
    name = d.get("source_model") or d.get("model") or d.get("source") or ""
    return f"{d.get('encoder', '')} {name}".strip() + (f" ({', '.join(parts)})" if parts else "")


def render_report(rows: list[Any], infos: list[dict], skipped: list[tuple[str, str]],
                  *, command: str) -> str:
    """Markdown of the report (Table 1-style rows, aggregations side by side, provenance)."""
    from sentvec import __version__
    from sentvec.evaluation.results import TABLE_COLUMNS

    def fmt(v: float) -> str:
        return "nan" if v != v else f"{v:.2f}"

    head = ["Model", "token", "layer", "whitening"] + [h for _, h in TABLE_COLUMNS] + ["Avg."]
    lines = ["# Reproduction report: WhiteningBERT Table 1 protocol", "",
             f"Generated by `{command}` (sentvec {__version__}, Python "
             f"{platform.python_version()}, {platform.machine()}) on "
             f"{datetime.date.today().isoformat()}.", "",
             "Protocol (docs/whiteningbert.md): cosine similarity, Spearman rho x 100; STS12-16 "
             "scored per subset; STS-B and SICK-R test splits. Whitening (T) is fitted per STS "
             "year on both sentences of all scored pairs of that year (STS-B / SICK-R: the test "
             "split), as the authors do (transductive). token=AVG: mean over all real tokens "
             "including [CLS]/[SEP]; token=CLS: first token's hidden state; L0 = embedding "
             "output; a layer combination is the mean of the pooled per-layer vectors. All rows "
             "of one model come from one forward pass (per-layer vectors, cached).", ""]
    for agg, title in (("mean", "unweighted mean over the subsets of a year (WhiteningBERT)"),
                       ("wmean", "mean weighted by subset size (SentEval, BERT-whitening)"),
                       ("all", "Spearman over all subsets concatenated (SimCSE)")):
        lines += [f"## Aggregation `{agg}`: {title}", "",
                  "| " + " | ".join(head) + " |", "|---|---|---|---|" + "---:|" * 8]
        for r in rows:
            scores = r.result.task_scores_for(agg)
            cells = [fmt(scores[t]) if t in scores else "-" for t, _ in TABLE_COLUMNS]
            cells.append(fmt(r.result.average_for(agg)))
            lines.append(f"| {r.model} | {r.token} | {r.layers} | {'T' if r.whitening else 'F'} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Averages side by side", "",
              "| Model | token | layer | whitening | Avg. mean | Avg. wmean | Avg. all |",
              "|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.model} | {r.token} | {r.layers} | {'T' if r.whitening else 'F'} | "
                     + " | ".join(fmt(r.result.average_for(a)) for a in ("mean", "wmean", "all"))
                     + " |")
    lines += ["", "## Encoders", ""]
    for i in infos:
        lines.append(f"- **{i['model']}**: {_describe(i['description'])}; text "
                     f"`{i['text_variant']}`, {i['n_sentences']} distinct sentences; vectors "
                     f"{i['vectors_s']:.1f} s ({'cache hit' if i['cache_hit'] else 'computed'}), "
                     f"scoring {i['scoring_s']:.1f} s.")
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- **{name}**: {why}" for name, why in skipped]
    lines += ["", "## Context", "",
              "The paper's rows are raw MLM-pretrained models (BERT-base, RoBERTa, DistilBERT, "
              "LaBSE; MiniLM in appendix Table 2: 55.30 -> 66.51 for L1+L12 without -> with "
              "whitening). None of those is installable here; the models above are "
              "sentence-transformers checkpoints already fine-tuned for similarity "
              "(all-MiniLM-L6-v2: 6 layers, 384-d), so absolute numbers are not comparable with "
              "Table 1 and whitening is not expected to help them as much. A Sent2Vec model has "
              "neither token pooling nor layers: its row is its own sentence vector, without and "
              "with the same per-year whitening.", ""]
    return "\n".join(lines)


def run_report(args: argparse.Namespace) -> int:
    """``sentvec report``: Table 1-style rows for every available encoder."""
    from sentvec._io import atomic_write_text
    from sentvec._validation import check_path_exists

    # inputs and output first: a bad path must not cost the transformer forward passes
    check_output_path(args.out, what="--out")
    sent2vec = None
    if args.sent2vec:
        from sentvec.pipeline import load_encoder

        sent2vec = load_encoder(check_path_exists(args.sent2vec, what="Sent2Vec model"))
    cache = _cache(args)
    rows: list[Any] = []
    infos: list[dict] = []
    skipped: list[tuple[str, str]] = []
    for name in args.models:
        try:
            r, info = _report_transformer(name, args, cache)
        except (FileNotFoundError, OSError, ImportError) as exc:
            skipped.append((name, str(exc)))
            print(f"skipped {name}: {exc}", file=sys.stderr)
            continue
        rows += r
        infos.append(info)
    if sent2vec is not None:
        r, info = _report_sent2vec(sent2vec, args.sent2vec, args)
        rows += r
        infos.append(info)
    if not rows:
        raise ValueError("no encoder could be evaluated: "
                         + "; ".join(f"{n}: {w}" for n, w in skipped))
    command = f"sentvec report --models {','.join(args.models)}"
    if args.sent2vec:
        command += f" --sent2vec {args.sent2vec}"
    if args.tasks:
        command += f" --tasks {','.join(args.tasks)}"
    text = render_report(rows, infos, skipped, command=command)
    atomic_write_text(args.out, text)
    print(f"wrote {args.out} ({len(rows)} rows, {len(skipped)} skipped)")
    return 0


_AGGREGATION_HELP = ("how subset scores make a task score: mean (the paper's, default), wmean "
                     "(weighted by subset size, SentEval) or all (Spearman over all pairs)")
_TRANSFORMER_HELP = ("transformer: alias (minilm, mpnet), Hugging Face model directory, or hub "
                     "name already in the local hub cache (nothing is downloaded)")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """Options of the commands that score one transformer (layers, whiten-sweep)."""
    p.add_argument("--model", required=True, help=_TRANSFORMER_HELP)
    p.add_argument("--pooling", choices=("mean", "cls", "max"), default="mean",
                   help="token pooling of each hidden state (default: mean, token=AVG)")
    p.add_argument("--aggregation", choices=("mean", "wmean", "all"), default="mean",
                   help=_AGGREGATION_HELP)
    p.add_argument("--max-length", type=positive_int, default=None,
                   help="longest input in tokens (default: the model's own limit)")
    p.add_argument("--out", default="layers-out", help="output directory (default layers-out)")


def register(subparsers: Any) -> None:
    """Add the ``layers``, ``whiten-sweep`` and ``report`` sub-commands."""
    p = subparsers.add_parser(
        "layers", help="WhiteningBERT Figures 1-2: layer combinations",
        description="Score every pair of hidden states (Figure 1 heat map) and the best "
                    "combination of each size (Figure 2) on the STS tasks, with and without "
                    "per-year whitening, from one forward pass; writes JSON, Markdown and PNGs.")
    _add_model_options(p)
    p.add_argument("--max-combination", type=int, default=None,
                   help="largest number of combined hidden states in the Figure-2 search "
                        "(default: all; 0 = pairs only)")
    p.add_argument("--exhaustive-limit", type=positive_int, default=128,
                   help="sizes with at most this many combinations are searched exhaustively; "
                        "larger ones by beam search")
    p.add_argument("--beam-width", type=positive_int, default=8,
                   help="combinations kept per size by the beam search (default 8)")
    p.add_argument("--no-embedding-layer", action="store_true",
                   help="exclude hidden state 0 from the Figure-2 candidates")
    p.add_argument("--k", type=positive_int, default=None,
                   help="whitening dimension (default: all)")
    _add_common(p)
    p.set_defaults(func=run_layers)

    s = subparsers.add_parser(
        "whiten-sweep", help="STS average versus whitening dimension k",
        description="STS average against the number of kept whitening dimensions k, with the "
                    "whitening fitted per year and on an outside corpus; writes JSON, "
                    "Markdown and a PNG.")
    _add_model_options(s)
    s.add_argument("--layers", type=layer_list, default=(1, -1),
                   help="hidden states to combine (default 1,-1)")
    s.add_argument("--k", type=positive_int_list, default=positive_int_list(DEFAULT_KS),
                   help=f"dimensions to keep (default {DEFAULT_KS}; d is always added)")
    s.add_argument("--corpus", default=None,
                   help="outside corpus, one sentence per line (default: the packaged "
                        "10,000-sentence Wikipedia sample)")
    s.add_argument("--corpus-size", type=int, default=DEFAULT_CORPUS_SIZE,
                   help="first N lines of the corpus")
    s.add_argument("--corpus-preprocessing", default="auto",
                   choices=("auto", "none", "lower", "moses-lower"),
                   help="auto: moses-lower for the senteval STS text, none for raw")
    s.add_argument("--no-corpus", action="store_true", help="per-year fit only")
    _add_common(s)
    s.set_defaults(func=run_whiten_sweep)

    r = subparsers.add_parser(
        "report", help="Markdown report of Table 1-style rows",
        description="One Markdown report with Table 1-style rows (CLS / AVG / L1 / L1+Llast, "
                    "with and without whitening) for every available encoder, and the three "
                    "STS aggregations side by side.")
    r.add_argument("--models", type=_str_list, default=["minilm", "mpnet"],
                   help="comma-separated transformer models (default minilm,mpnet)")
    r.add_argument("--sent2vec", default=None, help="a Sent2Vec model (.bin or directory)")
    r.add_argument("--out", default="docs/REPRODUCTION.md")
    _add_common(r)
    r.set_defaults(func=run_report)
