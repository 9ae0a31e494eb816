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

import numba
import numpy as np

__all__ = ["TIE_TOLERANCE", "format_rows", "format_rows_python"]

#: A row is formatted by Python when a value's scaled fraction is this close to one half.
TIE_TOLERANCE = 1e-7

#: ``_POW10[k + _P10_OFFSET] == float(f"1e{k}")`` (correctly rounded) for ``k`` in -40..60.
_P10_OFFSET = 40
_POW10 = np.array([float(f"1e{k}") for k in range(-_P10_OFFSET, 61)], dtype=np.float64)

_LOG10_2 = math.log10(2.0)

#: Longest value: ``-0.000123457`` or ``-1.23457e-05`` (12 bytes) plus its separator.
_MAX_VALUE_BYTES = 13


@numba.njit(cache=True, nogil=True, inline="always")
def _scaled(a, k, pow10):
    """``a * 10**k`` with one correctly rounded operation for ``|k| <= 22``."""
    if k >= 0:
        return a * pow10[k + _P10_OFFSET]
    return a / pow10[-k + _P10_OFFSET]


@numba.njit(cache=True, nogil=True)
def _format_kernel(values, bits, pow10, tol, out, row_end, exact):
    """Write each row of ``values`` (float32, 2-D) into ``out`` as ``%.6g`` text.

    ``row_end[r]`` gets the end offset of row ``r`` in ``out`` (its ``\\n`` included);
    ``exact[r]`` is False for a row left empty because a value is non-finite or too close to a
    rounding tie for double-precision scaling to decide (Python formats those rows).
    """
    n, dim = values.shape
    digits = np.empty(6, dtype=np.uint8)
    pos = 0
    for r in range(n):
        start = pos
        ok = True
        for c in range(dim):
            v = np.float64(values[r, c])
            if c > 0:
                out[pos] = 32  # ' '
                pos += 1
            if math.isnan(v) or math.isinf(v):
                ok = False
                break
            if v < 0.0 or (v == 0.0 and math.copysign(1.0, v) < 0.0):
                out[pos] = 45  # '-'
                pos += 1
                v = -v
            if v == 0.0:
                out[pos] = 48  # '0'
                pos += 1
                continue
            be = (np.int64(bits[r, c]) >> 23) & 0xFF
            if be == 0:  # subnormal float32
                e = int(math.floor(math.log10(v)))
            else:  # 2**(be-127) <= v < 2**(be-126): e is this estimate or the next decade
                e = int(math.floor((be - 127) * _LOG10_2))
                if v >= pow10[e + 1 + _P10_OFFSET]:
                    e += 1
            y = _scaled(v, 5 - e, pow10)
            if y < 100000.0:
                e -= 1
                y = _scaled(v, 5 - e, pow10)
            elif y >= 1000000.0:
                e += 1
                y = _scaled(v, 5 - e, pow10)
            fl = math.floor(y)
            frac = y - fl
            if abs(frac - 0.5) < tol:
                ok = False
                break
            m = np.int64(fl)
            if frac > 0.5:
                m += 1
            if m >= 1000000:
                m //= 10
                e += 1
            for i in range(5, -1, -1):
                digits[i] = 48 + m % 10
                m //= 10
            nsig = 6
            while nsig > 1 and digits[nsig - 1] == 48:
                nsig -= 1
            if -4 <= e < 6:
                if e >= 0:
                    for i in range(e + 1):
                        out[pos] = digits[i]
                        pos += 1
                    if nsig > e + 1:
                        out[pos] = 46  # '.'
                        pos += 1
                        for i in range(e + 1, nsig):
                            out[pos] = digits[i]
                            pos += 1
                else:
                    out[pos] = 48
                    out[pos + 1] = 46
                    pos += 2
                    for _ in range(-e - 1):
                        out[pos] = 48
                        pos += 1
                    for i in range(nsig):
                        out[pos] = digits[i]
                        pos += 1
            else:
                out[pos] = digits[0]
                pos += 1
                if nsig > 1:
                    out[pos] = 46
                    pos += 1
                    for i in range(1, nsig):
                        out[pos] = digits[i]
                        pos += 1
                out[pos] = 101  # 'e'
                if e < 0:
                    out[pos + 1] = 45
                    x = -e
                else:
                    out[pos + 1] = 43  # '+'
                    x = e
                pos += 2
                if x >= 100:
                    out[pos] = 48 + x // 100
                    pos += 1
                    x %= 100
                out[pos] = 48 + x // 10
                out[pos + 1] = 48 + x % 10
                pos += 2
        if ok:
            out[pos] = 10  # '\n'
            pos += 1
        else:
            pos = start
        row_end[r] = pos
        exact[r] = ok


def format_rows_python(rows: np.ndarray) -> bytes:
    """The reference: ``" ".join(f"{v:.6g}" for v in row) + "\\n"`` per row, UTF-8 bytes."""
    return "".join(" ".join(f"{v:.6g}" for v in row) + "\n"
                   for row in np.asarray(rows).tolist()).encode("ascii")


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
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.dtype != np.float32:
        raise ValueError(f"format_rows takes a 2-D float32 array, not {rows.dtype} with shape "
                         f"{rows.shape}")
    n, dim = rows.shape
    if n == 0:
        return b""
    if dim == 0:
        return b"\n" * n
    rows = np.ascontiguousarray(rows)
    out = np.empty(n * dim * _MAX_VALUE_BYTES, dtype=np.uint8)
    row_end = np.empty(n, dtype=np.int64)
    exact = np.empty(n, dtype=np.bool_)
    _format_kernel(rows, rows.view(np.uint32), _POW10, TIE_TOLERANCE, out, row_end, exact)
    inexact = np.flatnonzero(~exact)
    if not len(inexact):
        return out[:row_end[-1]].tobytes()
    pieces = []
    prev = 0
    for r in inexact.tolist():
        start = int(row_end[r - 1]) if r else 0
        pieces.append(out[prev:start].tobytes())
        pieces.append(format_rows_python(rows[r:r + 1]))
        prev = start
    pieces.append(out[prev:row_end[-1]].tobytes())
    return b"".join(pieces)
