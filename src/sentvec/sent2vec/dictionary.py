"""The Sent2Vec vocabulary, built and ordered exactly as the official sent2vec code does it.

Facts reproduced from epfml/sent2vec (``src/dictionary.cc``, ``src/model.cc``):

* **Tokens.** The corpus is read byte by byte; the separators are space, ``\\n``, ``\\r``, ``\\t``,
  ``\\v``, ``\\f`` and NUL. Each newline yields the end-of-sentence word ``</s>`` after the
  line's words, so ``</s>`` is an ordinary vocabulary word whose count is the number of newlines,
  and ``ntokens`` counts it. A last line without a newline gets no ``</s>``.
* **Words and labels.** A token starting with ``__label__`` is a *label*, not a word; labels
  sort after all words, are cut with ``minCountLabel``, and are never sentence features.
* **Order.** Entries are kept in first-occurrence order, ``<PLACEHOLDER>`` (count 10^18) is
  appended, the list is sorted with ``std::sort`` by (type, count descending), entries below
  ``minCount`` are removed, and when ``maxVocabSize`` is set the list is sorted again and cut.
  ``std::sort`` is not stable: ties are ordered by libstdc++'s introsort, emulated in
  :mod:`sentvec.sent2vec._stdsort`. The placeholder therefore gets id 0; its count is then
  reset to 0. (If more than 22.5 million distinct tokens are seen while reading, the official
  code prunes rare ones on the fly; that is reproduced too.)
* **Hashing.** The row of the n-gram starting at ``ids[i]`` is
  ``nwords + h mod bucket`` with ``h = ids[i]``, then ``h = h * 116049371 + ids[j]`` in
  unsigned 64-bit arithmetic (wrapping), computed on the ids left after out-of-vocabulary
  tokens have been dropped. Repeats are kept.

Only NumPy is imported here; the sort is compiled with Numba on first use for large vocabularies.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from sentvec.sent2vec._stdsort import std_sort_order
from sentvec.sent2vec.corpus_files import iter_line_blocks
from sentvec.sent2vec.corpus_files import open_binary as open_binary

#: End-of-sentence word added for every newline (official ``Dictionary::EOS``).
EOS = "</s>"
#: First vocabulary entry of every sent2vec model; replaces the target word in its context.
PLACEHOLDER = "<PLACEHOLDER>"
#: Official default label prefix (``-label``).
LABEL_PREFIX = "__label__"
#: Multiplier of the official n-gram hash (``Dictionary::addNgrams``).
NGRAM_HASH_MULTIPLIER = 116049371
#: The official hash table size; reading prunes once more than 0.75 of it is filled.
MAX_VOCAB_SIZE = 30_000_000
#: Count the official code gives ``<PLACEHOLDER>`` while sorting (reset to 0 afterwards).
PLACEHOLDER_SORT_COUNT = 10**18
#: Size of the official negative-sampling table (``NEGATIVE_TABLE_SIZE``).
NEGATIVE_TABLE_SIZE = 10_000_000

# bytes.split() splits on b" \t\n\r\x0b\x0c"; the official reader also splits on NUL.
_NUL = b"\x00"
_EOS_B = EOS.encode()
_PLACEHOLDER_B = PLACEHOLDER.encode()
_SEPARATORS_RE = re.compile("[ \t\n\r\x0b\x0c\x00]+")
_TYPE_WORD, _TYPE_LABEL = 0, 1
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


def split_tokens(text: str) -> list[str]:
    """Split ``text`` into tokens with the official reader's separators.

    The separators are space, ``\\n``, ``\\r``, ``\\t``, ``\\v``, ``\\f`` and NUL, and nothing
    else (unlike :meth:`str.split`, non-breaking and other Unicode spaces stay inside tokens).
    A newline is treated as one more separator here; the official reader would end the sentence
    there (see :meth:`sentvec.sent2vec.model.Sent2Vec.encode`).
    """
    return [t for t in _SEPARATORS_RE.split(text) if t]


def _sort_keys(counts: np.ndarray, types: np.ndarray) -> np.ndarray:
    # comparator: type ascending, then count descending  ->  key = type * 2**61 - count
    return types.astype(np.int64) * (1 << 61) - counts.astype(np.int64)


class Dictionary:
    """Sent2Vec vocabulary: word ids in the official order, counts and n-gram hashing.

    Parameters
    ----------
    words : sequence of str
        Word of each id (``nwords`` entries). Bytes that are not UTF-8 are kept as lone
        surrogates (``errors="surrogateescape"``) so files round-trip byte for byte.
    counts : array-like of int, shape (nwords,)
        Corpus count of each word (0 for ``<PLACEHOLDER>``).
    ntokens : int
        Tokens read from the corpus, as the official code counts them (every token including
        ``</s>`` and labels).
    bucket : int
        Number of hash buckets for word n-grams (rows after the ``nwords`` word rows).
    word_ngrams : int
        Longest word n-gram used as a feature (2 = unigrams and bigrams).
    labels, label_counts : sequence, optional
        Label entries (tokens with the label prefix) that follow the words in the official file;
        empty for every normal sent2vec model.
    pruneidx_size : int, default -1
        Official ``pruneidx_size_`` field (-1: no pruning; only quantized models prune).
    prune_pairs : ndarray of shape (k, 2), int32, optional
        Official pruning map, kept only so a file round-trips unchanged.

    Attributes
    ----------
    words : list of str
        ``words[i]`` is the word with id ``i`` (decoded on first use for a dictionary made
        :meth:`from_word_bytes`, as :func:`~sentvec.sent2vec.binfile.read_bin` makes them).
    counts : ndarray of shape (nwords,), int64
    nwords, nlabels, ntokens, bucket, word_ngrams : int

    Raises
    ------
    ValueError
        Counts that do not match the words or labels, or a header value outside what the
        official ``.bin`` can hold: ``bucket`` in 0..2^31-1, ``word_ngrams`` in 1..2^31-1
        (``> 1`` needs ``bucket > 0``), ``ntokens`` in 0..2^63-1, ``pruneidx_size`` >= -1.
    TypeError
        A word that is not a ``str``.
    """

    def __init__(
        self,
        words: Iterable[str],
        counts: Any,
        *,
        ntokens: int,
        bucket: int,
        word_ngrams: int,
        labels: Iterable[str] = (),
        label_counts: Any = (),
        pruneidx_size: int = -1,
        prune_pairs: Any = None,
    ) -> None:
        self._words: list[str] | None = list(words)
        if not set(map(type, self._words)) <= {str}:  # one C-level pass (1 M words: 30 ms)
            for w in self._words:
                if not isinstance(w, str):
                    raise TypeError(f"words must be str, got {type(w).__name__}: {w!r:.60}")
        self._word_bytes: tuple[np.ndarray, np.ndarray] | None = None
        self._setup(
            len(self._words),
            counts,
            ntokens=ntokens,
            bucket=bucket,
            word_ngrams=word_ngrams,
            labels=labels,
            label_counts=label_counts,
            pruneidx_size=pruneidx_size,
            prune_pairs=prune_pairs,
        )

    @classmethod
    def from_word_bytes(
        cls,
        wbytes: np.ndarray,
        offsets: np.ndarray,
        counts: Any,
        *,
        ntokens: int,
        bucket: int,
        word_ngrams: int,
        labels: Iterable[str] = (),
        label_counts: Any = (),
        pruneidx_size: int = -1,
        prune_pairs: Any = None,
    ) -> Dictionary:
        """A dictionary whose words are given as UTF-8 bytes end to end, as a ``.bin`` holds them.

        No Python ``str`` is made: :attr:`words` (and :attr:`word2id`) are decoded on first use
        (``errors="surrogateescape"``), while inference only needs the bytes
        (:meth:`word_bytes`), :attr:`eos_id` and :attr:`placeholder_id`, which are found in the
        bytes. For the 1 M words of the published models this saves building 1 M ``str``
        objects (about 190 MB) at load.

        Parameters
        ----------
        wbytes : ndarray of shape (total,), uint8
            The words' bytes end to end (no separators; NUL is not allowed in a word).
        offsets : ndarray of shape (nwords + 1,), int64
            Word ``i`` is ``wbytes[offsets[i]:offsets[i + 1]]``; ``offsets[0] == 0`` and
            ``offsets[-1] == total``, non-decreasing.
        counts, ntokens, bucket, word_ngrams, labels, label_counts, pruneidx_size, prune_pairs
            As for :class:`Dictionary`.

        Returns
        -------
        Dictionary

        Raises
        ------
        ValueError
            If the arrays do not fit together (shapes, dtypes, offsets out of order).
        """
        wb = np.asarray(wbytes)
        offs = np.asarray(offsets)
        if wb.ndim != 1 or wb.dtype != np.uint8:
            raise ValueError(
                f"wbytes must be a 1-D uint8 array, got {wb.dtype} of shape {wb.shape}"
            )
        if offs.ndim != 1 or offs.dtype != np.int64 or offs.shape[0] < 1:
            raise ValueError(
                f"offsets must be a 1-D int64 array of nwords + 1 entries, got "
                f"{offs.dtype} of shape {offs.shape}"
            )
        if offs[0] != 0 or offs[-1] != wb.shape[0] or (offs[1:] < offs[:-1]).any():
            raise ValueError(f"offsets must rise from 0 to len(wbytes) = {wb.shape[0]}")
        self = cls.__new__(cls)
        self._words = None
        self._word_bytes = (wb, offs)
        self._setup(
            offs.shape[0] - 1,
            counts,
            ntokens=ntokens,
            bucket=bucket,
            word_ngrams=word_ngrams,
            labels=labels,
            label_counts=label_counts,
            pruneidx_size=pruneidx_size,
            prune_pairs=prune_pairs,
        )
        return self

    def _setup(
        self,
        nwords: int,
        counts: Any,
        *,
        ntokens: int,
        bucket: int,
        word_ngrams: int,
        labels: Iterable[str],
        label_counts: Any,
        pruneidx_size: int,
        prune_pairs: Any,
    ) -> None:
        self._nwords = int(nwords)
        self.counts: np.ndarray = np.asarray(counts, dtype=np.int64).reshape(-1)
        self.labels: list[str] = list(labels)
        self.label_counts: np.ndarray = np.asarray(label_counts, dtype=np.int64).reshape(-1)
        if self._nwords != self.counts.shape[0]:
            raise ValueError(f"{self._nwords} words but {self.counts.shape[0]} counts")
        if len(self.labels) != self.label_counts.shape[0]:
            raise ValueError(f"{len(self.labels)} labels but {self.label_counts.shape[0]} counts")
        # the official .bin holds bucket and word_ngrams as int32 and ntokens as int64
        if not 0 <= int(bucket) <= _INT32_MAX:
            raise ValueError(
                f"bucket={bucket!r} is invalid; expected an integer in 0..{_INT32_MAX}"
            )
        if not 1 <= int(word_ngrams) <= _INT32_MAX:
            raise ValueError(
                f"word_ngrams={word_ngrams!r} is invalid; expected an integer in 1..{_INT32_MAX}"
            )
        if int(word_ngrams) > 1 and int(bucket) == 0:
            raise ValueError(f"word_ngrams={word_ngrams} needs bucket > 0 (got bucket=0)")
        if not 0 <= int(ntokens) <= _INT64_MAX:
            raise ValueError(
                f"ntokens={ntokens!r} is invalid; expected an integer in 0..{_INT64_MAX}"
            )
        if not -1 <= int(pruneidx_size) <= _INT64_MAX:
            raise ValueError(
                f"pruneidx_size={pruneidx_size!r} is invalid; expected an integer "
                f"in -1..{_INT64_MAX}"
            )
        self.ntokens = int(ntokens)
        self.bucket = int(bucket)
        self.word_ngrams = int(word_ngrams)
        self.pruneidx_size = int(pruneidx_size)
        self.prune_pairs = (
            np.zeros((0, 2), dtype=np.int32)
            if prune_pairs is None
            else np.asarray(prune_pairs, dtype=np.int32).reshape(-1, 2)
        )
        self._word2id: dict[str, int] | None = None
        self._table: np.ndarray | None = None

    # ------------------------------------------------------------------ basic queries
    @property
    def words(self) -> list[str]:
        """``words[i]`` is the word with id ``i`` (decoded on first use when the dictionary was
        made :meth:`from_word_bytes`)."""
        if self._words is None:
            self._words = decode_words(*self.word_bytes())
        return self._words

    @property
    def nwords(self) -> int:
        """Number of words (rows ``0 .. nwords-1`` of the input matrix)."""
        return self._nwords

    @property
    def nlabels(self) -> int:
        """Number of label entries (0 for normal sent2vec models)."""
        return len(self.labels)

    def __len__(self) -> int:
        return self._nwords

    def __repr__(self) -> str:
        return (
            f"Dictionary(nwords={self.nwords}, ntokens={self.ntokens}, bucket={self.bucket}, "
            f"word_ngrams={self.word_ngrams})"
        )

    @property
    def word2id(self) -> dict[str, int]:
        """Mapping word -> id (built on first use). A duplicated word maps to its last id,
        as the official hash table does."""
        if self._word2id is None:
            self._word2id = {w: i for i, w in enumerate(self.words)}
        return self._word2id

    def get_id(self, word: str) -> int:
        """Id of ``word``, or -1 if it is not a vocabulary word (labels are not words)."""
        return self.word2id.get(word, -1)

    @property
    def placeholder_id(self) -> int:
        """Id of ``<PLACEHOLDER>`` (0 in every official sent2vec model), or -1 if absent."""
        if self._words is None:  # in the bytes, without decoding every word
            wb, offs = self.word_bytes()
            if self._nwords and bytes(wb[offs[0] : offs[1]]) == _PLACEHOLDER_B:
                return 0
            return _last_id_of(wb, offs, _PLACEHOLDER_B)
        return 0 if self.words and self.words[0] == PLACEHOLDER else self.get_id(PLACEHOLDER)

    @property
    def eos_id(self) -> int:
        """Id of the end-of-sentence word ``</s>``, or -1 if absent."""
        if self._words is None:  # in the bytes, without decoding every word
            return _last_id_of(*self.word_bytes(), _EOS_B)
        if self._word2id is None:  # one C-level scan instead of building the whole mapping
            words = self.words
            if EOS not in words:
                return -1
            return len(words) - 1 - words[::-1].index(EOS)  # the last one, as ``word2id``
        return self.get_id(EOS)

    def word_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """The words' UTF-8 bytes (``errors="surrogateescape"``) end to end, and where each starts.

        Returns
        -------
        wbytes : ndarray of shape (total,), uint8
        offsets : ndarray of shape (nwords + 1,), int64
            Word ``i`` is ``wbytes[offsets[i]:offsets[i + 1]]``.
        """
        if self._word_bytes is None:
            enc = [w.encode("utf-8", "surrogateescape") for w in self.words]
            offsets = np.zeros(len(enc) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in enc], out=offsets[1:])
            wbytes = np.frombuffer(b"".join(enc), dtype=np.uint8) if enc else np.zeros(0, np.uint8)
            self._word_bytes = (wbytes, offsets)
        return self._word_bytes

    def word_table(self) -> np.ndarray:
        """Hash table of the word ids over their bytes, for compiled lookups (built on first use).

        fastText's ``Dictionary::word2int_`` design: open addressing with linear probing over
        the FNV-1a hash of the word's UTF-8 bytes (:mod:`sentvec.sent2vec._wordtable`, Numba);
        a duplicated word maps to its last id, as officially.

        Returns
        -------
        ndarray of shape (capacity,), int32
            ``capacity`` is the smallest power of two >= max(16, 2 * nwords + 1). A slot holds
            -1 (empty), -2 (the id :attr:`eos_id`, so lookups can tell ``</s>`` apart) or a word
            id.
        """
        if self._table is None:
            from sentvec.sent2vec._wordtable import build_table

            wbytes, offsets = self.word_bytes()
            self._table = build_table(wbytes, offsets, self.eos_id)
        return self._table

    def ids(self, tokens: Iterable[str]) -> np.ndarray:
        """Ids of the in-vocabulary ``tokens``, in order; unknown tokens are dropped.

        A plain lookup: repeats are kept, and a literal ``</s>`` maps to the EOS id (the
        official reader would end the sentence there; ``Sent2Vec.encode`` ignores it).

        Returns
        -------
        ndarray of shape (k,), int32

        Raises
        ------
        TypeError
            If ``tokens`` is a single string.
        """
        if isinstance(tokens, (str, bytes)):
            raise TypeError(
                "tokens must be a sequence of str, not a single string; split it "
                "first (split_tokens)"
            )
        get = self.word2id.get
        found = [i for i in (get(t, -1) for t in tokens) if i >= 0]
        return np.asarray(found, dtype=np.int32)

    def feature_rows(self, ids: np.ndarray) -> np.ndarray:
        """Input-matrix rows of a sentence: its word ids, then its hashed n-grams.

        Parameters
        ----------
        ids : ndarray of shape (k,), int
            In-vocabulary word ids (out-of-vocabulary tokens already dropped).

        Returns
        -------
        ndarray of shape (k + n_ngrams,), int64
            The official feature list (``Dictionary::addNgrams(line, wordNgrams)``).
        """
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        return np.concatenate([ids, ngram_rows(ids, self.nwords, self.bucket, self.word_ngrams)])

    # ------------------------------------------------------------------ training tables
    def keep_probabilities(self, t: float) -> np.ndarray:
        """Probability of keeping each word as a training target (official discard table).

        ``p = sqrt(t / f) + t / f`` with ``f = count / ntokens`` computed in float32, exactly as
        ``Dictionary::initTableDiscard`` (paper §2.1 writes min(1, ·); a value >= 1 always keeps).
        The placeholder's entry uses the count 10^18 it has when the official table is built.

        Returns
        -------
        ndarray of shape (nwords,), float32
        """
        t = float(t)
        if not (t > 0 and np.isfinite(t)):
            raise ValueError(f"t={t!r} is invalid; expected a finite number > 0")
        counts = self.counts.copy()
        if self.placeholder_id == 0:
            counts[0] = PLACEHOLDER_SORT_COUNT
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            f = counts.astype(np.float32) / np.float32(self.ntokens)
            r = t / f.astype(np.float64)
            return (np.sqrt(r) + r).astype(np.float32)

    def negative_table(self, size: int = NEGATIVE_TABLE_SIZE) -> np.ndarray:
        """Unshuffled negative-sampling table: word ``i`` repeated in proportion to count^0.5.

        Built like ``Model::initTableNegatives``: ``z`` is the float32 running sum of
        ``count**0.5``, and word ``i`` fills ``ceil(float32(float32(c_i * size) / z))`` slots with
        ``c_i = float32(count_i**0.5)`` (the placeholder, count 0, gets none). The official code
        then shuffles it with each thread's RNG; so must the caller.

        Returns
        -------
        ndarray of shape (~size,), int32
        """
        size = int(size)
        if size < 1:
            raise ValueError(f"size={size!r} is invalid; expected an integer >= 1")
        roots = np.sqrt(self.counts.astype(np.float64))
        z = np.zeros(1, dtype=np.float32)
        for r in roots.tolist():  # sequential float32 accumulation of double terms
            z[0] = float(z[0]) + r
        c = roots.astype(np.float32)
        q = (c * np.float32(size)) / z[0]
        reps = np.ceil(q.astype(np.float64)).astype(np.int64)
        reps[q <= 0] = 0
        return np.repeat(np.arange(self.nwords, dtype=np.int32), reps)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_corpus(
        cls,
        path_or_lines: str | os.PathLike[str] | Iterable[str | bytes],
        *,
        min_count: int = 5,
        min_count_label: int = 0,
        max_vocab_size: int | None = None,
        bucket: int = 2_000_000,
        word_ngrams: int = 2,
        label_prefix: str = LABEL_PREFIX,
    ) -> Dictionary:
        """Count a corpus and build the vocabulary in the official order.

        Parameters
        ----------
        path_or_lines : path or iterable of str/bytes
            A text file (one sentence per line; ``.xz``, ``.gz`` and ``.bz2`` are decompressed),
            read as a stream, or an iterable of lines (each item is one line; a missing final
            ``"\\n"`` is added, so every item ends with ``</s>``).
        min_count : int, default 5
            Words seen fewer times are dropped (``-minCount``).
        min_count_label : int, default 0
            Same for labels (``-minCountLabel``; labels are rare in sent2vec corpora).
        max_vocab_size : int or None
            Keep at most this many entries, ``<PLACEHOLDER>`` included (``-maxVocabSize``).
        bucket, word_ngrams : int
            Stored for hashing (``-bucket``, ``-wordNgrams``).
        label_prefix : str, default "__label__"
            Tokens starting with it are labels (``-label``).

        Returns
        -------
        Dictionary

        Raises
        ------
        FileNotFoundError
            If the path does not exist.
        ValueError
            If a parameter is invalid, or no word reaches ``min_count`` (the vocabulary would hold
            only ``<PLACEHOLDER>``).
        """
        for name, v, lo in (
            ("min_count", min_count, 0),
            ("min_count_label", min_count_label, 0),
            ("bucket", bucket, 0),
            ("word_ngrams", word_ngrams, 1),
        ):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValueError(f"{name}={v!r} is invalid; expected an integer >= {lo}")
        if max_vocab_size is not None and (
            isinstance(max_vocab_size, bool)
            or not isinstance(max_vocab_size, (int, np.integer))
            or max_vocab_size < 1
        ):
            raise ValueError(
                f"max_vocab_size={max_vocab_size!r} is invalid; expected None or an integer >= 1"
            )
        prefix = label_prefix.encode("utf-8")
        counter, ntokens = _count_tokens(iter_line_blocks(path_or_lines), prefix)
        keys = list(counter)
        counts = np.fromiter(counter.values(), dtype=np.int64, count=len(keys))
        keys.append(_PLACEHOLDER_B)  # appended even if the corpus contains it, as officially
        counts = np.append(counts, np.int64(PLACEHOLDER_SORT_COUNT))
        types = np.array(
            [_TYPE_LABEL if k.startswith(prefix) else _TYPE_WORD for k in keys], dtype=np.int8
        )
        idx = vocabulary_order(counts, types, min_count, min_count_label, max_vocab_size)
        return cls._from_order(
            [keys[i] for i in idx],
            counts[idx],
            types[idx],
            ntokens=ntokens,
            bucket=bucket,
            word_ngrams=word_ngrams,
            min_count=min_count,
        )

    @classmethod
    def _from_order(
        cls,
        keys: list[bytes],
        counts: np.ndarray,
        types: np.ndarray,
        *,
        ntokens: int,
        bucket: int,
        word_ngrams: int,
        min_count: int,
    ) -> Dictionary:
        """The dictionary of the entries ``vocabulary_order`` picked (bytes, counts, types)."""
        nwords = int((types == _TYPE_WORD).sum())
        if nwords <= 1:
            raise ValueError(
                f"empty vocabulary: no word occurs at least min_count={min_count} "
                f"times in {ntokens} tokens"
            )
        counts = counts.copy()
        counts[0] = 0  # placeholder (official: count reset after the discard table is built)
        dec = [k.decode("utf-8", "surrogateescape") for k in keys]
        return cls(
            dec[:nwords],
            counts[:nwords],
            ntokens=ntokens,
            bucket=bucket,
            word_ngrams=word_ngrams,
            labels=dec[nwords:],
            label_counts=counts[nwords:],
        )


def vocabulary_order(
    counts: np.ndarray,
    types: np.ndarray,
    min_count: int,
    min_count_label: int,
    max_vocab_size: int | None = None,
) -> np.ndarray:
    """Entries of the official vocabulary, in id order, as positions in the reading order.

    ``Dictionary::threshold`` (std::sort by type, then count descending; entries below
    ``min_count`` / ``min_count_label`` dropped) and, with ``max_vocab_size``, the second sort
    and cut. ``counts`` and ``types`` (0 word, 1 label) are in first-occurrence order with
    ``<PLACEHOLDER>`` appended.

    Returns
    -------
    ndarray of shape (kept,), int64
    """
    idx = _kept_order(counts, types, min_count, min_count_label)
    if max_vocab_size is not None and max_vocab_size < len(idx):
        idx = idx[std_sort_order(_sort_keys(counts[idx], types[idx]))[:max_vocab_size]]
    return idx


def decode_words(wbytes: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Decode words given as bytes end to end (see :meth:`Dictionary.from_word_bytes`).

    One ``bytes.decode`` (UTF-8, ``errors="surrogateescape"``) of all the words joined by NULs,
    then a split on NUL: UTF-8 decoding resynchronises at every NUL, so this equals decoding
    word by word, invalid bytes included.

    Returns
    -------
    list of str, ``len(offsets) - 1`` entries
    """
    n = offsets.shape[0] - 1
    if n <= 0:
        return []
    joined = np.insert(np.asarray(wbytes, dtype=np.uint8), offsets[1:], 0)  # NUL after each
    words = joined.tobytes().decode("utf-8", "surrogateescape").split("\x00")
    words.pop()  # after the last NUL
    return words


def _last_id_of(wbytes: np.ndarray, offsets: np.ndarray, word: bytes) -> int:
    """Id of the last word equal to ``word`` (bytes), or -1: a vectorised scan of the bytes."""
    lens = offsets[1:] - offsets[:-1]
    cand = np.flatnonzero(lens == len(word))
    if cand.size == 0:
        return -1
    if word:
        rows = wbytes[offsets[cand, None] + np.arange(len(word))]
        cand = cand[(rows == np.frombuffer(word, dtype=np.uint8)).all(axis=1)]
    return int(cand[-1]) if cand.size else -1


# ---------------------------------------------------------------------- hashing
def ngram_rows(ids: np.ndarray, nwords: int, bucket: int, n: int) -> np.ndarray:
    """Input-matrix rows of the word n-grams (2 <= length <= n) of one sentence.

    Official order: for each start position i, the n-grams starting at i by increasing length.
    ``h`` starts at ``ids[i]`` and becomes ``h * 116049371 + ids[j]`` in uint64 arithmetic
    (wrapping on overflow, as C++ ``uint64_t``); the row is ``nwords + h mod bucket``.

    Parameters
    ----------
    ids : ndarray of shape (k,), int
        In-vocabulary ids of the sentence (out-of-vocabulary tokens already dropped).
    nwords, bucket, n : int

    Returns
    -------
    ndarray of shape (m,), int64
    """
    ids = np.asarray(ids).reshape(-1).astype(np.uint64)
    k = ids.shape[0]
    if n < 2 or k < 2:
        return np.zeros(0, dtype=np.int64)
    if bucket <= 0:
        raise ValueError("bucket must be > 0 to hash word n-grams")
    mult = np.uint64(NGRAM_HASH_MULTIPLIER)
    width = n - 1
    table = np.full((k, width), -1, dtype=np.int64)
    h = ids.copy()
    with np.errstate(over="ignore"):
        for step in range(1, n):
            valid = k - step
            if valid <= 0:
                break
            h = h[:valid] * mult + ids[step:]
            table[:valid, step - 1] = (h % np.uint64(bucket)).astype(np.int64)
    flat = table.reshape(-1)
    return np.int64(nwords) + flat[flat >= 0]


def bigram_rows(ids: np.ndarray, nwords: int, bucket: int) -> np.ndarray:
    """Rows ``nwords + (ids[i] * 116049371 + ids[i+1]) mod bucket`` of adjacent id pairs.

    Parameters
    ----------
    ids : ndarray of shape (k,), int
        In-vocabulary ids of one sentence, in order, out-of-vocabulary tokens already dropped
        (so the neighbours of a dropped token form a bigram, as in the official code).

    Returns
    -------
    ndarray of shape (max(k - 1, 0),), int64
    """
    return ngram_rows(ids, nwords, bucket, 2)


def _count_tokens(blocks: Iterable[bytes], label_prefix: bytes) -> tuple[Counter, int]:
    """Count tokens in first-occurrence order (with ``</s>`` per newline), pruning like the
    official reader when more than 0.75 * MAX_VOCAB_SIZE distinct tokens are held."""
    counter: Counter = Counter()
    ntokens = 0
    limit = 0.75 * MAX_VOCAB_SIZE
    min_threshold = 1
    lines_before = 0
    warned_ff = False
    eos = b" " + _EOS_B + b" "
    for block in blocks:
        if _NUL in block:
            block = block.replace(_NUL, b" ")
        ff = -1 if warned_ff else block.find(b"\xff")
        if ff >= 0:
            lineno = lines_before + block.count(b"\n", 0, ff) + 1
            warnings.warn(
                f"corpus line {lineno} contains byte 0xFF; the official reader stops "
                "reading the corpus at that byte, sentvec reads on",
                stacklevel=3,
            )
            warned_ff = True
        lines_before += block.count(b"\n")
        # every newline becomes the word </s> after its line's words, in reading order
        toks = block.replace(b"\n", eos).split()
        ntokens += len(toks)
        if len(counter) + len(toks) <= limit:
            counter.update(toks)
            continue
        for tok in toks:  # token by token near the pruning limit, exactly as officially
            counter[tok] += 1
            if len(counter) > limit:
                min_threshold += 1
                counter = _prune_counter(counter, min_threshold, label_prefix)
    return counter, ntokens


def _prune_counter(counter: Counter, t: int, label_prefix: bytes) -> Counter:
    keys = list(counter)
    counts = np.fromiter(counter.values(), dtype=np.int64, count=len(keys))
    types = np.array(
        [_TYPE_LABEL if k.startswith(label_prefix) else _TYPE_WORD for k in keys], dtype=np.int8
    )
    keys, counts, _ = _threshold(keys, counts, types, t, t)
    return Counter(dict(zip(keys, counts.tolist(), strict=True)))


def _threshold(keys: list, counts: np.ndarray, types: np.ndarray, t: int, tl: int):
    """``Dictionary::threshold``: std::sort by (type, -count), then drop rare entries (stable)."""
    idx = _kept_order(counts, types, t, tl)
    return [keys[i] for i in idx], counts[idx], types[idx]


def _kept_order(counts: np.ndarray, types: np.ndarray, t: int, tl: int) -> np.ndarray:
    order = std_sort_order(_sort_keys(counts, types))
    keep = np.where(types[order] == _TYPE_WORD, counts[order] >= t, counts[order] >= tl)
    return order[keep]
