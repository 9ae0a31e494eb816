"""SIF, uSIF and all-but-the-top against literal float64 transcriptions of the papers.

Oracles (written here from the papers' equations, plain numpy, float64): on the tiny Sent2Vec
reference model's word vectors and counts and the 490 reference sentences,

* SIF (Arora, Liang & Ma 2017, Algorithm 1): ``v_s = (1/|s|) sum a/(a + p(w)) v_w``, then
  ``v_s - u u^T v_s`` with ``u`` the first right singular vector of the uncentred matrix;
* uSIF (Ethayarajh 2018, Algorithm 1 + the authors' ``a``): weights ``a/(a/2 + p(w))`` on unit
  word vectors, then the top 5 singular directions removed with ``lambda_i = s_i^2 / sum s_j^2``;
* ABTT (Mu & Viswanath 2018, Algorithm 1): centre, remove the top D principal components.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec import AllButTheTop, Pipeline, SIFEncoder, USIFEncoder, load_whitening
from sentvec.sent2vec import Sent2Vec
from sentvec.whitening import CommonComponentRemoval, WhiteningStatistics, load_postprocessor

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
LINES = (REF / "sentences.txt").read_text(encoding="utf-8")[:-1].split("\n")
TOL = 1e-6


@pytest.fixture(scope="module")
def model() -> Sent2Vec:
    return Sent2Vec.load(REF / "tiny-unigram.bin")


def _vocabulary(model):
    """word -> (row, count), without </s> and <PLACEHOLDER>, read straight from the model."""
    d = model.dictionary
    M = np.asarray(model.input_matrix, dtype=np.float64)
    return {
        w: (M[i], int(c))
        for i, (w, c) in enumerate(zip(d.words, d.counts, strict=True))
        if w not in ("</s>", "<PLACEHOLDER>")
    }


def _tokens(line):
    return [t for t in re.split(r"[ \t\n\r\x0b\x0c\x00]+", line) if t]


def _averages(vocab, weight, unit):
    out = np.zeros((len(LINES), next(iter(vocab.values()))[0].shape[0]))
    for r, line in enumerate(LINES):
        toks = [t for t in _tokens(line) if t in vocab]
        for t in toks:
            v = vocab[t][0]
            if unit:
                v = v / np.sqrt(np.sum(v * v))
            out[r] += weight(t) * v
        if toks:
            out[r] /= len(toks)
    return out


def _sif_oracle(vocab, a=1e-3):
    N = sum(c for _, c in vocab.values())
    X = _averages(vocab, lambda t: a / (a + vocab[t][1] / N), unit=False)
    _, _, vt = np.linalg.svd(X, full_matrices=False)  # uncentred
    u = vt[0]
    return X - np.outer(X @ u, u)


def _usif_oracle(vocab, n=11, m=5):
    N = sum(c for _, c in vocab.values())
    V = len(vocab)
    threshold = 1 - (1 - 1 / V) ** n
    alpha = sum(1 for _, c in vocab.values() if c / N > threshold) / V
    a = (1 - alpha) / (alpha * 0.5 * V)
    X = _averages(vocab, lambda t: a / (0.5 * a + vocab[t][1] / N), unit=True)
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    s = s[:m]
    for i in range(m):
        lam = s[i] ** 2 / np.sum(s**2)
        X = X - lam * np.outer(X @ vt[i], vt[i])
    return X, a


def _abtt_oracle(X, D):
    Xc = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    for i in range(D):
        Xc = Xc - np.outer(Xc @ vt[i], vt[i])
    return Xc


def test_sif_equals_paper_transcription(model):
    enc = SIFEncoder.from_sent2vec(model).fit(LINES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2 lines have no known word
        got = enc.encode(LINES)
    want = _sif_oracle(_vocabulary(model))
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    assert np.abs(want).max() > 0.05  # not a trivially small comparison
    # the removal changed the vectors (the component is not negligible)
    raw = enc.weighted_average(LINES)
    assert np.abs(raw - want).max() > 1e-3


def test_usif_equals_paper_transcription(model):
    enc = USIFEncoder.from_sent2vec(model).fit(LINES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = enc.encode(LINES)
    want, a = _usif_oracle(_vocabulary(model))
    assert enc.a == pytest.approx(a, rel=1e-12)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    assert np.abs(want).max() > 0.05


@pytest.mark.parametrize("D", [1, 2])
def test_abtt_equals_paper_transcription_on_word_vectors(model, D):
    vocab = _vocabulary(model)
    W = np.stack([v for v, _ in vocab.values()]).astype(np.float32)
    got = AllButTheTop(D).fit(W).transform(W)
    assert got.dtype == np.float32
    want = _abtt_oracle(W.astype(np.float64), D)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    # mergeable: statistics of two halves give the same fit
    stats = WhiteningStatistics.from_array(W[:5000]).merge(WhiteningStatistics.from_array(W[5000:]))
    np.testing.assert_allclose(
        AllButTheTop(D).fit_statistics(stats).transform(W), want, rtol=0, atol=TOL
    )


def test_abtt_equals_transcription_on_sentence_vectors(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        E = model.encode(LINES[:480])
    np.testing.assert_allclose(
        AllButTheTop(1).fit_transform(E), _abtt_oracle(E.astype(np.float64), 1), rtol=0, atol=TOL
    )


def test_postprocessors_save_load_and_pipeline(model, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        E = model.encode(LINES[:480])
    for est in (
        AllButTheTop(2).fit(E),
        CommonComponentRemoval(3, weighting="singular-value-share").fit(E),
    ):
        est.save(tmp_path / type(est).__name__)
        back = load_postprocessor(tmp_path / type(est).__name__)
        assert type(back) is type(est)
        np.testing.assert_array_equal(back.transform(E), est.transform(E))
        p = Pipeline(model, est)
        assert p.encode([]).shape == (0, 12)  # both keep all d dimensions
        p.save(tmp_path / f"pipe-{type(est).__name__}")
        cfg = (tmp_path / f"pipe-{type(est).__name__}" / "pipeline.json").read_text()
        assert est.postprocessor_type in cfg
        loaded = Pipeline.load(tmp_path / f"pipe-{type(est).__name__}")
        assert type(loaded.whitening) is type(est)
        assert type(load_whitening(tmp_path / f"pipe-{type(est).__name__}")) is type(est)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(loaded.encode(LINES[:20]), p.encode(LINES[:20]))
    with pytest.raises(ValueError, match="n_components=13"):
        AllButTheTop(13).fit(E)


@pytest.mark.parametrize("cls", [SIFEncoder, USIFEncoder])
def test_sif_encoders_save_load_in_pipeline(model, cls, tmp_path):
    enc = cls.from_sent2vec(model, n_components=2).fit(LINES[:480])
    Pipeline(enc).save(tmp_path / "p")
    back = Pipeline.load(tmp_path / "p").encoder
    assert type(back) is cls and back.n_components == 2
    np.testing.assert_array_equal(back.encode(LINES[:50]), enc.encode(LINES[:50]))
    with pytest.raises(Exception, match="fit"):
        cls.from_sent2vec(model).encode(LINES[:3])


def test_year_postprocessor_fits_each_task_on_its_pairs(model):
    """score_sts(whitening="year", postprocessor=...) on one task equals scoring with the same
    estimator fitted on both sides of all that task's pairs (duplicates kept)."""
    from sentvec.evaluation import load_sts, score_sts, unique_sentences

    task = load_sts(["STS14"], variant="senteval")[0]
    sents = unique_sentences([task])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        E = model.encode(sents)
        index = {s: i for i, s in enumerate(sents)}
        rows = [index[s] for sub in task.subsets for s in (*sub.sent1, *sub.sent2)]
        fitted = AllButTheTop(1).fit(E[rows])
        want = score_sts([task], sents, E, whitening=fitted)
        got = score_sts([task], sents, E, whitening="year", postprocessor=AllButTheTop(1))
    assert got.task_scores["STS14"] == pytest.approx(want.task_scores["STS14"], abs=1e-9)
    assert got.metadata["postprocessing"]["method"] == "AllButTheTop"
    assert "AllButTheTop" in got.whitening.fit_corpus
    none = score_sts([task], sents, E)
    assert abs(none.task_scores["STS14"] - got.task_scores["STS14"]) > 0.01


def test_sif_from_transformer_counts_tokens(tiny_minilm, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n\nthe dog ran\n", encoding="utf-8")
    enc = SIFEncoder.from_transformer(tiny_minilm, corpus, common_component="none")
    tok = tiny_minilm.tokenizer
    the = tok.convert_tokens_to_ids("the")
    assert enc.counts[the] == 3 and enc.counts.sum() == 9
    E = tiny_minilm.input_token_embeddings()
    ids = tok("the dog", add_special_tokens=False)["input_ids"]
    p = enc.counts / 9.0
    want = np.mean([1e-3 / (1e-3 + p[i]) * E[i].astype(np.float64) for i in ids], axis=0)
    np.testing.assert_allclose(enc.encode(["the dog"])[0], want, rtol=0, atol=TOL)
    enc.save(tmp_path / "sif")
    from sentvec.encoders.sif import load_sif_encoder

    np.testing.assert_array_equal(
        load_sif_encoder(tmp_path / "sif").encode(["the dog"]), enc.encode(["the dog"])
    )


def test_eval_sts_whiten_accepts_a_saved_abtt_directory(model, tmp_path, capsys):
    import json

    from sentvec.cli import main
    from sentvec.evaluation import load_sts, score_sts, unique_sentences

    tasks = load_sts(["STSBenchmark"], variant="senteval")
    sents = unique_sentences(tasks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        E = model.encode(sents)
        abtt = AllButTheTop(2).fit(E[:500])
        want = score_sts(tasks, sents, E, whitening=abtt)
    abtt.save(tmp_path / "abtt")
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval-sts",
                "--model",
                str(REF / "tiny-unigram.bin"),
                "--tasks",
                "STSB",
                "--whiten",
                str(tmp_path / "abtt"),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert res["task_scores"]["STSBenchmark"] == pytest.approx(
        want.task_scores["STSBenchmark"], abs=1e-9
    )
    assert res["metadata"]["postprocessing"]["method"] == "AllButTheTop"
    assert "AllButTheTop" in capsys.readouterr().out + res["metadata"]["whitening_source"]
