"""All-but-the-top (ABTT) fitted per STS year in the layer search and in ``sentvec eval-sts``.

Oracles: ``score_sts`` of :func:`combine_layers` with the same postprocessor (another code path
of the scorer), and a plain-numpy float64 transcription of Mu & Viswanath (ICLR 2018,
Algorithm 1: subtract the mean, then the projections on the top D principal directions, here
from ``numpy.linalg.svd`` of the centred matrix) with scipy's Spearman. No transformer forward
pass: synthetic per-layer vectors and the tiny reference Sent2Vec model.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from _helpers import small_sts_dir
from scipy.stats import spearmanr

from sentvec.cli import main
from sentvec.evaluation import LayerAnalysis, load_sts, score_sts, unique_sentences
from sentvec.evaluation.layers import (
    CombinationScorer,
    combine_layers,
    evaluate_pairs,
    search_combinations,
)
from sentvec.whitening import AllButTheTop

TASKS = ["STS13", "STSBenchmark"]
S2V_BIN = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-unigram.bin"


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    return small_sts_dir(tmp_path_factory.mktemp("abtt-sts"), sts13_lines=50, stsb_lines=150)


def _abtt_fit(X: np.ndarray, D: int) -> tuple[np.ndarray, np.ndarray]:
    """Mu & Viswanath, Algorithm 1: mu = mean; u_1..u_D = top principal directions of X - mu."""
    X = np.asarray(X, dtype=np.float64)
    mu = X.mean(axis=0)
    _, _, vt = np.linalg.svd(X - mu, full_matrices=False)
    return mu, vt[:D]


def _abtt_apply(V: np.ndarray, mu: np.ndarray, U: np.ndarray) -> np.ndarray:
    """x -> (x - mu) - sum_i (u_i . (x - mu)) u_i."""
    C = np.asarray(V, dtype=np.float64) - mu
    return C - (C @ U.T) @ U


def _cos(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """float64 cosines rounded to 12 decimals, the documented rule that makes identical vectors
    tie (README, "Evaluation protocols"): the tiny Sent2Vec model maps many sentences to one
    vector (all words unknown), and Spearman's ranks must see those ties."""
    return np.round((A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1), 12)


def _oracle_scores(tasks, sentences, emb, D, *, corpus=None) -> dict[str, float]:
    """Task scores (mean over subsets of Spearman x 100) with ABTT fitted per task on both
    sides of all its pairs, duplicates kept (or once on ``corpus`` vectors)."""
    row = {s: i for i, s in enumerate(sentences)}
    emb = np.asarray(emb, dtype=np.float64)
    out = {}
    for task in tasks:
        sides = [
            (emb[[row[s] for s in sub.sent1]], emb[[row[s] for s in sub.sent2]])
            for sub in task.subsets
        ]
        fit = corpus if corpus is not None else np.concatenate([x for ab in sides for x in ab])
        mu, U = _abtt_fit(fit, D)
        scores = [
            100 * spearmanr(_cos(_abtt_apply(a, mu, U), _abtt_apply(b, mu, U)), sub.gold).statistic
            for (a, b), sub in zip(sides, task.subsets, strict=True)
        ]
        out[task.name] = float(np.mean(scores))
    return out


def _per_layer(sentences, seed=0, d=12, K=4):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((len(sentences), 1, d))
    # a shared offset and one dominant direction: what ABTT removes
    P = base + 0.7 * rng.standard_normal((len(sentences), K, d)) + 2.0
    P[:, :, 0] *= 4.0
    return P.astype(np.float32)


# ------------------------------------------------------------------------- the layer search


def test_abtt_layer_pair_scores_equal_score_sts_and_the_numpy_transcription(small_data):
    tasks = load_sts(TASKS, data_dir=small_data)
    sents = unique_sentences(tasks)
    P = _per_layer(sents)
    D = 2
    scorer = CombinationScorer(P, tasks, sents, postprocessor=AllButTheTop(D), n_jobs=2)
    plain = CombinationScorer(P, tasks, sents, n_jobs=1)
    pairs = evaluate_pairs(scorer)
    assert len(pairs) == 2 * 10
    whitened = {p.layers: p for p in evaluate_pairs(plain, whitening="year")}
    for sc in pairs:
        emb = combine_layers(P, sc.layers)
        if sc.whitening == "none":
            assert sc == plain.score(sc.layers, "none")
            continue
        want = score_sts(tasks, sents, emb, whitening="year", postprocessor=AllButTheTop(D))
        assert sc.average == want.average  # the same numbers, bit for bit
        assert dict(sc.task_scores) == want.task_scores
        assert want.metadata["postprocessing"]["method"] == "AllButTheTop"
        oracle = _oracle_scores(tasks, sents, emb, D)
        np.testing.assert_allclose(
            [dict(sc.task_scores)[t] for t in oracle], list(oracle.values()), rtol=0, atol=1e-6
        )
        assert sc.average != whitened[sc.layers].average  # ABTT is not the whitening
    # the size search ranks the same memoised ABTT scores
    curve = search_combinations(scorer, whitening="year", max_layers=2)
    best_pair = min(
        (p for p in pairs if p.whitening == "year" and len(p.layers) == 2),
        key=lambda p: (-p.average, p.layers),
    )
    assert curve[1].best == best_pair


def test_abtt_scorer_options_fail_before_any_scoring(small_data):
    tasks = load_sts(["STSBenchmark"], data_dir=small_data)
    sents = unique_sentences(tasks)
    P = _per_layer(sents, d=6)
    with pytest.raises(ValueError, match=r"AllButTheTop.n_components=7 is invalid.*6"):
        CombinationScorer(P, tasks, sents, postprocessor=AllButTheTop(7))
    with pytest.raises(ValueError, match="n_components is invalid with a postprocessor"):
        CombinationScorer(P, tasks, sents, n_components=3, postprocessor=AllButTheTop(1))
    with pytest.raises(ValueError, match="estimator with fit_transform"):
        CombinationScorer(P, tasks, sents, postprocessor=object())


def test_analysis_records_the_postprocessor_in_json_markdown_and_labels(small_data, tmp_path):
    from sentvec.evaluation.layer_results import LayerTimings
    from sentvec.evaluation.plots import plot_pair_heatmap, plot_size_curve

    tasks = load_sts(["STSBenchmark"], data_dir=small_data)
    sents = unique_sentences(tasks)
    scorer = CombinationScorer(
        _per_layer(sents, K=3), tasks, sents, postprocessor=AllButTheTop(3), n_jobs=1
    )
    a = LayerAnalysis(
        model="m",
        encoder={},
        pooling="mean",
        text_variant="senteval",
        aggregation="mean",
        n_components=None,
        n_hidden_states=3,
        n_sentences=len(sents),
        tasks=("STSBenchmark",),
        pairs=evaluate_pairs(scorer),
        by_size=search_combinations(scorer),
        include_embedding_layer=True,
        exhaustive_limit=128,
        beam_width=8,
        timings=LayerTimings(0.0, True, 0.0, 0.0, scorer.n_scored),
        postprocessing={"method": "AllButTheTop", "params": {"n_components": 3}},
    )
    back = LayerAnalysis.from_dict(json.loads(a.to_json()))
    assert back == a and back.postprocessing["params"] == {"n_components": 3}
    assert a.year_method == "AllButTheTop(n_components=3)"
    assert a.mode_label("year") == "AllButTheTop(n_components=3) per year"
    assert a.mode_label("none") == "whitening=none"
    md = a.to_markdown()
    assert "## Figure 1: every pair (i, j), AllButTheTop(n_components=3) per year" in md
    assert "AllButTheTop(n_components=3) instead of whitening" in md
    # without a postprocessor: the whitening wording of before, and older JSON still loads
    plain = LayerAnalysis.from_dict({k: v for k, v in a.to_dict().items() if k != "postprocessing"})
    assert plain.postprocessing is None and plain.mode_label("year") == "whitening=year"
    assert "## Figure 1: every pair (i, j), whitening = year" in plain.to_markdown()
    plot_pair_heatmap(a, tmp_path / "f1.png")
    plot_size_curve(a, tmp_path / "f2.png")
    assert (tmp_path / "f1.png").stat().st_size > 0 and (tmp_path / "f2.png").stat().st_size > 0


# ------------------------------------------------------------------ sentvec eval-sts (Sent2Vec)


@pytest.fixture(scope="module")
def s2v():
    from sentvec.encoders import load_encoder

    return load_encoder(str(S2V_BIN))


def _eval(small_data, tmp_path, *extra):
    out = tmp_path / "r.json"
    rc = main(
        [
            "eval-sts",
            "--model",
            str(S2V_BIN),
            "--tasks",
            ",".join(TASKS),
            "--data",
            str(small_data),
            "--json",
            str(out),
            "--no-progress",
            *extra,
        ]
    )
    assert rc == 0
    return json.loads(out.read_text())


def test_eval_sts_year_abtt_equals_the_numpy_transcription(s2v, small_data, tmp_path, capsys):
    from sentvec.encoders import text_variant_of

    tasks = load_sts(TASKS, data_dir=small_data, variant=text_variant_of(s2v))
    sents = unique_sentences(tasks)
    emb = s2v.encode(sents)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # OOV sentences: zero raw vectors
        want = score_sts(tasks, sents, emb, whitening="year", postprocessor=AllButTheTop(3))
    capsys.readouterr()
    got = _eval(
        small_data, tmp_path, "--whiten", "year", "--postprocess", "abtt", "--abtt-components", "3"
    )
    assert "AllButTheTop(n_components=3)" in capsys.readouterr().out
    assert got["average"] == want.average and got["task_scores"] == want.task_scores
    assert got["metadata"]["postprocessing"]["params"] == {"n_components": 3}
    assert got["whitening"]["mode"] == "year"
    oracle = _oracle_scores(tasks, sents, emb, 3)
    np.testing.assert_allclose(
        [got["task_scores"][t] for t in oracle], list(oracle.values()), rtol=0, atol=1e-6
    )
    # the default D is sentvec report's: max(1, round(d / 100))
    default = _eval(small_data, tmp_path, "--whiten", "year", "--postprocess", "abtt")
    assert default["metadata"]["postprocessing"]["params"] == {
        "n_components": max(1, round(s2v.dim / 100))
    }


@pytest.mark.filterwarnings("ignore:1 of 489 sentences have no in-vocabulary word")
def test_eval_sts_corpus_abtt_equals_the_numpy_transcription(s2v, small_data, tmp_path):
    from sentvec.encoders import text_variant_of

    corpus_file = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "sentences.txt"
    corpus = [ln for ln in corpus_file.read_text(encoding="utf-8").splitlines() if ln.strip()]
    tasks = load_sts(TASKS, data_dir=small_data, variant=text_variant_of(s2v))
    sents = unique_sentences(tasks)
    got = _eval(
        small_data,
        tmp_path,
        "--whiten",
        str(corpus_file),
        "--postprocess",
        "abtt",
        "--abtt-components",
        "2",
    )
    assert got["whitening"]["mode"] == "corpus"
    assert got["whitening"]["fit_size"] == len(corpus)
    assert got["whitening"]["fit_corpus"].startswith("AllButTheTop fitted on")
    oracle = _oracle_scores(
        tasks, sents, s2v.encode(sents), 2, corpus=np.asarray(s2v.encode(corpus), dtype=np.float64)
    )
    np.testing.assert_allclose(
        [got["task_scores"][t] for t in oracle], list(oracle.values()), rtol=0, atol=1e-6
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--whiten", "year", "--postprocess", "abtt", "--n-components", "2"],
            "--n-components is the whitening dimension",
        ),
        (["--whiten", "year", "--abtt-components", "2"], "--abtt-components needs --postprocess"),
        (["--layers", "1", "--postprocess", "abtt"], "needs --whiten year or a corpus FILE"),
        (["--postprocess", "abtt"], "the Table 1 block has its own whitening row"),
        (
            ["--whiten", "year", "--postprocess", "abtt", "--abtt-components", "999"],
            "--abtt-components=999 is invalid",
        ),
    ],
)
def test_eval_sts_abtt_option_errors(small_data, capsys, extra, message):
    rc = main(
        [
            "eval-sts",
            "--model",
            str(S2V_BIN),
            "--tasks",
            "STSBenchmark",
            "--data",
            str(small_data),
            *extra,
        ]
    )
    assert rc == 2 and message in capsys.readouterr().err


def test_eval_sts_abtt_refuses_a_saved_directory(small_data, tmp_path, capsys):
    d = tmp_path / "w"
    AllButTheTop(1).fit(np.random.default_rng(0).standard_normal((20, 4))).save(d)
    rc = main(
        [
            "eval-sts",
            "--model",
            str(S2V_BIN),
            "--tasks",
            "STSBenchmark",
            "--data",
            str(small_data),
            "--whiten",
            str(d),
            "--postprocess",
            "abtt",
        ]
    )
    assert rc == 2 and "a saved DIR applies the post-processor it holds" in capsys.readouterr().err
