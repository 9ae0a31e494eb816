"""Deprecated: the extra rows of ``sentvec distill`` (corpus words, bigrams) live in
:mod:`sentvec.distill.vocabulary`.

This module re-exports its public names for one release.
"""

from sentvec.distill.vocabulary import (
    RowPlan,
    corpus_bigrams,
    corpus_words,
    extend_wordpiece,
    flatten_sample,
    parse_vocabulary,
    plan_rows,
    retokenize,
    split_sample,
    with_bigram_rows,
)

__all__ = [
    "corpus_words",
    "retokenize",
    "extend_wordpiece",
    "corpus_bigrams",
    "with_bigram_rows",
    "parse_vocabulary",
    "flatten_sample",
    "split_sample",
    "RowPlan",
    "plan_rows",
]
