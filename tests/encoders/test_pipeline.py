"""Pipelines (encoder + whitening) and load_encoder's name/path resolution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sentvec.encoders import Pipeline, load_encoder
from sentvec.sent2vec.model import Sent2Vec
from sentvec.whitening import Whitening

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"


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


def _tree(root):
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def test_pipeline_save_refuses_to_replace_foreign_files_and_directories(
    s2v, sentences, tmp_path, monkeypatch
):
    w = Whitening(n_components=4).fit(s2v.encode(sentences))
    pipe = Pipeline(s2v, w)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "precious.txt").write_text("keep", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("keep too", encoding="utf-8")
    w.save(tmp_path / "wdir")  # a saved Whitening is not a pipeline either
    s2v.save(tmp_path / "s2v")
    before = _tree(tmp_path)
    for name in ("dir", "notes.txt", "wdir", "s2v"):
        with pytest.raises(FileExistsError, match="refusing to replace") as exc:
            pipe.save(tmp_path / name)
        assert name in str(exc.value)
    monkeypatch.chdir(tmp_path / "dir")
    for target in (".", ".."):
        with pytest.raises(ValueError, match="current working directory"):
            pipe.save(target)
    assert _tree(tmp_path) == before  # nothing replaced, no temporary left behind
    # a new path, an empty directory and an existing pipeline are written
    (tmp_path / "empty").mkdir()
    for name in ("new", "empty", "new"):
        pipe.save(tmp_path / name)
        np.testing.assert_array_equal(
            Pipeline.load(tmp_path / name).encode(sentences[:3]), pipe.encode(sentences[:3])
        )


def test_whitening_save_refuses_foreign_directories(s2v, sentences, tmp_path):
    w = Whitening(n_components=4).fit(s2v.encode(sentences))
    Pipeline(s2v, w).save(tmp_path / "pipe")
    (tmp_path / "file.npy").write_bytes(b"data")
    before = _tree(tmp_path)
    for name in ("pipe", "file.npy"):
        with pytest.raises(FileExistsError, match="not a directory|no whitening.json"):
            w.save(tmp_path / name)
    assert _tree(tmp_path) == before  # the pipeline was not turned into a mixed directory
    w.save(tmp_path / "w")
    (tmp_path / "w" / "stale.npy").write_bytes(b"old")
    w2 = Whitening(n_components=2).fit(s2v.encode(sentences))
    w2.save(tmp_path / "w")  # a saved Whitening is replaced as a whole
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == sorted(
        ["whitening.json", "mean.npy", "components.npy", "explained_variance.npy", "scatter.npy"]
    )
    assert Whitening.load(tmp_path / "w").n_components_ == 2


def test_sent2vec_save_refuses_a_directory_with_a_foreign_config_json(s2v, tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    with pytest.raises(FileExistsError, match="not a Sent2Vec model directory"):
        s2v.save(hf)
    assert _tree(hf) == {"config.json": b'{"model_type": "bert"}'}


@pytest.mark.filterwarnings("ignore:.*(in-vocabulary|queries are all-zero):UserWarning")
def test_whitened_zero_rows_stay_zero(s2v, sentences):
    X = s2v.encode(sentences)
    w = Whitening(n_components=8).fit(X)
    pipe = Pipeline(s2v, w)
    batch = sentences[:5] + ["", "zzzz qqqq", "   "] + sentences[5:7]
    with pytest.warns(UserWarning) as got:
        Z = pipe.encode(batch)
    assert any("3 of 10 encoder vectors are all-zero" in str(m.message) for m in got)
    # oracle: plain numpy whitening of the encoder's rows, zero rows kept zero
    E = s2v.encode(batch).astype(np.float64)
    zero = ~E.any(axis=1)
    assert zero.tolist() == [False] * 5 + [True] * 3 + [False] * 2
    W = w.components_.T / np.sqrt(w.explained_variance_)
    expected = np.where(zero[:, None], 0.0, (E - w.mean_) @ W)
    np.testing.assert_allclose(Z, expected, rtol=0, atol=1e-5)
    assert (Z[zero] == 0).all() and (Z[~zero] != 0).any(axis=1).all()
    with pytest.warns(UserWarning, match="3 of 10 encoder vectors"):
        normed = pipe.encode(batch, normalize=True)
    assert (normed[zero] == 0).all()
    with pytest.warns(UserWarning, match="1 of 1 encoder vectors"):
        assert (pipe.encode("") == 0).all()
    # in a cosine search the blank rows score 0 (they were identical vectors with cosine 1)
    from sentvec.search import SemanticSearch

    index = SemanticSearch(metric="cosine")
    with pytest.warns(UserWarning, match="3 of 10 embeddings are all-zero"):
        index.add(Z)
    scores, ids = index.search(Z, 10)
    for q in range(10):
        by_id = dict(zip(ids[q].tolist(), scores[q].tolist(), strict=True))
        assert [by_id[i] for i in (5, 6, 7)] == [0.0, 0.0, 0.0]
        assert by_id[q] == (0.0 if zero[q] else pytest.approx(1.0, abs=1e-6))


def test_whitening_of_another_width_is_refused_before_any_encoding(s2v, tmp_path):
    from sentvec.encode_files import encode_file

    w = Whitening().fit(np.random.default_rng(0).normal(size=(60, s2v.dim + 1)))
    with pytest.raises(
        ValueError,
        match=rf"fitted on {s2v.dim + 1}-dimensional vectors, but "
        rf"the encoder gives {s2v.dim}-dimensional",
    ):
        Pipeline(s2v, w)
    # a saved pipeline edited to hold such a whitening does not load either
    good = Whitening().fit(np.random.default_rng(0).normal(size=(60, s2v.dim)))
    Pipeline(s2v, good).save(tmp_path / "p")
    import shutil

    shutil.rmtree(tmp_path / "p" / "whitening")
    w.save(tmp_path / "p" / "whitening")
    with pytest.raises(ValueError, match="dimensional"):
        load_encoder(tmp_path / "p")
    # file encoding checks it before the first shard and writes nothing
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat .\na dog ran .\n", encoding="utf-8")
    with pytest.raises(ValueError, match="dimensional"):
        encode_file(s2v, corpus, tmp_path / "out", whitening=w)
    assert not (tmp_path / "out").exists()


def test_edited_pipeline_json_is_a_clear_error(s2v, tmp_path):
    import json

    w = Whitening().fit(np.random.default_rng(0).normal(size=(60, s2v.dim)))
    Pipeline(s2v, w).save(tmp_path / "p")
    cfg_path = tmp_path / "p" / "pipeline.json"
    good = json.loads(cfg_path.read_text())
    for change, match in [
        ({"encoder": "x"}, "'encoder' must be an object"),
        ({"whitening": "x"}, "'whitening' must be an object"),
        ({"whitening": {"path": "../elsewhere"}}, "not a sub-directory name"),
        ({"encoder": {**good["encoder"], "path": "/etc"}}, "not a sub-directory"),
        ({"version": True}, "unsupported pipeline version True"),
    ]:
        cfg_path.write_text(json.dumps({**good, **change}))
        with pytest.raises(ValueError, match=match):
            Pipeline.load(tmp_path / "p")
    cfg_path.write_text(json.dumps(good))
    assert Pipeline.load(tmp_path / "p").whitening.n_features_in_ == s2v.dim


def test_sent2vec_pipeline_saves_and_loads_without_torch(tmp_path):
    """Saving goes through each component's own save(); nothing imports torch for Sent2Vec."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    ref = Path(__file__).parents[1] / "data" / "sent2vec-reference"
    code = textwrap.dedent(f"""
        import sys

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "transformers"):
                    raise ImportError(f"blocked import of {{name}}")
                return None

        sys.meta_path.insert(0, Blocker())
        import numpy as np
        import sentvec

        model = sentvec.load_encoder({str(ref / "tiny-bigram.bin")!r})
        lines = open({str(ref / "sentences.txt")!r}, encoding="utf-8").read().splitlines()
        X = model.encode(lines)
        w = sentvec.Whitening(8).fit(X[X.any(axis=1)])
        sentvec.Pipeline(model, w).save({str(tmp_path / "pipe")!r})
        back = sentvec.load_encoder({str(tmp_path / "pipe")!r})
        assert type(back).__name__ == "Pipeline"
        assert np.array_equal(back.encode(lines[:50]), sentvec.Pipeline(model, w).encode(lines[:50]))
        assert "torch" not in sys.modules and "transformers" not in sys.modules
        print("ok")
    """)
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
