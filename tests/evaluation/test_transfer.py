"""Transfer tasks: SentEval-exact readers on the shipped files, and the classifier protocol
checked against independent scikit-learn oracles (GridSearchCV / plain loops)."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from sentvec._data import data_dir
from sentvec.evaluation.transfer import (
    DEFAULT_C_GRID,
    TRANSFER_TASKS,
    TransferData,
    TransferResult,
    TransferSplit,
    evaluate_transfer,
    load_transfer,
    pair_features,
    transfer_table_markdown,
)

DOWN = data_dir() / "downstream"


@pytest.fixture(autouse=True)
def _single_thread_blas():
    """The oracles' many tiny fits are far faster without BLAS threads (as evaluate_transfer's)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


class HashBOW:
    """Deterministic toy encoder: mean of per-word Gaussian vectors seeded by crc32(word)."""

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []
        self._vec: dict[str, np.ndarray] = {}

    def vector(self, word: str) -> np.ndarray:
        if word not in self._vec:
            self._vec[word] = np.random.default_rng(zlib.crc32(word.encode())).standard_normal(
                self.dim
            )
        return self._vec[word]

    def encode(self, sentences, *, batch_size=32, show_progress_bar=None, normalize=False):
        self.calls.append(list(sentences))
        out = np.zeros((len(sentences), self.dim), np.float32)
        for i, s in enumerate(sentences):
            words = s.split()
            for w in words:
                out[i] += self.vector(w)
            if words:
                out[i] /= len(words)
        return out


class LookupEncoder:
    """Returns a fixed vector per sentence (from a dict)."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def encode(self, sentences, *, batch_size=32, show_progress_bar=None, normalize=False):
        return np.stack([self.table[s] for s in sentences]).astype(np.float32)


def _raw_lines(path, encoding):
    return path.read_bytes().decode(encoding).split("\n")[:-1]


# --------------------------------------------------------------------------- readers


@pytest.mark.parametrize(
    "task,pos_file,neg_file,n_pos,n_neg,n_empty",
    [
        ("MR", "rt-polarity.pos", "rt-polarity.neg", 5331, 5331, 0),
        ("CR", "custrev.pos", "custrev.neg", 2407, 1368, 4),
        ("SUBJ", "subj.objective", "subj.subjective", 5000, 5000, 0),
        ("MPQA", "mpqa.pos", "mpqa.neg", 3312, 7294, 3),
    ],
)
def test_binary_readers_match_senteval_counts(task, pos_file, neg_file, n_pos, n_neg, n_empty):
    data = load_transfer(task)
    (split,) = data.splits
    assert split.name == "all" and data.n_samples == n_pos + n_neg
    assert int(split.labels.sum()) == n_pos and split.labels.dtype == np.int64
    assert split.labels[:n_pos].all() and not split.labels[n_pos:].any()
    assert sum(not s for s in split.sentences) == n_empty  # SentEval keeps empty lines
    raw = _raw_lines(DOWN / task / pos_file, "latin-1") + _raw_lines(
        DOWN / task / neg_file, "latin-1"
    )
    assert list(split.sentences) == [" ".join(x.split()) for x in raw]


def test_cr_empty_lines_kept_in_place():
    split = load_transfer("CR").splits[0]
    # custrev.pos lines 2323 and 2407 are empty (1-based); neg lines 769 and 1368
    assert split.sentences[2322] == "" and split.sentences[2406] == ""
    assert split.sentences[2407 + 768] == "" and split.sentences[-1] == ""
    assert split.sentences[2321] != ""


def test_trec_latin1_line_66_and_coarse_labels():
    data = load_transfer("TREC")
    train, test = data.split("train"), data.split("test")
    assert (len(train), len(test)) == (5452, 500)
    raw = (DOWN / "TREC" / "train_5500.label").read_bytes().split(b"\n")[65]
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    coarse, question = (
        raw.decode("latin-1").split(":", 1)[0],
        raw.decode("latin-1").split(" ", 1)[1],
    )
    assert train.sentences[65] == question and "\xf0" in question and "sister" in question
    assert data.label_names[train.labels[65]] == coarse == "LOC"
    assert data.label_names == ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    assert train.sentences[0] == "How did serfdom develop in and then leave Russia ?"
    assert data.label_names[train.labels[0]] == "DESC"
    assert set(np.unique(train.labels)) == set(range(6))


def test_mrpc_bom_header_and_counts():
    data = load_transfer("MRPC")
    train, test = data.split("train"), data.split("test")
    assert (len(train), len(test)) == (4076, 1725)
    for name, split in (("train", train), ("test", test)):
        rows = (DOWN / "MRPC" / f"msr_paraphrase_{name}.txt").read_bytes().split(b"\n")
        assert rows[0].startswith(b"\xef\xbb\xbfQuality\t")
        body = [r.decode("utf-8").split("\t") for r in rows[1:] if r]
        assert [int(r[0]) for r in body] == split.labels.tolist()
        assert list(split.sentences) == [" ".join(r[3].split()) for r in body]
        assert list(split.pair_sentences) == [" ".join(r[4].split()) for r in body]
    assert not any("\ufeff" in s for s in train.sentences)


def test_sst2_counts_and_format():
    data = load_transfer("SST2")
    assert [(s.name, len(s)) for s in data.splits] == [
        ("train", 67349),
        ("dev", 872),
        ("test", 1821),
    ]
    first = (DOWN / "SST" / "binary" / "sentiment-train").read_text("utf-8").split("\n")[0]
    text, label = first.rsplit("\t", 1)
    assert data.split("train").sentences[0] == text.strip() and data.split("train").labels[
        0
    ] == int(label)


def test_load_transfer_errors(tmp_path):
    with pytest.raises(ValueError, match=r"task='STS' is invalid; expected one of"):
        load_transfer("STS")
    with pytest.raises(FileNotFoundError, match="MR data directory not found"):
        load_transfer("MR", data_dir=tmp_path)
    (tmp_path / "downstream" / "TREC").mkdir(parents=True)
    (tmp_path / "downstream" / "TREC" / "train_5500.label").write_text("XYZ:foo What ?\n")
    (tmp_path / "downstream" / "TREC" / "TREC_10.label").write_text("")
    with pytest.raises(ValueError, match="line 1"):
        load_transfer("TREC", data_dir=tmp_path)


# --------------------------------------------------------------------------- protocol


def _synthetic(n: int, dim: int, signal: float, seed: int, n_classes: int = 2):
    """Sentences 'sK' with vectors mean-shifted by class; same token count for all."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % n_classes
    rng.shuffle(labels)
    means = rng.standard_normal((n_classes, dim)) * signal
    table, sents = {}, []
    for i, y in enumerate(labels):
        s = f"s{seed}x{i}"
        table[s] = means[y] + rng.standard_normal(dim)
        sents.append(s)
    return sents, labels, table


def test_separable_features_give_100_and_random_features_chance():
    sents, labels, table = _synthetic(300, 8, signal=5.0, seed=1)
    data = TransferData("toy", (TransferSplit("all", tuple(sents), labels),), ("a", "b"))
    r = evaluate_transfer(LookupEncoder(table), data, kfold=5, inner_kfold=3)
    assert r.accuracy == 100.0 and r.fold_accuracies == (100.0,) * 5

    sents, labels, table = _synthetic(600, 8, signal=0.0, seed=2)
    data = TransferData("toy", (TransferSplit("all", tuple(sents), labels),), ("a", "b"))
    r = evaluate_transfer(LookupEncoder(table), data, kfold=5, inner_kfold=3)
    assert 40.0 < r.accuracy < 60.0


def _oracle_nested_cv(X, y, kfold, inner, seed, grid):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    accs, cs = [], []
    for tr, te in StratifiedKFold(kfold, shuffle=True, random_state=seed).split(X, y):
        gs = GridSearchCV(
            LogisticRegression(tol=1e-8, max_iter=10000),
            {"C": list(grid)},
            cv=StratifiedKFold(inner, shuffle=True, random_state=seed),
        )
        gs.fit(X[tr], y[tr])
        cs.append(gs.best_params_["C"])
        accs.append(100 * gs.score(X[te], y[te]))
    return accs, cs


def test_cv_protocol_matches_gridsearch_oracle():
    sents, labels, table = _synthetic(400, 6, signal=0.35, seed=3)
    data = TransferData("toy", (TransferSplit("all", tuple(sents), labels),), ("a", "b"))
    r = evaluate_transfer(LookupEncoder(table), data, kfold=4, inner_kfold=3, n_jobs=2)
    order = np.argsort(labels, kind="stable")  # SentEval order: equal token counts -> by label
    X = np.stack([table[s] for s in sents])[order]
    accs, cs = _oracle_nested_cv(X, labels[order], 4, 3, 1111, DEFAULT_C_GRID)
    assert np.allclose(r.fold_accuracies, accs) and r.c == tuple(cs)
    assert r.accuracy == pytest.approx(np.mean(accs))
    assert (r.n_samples, r.n_train, r.n_test, r.kfold, r.inner_kfold) == (400, 400, 400, 4, 3)


def test_train_test_and_dev_protocols_match_oracles():
    from sklearn.linear_model import LogisticRegression

    sents, labels, table = _synthetic(360, 5, signal=0.5, seed=4, n_classes=3)
    tr = TransferSplit("train", tuple(sents[:240]), labels[:240])
    te = TransferSplit("test", tuple(sents[240:]), labels[240:])
    r = evaluate_transfer(
        LookupEncoder(table), TransferData("toy3", (tr, te), ("a", "b", "c")), inner_kfold=4
    )
    X = np.stack([table[s] for s in sents])
    order = np.argsort(labels[:240], kind="stable")  # SentEval order (equal token counts)
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    gs = GridSearchCV(
        LogisticRegression(tol=1e-8, max_iter=10000),
        {"C": list(DEFAULT_C_GRID)},
        cv=StratifiedKFold(4, shuffle=True, random_state=1111),
    )
    gs.fit(X[:240][order], labels[:240][order])
    assert r.c == (gs.best_params_["C"],)
    assert r.accuracy == pytest.approx(100 * gs.score(X[240:], labels[240:]))
    assert (r.n_train, r.n_test, r.f1) == (240, 120, None)

    # train/dev/test: C by dev accuracy (first best), cold-start oracle loop
    dv = TransferSplit("dev", tuple(sents[240:300]), labels[240:300])
    te2 = TransferSplit("test", tuple(sents[300:]), labels[300:])
    r2 = evaluate_transfer(
        LookupEncoder(table), TransferData("toy3", (tr, dv, te2), ("a", "b", "c"))
    )
    dev_acc = [
        LogisticRegression(C=c, tol=1e-8, max_iter=10000)
        .fit(X[:240], labels[:240])
        .score(X[240:300], labels[240:300])
        for c in DEFAULT_C_GRID
    ]
    best = DEFAULT_C_GRID[int(np.argmax(np.round(100 * np.array(dev_acc), 2)))]
    clf = LogisticRegression(C=best, tol=1e-8, max_iter=10000).fit(X[:240], labels[:240])
    assert r2.c == (best,) and r2.n_dev == 60
    assert r2.accuracy == pytest.approx(100 * clf.score(X[300:], labels[300:]))

    # a train split alone, or a split named otherwise, says what is expected (was a KeyError)
    for splits in [(tr,), (tr, TransferSplit("valid", te.sentences, te.labels))]:
        with pytest.raises(ValueError, match="'train' and 'test', optionally with 'dev'"):
            evaluate_transfer(LookupEncoder(table), TransferData("toy3", splits, ("a", "b", "c")))
    with pytest.raises(ValueError, match="seed=None"):
        evaluate_transfer(
            LookupEncoder(table), TransferData("toy3", (tr, te), ("a", "b", "c")), seed=None
        )


def test_pair_features_and_mrpc_f1():
    u = np.array([[1.0, -2.0], [0.5, 3.0]])
    v = np.array([[3.0, 1.0], [0.5, -1.0]])
    assert np.array_equal(pair_features(u, v), [[2.0, 3.0, 3.0, -2.0], [0.0, 4.0, 0.25, -3.0]])

    rng = np.random.default_rng(5)
    a = [f"a{i}" for i in range(200)]
    b = [f"b{i}" for i in range(200)]
    y = (np.arange(200) % 3 != 0).astype(np.int64)  # 2/3 positives as in MRPC
    table = {}
    for i in range(200):
        base = rng.standard_normal(4)
        table[a[i]] = base
        table[b[i]] = base + rng.standard_normal(4) * (0.1 if y[i] else 1.5)
    tr = TransferSplit("train", tuple(a[:150]), y[:150], tuple(b[:150]))
    te = TransferSplit("test", tuple(a[150:]), y[150:], tuple(b[150:]))
    r = evaluate_transfer(
        LookupEncoder(table), TransferData("MRPC", (tr, te), ("n", "p")), inner_kfold=3
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score

    E = lambda s: np.stack([table[x] for x in s])  # noqa: E731
    clf = LogisticRegression(C=r.c[0], tol=1e-8, max_iter=10000).fit(
        pair_features(E(a[:150]), E(b[:150])), y[:150]
    )
    pred = clf.predict(pair_features(E(a[150:]), E(b[150:])))
    assert r.f1 == pytest.approx(100 * f1_score(y[150:], pred))
    assert r.accuracy == pytest.approx(100 * np.mean(pred == y[150:]))
    assert "[|u-v|, u*v]" in r.protocol


def test_each_distinct_sentence_encoded_once_and_hooks_apply():
    sents = ("Good film", "bad film", "Good film", "", "BAD Film")
    labels = np.array([1, 0, 1, 0, 0])
    enc = HashBOW()
    data = TransferData("toy", (TransferSplit("all", sents * 4, np.tile(labels, 4)),), ("n", "p"))
    r = evaluate_transfer(
        enc,
        data,
        kfold=2,
        inner_kfold=2,
        lowercase=True,
        preprocess=lambda s: s.replace("film", "movie"),
    )
    assert len(enc.calls) == 1  # one encode call holding each distinct prepared sentence once
    # preprocess runs before lowercase: "BAD Film" -> "bad film" (no "film" to replace)
    assert sorted(enc.calls[0]) == ["", "bad film", "bad movie", "good movie"]
    assert (r.n_distinct_sentences, r.n_empty_sentences, r.n_zero_vectors) == (4, 1, 1)


def test_a_batch_preprocessor_gets_each_split_in_one_call_with_the_same_text(monkeypatch):
    from sentvec.sent2vec.preprocessing import Preprocessing

    sents = ("Don't stop-me now!", "It's 3.5 U.S. dollars...", "Don't stop-me now!", '"Quoted"')
    data = TransferData(
        "toy", (TransferSplit("all", sents * 4, np.tile([1, 0, 1, 0], 4)),), ("n", "p")
    )
    moses = Preprocessing(lowercase=True, tokenizer="moses")
    batches = []
    real = Preprocessing.prepare_batch
    monkeypatch.setattr(
        Preprocessing, "prepare_batch", lambda self, xs: batches.append(len(xs)) or real(self, xs)
    )
    by_batch, by_line = HashBOW(), HashBOW()
    r1 = evaluate_transfer(by_batch, data, kfold=2, inner_kfold=2, preprocess=moses)
    r2 = evaluate_transfer(by_line, data, kfold=2, inner_kfold=2, preprocess=moses.prepare)
    assert batches == [16]  # one call for the split's 16 sentences
    assert by_batch.calls == by_line.calls  # the per-sentence hook's text, item for item
    assert "don 't stop-me now !" in by_batch.calls[0]
    assert r1.accuracy == r2.accuracy
    with pytest.raises(TypeError, match="prepare_batch"):
        evaluate_transfer(HashBOW(), data, kfold=2, inner_kfold=2, preprocess=object())


def test_real_task_subsample_with_toy_encoder():
    full = load_transfer("TREC")
    tr, te = full.split("train"), full.split("test")
    keep = slice(0, 1500)
    sub = TransferData(
        "TREC", (TransferSplit("train", tr.sentences[keep], tr.labels[keep]), te), full.label_names
    )
    r = evaluate_transfer(HashBOW(32), sub, inner_kfold=3, c_grid=(0.25, 4.0))
    majority = 100 * np.bincount(te.labels).max() / len(te)
    assert r.accuracy > majority + 10  # bag of words separates question types well above chance
    assert r.n_test == 500 and r.model == {"encoder": "HashBOW"}


def test_result_roundtrip_and_errors():
    sents, labels, table = _synthetic(60, 3, 1.0, seed=6)
    data = TransferData("toy", (TransferSplit("all", tuple(sents), labels),), ("a", "b"))
    r = evaluate_transfer(LookupEncoder(table), data, kfold=3, inner_kfold=2, c_grid=[4, 1])
    assert r.c_grid == (1.0, 4.0)
    d = json.loads(r.to_json())
    assert TransferResult.from_dict(d) == r and d["task"] == "toy"
    with pytest.raises(ValueError, match="kfold=1 is invalid"):
        evaluate_transfer(LookupEncoder(table), data, kfold=1)
    with pytest.raises(ValueError, match="c_grid"):
        evaluate_transfer(LookupEncoder(table), data, c_grid=[0.0, 1.0])

    class Bad:
        def encode(self, s, **kw):
            return np.zeros((len(s) + 1, 2))

    with pytest.raises(ValueError, match="encoder returned shape"):
        evaluate_transfer(Bad(), data)


def _result(task, acc, f1=None):
    return TransferResult(
        task=task,
        accuracy=acc,
        f1=f1,
        dev_accuracy=acc,
        n_samples=1,
        n_train=1,
        n_test=1,
        n_dev=None,
        n_distinct_sentences=1,
        n_empty_sentences=0,
        n_zero_vectors=0,
        c=(1.0,),
        fold_accuracies=(acc,),
        protocol="p",
        model={},
    )


def test_markdown_table_column_order_and_average():
    res = [
        _result("SST2", 80.0),
        _result("TREC", 80.8),
        _result("MR", 66.7),
        _result("CR", 73.5),
        _result("SUBJ", 88.0),
        _result("MPQA", 80.7),
        _result("MRPC", 71.0, 80.4),
    ]
    table = transfer_table_markdown(res, name="s2v")
    head, rule, row = table.strip().split("\n")
    assert head == "| Model | MRPC (acc / F1) | MR | CR | SUBJ | MPQA | TREC | Avg | SST2 |"
    # reference README: Avg of 71.0, 66.7, 73.5, 88.0, 80.7, 80.8 = 76.78 -> 76.8
    assert row == "| s2v | 71.0 / 80.4 | 66.7 | 73.5 | 88.0 | 80.7 | 80.8 | 76.8 | 80.0 |"
    two = transfer_table_markdown({"a": res[:2], "b": res}).strip().split("\n")
    assert two[2] == "| a | - | - | - | - | - | 80.8 | - | 80.0 |" and two[3].startswith("| b |")
    assert TRANSFER_TASKS[:6] == ("MRPC", "MR", "CR", "SUBJ", "MPQA", "TREC")
