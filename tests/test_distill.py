"""sentvec.distillation: token rows, weights, whitening folded into rows, the Model2Vec directory.

Oracles: a plain transformers transcription of Model2Vec's token-row step, numpy
transcriptions of SIF / uSIF / Zipf / WhiteningBERT Eq. 1, and Model2Vec's own loader.
The teacher is a 2-layer slice of MiniLM with a 3,000-entry slice of its WordPiece vocabulary
(a forward pass over 3k tokens, not 30k), so the whole file runs in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sentvec.distillation import (  # noqa: E402
    DISTILL_RECORD,
    count_corpus_tokens,
    distill,
    pca_rows,
    token_rows,
    token_weights,
    whiten_rows,
    zipf_weights,
)

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
    got = token_rows(small_teacher, ids, batch_size=3, show_progress_bar=False)
    np.testing.assert_allclose(got, np.stack(expected), atol=2e-5)


def test_token_rows_average_the_chosen_layers(small_teacher):
    two = small_teacher.with_options(layers=(1, -1))
    model, tok = two.model, two.tokenizer
    inp = torch.tensor([[tok.cls_token_id, 1996, tok.sep_token_id]])
    with torch.no_grad():
        hs = model(input_ids=inp, output_hidden_states=True).hidden_states
    expected = ((hs[1][0] + hs[-1][0]) / 2).mean(0).numpy()
    np.testing.assert_allclose(token_rows(two, [[1996]])[0], expected, atol=2e-5)
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
    rows, w = whiten_rows(R, sample, 4)
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
        small_teacher, out, corpus=corpus_file, dim=8, weighting="sif", show_progress_bar=False
    )
    rec = json.loads((out / DISTILL_RECORD).read_text())
    assert rec["settings"]["weighting"] == "sif" and rec["settings"]["whiten"] == "corpus"
    assert rec["corpus"]["sentences_counted"] == sum(1 for s in CORPUS if s.strip())
    assert rec["wall_time_s"]["total_s"] > 0
    assert "Distill record" in (out / "README.md").read_text()
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


def test_pca_path_and_bad_input(small_teacher, corpus_file, tmp_path):
    r = distill(
        small_teacher, None, weighting="zipf", whiten="none", dim=8, show_progress_bar=False
    )
    assert r.embeddings.shape[1] == 8 and r.record["corpus"] is None
    with pytest.raises(ValueError, match="corpus"):
        distill(small_teacher, None, whiten="corpus")
    with pytest.raises(ValueError, match="input"):
        distill(small_teacher, corpus_file.parent, corpus=corpus_file)
    with pytest.raises(FileNotFoundError):
        distill(small_teacher, None, corpus=tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="dim"):
        distill(small_teacher, None, weighting="zipf", whiten="none", dim=1000)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "other.txt").write_text("x")
    with pytest.raises((FileExistsError, ValueError)):
        distill(small_teacher, tmp_path / "taken", weighting="zipf", whiten="none", dim=8)


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
