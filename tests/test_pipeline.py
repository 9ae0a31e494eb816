"""Pipelines (encoder + whitening) and load_encoder's name/path resolution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sentvec.pipeline import Pipeline, load_encoder
from sentvec.sent2vec.model import Sent2Vec
from sentvec.whitening import Whitening

REF = Path(__file__).parent / "data" / "sent2vec-reference"


@pytest.fixture(scope="module")
def s2v() -> Sent2Vec:
    return Sent2Vec.load(REF / "tiny-bigram.bin")


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    lines = (REF / "sentences.txt").read_text(encoding="utf-8").split("\n")
    return [s for s in lines[:480] if s.strip()]


def test_load_encoder_reads_official_bin_by_magic(s2v, tmp_path):
    copy = tmp_path / "model.weird-extension"
    copy.write_bytes((REF / "tiny-bigram.bin").read_bytes())
    enc = load_encoder(copy)
    assert isinstance(enc, Sent2Vec)
    np.testing.assert_array_equal(enc.encode(["the cat sat ."]), s2v.encode(["the cat sat ."]))


def test_load_encoder_reads_sent2vec_directory(s2v, tmp_path):
    s2v.save(tmp_path / "s2v")
    enc = load_encoder(tmp_path / "s2v")
    assert isinstance(enc, Sent2Vec)


def test_load_encoder_rejects_text_file_and_missing_path(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello world\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not an official sent2vec"):
        load_encoder(text)
    with pytest.raises((FileNotFoundError, OSError)):
        load_encoder(tmp_path / "does" / "not" / "exist")


def test_load_encoder_rejects_transformer_options_for_sent2vec():
    with pytest.raises(ValueError, match="do not apply"):
        load_encoder(REF / "tiny-bigram.bin", pooling="cls")


def test_pipeline_equals_manual_whitening_and_round_trips(s2v, sentences, tmp_path):
    X = s2v.encode(sentences)
    w = Whitening(n_components=8).fit(X)
    pipe = Pipeline(s2v, w)
    Z = pipe.encode(sentences[:20])
    np.testing.assert_allclose(Z, w.transform(X[:20]), rtol=0, atol=1e-6)
    assert Z.dtype == np.float32 and Z.shape == (20, 8)
    assert pipe.encode([]).shape == (0, 8)
    assert pipe.encode(sentences[0]).shape == (8,)
    normed = pipe.encode(sentences[:5], normalize=True)
    np.testing.assert_allclose(np.linalg.norm(normed, axis=1), 1.0, atol=1e-5)

    pipe.save(tmp_path / "pipe")
    loaded = load_encoder(tmp_path / "pipe")
    assert isinstance(loaded, Pipeline)
    np.testing.assert_array_equal(loaded.encode(sentences[:20]), Z)
    # saving over an existing pipeline replaces it atomically
    Pipeline(s2v, None).save(tmp_path / "pipe")
    again = Pipeline.load(tmp_path / "pipe")
    assert again.whitening is None
    np.testing.assert_array_equal(again.encode(sentences[:3]), X[:3])


def test_pipeline_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="pipeline.json"):
        Pipeline.load(tmp_path)
    (tmp_path / "pipeline.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        Pipeline.load(tmp_path)
    (tmp_path / "pipeline.json").write_text('{"format": "sentvec-pipeline", "version": 99}')
    with pytest.raises(ValueError, match="unsupported pipeline version"):
        Pipeline.load(tmp_path)


def test_pipeline_rejects_unfitted_whitening_and_non_encoders(s2v):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        Pipeline(s2v, Whitening())
    with pytest.raises(TypeError, match="encode"):
        Pipeline(object())


def test_transformer_pipeline_round_trip(tiny_minilm, tmp_path):
    sents = ["a man is playing a guitar .", "a woman is slicing an onion .", "the cat sat ."] * 4
    X = tiny_minilm.encode(sents)
    w = Whitening(n_components=2).fit(X[:3].repeat(3, axis=0) + np.arange(9)[:, None] * 1e-3)
    pipe = Pipeline(tiny_minilm, w)
    pipe.save(tmp_path / "tpipe")
    loaded = load_encoder(tmp_path / "tpipe")
    np.testing.assert_allclose(loaded.encode(sents[:3]), pipe.encode(sents[:3]), atol=1e-5)


def test_load_encoder_missing_bin_is_a_clear_error_not_a_hub_lookup():
    with pytest.raises(FileNotFoundError, match="model file not found: 'nope.bin'"):
        load_encoder("nope.bin")
