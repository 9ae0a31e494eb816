"""Tokenizing and batching for :class:`sentvec.TransformerEncoder` (torch-free).

One lock per tokenizer object (a fast tokenizer keeps each call's truncation settings on its
shared backend), the check that rejects a lone surrogate before the tokenizer sees it, and the
split of a chunk's sentences into batches of similar token length.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

__all__ = ["length_sorted_batches"]

#: Batches of short sentences are enlarged up to a budget of ``batch_size * 32`` tokens (padding
#: included) and at most ``4 * batch_size`` sentences; a batch never holds fewer than
#: ``batch_size`` sentences (except the last), so long inputs use no more memory than usual.
_TOKENS_PER_SLOT = 32
_MAX_BATCH_GROWTH = 4


#: One lock per tokenizer object. A Hugging Face fast tokenizer keeps each call's truncation
#: and padding settings on its shared backend (``set_truncation_and_padding`` before the
#: encoding), so two threads that tokenize with different settings get each other's: the server
#: counts tokens untruncated on its event loop while its encoding thread truncates, and a long
#: input was then encoded whole (past ``max_length``) or counted as truncated.
_TOKENIZER_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_TOKENIZER_LOCKS_GUARD = threading.Lock()


def _tokenizer_lock(tokenizer: Any) -> threading.Lock:
    """The lock every call of ``tokenizer`` by a :class:`TransformerEncoder` holds (shared by
    all encoders over the same tokenizer, e.g. those of :meth:`TransformerEncoder.with_options`)."""
    with _TOKENIZER_LOCKS_GUARD:
        lock = _TOKENIZER_LOCKS.get(tokenizer)
        if lock is None:
            lock = _TOKENIZER_LOCKS[tokenizer] = threading.Lock()
        return lock


def _check_unicode(unique: list[str], items: list[str]) -> None:
    """Raise ValueError for the first text holding a lone surrogate (not encodable as UTF-8).

    Python represents undecodable bytes as lone surrogates (``errors="surrogateescape"``, used
    for command-line arguments); the tokenizers accept only real text.
    """
    for s in unique:
        if s.isascii():
            continue
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"sentence {items.index(s)} holds {s[exc.start]!r} at character {exc.start}, a "
                "lone surrogate, not text: it usually stands for a byte that is not valid UTF-8 "
                "(e.g. Latin-1 input); decode the input with its real encoding, or with "
                "errors='replace'"
            ) from None


def length_sorted_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Split positions into batches of similar token length, longest first.

    Sorting by token count (not characters) keeps padding to a few percent; batches of short
    sentences grow up to the token budget (see ``_TOKENS_PER_SLOT``).
    """
    order = np.argsort(-lengths, kind="stable")
    budget = batch_size * _TOKENS_PER_SLOT
    cap = batch_size * _MAX_BATCH_GROWTH
    batches, start, n = [], 0, len(order)
    while start < n:
        longest = int(lengths[order[start]])
        size = max(batch_size, min(cap, budget // max(longest, 1)))
        batches.append(order[start : start + size])
        start += size
    return batches
