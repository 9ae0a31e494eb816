"""Tests for sentvec.cache: key components, hits/misses, corrupt entries, location."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec.cache import (
    CACHE_ENV,
    CacheKey,
    VectorCache,
    content_fingerprint,
    default_cache_dir,
    encoder_cache_key,
    fingerprint_path,
    sentences_sha256,
)
from sentvec.exceptions import CacheWarning

SENTS = ["a man is playing a guitar .", "a woman slices an onion .", "it 's raining ."]


def _key(**changes):
    digest, n = sentences_sha256(SENTS)
    base = CacheKey(
        model="minilm",
        model_fingerprint="f" * 64,
        text_variant="senteval",
        pooling="mean",
        max_length=None,
        sentences_sha256=digest,
        n_sentences=n,
        kind="layers",
        config_sha256="c" * 64,
    )
    return dataclasses.replace(base, **changes)


def _array(n=3, layers=4, d=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, layers, d)).astype(np.float32)


def test_sentences_sha256_matches_length_prefixed_oracle():
    h = hashlib.sha256()
    for s in SENTS:
        b = s.encode("utf-8")
        h.update(len(b).to_bytes(8, "little") + b)
    assert sentences_sha256(SENTS) == (h.hexdigest(), 3)
    # boundaries and order matter
    assert sentences_sha256(["ab", "c"])[0] != sentences_sha256(["a", "bc"])[0]
    assert sentences_sha256(["x", "y"])[0] != sentences_sha256(["y", "x"])[0]


def test_roundtrip_and_hit(tmp_path):
    cache = VectorCache(tmp_path)
    key = _key()
    arr = _array()
    calls = []

    def compute():
        calls.append(1)
        return arr

    out1, hit1 = cache.get_or_compute(key, compute)
    out2, hit2 = cache.get_or_compute(key, compute)
    assert (hit1, hit2) == (False, True)
    assert len(calls) == 1
    np.testing.assert_array_equal(out2, arr)
    assert out2.dtype == np.float32
    npy, js = cache.paths(key)
    assert npy.is_file() and js.is_file()
    stored = json.loads(js.read_text())
    sums = stored.pop("content_sha256")
    assert stored == key.to_dict()
    layer_major = arr.transpose(1, 0, 2)  # the file's layout: one digest per hidden state
    assert sums == [
        hashlib.sha256(np.ascontiguousarray(s).tobytes()).hexdigest() for s in layer_major
    ]
    assert npy.parent == tmp_path / "vectors"


@pytest.mark.parametrize(
    "change",
    [
        {"model": "mpnet"},
        {"model_fingerprint": "0" * 64},
        {"text_variant": "raw"},
        {"pooling": "cls"},
        {"max_length": 128},
        {"sentences_sha256": sentences_sha256(SENTS[::-1])[0]},
        {"n_sentences": 4},
        {"kind": "embeddings"},
        {"config_sha256": "d" * 64},
        {"code_sha256": "e" * 64},
        {"sentvec_version": "0.0.0-other"},
        {"format_version": 999},
    ],
)
def test_any_changed_key_component_misses(tmp_path, change):
    cache = VectorCache(tmp_path)
    cache.save(_key(), _array())
    other = _key(**change)
    assert other.digest() != _key().digest()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a plain miss must not warn
        assert cache.load(other) is None
    np.testing.assert_array_equal(cache.load(_key()), _array())


def test_corrupt_array_is_recomputed_with_warning(tmp_path):
    cache = VectorCache(tmp_path)
    key = _key()
    cache.save(key, _array(seed=1))
    npy, _ = cache.paths(key)
    npy.write_bytes(npy.read_bytes()[:40])  # truncated file
    with pytest.warns(CacheWarning, match="unusable cache entry"):
        out, hit = cache.get_or_compute(key, lambda: _array(seed=2))
    assert not hit
    np.testing.assert_array_equal(out, _array(seed=2))
    # the entry was repaired
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(cache.load(key), _array(seed=2))


@pytest.mark.parametrize(
    "damage", ["json", "key_mismatch", "rows", "dtype", "nonfinite", "missing_npy"]
)
def test_other_damage_warns_and_misses(tmp_path, damage):
    cache = VectorCache(tmp_path)
    key = _key()
    cache.save(key, _array())
    npy, js = cache.paths(key)
    if damage == "json":
        js.write_text("{not json")
    elif damage == "key_mismatch":
        js.write_text(json.dumps(_key(pooling="max").to_dict()))
    elif damage == "rows":
        np.save(npy, _array(n=2))
    elif damage == "dtype":
        np.save(npy, _array().astype(np.float64))
    elif damage == "nonfinite":
        bad = _array()
        bad[0, 0, 0] = np.nan
        np.save(npy, bad)
    elif damage == "missing_npy":
        npy.unlink()
    with pytest.warns(CacheWarning):
        assert cache.load(key) is None


def _flip_one_value_in_place(path, index):
    """Change one float32 of a saved .npy without changing its size, then restore its times."""
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    header = len(data) - np.load(path, mmap_mode="r").nbytes
    at = header + 4 * index
    data[at : at + 4] = np.float32(np.frombuffer(data[at : at + 4], np.float32)[0] + 0.5).tobytes()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size


@pytest.mark.parametrize("kind", ["layers", "embeddings"])
def test_an_entry_altered_in_place_is_recomputed_not_served(tmp_path, kind):
    cache = VectorCache(tmp_path)
    key = _key(kind=kind)
    arr = _array(n=3, layers=4, d=5, seed=1)
    if kind == "embeddings":
        arr = arr[:, 0, :].copy()
    cache.save(key, arr)
    npy, _ = cache.paths(key)
    _flip_one_value_in_place(npy, index=7)  # same size, same mtime, still finite
    with pytest.warns(CacheWarning, match="does not match its SHA-256") as record:
        out, hit = cache.get_or_compute(key, lambda: arr)
    assert not hit and len(record) == 1
    np.testing.assert_array_equal(out, arr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recomputed entry is served again, silently
        np.testing.assert_array_equal(cache.load(key), arr)


def test_a_damaged_hidden_state_is_caught_when_read(tmp_path):
    cache = VectorCache(tmp_path)
    key, arr = _key(), _array(n=3, layers=4, d=5)
    cache.save(key, arr)
    _flip_one_value_in_place(cache.paths(key)[0], index=2 * 3 * 5 + 1)  # hidden state 2
    assert cache.load(key, layers=[1, 3]) is not None  # its bytes are not read
    with pytest.warns(CacheWarning, match="hidden state 2 does not match its SHA-256"):
        assert cache.load(key, layers=[2]) is None


@pytest.mark.parametrize("field", ["missing", "short", "not_a_list"])
def test_an_entry_without_valid_checksums_is_recomputed(tmp_path, field):
    cache = VectorCache(tmp_path)
    key = _key()
    cache.save(key, _array())
    js = cache.paths(key)[1]
    stored = json.loads(js.read_text())
    if field == "missing":
        del stored["content_sha256"]
    elif field == "short":
        stored["content_sha256"] = stored["content_sha256"][:-1]
    else:
        stored["content_sha256"] = "0" * 64
    js.write_text(json.dumps(stored))
    with pytest.warns(CacheWarning, match="no valid 'content_sha256'"):
        assert cache.load(key) is None


def test_array_without_key_file_is_a_silent_miss(tmp_path):
    cache = VectorCache(tmp_path)
    key = _key()
    cache.save(key, _array())
    cache.paths(key)[1].unlink()  # as if interrupted before the commit marker
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(key) is None


def test_disabled_cache_never_reads_or_writes(tmp_path):
    VectorCache(tmp_path).save(_key(), _array())
    off = VectorCache(tmp_path / "other", enabled=False)
    off.save(_key(), _array())
    assert not (tmp_path / "other").exists()
    calls = []
    off_same = VectorCache(tmp_path, enabled=False)
    _, hit = off_same.get_or_compute(_key(), lambda: calls.append(1) or _array())
    assert not hit and calls == [1]


def test_save_rejects_row_mismatch(tmp_path):
    with pytest.raises(ValueError, match="n_sentences=3"):
        VectorCache(tmp_path).save(_key(), _array(n=5))


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "envcache"))
    assert default_cache_dir() == tmp_path / "envcache"
    VectorCache().save(_key(), _array())
    assert len(list((tmp_path / "envcache" / "vectors").glob("*.npy"))) == 1
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_dir() == default_cache_dir().home() / ".cache" / "sentvec"


def test_fingerprint_tracks_size_and_mtime(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\0" * 100)
    f1 = fingerprint_path(model)
    assert fingerprint_path(model) == f1
    st = (model / "model.safetensors").stat()
    os.utime(model / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    f2 = fingerprint_path(model)
    assert f2 != f1
    (model / "model.safetensors").write_bytes(b"\0" * 101)
    os.utime(model / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert fingerprint_path(model) not in (f1, f2)
    with pytest.raises(FileNotFoundError, match="nope"):
        fingerprint_path(tmp_path / "nope")


class _FakeEncoder:
    preferred_text_variant = "senteval"

    def __init__(self, path, pooling="mean"):
        self.model_path = str(path)
        self.pooling = pooling

    def config_dict(self):
        return {
            "model": "fake",
            "model_path": self.model_path,
            "pooling": self.pooling,
            "max_length": 64,
        }

    def encode(self, sentences, **kwargs):  # pragma: no cover - protocol only
        raise NotImplementedError


def test_encoder_cache_key_uses_files_and_config(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"123")
    enc = _FakeEncoder(tmp_path)
    key = encoder_cache_key(enc, SENTS)
    assert key.model == "fake"
    assert key.model_fingerprint == content_fingerprint(tmp_path)
    assert (key.pooling, key.max_length, key.text_variant) == ("mean", 64, "senteval")
    assert key.n_sentences == 3
    assert encoder_cache_key(_FakeEncoder(tmp_path, "cls"), SENTS).digest() != key.digest()
    assert encoder_cache_key(enc, SENTS, pooling="cls+mean").pooling == "cls+mean"
    assert encoder_cache_key(enc, SENTS[:2]).digest() != key.digest()


def test_key_changes_with_the_encoding_code(tmp_path, monkeypatch):
    # an edit of the code that computes the vectors (same sentvec version) must miss
    import importlib.util
    import sys

    from sentvec.cache import code_fingerprint

    (tmp_path / "w.bin").write_bytes(b"123")
    src = tmp_path / "my_encoder_mod.py"
    src.write_text("class Enc:\n    scale = 1.0\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("my_encoder_mod", src)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "my_encoder_mod", mod)
    spec.loader.exec_module(mod)

    class Enc(_FakeEncoder):
        pass

    Enc.__module__ = "my_encoder_mod"
    enc = Enc(tmp_path)
    before = encoder_cache_key(enc, SENTS)
    assert before.code_sha256 == code_fingerprint(enc)
    assert encoder_cache_key(enc, SENTS) == before  # deterministic
    src.write_text("class Enc:\n    scale = 2.0\n", encoding="utf-8")  # the code changed
    after = encoder_cache_key(enc, SENTS)
    assert after.code_sha256 != before.code_sha256 and after.digest() != before.digest()
    cache = VectorCache(tmp_path / "cache")
    cache.save(before, _array())
    assert cache.load(after) is None


def test_layers_key_ignores_encoders_own_layer_choice(tmp_path):
    class Enc(_FakeEncoder):
        def __init__(self, path, layers):
            super().__init__(path)
            self.layers = layers

        def config_dict(self):
            return {**super().config_dict(), "layers": list(self.layers), "max_length": 64}

    a, b = Enc(tmp_path, (1, -1)), Enc(tmp_path, (-1,))
    assert (
        encoder_cache_key(a, SENTS, pooling="cls").digest()
        == encoder_cache_key(b, SENTS, pooling="cls").digest()
    )
    assert (
        encoder_cache_key(a, SENTS, kind="embeddings").digest()
        != encoder_cache_key(b, SENTS, kind="embeddings").digest()
    )


def test_background_save_is_complete_after_wait(tmp_path):
    cache = VectorCache(tmp_path)
    key, arr = _key(), _array()
    cache.save(key, arr, background=True)
    cache.wait()
    np.testing.assert_array_equal(VectorCache(tmp_path).load(key), arr)
    cache.wait()  # nothing pending: a no-op


def test_background_save_error_surfaces_at_wait_and_leaves_no_entry(tmp_path):
    blocker = tmp_path / "root"
    blocker.write_text("a file where the cache directory should be")
    cache = VectorCache(blocker)
    key = _key()
    cache.save(key, _array(), background=True)  # returns at once
    with pytest.raises(OSError):
        cache.wait()
    assert VectorCache(blocker).load(key) is None
    with pytest.raises(ValueError, match="n_sentences"):
        cache.save(key, _array(n=2), background=True)  # checked before any write


# ------------------------------------------------- content fingerprints, layer-major entries
def test_content_fingerprint_reads_bytes_and_remembers_unchanged_files(tmp_path, monkeypatch):
    import hashlib as _hashlib

    import sentvec.cache_keys as cache_keys_mod
    from sentvec.cache import content_fingerprint, file_sha256

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    weights = model / "model.safetensors"
    weights.write_bytes(b"\0" * 100)
    memo = tmp_path / "memo"
    assert file_sha256(weights) == _hashlib.sha256(b"\0" * 100).hexdigest()  # the oracle
    monkeypatch.setattr(cache_keys_mod, "_RACY_NS", 0)  # the files were just written
    reads = []
    real = _hashlib.file_digest
    monkeypatch.setattr(
        cache_keys_mod.hashlib, "file_digest", lambda fh, algo: reads.append(1) or real(fh, algo)
    )
    f1 = content_fingerprint(model, memo)
    assert len(reads) == 2 and len(list(memo.glob("*.json"))) == 2
    assert content_fingerprint(model, memo) == f1 and len(reads) == 2  # remembered: no read
    # the same size, the same modification time, other bytes: never the old digest
    st = weights.stat()
    weights.write_bytes(b"\1" + b"\0" * 99)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_mtime_ns == st.st_mtime_ns
    f2 = content_fingerprint(model, memo)
    assert f2 != f1 and len(reads) == 3
    assert content_fingerprint(model, None) == f2  # without a memo: the same digest
    # a copy of the same files elsewhere has the same fingerprint
    import shutil

    shutil.copytree(model, tmp_path / "copy")
    assert content_fingerprint(tmp_path / "copy", memo) == f2
    with pytest.raises(FileNotFoundError, match="nope"):
        content_fingerprint(tmp_path / "nope")


def test_racy_files_are_hashed_but_not_remembered(tmp_path):
    from sentvec.cache import file_sha256

    f = tmp_path / "w.bin"
    f.write_bytes(b"abc")  # its status changed just now
    file_sha256(f, tmp_path / "memo")
    assert not (tmp_path / "memo").exists()


def test_layers_entries_are_stored_layer_major_and_memory_mapped(tmp_path):
    cache = VectorCache(tmp_path)
    key, arr = _key(), _array(n=3, layers=4, d=5)
    cache.save(key, arr)
    on_disk = np.load(cache.paths(key)[0])
    np.testing.assert_array_equal(on_disk, arr.transpose(1, 0, 2))  # (L + 1, n, d)
    got = cache.load(key)
    assert isinstance(got.base, np.memmap) or isinstance(got, np.memmap)
    assert got.shape == arr.shape and not got.flags.writeable
    np.testing.assert_array_equal(got, arr)
    np.testing.assert_array_equal(cache.load(key, layers=[1, -1]), arr)


def test_only_the_layers_read_are_checked(tmp_path):
    cache = VectorCache(tmp_path)
    key, arr = _key(), _array(n=3, layers=4, d=5)
    arr[:, 0, 2] = np.nan  # hidden state 0 damaged
    cache.save(key, arr)
    assert cache.load(key, layers=[1, 3]) is not None  # not read: not checked
    with pytest.warns(CacheWarning, match="no hidden state 4"):
        assert cache.load(key, layers=[4]) is None  # the request's fault: the entry stays
    for layers in (None, [0, 1], [-4]):
        with pytest.warns(CacheWarning, match="hidden state 0 holds non-finite"):
            assert VectorCache(tmp_path).load(key, layers=layers) is None
    with pytest.warns(CacheWarning, match="hidden state 0 holds non-finite"):
        assert cache.load(key, layers=[0]) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # found unusable once: a silent miss for this object
        assert cache.load(key, layers=[1, 3]) is None
        cache.save(key, _array(n=3, layers=4, d=5))  # until it is rewritten
        assert cache.load(key, layers=[0]) is not None


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_format_entry_is_never_read(tmp_path, version):
    # format 1 (row-major) and format 2 (no checksum) have another key (format_version):
    # a silent miss, recomputed, never a misread or an unverified hit
    cache = VectorCache(tmp_path)
    old = _key(format_version=version)
    npy, js = cache.paths(old)
    cache.directory.mkdir(parents=True)
    np.save(npy, _array())
    js.write_text(json.dumps(old.to_dict()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(_key()) is None


def test_key_names_the_library_versions(monkeypatch):
    from importlib import metadata

    key = _key()
    assert f"torch={metadata.version('torch')}" in key.libraries
    assert f"numpy={np.__version__}" in key.libraries
    assert dataclasses.replace(key, libraries="numpy=0").digest() != key.digest()


def _entry_bytes(cache, key):
    return cache.paths(key)[0].stat().st_size


def test_prune_removes_least_recently_used_entries_first(tmp_path):
    keys = [_key(model=f"m{i}") for i in range(4)]
    probe = VectorCache(tmp_path / "probe")
    probe.save(keys[0], _array())
    size = _entry_bytes(probe, keys[0])
    for i, key in enumerate(keys[:3]):  # three earlier runs
        earlier = VectorCache(tmp_path / "c", max_bytes=3 * size)
        earlier.save(key, _array(seed=i))
        os.utime(earlier.paths(key)[1], (1000 + i, 1000 + i))  # m0 oldest, m2 newest
    cache = VectorCache(tmp_path / "c", max_bytes=3 * size)  # room for three entries
    assert cache.load(keys[0]) is not None  # a hit makes m0 the most recent
    cache.save(keys[3], _array(seed=3))  # one entry must go: the least recently used, m1
    present = [cache.paths(k)[1].exists() for k in keys]
    assert present == [True, False, True, True]
    assert not cache.paths(keys[1])[0].exists()
    assert sum(_entry_bytes(cache, k) for k in keys if cache.paths(k)[0].exists()) <= 3 * size


def test_prune_keeps_the_entries_of_this_run_and_clears_old_orphans(tmp_path):
    VectorCache(tmp_path).save(_key(model="old"), _array())  # an earlier run's entry
    cache = VectorCache(tmp_path, max_bytes=0)
    cache.save(_key(model="a"), _array())
    cache.save(_key(model="b"), _array())
    assert cache.load(_key(model="old")) is None  # over the limit: the earlier run's goes
    assert cache.load(_key(model="a")) is not None  # both of this run's entries stay
    assert cache.load(_key(model="b")) is not None
    orphan = cache.directory / ("0" * 64 + ".npy")  # an array whose key was never written
    orphan.write_bytes(b"x")
    fresh = cache.directory / ("1" * 64 + ".npy")
    fresh.write_bytes(b"x")
    os.utime(orphan, (1000, 1000))
    cache.prune()
    assert not orphan.exists() and fresh.exists()  # a write in progress is left alone


def test_cache_size_limit_from_the_environment(tmp_path, monkeypatch):
    from sentvec.cache import CACHE_MAX_ENV, DEFAULT_CACHE_MAX_BYTES

    monkeypatch.delenv(CACHE_MAX_ENV, raising=False)
    assert VectorCache(tmp_path).max_bytes == DEFAULT_CACHE_MAX_BYTES
    monkeypatch.setenv(CACHE_MAX_ENV, "0.5")
    assert VectorCache(tmp_path).max_bytes == 2**29
    for bad in ("lots", "-1", "nan", "inf"):
        monkeypatch.setenv(CACHE_MAX_ENV, bad)
        with pytest.raises(ValueError, match=CACHE_MAX_ENV):
            VectorCache(tmp_path)


# ------------------------------------------------------------ subsets of a cached entry's rows
MORE = ["the cat sat on the mat .", *SENTS, "two dogs run ."]


def _save_with_sentences(cache, sentences, seed=0, **changes):
    digest, n = sentences_sha256(sentences)
    key = _key(sentences_sha256=digest, n_sentences=n, **changes)
    arr = _array(n=n, seed=seed)
    cache.save(key, arr, sentences=sentences)
    return key, arr


def _subset_key(sentences, **changes):
    digest, n = sentences_sha256(sentences)
    return _key(sentences_sha256=digest, n_sentences=n, **changes)


def test_a_subset_in_any_order_is_served_from_a_larger_entry(tmp_path):
    cache = VectorCache(tmp_path)
    _, arr = _save_with_sentences(cache, MORE)
    subset = [MORE[3], MORE[0], MORE[2]]
    got = cache.load_rows(_subset_key(subset), subset)
    assert got is not None and got.shape == (3, *arr.shape[1:])
    np.testing.assert_array_equal(got, arr[[3, 0, 2]])
    # the exact entry itself is served by load_rows too, and load alone never serves subsets
    np.testing.assert_array_equal(cache.load_rows(_subset_key(MORE), MORE), arr)
    assert cache.load(_subset_key(subset)) is None


def test_a_subset_is_a_miss_when_a_sentence_or_the_computation_differs(tmp_path):
    cache = VectorCache(tmp_path)
    _save_with_sentences(cache, MORE)
    unknown = [MORE[0], "a sentence never encoded ."]
    assert cache.load_rows(_subset_key(unknown), unknown) is None
    subset = MORE[:2]
    for change in ({"pooling": "cls"}, {"model_fingerprint": "e" * 64}, {"kind": "embeddings"}):
        assert cache.load_rows(_subset_key(subset, **change), subset) is None, change
    # an entry saved without its sentences serves only itself
    cache2 = VectorCache(tmp_path / "other")
    cache2.save(_subset_key(MORE), _array(n=len(MORE)))
    assert cache2.load_rows(_subset_key(subset), subset) is None


def test_a_damaged_rows_file_or_array_serves_no_subset(tmp_path):
    cache = VectorCache(tmp_path)
    key, _ = _save_with_sentences(cache, MORE)
    arr_path, _ = cache.paths(key)
    rows = arr_path.with_suffix(".rows")
    rows.write_bytes(rows.read_bytes()[:-1])  # truncated ids: not a candidate
    subset = MORE[1:3]
    assert cache.load_rows(_subset_key(subset), subset) is None
    key, _ = _save_with_sentences(cache, MORE, seed=1)
    arr_path.write_bytes(arr_path.read_bytes()[:-8])  # a truncated array: a warning, a miss
    with pytest.warns(CacheWarning):
        assert cache.load_rows(_subset_key(subset), subset) is None


def test_pruning_an_entry_removes_its_sentence_ids(tmp_path):
    cache = VectorCache(tmp_path, max_bytes=0)
    key, _ = _save_with_sentences(cache, MORE)
    arr_path, _ = cache.paths(key)
    assert arr_path.with_suffix(".rows").is_file()
    VectorCache(tmp_path, max_bytes=0).prune()
    assert not list((tmp_path / "vectors").iterdir())


def test_pooled_layer_vectors_of_a_subset_run_no_forward_pass(tmp_path):
    from sentvec.cache import pooled_layer_vectors

    class CountingEncoder:
        def __init__(self):
            self.calls = []

        pooling = "mean"
        layer_indices = (1, 2, 3)
        num_layers = 3

        def config_dict(self):
            return {"model": "counting", "pooling": "mean"}

        def encode(self, sentences, **kwargs):
            raise AssertionError("the per-layer path is encode_layers")

        def encode_layers(self, sentences, pooling=("mean",), **kwargs):
            self.calls.append(list(sentences))
            out = {}
            for p in pooling:
                rows = [[[float(len(s)), float(i)] for i in range(3)] for s in sentences]
                out[p] = np.asarray(rows, dtype=np.float32)
            return out

    enc = CountingEncoder()
    cache = VectorCache(tmp_path)
    full, hit, _ = pooled_layer_vectors(enc, MORE, cache=cache)
    assert not hit and len(enc.calls) == 1
    subset = [MORE[4], MORE[1]]
    part, hit, _ = pooled_layer_vectors(enc, subset, cache=cache)
    assert hit and len(enc.calls) == 1
    np.testing.assert_array_equal(part["mean"], full["mean"][[4, 1]])


def test_sentence_ids_changed_in_place_serve_no_subset(tmp_path):
    """Two ids swapped in place (size kept): the rows would be served for the wrong sentences,
    so the ids' SHA-256 in the key file refuses them, with a warning."""
    cache = VectorCache(tmp_path)
    key, arr = _save_with_sentences(cache, MORE)
    rows = cache.paths(key)[0].with_suffix(".rows")
    ids = bytearray(rows.read_bytes())
    ids[16:32], ids[48:64] = ids[48:64], ids[16:32]
    st = rows.stat()
    rows.write_bytes(bytes(ids))
    os.utime(rows, ns=(st.st_atime_ns, st.st_mtime_ns))
    subset = [MORE[1], MORE[3]]
    with pytest.warns(CacheWarning, match="sentence ids"):
        assert cache.load_rows(_subset_key(subset), subset) is None
    np.testing.assert_array_equal(cache.load(key), arr)  # the entry itself is still served


def test_a_described_pipeline_has_the_key_of_the_pipeline(tmp_path):
    # a loaded Pipeline's files are fingerprinted; the DescribedEncoder that stands in for it
    # on a vector-cache hit finds the same files from the description alone
    from sentvec import Pipeline, Sent2Vec, Whitening, load_encoder
    from sentvec.encoders.base import DescribedEncoder

    model = Sent2Vec.load(Path(__file__).parent / "data" / "sent2vec-reference" / "tiny-bigram.bin")
    X = model.encode([f"{w} {v}" for w in "abcdefgh" for v in "abcdefgh"])
    saved = Pipeline(model, Whitening(n_components=4).fit(X)).save(tmp_path / "pipe")
    pipeline = load_encoder(saved)
    key = encoder_cache_key(pipeline, SENTS, kind="embeddings")
    assert key.model_fingerprint == content_fingerprint(saved)
    described = encoder_cache_key(
        DescribedEncoder(pipeline.config_dict()), SENTS, kind="embeddings"
    )
    assert dataclasses.replace(described, code_sha256=key.code_sha256) == key
