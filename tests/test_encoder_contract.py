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

REF = Path(__file__).parent / "data" / "sent2vec-reference"
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
