"""``evaluate_transfer(..., protocol="senteval")`` against an independent transcription of
SentEval's scikit-learn path (facebookresearch/SentEval ``senteval/tools/validation.py``, read at
commit 5d6dc11), written here in plain scikit-learn: its C grids, folds, solver settings, cold
fits, float32 features and rounding. The real-task check uses the tiny Sent2Vec model made with the
official binary, with the task files read here as SentEval reads them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from sentvec._data import data_dir
from sentvec.evaluation.transfer import (
    SENTEVAL_C_GRID,
    SENTEVAL_TRAIN_TEST_C_GRID,
    TransferData,
    TransferResult,
    TransferSplit,
    evaluate_transfer,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

DOWN = data_dir() / "downstream"
BIGRAM = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"


@pytest.fixture(autouse=True)
def _single_thread_blas():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


# --------------------------------------------------------------------------- the oracle
# SentEval calls LogisticRegression(C=reg, random_state=seed): scikit-learn's defaults, i.e.
# lbfgs, tol=1e-4, max_iter=100, no warm start (random_state is unused by lbfgs). Written out
# here so that a change of scikit-learn's defaults cannot move the oracle silently.


def _clf(c):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, solver="lbfgs", tol=1e-4, max_iter=100)


def _skf(k, seed):
    from sklearn.model_selection import StratifiedKFold

    return StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)


def oracle_cross_validated(X, y, k=10, seed=1111):
    """SentEval's InnerKFoldClassifier: C in 2^-2..2^3, inner folds = outer folds = k."""
    grid = [2.0**t for t in range(-2, 4)]
    devs, tests, cs = [], [], []
    for train, test in _skf(k, seed).split(X, y):
        Xa, ya = X[train], y[train]
        scores = []
        for c in grid:
            fold_scores = [
                _clf(c).fit(Xa[i], ya[i]).score(Xa[j], ya[j])
                for i, j in _skf(k, seed).split(Xa, ya)
            ]
            scores.append(round(100 * np.mean(fold_scores), 2))
        best = int(np.argmax(scores))
        cs.append(grid[best])
        devs.append(scores[best])
        tests.append(round(100 * _clf(grid[best]).fit(Xa, ya).score(X[test], y[test]), 2))
    return round(np.mean(tests), 2), round(np.mean(devs), 2), tests, cs


def oracle_train_test(Xtr, ytr, Xte, yte, k=10, seed=1111):
    """SentEval's KFoldClassifier: C in 2^-1..2^5 by k-fold CV on train, then one fit on train."""
    grid = [2.0**t for t in range(-1, 6)]
    folds = list(_skf(k, seed).split(Xtr, ytr))
    scores = [
        round(
            100 * np.mean([_clf(c).fit(Xtr[i], ytr[i]).score(Xtr[j], ytr[j]) for i, j in folds]), 2
        )
        for c in grid
    ]
    best = int(np.argmax(scores))
    clf = _clf(grid[best]).fit(Xtr, ytr)
    return round(100 * clf.score(Xte, yte), 2), max(scores), grid[best], clf.predict(Xte)


def oracle_split(Xtr, ytr, Xdev, ydev, Xte, yte):
    """SentEval's SplitClassifier: C in 2^-2..2^3 by dev accuracy."""
    grid = [2.0**t for t in range(-2, 4)]
    scores = [round(100 * _clf(c).fit(Xtr, ytr).score(Xdev, ydev), 2) for c in grid]
    best = int(np.argmax(scores))
    return round(100 * _clf(grid[best]).fit(Xtr, ytr).score(Xte, yte), 2), grid[best]


def _senteval_sorted(samples, labels):
    """SentEval's order before encoding: stable sort by token count (pairs: of each side), then
    label. ``samples``: token lists, or (tokens_a, tokens_b) pairs."""

    def key(i):
        s = samples[i]
        lengths = (len(s[0]), len(s[1])) if isinstance(s, tuple) else (len(s),)
        return lengths + (labels[i],)

    order = sorted(range(len(samples)), key=key)
    return [samples[i] for i in order], np.array([labels[i] for i in order])


# --------------------------------------------------------------------------- synthetic, fast


class Lookup:
    """Fixed float64 vector per sentence: the protocol must cast to float32 as SentEval gets."""

    def __init__(self, table):
        self.table = table

    def encode(self, sentences, *, batch_size=32, show_progress_bar=None):
        return np.stack([self.table[s] for s in sentences]).astype(np.float64)


def _toy(n, dim, signal, seed, n_classes=2, scale=37.0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    means = rng.standard_normal((n_classes, dim)) * signal
    # scaled so that float32 rounding of the features is not negligible and lbfgs needs work
    X = (means[y] + rng.standard_normal((n, dim))) * scale + 1e-3 * rng.standard_normal((n, dim))
    sents = [f"w{i}" for i in range(n)]  # one token each: SentEval's order is by label
    return sents, y, dict(zip(sents, X, strict=True))


def test_senteval_cv_protocol_equals_oracle():
    sents, y, table = _toy(231, 6, 0.3, seed=11)  # folds of 77: accuracies need rounding
    data = TransferData("toy", (TransferSplit("all", tuple(sents), y),), ("a", "b"))
    r = evaluate_transfer(Lookup(table), data, protocol="senteval", kfold=3)
    order = np.argsort(y, kind="stable")
    X = np.stack([table[s] for s in sents]).astype(np.float32)[order]
    acc, dev, folds, cs = oracle_cross_validated(X, y[order], k=3)
    assert r.fold_accuracies == tuple(folds) and r.c == tuple(cs)
    assert (r.accuracy, r.dev_accuracy) == (acc, dev)
    assert all(round(a, 2) == a for a in r.fold_accuracies)
    assert (r.kfold, r.inner_kfold, r.c_grid) == (3, 3, SENTEVAL_C_GRID)


def test_senteval_train_test_and_dev_protocols_equal_oracles():
    sents, y, table = _toy(330, 5, 0.4, seed=12, n_classes=3)
    X = np.stack([table[s] for s in sents]).astype(np.float32)
    tr = TransferSplit("train", tuple(sents[:240]), y[:240])
    te = TransferSplit("test", tuple(sents[240:]), y[240:])
    r = evaluate_transfer(
        Lookup(table), TransferData("toy3", (tr, te), ("a", "b", "c")), protocol="senteval", kfold=4
    )
    o = np.argsort(y[:240], kind="stable")
    acc, dev, c, _ = oracle_train_test(X[:240][o], y[:240][o], X[240:], y[240:], k=4)
    assert (r.accuracy, r.dev_accuracy, r.c) == (acc, dev, (c,))
    assert r.c_grid == SENTEVAL_TRAIN_TEST_C_GRID and r.inner_kfold == 4

    dv = TransferSplit("dev", tuple(sents[240:285]), y[240:285])
    te2 = TransferSplit("test", tuple(sents[285:]), y[285:])
    r2 = evaluate_transfer(
        Lookup(table), TransferData("toy3", (tr, dv, te2), ("a", "b", "c")), protocol="senteval"
    )
    acc2, c2 = oracle_split(X[:240][o], y[:240][o], X[240:285], y[240:285], X[285:], y[285:])
    assert (r2.accuracy, r2.c, r2.c_grid) == (acc2, (c2,), SENTEVAL_C_GRID)


def test_protocol_settings_recorded_and_fixed_settings_refused():
    sents, y, table = _toy(60, 3, 1.0, seed=13, scale=1.0)
    data = TransferData("toy", (TransferSplit("all", tuple(sents), y),), ("a", "b"))
    r = evaluate_transfer(Lookup(table), data, protocol="senteval", kfold=3)
    d = json.loads(r.to_json())
    assert {
        k: d[k]
        for k in (
            "protocol_name",
            "tol",
            "max_iter",
            "warm_start",
            "feature_dtype",
            "round_decimals",
            "inner_kfold",
        )
    } == {
        "protocol_name": "senteval",
        "tol": 1e-4,
        "max_iter": 100,
        "warm_start": False,
        "feature_dtype": "float32",
        "round_decimals": 2,
        "inner_kfold": 3,
    }
    assert (
        d["protocol"].startswith("SentEval scikit-learn path") and TransferResult.from_dict(d) == r
    )
    s = evaluate_transfer(Lookup(table), data, kfold=3)  # default protocol: unchanged settings
    assert (
        s.protocol_name,
        s.tol,
        s.max_iter,
        s.warm_start,
        s.feature_dtype,
        s.round_decimals,
        s.inner_kfold,
        len(s.c_grid),
    ) == ("sentvec", 1e-6, 2000, True, "float64", None, 5, 7)
    for kw in ({"inner_kfold": 5}, {"c_grid": [1.0]}, {"tol": 1e-6}, {"max_iter": 500}):
        with pytest.raises(ValueError, match=f"protocol='senteval' fixes {next(iter(kw))}"):
            evaluate_transfer(Lookup(table), data, protocol="senteval", **kw)
    with pytest.raises(ValueError, match="protocol='SentEval' is invalid"):
        evaluate_transfer(Lookup(table), data, protocol="SentEval")


def test_cli_protocol_flag(tmp_path, capsys, tiny_model):
    from sentvec.cli import main

    assert (
        main(
            [
                "eval-transfer",
                "--model",
                str(BIGRAM),
                "--protocol",
                "senteval",
                "--inner-kfold",
                "3",
            ]
        )
        == 2
    )
    assert "--inner-kfold cannot be combined with --protocol senteval" in capsys.readouterr().err

    root = tmp_path / "data"  # TREC cut to 300 train / 100 test questions
    (root / "downstream" / "TREC").mkdir(parents=True)
    for name, n in (("train_5500.label", 300), ("TREC_10.label", 100)):
        raw = (DOWN / "TREC" / name).read_bytes().split(b"\n")[:n]
        (root / "downstream" / "TREC" / name).write_bytes(b"\n".join(raw) + b"\n")
    out = tmp_path / "res.json"
    assert (
        main(
            [
                "eval-transfer",
                "--model",
                str(BIGRAM),
                "--tasks",
                "TREC",
                "--data",
                str(root),
                "--protocol",
                "senteval",
                "--kfold",
                "3",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    assert "protocol: SentEval scikit-learn path" in capsys.readouterr().out
    payload = json.loads(out.read_text())
    api = evaluate_transfer(tiny_model, "TREC", data_dir=root, protocol="senteval", kfold=3)
    assert payload["protocol"] == "senteval"
    got = TransferResult.from_dict(payload["results"][0])
    assert (got.accuracy, got.c, got.protocol_name, got.c_grid) == (
        api.accuracy,
        api.c,
        "senteval",
        SENTEVAL_TRAIN_TEST_C_GRID,
    )


# --------------------------------------------------------------------------- real tasks


def _read_lines(path, encoding):
    with open(path, encoding=encoding) as fh:
        return fh.read().splitlines()


def _senteval_task(task):
    """Token lists and labels read as SentEval's loaders do (independent of sentvec's readers)."""
    d = DOWN / task
    if task == "MR":
        pos = [x.split() for x in _read_lines(d / "rt-polarity.pos", "latin-1")]
        neg = [x.split() for x in _read_lines(d / "rt-polarity.neg", "latin-1")]
        return _senteval_sorted(pos + neg, [1] * len(pos) + [0] * len(neg)), None
    if task == "TREC":
        out = []
        for name in ("train_5500.label", "TREC_10.label"):
            classes = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
            rows = [line.strip().split(":", 1) for line in _read_lines(d / name, "latin-1")]
            out.append(
                _senteval_sorted(
                    [q.split(" ", 1)[1].split() for _, q in rows],
                    [classes.index(t) for t, _ in rows],
                )
            )
        return out
    out = []
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        rows = [line.strip().split("\t") for line in _read_lines(d / name, "utf-8")][1:]
        out.append(
            _senteval_sorted(
                [(r[3].split(), r[4].split()) for r in rows], [int(r[0]) for r in rows]
            )
        )
    return out


@pytest.fixture(scope="module")
def tiny_model():
    from sentvec.encoders import load_encoder

    return load_encoder(str(BIGRAM))


@pytest.mark.slow
@pytest.mark.parametrize("task", ["MRPC", "TREC", "MR"])
def test_senteval_protocol_equals_independent_sklearn_on_real_tasks(task, tiny_model):
    def embed(token_lists):
        return np.asarray(tiny_model.encode([" ".join(t) for t in token_lists]), np.float32)

    t0 = time.perf_counter()
    r = evaluate_transfer(tiny_model, task, protocol="senteval", n_jobs=2)
    t1 = time.perf_counter()
    if task == "MR":
        (samples, y), _ = _senteval_task("MR")
        acc, dev, folds, cs = oracle_cross_validated(embed(samples), y)
        assert r.fold_accuracies == tuple(folds) and r.c == tuple(cs)
    elif task == "TREC":
        (s_tr, y_tr), (s_te, y_te) = _senteval_task("TREC")
        acc, dev, c, _ = oracle_train_test(embed(s_tr), y_tr, embed(s_te), y_te)
        assert r.c == (c,)
    else:
        from sklearn.metrics import f1_score

        feats = []
        for pairs, _ in _senteval_task("MRPC"):
            u, v = embed([a for a, _ in pairs]), embed([b for _, b in pairs])
            feats.append(np.c_[np.abs(u - v), u * v])
        (_, y_tr), (_, y_te) = _senteval_task("MRPC")
        acc, dev, c, pred = oracle_train_test(feats[0], y_tr, feats[1], y_te)
        assert r.c == (c,) and abs(r.f1 - round(100 * f1_score(y_te, pred), 2)) <= 0.01
    print(
        f"{task}: senteval {r.accuracy:.2f} (oracle {acc:.2f}); sentvec {t1 - t0:.1f} s, "
        f"oracle {time.perf_counter() - t1:.1f} s"
    )
    assert abs(r.accuracy - acc) <= 0.01 and abs(r.dev_accuracy - dev) <= 0.01
