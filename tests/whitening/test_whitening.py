"""Tests of sentvec.whitening against hand-computed values, numpy and scikit-learn oracles."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from sentvec.whitening import Whitening, WhiteningStatistics


def _correlated(n: int = 400, d: int = 12, seed: int = 0, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) * np.linspace(2.0, 0.2, d)[:, None]
    return (rng.normal(size=(n, d)) @ A + rng.normal(size=d) * 5).astype(dtype)


def _diag_data() -> np.ndarray:
    """All 8 sign patterns scaled by (2, 1, 0.5): mean 0, covariance exactly diag(4, 1, 0.25)."""
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    return signs * np.array([2.0, 1.0, 0.5])


def test_diagonal_covariance_gives_inverse_sqrt_matrix():
    X = _diag_data()
    np.testing.assert_allclose(np.cov(X.T, bias=True), np.diag([4.0, 1.0, 0.25]), atol=1e-15)
    w = Whitening().fit(X)
    np.testing.assert_allclose(np.abs(w.whitening_matrix_), np.diag([0.5, 1.0, 2.0]), atol=1e-12)
    # deterministic signs: largest-magnitude entry of each component positive
    np.testing.assert_allclose(w.whitening_matrix_, np.diag([0.5, 1.0, 2.0]), atol=1e-12)
    np.testing.assert_allclose(w.explained_variance_, [4.0, 1.0, 0.25], atol=1e-12)
    np.testing.assert_allclose(w.mean_, 0.0, atol=1e-15)
    # x_hat = (x - mu) U D^-1/2 with U = I: every pattern becomes +-1 in every coordinate
    np.testing.assert_allclose(np.abs(w.transform(X)), 1.0, atol=1e-12)


def test_whitened_mean_zero_identity_covariance():
    X = _correlated()
    Z = Whitening().fit_transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(np.cov(Z.T, bias=True), np.eye(X.shape[1]), atol=1e-9)


def test_matches_numpy_eigendecomposition_and_keeps_largest_first():
    X = _correlated()
    k = 5
    w = Whitening(n_components=k).fit(X)
    evals, evecs = np.linalg.eigh(np.cov(X.T, bias=True))
    order = np.argsort(evals)[::-1][:k]
    np.testing.assert_allclose(w.explained_variance_, evals[order], rtol=1e-10)
    assert np.all(np.diff(w.explained_variance_) < 0)
    # each component equals the numpy eigenvector up to sign
    dots = np.abs(np.sum(w.components_ * evecs[:, order].T, axis=1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-10)
    Z = w.transform(X)
    assert Z.shape == (X.shape[0], k)
    np.testing.assert_allclose(np.cov(Z.T, bias=True), np.eye(k), atol=1e-9)
    assert w.n_components_ == k and w.n_features_in_ == X.shape[1] and w.n_dropped_ == 0


def test_agrees_with_sklearn_pca_whiten_up_to_sign_and_n_scale():
    X = _correlated()
    n = X.shape[0]
    ours = Whitening(n_components=6).fit_transform(X)
    ref = PCA(n_components=6, whiten=True, svd_solver="full").fit_transform(X)
    # PCA divides by the (N-1)-normalised variance, we by the N-normalised one
    ref = ref * np.sqrt(n / (n - 1))
    signs = np.sign(np.sum(ours * ref, axis=0))
    np.testing.assert_allclose(ours, ref * signs, atol=1e-8)


def test_signs_do_not_depend_on_row_order():
    X = _correlated()
    perm = np.random.default_rng(3).permutation(len(X))
    a, b = Whitening().fit(X), Whitening().fit(X[perm])
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)
    idx = np.argmax(np.abs(a.components_), axis=1)
    assert np.all(a.components_[np.arange(len(idx)), idx] > 0)


def test_partial_fit_equals_fit():
    X = _correlated(n=1000)
    full = Whitening(n_components=8).fit(X)
    inc = Whitening(n_components=8)
    for chunk in np.array_split(X, [137, 400, 401, 777]):
        inc.partial_fit(chunk)
    assert inc.n_samples_seen_ == full.n_samples_seen_ == 1000
    np.testing.assert_allclose(inc.mean_, full.mean_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        inc.statistics_.covariance, full.statistics_.covariance, rtol=0, atol=1e-10
    )
    np.testing.assert_allclose(inc.transform(X), full.transform(X), atol=1e-8)


def test_statistics_merge_and_raw_sums():
    X = _correlated(n=300)
    parts = [WhiteningStatistics.from_array(p) for p in np.array_split(X, 4)]
    merged = parts[3].merge(parts[0]).merge(parts[2] + parts[1])  # any order
    direct = WhiteningStatistics.from_array(X)
    assert merged.n_samples == 300
    np.testing.assert_allclose(merged.mean, X.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(merged.covariance, np.cov(X.T, bias=True), atol=1e-10)
    np.testing.assert_allclose(merged.sum, X.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(merged.sum_outer, X.T @ X, rtol=1e-10)
    a = Whitening.from_statistics(merged, n_components=4)
    b = Whitening(n_components=4).fit(X)
    np.testing.assert_allclose(a.transform(X), b.transform(X), atol=1e-8)
    assert direct.merge(WhiteningStatistics.empty(X.shape[1])) is direct
    with pytest.raises(ValueError, match="features"):
        direct.merge(WhiteningStatistics.from_array(X[:, :3]))


def test_sample_weight_equals_repeated_rows():
    X = _correlated(n=50)
    counts = np.random.default_rng(1).integers(0, 4, size=50)
    counts[0] = 1
    a = WhiteningStatistics.from_array(X, sample_weight=counts)
    b = WhiteningStatistics.from_array(np.repeat(X, counts, axis=0))
    assert a.n_samples == b.n_samples == counts.sum()
    np.testing.assert_allclose(a.mean, b.mean, atol=1e-12)
    np.testing.assert_allclose(a.scatter, b.scatter, atol=1e-9)
    with pytest.raises(ValueError, match="sample_weight"):
        WhiteningStatistics.from_array(X, sample_weight=np.full(50, 0.5))


def test_dask_fit_matches_numpy():
    da = pytest.importorskip("dask.array")
    X = _correlated(n=500, d=9)
    lazy = da.from_array(X, chunks=(37, 4))  # row and column blocks, uneven last block
    w_dask = Whitening(n_components=5).fit(lazy)
    w_np = Whitening(n_components=5).fit(X)
    assert w_dask.n_samples_seen_ == 500
    np.testing.assert_allclose(w_dask.mean_, w_np.mean_, atol=1e-10)
    np.testing.assert_allclose(
        w_dask.statistics_.covariance, w_np.statistics_.covariance, atol=1e-10
    )
    out = w_dask.transform(lazy)
    assert out.shape == (500, 5)
    np.testing.assert_allclose(out.compute(), w_np.transform(X), atol=1e-8)


def test_dask_rows_of_unknown_count_after_boolean_masking():
    # X[mask] has row chunks of unknown size (NaN); some blocks are empty after masking
    da = pytest.importorskip("dask.array")
    X = _correlated(n=500, d=9)
    keep = X[:, 0] > 0.3
    keep[:37] = False  # the whole first block goes
    lazy = da.from_array(X, chunks=(37, 9))
    masked = lazy[da.from_array(keep, chunks=37)]
    assert np.isnan(masked.shape[0])
    w_dask = Whitening().fit(masked)
    w_np = Whitening().fit(X[keep])
    assert w_dask.n_samples_seen_ == int(keep.sum())
    np.testing.assert_allclose(
        w_dask.statistics_.covariance, w_np.statistics_.covariance, atol=1e-10
    )
    with pytest.raises(ValueError, match="at least 2 rows"):
        Whitening().fit(lazy[da.from_array(np.zeros(500, bool), chunks=37)])


def test_fewer_rows_than_features_drops_null_directions_with_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 20))
    with pytest.warns(UserWarning, match=r"dropped 15 of the 20 requested directions"):
        w = Whitening().fit(X)
    assert w.n_components_ == 5 and w.n_dropped_ == 15  # rank of 6 centred rows is 5
    Z = w.transform(X)
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(np.cov(Z.T, bias=True), np.eye(5), atol=1e-8)
    # new rows with components in the null space stay bounded (no 1e8 / inf)
    new = rng.normal(size=(50, 20))
    assert np.abs(w.transform(new)).max() < 100
    # the naive formula blows up on the same data
    evals, evecs = np.linalg.eigh(np.cov(X.T, bias=True))
    with np.errstate(all="ignore"):
        naive = (new - X.mean(0)) @ evecs / np.sqrt(evals)
    assert not np.all(np.abs(naive) < 1e4)  # NaN compares False too


def test_repeated_rows_with_n_components():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(3, 8))
    X = np.repeat(base, 40, axis=0)  # 120 rows, rank 2 after centring
    with pytest.warns(UserWarning, match="dropped 2 of the 4"):
        w = Whitening(n_components=4).fit(X)
    Z = w.transform(X)
    assert Z.shape == (120, 2) and np.isfinite(Z).all() and np.abs(Z).max() < 10


def test_invalid_inputs_raise_value_error():
    X = _correlated(n=20, d=4)
    with pytest.raises(ValueError, match="minimum of 2"):
        Whitening().fit(X[:1])
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Whitening().fit(bad)
    with pytest.raises(ValueError, match="identical"):
        Whitening().fit(np.ones((5, 4)))
    with pytest.raises(ValueError, match="n_components"):
        Whitening(n_components=5).fit(X)
    with pytest.raises(ValueError, match="n_components"):
        Whitening(n_components=0).fit(X)
    with pytest.raises(ValueError, match="eps"):
        Whitening(eps=-1.0).fit(X)
    with pytest.raises(NotFittedError):
        Whitening().transform(X)
    w = Whitening().fit(X)
    with pytest.raises(ValueError, match="features"):
        w.transform(X[:, :3])
    inc = Whitening()
    with pytest.raises(ValueError, match="at least 2 rows"):
        inc.partial_fit(X[:1])
    assert not hasattr(inc, "statistics_")  # left unchanged


def test_dtype_preserved():
    X32 = _correlated(dtype=np.float32)
    w = Whitening(n_components=4).fit(X32)
    assert w.transform(X32).dtype == np.float32
    assert w.fit_transform(X32).dtype == np.float32
    assert w.transform(X32.astype(np.float64)).dtype == np.float64
    np.testing.assert_allclose(
        w.transform(X32), w.transform(X32.astype(np.float64)), rtol=1e-4, atol=1e-4
    )


def test_save_load_round_trip(tmp_path):
    X = _correlated()
    w = Whitening(n_components=7, eps=1e-9).fit(X)
    w.save(tmp_path / "wh")
    cfg = json.loads((tmp_path / "wh" / "whitening.json").read_text())
    assert cfg["n_components"] == 7 and cfg["n_features_in"] == X.shape[1]
    assert not any(p.suffix in {".pkl", ".pickle"} for p in (tmp_path / "wh").iterdir())
    back = Whitening.load(tmp_path / "wh")
    assert back.get_params() == w.get_params()
    np.testing.assert_array_equal(back.transform(X), w.transform(X))
    np.testing.assert_allclose(back.explained_variance_ratio_, w.explained_variance_ratio_)
    back.partial_fit(X)  # statistics survive the round trip
    assert back.n_samples_seen_ == 2 * len(X)
    np.testing.assert_allclose(back.mean_, w.mean_, atol=1e-10)


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="whitening.json"):
        Whitening.load(tmp_path / "nothing")
    w = Whitening().fit(_correlated(d=4))
    w.save(tmp_path / "a")
    (tmp_path / "a" / "mean.npy").write_bytes(b"not an npy file")
    with pytest.raises(ValueError, match="mean.npy"):
        Whitening.load(tmp_path / "a")
    w.save(tmp_path / "b")
    (tmp_path / "b" / "components.npy").unlink()
    with pytest.raises(FileNotFoundError, match="components.npy"):
        Whitening.load(tmp_path / "b")
    w.save(tmp_path / "c")
    (tmp_path / "c" / "whitening.json").write_text("{not json")
    with pytest.raises(ValueError, match="whitening.json"):
        Whitening.load(tmp_path / "c")
    w.save(tmp_path / "d")
    np.save(tmp_path / "d" / "mean.npy", np.zeros(3))
    with pytest.raises(ValueError, match="corrupt"):
        Whitening.load(tmp_path / "d")
    # edited JSON fields: each is "not a valid Whitening config", never an AttributeError
    import json

    w.save(tmp_path / "e")
    cfg_path = tmp_path / "e" / "whitening.json"
    good = json.loads(cfg_path.read_text())
    for change, match in [
        ({"params": [1]}, "params is a list"),
        ({"n_samples_seen": 0}, "n_samples_seen=0"),
        ({"n_components": 2.0}, "n_components=2.0"),
        ({"n_components": 9}, "exceeds n_features_in"),
        ({"version": True}, "unsupported version True"),
        ({"version": 1.0}, "unsupported version 1.0"),
    ]:
        cfg_path.write_text(json.dumps({**good, **change}))
        with pytest.raises(ValueError, match=f"not a valid Whitening config: .*{match}"):
            Whitening.load(tmp_path / "e")
    cfg_path.write_text(json.dumps(good))
    assert np.array_equal(Whitening.load(tmp_path / "e").whitening_matrix_, w.whitening_matrix_)


def test_sklearn_clone_and_params():
    w = Whitening(n_components=3, eps=1e-8)
    assert w.get_params() == {
        "n_components": 3,
        "eps": 1e-8,
        "solver": "eigh",
        "warn_singular": True,
    }
    c = clone(w)
    assert c is not w and c.get_params() == w.get_params()
    w.set_params(n_components=2)
    assert w.n_components == 2
    fitted = Whitening(2).fit(_correlated(d=4))
    assert not hasattr(clone(fitted), "mean_")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Whitening(n_components=None)  # __init__ validates nothing and warns nothing


@parametrize_with_checks([Whitening(), Whitening(solver="cholesky")])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pattern", ["few_repeats", "many_repeats"])
def test_sample_weight_branches_equal_repeated_rows(dtype, pattern):
    # few repeated rows: unweighted syrk + correction; many: one syrk of sqrt(count)-scaled rows
    X = _correlated(n=80, dtype=dtype)
    counts = np.ones(80, dtype=np.int64)
    if pattern == "few_repeats":
        counts[[3, 40]] = (3, 2)
        counts[7] = 0
    else:
        counts = np.random.default_rng(4).integers(0, 5, size=80)
        counts[0] = 1
    a = WhiteningStatistics.from_array(X, sample_weight=counts)
    b = WhiteningStatistics.from_array(np.repeat(X.astype(np.float64), counts, axis=0))
    assert a.n_samples == b.n_samples == counts.sum()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.scatter, b.scatter, rtol=1e-10, atol=1e-8)
    np.testing.assert_array_equal(a.scatter, a.scatter.T)


def test_out_of_range_magnitudes_get_a_clear_error():
    # the covariance of such values over- or underflows float64; say so instead of calling
    # the rows non-finite or identical
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    with pytest.raises(ValueError, match="too large to square"):
        Whitening().fit(X * 1e200)
    with pytest.raises(ValueError, match="too small to square"):
        Whitening().fit(X * 1e-200)
    # identical ordinary rows keep their own message
    with pytest.raises(ValueError, match="all rows are identical"):
        Whitening().fit(np.ones((5, 3)))
    # zero rows: rescaling cannot help, so no advice to rescale
    with pytest.raises(ValueError, match="every row is a zero vector") as err:
        Whitening().fit(np.zeros((5, 3)))
    assert "rescale" not in str(err.value)


@pytest.mark.parametrize("scale", [1e-40, 1e-30, 1e30])
def test_float32_data_of_extreme_scale_is_whitened_like_ordinary_data(scale):
    # the whitening matrix of data near 1e-40 holds values near 1e40, beyond float32: transform
    # must not return inf / NaN; whitened vectors do not depend on the scale of the data
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    ref = Whitening().fit(X).transform(X)
    Xs = X * np.float32(scale)
    Z = Whitening().fit(Xs).transform(Xs)
    assert Z.dtype == np.float32 and np.isfinite(Z).all()
    # 1e-40 is subnormal in float32: its inputs keep only about 17 of 24 bits
    np.testing.assert_allclose(Z, ref, rtol=0, atol=1e-3 if scale < 1e-38 else 1e-5)


def test_whitened_values_beyond_float32_are_an_error_not_inf():
    # fitted on data near 1e-30, then given data of scale 1: x_hat ~ 1e30 * 1e15, past float32
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    w = Whitening().fit(X * np.float32(1e-30))
    with pytest.raises(ValueError, match="overflow float32"):
        w.transform(X * np.float32(1e15))
    Z = w.transform((X * 1e15).astype(np.float64))  # float64 holds them
    assert Z.dtype == np.float64 and np.isfinite(Z).all()


def test_statistics_counts_are_exact_integers_and_sum_merges():
    X = _correlated(n=30, d=3)
    with pytest.raises(ValueError, match="positive sum below 2\\*\\*63"):
        # the uint64 sum wraps around to 1
        WhiteningStatistics.from_array(
            X[:3], sample_weight=np.array([2**63, 2**63, 1], dtype=np.uint64)
        )
    for bad in (2.7, True, -1):
        with pytest.raises(ValueError, match="n_samples="):
            WhiteningStatistics(bad, np.zeros(3), np.zeros((3, 3)))
    parts = [WhiteningStatistics.from_array(X[i : i + 10]) for i in range(0, 30, 10)]
    whole = WhiteningStatistics.from_array(X)
    total = sum(parts)  # starts from 0
    assert total.n_samples == 30
    np.testing.assert_allclose(total.scatter, whole.scatter, atol=1e-10)


# ------------------------------------------------------------------ solver="cholesky"
def _gram(Z):
    return Z @ Z.T


def test_cholesky_solver_is_eq1_up_to_a_rotation():
    X = _correlated(n=400, d=12)
    ref = Whitening().fit(X)
    fast = Whitening(solver="cholesky").fit(X)
    assert fast.solver_ == "cholesky" and not hasattr(fast, "components_")
    Ze, Zc = ref.transform(X), fast.transform(X)
    # W_c = W_e R with R orthogonal: every dot product between whitened rows is the same
    assert np.allclose(_gram(Zc), _gram(Ze), rtol=1e-9, atol=1e-9)
    R = np.linalg.lstsq(ref.whitening_matrix_, fast.whitening_matrix_, rcond=None)[0]
    assert np.allclose(R.T @ R, np.eye(12), atol=1e-9)
    # fit_transform centres once and solves in place: the same rows
    assert np.allclose(Whitening(solver="cholesky").fit_transform(X), Zc, atol=1e-10)
    assert np.allclose(Whitening().fit_transform(X), Ze, atol=1e-10)


def test_cholesky_solver_leaves_a_singular_covariance_to_eigh():
    rng = np.random.default_rng(3)
    X = _correlated(n=300, d=10)
    X[:, -1] = X[:, :-1].sum(axis=1)  # an exact linear dependence: rank 9
    with pytest.warns(UserWarning, match="dropped 1 of the 10"):
        ref = Whitening().fit(X)
    with pytest.warns(UserWarning, match="dropped 1 of the 10"):
        fast = Whitening(solver="cholesky").fit(X)
    assert fast.solver_ == "eigh" and fast.n_components_ == ref.n_components_ == 9
    Y = X[:50] + 1e-3 * rng.standard_normal((50, 10))  # new rows, off the hyperplane
    assert np.allclose(_gram(fast.transform(Y)), _gram(ref.transform(Y)), rtol=1e-7, atol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        Z = Whitening(solver="cholesky").fit_transform(X)
    assert np.allclose(_gram(Z), _gram(ref.transform(X)), rtol=1e-7, atol=1e-7)


def test_cholesky_solver_needs_all_components_and_round_trips(tmp_path):
    assert Whitening(4, solver="cholesky").fit(_correlated(d=6)).solver_ == "eigh"
    with pytest.raises(ValueError, match="solver"):
        Whitening(solver="svd").fit(_correlated(d=6))
    X = _correlated(n=200, d=6)
    w = Whitening(solver="cholesky").fit(X)
    w.save(tmp_path / "w")
    back = Whitening.load(tmp_path / "w")
    assert back.solver_ == "cholesky" and back.get_params() == w.get_params()
    assert np.array_equal(back.transform(X), w.transform(X))


def test_nan_message_is_ours():
    """The NaN error once carried scikit-learn's HistGradientBoosting advice."""
    X = np.random.default_rng(0).normal(size=(20, 4))
    X[3, 1] = np.nan
    X[7, 0] = np.inf
    for call in (Whitening().fit, Whitening().fit_transform, Whitening().partial_fit):
        with pytest.raises(ValueError) as info:
            call(X)
        text = str(info.value)
        assert "2 of 20 rows" in text and "NaN" in text
        assert "HistGradientBoosting" not in text and "imput" not in text.lower()
    fitted = Whitening().fit(X[10:])
    with pytest.raises(ValueError, match="1 of 2 rows") as info:
        fitted.transform(X[6:8])
    assert "HistGradientBoosting" not in str(info.value)
