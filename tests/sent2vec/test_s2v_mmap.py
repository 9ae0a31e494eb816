"""Memory-mapped and inference-only loading of Sent2Vec models, and ``sentvec convert``.

Oracles: the in-memory load (``mmap=None``) of the official reference files, the files' own
bytes, and a plain-Python transcription of ``Dictionary::load`` for the vectorised dictionary
reader.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import struct
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main
from sentvec.exceptions import InferenceOnlyError, ModelFormatError
from sentvec.sent2vec import binfile
from sentvec.sent2vec.binfile import read_bin, write_bin
from sentvec.sent2vec.dictionary import Dictionary
from sentvec.sent2vec.model import Sent2Vec

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
MODELS = ["tiny-bigram", "tiny-unigram", "tiny-maxvocab"]
LINES = (REF / "sentences.txt").read_text(encoding="utf-8").split("\n")[:490]


def quiet(model: Sent2Vec, sentences, **kw) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return model.encode(sentences, **kw)


@pytest.fixture(scope="module")
def in_memory() -> dict[str, Sent2Vec]:
    return {name: Sent2Vec.load(REF / f"{name}.bin", mmap=None) for name in MODELS}


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / f"{name}.bin"
    shutil.copyfile(REF / f"{name}.bin", dst)
    return dst


def _matrix_offsets(path: Path) -> tuple[int, int]:
    """File offsets of the input and of the output matrix data (after their int64 shapes)."""
    raw = path.read_bytes()
    m = read_bin(path)
    out_data = len(raw) - m.output_matrix.size * 4
    in_data = out_data - 16 - 1 - m.input_matrix.size * 4
    assert struct.unpack_from("<qq", raw, in_data - 16) == m.input_matrix.shape
    assert struct.unpack_from("<qq", raw, out_data - 16) == m.output_matrix.shape
    return in_data, out_data


@pytest.mark.parametrize("name", MODELS)
def test_mmap_load_encodes_bit_identically(in_memory, name):
    ref = quiet(in_memory[name], LINES)
    official = np.load(REF / f"{name}.vectors.npy")
    assert np.abs(ref - official).max() <= 1e-6
    for mode in ("r", "c"):
        for inference_only in (False, True):
            m = Sent2Vec.load(REF / f"{name}.bin", mmap=mode, inference_only=inference_only)
            assert isinstance(m.input_matrix, np.memmap)
            assert m.input_matrix.flags.writeable == (mode == "c")
            assert (m.output_matrix is None) == inference_only
            assert m.words == in_memory[name].words and m.args == in_memory[name].args
            np.testing.assert_array_equal(m.input_matrix, in_memory[name].input_matrix)
            assert quiet(m, LINES).tobytes() == ref.tobytes()
    assert Sent2Vec.load(REF / f"{name}.bin").input_matrix.filename  # default: mapped


def test_threads_on_the_mapped_matrix(in_memory):
    sents = (REF / "train-sample.txt").read_text(encoding="utf-8").splitlines()[:5000]
    ref = quiet(in_memory["tiny-bigram"], sents, num_threads=1)
    mapped = Sent2Vec.load(REF / "tiny-bigram.bin", mmap="r", inference_only=True)
    for threads in (2, 3):  # more than 2048 sentences per batch: the thread pool runs
        assert quiet(mapped, sents, num_threads=threads).tobytes() == ref.tobytes()


def test_embed_cli_mmap_and_no_mmap_agree(tmp_path, capsys):
    outs = []
    for flag in ("--mmap", "--no-mmap"):
        out = tmp_path / f"v{flag}.npy"
        assert (
            main(
                [
                    "embed",
                    str(REF / "tiny-bigram.bin"),
                    "-i",
                    str(REF / "sentences.txt"),
                    "-o",
                    str(out),
                    flag,
                    "--threads",
                    "2",
                ]
            )
            == 0
        )
        outs.append(np.load(out))
    assert outs[0].tobytes() == outs[1].tobytes() and outs[0].shape == (490, 16)


@pytest.mark.parametrize("mode", ["r", None])
def test_truncated_matrix_is_a_model_format_error(tmp_path, mode):
    src = _copy("tiny-bigram", tmp_path)
    raw = src.read_bytes()
    in_data, out_data = _matrix_offsets(src)
    for cut in (in_data + 4, (in_data + out_data) // 2, out_data - 17, out_data + 40, len(raw) - 1):
        bad = tmp_path / f"cut{cut}.bin"
        bad.write_bytes(raw[:cut])
        for inference_only in (False, True):  # the skipped output matrix is checked too
            with pytest.raises(ModelFormatError, match="truncated") as err:
                Sent2Vec.load(bad, mmap=mode, inference_only=inference_only)
            assert f"cut{cut}" in str(err.value)


def test_file_shrunk_after_mapping_raises_instead_of_sigbus(tmp_path, in_memory):
    path = _copy("tiny-bigram", tmp_path)
    in_data, out_data = _matrix_offsets(path)
    full = Sent2Vec.load(path, mmap="r")
    lean = Sent2Vec.load(path, mmap="r", inference_only=True)
    ref = quiet(full, LINES)
    os.truncate(path, out_data + 100)  # inside the output matrix only
    assert quiet(lean, LINES).tobytes() == ref.tobytes()  # maps the input matrix only
    with pytest.raises(ModelFormatError, match="truncated to"):
        full.encode(LINES)
    os.truncate(path, in_data + 1000)  # inside the input matrix
    for call in (
        lambda m: m.encode(LINES),
        lambda m: m.get_word_vector("the"),
        lambda m: m.save(tmp_path / "d"),
    ):
        with pytest.raises(ModelFormatError, match="truncated to .* after it was memory-mapped"):
            call(lean)
    with pytest.raises(ModelFormatError, match="truncated"):
        full.save_bin(tmp_path / "x.bin")
    assert not (tmp_path / "x.bin").exists() and not (tmp_path / "d").exists()


def test_file_replaced_by_rename_keeps_the_mapped_model(tmp_path, in_memory):
    path = _copy("tiny-bigram", tmp_path)
    m = Sent2Vec.load(path)
    shutil.copyfile(REF / "tiny-maxvocab.bin", tmp_path / "new.bin")
    os.replace(tmp_path / "new.bin", path)  # the old inode stays mapped
    assert quiet(m, LINES).tobytes() == quiet(in_memory["tiny-bigram"], LINES).tobytes()


def test_no_mmap_support_falls_back_to_reading(tmp_path, monkeypatch, in_memory):
    def refuse(*args, **kwargs):
        raise OSError(errno.ENODEV, "No such device")

    monkeypatch.setattr(binfile, "mmap_module", types.SimpleNamespace(mmap=refuse, ACCESS_READ=1))
    with pytest.warns(UserWarning, match="cannot be memory-mapped .*No such device.*reading"):
        m = Sent2Vec.load(REF / "tiny-maxvocab.bin", mmap="r")
    assert not isinstance(m.input_matrix, np.memmap) and m.input_matrix.flags.writeable
    ref = in_memory["tiny-maxvocab"]
    assert quiet(m, LINES).tobytes() == quiet(ref, LINES).tobytes()
    m.save_bin(tmp_path / "m.bin")
    assert (tmp_path / "m.bin").read_bytes() == (REF / "tiny-maxvocab.bin").read_bytes()


def test_inference_only_refuses_save_bin_and_saves_a_lean_directory(tmp_path, in_memory):
    m = Sent2Vec.load(REF / "tiny-maxvocab.bin", inference_only=True)
    with pytest.raises(InferenceOnlyError, match=r"output matrix.*inference_only=False") as err:
        m.save_bin(tmp_path / "m.bin")
    assert isinstance(err.value, ValueError) and "tiny-maxvocab.bin" in str(err.value)
    assert not (tmp_path / "m.bin").exists()
    m.save(tmp_path / "lean")
    assert not (tmp_path / "lean" / "output.npy").exists()
    assert json.loads((tmp_path / "lean" / "config.json").read_text())["output_matrix"] is False
    again = Sent2Vec.load(tmp_path / "lean")  # no output matrix: inference-only whatever asked
    assert again.inference_only and again.output_matrix is None
    ref = quiet(in_memory["tiny-maxvocab"], LINES)
    assert quiet(again, LINES).tobytes() == ref.tobytes()
    with pytest.raises(InferenceOnlyError):
        again.save_bin(tmp_path / "m.bin")
    with pytest.raises(ValueError, match="output_matrix=None"):
        Sent2Vec(
            m.dictionary,
            m.input_matrix,
            np.zeros((m.nwords, m.dim), np.float32),
            inference_only=True,
        )


def test_directory_inference_only_skips_but_checks_the_output_matrix(tmp_path, in_memory):
    in_memory["tiny-bigram"].save(tmp_path / "d")
    m = Sent2Vec.load(tmp_path / "d", inference_only=True)
    assert m.output_matrix is None and isinstance(m.input_matrix, np.memmap)
    assert quiet(m, LINES).tobytes() == quiet(in_memory["tiny-bigram"], LINES).tobytes()
    np.save(tmp_path / "d" / "output.npy", np.zeros((3, 5), np.float64))
    with pytest.raises(ModelFormatError, match="output.npy holds float64"):
        Sent2Vec.load(tmp_path / "d", inference_only=True)


@pytest.mark.parametrize("bad", ["r+", "w+", "x", 1])
def test_bad_mmap_value(bad):
    with pytest.raises(ValueError, match="mmap="):
        Sent2Vec.load(REF / "tiny-maxvocab.bin", mmap=bad)


def _python_dictionary(path: Path) -> tuple[list[bytes], list[int], list[int]]:
    """``Dictionary::load`` transcribed entry by entry (the oracle of the vectorised reader)."""
    raw = path.read_bytes()
    off = 8 + 4 * 12 + 8
    size, _, _, _, _ = struct.unpack_from("<iiiqq", raw, off)
    off += 28
    words, counts, kinds = [], [], []
    for _ in range(size):
        nul = raw.index(b"\x00", off)
        words.append(raw[off:nul])
        c, t = struct.unpack_from("<qb", raw, nul + 1)
        counts.append(c)
        kinds.append(t)
        off = nul + 10
    return words, counts, kinds


def test_vectorised_dictionary_equals_entry_by_entry_reading(tmp_path):
    rng = np.random.default_rng(7)
    # words of arbitrary non-NUL bytes: invalid UTF-8, truncated sequences, 0xFF, long ones
    odd = [
        bytes(rng.integers(1, 256, size=int(rng.integers(1, 40)), dtype=np.uint8))
        for _ in range(3000)
    ]
    odd += [b"\xe2\x82", b"caf\xc3", b"\xf0\x9f\x98", "é".encode(), b"x" * 5000, b"\xff\xfe"]
    words = ["<PLACEHOLDER>", "</s>"] + [w.decode("utf-8", "surrogateescape") for w in odd]
    counts = np.concatenate([[0, 2**40], rng.integers(0, 2**33, size=len(odd))])
    d = Dictionary(
        words,
        counts,
        ntokens=123456789,
        bucket=50,
        word_ngrams=2,
        labels=["__label__a", "__label__\udcff"],
        label_counts=[2**62, 256],
    )
    path = tmp_path / "odd.bin"
    write_bin(
        path,
        args={},
        dictionary=d,
        input_matrix=np.ones((len(words) + 50, 3), np.float32),
        output_matrix=np.zeros((len(words), 3), np.float32),
    )
    for p in (path, REF / "tiny-bigram.bin", REF / "tiny-maxvocab.bin"):
        o_words, o_counts, o_types = _python_dictionary(p)
        for mode in ("r", None):
            got = read_bin(p, mmap=mode).dictionary
            enc = [w.encode("utf-8", "surrogateescape") for w in got.words + got.labels]
            assert enc == o_words
            assert got.counts.tolist() + got.label_counts.tolist() == o_counts
            assert o_types == [0] * got.nwords + [1] * got.nlabels
            wbytes, offsets = got.word_bytes()
            assert wbytes.tobytes() == b"".join(o_words[: got.nwords])
            assert np.diff(offsets).tolist() == [len(w) for w in o_words[: got.nwords]]
            assert got.eos_id == got.words.index("</s>") == got.word2id["</s>"]
    m = read_bin(path, mmap="r")
    write_bin(
        tmp_path / "again.bin",
        args=m.args,
        dictionary=m.dictionary,
        input_matrix=m.input_matrix,
        output_matrix=m.output_matrix,
    )
    assert (tmp_path / "again.bin").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("name", MODELS)
def test_convert_round_trip_is_byte_identical(tmp_path, capsys, in_memory, name):
    src = REF / f"{name}.bin"
    assert main(["convert", str(src), str(tmp_path / "dir")]) == 0
    assert "model directory" in capsys.readouterr().err
    d = Sent2Vec.load(tmp_path / "dir")
    assert isinstance(d.input_matrix, np.memmap)
    assert quiet(d, LINES).tobytes() == quiet(in_memory[name], LINES).tobytes()
    assert main(["convert", str(tmp_path / "dir"), str(tmp_path / "back.bin")]) == 0
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()


def test_convert_inference_only_and_errors(tmp_path, capsys):
    src = str(REF / "tiny-maxvocab.bin")
    assert main(["convert", src, str(tmp_path / "lean"), "--inference-only"]) == 0
    assert not (tmp_path / "lean" / "output.npy").exists()
    assert main(["convert", str(tmp_path / "lean"), str(tmp_path / "m.bin")]) == 2
    assert "needs the output matrix" in capsys.readouterr().err
    assert not (tmp_path / "m.bin").exists()
    assert main(["convert", str(REF / "sentences.txt"), str(tmp_path / "x")]) == 2
    assert "neither an official sent2vec .bin" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "missing.bin"), str(tmp_path / "x")]) == 2
    assert "not found" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("keep me")
    assert main(["convert", src, str(tmp_path / "full")]) == 2
    assert (tmp_path / "full" / "keep.txt").read_text() == "keep me"
    assert not (tmp_path / "x").exists()


def test_a_memory_mapped_model_pickles_as_an_in_memory_one():
    # Dask ships encoder objects to its workers by pickle; the mmap objects behind the mapped
    # matrices cannot be pickled, the arrays can
    import pickle

    from sentvec.sent2vec.model import Sent2Vec

    ref = Path(__file__).parents[1] / "data" / "sent2vec-reference"
    model = Sent2Vec.load(ref / "tiny-bigram.bin", mmap="r")
    lines = (ref / "sentences.txt").read_text(encoding="utf-8").splitlines()
    back = pickle.loads(pickle.dumps(model))
    assert back._mapped == []
    assert np.array_equal(back.encode(lines), model.encode(lines))
