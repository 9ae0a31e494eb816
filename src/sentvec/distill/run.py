"""``sentvec distill``'s entry point, :func:`distill`: the steps of :mod:`sentvec.distill` in
order, their wall times, and the record of the run."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from sentvec.distill.config import DistillConfig
from sentvec.distill.corpus import (
    CorpusCounts,
    CorpusPassProcess,
    Vocabulary,
    check_whitening_corpus,
    corpus_pass,
    teacher_vocabulary,
)
from sentvec.distill.model import DISTILL_RECORD, DistilledModel
from sentvec.distill.reduction import fit_rows
from sentvec.distill.rows import rows_beside, token_rows
from sentvec.distill.teacher import check_teacher, load_teacher
from sentvec.distill.vocabulary import RowPlan
from sentvec.distill.weights import _row_counts, token_weights

__all__ = ["distill"]


def distill(
    model: Any = "minilm", output: str | os.PathLike[str] | None = None, **options: Any
) -> DistilledModel:
    """Distill a static model from a transformer (:mod:`sentvec.distill`).

    Parameters
    ----------
    model : DistillConfig, str, path-like or sentvec.TransformerEncoder, default "minilm"
        Everything to do as a :class:`DistillConfig`, or its teacher (``model``).
    output : path-like, optional
        The directory to write (:attr:`DistillConfig.output`).
    **options
        The other fields of :class:`DistillConfig` (``corpus``, ``dim``, ``weighting``, ...).

    Returns
    -------
    DistilledModel

    Raises
    ------
    TypeError
        ``output`` or options given beside a :class:`DistillConfig`, an unknown option, or a
        teacher object that is not a :class:`sentvec.TransformerEncoder`.
    ValueError
        Bad options (:class:`DistillConfig`), an output that is an input, ``dim`` above the
        width, a teacher that is not a transformer (a Sent2Vec, static model or pipeline), or,
        with ``whiten="corpus"``, fewer than ``dim + 1`` non-empty corpus lines or
        ``whitening_sentences`` (:func:`sentvec.distill.corpus.check_whitening_corpus`),
        refused before the teacher is loaded (``dim=None``: before its forward pass).
    FileNotFoundError
        A missing teacher or corpus.
    """
    config = _as_config(model, output, options)
    t_start = time.perf_counter()
    corpus = config.corpus_path()
    _check_paths(config, corpus)
    whitening_corpus = corpus if config.whiten == "corpus" else None
    if whitening_corpus is not None and config.dim is not None:  # before the teacher works
        check_whitening_corpus(
            whitening_corpus, config.dim, whitening_sentences=config.whitening_sentences
        )
    run = _teacher_and_corpus(config, corpus, whitening_corpus)
    plan = run.plan
    counts = None if run.stats is None else _row_counts(run.stats, run.n_tokens, plan)
    if config.weighting == "usif" and counts is not None:  # uSIF's a is undefined on a tiny
        n_uni = len(plan.keep) - (0 if plan.bigram_p is None else len(plan.bigram_p))
        token_weights("usif", counts[:n_uni], plan.keep[:n_uni])  # corpus: say so before the pass

    t0 = time.perf_counter()
    rows = _all_token_rows(config, run)
    run.times["teacher_forward_s"] = run.times.get("teacher_forward_s", 0.0)
    run.times["teacher_forward_s"] += time.perf_counter() - t0

    t0 = time.perf_counter()
    emb, wparams = fit_rows(
        rows,
        plan.keep,
        dim=run.dim,
        weighting=config.weighting,
        whiten=config.whiten,
        counts=counts,
        sample=plan.sample if config.whiten == "corpus" else None,
        sif_a=config.sif_a,
        bigram_p=plan.bigram_p,
        bigram_weight=config.bigram_weight,
    )
    unk_id = run.vocabulary[3]
    if unk_id is not None and 0 <= unk_id < len(plan.keep):
        # sentvec and Model2Vec drop unknown tokens when they encode, sentence-transformers'
        # StaticEmbedding averages every id it gets: a zero row gives all three one direction
        emb[unk_id] = 0.0
    run.times["fit_s"] = time.perf_counter() - t0

    result = DistilledModel(
        emb,
        json.dumps(plan.tokenizer_json, ensure_ascii=False),
        _record(config, run, emb, wparams),
        bigrams=plan.pairs if len(plan.pairs) else None,
    )
    result.record["wall_time_s"]["total_s"] = round(time.perf_counter() - t_start, 3)
    if config.output is not None:
        result.save(config.output, dtype=config.dtype)
    return result


def _as_config(model: Any, output: Any, options: dict[str, Any]) -> DistillConfig:
    if not isinstance(model, DistillConfig):
        return DistillConfig(model=model, output=output, **options)
    if output is not None or options:
        raise TypeError("distill(config) takes no other arguments: set them on the DistillConfig")
    return model


def _check_paths(config: DistillConfig, corpus: str | os.PathLike[str] | None) -> None:
    """The corpus exists; the output is writable and is not an input (before any work)."""
    from sentvec._io import check_replaceable_directory
    from sentvec._path_checks import check_input_file, check_output_path, check_outputs_not_inputs

    if corpus is not None:
        check_input_file(corpus, what="corpus", regular=True)
    output = config.output
    if output is not None:
        model_dir = config.model if isinstance(config.model, (str, os.PathLike)) else None
        check_outputs_not_inputs(
            {"output": output}, {"corpus": corpus, "model": model_dir}, replaced_dirs=("output",)
        )
        check_output_path(output, what="output", kind="whole-dir")
        check_replaceable_directory(output, marker=DISTILL_RECORD, kind="a sentvec distill output")


@dataclass
class _TeacherAndCorpus:
    """What the teacher's load and the corpus pass give the rows' fit."""

    encoder: Any
    pooling: str
    dim: int
    vocabulary: Vocabulary
    stats: CorpusCounts | None
    plan: RowPlan
    early: tuple[np.ndarray, np.ndarray] | None  # (ids, rows) made beside the corpus pass
    in_child: bool
    times: dict[str, float]

    @property
    def n_tokens(self) -> int:
        return len(self.vocabulary[0])


def _teacher_and_corpus(
    config: DistillConfig,
    corpus: str | os.PathLike[str] | None,
    whitening_corpus: str | os.PathLike[str] | None,
) -> _TeacherAndCorpus:
    """Load the teacher while a child process counts the corpus (a teacher given by name),
    the teacher's own tokens passed through it meanwhile; else the corpus pass here."""
    t0 = time.perf_counter()
    child: CorpusPassProcess | None = None
    corpus = corpus if config.needs_corpus else None
    try:
        if isinstance(config.model, (str, os.PathLike)):
            check_teacher(config.model)
            if corpus is not None:
                child = CorpusPassProcess.start(
                    config.model, corpus, config.count_options(), config.plan_options()
                )
        encoder, pooling = load_teacher(config)
        d = int(encoder.hidden_size)
        k = d if config.dim is None else int(config.dim)
        if k > d:
            raise ValueError(f"dim={k} is above the teacher's width {d}")
        if whitening_corpus is not None and config.dim is None:  # k is the width: before the pass
            check_whitening_corpus(
                whitening_corpus, k, whitening_sentences=config.whitening_sentences
            )
        vocabulary = teacher_vocabulary(encoder.tokenizer)
        times: dict[str, float] = {"teacher_load_s": time.perf_counter() - t0}
        early, passed = None, None
        if child is not None:
            early, passed = _rows_beside_child(config, child, encoder, pooling, vocabulary, times)
        if passed is None:
            passed = corpus_pass(
                encoder.tokenizer,
                vocabulary,
                corpus,
                config.count_options(),
                config.plan_options(),
            )
            in_child = False
        else:
            in_child = True
    finally:
        if child is not None:
            child.close()
    stats, plan, pass_times = passed
    times.update(pass_times)
    return _TeacherAndCorpus(encoder, pooling, k, vocabulary, stats, plan, early, in_child, times)


def _rows_beside_child(
    config: DistillConfig,
    child: CorpusPassProcess,
    encoder: Any,
    pooling: str,
    vocabulary: Vocabulary,
    times: dict[str, float],
) -> tuple[tuple[np.ndarray, np.ndarray] | None, Any]:
    """While the child counts, this process has one core: the scikit-learn import of the
    whitening (~1.2 s) and the teacher's own tokens in one torch thread. Returns those rows
    (None if the child failed first) and the child's result (None: do the pass here)."""
    t0 = time.perf_counter()
    if config.whiten == "corpus":
        import sentvec.whitening  # noqa: F401
    early_ids = np.flatnonzero(vocabulary[1])
    early_rows = rows_beside(
        child,
        encoder,
        early_ids,
        show_progress_bar=config.show_progress_bar,
        **_row_options(config, encoder, pooling),
    )
    times["teacher_forward_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    passed = child.result(vocabulary)
    times["corpus_wait_s"] = time.perf_counter() - t0
    return (None if early_rows is None else (early_ids, early_rows)), passed


def _row_options(config: DistillConfig, encoder: Any, pooling: str) -> dict[str, Any]:
    return {"batch_size": config.batch_size, "precision": encoder.precision, "pooling": pooling}


def _all_token_rows(config: DistillConfig, run: _TeacherAndCorpus) -> np.ndarray:
    """Rows of the teacher's tokens, then corpus words (``vocabulary``), then bigrams; the
    teacher's tokens made beside the corpus pass are reused."""
    plan = run.plan
    rows = np.zeros((len(plan.pieces), run.encoder.hidden_size), dtype=np.float32)
    todo = np.flatnonzero(plan.keep)
    if run.early is not None:
        rows[run.early[0]] = run.early[1]
        todo = todo[todo >= run.n_tokens]
    if len(todo):
        rows[todo] = token_rows(
            run.encoder,
            [plan.pieces[i] for i in todo],
            show_progress_bar=config.show_progress_bar,
            **_row_options(config, run.encoder, run.pooling),
        )
    return rows


def _record(
    config: DistillConfig, run: _TeacherAndCorpus, emb: np.ndarray, wparams: dict[str, Any]
) -> dict[str, Any]:
    """The distill record (``distill.json``, the model card): teacher, corpus, settings, rows,
    wall times."""
    from sentvec import __version__

    model, stats, plan = config.model, run.stats, run.plan
    keep, tokens, n_bigrams = plan.keep, run.vocabulary[0], int(config.bigrams)
    named = isinstance(model, (str, os.PathLike))
    return {
        "format": "sentvec-distill",
        "version": 1,
        "sentvec_version": __version__,
        "teacher": {**run.encoder.config_dict(), **({"name": os.fspath(model)} if named else {})},
        "corpus": None
        if stats is None
        else {
            "path": stats.path,
            "sentences_counted": stats.n_sentences,
            "tokens_counted": stats.n_tokens,
            "whitening_sentences": len(stats.sample),
        },
        "settings": {
            "dim": run.dim,
            "weighting": config.weighting,
            "whiten": config.whiten,
            "pooling": run.pooling,
            "layers": list(run.encoder.layers),
            "vocabulary": config.vocabulary,
            "bigrams": n_bigrams,
            "bigram_weight": config.bigram_weight if n_bigrams else None,
            "dtype": config.dtype,
            "precision": run.encoder.precision,
            "max_sentences": config.max_sentences,
        },
        "weights": wparams,
        "rows": int(emb.shape[0]),
        "corpus_words": len(plan.words),
        "bigram_rows": len(plan.pairs),
        "corpus_words_first": [w for w, _, _ in plan.words[:5]],
        "rows_dropped": [tokens[i] for i in np.flatnonzero(~keep)][:3] + ["..."]
        if (~keep).any()
        else [],
        "n_rows_dropped": int((~keep).sum()),
        "unknown_token_row": None if run.vocabulary[3] is None else "zero",
        "corpus_pass": None
        if stats is None
        else ("child process" if run.in_child else "in process"),
        "wall_time_s": {k: round(v, 3) for k, v in run.times.items()},
    }
