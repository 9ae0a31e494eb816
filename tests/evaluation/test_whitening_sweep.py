"""``evaluate_whitening_sweep``: STS against the whitening dimension k for a transformer, from
Python, checked against the encoder's own ``encode`` vectors scored by ``score_sts``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from sentvec._data import PACKAGE_DATA_DIR  # noqa: E402

N_PAIRS = 30


@pytest.fixture(scope="module")
def stsb_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("sts-data")
    src = PACKAGE_DATA_DIR / "downstream/STS/STSBenchmark/sts-test.csv"
    lines = src.read_text(encoding="utf-8").splitlines(True)
    (root / "downstream/STS/STSBenchmark").mkdir(parents=True)
    (root / "downstream/STS/STSBenchmark/sts-test.csv").write_text(
        "".join(lines[:N_PAIRS]), encoding="utf-8"
    )
    return root


@pytest.mark.filterwarnings("ignore:Whitening. the covariance")
@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_the_sweep_scores_what_score_sts_gives_on_the_encoders_vectors(
    stsb_data, tiny_minilm, tmp_path
):
    from sentvec.cache import VectorCache
    from sentvec.evaluation import (
        evaluate_whitening_sweep,
        load_sts,
        score_sts,
        unique_sentences,
    )
    from sentvec.whitening import Whitening

    encoder = tiny_minilm.with_options(layers=(1, -1))
    tasks = load_sts(["STSB"], data_dir=stsb_data)
    sentences = unique_sentences(tasks)
    train = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt"
    lines = train.read_text(encoding="utf-8").splitlines()[:60]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences[:2] + lines) + "\n", encoding="utf-8")
    sweep = evaluate_whitening_sweep(
        encoder,
        [8, None],
        ["STSB"],
        corpus=corpus,
        corpus_preprocessing="none",
        cache=VectorCache(tmp_path / "cache"),
        data_dir=stsb_data,
        model="tiny",
    )
    assert sweep.model == "tiny" and sweep.layers == (1, 2) and sweep.dim == 384
    assert sweep.corpus["n_read"] == 62 and sweep.corpus["n_excluded"] == 2
    assert sweep.corpus["n_used"] == 60 and sweep.corpus["path"] == str(corpus)
    points = {(p.fit, p.k): p.average for p in sweep.points}
    assert set(points) == {("none", 384)} | {(f, k) for f in ("year", "corpus") for k in (8, 384)}
    emb = encoder.encode(sentences)
    assert points["none", 384] == pytest.approx(score_sts(tasks, sentences, emb).average, abs=1e-9)
    year = score_sts(tasks, sentences, emb, whitening="year", n_components=8)
    assert points["year", 8] == pytest.approx(year.average, abs=1e-9)
    fitted = Whitening(8).fit(encoder.encode(lines))
    corpus_fit = score_sts(tasks, sentences, emb, whitening=fitted)
    assert points["corpus", 8] == pytest.approx(corpus_fit.average, abs=1e-9)
    with pytest.raises(ValueError, match="k=385 is invalid"):
        evaluate_whitening_sweep(encoder, [385], ["STSB"], data_dir=stsb_data)
