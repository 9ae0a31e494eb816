"""SemanticSearch against a brute-force numpy argsort oracle (both backends, both metrics)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from sentvec.search import SemanticSearch

BACKENDS = ("exact", "faiss")
METRICS = ("cosine", "dot")


def oracle(X, Q, k, metric):
    """Stable argsort of the float64 scores of the float32 (cosine: float32-normalised) vectors:
    ties by ascending id; pads with -1 / -inf beyond n. This is the documented ranking."""
    X = np.asarray(X, np.float32)
    Q = np.asarray(Q, np.float32)
    if metric == "cosine":
        X = X / np.where((n := np.linalg.norm(X, axis=1, keepdims=True)) > 0, n, 1)
        Q = Q / np.where((n := np.linalg.norm(Q, axis=1, keepdims=True)) > 0, n, 1)
    S = Q.astype(np.float64) @ X.astype(np.float64).T
    order = np.argsort(-S, axis=1, kind="stable")[:, :k]
    ids = np.full((len(Q), k), -1)
    scores = np.full((len(Q), k), -np.inf)
    ids[:, : order.shape[1]] = order
    scores[:, : order.shape[1]] = np.take_along_axis(S, order, axis=1)
    return scores, ids


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((700, 24)).astype(np.float32), rng.standard_normal((40, 24)).astype(
        np.float32
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [1, 10, 700, 705])
def test_matches_bruteforce_oracle(data, backend, metric, k):
    X, Q = data
    index = SemanticSearch(metric=metric, backend=backend)
    ids_a = index.add(X[:300])
    ids_b = index.add(X[300:])
    assert ids_a.tolist() == list(range(300)) and ids_b.tolist() == list(range(300, 700))
    scores, ids = index.search(Q, k)
    ref_s, ref_i = oracle(X, Q, k, metric)
    assert scores.dtype == np.float32 and ids.dtype == np.int64 and scores.shape == (40, k)
    assert np.array_equal(ids, ref_i)
    assert np.array_equal(scores, ref_s.astype(np.float32))
    if k > 700:  # fewer than k stored: id -1, score -inf
        assert (ids[:, 700:] == -1).all() and np.isneginf(scores[:, 700:]).all()
    assert index.ntotal == len(index) == 700


@pytest.mark.parametrize("metric", METRICS)
def test_backends_agree_on_ties_and_near_ties(metric):
    """Integer vectors (many exact ties) plus near-duplicates 1e-7 apart: faiss and exact return
    the same ids as the float64 oracle, whatever the float32 rounding of either scan."""
    rng = np.random.default_rng(7)
    base = rng.integers(-2, 3, (300, 6)).astype(np.float32)
    near = (
        base[:200] * np.float32(1 + 1e-7) + rng.standard_normal((200, 6)).astype(np.float32) * 1e-7
    )
    X = np.concatenate([base, near])
    Q = rng.integers(-2, 3, (60, 6)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = []
        for backend in BACKENDS:
            index = SemanticSearch(metric=metric, backend=backend)
            for part in np.array_split(X, 3):
                index.add(part)
            results.append(index.search(Q, 15))
        ref_s, ref_i = oracle(X, Q, 15, metric)
    (se, ie), (sf, if_) = results
    assert np.array_equal(ie, if_) and np.array_equal(se, sf)
    assert np.array_equal(ie, ref_i)
    assert (np.diff(ref_s, axis=1) == 0).any()  # the data does contain exact ties


def test_exact_ties_are_ranked_by_ascending_id():
    # 5 copies of the same vector among others: equal scores straddle the k-th place
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4)).astype(np.float32)
    dup = [7, 13, 21, 30, 44]
    X[dup] = X[7]
    index = SemanticSearch(metric="dot")
    index.add(X)
    scores, ids = index.search(X[7:8] * 100, 3)  # the duplicates are the top 5
    assert ids[0].tolist() == [7, 13, 21]
    assert len(set(scores[0].tolist())) == 1
    s_all, i_all = index.search(X[7:8] * 100, 50)
    assert i_all[0, :5].tolist() == dup
    assert np.array_equal(i_all, oracle(X, X[7:8] * 100, 50, "dot")[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_load_roundtrip(tmp_path, data, backend):
    X, Q = data
    index = SemanticSearch(metric="cosine", backend=backend)
    index.add(X)
    before = index.search(Q, 5)
    index.save(tmp_path / "idx")
    cfg = json.loads((tmp_path / "idx" / "search_index.json").read_text())
    assert cfg["backend"] == backend and cfg["ntotal"] == 700 and cfg["dim"] == 24
    expected_file = "index.faiss" if backend == "faiss" else "embeddings.npy"
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == sorted(
        ["search_index.json", expected_file]
    )
    loaded = SemanticSearch.load(tmp_path / "idx")
    after = loaded.search(Q, 5)
    assert np.array_equal(before[1], after[1]) and np.array_equal(before[0], after[0])
    assert (loaded.metric, loaded.backend, loaded.ntotal) == ("cosine", backend, 700)
    loaded.add(X[:2])  # a loaded index keeps growing
    assert loaded.search(X[:1], 1)[1][0, 0] in (0, 700)


def test_save_replaces_existing_directory_and_load_errors(tmp_path, data):
    X, _ = data
    a = SemanticSearch(backend="exact")
    a.add(X)
    a.save(tmp_path / "idx")
    b = SemanticSearch(backend="faiss")
    b.add(X[:10])
    b.save(tmp_path / "idx")  # swapped atomically: no leftover embeddings.npy
    assert not (tmp_path / "idx" / "embeddings.npy").exists()
    assert SemanticSearch.load(tmp_path / "idx").ntotal == 10
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    with pytest.raises(FileNotFoundError, match="no search index"):
        SemanticSearch.load(tmp_path / "nope")
    cfg = tmp_path / "idx" / "search_index.json"
    cfg.write_text(cfg.read_text().replace('"ntotal": 10', '"ntotal": 11'))
    with pytest.raises(ValueError, match="config says"):
        SemanticSearch.load(tmp_path / "idx")
    cfg.write_text(json.dumps({"format": "other", "version": 1}))
    with pytest.raises(ValueError, match="unsupported index format"):
        SemanticSearch.load(tmp_path / "idx")


def test_zero_vectors_warned_and_scored_zero():
    X = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0]], np.float32)
    index = SemanticSearch(metric="cosine")
    with pytest.warns(UserWarning, match="1 of 3 embeddings are all-zero"):
        index.add(X)
    scores, ids = index.search(np.array([[0, 0, 1]], np.float32), 3)
    assert np.allclose(scores, 0) and ids[0].tolist() == [0, 1, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SemanticSearch(metric="dot").add(X)  # dot: zero vectors are legitimate, no warning


def test_bad_inputs():
    with pytest.raises(ValueError, match="metric='l2' is invalid"):
        SemanticSearch(metric="l2")
    with pytest.raises(ValueError, match="backend='annoy' is invalid"):
        SemanticSearch(backend="annoy")
    index = SemanticSearch()
    with pytest.raises(ValueError, match="add vectors first"):
        index.search(np.zeros((1, 3)), 1)
    index.add(np.ones((2, 3)))
    with pytest.raises(ValueError, match="3"):
        index.add(np.ones((2, 4)))
    with pytest.raises(ValueError, match="non-finite"):
        index.search(np.array([[np.nan, 0, 0]]), 1)
    with pytest.raises(ValueError, match="k=0 is invalid"):
        index.search(np.ones((1, 3)), 0)
    with pytest.raises(ValueError, match="no encoder attached"):
        index.add_texts(["a"])
    # an empty index answered with padding only (id -1, score -inf)
    empty = SemanticSearch(dim=3)
    with pytest.raises(ValueError, match="holds no vectors"):
        empty.search(np.ones((2, 3)), 4)
    with pytest.raises(ValueError, match=r"no rows \(shape \(0, 3\)\)"):
        empty.add(np.zeros((0, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="no rows"):
        SemanticSearch().add(np.zeros((0, 5)))
    assert empty.ntotal == 0


class WordCount:
    """Toy encoder: counts of three vocabulary words."""

    vocab = ("cat", "dog", "fish")

    def encode(self, sentences, *, batch_size=32, show_progress_bar=None, normalize=False):
        return np.array([[s.split().count(w) for w in self.vocab] for s in sentences], np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_texts_with_attached_encoder(backend):
    docs = ["cat cat", "dog", "fish fish fish", "cat dog"]
    index = SemanticSearch(metric="cosine", backend=backend, encoder=WordCount())
    assert index.add_texts(docs).tolist() == [0, 1, 2, 3]
    scores, ids = index.search_texts(["fish", "cat"], 2)
    assert ids[0, 0] == 2 and ids[1].tolist() == [0, 3]
    assert scores[1, 0] == pytest.approx(1.0) and scores[1, 1] == pytest.approx(2**-0.5)
    with pytest.raises(TypeError, match="single str"):
        index.search_texts("cat", 1)


def _old_normalise(x):
    """The float32 normalisation used before large-value support (ordinary rows keep it)."""
    x = np.asarray(x)
    x = (x if x.dtype == np.float32 else x.astype(np.float64)).astype(np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms[:, 0] == 0] = 1.0
    return (x / norms).astype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale", [1e-3, 1.0, 37.5, 1e4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ordinary_vectors_are_stored_and_ranked_bit_identically(data, backend, scale, dtype):
    X, Q = data
    X, Q = (X * scale).astype(dtype), (Q * scale).astype(dtype)
    index = SemanticSearch(metric="cosine", backend=backend)
    index.add(X)
    assert np.array_equal(index._vectors(), _old_normalise(X))  # same bits as before
    ref_s, ref_i = oracle(X, Q, 7, "cosine")
    scores, ids = index.search(Q, 7)
    assert np.array_equal(ids, ref_i) and np.array_equal(scores, ref_s.astype(np.float32))


def _cosine_oracle64(X, Q, k):
    """Float64 cosines (pure numpy, float64 input assumed in range) -> (scores, ids)."""
    X, Q = np.asarray(X, np.float64), np.asarray(Q, np.float64)
    S = (Q / np.linalg.norm(Q, axis=1, keepdims=True)) @ (
        X / np.linalg.norm(X, axis=1, keepdims=True)
    ).T
    order = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(S, order, axis=1), order


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale", [np.float32(1e30), np.float32(1e-30), 1e200, 1e-200, 1e300])
def test_cosine_of_huge_or_tiny_vectors_is_correct(data, backend, scale):
    X, Q = data
    ref_s, ref_i = _cosine_oracle64(X, Q, 5)  # cosine is scale-invariant: the unscaled oracle
    dtype = np.float32 if isinstance(scale, np.float32) else np.float64
    Xs, Qs = X.astype(dtype) * scale, Q.astype(dtype) * scale
    assert np.isfinite(Xs).all() and np.abs(Xs).min() > 0  # in range of its dtype, not zero
    index = SemanticSearch(metric="cosine", backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning, no "all-zero" warning
        index.add(Xs)
        scores, ids = index.search(Qs, 5)
    assert np.array_equal(ids, ref_i)
    np.testing.assert_allclose(scores, ref_s, rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        np.linalg.norm(index._vectors().astype(np.float64), axis=1), 1.0, atol=1e-6
    )


def test_cosine_power_of_two_scaling_is_exact(data):
    X, Q = data
    # a power-of-two scale changes nothing: float64-normalised unit vectors, cast to float32
    unit = X.astype(np.float64) / np.linalg.norm(X.astype(np.float64), axis=1, keepdims=True)
    index = SemanticSearch(metric="cosine")
    index.add(X.astype(np.float64) * 2.0**700)
    assert np.array_equal(index._vectors(), unit.astype(np.float32))
    index = SemanticSearch(metric="cosine")
    index.add(X * np.float32(2.0**100))
    assert np.array_equal(index._vectors(), unit.astype(np.float32))


def test_cosine_mixed_rows_and_zero_rows():
    X = np.array([[1e300, -1e300, 0], [0, 0, 0], [3, 4, 0], [1e-310, 0, 0]], np.float64)
    index = SemanticSearch(metric="cosine")
    with pytest.warns(UserWarning, match="1 of 4 embeddings are all-zero"):
        index.add(X)
    V = index._vectors()
    expected = np.array([[2**-0.5, -(2**-0.5), 0], [0, 0, 0], [0.6, 0.8, 0], [1, 0, 0]])
    np.testing.assert_allclose(V, expected, rtol=0, atol=1e-7)
    assert (V[1] == 0).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_dot_out_of_float32_range_is_a_clear_error(data, backend):
    X, Q = data
    index = SemanticSearch(metric="dot", backend=backend)
    for bad, match in [
        (X * np.float32(1e30), "exceed the float32 range"),
        (X.astype(np.float64) * 1e200, "beyond the float32 range"),
        (X * np.float32(4e18), "exceed the float32 range"),
    ]:  # norms ~2e19
        with pytest.raises(ValueError, match=match):
            index.add(bad)
        assert index.ntotal == 0  # nothing stored
    # largest norm**2 just inside float32: accepted, exact scores
    ok = X * np.float32(1e17)
    assert (np.linalg.norm(ok.astype(np.float64), axis=1) ** 2).max() < 3.4e38
    index.add(ok)
    s, i = index.search(ok[:3], 3)
    ref_s, ref_i = oracle(ok, ok[:3], 3, "dot")
    assert np.array_equal(i, ref_i) and np.isfinite(s).all()
    assert np.array_equal(s, ref_s.astype(np.float32))
    with pytest.raises(ValueError, match="queries have a norm"):
        index.search(Q * np.float32(1e25), 3)  # |q| * max|x| beyond float32
    with pytest.raises(ValueError, match="beyond the float32 range"):
        index.search(Q.astype(np.float64) * 1e40, 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_load_rejects_an_index_holding_nan(tmp_path, data, backend):
    X, _ = data
    index = SemanticSearch(metric="cosine", backend=backend)
    index.add(X[:50])
    index.save(tmp_path / "idx")
    if backend == "exact":
        bad = np.load(tmp_path / "idx" / "embeddings.npy")
        bad[[3, 7]] = np.nan
        np.save(tmp_path / "idx" / "embeddings.npy", bad)
    else:
        import faiss

        flat = faiss.IndexFlatIP(24)
        V = index._vectors().copy()
        V[3, 0], V[7, 5] = np.nan, np.inf
        flat.add(V)
        faiss.write_index(flat, str(tmp_path / "idx" / "index.faiss"))
    with pytest.raises(ValueError, match="corrupt: 2 of 50 stored vectors hold NaN"):
        SemanticSearch.load(tmp_path / "idx")
    with pytest.raises(ValueError, match="corrupt"):
        SemanticSearch.load(tmp_path / "idx", mmap=True)


def test_load_keeps_the_error_bound_valid_for_a_stale_max_norm(tmp_path, data):
    X, Q = data
    index = SemanticSearch(metric="dot")
    index.add(X)
    index.save(tmp_path / "idx")
    cfg = tmp_path / "idx" / "search_index.json"
    c = json.loads(cfg.read_text())
    c["max_norm"] = 0.0  # understated: the float32 scan would not widen its candidates
    cfg.write_text(json.dumps(c))
    loaded = SemanticSearch.load(tmp_path / "idx")
    assert loaded._max_norm == pytest.approx(np.linalg.norm(X.astype(np.float64), axis=1).max())
    s, i = loaded.search(Q, 5)
    assert np.array_equal(i, oracle(X, Q, 5, "dot")[1])


def _tree(root):
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_refuses_to_replace_foreign_files_and_directories(
    tmp_path, data, backend, monkeypatch
):
    X, _ = data
    index = SemanticSearch(backend=backend)
    index.add(X[:10])
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "precious.txt").write_text("keep", encoding="utf-8")
    (tmp_path / "data.csv").write_text("1,2\n", encoding="utf-8")
    before = _tree(tmp_path)
    for name in ("dir", "data.csv"):
        with pytest.raises(FileExistsError, match="refusing to replace") as exc:
            index.save(tmp_path / name)
        assert name in str(exc.value)
    monkeypatch.chdir(tmp_path / "dir")
    with pytest.raises(ValueError, match="current working directory"):
        index.save(".")
    assert _tree(tmp_path) == before
    (tmp_path / "empty").mkdir()
    for name in ("empty", "empty"):  # an empty directory, then the index saved there
        index.save(tmp_path / name)
        assert SemanticSearch.load(tmp_path / name).ntotal == 10


def test_load_of_an_empty_or_truncated_vectors_file_is_a_clear_error(tmp_path):
    idx = SemanticSearch(metric="cosine")
    idx.add(np.random.default_rng(0).normal(size=(5, 3)))
    idx.save(tmp_path / "i")
    f = tmp_path / "i" / "embeddings.npy"
    data = f.read_bytes()
    for broken in (b"", data[:40]):
        f.write_bytes(broken)
        with pytest.raises(ValueError, match=r"embeddings\.npy' is not a valid \.npy file"):
            SemanticSearch.load(tmp_path / "i")
