"""Sent2Vec trainer: reproducibility, schedule, loss, model output, checkpoints, bad inputs."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from sentvec.sent2vec.trainer import Sent2VecTrainer, train_sent2vec

SAMPLE = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt"
SMALL = dict(
    dim=16,
    bucket=5000,
    min_count=2,
    min_count_label=2,
    neg=5,
    dropout_k=2,
    epoch=2,
    show_progress_bar=False,
)
M64 = (1 << 64) - 1


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:1500]
    p = tmp_path_factory.mktemp("s2v") / "corpus.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory) -> Path:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:3000]
    random.Random(0).shuffle(lines)  # article order makes late-epoch online loss rise
    p = tmp_path_factory.mktemp("s2v") / "shuffled.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def fit(path, **kw):
    tr = Sent2VecTrainer(**{**SMALL, **kw})
    return tr.fit(path), tr.report_


@pytest.mark.parametrize("update", ["sentence", "target"])
def test_one_thread_is_bit_reproducible(corpus, update):
    m1, r1 = fit(corpus, thread=1, update=update)
    m2, r2 = fit(corpus, thread=1, update=update)
    assert np.array_equal(m1.input_matrix, m2.input_matrix)
    assert np.array_equal(m1.output_matrix, m2.output_matrix)
    assert r1.epochs[-1].loss == r2.epochs[-1].loss
    m3, _ = fit(corpus, thread=1, update=update, seed=2)
    assert not np.array_equal(m1.input_matrix, m3.input_matrix)


def test_in_memory_lines_equal_file(corpus):
    lines = corpus.read_text(encoding="utf-8").splitlines()
    m1, _ = fit(corpus, thread=1)
    m2, _ = fit(lines, thread=1)
    assert np.array_equal(m1.input_matrix, m2.input_matrix)


def test_two_threads_finish_and_match_one_thread_quality(corpus):
    m1, r1 = fit(corpus, thread=1)
    m2, r2 = fit(corpus, thread=2)
    assert r2.threads == 2
    # every job ran exactly once, and training stopped at the same token
    assert [e.tokens for e in r2.epochs] == [e.tokens for e in r1.epochs]
    assert r2.epochs[1].loss == pytest.approx(r1.epochs[1].loss, rel=0.03)
    assert r2.epochs[-1].loss < r2.epochs[0].loss
    assert not np.array_equal(m1.input_matrix, m2.input_matrix)  # Hogwild order differs


def test_official_run_length_counts_every_token_of_the_dictionary_pass(corpus):
    model, rep = fit(corpus, thread=1, epoch=2)  # epoch_tokens="all" (official default)
    total = 2 * model.dictionary.ntokens  # every token read, </s> per line included
    trained = sum(e.tokens for e in rep.epochs)
    assert total <= trained < total + 300  # stops at the first sentence reaching the total
    assert len(rep.epochs) == -(-total // rep.n_tokens) == 3  # the last pass is partial
    assert rep.epochs[-1].tokens < rep.n_tokens
    assert rep.epochs[-1].final_lr < 0.2 * 300 / total
    _, rep2 = fit(corpus, thread=1, epoch=2, epoch_tokens="trained")
    assert [e.tokens for e in rep2.epochs] == [rep2.n_tokens] * 2


def test_lr_decays_linearly_to_zero(corpus):
    _, rep = fit(corpus, thread=1, epoch=4, lr=0.3, job_tokens=2000, epoch_tokens="trained")
    n = rep.n_tokens
    for e in rep.epochs:  # lr of the last sentence of epoch e is lr*(1 - progress)
        expected = 0.3 * (1 - (e.epoch + 1) / 4)
        assert e.final_lr == pytest.approx(expected, abs=0.3 * 200 / (4 * n) + 1e-3)
    assert rep.epochs[-1].final_lr < 0.3 * 1e-3


def test_loss_decreases_over_epochs(shuffled):
    _, rep = fit(shuffled, thread=1, epoch=4)
    losses = [e.loss for e in rep.epochs]
    assert all(b < a for a, b in pairwise(losses)), losses
    assert rep.epochs[0].targets > 1000


def ngram_row(ids, nwords, bucket):
    h = ids[0]
    for x in ids[1:]:
        h = (h * 116049371 + x) & M64
    return nwords + h % bucket


@pytest.mark.parametrize("n", [2, 3])
def test_encode_is_mean_of_input_rows(corpus, n):
    model, _ = fit(corpus, thread=1, word_ngrams=n)
    d = model.dictionary
    index = {w: i for i, w in enumerate(d.words)}
    sents = [
        "the city is located in the north of the country .",
        "anarchism is a political philosophy",
        "zzqx unknown the",
    ]
    got = model.encode(sents)
    for s, v in zip(sents, got, strict=True):
        ids = [index[w] for w in s.split() if w in index]
        rows = list(ids) + [
            ngram_row(ids[i : i + k], d.nwords, d.bucket)
            for i in range(len(ids))
            for k in range(2, n + 1)
            if i + k <= len(ids)
        ]
        ref = np.asarray(model.input_matrix, dtype=np.float64)[rows].mean(0)
        np.testing.assert_allclose(v, ref, rtol=1e-5, atol=1e-6)
    assert model.input_matrix.shape == (d.nwords + 5000, 16)
    assert model.args["lr"] == 0.2 and model.args["dropoutK"] == 2


def test_unigram_model_with_bucket_zero(corpus):
    model, rep = fit(corpus, thread=1, word_ngrams=1, bucket=0)
    assert model.dictionary.bucket == 0
    assert model.input_matrix.shape == (model.dictionary.nwords, 16)
    assert rep.epochs[-1].targets > 0
    # bucket is forced to 0 for unigram models, as the official argument parser does
    model2, _ = fit(corpus, thread=1, word_ngrams=1, bucket=777)
    assert model2.input_matrix.shape[0] == model2.dictionary.nwords


def test_paper_variants_change_the_model(corpus):
    base, _ = fit(corpus, thread=1)
    excl, _ = fit(corpus, thread=1, exclude_target=True)
    l1, _ = fit(corpus, thread=1, l1=5e-3)
    assert not np.array_equal(base.input_matrix, excl.input_matrix)
    assert (np.asarray(l1.output_matrix) == 0).sum() > (np.asarray(base.output_matrix) == 0).sum()


def test_checkpoint_resume_reproduces_uninterrupted_run(corpus, tmp_path):
    kw = dict(thread=1, epoch=2, job_tokens=8000)
    full, full_rep = fit(corpus, **kw)
    ck = tmp_path / "ck"
    resumed_from_mid = None
    m, _ = fit(corpus, **kw, checkpoint_dir=ck, checkpoint_every=1e-9, keep_checkpoints=100)
    assert np.array_equal(m.input_matrix, full.input_matrix)  # pausing changes nothing
    cks = sorted(p for p in ck.glob("ckpt-*"))
    assert len(cks) > 4 and (ck / "LATEST").read_text().strip() == cks[-1].name
    resumed_from_mid = cks[len(cks) // 2]  # a checkpoint in the middle of training
    res, rep = fit(corpus, **kw, resume_from=resumed_from_mid)
    assert np.array_equal(res.input_matrix, full.input_matrix)
    assert np.array_equal(res.output_matrix, full.output_matrix)
    assert 0 < len(rep.epochs) <= 2
    # words/s after a resume counted the tokens trained before the checkpoint
    import json

    from sentvec.sent2vec import kernels
    from sentvec.sent2vec.trainer import _STATE_FILE

    state = json.loads((resumed_from_mid / _STATE_FILE).read_text())
    before = int(np.asarray(state["stats"])[..., kernels.STAT_TOKENS].sum())
    assert 0 < before < sum(e.tokens for e in full_rep.epochs)
    trained_now = sum(e.tokens for e in rep.epochs) - rep.resumed_tokens
    assert trained_now == sum(e.tokens for e in full_rep.epochs) - before
    assert rep.resumed_tokens > 0 or state["job"] == 0
    expect = trained_now * rep.raw_tokens / rep.n_tokens / rep.train_seconds / rep.threads
    assert rep.words_per_sec_per_thread == pytest.approx(expect)
    # the checkpoint is a loadable model directory
    from sentvec.sent2vec.model import Sent2Vec

    assert Sent2Vec.load(cks[0] / "model").dim == 16
    with pytest.raises(ValueError, match="dim"):
        fit(corpus, **{**kw, "dim": 8}, resume_from=ck)


def test_progress_bar_reports_speed_lr_and_loss(corpus, capsys, monkeypatch):
    # stderr is not a terminal here: forced progress prints one-line records
    monkeypatch.setenv("SENTVEC_PROGRESS_INTERVAL", "0")
    fit(corpus, thread=1, show_progress_bar=True)
    err = capsys.readouterr().err
    assert "words/s/thread" in err and "lr=" in err and "loss=" in err


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(dim=0), "dim=0"),
        (dict(lr=0.0), "lr=0.0"),
        (dict(lr=-1), "lr=-1"),
        (dict(bucket=0), "bucket=0"),
        (dict(epoch=0), "epoch=0"),
        (dict(neg=0), "neg=0"),
        (dict(t=0), "t=0"),
        (dict(loss="hs"), "loss='hs'"),
        (dict(update="fast"), "update='fast'"),
        (dict(word_ngrams=3, update="sentence"), "word_ngrams"),
        (dict(thread=0), "thread=0"),
        (dict(checkpoint_every=5.0), "checkpoint_dir"),
        (dict(sigmoid="tanh"), "sigmoid"),
        (dict(l1=-1.0), "l1=-1.0"),
        (dict(min_count_label=-1), "min_count_label=-1"),
        (dict(epoch_tokens="some"), "epoch_tokens='some'"),
        # what the .bin writer or reader cannot hold: refused before training, not after it
        (dict(dim=2**20 + 1), r"dim=1048577 is invalid; expected at most 1048576"),
        (dict(bucket=2**31), r"bucket=2147483648 .* int32"),
        (dict(epoch=2**31), r"epoch=2147483648"),
    ],
)
def test_bad_arguments_are_rejected_up_front(kw, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        train_sent2vec(tmp_path / "does-not-matter.txt", **{**SMALL, **kw})


def test_bad_corpora(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        train_sent2vec(tmp_path / "missing.txt", **SMALL)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        train_sent2vec(empty, **SMALL)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    with pytest.raises(ValueError, match="empty"):
        train_sent2vec(blank, **SMALL)
    one = tmp_path / "one-word-lines.txt"
    one.write_text("alpha\nbeta\nalpha\nbeta\nalpha\n" * 5)
    with pytest.raises(ValueError, match="two in-vocabulary tokens"):
        train_sent2vec(one, **SMALL)
    with pytest.raises(TypeError, match="sequence of str"):
        train_sent2vec(iter(["a b", "c d"]), **SMALL)


def test_non_utf8_bytes_are_kept_with_a_warning(tmp_path):
    p = tmp_path / "latin1.txt"
    text = "".join(f"caf\xe9 au lait number {i % 7} here\n" for i in range(60))
    p.write_bytes(text.encode("latin-1"))
    with pytest.warns(UserWarning, match="1 vocabulary words contain bytes that are not UTF-8"):
        model = train_sent2vec(p, **{**SMALL, "min_count": 5, "min_count_label": 5})
    word = b"caf\xe9".decode("utf-8", "surrogateescape")
    assert model.dictionary.get_id(word) > 0


def test_diverged_training_raises_instead_of_returning_nan_model(tmp_path):
    from sentvec.exceptions import TrainingDivergedError

    lines = (
        (Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt")
        .read_text(encoding="utf-8")
        .splitlines()[:300]
    )
    with pytest.raises(TrainingDivergedError, match="diverged"):
        train_sent2vec(
            lines,
            dim=4,
            epoch=1,
            lr=1e6,
            min_count=1,
            min_count_label=1,
            bucket=100,
            thread=1,
            seed=1,
        )


def test_warm_up_compiles_the_signatures_training_uses(corpus):
    # the kernels compiled before the clocks start (behind "compiling kernels (first run
    # only)") must be the ones the run calls: no second specialisation inside the loop
    from sentvec.sent2vec import _scan
    from sentvec.sent2vec import kernels as K

    K.compile_job(K.MODE_TARGET)
    _scan.compile_kernels()
    jobs = set(K._JOBS["fast"].signatures)
    scans = {
        f: set(f.signatures)
        for f in (_scan._scan, _scan.remap_segment, _scan._find, _scan._has_prefix, K.shuffle_table)
    }
    fit(corpus, thread=2, update="target")
    assert set(K._JOBS["fast"].signatures) == jobs and len(jobs) == 1
    assert {f: set(f.signatures) for f in scans} == scans


@pytest.mark.parametrize("update", ["sentence", "target"])
def test_one_pass_reader_trains_the_same_bits_as_the_two_pass_reader(
    corpus, update, tmp_path, monkeypatch
):
    # the two-pass path (Python Counter reader, then the text conversion) is what training
    # ran before the compiled one-pass read; forcing its fallback must change no bit of the
    # model, the written .bin included
    from sentvec.sent2vec import _scan
    from sentvec.sent2vec import corpus as corpus_mod

    m1, r1 = fit(corpus, thread=1, update=update)
    calls = []
    convert = corpus_mod.convert_corpus

    def spy(*args, **kwargs):
        calls.append(1)
        return convert(*args, **kwargs)

    # the one-pass read gives up past 75 distinct tokens; the Python reader does not prune
    monkeypatch.setattr(_scan, "MAX_VOCAB_SIZE", 100)
    monkeypatch.setattr(corpus_mod, "convert_corpus", spy)
    m2, r2 = fit(corpus, thread=1, update=update)
    assert calls == [1]  # the two-pass path ran
    assert m1.dictionary.words == m2.dictionary.words
    assert np.array_equal(m1.input_matrix, m2.input_matrix)
    assert np.array_equal(m1.output_matrix, m2.output_matrix)
    assert r1.epochs[-1].loss == r2.epochs[-1].loss
    a, b = m1.save_bin(tmp_path / "one.bin"), m2.save_bin(tmp_path / "two.bin")
    assert a.read_bytes() == b.read_bytes()


def test_input_matrix_init_is_one_uniform_stream_whatever_the_chunks():
    # oracle: one default_rng(seed) float32 draw of the whole matrix, scaled to
    # [-1/dim, 1/dim) (official Matrix::uniform(1/dim)); 4.2 M values cross a 4 Mi chunk
    from sentvec.sent2vec.trainer import _init_input

    rows, dim, seed = 42_000, 100, 7
    ref = np.random.default_rng(seed).random((rows, dim), dtype=np.float32)
    ref = ref * np.float32(2.0 / dim) - np.float32(1.0 / dim)
    got = _init_input(rows, dim, seed)
    assert got.dtype == np.float32 and got.shape == (rows, dim)
    assert np.array_equal(got, ref)
    assert got.min() >= -1.0 / dim and got.max() < 1.0 / dim


def test_compile_child_is_waited_for_then_stopped_when_a_run_fails(corpus, tmp_path, monkeypatch):
    # a first run hands the training loop to a child process; a run must wait for
    # it before training, and one that fails before training must not leave it running
    import subprocess
    import sys
    import time

    from sentvec import _jit
    from sentvec.sent2vec import kernels

    children = []

    def child(code, seconds):
        p = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
        children.append(p)
        return p

    monkeypatch.setattr(_jit, "spare_core", lambda: True)
    monkeypatch.setattr(kernels, "job_is_cached", lambda *a: False)
    monkeypatch.setattr(_jit, "compile_in_child", lambda code: child(code, 2))
    t = time.monotonic()
    m, rep = fit(corpus, thread=1)  # the loop is compiled in this process already: it loads
    assert children[-1].returncode == 0  # waited for, not killed
    assert time.monotonic() - t >= 2 and rep.total_seconds < time.monotonic() - t - 1.5
    assert m.input_matrix.shape[0] > 0
    monkeypatch.setattr(_jit, "compile_in_child", lambda code: child(code, 60))
    empty_vocab = tmp_path / "rare.txt"
    empty_vocab.write_text("each word here is rare\n", encoding="utf-8")
    t = time.monotonic()
    with pytest.raises(ValueError, match="min_count"):
        fit(empty_vocab, thread=1, min_count=5)
    assert children[-1].poll() is not None and children[-1].returncode != 0  # stopped
    assert time.monotonic() - t < 30
