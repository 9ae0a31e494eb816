"""Numba kernels of :meth:`sentvec.sent2vec.moses.MosesTokenizer.tokenize_utf8`: the Moses
rules of :mod:`sentvec.sent2vec._moses` between UTF-8 bytes in and UTF-8 bytes out.

Per line: strict UTF-8 decoding fused with the rules' first pass (whitespace, control
characters), the other passes, then lower-casing through a per-code-point table and UTF-8
encoding, all without the GIL; a line that needs Python (bytes that are not valid UTF-8, a
character :meth:`str.lower` does not map to one code point on its own) is reported, not
guessed.
"""

from __future__ import annotations

import numba
import numpy as np

from sentvec.sent2vec._moses import _SP, SPACE, _is, _rules

#: ``lower`` table value of a code point that :meth:`str.lower` does not map to one code point
#: on its own (U+0130 becomes two; U+03A3 depends on its neighbours): the line goes to Python.
LOWER_IN_PYTHON = 0x110000


@numba.njit(cache=True, nogil=True)
def _clean_utf8(src, lo, hi, flags, dst):
    """Pass 1 (as :func:`_clean`) on the UTF-8 bytes ``src[lo:hi]``, decoded on the way with
    the strictness of Python's decoder (no overlong forms, surrogates or code points past
    U+10FFFF, no truncated sequences). Returns the length, or -1 for bytes that are not valid
    UTF-8."""
    m = 0
    prev_space = False
    i = lo
    while i < hi:
        c = np.int64(src[i])
        if c < 0x80:
            i += 1
        else:
            if 0xC2 <= c <= 0xDF:
                k, c, low, high = 1, c & 0x1F, 0x80, 0xBF
            elif 0xE0 <= c <= 0xEF:
                k, low, high = 2, 0x80, 0xBF
                if c == 0xE0:
                    low = 0xA0  # overlong
                elif c == 0xED:
                    high = 0x9F  # surrogates
                c &= 0x0F
            elif 0xF0 <= c <= 0xF4:
                k, low, high = 3, 0x80, 0xBF
                if c == 0xF0:
                    low = 0x90  # overlong
                elif c == 0xF4:
                    high = 0x8F  # past U+10FFFF
                c &= 0x07
            else:
                return -1
            if i + k >= hi:  # truncated
                return -1
            b = np.int64(src[i + 1])
            if b < low or b > high:
                return -1
            c = (c << 6) | (b & 0x3F)
            for j in range(i + 2, i + k + 1):
                b = np.int64(src[j])
                if b < 0x80 or b > 0xBF:
                    return -1
                c = (c << 6) | (b & 0x3F)
            i += k + 1
        if _is(flags, c, SPACE):
            if not prev_space and m > 0:
                dst[m] = _SP
                m += 1
            prev_space = True
        else:
            prev_space = False
            if c >= 32:
                dst[m] = c
                m += 1
    while m > 0 and dst[m - 1] == _SP:
        m -= 1
    return m


@numba.njit(cache=True, nogil=True)
def _emit_utf8(src, n, lower, lowercase, out, m):
    """Append ``src[:n]`` (lower-cased through ``lower`` if asked) to ``out`` from ``m`` as
    UTF-8; returns the new end, or -1 for a code point whose lower-casing is left to Python."""
    for i in range(n):
        c = np.int64(src[i])
        if lowercase:
            c = np.int64(lower[c])
            if c == LOWER_IN_PYTHON:
                return -1
        if c < 0x80:
            out[m] = c
            m += 1
        elif c < 0x800:
            out[m] = 0xC0 | (c >> 6)
            out[m + 1] = 0x80 | (c & 0x3F)
            m += 2
        elif c < 0x10000:
            out[m] = 0xE0 | (c >> 12)
            out[m + 1] = 0x80 | ((c >> 6) & 0x3F)
            out[m + 2] = 0x80 | (c & 0x3F)
            m += 3
        else:
            out[m] = 0xF0 | (c >> 18)
            out[m + 1] = 0x80 | ((c >> 12) & 0x3F)
            out[m + 2] = 0x80 | ((c >> 6) & 0x3F)
            out[m + 3] = 0x80 | (c & 0x3F)
            m += 4
    return m


@numba.njit(cache=True, nogil=True)
def line_starts(data):
    """Where the lines of ``data`` (bytes split on ``\\n``) start, plus ``len(data) + 1``:
    line ``s`` is ``data[starts[s] : starts[s + 1] - 1]``."""
    n = 1
    for i in range(data.shape[0]):
        if data[i] == 10:
            n += 1
    starts = np.empty(n + 1, dtype=np.int64)
    starts[0] = 0
    j = 1
    for i in range(data.shape[0]):
        if data[i] == 10:
            starts[j] = i + 1
            j += 1
    starts[n] = data.shape[0] + 1
    return starts


def utf8_region(starts, s):
    """Where the output of the lines from ``s`` on may start in ``tokenize_utf8_range``'s
    ``out``: room for ``8 * len + 5`` bytes per line of ``len`` bytes, more than any needs (at
    most ``2 * len + 1`` code points of at most 4 bytes, and a newline)."""
    return 8 * int(starts[s]) + 5 * s


@numba.njit(cache=True, nogil=True)
def tokenize_utf8_range(
    data,
    starts,
    start,
    stop,
    flags,
    prefixes,
    prefix_offsets,
    prefix_kind,
    lower,
    lowercase,
    out,
    out_start,
    status,
):
    """Tokenize lines ``start .. stop-1`` of the UTF-8 bytes ``data`` (lines as in
    :func:`line_starts`) into UTF-8, each line's tokens joined by single spaces and ended by a
    newline, written back to back into ``out`` from ``utf8_region(starts, start)``; returns the
    end. ``out_start[s]`` is where line ``s``'s output starts. A line the kernel leaves to
    Python (not valid UTF-8, a character of ``LOWER_IN_PYTHON``, or grown past the scratch
    buffer) gets ``status[s] = 1`` and no output (its place is ``out_start[s]``)."""
    maxlen = 0
    for s in range(start, stop):
        ln = starts[s + 1] - 1 - starts[s]
        if ln > maxlen:
            maxlen = ln
    cap = 8 * maxlen + 64
    a = np.empty(cap, dtype=np.uint32)
    b = np.empty(cap, dtype=np.uint32)
    m = 8 * starts[start] + 5 * start
    for s in range(start, stop):
        lo = starts[s]
        hi = starts[s + 1] - 1
        out_start[s] = m
        status[s] = 1
        n = _clean_utf8(data, lo, hi, flags, a)
        if n < 0:
            continue
        n = _rules(n, flags, prefixes, prefix_offsets, prefix_kind, a, b)
        if n < 0 or n > 2 * (hi - lo) + 1:  # the latter cannot happen (see tokenize_range)
            continue
        e = _emit_utf8(a, n, lower, lowercase, out, m)
        if e < 0:
            continue
        out[e] = 10
        m = e + 1
        status[s] = 0
    return m
