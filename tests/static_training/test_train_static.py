"""Training static models against a teacher: featurization shards, the losses, the trainer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentvec.static_training import (
    FeaturesMismatchError,
    featurize_corpus,
    load_features,
    read_features_manifest,
)
from sentvec.static_training import featurize as featurize_module
from sentvec.static_training.train import (
    LOSSES,
    batch_loss,
    flatten_ids,
    loss_and_gradient,
    sentence_vectors,
    train_rows,
)

_WORDS = "the a cat dog man woman city house park was is in on and of to he she it ran sat".split()
_rng = np.random.default_rng(11)
CORPUS = [" ".join(_rng.choice(_WORDS, size=int(_rng.integers(3, 10)))) for _ in range(50)]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    # blank lines are not sentences: numbering skips them
    path.write_text("\n".join(CORPUS[:5] + [""] + CORPUS[5:]) + "\n", encoding="utf-8")
    return path


def _toy(seed=0, n=40, vocab=12, d=5):
    rng = np.random.default_rng(seed)
    ids = [list(rng.integers(0, vocab, size=int(rng.integers(1, 6)))) for _ in range(n)]
    flat, offsets = flatten_ids(ids)
    return rng, flat, offsets, vocab, d


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_gradient_matches_finite_differences_of_numpy_loss(loss):
    rng, flat, offsets, vocab, d = _toy()
    rows = rng.normal(size=(vocab, d))
    y = rng.normal(size=(len(offsets) - 1, d))

    def value(r):
        return loss_and_gradient(sentence_vectors(r, flat, offsets), y, loss)[0]

    got_value, got_grad = batch_loss(rows, flat, offsets, y, loss)
    assert got_value == pytest.approx(value(rows), rel=1e-10)
    fd = np.zeros_like(rows)
    h = 1e-6
    for i in range(vocab):
        for j in range(d):
            e = np.zeros_like(rows)
            e[i, j] = h
            fd[i, j] = (value(rows + e) - value(rows - e)) / (2 * h)
    np.testing.assert_allclose(got_grad, fd, rtol=1e-5, atol=1e-8)
    # the numpy gradient with respect to the sentence vectors, through the mean
    v = sentence_vectors(rows, flat, offsets)
    _, gv = loss_and_gradient(v, y, loss)
    counts = np.diff(offsets)
    via_numpy = np.zeros_like(rows)
    np.add.at(via_numpy, flat, np.repeat(gv / counts[:, None], counts, axis=0))
    np.testing.assert_allclose(via_numpy, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("loss", LOSSES)
def test_training_reduces_the_loss_on_a_toy_problem(loss):
    rng, flat, offsets, vocab, d = _toy(seed=1, n=400, vocab=30, d=8)
    truth = rng.normal(size=(vocab, d))
    y = sentence_vectors(truth, flat, offsets).astype(np.float32)
    start = rng.normal(size=(vocab, d)).astype(np.float32)
    before = loss_and_gradient(sentence_vectors(start, flat, offsets), y, loss)[0]
    rows, log = train_rows(
        start, flat, offsets, y, loss=loss, epochs=30, batch_size=32, learning_rate=0.05
    )
    after = loss_and_gradient(sentence_vectors(rows, flat, offsets), y, loss)[0]
    assert after < 0.5 * before, (before, after)
    assert len(log.losses) == 30 and log.losses[-1] < log.losses[0]
    assert rows.dtype == np.float32 and not np.shares_memory(rows, start)


def test_training_refuses_a_sentence_without_tokens():
    flat, offsets = flatten_ids([[0, 1], []])
    with pytest.raises(ValueError, match="at least one token"):
        train_rows(np.ones((3, 2), np.float32), flat, offsets, np.ones((2, 2), np.float32))


def test_featurization_resumes_after_a_kill_and_equals_an_uninterrupted_run(
    tiny_minilm_dir, corpus_file, tmp_path, monkeypatch
):
    whole = tmp_path / "whole"
    featurize_corpus(tiny_minilm_dir, corpus_file, whole, shard_size=16, show_progress_bar=False)
    m_whole = read_features_manifest(whole)
    assert [(s["start"], s["end"]) for s in m_whole["shards"]] == [
        (0, 16),
        (16, 32),
        (32, 48),
        (48, 50),
    ]
    X_whole, _ = load_features(whole)
    assert X_whole.shape == (50, 2, 384) and X_whole.dtype == np.float32

    real = featurize_module.teacher_features
    calls = {"n": 0}

    def dies_after_two(*args, **kwargs):
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the run killed while encoding its third shard
        calls["n"] += 1
        return real(*args, **kwargs)

    part = tmp_path / "part"
    monkeypatch.setattr(featurize_module, "teacher_features", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        featurize_corpus(tiny_minilm_dir, corpus_file, part, shard_size=16, show_progress_bar=False)
    assert len(read_features_manifest(part)["shards"]) == 2
    X_part, _ = load_features(part)  # the contiguous shards so far
    assert X_part.shape[0] == 32
    calls["n"] = -100  # resume: only the two missing shards are encoded
    featurize_corpus(tiny_minilm_dir, corpus_file, part, shard_size=16, show_progress_bar=False)
    assert calls["n"] == -98
    X_resumed, m_part = load_features(part)
    np.testing.assert_array_equal(X_resumed, X_whole)
    assert m_part["shards"] == m_whole["shards"]


def test_features_of_other_options_or_other_text_are_refused(
    tiny_minilm_dir, corpus_file, tmp_path
):
    out = tmp_path / "f"
    featurize_corpus(
        tiny_minilm_dir, corpus_file, out, shard_size=32, max_sentences=32, show_progress_bar=False
    )
    with pytest.raises(FeaturesMismatchError, match="pooling: 'mean' there, 'cls' asked"):
        featurize_corpus(
            tiny_minilm_dir, corpus_file, out, pooling="cls", shard_size=32, show_progress_bar=False
        )
    other = tmp_path / corpus_file.name  # same name, other sentences
    other.write_text("\n".join(reversed(CORPUS)) + "\n", encoding="utf-8")
    with pytest.raises(FeaturesMismatchError, match="other sentences"):
        featurize_corpus(tiny_minilm_dir, other, out, shard_size=32, show_progress_bar=False)
    (out / "features.json").write_text(json.dumps({"format": "x"}), encoding="utf-8")
    with pytest.raises(FeaturesMismatchError, match="not a sentvec-teacher-features"):
        load_features(out)
    with pytest.raises(FileNotFoundError, match="features.json"):
        load_features(tmp_path)


def test_featurizing_an_empty_corpus_is_an_error(tiny_minilm_dir, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="no non-empty line"):
        featurize_corpus(tiny_minilm_dir, empty, tmp_path / "f", show_progress_bar=False)


def test_truncated_sentences_of_every_shard_are_one_warning_with_their_sum(
    tiny_minilm_dir, tmp_path
):
    import warnings

    from sentvec.exceptions import TruncationWarning

    long_line = " ".join(["word"] * 400)  # over the teacher's max_length in tokens
    lines = CORPUS[:2] + [long_line + " a", CORPUS[2], long_line + " b", long_line + " c"]
    corpus = tmp_path / "long.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        featurize_corpus(
            tiny_minilm_dir, corpus, tmp_path / "f", shard_size=2, show_progress_bar=False
        )
    truncations = [w.message for w in caught if issubclass(w.category, TruncationWarning)]
    assert len(truncations) == 1  # two shards truncated sentences: one warning
    (w,) = truncations
    assert w.n_truncated == 3 and w.longest > w.max_length
    assert "3 corpus sentences (in 2 shards) were longer than" in str(w)


@pytest.fixture(scope="module")
def random_init_dir(tiny_minilm_dir, tmp_path_factory):
    """A Model2Vec directory of the tiny teacher's tokenizer with random 8-d rows."""
    from tokenizers import Tokenizer

    from sentvec.encoders.static import StaticEncoder

    tok = Tokenizer.from_file(str(tiny_minilm_dir / "tokenizer.json"))
    rows = np.random.default_rng(3).normal(size=(tok.get_vocab_size(), 8)).astype(np.float32)
    path = tmp_path_factory.mktemp("init") / "m"
    StaticEncoder(rows, tok, normalize=True).save(path)
    return path


def test_train_static_writes_a_model2vec_directory_that_model2vec_loads(
    tiny_minilm_dir, corpus_file, random_init_dir, tmp_path
):
    from sentvec import load_encoder, train_static

    out = tmp_path / "trained"
    model = train_static(
        tiny_minilm_dir,
        corpus_file,
        out,
        features=tmp_path / "feats",
        init=random_init_dir,
        dim=8,
        max_sentences=40,
        epochs=2,
        batch_size=8,
        show_progress_bar=False,
    )
    rec = model.config["sentvec_train_static"]
    assert rec["n_sentences"] == 40 and rec["target"] == "pca" and len(rec["epoch_losses"]) == 2
    assert read_features_manifest(tmp_path / "feats")["n_sentences"] == 40
    sents = ["the cat sat in the park", "a dog ran"]
    ours = load_encoder(str(out))
    np.testing.assert_allclose(ours.encode(sents), model.encode(sents), atol=1e-6)
    assert not model.embeddings[model.unk_id].any()  # every library drops it or averages zero
    model2vec = pytest.importorskip("model2vec")
    theirs = model2vec.StaticModel.from_pretrained(out)
    np.testing.assert_allclose(theirs.encode(sents), ours.encode(sents), atol=2e-3)
    st_modules = pytest.importorskip("sentence_transformers.sentence_transformer.modules")
    emb = st_modules.StaticEmbedding.from_model2vec(str(out))
    assert emb.embedding.weight.shape == model.embeddings.shape


def test_train_static_refuses_bad_input(tiny_minilm_dir, corpus_file, random_init_dir, tmp_path):
    from sentvec import train_static

    with pytest.raises(ValueError, match="loss='hinge' is invalid"):
        train_static(tiny_minilm_dir, corpus_file, loss="hinge")
    with pytest.raises(ValueError, match="max_sentences=3 is invalid"):
        train_static(tiny_minilm_dir, corpus_file, max_sentences=3)
    with pytest.raises(FileNotFoundError, match="corpus"):
        train_static(tiny_minilm_dir, tmp_path / "missing.txt")
    few = tmp_path / "few.txt"
    few.write_text("the cat\n\n\u2603\n" * 3, encoding="utf-8")
    with pytest.raises(ValueError, match="sentences with a token; training needs at least 16"):
        train_static(
            tiny_minilm_dir,
            few,
            features=tmp_path / "f",
            init=random_init_dir,
            dim=8,
            show_progress_bar=False,
        )
    with pytest.raises(ValueError, match="dimension 8, not dim=16"):
        train_static(
            tiny_minilm_dir,
            corpus_file,
            features=tmp_path / "f2",
            init=random_init_dir,
            dim=16,
            max_sentences=16,
            show_progress_bar=False,
        )


def test_train_static_reuses_complete_features_and_sif_scales_each_trained_row(
    tiny_minilm_dir, corpus_file, tmp_path
):
    from sentvec import train_static

    feats = tmp_path / "feats"
    options = dict(
        features=feats, init="random", dim=8, max_sentences=40, epochs=1, batch_size=8, seed=5
    )
    plain = train_static(tiny_minilm_dir, corpus_file, show_progress_bar=False, **options)
    manifest = (feats / "features.json").read_bytes()
    sif_a = 1e-2
    sif = train_static(
        tiny_minilm_dir,
        corpus_file,
        reweighting="sif",
        sif_a=sif_a,
        show_progress_bar=False,
        **options,
    )
    assert (feats / "features.json").read_bytes() == manifest  # a complete directory is read
    rec = sif.config["sentvec_train_static"]
    assert rec["init"] == "random" and rec["reweighting"] == "sif" and rec["n_sentences"] == 40
    assert list(rec["seconds"]) == ["teacher_features_s", "init_s", "targets_s", "training_s"]
    assert rec["epoch_losses"] == plain.config["sentvec_train_static"]["epoch_losses"]
    ids = plain.tokenize(CORPUS[:40])
    counts = np.bincount([t for x in ids for t in x], minlength=len(plain.embeddings))
    p = counts / counts.sum()
    expected = plain.embeddings.astype(np.float64) * (sif_a / (sif_a + p))[:, None]
    np.testing.assert_allclose(sif.embeddings, expected, rtol=2e-3, atol=1e-6)
    assert plain.embeddings.any()
    with pytest.raises(FeaturesMismatchError, match="teacher: .* there, 'other-teacher' asked"):
        train_static("other-teacher", corpus_file, show_progress_bar=False, **options)


def test_featurization_on_a_dask_cluster_equals_the_local_run(
    tiny_minilm_dir, corpus_file, tmp_path
):
    distributed = pytest.importorskip("distributed")
    local = tmp_path / "local"
    featurize_corpus(
        tiny_minilm_dir,
        corpus_file,
        local,
        shard_size=16,
        max_sentences=40,
        show_progress_bar=False,
    )
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_cluster = tmp_path / "cluster"
        featurize_corpus(
            tiny_minilm_dir,
            corpus_file,
            on_cluster,
            shard_size=16,
            max_sentences=40,
            client=client,
            show_progress_bar=False,
        )
    a, ma = load_features(local)
    b, mb = load_features(on_cluster)
    np.testing.assert_array_equal(a, b)
    assert ma["shards"] == mb["shards"]


def test_procrustes_map_keeps_cosines_and_fits_a_scaled_rotation():
    from sentvec.static_training.api import procrustes_map

    rng = np.random.default_rng(5)
    S = rng.normal(size=(200, 6))
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    Y = 3.0 * S @ Q + 0.01 * rng.normal(size=(200, 6))
    A = procrustes_map(S, Y)
    np.testing.assert_allclose(A, 3.0 * Q, atol=1e-2)
    SA = S @ A

    def cos(X):
        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        return U @ U.T

    np.testing.assert_allclose(cos(SA), cos(S), atol=1e-12)


def test_learning_rate_is_relative_to_the_scale_of_the_rows():
    # the cosine loss does not see the rows' scale, so neither may training: rows 1000 times
    # larger follow the same path (with an absolute rate they would barely move)
    rng, flat, offsets, vocab, d = _toy(seed=2, n=200, vocab=20, d=6)
    y = rng.normal(size=(200, d)).astype(np.float32)
    start = rng.normal(size=(vocab, d)).astype(np.float32)
    small, log_small = train_rows(
        start, flat, offsets, y, epochs=5, batch_size=20, learning_rate=0.05
    )
    large, log_large = train_rows(
        1000 * start, flat, offsets, y, epochs=5, batch_size=20, learning_rate=0.05
    )
    np.testing.assert_allclose(log_large.losses, log_small.losses, rtol=5e-3)  # Adam eps
    assert log_small.losses[-1] < log_small.losses[0] - 0.01


def test_train_static_command_reports_bad_input_as_one_error_line(
    tiny_minilm_dir, corpus_file, random_init_dir, tmp_path, capsys
):
    from sentvec.cli import main

    code = main(
        ["train-static", "--model", str(tiny_minilm_dir), "--corpus", str(tmp_path / "no.txt")]
        + ["--output", str(tmp_path / "out")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("sentvec: error: corpus") and "no.txt" in err
    featurize_corpus(
        tiny_minilm_dir, corpus_file, tmp_path / "f", pooling="cls", shard_size=16
    )  # features of another pooling
    code = main(
        ["train-static", "--model", str(tiny_minilm_dir), "--corpus", str(corpus_file)]
        + ["--output", str(tmp_path / "out"), "--features", str(tmp_path / "f")]
        + ["--init", str(random_init_dir), "--dim", "8", "--max-sentences", "40"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "pooling: 'cls' there, 'mean' asked" in err
    assert not (tmp_path / "out").exists()


def test_a_static_model_as_teacher_is_refused_by_name(random_init_dir, corpus_file, tmp_path):
    with pytest.raises(ValueError, match="is a Model2Vec model directory, not a transformer"):
        featurize_corpus(random_init_dir, corpus_file, tmp_path / "f", show_progress_bar=False)


@pytest.fixture(scope="module")
def bigram_init_dir(tiny_minilm_dir, tmp_path_factory):
    """A bigram static directory of the tiny teacher's tokenizer: random 8-d rows for its tokens
    and for the adjacent token pairs of the first corpus sentences."""
    from tokenizers import Tokenizer

    from sentvec.encoders.static import StaticEncoder
    from sentvec.encoders.static_bigrams import BigramStaticEncoder

    tok = Tokenizer.from_file(str(tiny_minilm_dir / "tokenizer.json"))
    probe = StaticEncoder(np.zeros((tok.get_vocab_size(), 8), np.float32), tok)
    pairs = sorted(
        {(a, b) for ids in probe.tokenize(CORPUS[:10]) for a, b in zip(ids, ids[1:], strict=False)}
    )
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(tok.get_vocab_size() + len(pairs), 8)).astype(np.float32)
    path = tmp_path_factory.mktemp("bigram-init") / "m"
    BigramStaticEncoder(rows, tok, np.array(pairs, dtype=np.int64)).save(path)
    return path


def test_bigram_rows_are_trained_with_the_token_rows_and_saved_in_the_bigram_format(
    tiny_minilm_dir, corpus_file, bigram_init_dir, tmp_path
):
    from sentvec import load_encoder, train_static
    from sentvec.encoders.static_bigrams import BigramStaticEncoder

    init = BigramStaticEncoder.load(bigram_init_dir)
    n_pairs, V = len(init.bigrams), init.n_tokens
    options = dict(features=tmp_path / "feats", init=bigram_init_dir, dim=8, max_sentences=40)
    models = {}
    for epochs in (1, 2):
        out = tmp_path / f"trained-{epochs}"
        models[epochs] = train_static(
            tiny_minilm_dir,
            corpus_file,
            out,
            epochs=epochs,
            batch_size=8,
            show_progress_bar=False,
            **options,
        )
    model = models[2]
    assert isinstance(model, BigramStaticEncoder) and len(model.bigrams) == n_pairs
    assert model.config["sentvec_train_static"]["bigram_rows"] == n_pairs
    # the same aligned start, one more epoch: the bigram rows moved too
    assert not np.array_equal(models[1].embeddings[V:], model.embeddings[V:])
    reloaded = load_encoder(str(tmp_path / "trained-2"))
    assert isinstance(reloaded, BigramStaticEncoder)
    assert reloaded.config["sentvec_train_static"]["epochs"] == 2
    # Sent2Vec's sentence vector, written out in numpy: mean of token rows and bigram rows
    sents = CORPUS[:3]
    E = np.asarray(reloaded.embeddings, dtype=np.float64)
    index = {(int(a), int(b)): V + j for j, (a, b) in enumerate(reloaded.bigrams)}
    for sent, got in zip(sents, reloaded.encode(sents), strict=True):
        ids = reloaded.unigrams.tokenize([sent])[0]
        rows = ids + [index[p] for p in zip(ids, ids[1:], strict=False) if p in index]
        assert len(rows) > len(ids)  # the first sentences' pairs all have rows
        v = E[rows].mean(axis=0)
        np.testing.assert_allclose(got, v / np.linalg.norm(v), atol=1e-5)


def test_bigram_training_from_a_distilled_start_and_its_bad_options(
    tiny_minilm_dir, corpus_file, tmp_path
):
    from sentvec import train_static
    from sentvec.encoders.static_bigrams import BigramStaticEncoder

    model = train_static(
        tiny_minilm_dir,
        corpus_file,
        tmp_path / "m",
        features=tmp_path / "feats",
        init="distill",
        bigrams=5,
        dim=8,
        max_sentences=40,
        epochs=1,
        show_progress_bar=False,
    )
    assert isinstance(model, BigramStaticEncoder) and len(model.bigrams) == 5
    with pytest.raises(ValueError, match="bigrams need initial bigram rows"):
        train_static(tiny_minilm_dir, corpus_file, init="random", bigrams=5)
    with pytest.raises(ValueError, match="bigrams=-1 is invalid"):
        train_static(tiny_minilm_dir, corpus_file, bigrams=-1)
