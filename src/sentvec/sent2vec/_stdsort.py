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
                # __partial_sort(first, last, last): make_heap, then sort_heap; both phases run
                # __adjust_heap (inlined once below) on (hole, heap length, moved value)
                length = last - first
                nmake = (length - 2) // 2 + 1
                for step in range(nmake + length - 1):
                    if step < nmake:
                        hole = (length - 2) // 2 - step
                        hlen = length
                        vk = keys[first + hole]
                        vv = vals[first + hole]
                    else:
                        end = last - 1 - (step - nmake)
                        vk = keys[end]
                        vv = vals[end]
                        keys[end] = keys[first]
                        vals[end] = vals[first]
                        hole = 0
                        hlen = end - first
                    top = hole
                    second = hole
                    while second < (hlen - 1) // 2:
                        second = 2 * (second + 1)
                        if keys[first + second] < keys[first + second - 1]:
                            second -= 1
                        keys[first + hole] = keys[first + second]
                        vals[first + hole] = vals[first + second]
                        hole = second
                    if (hlen & 1) == 0 and second == (hlen - 2) // 2:
                        second = 2 * (second + 1)
                        keys[first + hole] = keys[first + second - 1]
                        vals[first + hole] = vals[first + second - 1]
                        hole = second - 1
                    parent = (hole - 1) // 2  # __push_heap
                    while hole > top and keys[first + parent] < vk:
                        keys[first + hole] = keys[first + parent]
                        vals[first + hole] = vals[first + parent]
                        hole = parent
                        parent = (hole - 1) // 2
                    keys[first + hole] = vk
                    vals[first + hole] = vv
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
    # __final_insertion_sort: guarded insertion for the first 16, unguarded for the rest
    guarded_end = n if n <= _THRESHOLD else _THRESHOLD
    for i in range(1, n):
        vk = keys[i]
        vv = vals[i]
        if i < guarded_end and vk < keys[0]:
            for j in range(i, 0, -1):
                keys[j] = keys[j - 1]
                vals[j] = vals[j - 1]
            keys[0] = vk
            vals[0] = vv
        else:  # __unguarded_linear_insert
            pos = i
            nxt = i - 1
            while vk < keys[nxt]:
                keys[pos] = keys[nxt]
                vals[pos] = vals[nxt]
                pos = nxt
                nxt -= 1
            keys[pos] = vk
            vals[pos] = vv


_JITTED = None
_PY_LIMIT = 4096  # below this, plain Python is faster than compiling


def _jitted():
    global _JITTED
    if _JITTED is None:
        import numba

        _JITTED = numba.njit(cache=True, nogil=True)(_introsort_impl)
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
