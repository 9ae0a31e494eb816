"""The format table (``sentvec.encoders.formats``): every entry is detected from its own files,
loads as the class it names, and that class's ``encoder_type`` is the entry's; a ``Pipeline``
over every encoder type saves and loads back to the same vectors; the docs list the table.

The models are small: a 60-token WordLevel tokenizer with random rows, the reference Sent2Vec
models of ``tests/data``, the 2-layer MiniLM of ``conftest.py``.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import numpy as np
import pytest

from sentvec import (
    Pipeline,
    Sent2Vec,
    SIFEncoder,
    StaticEncoder,
    USIFEncoder,
    Whitening,
    load_encoder,
)
from sentvec.encoders import BigramStaticEncoder, model_kind
from sentvec.encoders.formats import (
    FORMATS,
    SIF_CONFIG_FILE,
    by_encoder_type,
    detect_format,
    format_named,
)

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"
DIM = 8


def _tokenizer(n_words: int):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(n_words)}}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return t


def _rows(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def _word_texts(n: int = 200) -> list[str]:
    rng = np.random.default_rng(1)
    return [" ".join(f"w{i}" for i in rng.integers(0, 62, rng.integers(1, 9))) for _ in range(n)]


def _bigram_encoder() -> BigramStaticEncoder:
    pairs = np.array([[1, 2], [3, 4], [5, 6], [2, 3]], dtype=np.int64)
    return BigramStaticEncoder(_rows(64), _tokenizer(59), pairs)


def _static_embedding_dir(path: Path) -> Path:
    """A sentence-transformers directory whose one module is StaticEmbedding, as
    ``SentenceTransformer.save`` lays it out (no Model2Vec ``config.json``)."""
    from safetensors.numpy import save_file

    sub = path / "0_StaticEmbedding"
    sub.mkdir(parents=True)
    save_file({"embedding.weight": _rows(60, seed=2)}, str(sub / "model.safetensors"))
    _tokenizer(59).save(str(sub / "tokenizer.json"))
    modules = [
        {"idx": 0, "name": "0", "path": "0_StaticEmbedding", "type": "StaticEmbedding"},
    ]
    (path / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def s2v() -> Sent2Vec:
    return Sent2Vec.load(REF / "tiny-unigram.bin")


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def samples(tmp_path_factory, tiny_minilm_dir, s2v, lines) -> dict[str, Path | str]:
    """One model on disk (or by name) for each format name."""
    root = tmp_path_factory.mktemp("formats")
    s2v.save(root / "s2v-dir")
    Pipeline(s2v).save(root / "pipeline")
    _bigram_encoder().save(root / "bigram")
    StaticEncoder(_rows(60), _tokenizer(59)).save(root / "m2v")
    _static_embedding_dir(root / "st-static")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lines without a known word
        SIFEncoder.from_sent2vec(s2v).fit(lines).save(root / "sif")
        USIFEncoder.from_sent2vec(s2v).fit(lines).save(root / "usif")
    return {
        "pipeline": root / "pipeline",
        "sent2vec-bin": REF / "tiny-unigram.bin",
        "bigram-static": root / "bigram",
        "model2vec": root / "m2v",
        "sentence-transformers-static": root / "st-static",
        "wordllama": "wordllama-64",
        "sif": root / "sif",
        "usif": root / "usif",
        "sent2vec-dir": root / "s2v-dir",
        "transformer": tiny_minilm_dir,
    }


def _class(dotted: str) -> type:
    module, _, name = dotted.rpartition(".")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


# ------------------------------------------------------------------ the table itself


def test_format_names_and_saved_encoder_types_are_unique():
    names = [f.name for f in FORMATS]
    assert len(names) == len(set(names))
    saved = [f.encoder_type for f in FORMATS if f.saved_by_encoder]
    assert len(saved) == len(set(saved)) and None not in saved
    # every type a format yields is saved as exactly one format (what a pipeline reloads)
    assert {f.encoder_type for f in FORMATS if f.encoder_type is not None} == set(saved)
    assert [f.name for f in FORMATS if f.takes_options] == ["transformer"]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_each_format_is_detected_from_its_files_and_loads_its_encoder_type(samples, fmt):
    sample = samples[fmt.name]  # a format added to the table needs a sample here
    if fmt.name == "wordllama":
        pytest.importorskip("wordllama")
    assert detect_format(sample) is fmt
    assert fmt.matches(sample)
    assert model_kind(sample) == fmt.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load_encoder(sample)
    assert type(loaded) is _class(fmt.encoder_class)
    assert getattr(type(loaded), "encoder_type", None) == fmt.encoder_type


def test_every_encoder_class_with_a_type_saves_as_the_format_of_that_type():
    import sentvec.encoders
    import sentvec.sent2vec

    classes = {
        obj
        for pkg in (sentvec.encoders, sentvec.sent2vec)
        for name in pkg.__all__
        if isinstance(obj := getattr(pkg, name), type)
    }
    typed = {c: c.encoder_type for c in classes if isinstance(getattr(c, "encoder_type", 0), str)}
    assert {"transformer", "sent2vec", "static", "bigram-static", "sif", "usif"} <= set(
        typed.values()
    )
    for cls, encoder_type in typed.items():
        assert _class(by_encoder_type(encoder_type).encoder_class) is cls, cls


@pytest.mark.parametrize(
    "name", ["sent2vec-dir", "bigram-static", "model2vec", "sif", "usif", "transformer"]
)
def test_what_save_writes_is_detected_as_the_format_of_its_encoder_type(samples, name, tmp_path):
    fmt = format_named(name)
    assert fmt.saved_by_encoder and by_encoder_type(str(fmt.encoder_type)) is fmt
    encoder = fmt.load(samples[name])
    encoder.save(tmp_path / "again")  # type: ignore[attr-defined]
    assert detect_format(tmp_path / "again") is fmt


def test_old_names_are_views_of_the_table(samples):
    from sentvec.encoders import ENCODER_LOADERS, ModelKind
    from sentvec.encoders.sif import _CONFIG_FILE
    from sentvec.encoders.static_loaders import static_model_format

    assert set(typing.get_args(ModelKind)) == {f.name for f in FORMATS} | {"other-file"}
    assert set(ENCODER_LOADERS) == {f.encoder_type for f in FORMATS if f.saved_by_encoder}
    assert isinstance(
        ENCODER_LOADERS["bigram-static"](samples["bigram-static"]), BigramStaticEncoder
    )
    assert SIF_CONFIG_FILE == _CONFIG_FILE
    for name, old in [
        ("model2vec", "model2vec"),
        ("sentence-transformers-static", "sentence-transformers"),
    ]:
        assert static_model_format(samples[name]) == old
    assert static_model_format(samples["bigram-static"]) is None


def test_a_file_that_is_no_model_has_no_format(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model\n")
    assert detect_format(tmp_path / "notes.txt") is None
    assert model_kind(tmp_path / "notes.txt") == "other-file"


def test_a_format_given_options_it_does_not_take_refuses_them(samples):
    with pytest.raises(TypeError, match="takes no options"):
        format_named("bigram-static").load(samples["bigram-static"], pooling="cls")
    with pytest.raises(ValueError, match="do not apply to a sentvec static model with bigram"):
        load_encoder(samples["bigram-static"], pooling="cls")


def test_detection_imports_no_torch_and_opens_no_fifo(samples, tmp_path):
    """Every sample, and directories holding a FIFO in place of a marker file (and a FIFO as
    the model): detection answers without torch and without blocking on a FIFO (the child
    would hang); loading a pipeline or a bigram model then names the FIFO."""
    fifos = {
        "pipeline.json": "pipeline",
        "sentvec_bigrams.json": "bigram-static",
        SIF_CONFIG_FILE: "sif",
        "config.json": "sent2vec-dir",
        "modules.json": "sent2vec-dir",
    }
    paths = [str(p) for p in samples.values()]
    for i, marker in enumerate(fifos):
        (tmp_path / str(i)).mkdir()
        os.mkfifo(tmp_path / str(i) / marker)
        paths.append(str(tmp_path / str(i)))
    os.mkfifo(tmp_path / "model.bin")
    paths.append(str(tmp_path / "model.bin"))
    code = (
        "import sys, json\n"
        "from sentvec.encoders.formats import detect_format\n"
        "names = [getattr(detect_format(p), 'name', None) for p in json.loads(sys.argv[1])]\n"
        "print(json.dumps([names, 'torch' in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(paths)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    )
    names, torch_loaded = json.loads(out.stdout)
    assert names == [*samples, *fifos.values(), "transformer"] and not torch_loaded
    for i, marker in enumerate(fifos):
        if fifos[marker] in ("pipeline", "bigram-static"):
            with pytest.raises(ValueError, match=f"{marker}' is a FIFO"):
                load_encoder(tmp_path / str(i))


# ------------------------------------------------------------------ pipelines over every type


def test_bigram_static_pipeline_saves_and_loads(tmp_path):
    enc = _bigram_encoder()
    texts = _word_texts()
    pipeline = Pipeline(enc, Whitening(n_components=4).fit(enc.encode(texts)))
    pipeline.save(tmp_path / "p")
    cfg = json.loads((tmp_path / "p" / "pipeline.json").read_text(encoding="utf-8"))
    assert cfg["encoder"]["type"] == "bigram-static"
    back = load_encoder(tmp_path / "p")
    assert isinstance(back, Pipeline) and isinstance(back.encoder, BigramStaticEncoder)
    np.testing.assert_array_equal(back.encode(texts), pipeline.encode(texts))


def test_a_bigram_pipeline_recorded_as_static_loads_by_its_files(tmp_path):
    """A pipeline that records its bigram static encoder as "static" (the older type of that
    format) loads it by its files; a Model2Vec component recorded so stays Model2Vec."""
    enc = _bigram_encoder()
    texts = _word_texts()
    pipeline = Pipeline(enc, Whitening(n_components=4).fit(enc.encode(texts)))
    pipeline.save(tmp_path / "p")
    cfg_path = tmp_path / "p" / "pipeline.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["encoder"]["type"] = "static"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    back = Pipeline.load(tmp_path / "p")
    assert isinstance(back.encoder, BigramStaticEncoder)
    np.testing.assert_array_equal(back.encode(texts), pipeline.encode(texts))
    # a Model2Vec component recorded as "static" still reads as Model2Vec
    static = StaticEncoder(_rows(60), _tokenizer(59))
    Pipeline(static).save(tmp_path / "m")
    assert isinstance(Pipeline.load(tmp_path / "m").encoder, StaticEncoder)


def test_an_encoder_whose_type_names_another_format_is_refused_before_writing(tmp_path):
    class CalledStatic(BigramStaticEncoder):
        encoder_type = "static"

    enc = _bigram_encoder()
    liar = CalledStatic(enc.embeddings, enc.tokenizer, enc.bigrams)
    with pytest.raises(TypeError, match="encoder_type 'static' .* wrote a sentvec static model"):
        Pipeline(liar).save(tmp_path / "p")
    assert not (tmp_path / "p").exists()


def _encoders(kind: str, s2v, tiny_minilm, tmp_path: Path):
    """An encoder of each type sentvec has, and texts it knows."""
    words = _word_texts()
    if kind == "transformer":
        return tiny_minilm, None
    if kind == "sent2vec-bin":
        return Sent2Vec.load(REF / "tiny-bigram.bin"), None
    if kind == "sent2vec-dir":
        Sent2Vec.load(REF / "tiny-bigram.bin").save(tmp_path / "s2v")
        return Sent2Vec.load(tmp_path / "s2v"), None
    if kind == "model2vec":
        return StaticEncoder(_rows(60), _tokenizer(59), weights=np.linspace(0.5, 1, 60)), words
    if kind == "bigram-static":
        return _bigram_encoder(), words
    if kind == "sentence-transformers-static":
        return load_encoder(_static_embedding_dir(tmp_path / "st")), words
    if kind == "wordllama":
        pytest.importorskip("wordllama")
        return load_encoder("wordllama-64"), None
    if kind in ("sif", "usif"):
        cls = SIFEncoder if kind == "sif" else USIFEncoder
        lines = (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()
        return cls.from_sent2vec(s2v).fit(lines), None
    raise AssertionError(f"no encoder for {kind!r}")


@pytest.mark.parametrize("kind", [f.name for f in FORMATS if f.encoder_type is not None])
def test_pipeline_over_every_encoder_type_round_trips(kind, s2v, tiny_minilm, tmp_path):
    encoder, texts = _encoders(kind, s2v, tiny_minilm, tmp_path)
    if texts is None:
        texts = (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()[:120]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # texts without a known word
        X = encoder.encode(texts)
        pipeline = Pipeline(encoder, Whitening(n_components=4).fit(X[np.abs(X).sum(axis=1) > 0]))
        pipeline.save(tmp_path / "p")
        back = load_encoder(tmp_path / "p")
        want, got = pipeline.encode(texts), back.encode(texts)
    assert isinstance(back, Pipeline) and type(back.encoder) is type(encoder)
    assert got.shape == (len(texts), 4) and np.abs(got).max() > 0
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ the docs


def _docs_format_rows() -> list[list[str]]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Formats sentvec reads", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_docs_list_the_formats_of_the_table():
    want = [
        [
            f"`{f.name}`",
            f.human_name,
            f.detected_by,
            f"`{f.encoder_class.rpartition('.')[2]}`",
            "—" if f.encoder_type is None else f"`{f.encoder_type}`",
        ]
        for f in FORMATS
    ]
    assert _docs_format_rows() == want
