"""Numba kernels of :mod:`sentvec.sent2vec.moses`: the English Moses tokenizer on code points.

Each line goes through the same ordered rewrite passes as sacremoses'
``MosesTokenizer("en").tokenize(text, escape=False)`` (Koehn et al.'s ``tokenizer.perl``
rules as sacremoses 0.1-0.2 applies them), each pass a left-to-right scan with the
leftmost, non-overlapping match semantics of ``re.sub``:

1. whitespace runs to one space, ASCII control characters removed, ends stripped;
2. every character outside IsAlnum, space and ``.'`,-`` padded with spaces;
3. runs of two or more dots replaced by a ``DOT...DOTMULTI`` marker (one ``DOT`` per dot);
4. commas split off unless between numbers (three passes);
5. the five English apostrophe rules (``n't``-style splits: ``'s``, ``'ll`` ...), one pass each;
6. a token ending in ``.`` keeps its dot only for a nonbreaking prefix (``Mr.``, ``e.g.``, a
   dotted token with a letter, a numeric-only prefix before a number, or before a lower-case
   word); otherwise the dot becomes a token;
7. a trailing ``.'`` split, the multidot markers restored, tokens joined by single spaces.

Character classes come in ``flags`` (one byte per code point, bits below), the nonbreaking
prefixes in a packed table. A line whose intermediate text would outgrow its scratch buffer is
reported in ``status`` and left to the caller (it never happens for the bounds used; the check
keeps memory safe).
"""

from __future__ import annotations

import numba
import numpy as np

#: Bits of the per-code-point ``flags`` table.
ALNUM, ALPHA, NUMBER, LOWER, SPACE = 1, 2, 4, 8, 16
#: ``prefix_kind`` values: a nonbreaking prefix, a numeric-only one (kept before a number).
NONBREAKING, NUMERIC_ONLY = 1, 2

_SP = 32  # " "
_DOT = 46  # "."
_COMMA = 44  # ","
_APOS = 39  # "'"
_D, _O, _T, _M, _U, _L, _I = 68, 79, 84, 77, 85, 76, 73


@numba.njit(cache=True, nogil=True, inline="always")
def _is(flags, c, bit):
    return (flags[c] & bit) != 0


@numba.njit(cache=True, nogil=True)
def _clean(data, lo, hi, flags, dst):
    """Pass 1: whitespace runs -> " ", [\\x00-\\x1f] removed, both ends stripped."""
    m = 0
    prev_space = False
    for i in range(lo, hi):
        c = data[i]
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
def _pad(src, n, dst, flags):
    """Pass 2: pad every character but IsAlnum, space and . ' ` , - with spaces."""
    m = 0
    for i in range(n):
        c = src[i]
        if c == _SP or _is(flags, c, ALNUM) or c == 46 or c == 39 or c == 96 or c == 44 or c == 45:
            dst[m] = c
            m += 1
        else:
            dst[m] = _SP
            dst[m + 1] = c
            dst[m + 2] = _SP
            m += 3
    return m


@numba.njit(cache=True, nogil=True)
def _multidots(src, n, dst, cap):
    """Pass 3: a run of k >= 2 dots -> " " + "DOT" * k + "MULTI" (+ " " unless at the end)."""
    m = 0
    i = 0
    while i < n:
        if src[i] == _DOT and i + 1 < n and src[i + 1] == _DOT:
            j = i
            while j < n and src[j] == _DOT:
                j += 1
            k = j - i
            if m + 3 * k + 7 > cap:
                return -1
            dst[m] = _SP
            m += 1
            for _ in range(k):
                dst[m] = _D
                dst[m + 1] = _O
                dst[m + 2] = _T
                m += 3
            dst[m] = _M
            dst[m + 1] = _U
            dst[m + 2] = _L
            dst[m + 3] = _T
            dst[m + 4] = _I
            m += 5
            if j < n:
                dst[m] = _SP
                m += 1
            i = j
        else:
            if m + 1 > cap:
                return -1
            dst[m] = src[i]
            m += 1
            i += 1
    return m


@numba.njit(cache=True, nogil=True)
def _commas(src, n, dst, cap, flags, which):
    """Pass 4: ``which`` 1: ``([^N]),`` -> ``\\1 , ``; 2: ``,([^N])`` -> `` , \\1``;
    3: ``([N]),$`` -> ``\\1 , ``."""
    m = 0
    i = 0
    while i < n:
        if m + 5 > cap:
            return -1
        c = src[i]
        # rules 1 and 3 differ only in what they match: ``c`` then a comma, rewritten ``c , ``
        before = i + 1 < n and src[i + 1] == _COMMA and (which == 1 or i == n - 2)
        if before and which != 2 and _is(flags, c, NUMBER) == (which == 3):
            dst[m] = c
            dst[m + 1] = _SP
            dst[m + 2] = _COMMA
            dst[m + 3] = _SP
            m += 4
            i += 2
        elif which == 2 and c == _COMMA and i + 1 < n and not _is(flags, src[i + 1], NUMBER):
            dst[m] = _SP
            dst[m + 1] = _COMMA
            dst[m + 2] = _SP
            dst[m + 3] = src[i + 1]
            m += 4
            i += 2
        else:
            dst[m] = c
            m += 1
            i += 1
    return m


@numba.njit(cache=True, nogil=True)
def _apostrophe_rule(flags, rule, a, b):
    """Whether ``a ' b`` matches English apostrophe rule ``rule`` (1..5)."""
    if rule == 1:  # ([^alpha])'([^alpha])
        return not _is(flags, a, ALPHA) and not _is(flags, b, ALPHA)
    if rule == 2:  # ([^alpha N])'([alpha])
        return not _is(flags, a, ALPHA) and not _is(flags, a, NUMBER) and _is(flags, b, ALPHA)
    if rule == 3:  # ([alpha])'([^alpha])
        return _is(flags, a, ALPHA) and not _is(flags, b, ALPHA)
    if rule == 4:  # ([alpha])'([alpha])
        return _is(flags, a, ALPHA) and _is(flags, b, ALPHA)
    return _is(flags, a, NUMBER) and b == 115  # ([N])'(s)


@numba.njit(cache=True, nogil=True)
def _apostrophes(src, n, dst, cap, flags, rule):
    """Pass 5: one English apostrophe rule; rules 1-3 give ``a ' b``, 4-5 ``a 'b``."""
    m = 0
    i = 0
    while i < n:
        if m + 5 > cap:
            return -1
        c = src[i]
        if i + 2 < n and src[i + 1] == _APOS and _apostrophe_rule(flags, rule, c, src[i + 2]):
            dst[m] = c
            dst[m + 1] = _SP
            dst[m + 2] = _APOS
            m += 3
            if rule <= 3:
                dst[m] = _SP
                m += 1
            dst[m] = src[i + 2]
            m += 1
            i += 3
        else:
            dst[m] = c
            m += 1
            i += 1
    return m


@numba.njit(cache=True, nogil=True)
def _prefix_kind(src, a, b, prefixes, prefix_offsets, prefix_kind):
    """Kind of the prefix ``src[a:b]`` in the packed prefix table (0: not a prefix)."""
    ln = b - a
    for p in range(prefix_kind.shape[0]):
        lo = prefix_offsets[p]
        if prefix_offsets[p + 1] - lo != ln:
            continue
        same = True
        for j in range(ln):
            if prefixes[lo + j] != src[a + j]:
                same = False
                break
        if same:
            return prefix_kind[p]
    return 0


@numba.njit(cache=True, nogil=True)
def _token_end(src, n, i):
    while i < n and src[i] != _SP:
        i += 1
    return i


@numba.njit(cache=True, nogil=True)
def _token_start(src, n, i):
    while i < n and src[i] == _SP:
        i += 1
    return i


@numba.njit(cache=True, nogil=True)
def _nonbreaking(src, n, dst, cap, flags, prefixes, prefix_offsets, prefix_kind):
    """Pass 6: split the final dot of a token unless its prefix is nonbreaking; tokens joined
    by single spaces (the pass's whitespace split + join, and the dedupe + strip after it)."""
    m = 0
    a = _token_start(src, n, 0)
    while a < n:
        b = _token_end(src, n, a)
        na = _token_start(src, n, b)  # next token: src[na:nb], none if na == n
        if m + (b - a) + 3 > cap:
            return -1
        if m > 0:
            dst[m] = _SP
            m += 1
        split = False
        if b - a >= 2 and src[b - 1] == _DOT:
            keep = False
            has_dot = False
            has_alpha = False
            for j in range(a, b - 1):
                if src[j] == _DOT:
                    has_dot = True
                if _is(flags, src[j], ALPHA):
                    has_alpha = True
            kind = _prefix_kind(src, a, b - 1, prefixes, prefix_offsets, prefix_kind)
            if has_dot and has_alpha:
                keep = True
            elif kind == NONBREAKING:
                keep = True
            elif na < n and _is(flags, src[na], LOWER):
                keep = True
            elif kind == NUMERIC_ONLY and na < n and 48 <= src[na] <= 57:
                keep = True
            split = not keep
        if split:
            for j in range(a, b - 1):
                dst[m] = src[j]
                m += 1
            dst[m] = _SP
            dst[m + 1] = _DOT
            m += 2
        else:
            for j in range(a, b):
                dst[m] = src[j]
                m += 1
        a = na
    return m


@numba.njit(cache=True, nogil=True)
def _restore(src, n, dst, cap):
    """Pass 7: ``.'`` at the end -> `` . ' ``; every ``(DOT)+MULTI`` -> as many dots; the
    tokens joined by single spaces (the final whitespace split)."""
    end = n
    trailing = n >= 2 and src[n - 2] == _DOT and src[n - 1] == _APOS
    if trailing:
        end = n - 2
    m = 0
    i = 0
    while i < end:
        if m + 4 > cap:
            return -1
        k = 0
        while i + 3 * k + 2 < end and (
            src[i + 3 * k] == _D and src[i + 3 * k + 1] == _O and src[i + 3 * k + 2] == _T
        ):
            k += 1
        j = i + 3 * k
        if (
            k > 0
            and j + 4 < end
            and src[j] == _M
            and src[j + 1] == _U
            and src[j + 2] == _L
            and src[j + 3] == _T
            and src[j + 4] == _I
        ):
            for _ in range(k):
                dst[m] = _DOT
                m += 1
            i = j + 5
        elif src[i] == _SP:
            if m > 0 and dst[m - 1] != _SP:
                dst[m] = _SP
                m += 1
            i += 1
        else:
            dst[m] = src[i]
            m += 1
            i += 1
    if trailing:
        if m > 0 and dst[m - 1] != _SP:
            dst[m] = _SP
            m += 1
        dst[m] = _DOT
        dst[m + 1] = _SP
        dst[m + 2] = _APOS
        m += 3
    while m > 0 and dst[m - 1] == _SP:
        m -= 1
    return m


@numba.njit(cache=True, nogil=True)
def _tokenize_line(data, lo, hi, flags, prefixes, prefix_offsets, prefix_kind, a, b):
    """All passes on ``data[lo:hi]``; the result is in ``a[:m]``; returns m (-1: too long)."""
    n = _clean(data, lo, hi, flags, a)
    return _rules(n, flags, prefixes, prefix_offsets, prefix_kind, a, b)


@numba.njit(cache=True, nogil=True)
def _rules(n, flags, prefixes, prefix_offsets, prefix_kind, a, b):
    """Passes 2-7 on the cleaned text ``a[:n]``; the result is in ``a[:m]``; returns m (-1:
    too long)."""
    cap = a.shape[0]
    if n == 0:
        return 0
    n = _pad(a, n, b, flags)
    src, dst = b, a
    in_a = False  # whether src is `a`
    has_multidot = False
    has_comma = False
    has_apos = False
    has_dot = False
    for i in range(n):
        c = src[i]
        if c == _DOT:
            has_dot = True
            if i + 1 < n and src[i + 1] == _DOT:
                has_multidot = True
        elif c == _COMMA:
            has_comma = True
        elif c == _APOS:
            has_apos = True
    if has_multidot:
        n = _multidots(src, n, dst, cap)
        if n < 0:
            return -1
        src, dst, in_a = dst, src, not in_a
    if has_comma:
        for which in range(1, 4):
            n = _commas(src, n, dst, cap, flags, which)
            if n < 0:
                return -1
            src, dst, in_a = dst, src, not in_a
    if has_apos:
        for rule in range(1, 6):
            n = _apostrophes(src, n, dst, cap, flags, rule)
            if n < 0:
                return -1
            src, dst, in_a = dst, src, not in_a
    if has_dot:
        n = _nonbreaking(src, n, dst, cap, flags, prefixes, prefix_offsets, prefix_kind)
        if n < 0:
            return -1
        src, dst, in_a = dst, src, not in_a
    n = _restore(src, n, dst, cap)
    if n > 0 and in_a:  # the result is in `b`
        a[:n] = dst[:n]
    return n


@numba.njit(cache=True, nogil=True)
def tokenize_range(
    data, offsets, start, stop, flags, prefixes, prefix_offsets, prefix_kind, out, out_len
):
    """Tokenize lines ``start .. stop-1`` of a batch.

    ``data[offsets[s]:offsets[s+1]]`` are the code points of line ``s``. Its tokens, joined by
    single spaces, go to ``out[2 * offsets[s] + s:]`` (room for ``2 * len + 1``, more than
    any line needs) and their length to ``out_len[s]``; -1 marks a line the kernel could not
    handle (its intermediate text outgrew the scratch buffer), for the caller's fallback.
    """
    maxlen = 0
    for s in range(start, stop):
        ln = offsets[s + 1] - offsets[s]
        if ln > maxlen:
            maxlen = ln
    cap = 8 * maxlen + 64
    a = np.empty(cap, dtype=np.uint32)
    b = np.empty(cap, dtype=np.uint32)
    for s in range(start, stop):
        lo = offsets[s]
        hi = offsets[s + 1]
        n = _tokenize_line(data, lo, hi, flags, prefixes, prefix_offsets, prefix_kind, a, b)
        base = 2 * lo + s
        if n > 2 * (hi - lo) + 1:  # cannot happen: tokens are the line's characters + spaces
            n = -1
        if n > 0:
            out[base : base + n] = a[:n]
        out_len[s] = n


@numba.njit(cache=True, nogil=True)
def gather(offsets, out, out_len, sep, dst):
    """Concatenate the lines' results (``out_len[s] >= 0``) into ``dst``, each followed by
    ``sep``; returns the length. A line marked -1 contributes only its separator."""
    m = 0
    for s in range(out_len.shape[0]):
        n = out_len[s]
        if n > 0:
            base = 2 * offsets[s] + s
            dst[m : m + n] = out[base : base + n]
            m += n
        dst[m] = sep
        m += 1
    return m
