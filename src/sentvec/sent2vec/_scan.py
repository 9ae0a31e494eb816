"""One compiled pass over the corpus text for the trainer: the vocabulary counts and the token
stream at once.

The pass tokenizes each block of whole lines (official separators, :mod:`sentvec.sent2vec._wordtable`)
and looks every token up in a growing open-addressing table of the distinct tokens seen so far,
so it yields

* the distinct tokens (*keys*) in first-occurrence order with their counts and ``ntokens`` --
  exactly what the Python reader of :mod:`sentvec.sent2vec.dictionary` counts, ``</s>`` once per
  newline included -- from which :func:`~sentvec.sent2vec.dictionary.vocabulary_order` builds the
  official vocabulary;
* the corpus as a stream of key indices (``-1`` for a newline), written to a temporary file in
  segments of whole lines. Once the vocabulary is known, :func:`remap_segment` turns a segment
  into the trainer's word ids with an integer table instead of a second tokenisation of the text.

When more than ``0.75 * MAX_VOCAB_SIZE`` distinct tokens are seen the official reader starts
pruning rare ones on the fly; this pass then gives up (:class:`TooManyTokens`) and the caller
uses the Python reader, which reproduces the pruning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
from numba import njit

from sentvec.sent2vec._wordtable import _fnv, _same, is_sep
from sentvec.sent2vec.corpus_files import iter_line_blocks
from sentvec.sent2vec.dictionary import EOS, MAX_VOCAB_SIZE

#: read-only like the corpus blocks, so that one compiled ``_key`` serves both
_EOS_BYTES = np.frombuffer(EOS.encode(), dtype=np.uint8)
#: Stream value of a newline (a key index is >= 0).
NEWLINE = -1
# st slots: distinct keys, arena bytes used, tokens, stream entries, key limit
_NKEYS, _USED, _NTOK, _NRAW, _LIMIT = 0, 1, 2, 3, 4


class TooManyTokens(Exception):
    """More distinct tokens than the official reader holds before it prunes."""


@njit(cache=True, nogil=True)
def _key(data, lo, hi, table, koff, arena, counts, st):
    """Index of the token ``data[lo:hi]``, added (count 0) if new; its count is incremented."""
    mask = np.uint64(table.shape[0] - 1)
    slot = _fnv(data, lo, hi) & mask
    while True:
        k = table[slot]
        if k == -1:
            k = st[_NKEYS]
            a = st[_USED]
            for i in range(hi - lo):
                arena[a + i] = data[lo + i]
            st[_USED] = a + hi - lo
            koff[k + 1] = st[_USED]
            counts[k] = 0
            table[slot] = k
            st[_NKEYS] = k + 1
            break
        if _same(data, lo, hi, arena, koff[k], koff[k + 1]):
            break
        slot = (slot + np.uint64(1)) & mask
    counts[k] += 1
    return k


@njit(cache=True, nogil=True)
def _scan(data, pos, table, koff, arena, counts, st, raw, eos):
    """Count the tokens of ``data[pos:]`` into the table and append them to ``raw``.

    Returns where it stopped: ``data.shape[0]``, or earlier (at a token) when the key arrays or
    the byte arena must grow first.
    """
    end = data.shape[0]
    n = st[_NRAW]
    i = pos
    while i < end:
        b = data[i]
        if b == 10:
            if st[_NKEYS] >= st[_LIMIT] or st[_USED] + eos.shape[0] > arena.shape[0]:
                break
            _key(eos, np.int64(0), eos.shape[0], table, koff, arena, counts, st)
            raw[n] = -1
            n += 1
            i += 1
            continue
        if is_sep(b):
            i += 1
            continue
        j = i
        while j < end and not is_sep(data[j]):
            j += 1
        if st[_NKEYS] >= st[_LIMIT] or st[_USED] + (j - i) > arena.shape[0]:
            break
        raw[n] = _key(data, i, j, table, koff, arena, counts, st)
        n += 1
        i = j
    st[_NTOK] += n - st[_NRAW]
    st[_NRAW] = n
    return i


@njit(cache=True, nogil=True)
def _rehash(table, koff, arena, nkeys):
    mask = np.uint64(table.shape[0] - 1)
    for k in range(nkeys):
        slot = _fnv(arena, koff[k], koff[k + 1]) & mask
        while table[slot] != -1:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = k


@njit(cache=True, nogil=True)
def _find(data, table, koff, arena):
    """Index of the key equal to ``data``, or -1."""
    mask = np.uint64(table.shape[0] - 1)
    slot = _fnv(data, np.int64(0), data.shape[0]) & mask
    while table[slot] != -1:
        k = table[slot]
        if _same(data, np.int64(0), data.shape[0], arena, koff[k], koff[k + 1]):
            return k
        slot = (slot + np.uint64(1)) & mask
    return -1


@njit(cache=True, nogil=True)
def _has_prefix(koff, arena, nkeys, prefix):
    out = np.zeros(nkeys, dtype=np.int8)
    p = prefix.shape[0]
    for k in range(nkeys):
        lo = koff[k]
        if koff[k + 1] - lo >= p:
            same = True
            for i in range(p):
                if arena[lo + i] != prefix[i]:
                    same = False
                    break
            if same:
                out[k] = 1
    return out


@njit(cache=True, nogil=True, inline="always")
def close_sentence(lens, ns, nt, start, short):
    """End the sentence stored at ``out[start:nt]``: keep it if it has >= 2 ids, else drop it.

    Returns the new (stored sentences, stored tokens, next sentence start, short sentences).
    The one rule of both conversions (this scan and :mod:`sentvec.sent2vec.corpus`).
    """
    if nt - start >= 2:
        lens[ns] = nt - start
        return ns + 1, nt, nt, short
    return ns, start, start, short + (1 if nt > start else 0)


@njit(cache=True, nogil=True)
def remap_segment(raw, key2id, eos_id, out, lens, counters):
    """Word ids of a stream segment (whole lines): sentences of >= 2 in-vocabulary ids.

    The same rules as the text conversion (:mod:`sentvec.sent2vec.corpus`): a newline or a
    literal ``</s>`` ends a sentence, out-of-vocabulary tokens (``key2id`` -1) are dropped.
    counters: [stored tokens, stored sentences, raw tokens, short sentences].
    """
    nt = 0
    ns = 0
    nraw = 0
    short = 0
    start = 0
    for x in raw:
        if x < 0:
            ns, nt, start, short = close_sentence(lens, ns, nt, start, short)
            continue
        w = key2id[x]
        if w == eos_id and w >= 0:
            ns, nt, start, short = close_sentence(lens, ns, nt, start, short)
        else:
            nraw += 1
            if w >= 0:
                out[nt] = w
                nt += 1
    ns, nt, start, short = close_sentence(lens, ns, nt, start, short)
    counters[0] = nt
    counters[1] = ns
    counters[2] = nraw
    counters[3] = short


@dataclass
class ScanResult:
    """Distinct tokens in first-occurrence order and where their stream was written.

    ``keys(i)`` is the bytes of key ``i``; ``segments`` the stream length of each block.
    """

    arena: np.ndarray
    koff: np.ndarray
    counts: np.ndarray
    table: np.ndarray
    ntokens: int
    n_lines: int
    segments: list[int]

    @property
    def nkeys(self) -> int:
        return int(self.counts.shape[0])

    def key(self, i: int) -> bytes:
        return self.arena[self.koff[i] : self.koff[i + 1]].tobytes()

    def find(self, token: bytes) -> int:
        return int(_find(np.frombuffer(token, dtype=np.uint8), self.table, self.koff, self.arena))

    def labels(self, prefix: bytes) -> np.ndarray:
        """int8 flag per key: 1 where the key starts with ``prefix``."""
        return _has_prefix(self.koff, self.arena, self.nkeys, np.frombuffer(prefix, dtype=np.uint8))


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    b = np.empty(size, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


def scan_corpus(source: Any, stream: BinaryIO, block_bytes: int = 1 << 22) -> ScanResult:
    """Count the corpus and write its key-index stream (int32, native order) to ``stream``.

    Raises
    ------
    TooManyTokens
        Past ``0.75 * MAX_VOCAB_SIZE`` distinct tokens (the official reader would prune).
    """
    limit = 0.75 * MAX_VOCAB_SIZE
    cap = 1 << 16
    table = np.full(2 * cap, -1, dtype=np.int32)
    koff = np.zeros(cap + 1, dtype=np.int64)
    counts = np.zeros(cap, dtype=np.int64)
    arena = np.zeros(16 * cap, dtype=np.uint8)
    st = np.zeros(5, dtype=np.int64)
    raw = np.empty(0, dtype=np.int32)
    segments: list[int] = []
    n_lines = 0
    last = b"\n"
    warned_ff = False
    for block in iter_line_blocks(source, block_bytes):
        if not warned_ff and b"\xff" in block:
            lineno = n_lines + block.count(b"\n", 0, block.find(b"\xff")) + 1
            warnings.warn(
                f"corpus line {lineno} contains byte "
                "0xFF; the official reader stops reading the corpus at that byte, "
                "sentvec reads on",
                stacklevel=3,
            )
            warned_ff = True
        n_lines += block.count(b"\n")
        last = block[-1:]
        data = np.frombuffer(block, dtype=np.uint8)
        if raw.shape[0] < data.shape[0]:
            raw = np.empty(data.shape[0], dtype=np.int32)
        st[_NRAW] = 0
        pos = 0
        while True:
            st[_LIMIT] = min(counts.shape[0], table.shape[0] // 2)
            pos = _scan(data, pos, table, koff, arena, counts, st, raw, _EOS_BYTES)
            if pos >= data.shape[0]:
                break
            if st[_NKEYS] >= st[_LIMIT]:
                cap = 2 * counts.shape[0]
                counts = _grown(counts, cap)
                koff = _grown(koff, cap + 1)
                table = np.full(2 * cap, -1, dtype=np.int32)
                _rehash(table, koff, arena, int(st[_NKEYS]))
            else:  # a token longer than the arena's free space: room for the whole block
                arena = _grown(arena, 2 * arena.shape[0] + data.shape[0])
        if st[_NKEYS] > limit:
            raise TooManyTokens(int(st[_NKEYS]))
        n = int(st[_NRAW])
        stream.write(raw[:n].data)
        segments.append(n)
    if last != b"\n":
        n_lines += 1  # a last line without a newline
    nk = int(st[_NKEYS])
    return ScanResult(
        arena=arena,
        koff=koff[: nk + 1],
        counts=counts[:nk].copy(),
        table=table,
        ntokens=int(st[_NTOK]),
        n_lines=n_lines,
        segments=segments,
    )


def compile_kernels() -> None:
    """Call every kernel of the pass once on a tiny input, with the real argument types (this
    compiles them on a first run, or loads them from numba's cache)."""
    import io

    from sentvec.sent2vec._stdsort import _jitted

    res = scan_corpus([b"a b a\n", b"</s> c"], io.BytesIO())
    res.find(b"a")
    res.labels(b"__label__")
    _rehash(np.full(4, -1, dtype=np.int32), res.koff.copy(), res.arena, 0)
    remap_segment(
        np.array([0, 1, -1], dtype=np.int32),
        np.zeros(2, dtype=np.int32),
        0,
        np.empty(4, dtype=np.int32),
        np.empty(3, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
    )
    _jitted()(np.zeros(2, dtype=np.int64), np.arange(2, dtype=np.int64))
