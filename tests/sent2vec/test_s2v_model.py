"""Sent2Vec inference: equality with the official binary's vectors, an independent pure-numpy
oracle, save/load round trips, and the handling of empty, odd and invalid input."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec.exceptions import ModelFormatError
from sentvec.sent2vec.dictionary import Dictionary
from sentvec.sent2vec.model import Sent2Vec
from sentvec.sent2vec.preprocessing import Preprocessing

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
MODELS = {"tiny-bigram": 2, "tiny-unigram": 2, "tiny-maxvocab": 6}  # zero rows per README
TOL = 1e-5


def reference_lines() -> list[str]:
    """sentences.txt as the official wrapper saw it: one item per line, newline removed."""
    text = (REF / "sentences.txt").read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


LINES = reference_lines()


@pytest.fixture(scope="module")
def models() -> dict[str, Sent2Vec]:
    return {name: Sent2Vec.load(REF / f"{name}.bin") for name in MODELS}


def oracle(model: Sent2Vec, sentence: str) -> np.ndarray:
    """Independent pure-Python/numpy embedding (float64 mean of rows)."""
    lookup = {w: i for i, w in enumerate(model.words)}
    ids = [lookup[t] for t in sentence.split() if t in lookup and t != "</s>"]
    rows = list(ids)
    n, bucket, nwords = model.args["wordNgrams"], model.args["bucket"], model.nwords
    for i in range(len(ids)):
        h = ids[i]
        for j in range(i + 1, min(len(ids), i + n)):
            h = (h * 116049371 + ids[j]) % 2**64
            rows.append(nwords + h % bucket)
    if not rows:
        return np.zeros(model.dim)
    return np.asarray(model.input_matrix, dtype=np.float64)[rows].mean(axis=0)


def encode_quiet(model: Sent2Vec, sentences, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.encode(sentences, **kw)


def test_reference_lines_hold_the_edge_cases():
    assert len(LINES) == 490
    assert "" in LINES and any("\t" in s for s in LINES)
    assert any(not s.isascii() for s in LINES) and max(len(s.split()) for s in LINES) == 2100


@pytest.mark.parametrize("name", list(MODELS))
def test_equals_official_vectors(models, name):
    ref = np.load(REF / f"{name}.vectors.npy")
    with pytest.warns(UserWarning, match=rf"^{MODELS[name]} of 490 sentences have no"):
        emb = models[name].encode(LINES)
    assert emb.shape == ref.shape and emb.dtype == np.float32
    assert np.abs(emb - ref).max() <= TOL
    assert int((~emb.any(axis=1)).sum()) == MODELS[name]


@pytest.mark.parametrize("name", list(MODELS))
def test_equality_survives_save_bin_and_save_dir(models, name, tmp_path):
    ref = np.load(REF / f"{name}.vectors.npy")
    models[name].save_bin(tmp_path / "m.bin")
    assert (tmp_path / "m.bin").read_bytes() == (REF / f"{name}.bin").read_bytes()
    models[name].save(tmp_path / "dir")
    for path in (tmp_path / "m.bin", tmp_path / "dir"):
        again = Sent2Vec.load(path)
        assert np.abs(encode_quiet(again, LINES) - ref).max() <= TOL
    loaded = Sent2Vec.load(tmp_path / "dir")
    assert isinstance(loaded.input_matrix, np.memmap)  # memory-mapped, no copy
    assert loaded.words == models[name].words and loaded.args == models[name].args
    for f in (tmp_path / "dir").glob("*.npy"):
        np.load(f, allow_pickle=False)  # no pickle inside


def test_matches_independent_oracle(models):
    m = models["tiny-bigram"]
    sents = LINES[:60] + [
        "the the the city city",
        "xyzzy the xyzzy city of xyzzy london",
        "the </s> city",
        "\t the \x0b city \r",
    ]
    emb = encode_quiet(m, sents)
    for s, e in zip(sents, emb, strict=True):
        np.testing.assert_allclose(e, oracle(m, s), atol=1e-6)


def test_shapes_and_normalize(models):
    m = models["tiny-bigram"]
    assert encode_quiet(m, []).shape == (0, 16)
    single = m.encode("the city of london")
    assert single.shape == (16,)
    np.testing.assert_array_equal(single, m.encode(["the city of london"])[0])
    normed = encode_quiet(m, ["the city", "", "a man"], normalize=True)
    np.testing.assert_allclose(np.linalg.norm(normed, axis=1), [1, 0, 1], atol=1e-6)


def test_empty_whitespace_and_unknown_are_zero_and_counted(models):
    m = models["tiny-bigram"]
    emb, stats = m.encode_with_stats(["", "  \t ", "qqqxx zzzyy", "the city"])
    assert not emb[:3].any() and emb[3].any()
    assert (stats.n_sentences, stats.n_zero, stats.n_empty) == (4, 3, 2)
    with pytest.warns(UserWarning, match=r"3 of 4 sentences .* \(2 empty or whitespace-only\)"):
        m.encode(["", "  \t ", "qqqxx zzzyy", "the city"])


def test_newline_and_eos_never_cut_a_sentence(models):
    m = models["tiny-bigram"]
    whole = m.encode("the city of london is large")
    np.testing.assert_array_equal(m.encode("the city\nof london is large"), whole)
    with pytest.warns(UserWarning, match="ignored 1 literal '</s>'"):
        with_eos = m.encode("the city </s> of london is large")
    np.testing.assert_array_equal(with_eos, whole)


def test_only_official_separators_split(models):
    m = models["tiny-bigram"]
    # a no-break space is not a separator for the official reader: one unknown token
    assert not encode_quiet(m, "the\xa0city").any()
    np.testing.assert_array_equal(m.encode("the\x0ccity"), m.encode("the city"))


def test_threads_and_batches_do_not_change_results(models):
    m = models["tiny-bigram"]
    sents = (REF / "train-sample.txt").read_text(encoding="utf-8").splitlines()[:6000]
    a = encode_quiet(m, sents, num_threads=1)
    b = encode_quiet(m, sents, num_threads=2, batch_size=2500)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [None, b"bytes", ["ok", 3], [["nested"]], 5])
def test_non_str_raises_type_error(models, bad):
    with pytest.raises(TypeError):
        models["tiny-bigram"].encode(bad)


def test_preprocessing_applies_moses_and_lowercase(models):
    ref = models["tiny-bigram"]
    m = Sent2Vec(
        ref.dictionary,
        ref.input_matrix,
        ref.output_matrix,
        args=ref.args,
        preprocessing={"lowercase": True, "tokenizer": "moses"},
    )
    np.testing.assert_array_equal(
        m.encode("The City, of London's."), ref.encode("the city , of london 's .")
    )
    assert Preprocessing(True, "moses").prepare("It's   FINE.") == "it 's fine ."
    with pytest.raises(ValueError, match="tokenizer='spacy' is invalid"):
        Preprocessing(tokenizer="spacy")


def test_model_from_a_new_dictionary_round_trips(tmp_path):
    d = Dictionary.from_corpus(["a b c a", "b c d", "a d"], min_count=1, bucket=7)
    rng = np.random.default_rng(0)
    inp = rng.standard_normal((d.nwords + 7 + 1, 4)).astype(np.float32)
    out = rng.standard_normal((d.nwords, 4)).astype(np.float32)
    m = Sent2Vec(
        d,
        inp,
        out,
        args={"lr": 0.2, "epoch": 1, "dropoutK": 2},
        preprocessing=Preprocessing(lowercase=True),
    )
    v = m.encode("A b D")
    m.save(tmp_path / "m")
    m.save(tmp_path / "m")  # replacing an existing model directory works
    again = Sent2Vec.load(tmp_path / "m")
    np.testing.assert_array_equal(again.encode("A b D"), v)
    assert again.preprocessing == Preprocessing(lowercase=True) and again.args["lr"] == 0.2
    with pytest.warns(UserWarning, match="cannot record preprocessing"):
        m.save_bin(tmp_path / "m.bin")
    np.testing.assert_array_equal(Sent2Vec.load(tmp_path / "m.bin").encode("a b d"), v)
    json.dumps(m.config_dict())
    np.testing.assert_array_equal(m.get_word_vector("a"), inp[d.get_id("a")])


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        Sent2Vec.load(tmp_path / "missing.bin")
    with pytest.raises(ModelFormatError, match="text file"):
        Sent2Vec.load(REF / "sentences.txt")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(ModelFormatError, match="config.json"):
        Sent2Vec.load(tmp_path / "empty_dir")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("keep me")
    m = Sent2Vec.load(REF / "tiny-maxvocab.bin")
    with pytest.raises(FileExistsError):
        m.save(tmp_path / "full")
    assert (tmp_path / "full" / "x.txt").read_text() == "keep me"


def test_directory_config_without_its_fields_is_a_model_format_error(tmp_path):
    m = Sent2Vec.load(REF / "tiny-maxvocab.bin")
    m.save(tmp_path / "m")
    cfg_path = tmp_path / "m" / "config.json"
    good = json.loads(cfg_path.read_text())
    for edit, match in [
        (lambda c: c.pop("dictionary"), "missing field 'dictionary'"),
        (lambda c: c.__setitem__("dictionary", [1]), "inconsistent model files"),
        (lambda c: c["dictionary"].pop("bucket"), "missing field 'bucket'"),
    ]:
        cfg = json.loads(json.dumps(good))
        edit(cfg)
        cfg_path.write_text(json.dumps(cfg))
        with pytest.raises(ModelFormatError, match=match):
            Sent2Vec.load(tmp_path / "m")


@pytest.mark.parametrize(
    "field, value",
    [
        ("word_ngrams", 54026073089044602580),
        ("word_ngrams", 2**31),
        ("bucket", 2**31),
        ("ntokens", 2**63),
        ("pruneidx_size", -2),
    ],
)
def test_directory_header_value_out_of_the_bin_range_is_refused_at_load(tmp_path, field, value):
    # found by the long fuzzing run: word_ngrams past int64 loaded, and the first
    # encode then died in the kernel call with "OverflowError: int too big to convert"
    m = Sent2Vec.load(REF / "tiny-maxvocab.bin")
    m.save(tmp_path / "m")
    cfg_path = tmp_path / "m" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["dictionary"][field] = value
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(ModelFormatError, match=f"{field}={value} is invalid"):
        Sent2Vec.load(tmp_path / "m")


@pytest.mark.parametrize("name", list(MODELS))
def test_prepare_then_embed_prepared_equals_the_official_vectors(models, name):
    """The two halves ``sentvec serve`` runs apart (bytes on its event loop, the kernel in a
    thread) give the official binary's vectors and encode's token counts."""
    m = models[name]
    prepared = m.prepare(LINES)
    assert len(prepared) == len(LINES) and prepared.data.dtype == np.uint8
    assert prepared.offsets[-1] == sum(len(s.encode("utf-8", "surrogateescape")) for s in LINES)
    emb, tokens = m.embed_prepared(prepared)
    ref = np.load(REF / f"{name}.vectors.npy")
    assert emb.shape == ref.shape and emb.dtype == np.float32
    assert np.abs(emb - ref).max() <= TOL
    _, stats = m.encode_with_stats(LINES)
    np.testing.assert_array_equal(tokens, stats.tokens)
    assert tokens.dtype == np.int64 and tokens[LINES.index("")] == 0
    empty, none = m.embed_prepared(m.prepare([]))
    assert empty.shape == (0, m.dim) and none.shape == (0,)


def test_prepare_applies_the_preprocessing(models):
    ref = models["tiny-bigram"]
    m = Sent2Vec.load(REF / "tiny-bigram.bin")
    m.preprocessing = Preprocessing(lowercase=True, tokenizer="moses")
    prepared = m.prepare(["The City, of London's."])
    assert prepared.data.tobytes() == b"the city , of london 's ."
    np.testing.assert_array_equal(
        m.embed_prepared(prepared)[0][0], ref.encode("the city , of london 's .")
    )
    with pytest.raises(TypeError):
        m.prepare([b"bytes"])


@pytest.mark.parametrize(
    "data, offsets",
    [
        (np.zeros(1, np.uint8), np.array([0, 10**6])),  # past the buffer: read out of bounds
        (np.zeros(8, np.uint8), np.array([0, 5, 3])),  # decreasing
        (np.zeros(8, np.uint8), np.array([-1, 3])),
        (np.zeros(8, np.uint8), np.array([0, 3], dtype=np.int32)),
        (np.zeros(8, np.int8), np.array([0, 3])),
        (np.zeros(0, np.uint8), np.array([0])),
        (np.zeros((2, 4), np.uint8), np.array([0, 3])),
    ],
)
def test_prepared_sentences_refuse_offsets_the_kernel_cannot_read(data, offsets):
    from sentvec.sent2vec import PreparedSentences

    with pytest.raises(ValueError, match="PreparedSentences"):
        PreparedSentences(data, offsets)
