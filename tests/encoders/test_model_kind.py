"""``model_kind`` (the name of ``detect_format``'s entry, which ``load_encoder`` dispatches on):
the kind it names for each model on disk is the class ``load_encoder`` returns, and only a
transformer gets a description."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sentvec import Sent2Vec, StaticEncoder, load_encoder
from sentvec.encoders import describe_without_loading, model_kind
from sentvec.encoders.pipeline import Pipeline
from sentvec.encoders.transformer import TransformerEncoder

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"

CLASS_OF_KIND = {
    "pipeline": Pipeline,
    "sent2vec-bin": Sent2Vec,
    "sent2vec-dir": Sent2Vec,
    "model2vec": StaticEncoder,
    "transformer": TransformerEncoder,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_minilm_dir, minilm_path) -> dict[str, Path]:
    from tokenizers import Tokenizer

    root = tmp_path_factory.mktemp("kinds")
    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    rows = np.random.default_rng(0).standard_normal((tok.get_vocab_size(), 8)).astype("f4")
    StaticEncoder(rows, tok).save(root / "m2v")
    s2v = Sent2Vec.load(REF / "tiny-unigram.bin")
    s2v.save(root / "s2v-dir")
    Pipeline(s2v).save(root / "pipeline")
    return {
        "pipeline": root / "pipeline",
        "sent2vec-bin": REF / "tiny-unigram.bin",
        "sent2vec-dir": root / "s2v-dir",
        "model2vec": root / "m2v",
        "transformer": tiny_minilm_dir,
    }


@pytest.mark.parametrize("kind", sorted(CLASS_OF_KIND))
def test_the_kind_is_the_class_load_encoder_returns(models, kind):
    path = models[kind]
    assert model_kind(path) == kind
    assert isinstance(load_encoder(path), CLASS_OF_KIND[kind])
    described = describe_without_loading(path)
    assert (described is not None) == (kind == "transformer")


def test_files_that_are_no_model(tmp_path):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    other = tmp_path / "notes.txt"
    other.write_text("not a model\n")
    for path, why in ((empty, "an empty file"), (other, "wrong magic number")):
        assert model_kind(path) == "other-file"
        with pytest.raises(ValueError, match=why):
            load_encoder(path)


def test_names_that_are_not_paths(tmp_path):
    assert model_kind("wordllama") == "wordllama"
    assert model_kind("minilm") == "transformer"
    assert model_kind("org/not-a-local-model") == "transformer"
    assert describe_without_loading("org/not-a-local-model") is None


def test_a_described_encoder_describes_itself_as_the_model_and_cannot_encode(tiny_minilm_dir):
    from sentvec.encoders import DescribedEncoder, output_dimension, text_variant_of

    loaded = load_encoder(tiny_minilm_dir, layers=(1, -1))
    described = DescribedEncoder(describe_without_loading(tiny_minilm_dir, layers=(1, -1)))
    assert described.config_dict() == loaded.config_dict()
    assert output_dimension(described) == output_dimension(loaded)
    assert text_variant_of(described) == text_variant_of(loaded)
    with pytest.raises(RuntimeError, match="only described"):
        described.encode(["a sentence"])
