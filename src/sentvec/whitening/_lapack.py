"""Cholesky factorisation, its condition estimate and a triangular solve,
without the GIL.

``scipy.linalg.solve_triangular`` and ``scipy.linalg.lapack.dpotrf`` / ``dpocon`` are f2py
wrappers that keep the GIL during the LAPACK call, so threads that whiten different layer
combinations (:class:`sentvec.evaluation.layers.CombinationScorer`) wait for each other there.
These functions call the same routines of scipy's own BLAS/LAPACK through its public Cython API
(``scipy.linalg.cython_blas`` / ``cython_lapack``; the addresses come from
``numba.extending.get_cython_function_address``) via :mod:`ctypes`, which releases the GIL for
the duration of a foreign call. Same library, same arguments: the results are bit-identical to
the scipy wrappers (tested).

All matrices are float64 and Fortran-ordered as LAPACK sees them; a C-ordered ``(n, d)`` array
is passed as its transpose ``(d, n)``, which is Fortran-ordered without a copy.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

import numpy as np

_P = ctypes.c_void_p
_INT = ctypes.POINTER(ctypes.c_int)
_DBL = ctypes.POINTER(ctypes.c_double)
_CHR = ctypes.c_char_p

#: argument types of the Fortran routines (every argument by reference)
_SIGNATURES: dict[tuple[str, str], tuple[Any, ...]] = {
    # dpotrf(uplo, n, a, lda, info)
    ("scipy.linalg.cython_lapack", "dpotrf"): (_CHR, _INT, _P, _INT, _INT),
    # dpocon(uplo, n, a, lda, anorm, rcond, work, iwork, info)
    ("scipy.linalg.cython_lapack", "dpocon"): (_CHR, _INT, _P, _INT, _DBL, _DBL, _P, _P, _INT),
    # dtrsm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)
    ("scipy.linalg.cython_blas", "dtrsm"): (
        _CHR,
        _CHR,
        _CHR,
        _CHR,
        _INT,
        _INT,
        _DBL,
        _P,
        _INT,
        _P,
        _INT,
    ),
}


@cache
def _routine(module: str, name: str) -> Any:
    from numba.extending import get_cython_function_address

    return ctypes.CFUNCTYPE(None, *_SIGNATURES[module, name])(
        get_cython_function_address(module, name)
    )


def _int(v: int) -> ctypes.c_int:
    return ctypes.c_int(int(v))


def _square_f64(a: np.ndarray, name: str, *, writeable: bool = False) -> int:
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(a).__name__}")
    if a.dtype != np.float64 or a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(
            f"{name} must be a non-empty square float64 matrix, got {a.dtype} {a.shape}"
        )
    if not a.flags.f_contiguous:
        raise ValueError(f"{name} must be Fortran-contiguous")
    if writeable and not a.flags.writeable:
        raise ValueError(f"{name} must be writeable (it is overwritten)")
    return int(a.shape[0])


def cholesky_lower_inplace(a: np.ndarray) -> int:
    """Overwrite the lower triangle of ``a`` with L, ``a = L L^T`` (LAPACK ``dpotrf``, uplo L).

    Parameters
    ----------
    a : ndarray of shape (d, d), float64, Fortran-contiguous
        Symmetric positive definite; only its lower triangle is read (a symmetric C-ordered
        matrix may be passed as ``a.T``). The strict upper triangle is left as it was.

    Returns
    -------
    int
        LAPACK ``info``: 0 on success; ``i > 0`` when the leading minor of order i is not
        positive definite (``a`` is then partly overwritten).

    Raises
    ------
    ValueError
        ``a`` is not a non-empty, square, writeable, Fortran-contiguous float64 matrix.
    """
    d = _square_f64(a, "a", writeable=True)
    info = ctypes.c_int(0)
    n_ = _int(d)
    _routine("scipy.linalg.cython_lapack", "dpotrf")(
        b"L", ctypes.byref(n_), a.ctypes.data, ctypes.byref(n_), ctypes.byref(info)
    )
    return int(info.value)


def cholesky_rcond(L: np.ndarray, anorm: float) -> tuple[float, int]:
    """Estimated reciprocal 1-norm condition number of ``L L^T`` (LAPACK ``dpocon``, uplo L).

    Parameters
    ----------
    L : ndarray of shape (d, d), float64, Fortran-contiguous
        Output of :func:`cholesky_lower_inplace` (only the lower triangle is read).
    anorm : float
        1-norm (largest absolute column sum) of the original matrix.

    Returns
    -------
    rcond : float
    info : int
        LAPACK ``info`` (0 on success).

    Raises
    ------
    ValueError
        ``L`` is not a non-empty, square, Fortran-contiguous float64 matrix.
    """
    d = _square_f64(L, "L")
    n_ = _int(d)
    rcond = ctypes.c_double(0.0)
    info = ctypes.c_int(0)
    work = np.empty(3 * max(d, 1), dtype=np.float64)
    iwork = np.empty(max(d, 1), dtype=np.intc)
    _routine("scipy.linalg.cython_lapack", "dpocon")(
        b"L",
        ctypes.byref(n_),
        L.ctypes.data,
        ctypes.byref(n_),
        ctypes.byref(ctypes.c_double(float(anorm))),
        ctypes.byref(rcond),
        work.ctypes.data,
        iwork.ctypes.data,
        ctypes.byref(info),
    )
    return float(rcond.value), int(info.value)


def solve_lower_inplace(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Overwrite ``b`` with ``L^{-1} b`` (BLAS ``dtrsm``: left side, lower, no transpose).

    Parameters
    ----------
    L : ndarray of shape (d, d), float64, Fortran-contiguous
        Lower triangular, non-singular (only the lower triangle is read).
    b : ndarray of shape (d, n), float64, Fortran-contiguous
        E.g. ``X.T`` of C-ordered rows ``X`` of shape (n, d), which then become ``X L^{-T}``.

    Returns
    -------
    ndarray
        ``b`` itself.

    Raises
    ------
    ValueError
        Wrong dtype, layout or shapes, an empty ``L`` or a read-only ``b``.
    """
    d = _square_f64(L, "L")
    if (
        not isinstance(b, np.ndarray)
        or b.dtype != np.float64
        or b.ndim != 2
        or b.shape[0] != d
        or not b.flags.f_contiguous
    ):
        raise ValueError(
            f"b must be a Fortran-contiguous float64 ({d}, n) matrix, got {b.dtype} {b.shape}"
        )
    if not b.flags.writeable:
        raise ValueError("b must be writeable (it is overwritten)")
    if b.shape[1] == 0:
        return b
    m_, n_ = _int(d), _int(b.shape[1])
    _routine("scipy.linalg.cython_blas", "dtrsm")(
        b"L",
        b"L",
        b"N",
        b"N",
        ctypes.byref(m_),
        ctypes.byref(n_),
        ctypes.byref(ctypes.c_double(1.0)),
        L.ctypes.data,
        ctypes.byref(m_),
        b.ctypes.data,
        ctypes.byref(m_),
    )
    return b
