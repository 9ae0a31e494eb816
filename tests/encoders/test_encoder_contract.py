"""The encoder contract: every encoder class against the capability protocols of
``sentvec.encoders.base`` and the common ``encode`` / ``save`` / ``load`` API.

Each encoder type is built small (the 2-layer MiniLM of ``conftest.py``, the reference Sent2Vec
``.bin``, random static tables over MiniLM's tokenizer), so the whole file runs in seconds.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec.encoders import base

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
TEXTS = ["a b c", "the cat sat on the mat", "d e", "b a c d"]

ENCODER_TYPES = [
    "transformer",
    "sent2vec",
    "static",
    "bigram_static",
    "sif",
    "usif",
    "pipeline",
]

PROTOCOLS = {
    "Encoder": base.Encoder,
    "SelfDescribing": base.SelfDescribing,
    "DimensionStating": base.DimensionStating,
    "TextVariantAware": base.TextVariantAware,
    "TokenCounting": base.TokenCounting,
    "LayeredEncoder": base.LayeredEncoder,
    "TokenEmbeddings": base.TokenEmbeddings,
    "DeviceEncoder": base.DeviceEncoder,
    "PreparedInput": base.PreparedInput,
    "YearPostprocessing": base.YearPostprocessing,
    "PostProcessed": base.PostProcessed,
    "Persistable": base.Persistable,
    "PipelineComponent": base.PipelineComponent,
}
COMMON = {"Encoder", "SelfDescribing", "DimensionStating", "TextVariantAware", "Persistable"}
#: The protocols each encoder type satisfies (and it satisfies no other).
EXPECTED = {
    "transformer": COMMON
    | {"TokenCounting", "LayeredEncoder", "TokenEmbeddings", "DeviceEncoder", "PipelineComponent"},
    "sent2vec": COMMON | {"PreparedInput", "PipelineComponent"},
    "static": COMMON | {"PipelineComponent"},
    "bigram_static": COMMON | {"PipelineComponent"},
    "sif": COMMON | {"YearPostprocessing", "PipelineComponent"},
    "usif": COMMON | {"YearPostprocessing", "PipelineComponent"},
    "pipeline": COMMON | {"PostProcessed"},
}


@pytest.fixture(scope="module")
def sent2vec_model():
    from sentvec import Sent2Vec

    return Sent2Vec.load(REF / "tiny-bigram.bin")


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(minilm_path / "tokenizer.json"))


def _rows(n: int, d: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


@pytest.fixture(scope="module")
def encoders(request, sent2vec_model, minilm_tokenizer):
    """One small encoder of every type (built on first use)."""
    from sentvec import Pipeline, SIFEncoder, USIFEncoder, Whitening
    from sentvec.encoders import BigramStaticEncoder, StaticEncoder

    made: dict[str, object] = {}

    def make(kind: str):
        if kind in made:
            return made[kind]
        if kind == "transformer":
            enc = request.getfixturevalue("tiny_minilm")
        elif kind == "sent2vec":
            enc = sent2vec_model
        elif kind == "static":
            enc = StaticEncoder(_rows(minilm_tokenizer.get_vocab_size()), minilm_tokenizer)
        elif kind == "bigram_static":
            n = minilm_tokenizer.get_vocab_size()
            the, cat = minilm_tokenizer.token_to_id("the"), minilm_tokenizer.token_to_id("cat")
            enc = BigramStaticEncoder(
                _rows(n + 1), minilm_tokenizer, np.array([[the, cat]], dtype=np.int64)
            )
        elif kind == "sif":
            enc = SIFEncoder.from_sent2vec(sent2vec_model, common_component="none")
        elif kind == "usif":
            enc = USIFEncoder.from_sent2vec(sent2vec_model, common_component="none")
        else:
            X = sent2vec_model.encode([f"{w} {v}" for w in "abcdefgh" for v in "abcdefgh"])
            enc = Pipeline(sent2vec_model, Whitening(n_components=4).fit(X))
        made[kind] = enc
        return enc

    return make


def _quiet(encoder, texts, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return encoder.encode(texts, **kwargs)


@pytest.mark.parametrize("kind", ENCODER_TYPES)
def test_each_encoder_satisfies_exactly_its_declared_protocols(encoders, kind):
    enc = encoders(kind)
    held = {name for name, proto in PROTOCOLS.items() if isinstance(enc, proto)}
    assert held == EXPECTED[kind]


def test_sent2vec_satisfies_the_servers_prepared_input_fast_path(sent2vec_model):
    """The server's two-half path is chosen by ``isinstance(encoder, PreparedInput)``: a
    renamed ``prepare`` / ``embed_prepared`` / ``encode_with_stats`` fails here, not silently."""
    from sentvec.serve.served_model import ServedModel

    assert isinstance(sent2vec_model, base.PreparedInput)
    served = ServedModel("s2v", sent2vec_model)
    assert served.counts_on_encode and served.prepare is not None
    vectors, tokens = served.encode_prepared(served.prepare(TEXTS))
    np.testing.assert_array_equal(vectors, sent2vec_model.encode(TEXTS))
    assert tokens.tolist() == [len(t.split()) for t in TEXTS]


def test_a_sent2vec_subclass_without_one_fast_path_method_is_served_without_it(sent2vec_model):
    from sentvec import Sent2Vec
    from sentvec.serve.served_model import ServedModel

    class Renamed(Sent2Vec):
        embed_prepared = None  # type: ignore[assignment]

    model = Renamed.__new__(Renamed)
    model.__dict__.update(sent2vec_model.__dict__)
    assert not isinstance(model, base.PreparedInput)
    served = ServedModel("renamed", model)
    assert served.prepare is None and not served.counts_on_encode


@pytest.mark.parametrize("kind", ENCODER_TYPES)
def test_encode_takes_the_common_keywords_with_the_same_defaults(encoders, kind):
    import inspect

    params = inspect.signature(encoders(kind).encode).parameters
    for name in ("batch_size", "show_progress_bar", "normalize"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[name].default is None
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@pytest.mark.parametrize("kind", ENCODER_TYPES)
def test_an_unknown_encode_keyword_raises_type_error(encoders, kind):
    with pytest.raises(TypeError, match="convert_to_numpy"):
        encoders(kind).encode(TEXTS, convert_to_numpy=True)


@pytest.mark.parametrize("kind", ENCODER_TYPES)
def test_normalize_true_gives_unit_rows_and_batch_size_changes_nothing(encoders, kind):
    enc = encoders(kind)
    X = _quiet(enc, TEXTS, normalize=True)
    assert X.dtype == np.float32 and X.shape[0] == len(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(_quiet(enc, TEXTS, normalize=True, batch_size=1), X, atol=1e-6)
    raw = _quiet(enc, TEXTS, normalize=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)


@pytest.mark.parametrize("kind", ENCODER_TYPES)
def test_save_returns_a_path_that_load_reads_back_to_equal_vectors(encoders, kind, tmp_path):
    enc = encoders(kind)
    where = enc.save(tmp_path / "model")
    assert isinstance(where, Path) and where == tmp_path / "model"
    again = type(enc).load(where)
    assert type(again) is type(enc)
    np.testing.assert_allclose(_quiet(again, TEXTS), _quiet(enc, TEXTS), atol=1e-6)


def test_bigram_static_encode_honours_batch_size_and_warns_on_zero_vectors(encoders):
    enc = encoders("bigram_static")
    texts = ["the cat", "", "cat the cat", "   "]
    with pytest.warns(UserWarning, match="2 of 4 texts have no known token"):
        whole = enc.encode(texts)
    with pytest.warns(UserWarning, match="2 of 4 texts"):
        one_by_one = enc.encode(texts, batch_size=1)
    np.testing.assert_array_equal(one_by_one, whole)
    assert not whole[[1, 3]].any() and whole[[0, 2]].any()
    with pytest.raises(ValueError, match="batch_size"):
        enc.encode(texts, batch_size=0)


def test_load_of_one_sif_method_refuses_the_others_directory(encoders, tmp_path):
    from sentvec import SIFEncoder, USIFEncoder

    where = encoders("usif").save(tmp_path / "usif")
    with pytest.raises(ValueError, match="holds a USIFEncoder, not a SIFEncoder"):
        SIFEncoder.load(where)
    assert isinstance(USIFEncoder.load(where), USIFEncoder)
