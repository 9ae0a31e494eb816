"""Deprecated: the corpus pass of ``sentvec distill`` lives in :mod:`sentvec.distill.corpus`.

This module re-exports its public names for one release.
"""

from sentvec.distill.corpus import (
    DEFAULT_MAX_SENTENCES,
    DEFAULT_WHITENING_SENTENCES,
    UNUSED_TOKEN_PATTERN,
    CorpusCounts,
    CorpusPassProcess,
    Vocabulary,
    WordTokenCache,
    check_whitening_corpus,
    corpus_lines,
    corpus_pass,
    corpus_pass_worker,
    count_corpus_tokens,
    teacher_vocabulary,
)

__all__ = [
    "CorpusCounts",
    "WordTokenCache",
    "count_corpus_tokens",
    "corpus_lines",
    "check_whitening_corpus",
    "teacher_vocabulary",
    "corpus_pass",
    "corpus_pass_worker",
    "CorpusPassProcess",
    "Vocabulary",
    "UNUSED_TOKEN_PATTERN",
    "DEFAULT_MAX_SENTENCES",
    "DEFAULT_WHITENING_SENTENCES",
]
