"""Corpus streaming for the Sent2Vec trainer: text -> int32 word ids on disk, once.

The corpus is read as a byte stream in blocks of whole lines (16 MiB), never held in memory, and
tokenized and looked up by a compiled loop (no Python work per token). Tokens are split exactly
as the official reader (and :mod:`sentvec.sent2vec.dictionary`) splits them: on space, ``\\t``,
``\\n``, ``\\r``, ``\\v``, ``\\f`` and NUL; other bytes, including non-UTF-8 ones, stay inside
tokens (vocabulary words keep such bytes as surrogate escapes). A sentence ends at a newline and
also at a literal ``</s>`` token (official ``Dictionary::getLine`` stops there); out-of-vocabulary
tokens are dropped before the sentence is stored, so their neighbours become adjacent, as in the
official trainer.

Only sentences with at least two in-vocabulary tokens can give a training target (the official
trainer returns early on shorter lines); shorter ones are counted and left out of the id file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from sentvec._tempdirs import make_run_dir
from sentvec.sent2vec._scan import close_sentence
from sentvec.sent2vec._wordtable import build_table, lookup
from sentvec.sent2vec._wordtable import is_sep as _is_sep
from sentvec.sent2vec.corpus_files import iter_line_blocks


def check_corpus(corpus: Any) -> Path | list[str]:
    """Validate the ``corpus`` argument of :func:`~sentvec.sent2vec.trainer.train_sent2vec`.

    Returns
    -------
    pathlib.Path or list of str
        The path of an existing file, or the lines of an in-memory corpus.

    Raises
    ------
    FileNotFoundError
        If a path is given and no such file exists.
    TypeError
        If ``corpus`` is neither a path nor a sequence of str (one-shot iterators are refused:
        the trainer reads the corpus twice).
    """
    if isinstance(corpus, (str, os.PathLike)):
        from sentvec._path_checks import check_input_file

        return check_input_file(corpus, what="corpus", regular=True)
    if isinstance(corpus, (bytes, bytearray)) or not isinstance(corpus, Sequence):
        raise TypeError(
            "corpus must be a path or a sequence of str lines (read twice), "
            f"got {type(corpus).__name__}"
        )
    lines = list(corpus)
    for i, s in enumerate(lines):
        if not isinstance(s, str):
            raise TypeError(f"corpus[{i}] must be str, got {type(s).__name__}")
    return lines


@dataclass
class CorpusIds:
    """A corpus converted to word ids, stored in a temporary directory.

    Attributes
    ----------
    tokens : ndarray of shape (n_tokens,), int32
        Memory-mapped ids of the stored sentences, one after the other.
    offsets : ndarray of shape (n_sentences + 1,), int64
        Sentence ``s`` is ``tokens[offsets[s]:offsets[s + 1]]``.
    raw_tokens : int
        Tokens read from the text (in and out of vocabulary, literal ``</s>`` excluded).
    n_lines : int
        Lines read.
    short_sentences : int
        Sentences left out because fewer than two of their tokens are in the vocabulary.
    directory : pathlib.Path
        Where the files live; :meth:`close` deletes it.
    """

    tokens: np.ndarray = field(repr=False)
    offsets: np.ndarray = field(repr=False)
    raw_tokens: int
    n_lines: int
    short_sentences: int
    directory: Path

    @property
    def n_sentences(self) -> int:
        """Stored sentences (each has at least two in-vocabulary tokens)."""
        return int(self.offsets.shape[0] - 1)

    @property
    def n_tokens(self) -> int:
        """In-vocabulary tokens of the stored sentences (the work of one epoch)."""
        return int(self.offsets[-1])

    @property
    def max_sentence_length(self) -> int:
        """Longest stored sentence, in tokens (0 if there is none)."""
        return int(np.diff(self.offsets).max()) if self.n_sentences else 0

    def close(self) -> None:
        """Release the memory map and delete the temporary directory."""
        self.tokens = np.zeros(0, dtype=np.int32)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> CorpusIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_BLOCK_BYTES = 16 << 20


@njit(cache=True, nogil=True)
def _convert_block(data, table, wbytes, woffsets, eos_id, out, lens, counters):
    """Tokenize ``data`` (whole lines); store sentences of >= 2 known ids.

    counters: [stored tokens, stored sentences, raw tokens, lines, short sentences].
    """
    nt = 0
    ns = 0
    raw = 0
    lines = 0
    short = 0
    start = 0  # first stored token of the current sentence
    i = 0
    end = data.shape[0]
    while i < end:
        b = data[i]
        if b == 10 or _is_sep(b):
            if b == 10:
                lines += 1
                ns, nt, start, short = close_sentence(lens, ns, nt, start, short)
            i += 1
            continue
        j = i
        while j < end and not _is_sep(data[j]):
            j += 1
        w = lookup(data, i, j, table, wbytes, woffsets, -1)
        if w == eos_id and w >= 0:  # a literal </s> ends the sentence (getLine)
            ns, nt, start, short = close_sentence(lens, ns, nt, start, short)
        else:
            raw += 1
            if w >= 0:
                out[nt] = w
                nt += 1
        i = j
    ns, nt, start, short = close_sentence(lens, ns, nt, start, short)  # last line, no newline
    if end > 0 and data[end - 1] != 10:
        lines += 1
    counters[0] = nt
    counters[1] = ns
    counters[2] = raw
    counters[3] = lines
    counters[4] = short


def convert_corpus(
    corpus: Path | list[str],
    words: Sequence[str],
    eos_id: int,
    *,
    directory: str | os.PathLike[str] | None = None,
) -> CorpusIds:
    """Stream the corpus once and write its in-vocabulary word ids to a temporary file.

    Tokenizing and vocabulary lookup run in a compiled loop over byte blocks, so no Python work
    is done per token.

    Parameters
    ----------
    corpus : pathlib.Path or list of str
        From :func:`check_corpus`.
    words : sequence of str
        Vocabulary words by id (non-UTF-8 bytes as surrogate escapes).
    eos_id : int
        Id of ``</s>`` (-1 if absent); a literal ``</s>`` token ends a sentence.
    directory : path-like, optional
        Parent of the temporary directory, a run folder ``sentvec-s2v-<pid>-...`` (default:
        the system temp directory); the run folders of dead runs found there are removed first
        (:func:`sentvec._tempdirs.make_run_dir`).

    Returns
    -------
    CorpusIds
        Memory-mapped ids; call :meth:`CorpusIds.close` (or use ``with``) to delete the files.
    """
    encoded = [w.encode("utf-8", "surrogateescape") for w in words]
    woffsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=woffsets[1:])
    wbytes = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    if wbytes.size == 0:
        wbytes = np.zeros(1, dtype=np.uint8)
    table = build_table(wbytes, woffsets, -1)
    tmp = make_run_dir("s2v", directory)
    tok_path = tmp / "tokens.int32"
    lengths: list[np.ndarray] = []
    total = raw = n_lines = short = 0
    counters = np.zeros(5, dtype=np.int64)
    try:
        with open(tok_path, "wb") as out:
            for block in iter_line_blocks(corpus, _BLOCK_BYTES):
                data = np.frombuffer(block, dtype=np.uint8)
                ids = np.empty(data.size // 2 + 1, dtype=np.int32)
                lens = np.empty(data.size // 4 + 1, dtype=np.int64)
                _convert_block(data, table, wbytes, woffsets, eos_id, ids, lens, counters)
                nt, ns = int(counters[0]), int(counters[1])
                out.write(ids[:nt].tobytes())
                lengths.append(lens[:ns].copy())
                total += nt
                raw += int(counters[2])
                n_lines += int(counters[3])
                short += int(counters[4])
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _corpus_ids(tmp, total, lengths, raw, n_lines, short)


def _corpus_ids(
    tmp: Path, total: int, lengths: list[np.ndarray], raw: int, n_lines: int, short: int
) -> CorpusIds:
    """Sentence offsets and the memory map of ``tmp/tokens.int32`` (``total`` ids)."""
    try:
        off = np.zeros(sum(x.size for x in lengths) + 1, dtype=np.int64)
        if off.size > 1:
            np.cumsum(np.concatenate(lengths), out=off[1:])
        # copy-on-write mapping: never written, but typed writable so the training kernel
        # compiles once for file-backed and in-memory corpora alike
        tokens = (
            np.memmap(tmp / "tokens.int32", dtype=np.int32, mode="c", shape=(total,))
            if total
            else np.zeros(0, dtype=np.int32)
        )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return CorpusIds(
        tokens=tokens,
        offsets=off,
        raw_tokens=raw,
        n_lines=n_lines,
        short_sentences=short,
        directory=tmp,
    )


def count_and_convert(
    corpus: Path | list[str],
    *,
    min_count: int,
    bucket: int,
    word_ngrams: int,
    max_vocab_size: int | None = None,
    directory: str | os.PathLike[str] | None = None,
) -> tuple[Any, CorpusIds]:
    """The vocabulary pass and the id conversion in one compiled read of the text.

    Equal to :meth:`Dictionary.from_corpus <sentvec.sent2vec.dictionary.Dictionary.from_corpus>`
    (labels cut at count 0) followed by :func:`convert_corpus`, which it falls back to when the
    corpus has more distinct tokens than the official reader holds before pruning. The text is
    tokenized once (:mod:`sentvec.sent2vec._scan`): the tokens' first-occurrence indices go to
    a temporary file and are mapped to word ids once the vocabulary is known.

    Returns
    -------
    (Dictionary, CorpusIds)

    Raises
    ------
    ValueError
        If no word reaches ``min_count``.
    """
    from sentvec.sent2vec import _scan
    from sentvec.sent2vec.dictionary import (
        _PLACEHOLDER_B,
        LABEL_PREFIX,
        PLACEHOLDER_SORT_COUNT,
        Dictionary,
        vocabulary_order,
    )

    tmp = make_run_dir("s2v", directory)
    try:
        stream_path = tmp / "stream.int32"
        with open(stream_path, "wb") as fh:
            try:
                scan = _scan.scan_corpus(corpus, fh)
            except _scan.TooManyTokens:
                scan = None
        if scan is None:  # the official reader prunes: the Python reader reproduces it
            shutil.rmtree(tmp, ignore_errors=True)
            d = Dictionary.from_corpus(
                corpus,
                min_count=min_count,
                min_count_label=0,
                max_vocab_size=max_vocab_size,
                bucket=bucket,
                word_ngrams=word_ngrams,
            )
            return d, convert_corpus(corpus, d.words, d.eos_id, directory=directory)
        nk = scan.nkeys
        counts = np.append(scan.counts, np.int64(PLACEHOLDER_SORT_COUNT))
        types = np.append(scan.labels(LABEL_PREFIX.encode()), np.int8(0))
        idx = vocabulary_order(counts, types, min_count, 0, max_vocab_size)
        d = Dictionary._from_order(
            [scan.key(i) if i < nk else _PLACEHOLDER_B for i in idx],
            counts[idx],
            types[idx],
            ntokens=scan.ntokens,
            bucket=bucket,
            word_ngrams=word_ngrams,
            min_count=min_count,
        )
        key2id = np.full(max(nk, 1), -1, dtype=np.int32)
        words = idx[: d.nwords]
        real = words < nk
        key2id[words[real]] = np.flatnonzero(real).astype(np.int32)
        ph = scan.find(_PLACEHOLDER_B)  # a literal <PLACEHOLDER> maps to id 0 if not kept
        if ph >= 0 and key2id[ph] < 0 and d.placeholder_id == 0:
            key2id[ph] = 0
        segments, n_lines = scan.segments, scan.n_lines
        del scan
        size = max(segments, default=0) + 1
        buf = np.empty(size, dtype=np.int32)
        ids = np.empty(size, dtype=np.int32)
        lens = np.empty(size // 2 + 1, dtype=np.int64)
        lengths: list[np.ndarray] = []
        total = raw = short = 0
        counters = np.zeros(4, dtype=np.int64)
        with open(stream_path, "rb") as src, open(tmp / "tokens.int32", "wb") as out:
            for n in segments:
                seg = buf[:n]
                if src.readinto(seg.data.cast("B")) != 4 * n:
                    raise OSError(f"{str(stream_path)!r} was truncated while training")
                _scan.remap_segment(seg, key2id, d.eos_id, ids, lens, counters)
                nt, ns = int(counters[0]), int(counters[1])
                out.write(ids[:nt].data)
                lengths.append(lens[:ns].copy())
                total += nt
                raw += int(counters[2])
                short += int(counters[3])
        stream_path.unlink()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return d, _corpus_ids(tmp, total, lengths, raw, n_lines, short)
