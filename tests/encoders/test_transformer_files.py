"""The transformer description read from the model files equals the loaded encoder's, and so does
the vector-cache key computed from it (``sentvec eval-sts`` finds cached vectors without loading
the model). Oracle: ``TransformerEncoder.from_pretrained(...).config_dict()`` and
``encoder_cache_key`` of the loaded encoder."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("torch")

from sentvec.cache import (  # noqa: E402
    VectorCache,
    cached_layer_vectors,
    code_fingerprint,
    description_cache_key,
    encoder_cache_key,
)
from sentvec.encoders import describe_without_loading  # noqa: E402
from sentvec.encoders.transformer import TransformerEncoder  # noqa: E402

SENTS = ["a man is playing a guitar .", "a woman slices an onion ."]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"pooling": "cls", "layers": (-1,)},
        {"max_length": 64, "mean_mode": "paper"},
        {"precision": "bfloat16"},
        {"precision": "auto"},
        {"precision": "auto", "device": "cpu"},
        {"precision": "float32"},
    ],
)
def test_description_and_key_equal_the_loaded_encoders(tiny_minilm_dir, tmp_path, options):
    enc = TransformerEncoder.from_pretrained(tiny_minilm_dir, **options)
    desc = describe_without_loading(str(tiny_minilm_dir), **options)
    assert desc == enc.config_dict()
    memo = tmp_path / "memo"
    for pooling in ("cls", "mean"):
        from_files = description_cache_key(
            desc,
            SENTS,
            model_path=desc["model_path"],
            code_sha256=code_fingerprint(enc),
            memo_dir=memo,
            pooling=pooling,
        )
        loaded = encoder_cache_key(enc, SENTS, pooling=pooling, memo_dir=memo)
        assert from_files == loaded


def test_the_minilm_alias_is_described_exactly(minilm_path):
    enc = TransformerEncoder.from_pretrained("minilm", layers=(2, -1))
    assert describe_without_loading("minilm", layers=(2, -1)) == enc.config_dict()


def test_what_is_not_a_local_transformer_has_no_description(tmp_path, tiny_minilm_dir):
    assert describe_without_loading("org/not-a-local-model") is None
    assert describe_without_loading(tmp_path / "missing") is None
    assert describe_without_loading("wordllama") is None
    assert describe_without_loading(str(tiny_minilm_dir), layers=(9,)) is None  # out of range
    assert describe_without_loading(str(tiny_minilm_dir), max_length=10**6) is None
    saved = tmp_path / "sentvec-model"
    (saved / "model.bin").parent.mkdir()
    (saved / "model.bin").write_bytes(b"x")
    assert describe_without_loading(saved / "model.bin") is None  # a file: Sent2Vec's
    other = tmp_path / "distilbert"  # config names other than hidden_size / num_hidden_layers
    shutil.copytree(tiny_minilm_dir, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg["dim"], cfg["n_layers"] = cfg.pop("hidden_size"), cfg.pop("num_hidden_layers")
    (other / "config.json").write_text(json.dumps(cfg))
    assert describe_without_loading(other) is None


def test_cached_layer_vectors_needs_every_pooling(tiny_minilm_dir, tmp_path):
    from sentvec.cache import pooled_layer_vectors

    cache = VectorCache(tmp_path / "c")
    enc = TransformerEncoder.from_pretrained(tiny_minilm_dir)
    desc = describe_without_loading(str(tiny_minilm_dir))
    assert cached_layer_vectors(desc, SENTS, pooling=("mean",), text_variant="senteval",
                                cache=cache) is None  # fmt: skip
    per, hit, _ = pooled_layer_vectors(enc, SENTS, pooling="mean", cache=cache)
    got = cached_layer_vectors(
        desc, SENTS, pooling=("mean",), text_variant="senteval", cache=cache, layers={"mean": [1]}
    )
    assert not hit and got is not None and (got["mean"] == per["mean"]).all()
    assert cached_layer_vectors(desc, SENTS, pooling=("cls", "mean"), text_variant="senteval",
                                cache=cache) is None  # fmt: skip
    off = VectorCache(tmp_path / "c", enabled=False)
    assert cached_layer_vectors(desc, SENTS, pooling=("mean",), text_variant="senteval",
                                cache=off) is None  # fmt: skip
