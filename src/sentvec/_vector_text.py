"""Vectors as text, one per line, each value as Python's ``f"{v:.6g}"``, at compiled speed.

``sentvec embed`` writes text output like ``fasttext print-sentence-vectors``: values separated by
one space, rows ended by ``\\n``, every value formatted as ``format(float(v), ".6g")``. Formatting
10 M float32 values that way in Python takes 4-5 s; :func:`format_rows` gives the same bytes in
a fraction of that.

How it stays exact. A float32 ``v`` is exactly a double ``a``. With ``e = floor(log10(|a|))``
the six significant digits are ``round(|a| * 10**(5 - e))``, an integer in
``[10**5, 10**6]``. The kernel computes ``y = |a| * 10**(5 - e)`` in double precision (one or two
correctly rounded operations, relative error below 3e-16, so an absolute error below 1e-9 on
``y < 10**6``) and rounds it to the nearest integer. That rounding is the correctly rounded one
whenever the fraction of ``y`` is farther than ``TIE_TOLERANCE`` (1e-7) from one half; a row
holding any value closer than that to a tie (an exact tie such as 0.001953125, rounded half to
even by Python, or a value within 1e-7 of one), or a NaN or infinity, is formatted by Python
instead. The layout then follows Python's ``g`` rules: fixed notation when ``-4 <= exp < 6``
(``exp`` the decimal exponent of the *rounded* value), else ``d.ddddde±XX``; trailing zeros and a
bare decimal point are dropped; ``-0.0`` gives ``-0``.
"""

from __future__ import annotations

import math
from typing import IO

import numba
import numpy as np

from sentvec._jit import load_kernel

__all__ = ["TIE_TOLERANCE", "format_rows", "format_rows_python", "write_rows"]

#: A row is formatted by Python when a value's scaled fraction is this close to one half.
TIE_TOLERANCE = 1e-7

#: ``_POW10[k + _P10_OFFSET] == float(f"1e{k}")`` (correctly rounded) for ``k`` in -40..60.
_P10_OFFSET = 40
_POW10 = np.array([float(f"1e{k}") for k in range(-_P10_OFFSET, 61)], dtype=np.float64)

_POW2 = np.array([2.0 ** (be - 150) for be in range(256)], dtype=np.float64)
_DECADE = np.array([math.floor((be - 127) * math.log10(2.0)) for be in range(256)], np.int64)
_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8).copy()


#: Longest value: ``-0.000123457`` or ``-1.23457e-05`` (12 bytes) plus its separator.
_MAX_VALUE_BYTES = 13


@numba.njit(cache=True, nogil=True)
def _put_digits(out, pos, m, pairs):
    """Write the 6-digit integer ``m`` (100000 <= m < 10**6) at ``out[pos:pos + 6]``."""
    a = m // 10000
    b = (m // 100) % 100
    c = m % 100
    out[pos] = pairs[2 * a]
    out[pos + 1] = pairs[2 * a + 1]
    out[pos + 2] = pairs[2 * b]
    out[pos + 3] = pairs[2 * b + 1]
    out[pos + 4] = pairs[2 * c]
    out[pos + 5] = pairs[2 * c + 1]


@numba.njit(cache=True, nogil=True)
def _format_kernel(bits, pow10, pow2, decade, pairs, tol, out, row_end, exact):
    """Write each row of float32 values (given as their ``uint32`` bits) as ``%.6g`` text.

    ``pow2[be]`` is ``2.0 ** (be - 150)`` and ``decade[be]`` is ``floor((be - 127) * log10(2))``
    for the biased exponent ``be``.
    ``row_end[r]`` gets the end offset of row ``r`` in ``out`` (its ``\\n`` included);
    ``exact[r]`` is False for a row left empty because a value is non-finite or too close to a
    rounding tie for double-precision scaling to decide (Python formats those rows).
    """
    n, dim = bits.shape
    pos = 0
    for r in range(n):
        start = pos
        ok = True
        for c in range(dim):
            u = np.int64(bits[r, c])
            if c > 0:
                out[pos] = 32  # ' '
                pos += 1
            be = (u >> 23) & 0xFF
            if be == 0xFF:  # NaN or infinity: Python's spelling
                ok = False
                break
            if u >> 31:
                out[pos] = 45  # '-'
                pos += 1
            mant = u & 0x7FFFFF
            if be == 0:
                if mant == 0:
                    out[pos] = 48  # '0'
                    pos += 1
                    continue
                v = np.float64(mant) * 1.401298464324817e-45  # 2**-149, exact
                e = int(math.floor(math.log10(v)))
            else:  # 2**(be-127) <= v < 2**(be-126): e is this estimate or the next decade
                v = np.float64(mant | 0x800000) * pow2[be]
                e = decade[be]
                if v >= pow10[e + 1 + _P10_OFFSET]:
                    e += 1
            k = 5 - e
            if k >= 0:
                y = v * pow10[k + _P10_OFFSET]
            else:
                y = v / pow10[-k + _P10_OFFSET]
            if y < 100000.0:  # log10 of a subnormal off by one
                e -= 1
                y *= 10.0
            elif y >= 1000000.0:
                e += 1
                y /= 10.0
            fl = math.floor(y)
            frac = y - fl
            if abs(frac - 0.5) < tol:
                ok = False
                break
            m = np.int64(fl) + (1 if frac > 0.5 else 0)
            if m >= 1000000:
                m = np.int64(100000)
                e += 1
            tz = 0
            if m % 10 == 0:
                t = m
                while t % 10 == 0:
                    t //= 10
                    tz += 1
            if -4 <= e < 6:
                if e < 0:
                    out[pos] = 48
                    out[pos + 1] = 46
                    pos += 2
                    for _ in range(-e - 1):
                        out[pos] = 48
                        pos += 1
                    _put_digits(out, pos, m, pairs)
                    pos += 6 - tz
                elif e == 5:
                    _put_digits(out, pos, m, pairs)
                    pos += 6
                else:  # ddd.ddd: shift the fraction digits one place right for the point
                    _put_digits(out, pos + 1, m, pairs)
                    for i in range(e + 1):
                        out[pos + i] = out[pos + 1 + i]
                    out[pos + e + 1] = 46  # '.'
                    nfrac = 5 - e - min(tz, 5 - e)
                    pos += e + 1 + (nfrac + 1 if nfrac > 0 else 0)
            else:
                _put_digits(out, pos + 1, m, pairs)
                out[pos] = out[pos + 1]
                out[pos + 1] = 46
                pos += 7 - tz if tz < 5 else 1
                out[pos] = 101  # 'e'
                if e < 0:
                    out[pos + 1] = 45
                    x = -e
                else:
                    out[pos + 1] = 43  # '+'
                    x = e
                out[pos + 2] = 48 + x // 10
                out[pos + 3] = 48 + x % 10
                pos += 4
        if ok:
            out[pos] = 10  # newline
            pos += 1
        else:
            pos = start
        row_end[r] = pos
        exact[r] = ok


def format_rows_python(rows: np.ndarray) -> bytes:
    """The reference: ``" ".join(f"{v:.6g}" for v in row) + "\\n"`` per row, UTF-8 bytes."""
    return "".join(
        " ".join(f"{v:.6g}" for v in row) + "\n" for row in np.asarray(rows).tolist()
    ).encode("ascii")


def _check_rows(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.dtype != np.float32:
        raise ValueError(
            f"vectors as text take a 2-D float32 array, not {rows.dtype} with shape {rows.shape}"
        )
    return rows


def _format_block(rows: np.ndarray) -> list:
    """The text of ``rows`` (2-D float32, ``dim > 0``) as a list of bytes-like pieces."""
    rows = np.ascontiguousarray(rows)
    n, dim = rows.shape
    out = np.empty(n * dim * _MAX_VALUE_BYTES, dtype=np.uint8)
    row_end = np.empty(n, dtype=np.int64)
    exact = np.empty(n, dtype=np.bool_)
    args = (
        rows.view(np.uint32),
        _POW10,
        _POW2,
        _DECADE,
        _PAIRS,
        TIE_TOLERANCE,
        out,
        row_end,
        exact,
    )
    load_kernel(_format_kernel, args)  # a first run compiles: say so if it is long
    _format_kernel(*args)
    pieces: list = []
    prev = 0
    for r in np.flatnonzero(~exact).tolist():
        start = int(row_end[r - 1]) if r else 0
        pieces.append(out[prev:start])
        pieces.append(format_rows_python(rows[r : r + 1]))
        prev = start
    pieces.append(out[prev : row_end[-1]])
    return pieces


def _pieces(rows: np.ndarray) -> list:
    n, dim = rows.shape
    if n == 0:
        return []
    if dim == 0:
        return [b"\n" * n]
    return _format_block(rows)


def format_rows(rows: np.ndarray) -> bytes:
    """Vectors as text lines, byte-identical to :func:`format_rows_python`.

    Parameters
    ----------
    rows : numpy.ndarray, shape (n, d), dtype float32
        The vectors (e.g. the output of ``Sent2Vec.encode``). Other float dtypes are refused:
        the fast path is exact only for values that a double holds with 29 spare bits.

    Returns
    -------
    bytes
        ``n`` lines, each the ``d`` values as ``format(float(v), ".6g")`` joined by one space
        and ended by ``\\n`` (ASCII). NaN and infinities appear as ``nan``, ``inf``, ``-inf``,
        as Python writes them.

    Raises
    ------
    ValueError
        If ``rows`` is not a 2-D float32 array.
    """
    return b"".join(_pieces(_check_rows(rows)))


def write_rows(stream: IO[bytes], rows: np.ndarray) -> int:
    """Write :func:`format_rows` ``(rows)`` to a binary stream without joining it first.

    Parameters
    ----------
    stream : binary file object
        Anything with ``write(bytes-like)``.
    rows : numpy.ndarray, shape (n, d), dtype float32

    Returns
    -------
    int
        The number of bytes written.

    Raises
    ------
    ValueError
        If ``rows`` is not a 2-D float32 array (nothing is written).
    """
    total = 0
    for piece in _pieces(_check_rows(rows)):
        stream.write(piece)
        total += len(piece)
    return total
