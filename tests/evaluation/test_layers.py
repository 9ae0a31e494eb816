"""Tests for sentvec.evaluation.layers: combination math, pair grid, size search, results, plots."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from _helpers import small_sts_dir

from sentvec.evaluation import STSSubset, STSTask
from sentvec.evaluation.layers import (
    CombinationScorer,
    LayerAnalysis,
    LayerTimings,
    combine_layers,
    evaluate_pairs,
    layer_label,
    normalize_combination,
    search_combinations,
)
from sentvec.evaluation.plots import plot_pair_heatmap, plot_size_curve


def _per_layer(n=6, K=5, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((n, K, d)).astype(np.float32)


# ---------------------------------------------------------------- combination math


def test_combine_layers_is_mean_of_chosen_layers():
    P = _per_layer()
    for layers in [(0,), (1, 4), (0, 2, 3), (4, 3, 1, 0)]:
        want = np.zeros((P.shape[0], P.shape[2]), dtype=np.float64)
        for i in layers:
            want += P[:, i, :]
        want /= len(layers)
        got = combine_layers(P, layers)
        assert got.dtype == np.float32 and got.shape == (6, 4)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(combine_layers(P, -1), P[:, 4])
    np.testing.assert_array_equal(combine_layers(P, (1, -1)), combine_layers(P, (4, 1)))
    # float16 vectors are widened to float32 exactly; integers are refused
    half = P.astype(np.float16)
    np.testing.assert_array_equal(
        combine_layers(half, (1, 4)), combine_layers(half.astype(np.float32), (1, 4))
    )
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        combine_layers(P.astype(np.int64), (1, 4))


def test_combine_layers_is_bitwise_numpy_mean_for_every_combination():
    # the in-place sum + one division must give exactly numpy's mean over the layer axis
    P = _per_layer(n=40, K=7, d=24, seed=9)
    for m in range(1, 8):
        for idx in itertools.combinations(range(7), m):
            want = P[:, list(idx), :].mean(axis=1, dtype=np.float32)
            np.testing.assert_array_equal(combine_layers(P, idx), want)


def test_two_layer_mean_is_bitwise_torch_stack_mean():
    torch = pytest.importorskip("torch")
    P = _per_layer(n=50, K=7, d=16, seed=3)
    want = torch.stack([torch.from_numpy(P[:, 1]), torch.from_numpy(P[:, 6])]).mean(0).numpy()
    np.testing.assert_array_equal(combine_layers(P, (1, 6)), want)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_then_averaging_vs_averaging_then_pooling(pooling):
    torch = pytest.importorskip("torch")
    from sentvec.encoders.pooling import average_layers, pool, pool_all_layers

    g = torch.Generator().manual_seed(0)
    hidden = [torch.randn(3, 5, 8, generator=g) for _ in range(4)]
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    per_layer = pool_all_layers(hidden, mask, pooling).numpy()
    ours = combine_layers(per_layer, (1, 3))
    token_avg_then_pool = pool(average_layers(hidden, (1, 3)), mask, pooling).numpy()
    if pooling == "max":  # the documented exception: max is not linear
        assert not np.allclose(ours, token_avg_then_pool, atol=1e-3)
    else:
        np.testing.assert_allclose(ours, token_avg_then_pool, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "bad, match",
    [
        ((), "at least one"),
        ((1, 1), "more than once"),
        ((5,), "out of range"),
        ((-6,), "out of range"),
        ((1.5,), "not an integer"),
    ],
)
def test_normalize_combination_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        normalize_combination(bad, 5)


def test_normalize_and_label():
    assert normalize_combination((-1, 1), 7) == (1, 6)
    assert layer_label((0, 1, 12)) == "L0+L1+L12"
    with pytest.raises(ValueError, match="shape"):
        combine_layers(np.zeros((3, 4)), (0,))


# ---------------------------------------------------------------- search (synthetic scores)


class _SyntheticScorer(CombinationScorer):
    """Score = a fixed, known function of the layer set (no STS data needed)."""

    def __init__(self, K, seed=0, n_jobs=1):
        task = STSTask("T", (STSSubset("s", ("x",), ("y",), np.array([1.0])),), "raw", "test")
        super().__init__(np.zeros((2, K, 2), np.float32), [task], ["x", "y"], n_jobs=n_jobs)
        rng = np.random.default_rng(seed)
        self.w = rng.standard_normal(K)
        self.calls = 0

    def truth(self, layers, whitening):
        layers = tuple(sorted(layers))
        base = float(np.mean(self.w[list(layers)])) - 0.15 * (len(layers) - 3) ** 2
        return 50.0 + base + (1.0 if whitening == "year" else 0.0) * self.w[layers[0]]

    def _results(self, layers, modes):
        out = []
        for whitening in modes:
            self.calls += 1
            avg = self.truth(layers, whitening)
            out.append(SimpleNamespace(average=avg, task_scores={"T": avg}))
        return out


def test_pairs_cover_upper_triangle_once():
    s = _SyntheticScorer(7)
    pairs = evaluate_pairs(s, whitening=("none", "year"))
    assert len(pairs) == 2 * 28
    got = {(p.layers, p.whitening) for p in pairs}
    want = {
        ((i,) if i == j else (i, j), w)
        for w in ("none", "year")
        for i in range(7)
        for j in range(i, 7)
    }
    assert got == want
    assert s.calls == 56
    evaluate_pairs(s)  # memoised: no new scoring
    assert s.calls == 56 and s.n_scored == 56
    for p in pairs:
        assert p.average == pytest.approx(s.truth(p.layers, p.whitening))
    # one mode may be named as a plain string (it used to be iterated letter by letter)
    only = evaluate_pairs(s, whitening="year")
    assert [p for p in pairs if p.whitening == "year"] == list(only)
    assert {b.whitening for b in search_combinations(s, whitening="none", max_layers=2)} == {"none"}
    with pytest.raises(ValueError, match=r"whitening=\(\) is invalid"):
        evaluate_pairs(s, whitening=())


def test_threaded_scoring_gives_the_same_results():
    one = _SyntheticScorer(7, seed=5, n_jobs=1)
    many = _SyntheticScorer(7, seed=5, n_jobs=3)
    assert evaluate_pairs(one) == evaluate_pairs(many)
    assert search_combinations(one) == search_combinations(many)
    assert many.n_scored == one.n_scored == 2 * 127


def test_threaded_year_scoring_never_touches_the_global_warning_filters(monkeypatch):
    # warnings.catch_warnings is not thread-safe: in a scoring thread it could leave an
    # "ignore UserWarning" filter behind and silence the caller's later warnings
    import threading
    import warnings

    real = warnings.catch_warnings

    def main_thread_only(*args, **kwargs):
        assert threading.current_thread() is threading.main_thread(), (
            "warnings.catch_warnings used in a scoring thread"
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(warnings, "catch_warnings", main_thread_only)
    rng = np.random.default_rng(0)
    sents = [f"s{i}" for i in range(12)]
    task = STSTask(
        "T",
        (STSSubset("a", tuple(sents[:6]), tuple(sents[6:]), rng.uniform(0, 5, 6)),),
        "raw",
        "test",
    )
    P = rng.standard_normal((12, 4, 16)).astype(np.float32)  # 12 rows < 16 dims: singular
    scorer = CombinationScorer(P, [task], sents, n_jobs=3)
    with real(record=True) as rec:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        pairs = evaluate_pairs(scorer, whitening=("year",))
        assert warnings.filters == before
        warnings.warn("raised after the threaded scoring", UserWarning, stacklevel=1)
    assert len(pairs) == 10
    assert any("singular" in str(r.message) for r in rec)
    assert any("after the threaded scoring" in str(r.message) for r in rec)


def test_exhaustive_search_matches_brute_force_for_7_states():
    s = _SyntheticScorer(7, seed=1)
    res = search_combinations(s, whitening=("none", "year"))
    assert len(res) == 14
    assert s.n_scored == 2 * 127  # every non-empty subset of 7 hidden states, per mode
    for sb in res:
        assert sb.method == "exhaustive" and sb.n_possible == math.comb(7, sb.n_layers)
        assert sb.n_evaluated == sb.n_possible
        brute = max(
            itertools.combinations(range(7), sb.n_layers), key=lambda c: s.truth(c, sb.whitening)
        )
        assert sb.best.layers == brute
        assert sb.best.average == pytest.approx(s.truth(brute, sb.whitening))


def test_search_without_embedding_layer_and_max_layers():
    s = _SyntheticScorer(7, seed=2)
    res = search_combinations(s, whitening=("none",), include_embedding_layer=False, max_layers=3)
    assert [r.n_layers for r in res] == [1, 2, 3]
    assert all(0 not in r.best.layers for r in res)
    assert [r.n_possible for r in res] == [6, 15, 20]


def test_beam_search_budget_for_13_states():
    s = _SyntheticScorer(13, seed=3)
    res = search_combinations(s, whitening=("none",), exhaustive_limit=100, beam_width=4)
    methods = {r.n_layers: r.method for r in res}
    assert methods[1] == methods[2] == methods[11] == methods[12] == methods[13] == "exhaustive"
    assert all(methods[m] == "beam" for m in range(3, 11))  # C(13, m) > 100
    for r in res:
        if r.method == "beam":
            assert r.n_evaluated <= 4 * (13 - r.n_layers + 1) < r.n_possible
        # the reported best is the true score of that combination
        assert r.best.average == pytest.approx(s.truth(r.best.layers, "none"))
    assert s.n_scored < 1000 < 2**13 - 1
    # beam never reports more than the exhaustive optimum
    for r in res:
        opt = max(s.truth(c, "none") for c in itertools.combinations(range(13), r.n_layers))
        assert r.best.average <= opt + 1e-12


# ---------------------------------------------------------------- results and plots


def _analysis(K=4):
    s = _SyntheticScorer(K, seed=4)
    pairs = evaluate_pairs(s)
    sizes = search_combinations(s)
    return LayerAnalysis(
        model="synthetic",
        encoder={"model": "synthetic"},
        pooling="mean",
        text_variant="senteval",
        aggregation="mean",
        n_components=None,
        n_hidden_states=K,
        n_sentences=1,
        tasks=("T",),
        pairs=pairs,
        by_size=sizes,
        include_embedding_layer=True,
        exhaustive_limit=128,
        beam_width=8,
        timings=LayerTimings(1.0, False, 0.5, 0.25, s.n_scored),
    )


def test_analysis_matrix_best_and_json_roundtrip():
    a = _analysis()
    M = a.pair_matrix("none")
    np.testing.assert_array_equal(M, M.T)
    assert np.isfinite(M).all()
    best = a.best_pair("year")
    assert best.average == pytest.approx(np.nanmax(a.pair_matrix("year")))
    back = LayerAnalysis.from_dict(json.loads(a.to_json()))
    assert back == a
    md = a.to_markdown()
    assert "Figure 1" in md and "Figure 2" in md and best.label in md
    with pytest.raises(ValueError, match="available"):
        a.best_pair("corpus")


def test_undefined_scores_rank_last_and_serialise_as_null():
    class NaNScorer(_SyntheticScorer):
        def truth(self, layers, whitening):
            return math.nan if 0 in layers else super().truth(layers, whitening)

    s = NaNScorer(5, seed=6)
    pairs = evaluate_pairs(s, whitening=("none",))
    sizes = search_combinations(s, whitening=("none",), max_layers=4)
    assert all(0 not in r.best.layers and math.isfinite(r.best.average) for r in sizes)
    a = LayerAnalysis(
        model="m",
        encoder={},
        pooling="mean",
        text_variant="senteval",
        aggregation="mean",
        n_components=None,
        n_hidden_states=5,
        n_sentences=1,
        tasks=("T",),
        pairs=pairs,
        by_size=sizes,
        include_embedding_layer=True,
        exhaustive_limit=128,
        beam_width=8,
        timings=LayerTimings(0.0, True, 0.0, 0.0, s.n_scored),
    )
    assert 0 not in a.best_pair("none").layers
    text = a.to_json()
    assert "NaN" not in text  # standard JSON
    back = LayerAnalysis.from_dict(json.loads(text))
    assert math.isnan(back.pair_matrix("none")[0, 1])
    np.testing.assert_array_equal(
        np.isnan(back.pair_matrix("none")), np.isnan(a.pair_matrix("none"))
    )


def test_plots_write_png(tmp_path):
    a = _analysis()
    plot_pair_heatmap(a, tmp_path / "fig1.png")
    plot_size_curve(a, tmp_path / "fig2.png")
    for name in ("fig1.png", "fig2.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


# ---------------------------------------------------------------- with a real (2-layer) model


def _small_sts_dir(root: Path) -> Path:
    """The first 70 lines of STS13's 3 subsets and 200 STS-B test pairs."""
    return small_sts_dir(root, sts13_lines=70, stsb_lines=200)


@pytest.fixture(scope="module")
def small_sts(tmp_path_factory):
    from sentvec.evaluation import load_sts

    root = _small_sts_dir(tmp_path_factory.mktemp("sts-small"))
    return root, load_sts(["STS13", "STSBenchmark"], data_dir=root)


@pytest.mark.slow
def test_search_best_pair_equals_encoder_with_that_pair(tiny_minilm, small_sts, tmp_path):
    from sentvec.cache import VectorCache, pooled_layer_vectors
    from sentvec.evaluation import score_sts, unique_sentences
    from sentvec.evaluation.layers import analyze_layers

    _, tasks = small_sts
    sents = unique_sentences(tasks)
    cache = VectorCache(tmp_path)
    # k = 32: the small slice has about as many fit rows as dimensions (see test_cli_layers)
    a = analyze_layers(tiny_minilm, tasks, cache=cache, n_components=32, show_progress_bar=False)
    assert a.n_hidden_states == 3 and not a.timings.cache_hit
    assert len(a.pairs) == 2 * 6 and a.timings.n_scored == 2 * 7
    vecs, hit, _ = pooled_layer_vectors(tiny_minilm, sents, cache=cache, text_variant="senteval")
    assert hit
    best = a.best_pair("none")
    # the encoder configured with that pair gives bit-identical vectors ...
    emb = tiny_minilm.with_options(layers=best.layers).encode(sents)
    np.testing.assert_array_equal(emb, combine_layers(vecs["mean"], best.layers))
    # ... hence exactly the same scores, with and without whitening
    for w in ("none", "year"):
        res = score_sts(tasks, sents, emb, whitening=w, n_components=32 if w == "year" else None)
        score = next(p for p in a.pairs if p.layers == best.layers and p.whitening == w)
        assert res.average == score.average
        assert tuple(res.task_scores.items()) == score.task_scores
    # second run: per-layer vectors from the disk cache, identical results
    b = analyze_layers(tiny_minilm, tasks, cache=cache, n_components=32, show_progress_bar=False)
    assert b.timings.cache_hit
    assert b.pairs == a.pairs and b.by_size == a.by_size


def test_pooled_layer_vectors_names_an_encoder_missing_a_pooling():
    from sentvec.cache import pooled_layer_vectors

    class MeanOnly:
        pooling = "mean"
        layer_indices = (1, 2, 3)
        num_layers = 3

        def encode(self, sentences, **kwargs):
            raise AssertionError("the per-layer path is encode_layers")

        def encode_layers(self, sentences, pooling=("mean",), **kwargs):
            return {"mean": np.ones((len(sentences), 3, 4), np.float32)}

        def config_dict(self):
            return {"encoder": "MeanOnly"}

    vecs, hit, _ = pooled_layer_vectors(MeanOnly(), ["a", "b"], pooling="mean")
    assert vecs["mean"].shape == (2, 3, 4) and not hit
    with pytest.raises(
        ValueError,
        match=r"returned \['mean'\], not a dict holding every "
        r"requested pooling",
    ):
        pooled_layer_vectors(MeanOnly(), ["a", "b"], pooling=("cls", "mean"))


# ---------------------------------------------------------------- scorer = score_sts oracle


def _layer_vectors(tasks, seed=0, d=12, K=5):
    from sentvec.evaluation import unique_sentences

    sents = unique_sentences(tasks)
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((len(sents), 1, d))
    # correlated layers with different scales: whitening changes the scores
    P = (base + 0.7 * rng.standard_normal((len(sents), K, d))) * rng.uniform(0.2, 3.0, d)
    return sents, P.astype(np.float32)


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_scorer_equals_score_sts_of_combined_vectors_exactly(small_sts, n_jobs):
    # the scorer gathers each task's combined rows straight from per_layer into per-thread
    # buffers and scores both modes in one pass; score_sts on combine_layers is the oracle
    import warnings

    from sentvec.evaluation import score_sts

    _, tasks = small_sts
    sents, P = _layer_vectors(tasks)
    scorer = CombinationScorer(P, tasks, sents, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = evaluate_pairs(scorer)
        assert len(pairs) == 2 * 15
        for sc in pairs:
            want = score_sts(tasks, sents, combine_layers(P, sc.layers), whitening=sc.whitening)
            assert sc.average == want.average
            assert dict(sc.task_scores) == want.task_scores
        full = scorer.result((1, 4), "year")
    assert (
        full.average == score_sts(tasks, sents, combine_layers(P, (1, 4)), whitening="year").average
    )
    assert full.whitening.mode == "year" and full.whitening.fit_size == sum(
        2 * sub.n_pairs for t in tasks for sub in t.subsets
    )


def test_scorer_refuses_non_finite_per_layer_vectors(small_sts):
    _, tasks = small_sts
    sents, P = _layer_vectors(tasks)
    P[3, 2, 5] = np.nan
    scorer = CombinationScorer(P, tasks, sents, n_jobs=1)
    assert scorer.score((0, 1)).average == scorer.score((0, 1)).average  # NaN-free layers fine
    with pytest.raises(
        ValueError,
        match=r"L1\+L2 has 1 non-finite values: per_layer holds "
        r"NaN or inf in L2$",
    ):
        scorer.score((1, 2))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's, in the sum
@pytest.mark.parametrize("bad", [np.inf, -np.inf, 3e38])
def test_scorer_refuses_infinite_or_overflowing_combinations(small_sts, bad):
    _, tasks = small_sts
    sents, P = _layer_vectors(tasks)
    P[0, 1, 0] = bad
    P[0, 2, 0] = bad  # 3e38 + 3e38 overflows float32: the combination is infinite
    scorer = CombinationScorer(P, tasks, sents, n_jobs=1)
    assert math.isfinite(scorer.score((0, 3)).average)
    want = "sum overflows float32" if math.isfinite(bad) else "NaN or inf in L1, L2"
    with pytest.raises(ValueError, match=f"L1\\+L2 has 1 non-finite values: .*{want}"):
        scorer.score((1, 2))


def test_scorer_shapes_and_byte_order(small_sts):
    _, tasks = small_sts
    sents, P = _layer_vectors(tasks)
    for shape in ((len(sents), 0, 12), (len(sents), 5, 0)):
        with pytest.raises(ValueError, match="no hidden states or no features"):
            CombinationScorer(np.zeros(shape, np.float32), tasks, sents)
    big = CombinationScorer(P.astype(">f4"), tasks, sents, n_jobs=1)  # big-endian float32
    assert big.score((1, 4), "year") == CombinationScorer(P, tasks, sents, n_jobs=1).score(
        (1, 4), "year"
    )
