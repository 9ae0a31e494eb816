"""Distillation of a static embedding model from a transformer (``sentvec distill``).

A static model maps a sentence to the mean of one row per token. Model2Vec (Tulkens & van
Dongen, 2024) builds the rows by passing every vocabulary token alone through the teacher
(``[CLS] token [SEP]``, mean pooled), reduces them by PCA and weights each by SIF's
``a / (a + p)`` with ``p`` guessed from the token's rank (Zipf's law). sentvec keeps the token
rows (layers as :class:`~sentvec.TransformerEncoder` takes them; pooled by default as the
average of Model2Vec's mean and the ``[CLS]`` output, each scaled to unit norm first,
``mean_cls_unit``, chosen on dev) and fits the rest on real corpus sentences:

* WhiteningBERT's whitening (Huang et al. 2021, Eq. 1) with ``k`` = the output dimension,
  fitted on the (unweighted) static sentence vectors of corpus sentences
  (:class:`sentvec.Whitening`). The sentence vector is a *mean* of rows, so the whitening
  ``(x - mu) W`` folds into the rows exactly: ``r_t' = (r_t - mu) W``. Or Model2Vec's PCA;
* then each row times its token's weight: from real corpus counts (the whitening sentences),
  SIF (Arora et al. 2017, ``a`` = 5e-3; default) or uSIF (Ethayarajh 2018: rows scaled to
  unit norm first) with the formulas of :mod:`sentvec.encoders.sif`; Zipf as Model2Vec (``a`` =
  3e-4), or none.
* optionally extra rows from the corpus (:mod:`sentvec.distill.vocabulary`): whole words the
  teacher's vocabulary splits (``vocabulary="corpus:N"``; off by default) and bigrams
  (Sent2Vec's). A sentence vector is ``mean_t w_t (r_t - mu) W``.

The result is written as a Model2Vec directory (``config.json``, ``model.safetensors`` with the
``embeddings`` tensor, ``tokenizer.json``, ``modules.json``, ``README.md``) that Model2Vec's
``StaticModel.from_pretrained`` and sentence-transformers' ``StaticEmbedding.from_model2vec``
load unchanged, plus the distill record ``distill.json``. Measurements: ``docs/distill.md``.

The modules follow the steps: :mod:`~sentvec.distill.config` (:class:`DistillConfig`, the
options), :mod:`~sentvec.distill.teacher` (the teacher's check and load),
:mod:`~sentvec.distill.vocabulary` (corpus words, bigrams, the rows' plan),
:mod:`~sentvec.distill.corpus` (the corpus pass), :mod:`~sentvec.distill.rows` (the teacher's
token rows), :mod:`~sentvec.distill.weights`, :mod:`~sentvec.distill.reduction` (whitening or
PCA of the rows, then the weights), :mod:`~sentvec.distill.model` (:class:`DistilledModel`, its
files and model card) and :mod:`~sentvec.distill.run` (:func:`distill`).

``sentvec.distill`` names both this package and the function :func:`distill`: the package calls
as the function, so ``sentvec.distill(...)`` and ``from sentvec import distill`` keep working
(the top-level name is always this package).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from sentvec._lazy import attach

_NAMES: dict[str, str] = {
    "distill": "sentvec.distill.run",
    "DistillConfig": "sentvec.distill.config",
    "DEFAULT_DIM": "sentvec.distill.config",
    "DEFAULT_WEIGHTING": "sentvec.distill.config",
    "DEFAULT_LAYERS": "sentvec.distill.config",
    "DEFAULT_ROW_POOLING": "sentvec.distill.config",
    "DEFAULT_VOCABULARY": "sentvec.distill.config",
    "DEFAULT_BIGRAMS": "sentvec.distill.config",
    "DEFAULT_BIGRAM_WEIGHT": "sentvec.distill.config",
    "STORED_DTYPES": "sentvec.distill.config",
    "check_teacher": "sentvec.distill.teacher",
    "load_teacher": "sentvec.distill.teacher",
    "teacher_format_name": "sentvec.distill.teacher",
    "DistilledModel": "sentvec.distill.model",
    "model_card": "sentvec.distill.model",
    "DISTILL_RECORD": "sentvec.distill.model",
    "token_rows": "sentvec.distill.rows",
    "rows_beside": "sentvec.distill.rows",
    "ROW_POOLINGS": "sentvec.distill.rows",
    "zipf_weights": "sentvec.distill.weights",
    "token_weights": "sentvec.distill.weights",
    "WEIGHTINGS": "sentvec.distill.weights",
    "ZIPF_SIF_COEFFICIENT": "sentvec.distill.weights",
    "DEFAULT_ZIPF_A": "sentvec.distill.weights",
    "DEFAULT_SIF_A": "sentvec.distill.weights",
    "whiten_token_rows": "sentvec.distill.reduction",
    "pca_rows": "sentvec.distill.reduction",
    "fit_rows": "sentvec.distill.reduction",
    "WHITEN_MODES": "sentvec.distill.reduction",
    "CorpusCounts": "sentvec.distill.corpus",
    "CorpusPassProcess": "sentvec.distill.corpus",
    "WordTokenCache": "sentvec.distill.corpus",
    "check_whitening_corpus": "sentvec.distill.corpus",
    "corpus_lines": "sentvec.distill.corpus",
    "corpus_pass": "sentvec.distill.corpus",
    "count_corpus_tokens": "sentvec.distill.corpus",
    "teacher_vocabulary": "sentvec.distill.corpus",
    "DEFAULT_MAX_SENTENCES": "sentvec.distill.corpus",
    "DEFAULT_WHITENING_SENTENCES": "sentvec.distill.corpus",
    "RowPlan": "sentvec.distill.vocabulary",
    "plan_rows": "sentvec.distill.vocabulary",
    "parse_vocabulary": "sentvec.distill.vocabulary",
    "corpus_words": "sentvec.distill.vocabulary",
    "corpus_bigrams": "sentvec.distill.vocabulary",
}

__all__, __getattr__, __dir__ = attach(__name__, _NAMES)


class _CallablePackage(types.ModuleType):
    """This package, callable as :func:`distill`."""

    def __call__(self, *args: Any, **kwargs: Any) -> DistilledModel:
        from sentvec.distill.run import distill

        return distill(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage

if TYPE_CHECKING:  # pragma: no cover - the same names, for IDEs and type checkers
    from sentvec.distill.config import (  # noqa: F401
        DEFAULT_BIGRAM_WEIGHT,
        DEFAULT_BIGRAMS,
        DEFAULT_DIM,
        DEFAULT_LAYERS,
        DEFAULT_ROW_POOLING,
        DEFAULT_VOCABULARY,
        DEFAULT_WEIGHTING,
        STORED_DTYPES,
        DistillConfig,
    )
    from sentvec.distill.corpus import (  # noqa: F401
        DEFAULT_MAX_SENTENCES,
        DEFAULT_WHITENING_SENTENCES,
        CorpusCounts,
        CorpusPassProcess,
        WordTokenCache,
        check_whitening_corpus,
        corpus_lines,
        corpus_pass,
        count_corpus_tokens,
        teacher_vocabulary,
    )
    from sentvec.distill.model import DISTILL_RECORD, DistilledModel, model_card  # noqa: F401
    from sentvec.distill.reduction import (  # noqa: F401
        WHITEN_MODES,
        fit_rows,
        pca_rows,
        whiten_token_rows,
    )
    from sentvec.distill.rows import ROW_POOLINGS, rows_beside, token_rows  # noqa: F401
    from sentvec.distill.run import distill  # noqa: F401
    from sentvec.distill.teacher import (  # noqa: F401
        check_teacher,
        load_teacher,
        teacher_format_name,
    )
    from sentvec.distill.vocabulary import (  # noqa: F401
        RowPlan,
        corpus_bigrams,
        corpus_words,
        parse_vocabulary,
        plan_rows,
    )
    from sentvec.distill.weights import (  # noqa: F401
        DEFAULT_SIF_A,
        DEFAULT_ZIPF_A,
        WEIGHTINGS,
        ZIPF_SIF_COEFFICIENT,
        token_weights,
        zipf_weights,
    )
