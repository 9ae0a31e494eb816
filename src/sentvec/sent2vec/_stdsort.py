"""Emulation of libstdc++'s ``std::sort`` (introsort), needed to reproduce official vocabulary ids.

The official sent2vec code orders its vocabulary with ``std::sort`` over the entries in
first-occurrence order, comparing ``(type ascending, count descending)``. ``std::sort`` is not
stable, so words with equal counts come out in an order fixed by the algorithm itself. This module
reimplements that algorithm (as shipped with GCC's libstdc++: introsort with median-of-three pivot
moved to the front, unguarded Hoare partition, heap-sort fallback once the depth budget
``2 * floor(log2(n))`` is spent, and a final insertion sort whose first 16 elements are sorted
guarded) so that the permutation of ties is identical.

The algorithm is written once as plain Python over NumPy arrays; :func:`std_sort_order` compiles it
with Numba on first use for large inputs (Numba is imported lazily).
"""

from __future__ import annotations

import numpy as np

_THRESHOLD = 16  # libstdc++ _S_threshold


def _introsort_impl(keys: np.ndarray, vals: np.ndarray) -> None:  # pragma: no cover - jitted
    """Sort ``keys`` ascending in place (moving ``vals`` along) exactly as libstdc++ std::sort."""
    n = keys.shape[0]
    if n < 2:
        return
    depth0 = 0
    m = n
    while m > 1:  # floor(log2(n))
        m >>= 1
        depth0 += 1
    # explicit stack of (first, last, depth); subranges are disjoint, so order does not matter
    stack = np.empty((2 * depth0 + 8, 3), dtype=np.int64)
    sp = 0
    stack[sp, 0] = 0
    stack[sp, 1] = n
    stack[sp, 2] = 2 * depth0
    sp += 1
    while sp > 0:
        sp -= 1
        first = stack[sp, 0]
        last = stack[sp, 1]
        depth = stack[sp, 2]
        while last - first > _THRESHOLD:
            if depth == 0:
                # __partial_sort(first, last, last): make_heap then sort_heap
                length = last - first
                parent = (length - 2) // 2
                while True:
                    _adjust_heap(keys, vals, first, parent, length, keys[first + parent],
                                 vals[first + parent])
                    if parent == 0:
                        break
                    parent -= 1
                end = last
                while end - first > 1:
                    end -= 1
                    vk = keys[end]
                    vv = vals[end]
                    keys[end] = keys[first]
                    vals[end] = vals[first]
                    _adjust_heap(keys, vals, first, 0, end - first, vk, vv)
                break
            depth -= 1
            # __unguarded_partition_pivot: median of (first+1, mid, last-1) moved to first
            mid = first + (last - first) // 2
            a = first + 1
            b = mid
            c = last - 1
            if keys[a] < keys[b]:
                if keys[b] < keys[c]:
                    pick = b
                elif keys[a] < keys[c]:
                    pick = c
                else:
                    pick = a
            elif keys[a] < keys[c]:
                pick = a
            elif keys[b] < keys[c]:
                pick = c
            else:
                pick = b
            tk = keys[first]
            tv = vals[first]
            keys[first] = keys[pick]
            vals[first] = vals[pick]
            keys[pick] = tk
            vals[pick] = tv
            pivot = keys[first]
            lo = first + 1
            hi = last
            while True:
                while keys[lo] < pivot:
                    lo += 1
                hi -= 1
                while pivot < keys[hi]:
                    hi -= 1
                if not lo < hi:
                    break
                tk = keys[lo]
                tv = vals[lo]
                keys[lo] = keys[hi]
                vals[lo] = vals[hi]
                keys[hi] = tk
                vals[hi] = tv
                lo += 1
            cut = lo
            stack[sp, 0] = cut
            stack[sp, 1] = last
            stack[sp, 2] = depth
            sp += 1
            last = cut
    # __final_insertion_sort
    guarded_end = n if n <= _THRESHOLD else _THRESHOLD
    for i in range(1, guarded_end):
        vk = keys[i]
        vv = vals[i]
        if vk < keys[0]:
            for j in range(i, 0, -1):
                keys[j] = keys[j - 1]
                vals[j] = vals[j - 1]
            keys[0] = vk
            vals[0] = vv
        else:
            _linear_insert(keys, vals, i)
    for i in range(guarded_end, n):
        _linear_insert(keys, vals, i)


def _linear_insert(keys, vals, last):  # pragma: no cover - jitted
    vk = keys[last]
    vv = vals[last]
    nxt = last - 1
    while vk < keys[nxt]:
        keys[last] = keys[nxt]
        vals[last] = vals[nxt]
        last = nxt
        nxt -= 1
    keys[last] = vk
    vals[last] = vv


def _adjust_heap(keys, vals, first, hole, length, vk, vv):  # pragma: no cover - jitted
    top = hole
    second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if keys[first + second] < keys[first + second - 1]:
            second -= 1
        keys[first + hole] = keys[first + second]
        vals[first + hole] = vals[first + second]
        hole = second
    if (length & 1) == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        keys[first + hole] = keys[first + second - 1]
        vals[first + hole] = vals[first + second - 1]
        hole = second - 1
    # __push_heap
    parent = (hole - 1) // 2
    while hole > top and keys[first + parent] < vk:
        keys[first + hole] = keys[first + parent]
        vals[first + hole] = vals[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    keys[first + hole] = vk
    vals[first + hole] = vv


_JITTED = None
_PY_LIMIT = 4096  # below this, plain Python is faster than compiling


def _jitted():
    global _JITTED
    if _JITTED is None:
        import numba

        li = numba.njit(cache=True, nogil=True)(_linear_insert)
        ah = numba.njit(cache=True, nogil=True)(_adjust_heap)
        g = dict(_introsort_impl.__globals__)
        g["_linear_insert"] = li
        g["_adjust_heap"] = ah
        import types

        fn = types.FunctionType(_introsort_impl.__code__, g, "_introsort_impl")
        _JITTED = numba.njit(nogil=True)(fn)
    return _JITTED


def std_sort_order(keys: np.ndarray) -> np.ndarray:
    """Permutation that libstdc++ ``std::sort`` applies to a sequence compared by ``keys``.

    Parameters
    ----------
    keys : ndarray of shape (n,), int64
        Sort keys; element ``a`` goes before ``b`` when ``keys[a] < keys[b]`` (the comparator).

    Returns
    -------
    order : ndarray of shape (n,), int64
        ``order[k]`` is the original position of the element that ends at position ``k``.
        Elements with equal keys appear in the (unstable) order std::sort gives them.
    """
    k = np.array(keys, dtype=np.int64, copy=True)
    v = np.arange(k.shape[0], dtype=np.int64)
    if k.shape[0] <= _PY_LIMIT:
        _introsort_impl(k, v)
    else:
        _jitted()(k, v)
    return v
