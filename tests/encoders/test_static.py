"""StaticEncoder against the source libraries' own ``encode`` (Model2Vec, sentence-transformers'
StaticEmbedding), its chunk cache against the tokenizer, its files and its bad-input errors.

The models are built here: random rows over the real 30,522-token WordPiece tokenizer of the
shipped all-MiniLM-L6-v2, saved by the libraries themselves.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
import warnings

import numpy as np
import pytest

from sentvec import StaticEncoder, load_encoder
from sentvec.encoders.static import chunk_separable
from sentvec.exceptions import ModelFormatError, TruncationWarning

DIM = 48


@pytest.fixture(scope="module")
def sts_sentences() -> list[str]:
    """2,000 distinct raw STS sentences (STS-B test, then STS12)."""
    from sentvec import load_sts

    seen: dict[str, None] = {}
    for task in load_sts(["stsb", "sts12"], variant="raw"):
        for sub in task.subsets:
            for s in sub.sent1 + sub.sent2:
                seen.setdefault(s, None)
    out = list(seen)[:2000]
    assert len(out) == 2000
    return out


@pytest.fixture(scope="module")
def odd_texts() -> list[str]:
    """Texts that stress the chunk cache: odd whitespace, control and combining characters,
    CJK, emoji, special tokens, unknown characters, empty ones."""
    return [
        "",
        " ",
        "  two  spaces  ",
        "tab\tseparated\twords",
        "new\nline and\r\ncrlf",
        "no\u00a0break\u2003em space",
        "ctrl\x1cchar\x1d and\x00nul",
        "cafe\u0301 \u0301leading combining",
        "日本語のテキスト and 中文",
        "emoji 😀🎉 here",
        "[MASK] [CLS] [SEP] [UNK] [PAD]",
        "a[MASK]b x [MASK] y",
        "UPPER lower MiXeD",
        "punctuation!!! ...(brackets) [x] {y} 'quotes' \"dq\"",
        "numbers 12345 3.14159 1,000,000",
        "\U0001d518\U0001d52b\U0001d526 math letters ﬁ ligature",
        "ǅ Σίσυφος ΟΔΟΣ",
        "x" * 300,
        "zzqxjv qwrtpl",
    ]


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(minilm_path / "tokenizer.json"))


def _rows(n: int, d: int = DIM, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _unit(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(n > 0, n, 1.0)


def _m2v_model(tokenizer, **kwargs):
    model2vec = pytest.importorskip("model2vec")
    return model2vec.StaticModel(
        _rows(tokenizer.get_vocab_size()),
        tokenizer.__class__.from_str(tokenizer.to_str()),
        **kwargs,
    )


@pytest.fixture(scope="module")
def m2v_dir(tmp_path_factory, tokenizer):
    model = _m2v_model(tokenizer, normalize=True)
    d = tmp_path_factory.mktemp("m2v") / "model"
    model.save_pretrained(d)
    return d


def _quiet_encode(encoder, texts, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return encoder.encode(texts, **kwargs)


# ---------------------------------------------------------------------- Model2Vec


def test_model2vec_dir_equals_staticmodel_encode(m2v_dir, sts_sentences, odd_texts):
    from model2vec import StaticModel

    ref = StaticModel.from_pretrained(m2v_dir)
    enc = load_encoder(m2v_dir)
    assert isinstance(enc, StaticEncoder) and enc.normalize and enc.dim == DIM
    texts = sts_sentences + odd_texts
    ours = _quiet_encode(enc, texts)
    theirs = ref.encode(texts)
    assert ours.dtype == np.float32 and ours.shape == (len(texts), DIM)
    assert np.abs(ours - theirs).max() <= 1e-6
    # not normalized: the raw means agree too
    assert (
        np.abs(
            _quiet_encode(enc, texts, normalize=False) - ref.encode(texts, normalize=False)
        ).max()
        <= 1e-6
    )


def test_model2vec_weights_mapping_and_float16(tmp_path, tokenizer, sts_sentences):
    from model2vec import StaticModel

    V = tokenizer.get_vocab_size()
    rng = np.random.default_rng(1)
    rows = _rows(300, seed=2).astype(np.float16)
    weights = rng.uniform(0.1, 2.0, V).astype(np.float32)
    mapping = rng.integers(0, 300, V)
    ref = StaticModel(
        rows,
        tokenizer.__class__.from_str(tokenizer.to_str()),
        weights=weights,
        token_mapping=mapping,
    )
    ref.save_pretrained(tmp_path / "q")
    enc = StaticEncoder.from_model2vec(tmp_path / "q")
    assert enc.embeddings.dtype == np.float16 and enc.token_mapping is not None
    ours = _quiet_encode(enc, sts_sentences)
    # Model2Vec averages a float16 table in float16; the same rows in float32 are the exact mean
    ref32 = StaticModel(
        rows.astype(np.float32),
        tokenizer.__class__.from_str(tokenizer.to_str()),
        weights=weights,
        token_mapping=mapping,
    )
    assert np.abs(ours - ref32.encode(sts_sentences)).max() <= 1e-6
    theirs16 = ref.encode(sts_sentences).astype(np.float32)
    assert np.abs(ours - theirs16).max() <= 2e-3 * np.abs(theirs16).max()


def test_long_text_truncated_as_model2vec_with_a_warning(m2v_dir):
    from model2vec import StaticModel

    ref = StaticModel.from_pretrained(m2v_dir)
    enc = StaticEncoder.from_model2vec(m2v_dir)
    long_words = " ".join(["word", "another", "unbelievably"] * 400)  # > 512 tokens
    long_chars = "x" * 5000  # cut at max_length * median token length characters first
    texts = [long_words, long_chars, "short one"]
    with pytest.warns(TruncationWarning, match="2 of 3"):
        ours = enc.encode(texts)
    assert np.abs(ours - ref.encode(texts)).max() <= 1e-6


def test_chunk_cache_gives_the_tokenizers_ids(tokenizer, sts_sentences, odd_texts, tmp_path):
    """The cache path (split on spaces, tokenize each distinct chunk once) equals tokenizing
    whole texts, on STS, the corpus sample and odd texts; and encode agrees both ways."""
    from sentvec._data import data_dir

    assert chunk_separable(tokenizer)
    sample = data_dir() / "corpus" / "enwiki-2015-sentences-sample10k.txt"
    corpus = sample.read_text(encoding="utf-8").splitlines()[:3000] if sample.is_file() else []
    texts = sts_sentences + corpus + odd_texts
    enc = StaticEncoder(_rows(tokenizer.get_vocab_size()), tokenizer, max_length=None)
    assert enc._separable
    whole = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    got = enc.tokenize(texts)
    expected = [[t for t in ids if t != enc.unk_id] for ids in whole]
    assert got == expected
    plain = StaticEncoder(_rows(tokenizer.get_vocab_size()), tokenizer, max_length=None)
    plain._separable = False
    assert np.array_equal(_quiet_encode(enc, texts), _quiet_encode(plain, texts))


def test_chunk_separable_refuses_what_it_cannot_prove(tokenizer):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    t = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    assert not chunk_separable(t)  # no pre-tokenizer: the whole text is one word
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    assert chunk_separable(t)
    t.normalizer = normalizers.Replace(" ", "_")
    assert not chunk_separable(t)
    t.normalizer = None
    t.pre_tokenizer = pre_tokenizers.Metaspace()
    assert not chunk_separable(t)
    t.pre_tokenizer = pre_tokenizers.ByteLevel()
    assert not chunk_separable(t)


def test_save_is_model2vec_format_read_by_model2vec_and_sentence_transformers(
    m2v_dir, tmp_path, sts_sentences
):
    from model2vec import StaticModel

    enc = StaticEncoder.from_model2vec(m2v_dir)
    mask = os.umask(0o022)
    try:
        enc.save(tmp_path / "copy")
    finally:
        os.umask(mask)
    # every file readable as any written file is (safetensors' save_file makes 0600)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "copy").rglob("*")}
    assert modes == {p.name: 0o755 if p.is_dir() else 0o644 for p in (tmp_path / "copy").rglob("*")}
    assert "model.safetensors" in modes
    again = load_encoder(tmp_path / "copy")
    texts = sts_sentences[:300]
    ours = _quiet_encode(enc, texts)
    assert np.array_equal(ours, _quiet_encode(again, texts))
    assert np.abs(StaticModel.from_pretrained(tmp_path / "copy").encode(texts) - ours).max() <= 1e-6
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(tmp_path / "copy"), device="cpu")
    # StaticEmbedding averages the unknown token too: equal on texts without one
    known = [t for t in texts if enc.unk_id not in enc.tokenize([t])[0]]
    theirs = model.encode(known)
    assert np.abs(theirs - _quiet_encode(enc, known)).max() <= 1e-6


def test_pickle_keeps_vectors_not_the_cache(m2v_dir, sts_sentences):
    enc = StaticEncoder.from_model2vec(m2v_dir)
    before = _quiet_encode(enc, sts_sentences[:200])
    assert enc._chunks
    copy = pickle.loads(pickle.dumps(enc))
    assert not copy._chunks
    assert np.array_equal(_quiet_encode(copy, sts_sentences[:200]), before)


# ---------------------------------------------------------------------- sentence-transformers


@pytest.mark.parametrize("normalize", [False, True])
def test_static_embedding_dir_equals_sentence_transformers(
    tmp_path, tokenizer, sts_sentences, odd_texts, normalize
):
    st = pytest.importorskip("sentence_transformers")
    with warnings.catch_warnings():  # the old import path, deprecated in 6.x
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers.models import Normalize, StaticEmbedding

    tok = tokenizer.__class__.from_str(tokenizer.to_str())
    mods = [StaticEmbedding(tok, embedding_weights=_rows(tok.get_vocab_size(), seed=3))]
    if normalize:
        mods.append(Normalize())
    model = st.SentenceTransformer(modules=mods, device="cpu")
    model.save(str(tmp_path / "st"))
    enc = load_encoder(tmp_path / "st")
    assert isinstance(enc, StaticEncoder) and enc.normalize is normalize
    assert not enc.drop_unknown
    texts = sts_sentences + [t for t in odd_texts if t.strip()]
    ours = _quiet_encode(enc, texts)
    assert np.abs(ours - model.encode(texts)).max() <= 1e-6


# ---------------------------------------------------------------------- bad input


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_missing_tokenizer_names_the_file(m2v_dir, tmp_path):
    d = _copy(m2v_dir, tmp_path / "m")
    (d / "tokenizer.json").unlink()
    with pytest.raises(ModelFormatError, match="tokenizer.json"):
        load_encoder(d)


def test_mismatched_tokenizer_names_the_file(m2v_dir, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    d = _copy(m2v_dir, tmp_path / "m")
    big = {f"w{i}": i for i in range(40000)}
    big["[UNK]"] = 40000
    t = Tokenizer(models.WordLevel(big, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.save(str(d / "tokenizer.json"))
    with pytest.raises(ModelFormatError, match=r"tokenizer\.json.*40001 tokens.*30522 rows"):
        load_encoder(d)


def test_unknown_tokenizer_type_names_the_file(m2v_dir, tmp_path):
    d = _copy(m2v_dir, tmp_path / "m")
    spec = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["type"] = "NoSuchModel"
    (d / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ModelFormatError, match="tokenizer.json.*not a readable tokenizer"):
        load_encoder(d)


@pytest.mark.parametrize(
    "table, message",
    [
        (np.zeros(30522, np.float32), "2-D"),
        (np.zeros((30522, 4), np.int32), "float32 or float16"),
        (np.full((30522, 4), np.nan, np.float32), "NaN or infinity in 30522 rows"),
    ],
)
def test_bad_embeddings_name_the_file(m2v_dir, tmp_path, table, message):
    from safetensors.numpy import save_file

    d = _copy(m2v_dir, tmp_path / "m")
    save_file({"embeddings": table}, str(d / "model.safetensors"))
    with pytest.raises(ModelFormatError, match=rf"model\.safetensors.*{message}"):
        load_encoder(d)


def test_nan_in_one_row_and_corrupt_safetensors(m2v_dir, tmp_path):
    from safetensors.numpy import load_file, save_file

    d = _copy(m2v_dir, tmp_path / "m")
    t = load_file(str(d / "model.safetensors"))
    t["embeddings"][1234, 3] = np.nan
    save_file(t, str(d / "model.safetensors"))
    with pytest.raises(ModelFormatError, match=r"model\.safetensors.*1 rows \(first: row 1234\)"):
        load_encoder(d)
    (d / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(ModelFormatError, match=r"model\.safetensors.*not a readable"):
        StaticEncoder.from_model2vec(d)


# ---------------------------------------------------------------------- sentvec paths


def test_pipeline_with_static_encoder_round_trips(m2v_dir, tmp_path, sts_sentences):
    from sentvec import Pipeline, Whitening

    enc = load_encoder(m2v_dir)
    X = _quiet_encode(enc, sts_sentences)
    pipe = Pipeline(enc, Whitening(16).fit(X))
    pipe.save(tmp_path / "pipe")
    cfg = json.loads((tmp_path / "pipe" / "pipeline.json").read_text(encoding="utf-8"))
    assert cfg["encoder"]["type"] == "static"
    again = load_encoder(tmp_path / "pipe")
    texts = sts_sentences[:100]
    a, b = _quiet_encode(pipe, texts), _quiet_encode(again, texts)
    assert a.shape == (100, 16) and np.array_equal(a, b)
    # the whitening is (x - mu) U D^-1/2, computed here in numpy from the same vectors
    mu = X.astype(np.float64).mean(0)
    U, S, _ = np.linalg.svd(np.cov((X - mu).T, bias=True))
    W = U[:, :16] / np.sqrt(S[:16])
    ref = (_quiet_encode(enc, texts) - mu) @ W
    assert np.abs(np.abs(a) - np.abs(ref)).max() < 1e-3


def test_evaluate_sts_and_search_take_a_static_encoder(m2v_dir, tmp_path):
    from _helpers import small_sts_dir

    from sentvec import SemanticSearch, evaluate_sts, load_sts

    enc = load_encoder(m2v_dir)
    tasks = load_sts(
        ["sts13", "stsb"], data_dir=small_sts_dir(tmp_path, sts13_lines=40, stsb_lines=60)
    )
    res = evaluate_sts(enc, tasks)
    assert set(res.task_scores) == {"STS13", "STSBenchmark"}
    assert all(np.isfinite(v) for v in res.task_scores.values())
    docs = ["a cat sits on the mat", "stock markets fell sharply", "the kitten is on the rug"]
    search = SemanticSearch(encoder=enc)
    search.add_texts(docs)
    scores, ids = search.search_texts(["stock markets fell sharply"], k=1)
    assert ids[0, 0] == 1 and abs(scores[0, 0] - 1.0) < 1e-5


# ---------------------------------------------------------------------- WordLlama


@pytest.mark.parametrize("trunc_dim", [None, 128, 64])
def test_wordllama_equals_its_own_embed(sts_sentences, odd_texts, trunc_dim):
    wordllama = pytest.importorskip("wordllama")
    from pathlib import Path

    # its wheel ships weights/ and tokenizers/; cache_dir= the package folder finds both
    package = Path(wordllama.__file__).resolve().parent
    ref = wordllama.WordLlama.load(
        "l2_supercat", cache_dir=package, disable_download=True, trunc_dim=trunc_dim
    )
    from wordllama.config.models import WordLlamaModels

    from sentvec.encoders.static_loaders import WORDLLAMA_FILES

    uri = WordLlamaModels.l2_supercat  # sentvec reads its files without importing wordllama
    assert WORDLLAMA_FILES["l2_supercat"] == (uri.tokenizer_config, uri.tensor_key)
    name = "wordllama" if trunc_dim is None else f"wordllama-{trunc_dim}"
    enc = load_encoder(name)
    assert isinstance(enc, StaticEncoder) and enc.dim == (trunc_dim or 256)
    texts = sts_sentences + [t for t in odd_texts if t]
    ours = _quiet_encode(enc, texts)
    theirs = ref.embed(texts)
    assert np.abs(ours - theirs).max() <= 1e-6 * max(1.0, float(np.abs(theirs).max()))
    assert (
        np.abs(_quiet_encode(enc, texts, normalize=True) - ref.embed(texts, norm=True)).max()
        <= 1e-6
    )


def _small_raw_sts(root, n: int = 50):
    """The first ``n`` lines of the raw STS13 subsets and STS-B test (static models read raw
    text)."""
    from sentvec._data import data_dir

    src = data_dir() / "raw" / "STS"
    for rel in [
        f"STS13-en-test/STS.{k}.{s}.txt"
        for k in ("input", "gs")
        for s in ("FNWN", "headlines", "OnWN")
    ] + ["STSBenchmark/sts-test.csv"]:
        dst = root / "raw" / "STS" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        lines = (src / rel).read_text(encoding="utf-8").splitlines(True)
        dst.write_text("".join(lines[:n]), encoding="utf-8")
    return root


def test_report_has_a_row_per_static_model(m2v_dir, tmp_path):
    from sentvec import load_sts, score_sts
    from sentvec.cli import main
    from sentvec.evaluation import unique_sentences

    data = _small_raw_sts(tmp_path / "data")
    out = tmp_path / "REPORT.md"
    args = ["report", "--models", "", "--static", f"{m2v_dir},wordllama-64", "--out", str(out)]
    assert main([*args, "--data", str(data), "--tasks", "sts13,stsb", "--quiet"]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    for name in ("model", "wordllama-64"):
        # without and with per-year whitening, in each of the three aggregation tables and the
        # side-by-side table
        assert sum(x.startswith(f"| Static ({name}) |") for x in lines) == 4 * 2
    enc = load_encoder(m2v_dir)
    tasks = load_sts(["sts13", "stsb"], data_dir=data, variant=enc.preferred_text_variant)
    sents = unique_sentences(tasks)
    avg = score_sts(tasks, sents, _quiet_encode(enc, sents)).average
    mean_table = "\n".join(lines).split("## Aggregation `mean`")[1].split("## Aggregation")[0]
    row = next(x for x in mean_table.splitlines() if x.startswith("| Static (model) |"))
    assert row.rstrip(" |").split("| ")[-1].strip() == f"{avg:.2f}"


def test_encode_file_and_dask_cluster_take_a_static_model(m2v_dir, tmp_path):
    distributed = pytest.importorskip("distributed")  # noqa: F841
    from sentvec._data import data_dir
    from sentvec.cluster import encode_file_distributed, local_client
    from sentvec.encode_files import encode_file, load_embeddings

    lines = (
        (data_dir() / "corpus" / "enwiki-2015-sentences-sample10k.txt")
        .read_text(encoding="utf-8")
        .splitlines()[:3000]
    )
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    enc = load_encoder(m2v_dir)
    encode_file(enc, corpus, tmp_path / "single", shard_size=1000, show_progress_bar=False)
    X = load_embeddings(tmp_path / "single", mmap=False)
    assert np.array_equal(X, _quiet_encode(enc, lines))
    with local_client(2, dashboard_address=None) as client:
        encode_file_distributed(str(m2v_dir), corpus, tmp_path / "dask", client, shard_size=1000)
    assert np.array_equal(load_embeddings(tmp_path / "dask", mmap=False), X)


def test_bad_weights_and_mapping_name_the_file(m2v_dir, tmp_path):
    from safetensors.numpy import load_file, save_file

    d = _copy(m2v_dir, tmp_path / "m")
    t = load_file(str(d / "model.safetensors"))
    save_file({**t, "weights": np.ones(10, np.float32)}, str(d / "model.safetensors"))
    with pytest.raises(ModelFormatError, match=r"model\.safetensors.*weights must be a 1-D"):
        load_encoder(d)
    save_file({**t, "mapping": np.full(30522, 40000, np.int64)}, str(d / "model.safetensors"))
    with pytest.raises(ModelFormatError, match=r"model\.safetensors.*mapping points outside"):
        load_encoder(d)
