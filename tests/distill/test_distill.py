"""sentvec.distill: token rows, weights, whitening folded into rows, the Model2Vec directory.

Oracles: a plain transformers transcription of Model2Vec's token-row step, numpy
transcriptions of SIF / uSIF / Zipf / WhiteningBERT Eq. 1, and Model2Vec's own loader.
The teacher is a 2-layer slice of MiniLM with a 3,000-entry slice of its WordPiece vocabulary
(a forward pass over 3k tokens, not 30k), so the whole file runs in seconds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sentvec._io import _umask  # noqa: E402
from sentvec.distill import (  # noqa: E402
    DISTILL_RECORD,
    distill,
    fit_rows,
    pca_rows,
    token_rows,
    token_weights,
    whiten_token_rows,
    zipf_weights,
)
from sentvec.distill.corpus import count_corpus_tokens  # noqa: E402
from sentvec.encoders import bfloat16_is_fast, resolve_precision  # noqa: E402

N_VOCAB = 3000  # [PAD], [unused*], specials, characters, then the most frequent words

CORPUS = [
    "the cat sat on the mat .",
    "a dog ran in the park and the cat slept .",
    "",
    "   ",
    "it was the best of times , it was the worst of times .",
    "the man and the woman were in the house .",
    "he said that she would go to the city on monday .",
    "there are 2 or 3 of them in the room .",
    "the cat slept on the mattress , the dog slept in the doghouse .",
    "the worst catnap : a caterpillar slept on a mattress on sunday .",
    "the doghouse and the mattress were the worst .",
]
_WORDS = "the a cat dog man woman city house park was is in on and of to he she it ran sat".split()
_rng = np.random.default_rng(7)
CORPUS += [" ".join(_rng.choice(_WORDS, size=int(_rng.integers(3, 12)))) for _ in range(300)]


@pytest.fixture(scope="module")
def small_teacher(tiny_minilm, tmp_path_factory):
    """The 2-layer MiniLM with a tokenizer over the first N_VOCAB entries of its vocabulary,
    last layer, mean pooling (Model2Vec's token rows)."""
    from transformers import PreTrainedTokenizerFast

    cfg = json.loads((Path(tiny_minilm.name_or_path) / "tokenizer.json").read_text("utf-8"))
    vocab = {t: i for t, i in cfg["model"]["vocab"].items() if i < N_VOCAB}
    for w in ("cat", "dog", "mat", "park", "house", "city", "monday"):
        vocab.setdefault(w, len(vocab))
    cfg["model"]["vocab"] = vocab
    root = tmp_path_factory.mktemp("small-vocab")
    (root / "tokenizer.json").write_text(json.dumps(cfg), encoding="utf-8")
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(root / "tokenizer.json"),
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
    )
    from sentvec.encoders import TransformerEncoder

    return TransformerEncoder(tiny_minilm.model, tok, layers=(-1,), device="cpu")


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    return path


def test_token_rows_equal_a_plain_transformers_transcription(small_teacher):
    ids = [[1996], [1012], [2003], [4937, 2003]]  # the . is, and a two-token entry
    model, tok = small_teacher.model, small_teacher.tokenizer
    expected = []
    with torch.no_grad():
        for x in ids:
            inp = torch.tensor([[tok.cls_token_id, *x, tok.sep_token_id]])
            out = model(input_ids=inp, attention_mask=torch.ones_like(inp))
            expected.append(out.last_hidden_state[0].mean(0).numpy())  # Model2Vec's mean
    got = token_rows(small_teacher, ids, batch_size=3, precision="float32")
    np.testing.assert_allclose(got, np.stack(expected), atol=2e-5)
    # bfloat16 products (autocast): the same rows to bfloat16's precision, whatever the CPU
    bf = token_rows(small_teacher, ids, batch_size=3, precision="bfloat16")
    cos = (bf * got).sum(1) / np.linalg.norm(bf, axis=1) / np.linalg.norm(got, axis=1)
    assert cos.min() > 0.999 and not np.array_equal(bf, got)
    auto = token_rows(small_teacher, ids, batch_size=3)
    fast = bfloat16_is_fast("cpu")
    np.testing.assert_array_equal(auto, bf if fast else got)
    assert resolve_precision("auto", "cpu") == ("bfloat16" if fast else "float32")
    with pytest.raises(ValueError, match="precision"):
        token_rows(small_teacher, ids, precision="float16")


def _last_hidden_states(teacher, ids):
    """The teacher's last layer over ``[CLS] x [SEP]`` for each ``x`` of ``ids``, one at a time
    (the model's own forward pass, not token_rows' batching)."""
    model, tok = teacher.model, teacher.tokenizer
    with torch.no_grad():
        for x in ids:
            inp = torch.tensor([[tok.cls_token_id, *x, tok.sep_token_id]])
            yield model(input_ids=inp, attention_mask=torch.ones_like(inp)).last_hidden_state[0]


def test_token_rows_mean_cls_is_the_average_of_the_mean_and_the_cls_output(small_teacher):
    ids = [[1996], [2003, 1037, 4937]]
    expected = [((h.mean(0) + h[0]) / 2).numpy() for h in _last_hidden_states(small_teacher, ids)]
    got = token_rows(small_teacher, ids, batch_size=2, precision="float32", pooling="mean_cls")
    np.testing.assert_allclose(got, np.stack(expected), atol=2e-5)
    # the [CLS] output alone, and the encoder's own pooling (mean) by default
    cls = token_rows(small_teacher, ids, precision="float32", pooling="cls")
    mean = token_rows(small_teacher, ids, precision="float32")
    np.testing.assert_allclose((cls + mean) / 2, got, atol=1e-6)
    assert np.abs(cls - mean).max() > 1e-2
    with pytest.raises(ValueError, match="pooling"):
        token_rows(small_teacher, ids, pooling="first")


def test_token_rows_mean_cls_unit_averages_the_unit_mean_and_cls_outputs(small_teacher):
    # numpy transcription of (mean / ||mean|| + cls / ||cls||) / 2 over the last layer of
    # [CLS] ids [SEP], from the model's own outputs (not token_rows' pooling code)
    ids = [[1996], [2003, 1037, 4937], [4937, 2003]]
    expected = []
    for h in _last_hidden_states(small_teacher, ids):
        m, c = h.numpy().astype(np.float64).mean(0), h[0].numpy().astype(np.float64)
        expected.append((m / np.linalg.norm(m) + c / np.linalg.norm(c)) / 2)
    got = token_rows(small_teacher, ids, batch_size=2, precision="float32", pooling="mean_cls_unit")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.stack(expected), atol=2e-6)
    # not the plain average: the two poolings' norms differ on this teacher
    plain = token_rows(small_teacher, ids, precision="float32", pooling="mean_cls")
    assert np.abs(plain - got).max() > 1e-2
    # the norm of an average of two unit vectors is at most 1, and 1 only if they agree
    assert (np.linalg.norm(got, axis=1) <= 1 + 1e-6).all()


def test_distill_default_pooling_is_mean_cls_unit():
    from sentvec.cli import build_parser
    from sentvec.distill import DEFAULT_ROW_POOLING, ROW_POOLINGS

    assert DEFAULT_ROW_POOLING == "mean_cls_unit" and "mean_cls" in ROW_POOLINGS
    assert build_parser().parse_args(["distill", "--output", "o"]).weighting == "sif"
    assert build_parser().parse_args(["distill", "--output", "o"]).pooling == "mean_cls_unit"
    assert (
        build_parser().parse_args(["distill", "--output", "o", "--pooling", "mean_cls"]).pooling
        == "mean_cls"
    )


def test_token_rows_average_the_chosen_layers(small_teacher):
    two = small_teacher.with_options(layers=(1, -1))
    model, tok = two.model, two.tokenizer
    inp = torch.tensor([[tok.cls_token_id, 1996, tok.sep_token_id]])
    with torch.no_grad():
        hs = model(input_ids=inp, output_hidden_states=True).hidden_states
    expected = ((hs[1][0] + hs[-1][0]) / 2).mean(0).numpy()
    got = token_rows(two, [[1996]], precision="float32")[0]
    np.testing.assert_allclose(got, expected, atol=2e-5)
    with pytest.raises(ValueError, match="at least one token"):
        token_rows(two, [[]])


def test_corpus_counts_are_the_tokenizers_counts(small_teacher, corpus_file):
    tok = small_teacher.tokenizer
    stats = count_corpus_tokens(tok, corpus_file, max_sentences=None, sample_sentences=3)
    lines = [s.strip() for s in CORPUS if s.strip()]
    expected = np.zeros(len(tok), np.int64)
    for s in lines:
        np.add.at(expected, tok(s, add_special_tokens=False)["input_ids"], 1)
    np.testing.assert_array_equal(stats.counts, expected)
    assert stats.n_sentences == len(lines)
    assert [list(x) for x in stats.sample] == [
        tok(s, add_special_tokens=False)["input_ids"] for s in lines[:3]
    ]
    assert count_corpus_tokens(tok, corpus_file, max_sentences=2).n_sentences == 2
    # a tokenizer.json that pads and truncates (as MiniLM's: 128) must not change anything
    from tokenizers import Tokenizer

    padded = Tokenizer.from_str(tok.backend_tokenizer.to_str())
    padded.enable_padding(length=16)
    padded.enable_truncation(max_length=4)
    again = count_corpus_tokens(padded, corpus_file, max_sentences=None, sample_sentences=3)
    np.testing.assert_array_equal(again.counts, expected)
    assert [list(x) for x in again.sample] == [list(x) for x in stats.sample]


def test_weights_are_the_papers_formulas():
    counts = np.array([0, 50, 30, 15, 5, 0], np.int64)
    keep = np.array([True, True, True, True, True, False])
    p = counts / counts.sum()
    w, params = token_weights("sif", counts, keep, sif_a=0.01)
    np.testing.assert_allclose(w[:5], 0.01 / (0.01 + p[:5]))
    assert w[5] == 0 and params == {"a": 0.01}
    w, params = token_weights("usif", counts, keep, usif_n=2)
    V, a_n = 4.0, 2  # uSIF: V = words with a count; a = (1 - alpha) / (alpha V / 2)
    alpha = float((p[p > 0] > 1 - (1 - 1 / V) ** a_n).sum()) / V
    a = (1 - alpha) / (alpha * V / 2)
    pm = np.where(p > 0, p, p[p > 0].min())
    np.testing.assert_allclose(w[:5], a / (a / 2 + pm[:5]))
    assert params["a"] == pytest.approx(a)
    z = 1 / np.arange(2, 7)
    np.testing.assert_allclose(zipf_weights(5), 1e-4 / (1e-4 + z / z.sum()))
    w, params = token_weights("zipf", None, keep, sif_a=1e-4)
    np.testing.assert_allclose(w[:5], zipf_weights(5))
    assert w[5] == 0 and params == {"a": 1e-4}
    with pytest.raises(ValueError, match="corpus"):
        token_weights("sif", None, keep)


def test_whitening_folded_into_rows_is_eq1_of_the_sentence_vectors():
    rng = np.random.default_rng(0)
    R = rng.normal(size=(40, 6))
    sample = [rng.integers(0, 40, size=rng.integers(1, 9)) for _ in range(300)]
    rows, w = whiten_token_rows(R, sample, 4)
    X = np.stack([R[s].mean(0) for s in sample])
    mu = X.mean(0)
    vals, vecs = np.linalg.eigh((X - mu).T @ (X - mu) / len(X))
    W = vecs[:, ::-1][:, :4] / np.sqrt(vals[::-1][:4])
    new = [rng.integers(0, 40, size=5) for _ in range(10)]
    static = np.stack([rows[s].mean(0) for s in new])  # what a static model computes
    expected = np.stack([(R[s].mean(0) - mu) @ W for s in new])
    np.testing.assert_allclose(np.abs(static), np.abs(expected), atol=1e-4)  # up to signs
    Z = np.stack([rows[s].mean(0) for s in sample])
    np.testing.assert_allclose(np.cov(Z.T, bias=True), np.eye(4), atol=1e-4)


def test_fit_rows_usif_scales_rows_to_unit_norm_whitens_then_weights():
    # the default weighting: Ethayarajh's unit-norm rows, WhiteningBERT's Eq. 1 on the static
    # sentence vectors of those rows, then a / (a/2 + p) per row; rows not kept are zero
    rng = np.random.default_rng(1)
    R = rng.normal(size=(30, 6)) * rng.uniform(0.5, 3.0, size=(30, 1))
    keep = np.ones(30, bool)
    keep[-2:] = False
    # token 0 in every sentence, 3 times: uSIF's a needs a word with p > 1 - (1 - 1/V)^n
    sample = [np.r_[0, 0, 0, rng.integers(1, 28, size=rng.integers(1, 6))] for _ in range(400)]
    counts = np.bincount(np.concatenate(sample), minlength=30)
    emb, params = fit_rows(
        R, keep, dim=4, weighting="usif", whiten="corpus", counts=counts, sample=sample
    )
    U = R / np.linalg.norm(R, axis=1, keepdims=True)
    X = np.stack([U[s].mean(0) for s in sample])
    mu = X.mean(0)
    vals, vecs = np.linalg.eigh((X - mu).T @ (X - mu) / len(X))
    W = vecs[:, ::-1][:, :4] / np.sqrt(vals[::-1][:4])
    p = np.where(keep, counts, 0) / np.where(keep, counts, 0).sum()
    a = params["a"]
    w = a / (a / 2 + np.maximum(p, p[p > 0].min()))
    expected = ((U - mu) @ W) * w[:, None]
    expected[~keep] = 0
    np.testing.assert_allclose(np.abs(emb), np.abs(expected), rtol=1e-3, atol=1e-4)  # signs
    # the unit-norm step matters: the same steps on the raw rows give other rows
    raw, _ = whiten_token_rows(R, sample, 4)
    assert not np.allclose(np.abs(emb), np.abs(raw * w[:, None]), rtol=1e-2, atol=1e-2)


def test_usif_on_a_tiny_corpus_says_what_to_do(small_teacher, corpus_file):
    # uSIF's a needs a token with p > 1 - (1 - 1/V)^n
    with pytest.raises(ValueError, match=r"uSIF's a is undefined.*larger corpus.*weighting='sif'"):
        distill(
            small_teacher, None, corpus=corpus_file, dim=8, weighting="usif",
            show_progress_bar=False,
        )  # fmt: skip
    # the defaults weight by SIF (a = 5e-3), defined on any corpus
    r = distill(small_teacher, None, corpus=corpus_file, dim=8, show_progress_bar=False)
    assert r.record["settings"]["weighting"] == "sif" and r.record["weights"] == {"a": 5e-3}


def test_pca_rows_are_model2vecs_pca():
    # Model2Vec (model2vec.distill.inference._pca_fit_transform, not importable without its
    # [distill] extra): centred scores on the top-k principal axes, each column's sign making
    # its largest-magnitude score positive; transcribed here through an SVD
    X = np.random.default_rng(1).normal(size=(200, 10)) * np.arange(1, 11)
    Xc = X - X.mean(0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    S = Xc @ Vt[:4].T
    S *= np.sign(S[np.argmax(np.abs(S), axis=0), np.arange(4)])
    np.testing.assert_allclose(pca_rows(X, 4), S, atol=1e-4)


def test_distilled_directory_loads_in_model2vec_and_sentence_transformers(
    small_teacher, corpus_file, tmp_path
):
    model2vec = pytest.importorskip("model2vec")
    out = tmp_path / "static"
    result = distill(
        small_teacher,
        out,
        corpus=corpus_file,
        dim=8,
        weighting="sif",
        vocabulary="teacher",
        show_progress_bar=False,
    )
    rec = json.loads((out / DISTILL_RECORD).read_text())
    assert rec["settings"]["weighting"] == "sif" and rec["settings"]["whiten"] == "corpus"
    config = json.loads((out / "config.json").read_text())["sentvec_distill"]
    assert config["pooling"] == rec["settings"]["pooling"] and config["weighting"] == "sif"
    assert rec["corpus"]["sentences_counted"] == sum(1 for s in CORPUS if s.strip())
    assert rec["wall_time_s"]["total_s"] > 0
    card = (out / "README.md").read_text()
    assert "Distill record" in card and "library_name: model2vec" in card
    m = model2vec.StaticModel.from_pretrained(out)
    assert m.embedding.dtype == np.float16 and m.embedding.shape == (
        len(small_teacher.tokenizer),
        8,
    )
    np.testing.assert_array_equal(m.embedding, result.embeddings.astype(np.float16))
    sents = ["the cat sat on the mat .", "a dog in the city ."]
    ids = [small_teacher.tokenizer(s, add_special_tokens=False)["input_ids"] for s in sents]
    E = result.embeddings.astype(np.float16).astype(np.float32)
    expected = np.stack([E[i].mean(0) for i in ids])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(m.encode(sents), expected, atol=2e-3)
    from sentvec import load_encoder

    ours = load_encoder(str(out))
    assert type(ours).__name__ == "StaticEncoder"
    np.testing.assert_allclose(ours.encode(sents), expected, atol=1e-5)  # float32 sums
    np.testing.assert_allclose(ours.encode(sents), m.encode(sents), atol=1e-3)  # theirs: fp16
    st_modules = pytest.importorskip("sentence_transformers.sentence_transformer.modules")
    emb = st_modules.StaticEmbedding.from_model2vec(str(out))
    np.testing.assert_allclose(emb.embedding.weight.detach().numpy(), E, atol=1e-6)
    # the unknown token's row is zero: sentence-transformers averages it in, sentvec and
    # Model2Vec drop it, and all three give a text with an unknown token one direction
    unk = small_teacher.tokenizer.unk_token_id
    assert rec["unknown_token_row"] == "zero" and not E[unk].any()
    text = "the cat \u2603\U0001f600 sat ."
    tok_ids = small_teacher.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert unk in tok_ids
    with_unk = E[tok_ids].mean(0)  # what an average over every id (StaticEmbedding's) gives
    with_unk /= np.linalg.norm(with_unk)
    np.testing.assert_allclose(ours.encode([text])[0], with_unk, atol=1e-5)
    np.testing.assert_allclose(m.encode([text])[0], with_unk, atol=2e-3)


def test_pca_path_and_bad_input(small_teacher, corpus_file, tmp_path):
    r = distill(
        small_teacher,
        None,
        weighting="zipf",
        whiten="none",
        vocabulary="teacher",
        dim=8,
        show_progress_bar=False,
    )
    assert r.embeddings.shape[1] == 8 and r.record["corpus"] is None
    # no corpus where one is needed: the packaged sample, as the CLI without --corpus
    from sentvec._data import corpus_sample_path

    r = distill(small_teacher, None, weighting="sif", dim=8, show_progress_bar=False)
    assert r.record["corpus"]["path"] == os.path.abspath(corpus_sample_path())
    assert r.record["corpus"]["sentences_counted"] == 10_000
    with pytest.raises(ValueError, match="input"):
        distill(small_teacher, corpus_file.parent, corpus=corpus_file)
    with pytest.raises(FileNotFoundError):
        distill(small_teacher, None, corpus=tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="dim"):
        distill(
            small_teacher, None, weighting="zipf", whiten="none", dim=1000, vocabulary="teacher"
        )
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "other.txt").write_text("x")
    with pytest.raises((FileExistsError, ValueError)):
        distill(
            small_teacher, tmp_path / "taken", weighting="zipf", whiten="none", dim=8,
            vocabulary="teacher",
        )  # fmt: skip
    with pytest.raises(ValueError, match="corpus:N"):
        distill(small_teacher, None, corpus=corpus_file, vocabulary="corpus:x")


def test_cli_refuses_an_output_that_is_an_input_before_any_work(corpus_file, capsys):
    from sentvec.cli import main

    rc = main(
        [
            "distill",
            "--model",
            "minilm",
            "--corpus",
            str(corpus_file),
            "--output",
            str(corpus_file.parent),
        ]
    )
    assert rc == 2
    assert "is a directory that holds corpus" in capsys.readouterr().err
    rc = main(
        [
            "distill",
            "--output",
            str(corpus_file.parent / "x"),
            "--corpus",
            str(corpus_file.parent / "none.txt"),
        ]
    )
    assert rc == 2
    assert "not found" in capsys.readouterr().err


# ---------------------------------------------------------------- corpus words and bigrams
def _word_pieces(tok, word):
    return tok(word, add_special_tokens=False)["input_ids"]


def test_corpus_words_are_the_most_frequent_split_words(small_teacher):
    from sentvec.distill.vocabulary import corpus_words

    tok = small_teacher.tokenizer
    vocab = tok.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    lines = [s for s in CORPUS if s.strip()]
    sample = [np.asarray(tok(s, add_special_tokens=False)["input_ids"]) for s in lines]
    got = corpus_words(sample, tokens, 5, skip_ids=[tok.unk_token_id])
    # oracle: split the text into BERT words and count those the tokenizer cuts into pieces
    from collections import Counter

    pre = tok.backend_tokenizer.pre_tokenizer
    norm = tok.backend_tokenizer.normalizer
    c: Counter = Counter()
    for s in lines:
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(s)):
            ids = _word_pieces(tok, w)
            if len(ids) > 1 and tok.unk_token_id not in ids:
                c[w] += 1
    expected = [(w, n) for w, n in c.most_common() if n >= c.most_common(5)[-1][1]]
    assert len(got) == 5
    for w, ids, n in got:
        assert (w, n) in expected
        assert list(ids) == _word_pieces(tok, w)
    assert [n for _, _, n in got] == sorted((n for _, _, n in got), reverse=True)


def test_retokenize_equals_tokenizing_the_lines_again(minilm_path):
    """The remap of the teacher's ids to the extended vocabulary against the oracle, the
    extended tokenizer run over the text: MiniLM's WordPiece on 4,000 lines of the packaged
    sample plus unknown-token words, literal special tokens, '#'s and a word over 100
    characters; and a small WordPiece where an added word turns an unknown word into pieces."""
    from tokenizers import Tokenizer

    from sentvec._data import corpus_sample_path
    from sentvec.distill.vocabulary import corpus_words, extend_wordpiece, retokenize

    tok = Tokenizer.from_file(str(Path(minilm_path) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    lines = corpus_sample_path().read_text("utf-8").splitlines()[:4000]
    lines += [
        "the mattress ☃snowman☃ and mattresses , unbelievably",
        "[SEP] worst-case caterpillars [MASK]",
        "##ing the " + "x" * 120 + " doghouses",
        "",
    ]
    vocab = tok.get_vocab(with_added_tokens=True)
    tokens = sorted(vocab, key=vocab.get)
    unk = vocab["[UNK]"]
    enc = tok.encode_batch_fast(lines, add_special_tokens=False)
    sample = [np.asarray(e.ids, dtype=np.int64) for e in enc]
    words = corpus_words(sample, tokens, 300, skip_ids=[unk])
    words_text = [w for w, _, _ in words] + ["mattress", "caterpillar", "snow", "unbelievab"]
    words_text = list(dict.fromkeys(w for w in words_text if w not in vocab))
    new = Tokenizer.from_str(json.dumps(extend_wordpiece(json.loads(tok.to_str()), words_text)))
    expected = [e.ids for e in new.encode_batch_fast(lines, add_special_tokens=False)]
    got = retokenize(sample, tokens, new, lines, unk_id=unk)
    assert [list(g) for g in got] == expected
    assert sum(len(g) for g in got) < sum(len(s) for s in sample)  # words became one token
    # an unknown word that an added word makes known: its line is tokenized again
    from tokenizers import models, normalizers, pre_tokenizers

    small = {"[UNK]": 0, "a": 1, "ab": 2, "##bc": 3, "##x": 4, "y": 5, "##y": 6}
    wp = Tokenizer(models.WordPiece(small, unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer()
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    text = ["y abcx abx", "abx y", "aby abcx"]
    ids = [np.asarray(e.ids) for e in wp.encode_batch(text)]
    assert [list(i) for i in ids] == [[5, 0, 2, 4], [2, 4, 5], [2, 6, 0]]
    more = Tokenizer.from_str(json.dumps(extend_wordpiece(json.loads(wp.to_str()), ["abc"])))
    got = retokenize(ids, sorted(small, key=small.get), more, text, unk_id=0)
    assert [list(g) for g in got] == [e.ids for e in more.encode_batch(text)]
    assert [list(g) for g in got] == [[5, 7, 4, 2, 4], [2, 4, 5], [2, 6, 7, 4]]


def test_word_token_cache_equals_tokenizing_each_line(minilm_path):
    """Each distinct whitespace word tokenized once, against the oracle: the tokenizer run over
    each line (MiniLM's tokenizer, 3,000 sample lines plus control characters, other Unicode
    whitespace, CJK, accents, literal special tokens, a word over 100 characters); and a
    tokenizer that is not BERT's goes line by line."""
    from tokenizers import Tokenizer, pre_tokenizers

    from sentvec._data import corpus_sample_path
    from sentvec.distill.corpus import WordTokenCache

    tok = Tokenizer.from_file(str(Path(minilm_path) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    lines = corpus_sample_path().read_text("utf-8").splitlines()[:3000]
    lines += [
        "a\x1cb c\x1fd e\x85f g\x0bh",  # str.split splits here, BERT deletes the character
        "tab\tand\u3000ideographic\u2028line\xa0nbsp \u200bzero width\u200b",
        "Caf\u00e9 \u00c9COLE na\u00efve \u4e2d\u6587\u5b57 x[SEP]y [MASK] [unused3]",
        "\u200b",
        "w" * 130 + " short",
        "the the the",
    ]
    expected = [e.ids for e in tok.encode_batch_fast(lines, add_special_tokens=False)]
    cache = WordTokenCache(tok)
    assert cache.by_word
    got = cache.encode(lines[:1500]) + cache.encode(lines[1500:])  # the cache carries over
    assert [list(g) for g in got] == expected
    other = Tokenizer.from_str(tok.to_str())
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    cache = WordTokenCache(other)
    assert not cache.by_word
    ref = [e.ids for e in other.encode_batch_fast(lines, add_special_tokens=False)]
    assert [list(g) for g in cache.encode(lines)] == ref


def test_extended_wordpiece_gives_each_added_word_one_token(small_teacher):
    from tokenizers import Tokenizer

    from sentvec.distill.vocabulary import extend_wordpiece, parse_vocabulary

    tok = small_teacher.tokenizer
    js = json.loads(tok.backend_tokenizer.to_str())
    V = len(tok)
    new = Tokenizer.from_str(json.dumps(extend_wordpiece(js, ["mattress", "slept"])))
    for w in ("mattress", "slept"):
        assert len(_word_pieces(tok, w)) > 1  # split by the teacher's vocabulary
    ids = new.encode("The cat SLEPT and mattress .", add_special_tokens=False).ids
    old = tok("The cat", add_special_tokens=False)["input_ids"]
    assert ids == [*old, V + 1, *_word_pieces(tok, "and"), V, *_word_pieces(tok, ".")]
    with pytest.raises(ValueError, match="already"):
        extend_wordpiece(js, ["the"])
    assert parse_vocabulary("teacher") == 0 and parse_vocabulary("corpus:7") == 7
    with pytest.raises(ValueError, match="corpus:N"):
        parse_vocabulary("corpus:0")


def test_corpus_bigrams_and_rows_are_a_plain_count():
    from collections import Counter

    from sentvec.distill.vocabulary import corpus_bigrams, with_bigram_rows

    rng = np.random.default_rng(3)
    sample = [rng.integers(0, 6, size=rng.integers(0, 9)) for _ in range(200)]
    pairs, counts = corpus_bigrams(sample, 4, exclude=[5])
    c = Counter(
        (int(a), int(b))
        for s in sample
        for a, b in zip(s[:-1], s[1:], strict=False)
        if 5 not in (a, b)
    )
    best = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
    assert [tuple(p) for p in pairs.tolist()] == [p for p, _ in best]
    assert counts.tolist() == [n for _, n in best]
    rows = with_bigram_rows(sample, pairs, 10)
    index = {tuple(p): 10 + j for j, p in enumerate(pairs.tolist())}
    for s, r in zip(sample, rows, strict=False):
        extra = [
            index[(int(a), int(b))] for a, b in zip(s[:-1], s[1:], strict=False) if (a, b) in index
        ]
        assert r.tolist() == s.tolist() + extra


def test_bigram_model_encodes_sent2vecs_mean_and_round_trips(small_teacher, corpus_file, tmp_path):
    from sentvec import load_encoder
    from sentvec.encoders import BigramStaticEncoder

    out = tmp_path / "bigram-model"
    res = distill(
        small_teacher,
        out,
        corpus=corpus_file,
        dim=8,
        vocabulary="corpus:5",
        bigrams=6,
        weighting="sif",  # uSIF's a is undefined on this tiny corpus
        dtype="float32",
        show_progress_bar=False,
    )
    rec = res.record
    assert rec["corpus_words"] == 5 and rec["bigram_rows"] == 6
    model = load_encoder(str(out))
    assert isinstance(model, BigramStaticEncoder)
    card = (out / "README.md").read_text(encoding="utf-8")  # not a Model2Vec directory: says so
    assert "library_name: sentvec" in card and "model2vec.StaticModel" not in card
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == {
        p.name: 0o666 & ~_umask() for p in out.iterdir()
    }
    assert model.n_tokens == len(small_teacher.tokenizer) + 5 and len(model.bigrams) == 6
    np.testing.assert_array_equal(model.embeddings, res.embeddings)
    np.testing.assert_array_equal(model.bigrams, res.bigrams)
    # numpy transcription of Sent2Vec's sentence vector: mean of unigram and listed bigram rows
    toks = [[model.tokenizer.id_to_token(int(i)) for i in p] for p in res.bigrams]
    a, b = next(t for t in toks if not any(x.startswith("##") for x in t))
    sents = [f"{a} {b} .", "the man and the woman were in the house .", "zzzq", ""]
    E = res.embeddings
    pairs = {tuple(p): model.n_tokens + j for j, p in enumerate(res.bigrams.tolist())}
    expected = []
    for s in sents:
        ids = [
            i
            for i in model.tokenizer.encode(s, add_special_tokens=False).ids
            if i != model.unigrams.unk_id
        ]
        rows = ids + [pairs[p] for p in zip(ids, ids[1:], strict=False) if p in pairs]
        v = E[rows].mean(0) if rows else np.zeros(E.shape[1])
        n = np.linalg.norm(v)
        expected.append(v / n if n else v)
    got = model.encode(sents)
    np.testing.assert_allclose(got, np.stack(expected), atol=1e-5)
    assert len(model.row_ids(sents)[0]) > len(model.unigrams.tokenize(sents[:1])[0])  # a bigram
    np.testing.assert_allclose(res.to_encoder().encode(sents), got, atol=1e-6)
    # the bigram rows, before whitening and weights: the teacher on [CLS] pieces(a) pieces(b) [SEP]
    raw = distill(
        small_teacher, None, corpus=corpus_file, dim=None, weighting="none", whiten="none",
        vocabulary="corpus:5", bigrams=6, bigram_weight=1.0, dtype="float32",
        precision="float32", show_progress_bar=False,
    )  # fmt: skip
    tok = small_teacher.tokenizer
    for j, (p, q) in enumerate(raw.bigrams.tolist()[:3]):
        text = " ".join(model.tokenizer.id_to_token(i) for i in (p, q)).replace(" ##", "")
        x = torch.tensor([[tok.cls_token_id, *_word_pieces(tok, text), tok.sep_token_id]])
        with torch.no_grad():
            ref = small_teacher.model(input_ids=x).last_hidden_state[0].mean(0).numpy()
        np.testing.assert_allclose(raw.embeddings[model.n_tokens + j], ref, atol=2e-5)
    # a corrupt file is refused with its name
    (out / "sentvec_bigrams.json").write_text("{}")
    from sentvec.exceptions import ModelFormatError

    with pytest.raises(ModelFormatError, match="sentvec_bigrams.json"):
        load_encoder(str(out))


def test_corpus_vocabulary_rows_are_the_teachers_word_vectors(small_teacher, corpus_file, tmp_path):
    pytest.importorskip("model2vec")
    res = distill(
        small_teacher,
        tmp_path / "vocab-model",
        corpus=corpus_file,
        dim=None,
        weighting="none",
        whiten="none",
        vocabulary="corpus:3",
        dtype="float32",
        precision="float32",
        show_progress_bar=False,
    )
    tok = small_teacher.tokenizer
    V = len(tok)
    words = json.loads(res.tokenizer_json)["model"]["vocab"]
    added = sorted((i, w) for w, i in words.items() if i >= V)
    assert len(added) == 3 and res.embeddings.shape[0] == V + 3
    # plain transformers transcription: mean of the last layer over [CLS] pieces [SEP]
    # (Model2Vec's rows for an added vocabulary), then Model2Vec's PCA is skipped (dim=None)
    model = small_teacher.model
    for i, w in added:
        x = torch.tensor([[tok.cls_token_id, *_word_pieces(tok, w), tok.sep_token_id]])
        with torch.no_grad():
            ref = model(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state[0].mean(0)
        np.testing.assert_allclose(res.embeddings[i], ref.numpy(), atol=2e-5)
    from model2vec import StaticModel

    from sentvec.encoders import StaticEncoder

    enc = res.to_encoder()
    assert isinstance(enc, StaticEncoder)
    m = StaticModel.from_pretrained(tmp_path / "vocab-model")  # Model2Vec's own loader
    assert m.tokenizer.encode(added[0][1], add_special_tokens=False).ids == [added[0][0]]
    s = [f"the {added[0][1]} and {added[1][1]} ."]
    np.testing.assert_allclose(m.encode(s), enc.encode(s), atol=1e-5)


def test_a_directory_as_corpus_is_named_as_one(small_teacher, tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        distill(small_teacher, tmp_path / "out", corpus=tmp_path, show_progress_bar=False)
    assert not (tmp_path / "out").exists()


def test_a_teacher_that_is_not_a_transformer_is_named_as_such(tmp_path):
    """A Sent2Vec .bin or a static model is not a teacher: the error says what it is, not that
    a transformer's files are damaged."""
    from pathlib import Path

    tiny = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-unigram.bin"
    with pytest.raises(ValueError, match="Sent2Vec .bin model, not a transformer"):
        distill(tiny, None, whiten="none", weighting="none", vocabulary="teacher")
    import numpy as np
    from tokenizers import Tokenizer

    from sentvec import StaticEncoder
    from sentvec.encoders import resolve_model

    tok = Tokenizer.from_file(str(Path(resolve_model("minilm")) / "tokenizer.json"))
    StaticEncoder(np.ones((tok.get_vocab_size(), 4), dtype=np.float32), tok).save(tmp_path / "m2v")
    with pytest.raises(ValueError, match="Model2Vec model directory, not a transformer"):
        distill(tmp_path / "m2v", None, whiten="none", weighting="none", vocabulary="teacher")
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    (tmp_path / "empty-dir").mkdir()
    for bad, why in ((empty, "an empty file"), (tmp_path / "empty-dir", "not a sentvec Sent2Vec")):
        with pytest.raises(ValueError, match=why):  # load_encoder's own message
            distill(bad, None, whiten="none", weighting="none", vocabulary="teacher")


@pytest.fixture(scope="module")
def teacher_dir(small_teacher, tmp_path_factory):
    """small_teacher saved as a Hugging Face directory (with its tokenizer.json)."""
    root = tmp_path_factory.mktemp("teacher-dir")
    small_teacher.model.save_pretrained(root)
    small_teacher.tokenizer.save_pretrained(root)
    return root


def test_corpus_pass_in_a_child_equals_the_pass_in_process(teacher_dir, corpus_file):
    from sentvec.distill.corpus import CorpusPassProcess, corpus_pass, teacher_vocabulary
    from sentvec.encoders import TransformerEncoder

    teacher = TransformerEncoder.from_pretrained(str(teacher_dir), layers=(-1,), device="cpu")
    vocabulary = teacher_vocabulary(teacher.tokenizer)
    count_kw = {"max_sentences": None, "sample_sentences": 50, "keep_lines": True}
    plan_kw = {"n_words": 4, "n_bigrams": 3}
    stats, plan, _ = corpus_pass(teacher.tokenizer, vocabulary, corpus_file, count_kw, plan_kw)
    child = CorpusPassProcess.start(teacher_dir, corpus_file, count_kw, plan_kw)
    assert child is not None
    try:
        got = child.result(vocabulary)
        assert got is not None
        c_stats, c_plan, times = got
        assert set(times) == {"corpus_count_s", "plan_rows_s"}
        np.testing.assert_array_equal(c_stats.counts, stats.counts)
        assert c_stats.n_sentences == stats.n_sentences
        for a, b in ((c_stats.sample, stats.sample), (c_plan.sample, plan.sample)):
            assert len(a) == len(b) and all(map(np.array_equal, a, b))
        assert c_plan.pieces == plan.pieces and c_plan.words == plan.words
        assert c_plan.tokenizer_json == plan.tokenizer_json
        np.testing.assert_array_equal(c_plan.pairs, plan.pairs)
        # a child whose tokenizer is not the loaded teacher's is not used
        tokens, keep, backend, unk_id = vocabulary
        assert child.result((tokens, keep, backend, (unk_id or 0) + 1)) is None
    finally:
        child.close()
    assert not Path(child.directory).exists()


def test_distill_from_a_directory_uses_the_child_and_gives_the_same_model(
    teacher_dir, corpus_file, tmp_path
):
    from sentvec.encoders import TransformerEncoder

    kw = {
        "corpus": corpus_file,
        "dim": 8,
        "vocabulary": "corpus:4",
        "weighting": "sif",  # uSIF's a is undefined on this tiny corpus
        "precision": "float32",
        "show_progress_bar": False,
    }
    by_path = distill(str(teacher_dir), tmp_path / "a", **kw)
    loaded = TransformerEncoder.from_pretrained(str(teacher_dir), layers=(-1,), device="cpu")
    # a loaded encoder's rows use its own pooling (mean) unless pooling is given
    assert distill(loaded, None, **kw).record["settings"]["pooling"] == "mean"
    in_process = distill(loaded, None, pooling="mean_cls_unit", **kw)
    assert by_path.record["settings"]["pooling"] == "mean_cls_unit"  # the defaults
    assert in_process.record["settings"]["pooling"] == "mean_cls_unit"
    assert by_path.record["corpus_pass"] == "child process"
    assert in_process.record["corpus_pass"] == "in process"
    assert "corpus_count_s" in by_path.record["wall_time_s"]
    assert by_path.tokenizer_json == in_process.tokenizer_json
    # the child's teacher rows run in one torch thread: equal up to float32 rounding
    np.testing.assert_allclose(by_path.embeddings, in_process.embeddings, atol=1e-4)
    # an empty corpus fails in the child; the error is the in-process pass's own
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="no token counted"):  # (whiten="corpus": refused first)
        distill(str(teacher_dir), None, **{**kw, "corpus": empty, "whiten": "none"})


def test_a_corpus_that_is_not_utf8_or_a_broken_xz_is_refused_with_its_name(small_teacher, tmp_path):
    import lzma

    tok = small_teacher.tokenizer
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("the cat .\ncaf\u00e9 au lait .\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt' line 2 is not valid UTF-8"):
        count_corpus_tokens(tok, latin1)
    whole = lzma.compress(("the cat sat on the mat .\n" * 2000).encode())
    truncated = tmp_path / "truncated.xz"
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="truncated.xz' cannot be decompressed"):
        count_corpus_tokens(tok, truncated)
    fake = tmp_path / "fake.xz"
    fake.write_text("the cat .\n", encoding="utf-8")
    with pytest.raises(ValueError, match="fake.xz' cannot be decompressed"):
        count_corpus_tokens(tok, fake)


def test_a_corpus_too_small_to_whiten_is_refused_before_the_teacher_works(
    teacher_dir, small_teacher, tmp_path, monkeypatch
):
    import sentvec.distill.run as distill_run
    from sentvec.encoders import TransformerEncoder

    def never(*args, **kwargs):
        raise AssertionError("the teacher was loaded or run before the corpus was checked")

    monkeypatch.setattr(TransformerEncoder, "from_pretrained", never)
    monkeypatch.setattr(distill_run, "token_rows", never)
    monkeypatch.setattr(distill_run, "rows_beside", never)
    one = tmp_path / "one.txt"
    one.write_text("\n  \nthe cat sat on the mat .\n\n", encoding="utf-8")
    kw = {"weighting": "sif", "vocabulary": "teacher", "show_progress_bar": False}
    with pytest.raises(
        ValueError, match=r"one.txt' has 1 distinct non-empty line among .* at least 9 sentences"
    ):
        distill(str(teacher_dir), None, corpus=one, dim=8, **kw)
    eight = tmp_path / "eight.txt"
    eight.write_text("".join(f"the cat sat {i} times .\n" for i in range(8)), encoding="utf-8")
    with pytest.raises(ValueError, match="has 8 distinct non-empty lines among the 8"):
        distill(str(teacher_dir), None, corpus=eight, dim=8, **kw)
    # a repeated line adds the same sentence vector: ten copies span no direction
    same = tmp_path / "same.txt"
    same.write_text("the cat .\n" * 10, encoding="utf-8")
    with pytest.raises(ValueError, match="has 1 distinct non-empty line among the 10"):
        distill(str(teacher_dir), None, corpus=same, dim=8, **kw)
    with pytest.raises(ValueError, match=r"whitening_sentences=5 \(--whitening-sentences\)"):
        distill(str(teacher_dir), None, corpus=eight, dim=8, whitening_sentences=5, **kw)
    # dim=None is the teacher's width (384): checked once it is known, before the forward pass
    with pytest.raises(ValueError, match="whitening to dim=384 .* at least 385 sentences"):
        distill(small_teacher, None, corpus=eight, dim=None, **kw)
    # Model2Vec's PCA is fitted on the token rows: a one-line corpus is enough for the counts
    monkeypatch.undo()
    model = distill(small_teacher, None, corpus=one, dim=8, whiten="none", **kw)
    assert model.embeddings.shape[1] == 8


def test_corpus_lines_stop_reading_at_the_first_lines_needed(tmp_path):
    from sentvec.distill.corpus import check_whitening_corpus, corpus_lines

    path = tmp_path / "c.txt"
    path.write_bytes(b"a b\n\n  \nc\n" + b"\xff\n")  # line 5 is not UTF-8
    lines = corpus_lines(path)
    assert [next(lines), next(lines)] == ["a b", "c"]
    with pytest.raises(ValueError, match="line 5 is not valid UTF-8"):
        next(lines)
    check_whitening_corpus(path, 1, whitening_sentences=2)  # 2 lines suffice: line 5 unread


def test_distill_config_checks_every_option_when_made():
    import dataclasses

    from sentvec.distill import DistillConfig

    bad = [
        ({"weighting": "tfidf"}, "weighting"),
        ({"whiten": "pca"}, "whiten"),
        ({"dtype": "int8"}, "dtype"),
        ({"precision": "float16"}, "precision"),
        ({"backend": "tensorflow"}, "backend"),
        ({"pooling": "first"}, "pooling"),
        ({"vocabulary": "corpus:0"}, "vocabulary"),
        ({"bigrams": -1}, "bigrams"),
        ({"dim": 0}, "dim=0"),
        ({"max_sentences": 0}, "max_sentences=0"),
        ({"whitening_sentences": 0}, "whitening_sentences=0"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"bigram_weight": float("nan")}, "bigram_weight"),
        ({"bigram_weight": -1.0}, "bigram_weight"),
        ({"sif_a": 0.0}, "sif_a"),
        ({"backend": "onnx", "precision": "bfloat16"}, "ONNX backend runs float32"),
    ]
    for options, message in bad:
        with pytest.raises(ValueError, match=message):
            DistillConfig(**options)
    config = DistillConfig(dim=None, vocabulary="corpus:7", bigrams=3, weighting="zipf")
    assert config.n_words == 7 and config.needs_corpus
    assert config.plan_options() == {"n_words": 7, "n_bigrams": 3}
    assert config.count_options()["max_sentences"] == config.whitening_sentences  # zipf
    assert not DistillConfig(weighting="none", whiten="none").needs_corpus
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.dim = 8  # type: ignore[misc]


def test_distill_takes_a_config_or_its_fields_as_keywords(small_teacher, corpus_file):
    from sentvec.distill import DistillConfig

    kw = {
        "corpus": corpus_file,
        "dim": 8,
        "vocabulary": "teacher",
        "precision": "float32",
        "show_progress_bar": False,
    }
    by_keywords = distill(small_teacher, None, **kw)
    by_config = distill(DistillConfig(model=small_teacher, **kw))
    np.testing.assert_array_equal(by_keywords.embeddings, by_config.embeddings)
    assert by_keywords.record["settings"] == by_config.record["settings"]
    with pytest.raises(TypeError, match="DistillConfig"):
        distill(DistillConfig(model=small_teacher), dim=8)
    with pytest.raises(TypeError, match="dimension"):
        distill(small_teacher, None, dimension=8)


def test_distill_runs_the_teacher_through_its_onnx_backend(
    teacher_dir, small_teacher, corpus_file, tmp_path, monkeypatch
):
    pytest.importorskip("onnxruntime")
    from sentvec.encoders import TransformerEncoder
    from sentvec.encoders.onnx_backend import OnnxForward

    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "cache"))
    batches = []
    forward = OnnxForward.__call__

    def counted(self, input_ids, attention_mask, hidden_states):
        batches.append(input_ids.shape)
        return forward(self, input_ids, attention_mask, hidden_states)

    monkeypatch.setattr(OnnxForward, "__call__", counted)
    kw = {"corpus": corpus_file, "dim": 8, "vocabulary": "teacher", "show_progress_bar": False}
    onnx = distill(str(teacher_dir), None, backend="onnx", **kw)
    n_onnx = len(batches)
    ref = distill(str(teacher_dir), None, precision="float32", **kw)
    # every token of the onnx run went through ONNX Runtime, none of the torch run's
    assert sum(n for n, _ in batches) >= onnx.record["rows"] - onnx.record["n_rows_dropped"]
    assert len(batches) == n_onnx
    assert onnx.record["teacher"]["backend"] == "onnx" and "backend" not in ref.record["teacher"]
    assert onnx.record["settings"]["precision"] == "float32"  # auto: the ONNX graph's float32
    # token rows: within 1e-5 of torch's float32 rows (the hidden states agree to the export
    # check's 1e-4; the mean_cls_unit rows divide them by their norms, about 10 here)
    teacher = TransformerEncoder.from_pretrained(
        teacher_dir, backend="onnx", layers=(-1,), pooling="mean"
    )
    ids = [[1996], [1012], [2003, 1037, 4937]]
    got = token_rows(teacher, ids, pooling="mean_cls_unit")
    want = token_rows(small_teacher, ids, precision="float32", pooling="mean_cls_unit")
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the distilled rows: the same to float16 storage and the whitening's rounding
    keep = np.abs(ref.embeddings).sum(1) > 0
    a, b = onnx.embeddings[keep].astype(np.float64), ref.embeddings[keep].astype(np.float64)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() > 0.999, cos.min()
    with pytest.raises(ValueError, match="ONNX backend runs float32"):
        distill(str(teacher_dir), None, backend="onnx", precision="bfloat16", **kw)


def test_sentvec_distill_is_one_callable_object_whichever_is_imported_first():
    import subprocess
    import sys

    check = (
        "import sentvec\n"
        "from sentvec import distill\n"
        "import sentvec.distill.run as run\n"
        "assert distill is sentvec.distill and callable(distill)\n"
        "assert run.distill is sentvec.distill.distill\n"
    )
    for first in ("import sentvec.distill.config", "import sentvec; sentvec.distill", ""):
        done = subprocess.run(
            [sys.executable, "-c", first + "\n" + check], capture_output=True, text=True
        )
        assert done.returncode == 0, (first, done.stderr[-2000:])


def test_the_old_distill_modules_keep_their_public_names():
    import sentvec.distill as package
    import sentvec.distill_corpus as old_corpus
    import sentvec.distill_vocabulary as old_vocabulary
    import sentvec.distillation as old
    from sentvec.whitening import whiten_rows

    for module in (old, old_corpus, old_vocabulary):
        for name in module.__all__:
            assert getattr(module, name) is not None, (module.__name__, name)
    assert old.distill is package.distill and old.DistilledModel is package.DistilledModel
    assert old.DEFAULT_POOLING == package.DEFAULT_ROW_POOLING == "mean_cls_unit"
    assert old.whiten_rows is package.whiten_token_rows is not whiten_rows
    assert old_corpus.CorpusPassProcess is package.CorpusPassProcess
    assert old_vocabulary.plan_rows is package.plan_rows


def test_distill_modules_and_functions_fit_their_size_limits():
    import ast

    import sentvec.distill

    root = Path(sentvec.distill.__file__).parent
    for path in sorted(root.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") <= 800, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                assert lines <= 100, f"{path.name}: {node.name} has {lines} lines"
                if node.name == "distill":  # its code, below the docstring, reads in one screen
                    code = node.end_lineno - node.body[1].lineno + 1
                    assert code <= 60, f"{path.name}: distill has {code} lines of code"


def test_cli_distill_builds_its_config_from_the_options(teacher_dir, corpus_file, tmp_path, capsys):
    from sentvec.cli import main

    out = tmp_path / "cli-model"
    argv = ["distill", "--model", str(teacher_dir), "--corpus", str(corpus_file), "--dim", "8"]
    argv += ["--weighting", "zipf", "--sif-a", "1e-4", "--pooling", "mean_cls"]
    argv += ["--backend", "torch", "--precision", "float32", "--dtype", "float32"]
    argv += ["--batch-size", "64", "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    record = json.loads((out / DISTILL_RECORD).read_text("utf-8"))
    settings = record["settings"]
    assert (settings["dim"], settings["weighting"], settings["pooling"]) == (8, "zipf", "mean_cls")
    assert (settings["precision"], settings["dtype"]) == ("float32", "float32")
    assert record["weights"] == {"a": 1e-4} and "backend" not in record["teacher"]
    with pytest.raises(SystemExit):
        main(["distill", "--output", str(tmp_path / "x"), "--backend", "tensorflow"])
