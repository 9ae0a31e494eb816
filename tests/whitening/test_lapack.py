"""GIL-free Cholesky / dpocon / dtrsm (sentvec.whitening._lapack) against scipy's f2py wrappers.

The oracle is scipy itself (same LAPACK library), so the results must agree bit for bit; the
last test checks the point of the module: the routines are called without holding the GIL.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import lapack, solve_triangular

from sentvec.whitening._lapack import cholesky_lower_inplace, cholesky_rcond, solve_lower_inplace


def _spd(d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4 * d, d)) * rng.uniform(0.1, 3.0, size=d)
    return X.T @ X / (4 * d)


def test_cholesky_and_rcond_equal_scipy_bit_for_bit():
    cov = _spd(37)
    ref, info = lapack.dpotrf(cov, lower=1, clean=1)
    assert info == 0
    ref_rcond, ref_info = lapack.dpocon(ref, float(np.abs(cov).sum(axis=0).max()), uplo="L")
    a = cov.copy()
    L = a.T  # Fortran view of the symmetric matrix
    assert cholesky_lower_inplace(L) == 0
    assert np.array_equal(np.tril(L), ref)
    assert np.array_equal(np.triu(L, 1), np.triu(cov.T, 1))  # strict upper part untouched
    rcond, info = cholesky_rcond(L, float(np.abs(cov).sum(axis=0).max()))
    assert info == ref_info == 0 and rcond == ref_rcond and 0 < rcond < 1


def test_cholesky_reports_not_positive_definite():
    a = np.diag([4.0, -1.0, 2.0])
    assert cholesky_lower_inplace(np.asfortranarray(a)) == 2  # LAPACK info: minor of order 2


def test_solve_lower_inplace_equals_solve_triangular():
    cov = _spd(29, seed=3)
    L = np.linalg.cholesky(cov)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(101, 29))  # C-ordered rows; X.T is Fortran-ordered
    ref = solve_triangular(L, X.T, lower=True)
    Lf = np.asfortranarray(L)
    out = solve_lower_inplace(Lf, X.T)
    assert np.shares_memory(out, X)  # in place
    assert np.array_equal(X.T, ref)


def test_solve_is_the_inverse_oracle():
    cov = _spd(11, seed=9)
    L = np.asfortranarray(np.linalg.cholesky(cov))
    B = np.asfortranarray(np.random.default_rng(2).normal(size=(11, 7)))
    Z = solve_lower_inplace(L, B.copy(order="F"))
    np.testing.assert_allclose(np.tril(L) @ Z, B, atol=1e-10)


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((3, 4)),
        np.zeros((3, 3), dtype=np.float32),
        np.zeros((3, 3), order="C")[:, :2],
    ],
)
def test_bad_matrices_are_rejected(bad):
    with pytest.raises(ValueError):
        cholesky_lower_inplace(bad)


def test_cholesky_rejects_read_only_and_empty(tmp_path):
    np.save(tmp_path / "s.npy", np.asfortranarray(np.eye(4) * 4.0))
    mapped = np.load(tmp_path / "s.npy", mmap_mode="r")  # writing into it would crash
    with pytest.raises(ValueError, match="writeable"):
        cholesky_lower_inplace(mapped)
    for f in (cholesky_lower_inplace, lambda a: cholesky_rcond(a, 1.0)):
        with pytest.raises(ValueError, match="non-empty"):
            f(np.zeros((0, 0), order="F"))


def test_solve_rejects_wrong_layout_and_read_only():
    L = np.asfortranarray(np.eye(3))
    with pytest.raises(ValueError, match="Fortran"):
        solve_lower_inplace(L, np.zeros((3, 5)))  # C-ordered (3, 5) is not Fortran-contiguous
    with pytest.raises(ValueError):
        solve_lower_inplace(L, np.zeros((4, 5), order="F"))
    ro = np.zeros((3, 5), order="F")
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        solve_lower_inplace(L, ro)
    empty = np.zeros((3, 0), order="F")
    assert solve_lower_inplace(L, empty) is empty


def test_calls_go_through_ctypes_without_the_gil():
    # ctypes releases the GIL around a foreign call unless the prototype is a PYFUNCTYPE
    # (_FUNCFLAG_PYTHONAPI); the scoring threads rely on it, so check the mechanism itself
    # (a timing test would be flaky on a loaded 2-core machine)
    import ctypes

    from sentvec.whitening._lapack import _SIGNATURES, _routine

    for module, name in _SIGNATURES:
        fn = _routine(module, name)
        assert isinstance(fn, ctypes._CFuncPtr)
        assert not fn._flags_ & ctypes._FUNCFLAG_PYTHONAPI
