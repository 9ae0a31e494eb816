"""The dictionary index (sidecar) of official ``.bin`` files, and dictionaries made from bytes.

Oracles: the official binary's vectors of the 490 reference sentences, an in-memory load that
reads the ``.bin``'s entries, and ``Dictionary`` built from ``str`` words. The index is only
written for dictionaries of at least ``_sidecar.MIN_WORDS`` words; the tests lower that bound
to exercise it on the small reference models.
"""

from __future__ import annotations

import errno
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec.sent2vec import _sidecar, binfile
from sentvec.sent2vec.dictionary import EOS, PLACEHOLDER, Dictionary
from sentvec.sent2vec.model import Sent2Vec

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
MODELS = ["tiny-bigram", "tiny-unigram", "tiny-maxvocab"]
LINES = (REF / "sentences.txt").read_text(encoding="utf-8").split("\n")[:490]


def quiet(model: Sent2Vec) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return model.encode(LINES, num_threads=1)


@pytest.fixture(autouse=True)
def small_index(monkeypatch, tmp_path):
    monkeypatch.setattr(_sidecar, "MIN_WORDS", 0)
    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    out = {}
    for name in MODELS:
        official = np.load(REF / f"{name}.vectors.npy")
        vec = quiet(Sent2Vec.load(REF / f"{name}.bin", mmap=None))
        assert np.abs(vec - official).max() <= 1e-6
        out[name] = vec
    return out


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / "models" / f"{name}.bin"
    dst.parent.mkdir(exist_ok=True)
    shutil.copyfile(REF / f"{name}.bin", dst)
    return dst


def _index(path: Path) -> Path:
    return Path(str(path) + _sidecar.SUFFIX)


def _no_parse(monkeypatch):
    """Make reading the .bin's entries fail, so a load must come from the index."""

    def refuse(*args, **kwargs):
        raise AssertionError("the dictionary entries were read")

    monkeypatch.setattr(binfile, "_read_entries", refuse)


def _load_no_warning(path: Path, **kw) -> Sent2Vec:
    with warnings.catch_warnings():
        warnings.simplefilter("error", _sidecar.SidecarWarning)
        return Sent2Vec.load(path, **kw)


@pytest.mark.parametrize("name", MODELS)
def test_index_load_is_bit_identical(tmp_path, monkeypatch, reference, name):
    path = _copy(name, tmp_path)
    first = _load_no_warning(path)  # reads the entries, writes the index
    assert _index(path).is_file()
    with monkeypatch.context() as mp:
        _no_parse(mp)
        for mode in ("r", None):
            m = _load_no_warning(path, mmap=mode, inference_only=True)
            assert m.dictionary._words is None  # no str per word was made
            assert quiet(m).tobytes() == reference[name].tobytes()
            assert m.words == first.words
            d, f = m.dictionary, first.dictionary
            assert (d.eos_id, d.placeholder_id, d.ntokens) == (
                f.eos_id,
                f.placeholder_id,
                f.ntokens,
            )
            np.testing.assert_array_equal(d.counts, f.counts)
            np.testing.assert_array_equal(d.prune_pairs, f.prune_pairs)
            np.testing.assert_array_equal(d.word_table(), f.word_table())
    full = _load_no_warning(path, inference_only=False)
    full.save_bin(tmp_path / "again.bin")
    assert (tmp_path / "again.bin").read_bytes() == (REF / f"{name}.bin").read_bytes()


def test_small_dictionaries_get_no_index(tmp_path, monkeypatch):
    monkeypatch.setattr(_sidecar, "MIN_WORDS", 100_000)
    path = _copy("tiny-bigram", tmp_path)
    Sent2Vec.load(path)
    assert list(path.parent.iterdir()) == [path]
    assert not (tmp_path / "cache").exists()


def _reloads_and_rewrites(path: Path, reference: np.ndarray, match: str) -> None:
    with pytest.warns(_sidecar.SidecarWarning, match=match):
        m = Sent2Vec.load(path)
    assert quiet(m).tobytes() == reference.tobytes()
    again = _load_no_warning(path)  # the rewritten index is valid
    assert quiet(again).tobytes() == reference.tobytes()


def test_stale_index_is_never_used(tmp_path, reference):
    path = _copy("tiny-bigram", tmp_path)
    Sent2Vec.load(path)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    _reloads_and_rewrites(path, reference["tiny-bigram"], "stale .*modification time")
    # same size and modification time, another word in the dictionary: the CRC tells
    raw = bytearray(path.read_bytes())
    at = raw.index(b"\x00the\x00") + 1
    raw[at : at + 3] = b"thf"
    st = path.stat()
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.warns(_sidecar.SidecarWarning, match="stale .*dictionary bytes changed"):
        m = Sent2Vec.load(path)
    assert "thf" in m.words and "the" not in m.words
    assert quiet(m).tobytes() != reference["tiny-bigram"].tobytes()  # "the" is unknown now
    assert _load_no_warning(path).words == m.words
    # a model replaced by another one (rename over it) is read afresh
    shutil.copyfile(REF / "tiny-maxvocab.bin", tmp_path / "new.bin")
    os.replace(tmp_path / "new.bin", path)
    with pytest.warns(_sidecar.SidecarWarning, match="stale"):
        m = Sent2Vec.load(path)
    assert quiet(m).tobytes() == reference["tiny-maxvocab"].tobytes()


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage", "header"])
def test_damaged_index_falls_back_and_is_rewritten(tmp_path, reference, damage):
    path = _copy("tiny-unigram", tmp_path)
    Sent2Vec.load(path)
    idx = _index(path)
    raw = bytearray(idx.read_bytes())
    if damage == "flip":
        raw[-100] ^= 0x10  # inside the hash table: only the checksum can tell
    elif damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "empty":
        raw = bytearray()
    elif damage == "garbage":
        raw = bytearray(os.urandom(4096))
    else:
        at = raw.index(b'"nwords": ') + len(b'"nwords": ')
        raw[at] = ord("9") if raw[at] != ord("9") else ord("8")
    idx.write_bytes(bytes(raw))
    _reloads_and_rewrites(path, reference["tiny-unigram"], "damaged|stale")


def test_read_only_model_directory_uses_the_cache(tmp_path, monkeypatch, reference):
    path = _copy("tiny-maxvocab", tmp_path)
    real_open = _sidecar.atomic_open

    def read_only(p, *args, **kwargs):  # EACCES in the model's directory (also as root)
        if Path(p).is_relative_to(path.parent):
            raise PermissionError(errno.EACCES, "Permission denied", str(p))
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr(_sidecar, "atomic_open", read_only)
    Sent2Vec.load(path)
    assert list(path.parent.iterdir()) == [path]
    cached = list((tmp_path / "cache" / _sidecar.CACHE_SUBDIR).iterdir())
    assert len(cached) == 1 and cached[0].name.endswith("tiny-maxvocab.bin" + _sidecar.SUFFIX)
    with monkeypatch.context() as mp:
        _no_parse(mp)
        assert quiet(_load_no_warning(path)).tobytes() == reference["tiny-maxvocab"].tobytes()
    # neither place writable: loads all the same, without an index or a warning
    monkeypatch.setenv("SENTVEC_CACHE", str(path.parent / "cache"))
    assert quiet(_load_no_warning(path)).tobytes() == reference["tiny-maxvocab"].tobytes()
    assert list(path.parent.iterdir()) == [path]


def test_dictionary_from_word_bytes_equals_the_str_dictionary():
    words = [PLACEHOLDER, "a", EOS, "é", "caf\udcc3", EOS, "", "z" * 300]
    counts = np.arange(len(words), dtype=np.int64)
    enc = [w.encode("utf-8", "surrogateescape") for w in words]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in enc])]).astype(np.int64)
    wbytes = np.frombuffer(b"".join(enc), dtype=np.uint8)
    kw = {"ntokens": 99, "bucket": 10, "word_ngrams": 2}
    a = Dictionary(words, counts, **kw)
    b = Dictionary.from_word_bytes(wbytes, offsets, counts, **kw)
    assert (b.eos_id, b.placeholder_id, b.nwords, len(b)) == (5, 0, len(words), len(words))
    assert b._words is None  # found in the bytes
    assert (a.eos_id, a.placeholder_id) == (b.eos_id, b.placeholder_id)
    np.testing.assert_array_equal(a.word_table(), b.word_table())
    assert b.words == words and b.word2id == a.word2id
    no_eos = Dictionary.from_word_bytes(wbytes[:1], np.array([0, 1], np.int64), [3], **kw)
    assert (no_eos.eos_id, no_eos.placeholder_id, no_eos.words) == (-1, -1, ["<"])
    for bad in (np.array([0, 2], np.int64), np.array([1, 1], np.int64), np.array([0], np.int32)):
        with pytest.raises(ValueError, match="offsets"):
            Dictionary.from_word_bytes(wbytes[:1], bad, [3][: len(bad) - 1], **kw)
