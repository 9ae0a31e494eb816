"""Damaged static model directories: every JSON file parsed strictly, every model file checked
as a regular file, every row table checked against its tokenizer, JSON integer fields in range.

Model2Vec 0.10 (installed) is the oracle where it reads the same files: what it refuses,
sentvec refuses too. The models are small: a 60-token WordLevel tokenizer and random rows.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sentvec import StaticEncoder, load_encoder
from sentvec._readers import check_regular_file, json_int, read_json, read_json_object
from sentvec.exceptions import ModelFormatError

DIM = 8


def _tokenizer(n_words: int):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(n_words)}}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return t


def _rows(n: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, DIM)).astype(np.float32)


@pytest.fixture(scope="module")
def m2v_dir(tmp_path_factory) -> Path:
    """A Model2Vec directory written by model2vec itself (normalize: true, 60 tokens)."""
    model2vec = pytest.importorskip("model2vec")
    tok = _tokenizer(59)
    d = tmp_path_factory.mktemp("m2v") / "model"
    model2vec.StaticModel(_rows(60), tok, normalize=True).save_pretrained(d)
    return d


@pytest.fixture()
def copy(m2v_dir, tmp_path) -> Path:
    return Path(shutil.copytree(m2v_dir, tmp_path / "m"))


def _model2vec_refuses(d: Path) -> bool:
    from model2vec import StaticModel

    try:
        StaticModel.from_pretrained(d)
    except Exception:  # noqa: BLE001 - whatever it raises, it refuses
        return True
    return False


# ---------------------------------------------------------------------- strict JSON


@pytest.mark.parametrize(
    "raw, match",
    [
        (b'{"normalize": true,}', r"not valid JSON: Expecting property name .* line 1 column 20"),
        (
            b'{\n  "a": 1\n  "b": 2\n}',
            r"not valid JSON: Expecting ',' delimiter at line 3 column 3",
        ),
        (b"\x00\xff\xfe binary", r"not valid JSON: not UTF-8 \(invalid start byte at byte 1\)"),
        (b"[1, 2]", "holds a JSON list, expected an object"),
        (b'"text"', "holds a JSON str, expected an object"),
        (b'{"max_length": NaN}', "NaN is not a JSON number"),
        (b'{"max_length": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"max_length": 1e999}', "1e999 overflows a float"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        (b'{"n": ' + b"9" * 5000 + b"}", "not valid JSON"),
    ],
)
def test_read_json_is_strict_and_names_the_file_and_position(tmp_path, raw, match):
    p = tmp_path / "config.json"
    p.write_bytes(raw)
    with pytest.raises(ModelFormatError, match=match) as info:
        read_json_object(p, error=ModelFormatError)
    assert str(p) in str(info.value)


def test_read_json_checks_the_top_level_type_asked_for(tmp_path):
    p = tmp_path / "modules.json"
    p.write_text('[{"idx": 0}]', encoding="utf-8")
    assert read_json(p, expect=list) == [{"idx": 0}]
    with pytest.raises(ValueError, match="holds a JSON list, expected an object"):
        read_json(p)
    with pytest.raises(FileNotFoundError, match="missing JSON file"):
        read_json(tmp_path / "absent.json")


@pytest.mark.parametrize(
    "value, ok",
    [
        (512, True),
        (None, True),
        (10**30, False),
        (1e30, False),
        (0, False),
        (True, False),
        ("512", False),
        (2**31, False),
    ],
)
def test_json_int_bounds_known_fields(value, ok):
    cfg = {"max_length": value}
    if ok:
        assert json_int(cfg, "max_length", "c.json") == value
    else:
        with pytest.raises(ModelFormatError, match=r"'c.json': max_length=.* expected an integer"):
            json_int(cfg, "max_length", "c.json", error=ModelFormatError)
    assert json_int({}, "max_length", "c.json", default=7) == 7


@pytest.mark.parametrize(
    "text",
    ['{"max_length": 512, "normalize": true,}', "\x00\x01binary", "[1, 2]"],
    ids=["trailing-comma", "binary", "list"],
)
def test_a_model2vec_config_that_does_not_parse_is_refused_like_model2vec(copy, text):
    # before: silently ignored (the directory loaded through modules.json, settings lost)
    (copy / "config.json").write_text(text, encoding="latin-1")
    assert _model2vec_refuses(copy)
    with pytest.raises(ModelFormatError, match=r"config\.json"):
        load_encoder(copy)


@pytest.mark.parametrize("value", ["1e30", str(10**30), "-1", '"512"', "true", "2147483648"])
def test_max_length_out_of_range_is_a_model_format_error(copy, value):
    cfg = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    text = json.dumps(cfg).replace('"max_length": 512', f'"max_length": {value}')
    (copy / "config.json").write_text(text, encoding="utf-8")
    with pytest.raises(ModelFormatError, match=r"config\.json': max_length=.*expected an integer"):
        load_encoder(copy)


def test_modules_json_of_a_static_embedding_dir_is_read_strictly(copy):
    (copy / "config.json").unlink()  # now only modules.json says what the directory is
    assert isinstance(load_encoder(copy), StaticEncoder)
    from sentvec.encoders.static_loaders import load_static_sentence_transformers

    (copy / "modules.json").write_text('[{"idx": 0, "type": "x.StaticEmbedding"},]')
    with pytest.raises(ModelFormatError, match=r"modules\.json' is not valid JSON.*line 1"):
        load_static_sentence_transformers(copy)


# ---------------------------------------------------------------------- row tables


def test_a_tokenizer_with_fewer_tokens_than_rows_is_refused_like_model2vec(copy):
    # before: loaded, every token id now pointing at another token's row
    _tokenizer(49).save(str(copy / "tokenizer.json"))
    assert _model2vec_refuses(copy)
    with pytest.raises(
        ModelFormatError, match=r"tokenizer\.json.*50 tokens but embeddings 60 rows"
    ):
        load_encoder(copy)


def test_weights_and_mapping_need_one_value_per_token():
    tok = _tokenizer(9)
    for name in ("weights", "token_mapping"):
        longer = np.zeros(12, dtype=np.float32 if name == "weights" else np.int64)
        with pytest.raises(ModelFormatError, match="one value per token \\(10\\)"):
            StaticEncoder(_rows(10), tok, **{name: longer})


def test_bigram_dir_checks_rows_and_config_counts(tmp_path):
    from sentvec.encoders import BigramStaticEncoder

    tok = _tokenizer(9)
    pairs = np.array([[1, 2], [3, 4]], dtype=np.int64)
    d = tmp_path / "bg"
    BigramStaticEncoder(_rows(12), tok, pairs).save(d)
    assert BigramStaticEncoder.load(d).n_tokens == 10
    _tokenizer(8).save(str(d / "tokenizer.json"))
    with pytest.raises(ModelFormatError, match="9 tokens but embeddings 10 rows"):
        load_encoder(d)
    tok.save(str(d / "tokenizer.json"))
    cfg = json.loads((d / "sentvec_bigrams.json").read_text(encoding="utf-8"))
    for key, value, match in [
        ("bigrams", 3, "records 3 bigrams but .* holds 2"),
        ("max_length", 10**30, "max_length=.* expected an integer"),
        ("tokens", -1, "tokens=-1 is invalid"),
    ]:
        (d / "sentvec_bigrams.json").write_text(json.dumps({**cfg, key: value}))
        with pytest.raises(ModelFormatError, match=match):
            load_encoder(d)


# ---------------------------------------------------------------------- not regular files


class _FifoWatch:
    """Opens a FIFO's write end whenever a reader waits on it, so that a reader that opened it
    gets end-of-file instead of blocking forever; records whether one ever did."""

    def __init__(self, fifo: Path) -> None:
        self.fifo, self.opened, self._stop = fifo, False, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no reader
                    return
                time.sleep(0.01)
                continue
            self.opened = True
            os.close(fd)

    def __enter__(self) -> _FifoWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@pytest.mark.parametrize("name", ["tokenizer.json", "model.safetensors", "config.json"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_device_in_place_of_a_model_file_is_named(copy, name, kind):
    # before: "missing tokenizer file" / "missing weights file" although something is there
    target = copy / name
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
        match = rf"{name}' is a FIFO \(named pipe\), not a regular file"
    else:
        target.symlink_to("/dev/zero")
        match = rf"{name}' \(a symbolic link to '/dev/zero'\) is a character device"
    with _FifoWatch(target) if kind == "fifo" else _nothing() as watch:
        with pytest.raises(ModelFormatError, match=match):
            load_encoder(copy)
    assert watch is None or not watch.opened, "the FIFO was opened for reading"


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_check_regular_file_names_what_is_there(tmp_path):
    (tmp_path / "f").write_text("x")
    assert check_regular_file(tmp_path / "f") == tmp_path / "f"
    with pytest.raises(ValueError, match="is a directory, not a regular file"):
        check_regular_file(tmp_path)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(ValueError, match="cannot read file .*loop"):
        check_regular_file(tmp_path / "loop")
    with pytest.raises(FileNotFoundError, match="missing file"):
        check_regular_file(tmp_path / "absent")


def test_sent2vec_directory_files_are_checked_the_same_way(tmp_path):
    from sentvec import Sent2Vec

    ref = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-unigram.bin"
    d = tmp_path / "s2v"
    Sent2Vec.load(ref).save(d)
    (d / "vocab.json").write_text('{"words": ["a",], "labels": []}', encoding="utf-8")
    with pytest.raises(ModelFormatError, match=r"vocab\.json' is not valid JSON.*line 1 column"):
        Sent2Vec.load(d)
    Sent2Vec.load(ref).save(tmp_path / "fresh")
    shutil.rmtree(d)
    shutil.copytree(tmp_path / "fresh", d)
    (d / "input.npy").unlink()
    os.mkfifo(d / "input.npy")
    with _FifoWatch(d / "input.npy") as watch:
        with pytest.raises(ModelFormatError, match=r"input\.npy' is a FIFO \(named pipe\)"):
            Sent2Vec.load(d)
    assert not watch.opened
