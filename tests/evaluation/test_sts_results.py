"""Tests of STS scoring (score_sts / evaluate_sts) and STSResult, against scipy/numpy oracles."""

from __future__ import annotations

import json
import math
import warnings
import zlib

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from sentvec.evaluation import (
    STSScorer,
    STSSubset,
    STSTask,
    evaluate_sts,
    load_sts,
    score_sts,
    unique_sentences,
)
from sentvec.evaluation.results import (
    STSResult,
    aggregate_scores,
    correlations,
    results_table_markdown,
    results_table_text,
)
from sentvec.whitening import Whitening


# ----------------------------------------------------------------------------- helpers
def _flat(nested):
    return {(t, s): v for t, d in nested.items() for s, v in d.items()}


def _toy_task_from_cosines(preds_by_subset, golds_by_subset, name="T"):
    """A task whose pairs have exactly the given cosines with 2-D embeddings.

    sent1 of every pair is "anchor" = (1, 0); sent2 of a pair with cosine c is (c, sqrt(1-c^2)).
    """
    subsets, sentences, vectors = [], ["anchor"], [[1.0, 0.0]]
    for sname, preds in preds_by_subset.items():
        s2 = []
        for i, c in enumerate(preds):
            s = f"{sname}-{i}"
            s2.append(s)
            sentences.append(s)
            vectors.append([c, math.sqrt(1.0 - c * c)])
        subsets.append(
            STSSubset(
                sname,
                ("anchor",) * len(preds),
                tuple(s2),
                np.array(golds_by_subset[sname], dtype=float),
            )
        )
    return STSTask(name, tuple(subsets), "senteval", "test"), sentences, np.array(vectors)


def _random_task(rng, name, n_subsets=2, n_pairs=12, vocab=20, prefix=""):
    words = [f"{prefix}s{i}" for i in range(vocab)]
    subsets = []
    for j in range(n_subsets):
        a = tuple(rng.choice(words, size=n_pairs))
        b = tuple(rng.choice(words, size=n_pairs))
        subsets.append(STSSubset(f"sub{j}", a, b, rng.uniform(0, 5, size=n_pairs)))
    return STSTask(name, tuple(subsets), "raw", "test")


class HashingEncoder:
    """Deterministic bag-of-words hashing encoder (numpy only); records its calls."""

    preferred_text_variant = "senteval"

    def __init__(self, dim=32):
        self.dim = dim
        self.calls = []

    def config_dict(self):
        return {"model": "hashing-bow", "dim": self.dim}

    def encode(self, sentences, batch_size=32, show_progress_bar=None):
        self.calls.append((list(sentences), batch_size, show_progress_bar))
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, s in enumerate(sentences):
            for tok in s.split():
                h = zlib.crc32(tok.encode("utf-8"))
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        out[:, 0] += 0.25  # no zero vector even for an empty sentence
        return out


# ----------------------------------------------------------------------------- aggregation
TOY_PREDS = {"A": [0.1, 0.2, 0.3], "B": [0.0, 0.05, 0.1]}
TOY_GOLDS = {"A": [0, 1, 2], "B": [3, 4, 5]}


def test_aggregation_toy_direct():
    scores = aggregate_scores(
        {"T": [np.array(TOY_PREDS["A"]), np.array(TOY_PREDS["B"])]},
        {"T": [np.array(TOY_GOLDS["A"], float), np.array(TOY_GOLDS["B"], float)]},
        {"T": ["A", "B"]},
    )
    assert scores.subset_spearman["T"] == pytest.approx({"A": 100.0, "B": 100.0})
    assert scores.spearman["mean"]["T"] == pytest.approx(100.0)
    assert scores.spearman["wmean"]["T"] == pytest.approx(100.0)
    assert scores.spearman["all"]["T"] == pytest.approx(-40.58, abs=0.005)
    oracle = spearmanr(TOY_PREDS["A"] + TOY_PREDS["B"], TOY_GOLDS["A"] + TOY_GOLDS["B"])[0]
    assert scores.spearman["all"]["T"] == pytest.approx(100 * oracle, abs=1e-10)


def test_aggregation_toy_through_score_sts():
    task, sentences, emb = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    res = score_sts([task], sentences, emb)
    assert res.aggregation == "mean"
    assert res.task_scores["T"] == pytest.approx(100.0)
    assert res.task_scores_for("wmean")["T"] == pytest.approx(100.0)
    assert res.task_scores_for("all")["T"] == pytest.approx(-40.58, abs=0.005)
    assert score_sts([task], sentences, emb, aggregation="all").average == pytest.approx(
        -40.58, abs=0.005
    )
    assert res.n_pairs == {"T": 6} and res.subset_n_pairs == {"T": {"A": 3, "B": 3}}


def test_wmean_weights_by_pair_count():
    rng = np.random.default_rng(0)
    p = [rng.normal(size=5), rng.normal(size=20)]
    g = [rng.normal(size=5), rng.normal(size=20)]
    s = aggregate_scores({"T": p}, {"T": g})
    r0, r1 = (100 * spearmanr(a, b)[0] for a, b in zip(p, g, strict=True))
    assert s.spearman["mean"]["T"] == pytest.approx((r0 + r1) / 2)
    assert s.spearman["wmean"]["T"] == pytest.approx((5 * r0 + 20 * r1) / 25)
    assert s.pearson["wmean"]["T"] == pytest.approx(
        (5 * 100 * pearsonr(p[0], g[0])[0] + 20 * 100 * pearsonr(p[1], g[1])[0]) / 25
    )


# ----------------------------------------------------------------------------- cosine/Spearman
def test_cosine_spearman_pearson_match_scipy():
    rng = np.random.default_rng(1)
    task = _random_task(rng, "R", n_subsets=3, n_pairs=15, vocab=200)
    sentences = unique_sentences([task])
    emb = rng.normal(size=(len(sentences), 6))
    res = score_sts([task], sentences, emb)
    row = {s: i for i, s in enumerate(sentences)}
    for sub in task.subsets:
        a = emb[[row[s] for s in sub.sent1]]
        b = emb[[row[s] for s in sub.sent2]]
        cos = np.array(
            [x @ y / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b, strict=True)]
        )
        assert np.diff(np.sort(cos)).min() > 1e-9  # no (near-)ties: rounding cannot reorder
        assert res.subset_scores["R"][sub.name] == pytest.approx(
            100 * spearmanr(cos, sub.gold)[0], abs=1e-9
        )
        assert res.subset_pearson["R"][sub.name] == pytest.approx(
            100 * pearsonr(cos, sub.gold)[0], abs=1e-9
        )
    rho, r = correlations([1.0, 2.0, 2.0, 5.0], [3.0, 1.0, 2.0, 4.0])
    assert rho == pytest.approx(spearmanr([1, 2, 2, 5], [3, 1, 2, 4])[0])
    assert r == pytest.approx(pearsonr([1, 2, 2, 5], [3, 1, 2, 4])[0])


def test_hand_computed_case():
    # cosines: (1,0)-(1,0) = 1; (1,0)-(0,1) = 0; (1,0)-(1,1) = 0.7071; gold 5, 0, 3
    sub = STSSubset("s", ("x", "x", "x"), ("x", "y", "z"), np.array([5.0, 0.0, 3.0]))
    task = STSTask("H", (sub,), "raw", "test")
    emb = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    res = score_sts([task], ["x", "y", "z"], emb)
    assert res.subset_scores["H"]["s"] == pytest.approx(100.0)  # same ranking
    # Pearson by hand: x = (1, 0, .7071), y = (5, 0, 3)
    x = np.array([1.0, 0.0, 1 / math.sqrt(2)])
    y = np.array([5.0, 0.0, 3.0])
    xc, yc = x - x.mean(), y - y.mean()
    assert res.task_pearson["H"] == pytest.approx(100 * xc @ yc / math.sqrt((xc @ xc) * (yc @ yc)))


# ----------------------------------------------------------------------------- whitening
def _manual_year_scores(task, sentences, emb, k=None):
    row = {s: i for i, s in enumerate(sentences)}
    fit = np.concatenate(
        [emb[[row[s] for s in chain]] for sub in task.subsets for chain in (sub.sent1, sub.sent2)]
    )
    mu = fit.mean(axis=0)
    evals, evecs = np.linalg.eigh((fit - mu).T @ (fit - mu) / len(fit))
    order = np.argsort(evals)[::-1][: k or len(evals)]
    W = evecs[:, order] / np.sqrt(evals[order])
    out = {}
    for sub in task.subsets:
        a = (emb[[row[s] for s in sub.sent1]] - mu) @ W
        b = (emb[[row[s] for s in sub.sent2]] - mu) @ W
        cos = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        out[sub.name] = 100 * spearmanr(cos, sub.gold)[0]
    return out


@pytest.mark.parametrize("k", [None, 3])  # None: Cholesky shortcut; 3: eigen path
def test_year_whitening_fits_on_all_pairs_of_the_year(k):
    rng = np.random.default_rng(2)
    tasks = [
        _random_task(rng, "Y1", n_subsets=3, n_pairs=30, vocab=40, prefix="a"),
        _random_task(rng, "Y2", n_subsets=2, n_pairs=25, vocab=40, prefix="b"),
    ]
    sentences = unique_sentences(tasks)
    emb = rng.normal(size=(len(sentences), 5)) @ rng.normal(size=(5, 5)) + 3.0
    res = score_sts(tasks, sentences, emb, whitening="year", n_components=k)
    for task in tasks:
        expected = _manual_year_scores(task, sentences, emb, k)
        assert res.subset_scores[task.name] == pytest.approx(expected, abs=1e-7)
        # and NOT the subset-only fit
        alone = _manual_year_scores(
            STSTask("x", task.subsets[:1], "raw", "test"), sentences, emb, k
        )
        assert alone[task.subsets[0].name] != pytest.approx(
            res.subset_scores[task.name][task.subsets[0].name], abs=1e-3
        )
    assert res.whitening.mode == "year" and res.whitening.n_components == k
    assert res.whitening.fit_sizes == {t.name: 2 * t.n_pairs for t in tasks}


def test_year_whitening_singular_covariance_warns_once_and_records():
    rng = np.random.default_rng(5)
    task = _random_task(rng, "S", n_subsets=2, n_pairs=10, vocab=6)  # 6 distinct sentences
    sentences = unique_sentences([task])
    emb = rng.normal(size=(len(sentences), 16))  # rank <= 5 after centring
    with pytest.warns(UserWarning, match="singular") as rec:
        res = score_sts([task], sentences, emb, whitening="year")
    assert sum("singular" in str(w.message) for w in rec) == 1
    assert res.whitening.n_dropped["S"] >= 11
    assert all(np.isfinite(v) for v in res.subset_scores["S"].values())


def test_fitted_whitening_applied_to_all():
    rng = np.random.default_rng(3)
    task = _random_task(rng, "F", n_subsets=2, n_pairs=20)
    sentences = unique_sentences([task])
    emb = rng.normal(size=(len(sentences), 4)) + 1.0
    w = Whitening(n_components=3).fit(rng.normal(size=(200, 4)) * [3, 2, 1, 0.5])
    res = score_sts([task], sentences, w.transform(emb))
    res_w = score_sts([task], sentences, emb, whitening=w)
    assert _flat(res_w.subset_scores) == pytest.approx(_flat(res.subset_scores))
    assert res_w.whitening.mode == "fitted" and res_w.whitening.fit_size == 200
    with pytest.raises(ValueError, match="n_components"):
        score_sts([task], sentences, emb, whitening=w, n_components=2)


# ----------------------------------------------------------------------------- edge cases
def test_zero_vector_warned_counted_and_cosine_zero():
    sub = STSSubset("s", ("a", "b", "c", "d"), ("z", "c", "a", "b"), np.array([1.0, 2, 3, 4]))
    task = STSTask("Z", (sub,), "raw", "test")
    sentences = ["a", "b", "c", "d", "z"]
    emb = np.array([[1.0, 0.2], [0.3, 1.0], [1.0, 1.0], [-1.0, 0.5], [0.0, 0.0]])
    with pytest.warns(UserWarning, match=r"1 sentence vector\(s\) are zero.*1 pair\(s\).*set to 0"):
        res = score_sts([task], sentences, emb)
    assert res.n_zero_vectors == 1 and res.n_zero_cosine_pairs == 1
    cos = [0.0] + [
        float(emb[i] @ emb[j] / np.linalg.norm(emb[i]) / np.linalg.norm(emb[j]))
        for i, j in [(1, 2), (2, 0), (3, 1)]
    ]
    assert res.subset_scores["Z"]["s"] == pytest.approx(100 * spearmanr(cos, sub.gold)[0])


def test_constant_predictions_give_nan_and_warning():
    task, sentences, _ = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    emb = np.ones((len(sentences), 2))
    with pytest.warns(UserWarning, match="undefined"):
        res = score_sts([task], sentences, emb)
    assert math.isnan(res.subset_scores["T"]["A"]) and math.isnan(res.task_scores["T"])
    assert math.isnan(res.average) and res.n_undefined == 6  # 2 subsets + "all", x2 metrics


def test_bad_arguments():
    task, sentences, emb = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    with pytest.raises(KeyError, match="not in `sentences`"):
        score_sts([task], sentences[:-1], emb[:-1])
    with pytest.raises(ValueError, match="rows"):
        score_sts([task], sentences, emb[:-1])
    with pytest.raises(ValueError, match="aggregation='median'"):
        score_sts([task], sentences, emb, aggregation="median")
    with pytest.raises(ValueError, match="whitening='yearly'"):
        score_sts([task], sentences, emb, whitening="yearly")
    with pytest.raises(ValueError, match="n_components"):
        score_sts([task], sentences, emb, n_components=1)
    bad = emb.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        score_sts([task], sentences, bad)


def test_unique_sentences_first_seen_order():
    sub1 = STSSubset("a", ("x", "y", "x"), ("y", "z", "w"), np.zeros(3))
    sub2 = STSSubset("b", ("w", "v"), ("u", "x"), np.zeros(2))
    t = STSTask("T", (sub1, sub2), "raw", "test")
    assert unique_sentences([t]) == ["x", "y", "z", "w", "u", "v"]


# ----------------------------------------------------------------------------- evaluate_sts
@pytest.fixture(scope="module")
def sts13():
    return load_sts(["STS13"])


def test_evaluate_sts_encodes_once_and_matches_score_sts(sts13):
    enc = HashingEncoder()
    res = evaluate_sts(enc, sts13, batch_size=7, metadata={"note": "x"})
    assert len(enc.calls) == 1
    sent, batch_size, progress = enc.calls[0]
    assert batch_size == 7 and progress is None
    assert len(set(sent)) == len(sent) and sent == unique_sentences(sts13)
    ref = score_sts(sts13, sent, HashingEncoder().encode(sent))
    assert res.task_scores == pytest.approx(ref.task_scores)
    assert res.metadata["model"] == "hashing-bow" and res.metadata["note"] == "x"
    assert res.metadata["text_variant"] == "senteval"
    assert 0 < res.task_scores["STS13"] < 100  # bag of words correlates with STS gold
    by_name = evaluate_sts(HashingEncoder(), ["STS13"])
    assert by_name.task_scores == pytest.approx(res.task_scores)


def test_evaluate_sts_corpus_whitening(sts13):
    corpus = [f"word{i % 13} other{i % 7} thing{i % 5} w{i % 11}" for i in range(300)]
    enc = HashingEncoder()
    res = evaluate_sts(enc, sts13, whitening=corpus, n_components=8)
    assert len(enc.calls) == 2 and enc.calls[1][0] == corpus
    assert res.whitening.mode == "corpus" and res.whitening.fit_size == 300
    w = Whitening(8).fit(HashingEncoder().encode(corpus))
    sent = unique_sentences(sts13)
    ref = score_sts(sts13, sent, HashingEncoder().encode(sent), whitening=w)
    assert _flat(res.subset_scores) == pytest.approx(_flat(ref.subset_scores))
    arr = HashingEncoder().encode(corpus)
    res_arr = evaluate_sts(HashingEncoder(), sts13, whitening=arr, n_components=8)
    assert res_arr.whitening.fit_size == 300 and res_arr.whitening.fit_corpus == "embeddings array"
    assert _flat(res_arr.subset_scores) == pytest.approx(_flat(ref.subset_scores))


# ----------------------------------------------------------------------------- result I/O
def test_json_round_trip_and_tables(tmp_path):
    task, sentences, emb = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS, name="STS12")
    res = score_sts([task], sentences, emb, metadata={"model": "toy"})
    data = res.to_dict()
    assert json.loads(json.dumps(data)) == data
    text = res.to_json(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == data == json.loads(text)
    back = STSResult.from_dict(json.loads(text))
    assert back.to_dict() == data and back == res
    assert back.with_aggregation("all").task_scores["STS12"] == pytest.approx(-40.58, abs=0.005)

    other = res.with_aggregation("all")
    md = results_table_markdown({"toy": res, "toy-all": other})
    lines = md.strip().splitlines()
    assert lines[0] == "| Model | STSB | SICK | STS12 | STS13 | STS14 | STS15 | STS16 | Avg |"
    assert lines[2] == "| toy | - | - | 100.00 | - | - | - | - | 100.00 |"
    assert lines[3] == "| toy-all | - | - | -40.58 | - | - | - | - | -40.58 |"
    txt = results_table_text({"toy": res}).splitlines()
    assert txt[0].split() == [
        "Model",
        "STSB",
        "SICK",
        "STS12",
        "STS13",
        "STS14",
        "STS15",
        "STS16",
        "Avg",
    ]
    assert txt[1].split()[3] == "100.00"


def test_nan_survives_json_as_null():
    task, sentences, _ = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    with pytest.warns(UserWarning):
        res = score_sts([task], sentences, np.ones((len(sentences), 2)))
    data = json.loads(res.to_json())
    assert data["task_scores"]["T"] is None
    assert math.isnan(STSResult.from_dict(data).task_scores["T"])


def test_identical_vectors_tie_exactly_at_one():
    from sentvec.evaluation import cosine_similarity_rows

    rng = np.random.default_rng(7)
    A = rng.normal(size=(200, 50)).astype(np.float32) * rng.uniform(0.1, 10, size=(200, 1))
    cos, undefined = cosine_similarity_rows(A, A)
    assert not undefined.any() and np.all(cos == 1.0)  # exact, so Spearman sees real ties
    B = rng.normal(size=(200, 50))
    ref = np.sum(A * B, 1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
    np.testing.assert_allclose(cosine_similarity_rows(A, B)[0], ref, atol=1e-12)


def test_prepared_scorer_is_score_sts_for_many_embeddings():
    rng = np.random.default_rng(11)
    tasks = [
        _random_task(rng, "Y1", n_subsets=3, n_pairs=30, vocab=40, prefix="a"),
        _random_task(rng, "Y2", n_subsets=2, n_pairs=25, vocab=40, prefix="b"),
    ]
    sentences = unique_sentences(tasks) + ["an extra sentence"]
    scorer = STSScorer(tasks, sentences)
    assert scorer.n_sentences == len(sentences)
    for seed in range(3):  # one prepared scorer, several embeddings of the same sentences
        emb = np.random.default_rng(seed).normal(size=(len(sentences), 6)).astype(np.float32)
        fitted = Whitening().fit(emb)
        for kw in (
            {},
            {"whitening": "year"},
            {"whitening": "year", "n_components": 4},
            {"whitening": fitted},
            {"aggregation": "all"},
        ):
            got = scorer.score(emb, **kw)
            want = score_sts(tasks, sentences, emb, **kw)
            assert got.subset_scores == want.subset_scores
            assert got.task_scores == want.task_scores and got.whitening == want.whitening
    with pytest.raises(ValueError, match="rows"):
        scorer.score(np.zeros((3, 6)))
    with pytest.raises(KeyError, match="not in"):
        STSScorer(tasks, sentences[1:])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 3, 4, 13])
def test_row_dots_match_a_numpy_oracle(dtype, d):
    from sentvec.evaluation._kernels import row_dots as _row_dots
    from sentvec.evaluation.sts import _subset_cosines

    rng = np.random.default_rng(d)
    Z = rng.normal(size=(40, d)).astype(dtype)
    ia, ib = rng.integers(0, 40, size=25), rng.integers(0, 40, size=25)
    ref = np.sum(Z[ia].astype(np.float64) * Z[ib].astype(np.float64), axis=1)
    np.testing.assert_allclose(_row_dots(Z, Z, ia, ib), ref, rtol=1e-13, atol=1e-13)
    assert _row_dots(Z, Z, ia[:0], ib[:0]).shape == (0,)
    Z[5] = 0  # a zero row: its cosines are undefined, counted, and set to 0
    pairs = [(ia[:10], ib[:10]), (np.array([5, 1]), np.array([2, 5]))]
    cos, n_zero, n_undef = _subset_cosines(Z, pairs)
    Z64 = Z.astype(np.float64)
    for (j1, j2), c in zip(pairs, cos, strict=True):
        num = np.sum(Z64[j1] * Z64[j2], axis=1)
        den = np.linalg.norm(Z64[j1], axis=1) * np.linalg.norm(Z64[j2], axis=1)
        expect = np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)
        np.testing.assert_allclose(c, expect, atol=2e-12)
    assert n_zero == 1 and n_undef == 2 + int(np.sum((ia[:10] == 5) | (ib[:10] == 5)))


def test_precomputed_gold_ranks_give_identical_scores():
    from sentvec.evaluation.results import aggregate_scores, rank_golds

    rng = np.random.default_rng(3)
    golds = {
        "A": [rng.integers(0, 5, 30).astype(float), rng.normal(size=20)],
        "B": [rng.normal(size=15)],
    }
    preds = {t: [rng.normal(size=len(g)) for g in gs] for t, gs in golds.items()}
    plain = aggregate_scores(preds, golds)
    ranked = aggregate_scores(preds, golds, gold_ranks=rank_golds(golds))
    assert plain == ranked
    assert rank_golds(golds)["B"][1] is None  # one subset: "all" is the subset score


def test_gold_ranks_must_match_the_subsets():
    from sentvec.evaluation.results import aggregate_scores, correlations, rank_golds

    rng = np.random.default_rng(0)
    golds = {"T": [rng.random(50), rng.random(40)]}
    preds = {"T": [rng.random(50), rng.random(40)]}
    ranks = rank_golds(golds)
    with pytest.raises(ValueError, match="gold_ranks has 1 subset"):
        aggregate_scores(preds, golds, gold_ranks={"T": (ranks["T"][0][:1], ranks["T"][1])})
    # a plain list is accepted, a wrong length is a clear error
    rho, _ = correlations(preds["T"][0], golds["T"][0], gold_ranks=list(ranks["T"][0][0]))
    assert rho == correlations(preds["T"][0], golds["T"][0])[0]
    with pytest.raises(ValueError, match="gold_ranks has shape"):
        correlations(preds["T"][0], golds["T"][0], gold_ranks=ranks["T"][0][1])


@pytest.mark.parametrize(
    "row",
    [
        np.arange(1.0, 9.0),
        0.1 * np.arange(1.0, 9.0),
        np.array([0.3]),
        np.random.default_rng(1).random(8),
    ],
)
def test_identical_rows_cannot_be_year_whitened(row):
    # the mean of identical rows is off by rounding: that noise must not be whitened
    task, sentences, _ = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    with pytest.raises(ValueError, match="all rows are identical"):
        score_sts([task], sentences, np.tile(row, (len(sentences), 1)), whitening="year")


def test_zero_width_embeddings_are_rejected():
    task, sentences, _ = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    for w in ("none", "year"):
        with pytest.raises(ValueError, match="0 features"):
            score_sts([task], sentences, np.zeros((len(sentences), 0)), whitening=w)


def test_cosine_similarity_rows_rejects_non_finite_and_complex():
    from sentvec.evaluation import cosine_similarity_rows

    A = np.ones((3, 4))
    bad = A.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="B contains 1 non-finite"):
        cosine_similarity_rows(A, bad)
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="A contains 1 non-finite"):
        cosine_similarity_rows(bad, A)
    with pytest.raises(ValueError, match="real vectors"):
        cosine_similarity_rows(A + 1j, A)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 2.0**600, 2.0**-600])
def test_cosines_of_extreme_float64_rows_equal_those_of_ordinary_rows(scale):
    # squared norms of such rows overflow to inf (NaN cosines) or underflow to 0 (flagged as
    # zero vectors); a power-of-two rescaling of those rows must give the ordinary cosines
    from sentvec.evaluation import cosine_similarity_rows

    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    cos, undefined = cosine_similarity_rows(A, B)
    # numpy oracle on the ordinary-range rows
    ref = (A * B).sum(1) / np.sqrt((A * A).sum(1) * (B * B).sum(1))
    np.testing.assert_allclose(cos, ref, rtol=0, atol=2e-12)
    big_a, big_b = A.copy(), B.copy()
    big_a[::2] *= scale  # mixed: some rows extreme, the others untouched
    big_b[1::2] *= scale
    cos2, undefined2 = cosine_similarity_rows(big_a, big_b)
    np.testing.assert_allclose(cos2, cos, rtol=0, atol=1e-12)
    assert not undefined2.any() and not undefined.any()
    # a zero row stays a zero row (undefined cosine), whatever the other rows
    big_a[0] = 0.0
    cos3, undefined3 = cosine_similarity_rows(big_a, big_b)
    assert undefined3[0] and cos3[0] == 0.0 and not undefined3[1:].any()


def test_score_sts_is_scale_invariant_for_extreme_float64_vectors():
    task, sentences, emb = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    ref = score_sts([task], sentences, emb).task_scores
    for scale in (1e200, 1e-200):
        assert score_sts([task], sentences, emb.astype(np.float64) * scale).task_scores == ref


def test_unit_scale_rows_hand_values():
    from sentvec._numeric import unit_scale_rows

    A = np.array([[3.0, -4.0], [0.0, 0.0], [1e-300, 2e-300], [0.5, 0.25]])
    S, nonzero = unit_scale_rows(A)
    # 4 = 2**2 * 1.0 -> scaled by 2**-3; 0.5 is already in [0.5, 1)
    np.testing.assert_array_equal(S[0], [3 / 8, -4 / 8])
    np.testing.assert_array_equal(S[3], [0.5, 0.25])
    assert nonzero.tolist() == [True, False, True, True] and not S[1].any()
    assert 0.5 <= np.abs(S[2]).max() < 1 and S[2][1] == 2 * S[2][0]


def test_a_single_string_as_sentences_is_a_type_error():
    task, sentences, emb = _toy_task_from_cosines(TOY_PREDS, TOY_GOLDS)
    with pytest.raises(TypeError, match="not a single string"):
        score_sts([task], "abc", emb)


def _pair_cosines(Z, n_pairs):
    a, b = Z[:n_pairs], Z[n_pairs : 2 * n_pairs]
    return np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_year_whitening_of_a_layernorm_hyperplane_falls_back_to_eigh(dtype):
    # a LayerNorm output x = g * z + b with mean(z) = 0: sum((x - b) / g) = 0 for every row, so
    # the covariance has an exact null direction, which Whitening (eigh) drops
    import sentvec.whitening.solvers as solvers

    rng = np.random.default_rng(11)
    n, d = 400, 24
    z = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    z -= z.mean(axis=1, keepdims=True)
    g, b = rng.uniform(0.5, 2.0, d), rng.normal(size=d)
    X = (z / z.std(axis=1, keepdims=True) * g + b).astype(dtype)
    counts = rng.integers(1, 3, size=n)
    assert (
        solvers.cholesky_solution(
            solvers.WhiteningStatistics.from_array(X.astype(np.float64), counts)
        )
        is None
    )
    fast = Whitening(solver="cholesky", warn_singular=False)
    Z = fast.fit_transform(X.astype(np.float64), sample_weight=counts)
    n_dropped = fast.n_dropped_
    assert fast.solver_ == "eigh"  # the null direction is dropped by the eigen solver
    assert n_dropped == 1 and Z.shape == (n, d - 1)
    # oracle: Whitening's eigen path on the same weighted rows
    with pytest.warns(UserWarning, match="singular"):
        w = Whitening().fit(np.repeat(X.astype(np.float64), counts, axis=0))
    assert w.n_dropped_ == 1
    ref = (X.astype(np.float64) - w.mean_) @ w.whitening_matrix_
    np.testing.assert_allclose(
        _pair_cosines(Z, n // 2), _pair_cosines(ref, n // 2), rtol=0, atol=1e-9
    )
    # whitened: identity covariance of the weighted rows (a rotation of Whitening's output)
    mu = np.average(Z, axis=0, weights=counts)
    cov = ((Z - mu) * counts[:, None]).T @ (Z - mu) / counts.sum()
    np.testing.assert_allclose(cov, np.eye(d - 1), atol=1e-8)


def test_year_whitening_without_a_clear_null_space_keeps_the_eigen_path():
    # one direction with variance 1e-11 x the largest: below Whitening's 1e-10 cut, but too
    # close to it for the pivoted factorisation's guarantee, so the eigen path decides

    rng = np.random.default_rng(12)
    n, d = 300, 10
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    scales = np.r_[np.linspace(1.0, 3.0, d - 1), np.sqrt(1e-11) * 3.0]
    X = (rng.normal(size=(n, d)) * scales) @ Q.T
    counts = np.ones(n, dtype=np.int64)
    fast = Whitening(solver="cholesky", warn_singular=False)
    Z = fast.fit_transform(X, sample_weight=counts)
    n_dropped = fast.n_dropped_
    assert fast.solver_ == "eigh"
    with pytest.warns(UserWarning, match="singular"):
        w = Whitening().fit(X)
    assert n_dropped == w.n_dropped_ == 1
    np.testing.assert_allclose(Z, (X - w.mean_) @ w.whitening_matrix_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e-100, 1e100])
def test_year_whitening_null_space_decision_does_not_depend_on_the_scale(scale):
    # a null space without a clear gap: the pivoted path's guarantee fails and the eigen path
    # decides, at every scale; the checks are relative, so a tiny scale must not underflow
    # them into a wrong shortcut (found by a test of bad inputs: one direction too many dropped at
    # 1e-100) nor a huge one overflow them (a RuntimeWarning from numpy)
    rng = np.random.default_rng(7)
    task = _random_task(rng, "T", n_subsets=2, n_pairs=250, vocab=500)
    sentences = unique_sentences([task])
    # m columns sharing one noise direction of variance 0.9e-12 each: every pivot is below
    # the 1e-12 tolerance, but together they make an eigenvalue of about 1.8e-10 > 1e-10 x the
    # largest, which Whitening keeps (m - 1 dropped, not m)
    n, r, m = len(sentences), 12, 200
    K = rng.normal(size=(n, r))
    X = np.hstack(
        [
            K,
            K @ (0.01 * rng.normal(size=(r, m)) / np.sqrt(r))
            + np.sqrt(0.9e-12) * rng.normal(size=(n, 1)),
        ]
    )
    with pytest.warns(UserWarning, match="singular"):
        reference = score_sts([task], sentences, X, whitening="year")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow inside the checks
        warnings.simplefilter("ignore", UserWarning)  # the dropped directions, expected
        res = score_sts([task], sentences, X * scale, whitening="year")
    assert res.whitening.n_dropped == reference.whitening.n_dropped
    assert res.whitening.n_dropped["T"] == m - 1
    assert res.average == pytest.approx(reference.average, abs=1e-9)


@pytest.mark.parametrize("scale", [1e-140, 1e-160])
def test_year_whitening_of_values_too_small_for_float64_is_refused(scale):
    # variances of 1e-280 .. 1e-320 sit in float64's subnormal range: results were silently off
    # by up to 2.7 points; now the same clear error as for smaller values
    rng = np.random.default_rng(8)
    task = _random_task(rng, "T", n_subsets=2, n_pairs=40, vocab=60)
    sentences = unique_sentences([task])
    X = rng.normal(size=(len(sentences), 6)) * scale
    with pytest.raises(ValueError, match="too small"):
        score_sts([task], sentences, X, whitening="year")
    with pytest.raises(ValueError, match="too small.*rescale"):
        Whitening().fit(X)
