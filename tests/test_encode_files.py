"""encode_file: one vector per line, shards equal to a one-shot encode, resume without
recomputation after an interruption, refusal to mix configurations, Dask partitions."""

from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest

import sentvec.encode_files as ef
from sentvec.encode_files import (
    PROBE_SENTENCES,
    encode_file,
    encode_file_delayed,
    load_embeddings,
    read_manifest,
)
from sentvec.line_ranges import iter_line_chunks, scan_lines

pytestmark = pytest.mark.filterwarnings("ignore:.*all-zero vectors:UserWarning")


class Interrupted(RuntimeError):
    pass


class ToyEncoder:
    """Deterministic hashed bag of words; ``fail_after`` shards raise ``Interrupted``."""

    def __init__(
        self, dim: int = 8, seed: int = 0, fail_after: int | None = None, name: str = "toy"
    ):
        self.dim, self.seed, self.fail_after, self.name = dim, seed, fail_after, name
        self.n_calls = 0  # data calls (the resume probe is not counted)

    def config_dict(self):
        return {"encoder": "ToyEncoder", "name": self.name, "dim": self.dim}

    def encode(self, sentences, *, batch_size=32, show_progress_bar=None, normalize=False):
        sentences = list(sentences)
        if sentences != list(PROBE_SENTENCES):
            if self.fail_after is not None and self.n_calls >= self.fail_after:
                raise Interrupted("simulated crash")
            self.n_calls += 1
        out = np.zeros((len(sentences), self.dim), np.float32)
        for i, s in enumerate(sentences):
            for w in s.split():
                out[i] += np.random.default_rng(zlib.crc32(w.encode()) + self.seed).standard_normal(
                    self.dim
                )
        return out


LINES = [f"w{i % 17} w{i % 5} common" if i % 23 else "" for i in range(1000)]


@pytest.fixture()
def corpus(tmp_path):
    p = tmp_path / "corpus.txt"
    p.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return p


def test_equals_one_shot_encode_and_manifest(tmp_path, corpus):
    with pytest.warns(
        UserWarning, match="44 of 1000 lines .* all-zero vectors \\(44 of them empty\\)"
    ) as caught:
        m = encode_file(ToyEncoder(), corpus, tmp_path / "out", shard_size=128)
    zero = [w for w in caught if "all-zero" in str(w.message)]
    assert len(zero) == 1 and zero[0].filename == __file__  # points at the caller
    expected = ToyEncoder().encode(LINES)
    got = load_embeddings(tmp_path / "out")
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    assert (m.n_shards, m.complete, m.n_lines, m.dim) == (8, True, 1000, 8)
    assert (m.n_empty, m.n_zero) == (44, 44) and m.runs[-1].n_shards_encoded == 8
    disk = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert disk["shards"][1]["start_line"] == 128 and disk["shards"][1]["end_line"] == 256
    assert disk["encoder"] == {"encoder": "ToyEncoder", "name": "toy", "dim": 8}
    raw = corpus.read_bytes()
    s = m.shards[2]
    assert raw[s.start_byte : s.end_byte].decode().split("\n")[:-1] == LINES[256:384]
    parts = load_embeddings(tmp_path / "out", concatenate=False, mmap=True)
    assert len(parts) == 8 and isinstance(parts[0], np.memmap)


def test_resume_after_interruption_skips_finished_shards(tmp_path, corpus):
    out = tmp_path / "out"
    crashing = ToyEncoder(fail_after=3)
    with pytest.raises(Interrupted):
        encode_file(crashing, corpus, out, shard_size=100)
    m = read_manifest(out)
    assert len(m.shards) == 3 and not m.complete
    with pytest.raises(ValueError, match="incomplete: 3 of 10 shards"):
        load_embeddings(out)
    assert load_embeddings(out, allow_incomplete=True).shape == (300, 8)
    stamps = {r.file: os.stat(out / r.file).st_mtime_ns for r in m.shards}

    resumed = ToyEncoder()
    m2 = encode_file(resumed, corpus, out, shard_size=100)
    assert resumed.n_calls == 7  # only the unfinished shards were encoded
    assert (m2.runs[-1].n_shards_reused, m2.runs[-1].n_shards_encoded) == (3, 7)
    assert {f: os.stat(out / f).st_mtime_ns for f in stamps} == stamps  # not rewritten
    encode_file(ToyEncoder(), corpus, tmp_path / "ref", shard_size=100)
    assert np.array_equal(load_embeddings(out), load_embeddings(tmp_path / "ref"))

    again = ToyEncoder()
    assert encode_file(again, corpus, out, shard_size=100).runs[-1].n_shards_reused == 10
    assert again.n_calls == 0
    redo = ToyEncoder()
    assert (
        encode_file(redo, corpus, out, shard_size=100, resume=False).runs[-1].n_shards_encoded == 10
    )
    assert redo.n_calls == 10


def test_changed_input_or_encoder_refused(tmp_path, corpus):
    out = tmp_path / "out"
    encode_file(ToyEncoder(), corpus, out, shard_size=300)
    # touched but identical: shards are re-hashed and reused
    os.utime(corpus, ns=(1, 1))
    assert encode_file(ToyEncoder(), corpus, out, shard_size=300).runs[-1].n_shards_reused == 4
    # same size, one line changed in shard 1
    lines = list(LINES)
    lines[400] = lines[400].replace("common", "COMMON")
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"changed since .*\(lines 300-600 differ\)"):
        encode_file(ToyEncoder(), corpus, out, shard_size=300)
    m = encode_file(ToyEncoder(), corpus, out, shard_size=300, overwrite=True)
    assert m.runs[-1].n_shards_encoded == 4
    assert np.array_equal(load_embeddings(out), ToyEncoder().encode(lines))
    with pytest.raises(ValueError, match="different encoder"):
        encode_file(ToyEncoder(name="other"), corpus, out, shard_size=300)
    with pytest.raises(ValueError, match="different shard_size"):
        encode_file(ToyEncoder(), corpus, out, shard_size=200)
    # same description, other weights: caught by the probe vectors
    with pytest.raises(ValueError, match="output differs"):
        encode_file(ToyEncoder(seed=5), corpus, out, shard_size=300)


def test_line_range_partitions_and_dask(tmp_path, corpus):
    expected = ToyEncoder().encode(LINES)
    m = encode_file(
        ToyEncoder(), corpus, tmp_path / "p", start_line=250, end_line=777, shard_size=100
    )
    assert m.n_shards == 6 and m.shards[0].start_line == 250 and m.shards[-1].end_line == 777
    assert np.array_equal(load_embeddings(tmp_path / "p"), expected[250:777])
    with pytest.raises(ValueError, match="outside .* which has 1000 lines"):
        encode_file(ToyEncoder(), corpus, tmp_path / "bad", start_line=10, end_line=1001)

    import dask

    tasks = encode_file_delayed(
        ToyEncoder(), corpus, tmp_path / "dask", partition_lines=300, shard_size=128
    )
    manifests = dask.compute(*tasks, scheduler="sync")
    assert [(x.start_line, x.end_line) for x in manifests] == [
        (0, 300),
        (300, 600),
        (600, 900),
        (900, 1000),
    ]
    assert np.array_equal(load_embeddings(tmp_path / "dask"), expected)
    import shutil

    shutil.rmtree(tmp_path / "dask" / "part-00001")
    with pytest.raises(ValueError, match="do not tile"):
        load_embeddings(tmp_path / "dask")


def test_whitening_applied_and_fingerprinted(tmp_path, corpus):
    from sentvec.whitening import Whitening

    X = ToyEncoder().encode(LINES)
    w = Whitening(n_components=5).fit(X)
    m = encode_file(ToyEncoder(), corpus, tmp_path / "w", whitening=w, shard_size=400)
    assert m.dim == 5 and m.whitening["class"] == "Whitening"
    # numpy oracle: (x - mean) @ W, except that the empty lines' zero vectors stay zero (whitened,
    # they would all become the same non-zero vector -mean @ W)
    empty = np.array([not s for s in LINES])
    expected = (X.astype(np.float64) - w.mean_) @ w.whitening_matrix_
    expected[empty] = 0.0
    got = load_embeddings(tmp_path / "w")
    assert np.allclose(got, expected, atol=1e-5)
    assert not got[empty].any() and got[~empty].any(axis=1).all()
    assert m.n_zero == int(empty.sum()) > 0
    w.save(tmp_path / "wdir")
    m2 = encode_file(
        ToyEncoder(), corpus, tmp_path / "w", whitening=tmp_path / "wdir", shard_size=400
    )
    assert m2.runs[-1].n_shards_reused == 3  # the saved copy has the same fitted arrays
    refit = Whitening(n_components=5).fit(X[:500])
    with pytest.raises(ValueError, match="different whitening"):
        encode_file(ToyEncoder(), corpus, tmp_path / "w", whitening=refit, shard_size=400)


def test_line_convention_and_decoding_errors(tmp_path, monkeypatch):
    monkeypatch.setattr("sentvec.line_ranges._SCAN_BLOCK", 7)  # many block boundaries
    cases = {
        b"": [],
        b"a\n": ["a"],
        b"a": ["a"],
        b"a\r\nb\n\n": ["a", "b", ""],
        b"x y\n\nlast no newline": ["x y", "", "last no newline"],
        b"\n\n": ["", ""],
    }
    for i, (raw, lines) in enumerate(cases.items()):
        p = tmp_path / f"c{i}.txt"
        p.write_bytes(raw)
        n, offsets = scan_lines(p, start=0, step=1)
        assert n == len(lines) and [x for c in iter_line_chunks(p, 2) for x in c] == lines
        starts = [0] + [j + 1 for j, b in enumerate(raw) if b == 10]
        assert all(offsets[k] == (starts[k] if k < len(starts) else len(raw)) for k in offsets)
        if lines:
            m = encode_file(ToyEncoder(), p, tmp_path / f"o{i}", shard_size=2)
            assert load_embeddings(tmp_path / f"o{i}").shape == (len(lines), 8)
            assert m.n_lines == len(lines)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nfine\nsister\xe0city\n")
    with pytest.raises(ValueError, match="line 3 is not valid utf-8"):
        encode_file(ToyEncoder(), bad, tmp_path / "ob", shard_size=2)
    with pytest.raises(FileNotFoundError):
        encode_file(ToyEncoder(), tmp_path / "missing.txt", tmp_path / "om")


def test_encoder_warnings_summarised_once(tmp_path, corpus, monkeypatch):
    monkeypatch.setattr(ef, "_CHUNK_LINES", 50)  # 20 encoder calls

    class Chatty(ToyEncoder):
        def encode(self, sentences, **kw):
            import warnings

            warnings.warn(
                f"{len(sentences)} sentences were truncated", RuntimeWarning, stacklevel=2
            )
            return super().encode(sentences, **kw)

    with pytest.warns(RuntimeWarning) as record:
        encode_file(Chatty(), corpus, tmp_path / "o", shard_size=500)
    msgs = [str(w.message) for w in record if w.category is RuntimeWarning]
    assert len(msgs) == 2  # the probe's own warning, then one summary for the 20 data calls
    assert msgs[1].endswith("encoder warned: 50 sentences were truncated (and 19 similar warnings)")


def test_damaged_shards_are_re_encoded_on_resume_and_refused_by_load(tmp_path, corpus):
    out = tmp_path / "out"
    encode_file(ToyEncoder(), corpus, out, shard_size=300)
    expected = load_embeddings(out, mmap=False).copy()
    m = read_manifest(out)
    nan_file, empty_file = out / m.shards[1].file, out / m.shards[0].file
    arr = np.load(nan_file)
    arr[5, 3] = np.nan
    np.save(nan_file, arr)
    with pytest.raises(ValueError, match=r"shard-000000000300-000000000600\.npy.* holds 1 NaN"):
        load_embeddings(out)
    with pytest.raises(ValueError, match="holds 1 NaN or infinite"):
        load_embeddings(out, concatenate=False, mmap=False)
    empty_file.write_bytes(b"")
    with pytest.raises(ValueError, match=r"000000000300\.npy.* is not a valid \.npy file"):
        load_embeddings(out)

    again = ToyEncoder()
    with pytest.warns(UserWarning) as record:
        m2 = encode_file(again, corpus, out, shard_size=300)
    msgs = [str(w.message) for w in record if ") is damaged: " in str(w.message)]
    assert len(msgs) == 2
    assert "lines 0-300) is damaged: unreadable" in msgs[0]
    assert "lines 300-600) is damaged: 1 non-finite values" in msgs[1]
    assert (m2.runs[-1].n_shards_encoded, m2.runs[-1].n_shards_reused) == (2, 2)
    assert again.n_calls == 2
    np.testing.assert_array_equal(load_embeddings(out), expected)


def test_empty_range_loads_as_zero_rows_of_the_recorded_dim(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    m = encode_file(ToyEncoder(dim=20), empty, tmp_path / "out")
    assert (m.n_lines, m.dim, m.complete) == (0, 20, True)
    got = load_embeddings(tmp_path / "out")
    assert got.shape == (0, 20) and got.dtype == np.float32
    assert load_embeddings(tmp_path / "out", concatenate=False) == []


def test_utf8_bom_dropped_at_file_start_only(tmp_path):
    lines = ["the cat", "\ufeffa dog", "fish"]
    p = tmp_path / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + b"\n")
    expected = ["the cat", "\ufeffa dog", "fish"]  # only the leading BOM goes
    assert [x for c in iter_line_chunks(p, 1) for x in c] == expected
    assert [x for c in iter_line_chunks(p, 2) for x in c] == expected
    seen = []

    class Recorder(ToyEncoder):
        def encode(self, sentences, **kw):
            if list(sentences) != list(PROBE_SENTENCES):
                seen.extend(sentences)
            return super().encode(sentences, **kw)

    encode_file(Recorder(), p, tmp_path / "o", shard_size=1)
    assert seen == expected
    np.testing.assert_array_equal(load_embeddings(tmp_path / "o"), ToyEncoder().encode(expected))
    # the recorded digest covers the bytes as they are (the BOM included)
    import hashlib

    rec = read_manifest(tmp_path / "o").shards[0]
    assert rec.sha256 == hashlib.sha256(b"\xef\xbb\xbfthe cat\n").hexdigest()
    # an encoding other than UTF-8 keeps the bytes (they are characters there)
    latin = [x for c in iter_line_chunks(p, 5, encoding="latin-1") for x in c]
    assert latin[0] == "\xef\xbb\xbfthe cat"


def test_input_directory_and_probe_mismatch_messages(tmp_path, corpus):
    with pytest.raises(IsADirectoryError, match="is a directory; give a text file"):
        encode_file(ToyEncoder(), tmp_path, tmp_path / "o")
    encode_file(ToyEncoder(), corpus, tmp_path / "o", shard_size=500)
    with pytest.raises(ValueError, match="same dimension 8, but .* differ .* by up to") as exc:
        encode_file(ToyEncoder(seed=3), corpus, tmp_path / "o", shard_size=500)
    assert "vs" not in str(exc.value)

    class SameDescription(ToyEncoder):
        def config_dict(self):
            return {"encoder": "ToyEncoder", "name": "toy", "dim": 8}

    with pytest.raises(ValueError, match="recorded dimension 8, this encoder gives 4"):
        encode_file(SameDescription(dim=4), corpus, tmp_path / "o", shard_size=500)


@pytest.mark.parametrize("dtype", ["S4", "float64", "int32"])
def test_shard_of_another_dtype_is_refused_by_load(tmp_path, corpus, dtype):
    # found by the long fuzzing run: a shard of bytes ('S4') of the recorded shape
    # reached the NaN check, and numpy's isfinite raised a TypeError
    out = tmp_path / "out"
    encode_file(ToyEncoder(), corpus, out, shard_size=300)
    f = out / read_manifest(out).shards[0].file
    np.save(f, np.load(f).astype(dtype))
    for mmap in (True, False):
        with pytest.raises(
            ValueError,
            match=rf"shard-000000000000-000000000300\.npy.* holds "
            rf"{np.dtype(dtype)}, not float32",
        ):
            load_embeddings(out, mmap=mmap)
