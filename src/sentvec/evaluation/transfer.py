"""SentEval-style transfer (sentence classification) tasks: the classifier protocols of
:func:`evaluate_transfer`. The readers (:func:`load_transfer`) are in
:mod:`sentvec.evaluation.transfer_data`.

Two classifier protocols are offered (``evaluate_transfer(..., protocol=...)``); both fit
L2-regularised logistic regression (scikit-learn, lbfgs) on the raw, unstandardised embeddings,
order the samples as SentEval does and pick C by rounded accuracy (first best of the ascending
grid). Their settings are recorded in every :class:`TransferResult` (``protocol_name``,
``c_grid``, ``kfold``, ``inner_kfold``, ``tol``, ``max_iter``, ``warm_start``, ``feature_dtype``,
``round_decimals``).

``protocol="senteval"`` -- SentEval's own scikit-learn path (facebookresearch/SentEval,
``senteval/tools/validation.py``: ``InnerKFoldClassifier``, ``KFoldClassifier``,
``SplitClassifier``; checked against commit 5d6dc11), reproduced setting by setting:

* C grids: 2^-2 ... 2^3 for MR, CR, SUBJ, MPQA and SST2; 2^-1 ... 2^5 for TREC and MRPC.
* MR, CR, SUBJ, MPQA: outer stratified ``kfold``-fold CV, C per outer fold by an inner
  stratified CV with the same number of folds (SentEval's ``kfold`` parameter serves both; its
  README's default configuration passes 10, its prototyping one and its engine's fallback 5;
  ``kfold=10`` here). Both shuffles use ``random_state=seed``; note that
  SentEval hard-codes 1111 there whatever its ``seed``, so only ``seed=1111`` is SentEval's.
* TREC, MRPC: C by stratified ``kfold``-fold CV on train (``random_state=seed``), one fit on all
  of train, accuracy on test. SST2: C by dev accuracy.
* ``LogisticRegression(C=c, solver="lbfgs", tol=1e-4, max_iter=100)``, a fresh (cold) fit for
  every C and fold: SentEval passes only ``C`` and ``random_state``, so these are scikit-learn's
  defaults since 0.22 (lbfgs, multinomial for TREC), pinned here. Before 0.22 the default was
  liblinear one-vs-rest, so SentEval numbers produced with an old scikit-learn differ again.
  Fits stopping at 100 iterations are common and counted, as in SentEval (which warns).
* float32 features (what SentEval's batchers hand it; MRPC's ``[|u - v|, u * v]`` computed in
  float32); scikit-learn keeps float32 for lbfgs. Where the fits stop at ``max_iter`` the
  accuracy depends on the features' last bits: on MR with the 16-dimensional tiny reference
  model, SentEval's own ``MREval`` (commit 5d6dc11, run unmodified with a batcher returning
  ``Sent2Vec.encode`` of the joined tokens) gives 55.11 on float32 vectors, as this protocol
  does, but 54.85 on the same vectors as float64 and 54.85 / 54.90 on vectors rounded to 6
  significant digits (a text dump) as float32 / float64. A figure of 54.92 measured earlier
  came from such a batcher; with float32 vectors the two agree exactly.
* Accuracies in percent rounded to 2 decimals: each C's mean inner-CV score, each outer fold's
  test accuracy, the mean over folds (``accuracy``, ``dev_accuracy``) and MRPC's F1.

``protocol="sentvec"`` (the default; the reference README's "Transfer tasks with the official
model", i.e. SentEval's scikit-learn path with the Sent2Vec paper's grid): L2-regularised
logistic regression (scikit-learn, lbfgs) on the raw embeddings -- features are not
standardised, as in SentEval and the reference run -- with the inverse regularisation strength C
chosen from ``c_grid`` (2^-2 ... 2^4) by inner stratified 5-fold cross-validation on the training
data:

* MR, CR, SUBJ, MPQA: outer stratified 10-fold CV; C chosen per outer fold; accuracy is the mean
  over the outer folds. Samples are first put in SentEval's order (stable sort by token count,
  then label) so that, with ``seed=1111``, the outer folds are SentEval's.
* TREC, MRPC: C by inner CV on the train split, one fit on all of train, accuracy on test
  (MRPC also F1 of the paraphrase class). MRPC features are ``[|u - v|, u * v]``
  (Sent2Vec paper, section 4; SentEval ``mrpc.py``).
* SST2: C chosen by accuracy on dev, then accuracy on test (SentEval ``SplitClassifier``).

For each C the inner-CV accuracy is rounded to 2 decimals (in percent) and the first best C of the
ascending grid wins, as in SentEval. Speed without changing the protocol: inner fits walk the grid
from small to large C with warm starts (the L2 problem is strictly convex, so the optimum is the
same); lbfgs runs to ``tol=1e-6`` (scikit-learn's default 1e-4 is so loose for its sample-averaged
loss that a warm start would stop at once and the results would depend on the start; on MiniLM
MR features a 1e-6 fit disagreed with a 1e-12 fit on 0 of ~2,100 test predictions, a 1e-4 fit on
3); float64 features; per-fold and mean test accuracies are not rounded.

In both protocols the small fits use single-threaded BLAS, and ``n_jobs`` threads run independent
fits (inner folds, outer folds) in parallel.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sentvec._validation import check_choice, check_float_range, check_positive_int
from sentvec.encoders.base import Encoder, describe_encoder
from sentvec.evaluation.transfer_data import (  # the readers: importable from here too
    TRANSFER_TASKS,  # noqa: F401
    TransferData,
    TransferSplit,
    TransferTaskName,
    load_transfer,
)

#: Tasks averaged in the "Avg" column (Sent2Vec paper Table 1; MRPC counted by accuracy).
AVERAGED_TASKS: tuple[str, ...] = ("MRPC", "MR", "CR", "SUBJ", "MPQA", "TREC")
#: Default C grid: 2^-2 ... 2^4 (reference README).
DEFAULT_C_GRID: tuple[float, ...] = tuple(2.0**t for t in range(-2, 5))
TransferProtocol = Literal["sentvec", "senteval"]
#: Classifier protocols of :func:`evaluate_transfer` (see the module docstring).
TRANSFER_PROTOCOLS: tuple[str, ...] = ("sentvec", "senteval")
#: SentEval's C grids: 2^-2 ... 2^3 (``InnerKFoldClassifier``, ``SplitClassifier``: MR, CR, SUBJ,
#: MPQA, SST2) and 2^-1 ... 2^5 (``KFoldClassifier``: TREC, MRPC).
SENTEVAL_C_GRID: tuple[float, ...] = tuple(2.0**t for t in range(-2, 4))
SENTEVAL_TRAIN_TEST_C_GRID: tuple[float, ...] = tuple(2.0**t for t in range(-1, 6))


# --------------------------------------------------------------------------- classifier protocol


@dataclass(frozen=True)
class TransferResult:
    """Outcome of :func:`evaluate_transfer` on one task.

    Attributes
    ----------
    task : str
    accuracy : float
        Test accuracy in percent (mean over outer folds for MR, CR, SUBJ, MPQA).
    f1 : float or None
        F1 of the positive (paraphrase) class in percent, MRPC only.
    dev_accuracy : float
        Selection accuracy of the chosen C in percent (inner CV, or dev for SST2; mean over outer
        folds for the cross-validated tasks).
    n_samples, n_train, n_test : int
        Labelled samples in total, and used for training / testing. For the cross-validated
        tasks every sample is tested once, so ``n_train == n_test == n_samples`` (as SentEval
        reports them).
    n_dev : int or None
        SST2 dev size.
    n_distinct_sentences, n_empty_sentences, n_zero_vectors : int
        Distinct sentences encoded, how many of them are empty, and how many got an all-zero vector.
    c : tuple of float
        Chosen C per outer fold (one value for the train/test tasks).
    fold_accuracies : tuple of float
        Test accuracy (percent) per outer fold (one value for the train/test tasks).
    protocol : str
        Human-readable protocol description.
    model : dict
        ``sentvec.encoders.base.describe_encoder(encoder)``.
    seed, kfold, inner_kfold : int
    c_grid : tuple of float
    n_convergence_warnings : int
        lbfgs fits that stopped at ``max_iter`` before convergence.
    protocol_name : {"sentvec", "senteval"}
        The classifier protocol (module docstring); its settings are the fields around it.
    tol, max_iter : float, int
        lbfgs tolerance and iteration cap.
    warm_start : bool
        Whether the inner fits walk the C grid with warm starts (sentvec) or start cold (senteval).
    feature_dtype : {"float64", "float32"}
        dtype of the features handed to scikit-learn.
    round_decimals : int or None
        Decimals (of percent) the per-fold and mean test accuracies and F1 are rounded to
        (2 for senteval); None: not rounded. Selection scores are rounded to 2 in both.
    encode_seconds, wall_seconds : float
        Wall-clock time of the encoding, and of the whole evaluation (loading included).
    cpu_seconds : float
        CPU time of this process over the whole evaluation (all threads): comparable across
        runs on a busy machine, unlike wall time.
    """

    task: str
    accuracy: float
    f1: float | None
    dev_accuracy: float
    n_samples: int
    n_train: int
    n_test: int
    n_dev: int | None
    n_distinct_sentences: int
    n_empty_sentences: int
    n_zero_vectors: int
    c: tuple[float, ...]
    fold_accuracies: tuple[float, ...]
    protocol: str
    model: dict[str, Any] = field(hash=False)
    seed: int = 1111
    kfold: int = 10
    inner_kfold: int = 5
    c_grid: tuple[float, ...] = DEFAULT_C_GRID
    n_convergence_warnings: int = 0
    protocol_name: str = "sentvec"
    tol: float = 1e-6
    max_iter: int = 2000
    warm_start: bool = True
    feature_dtype: str = "float64"
    round_decimals: int | None = None
    encode_seconds: float = 0.0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict of every field (tuples become lists)."""
        return asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict())``; keyword arguments go to ``json.dumps``."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TransferResult:
        """Inverse of :meth:`to_dict`."""
        kw = dict(d)
        for k in ("c", "fold_accuracies", "c_grid"):
            kw[k] = tuple(kw[k])
        return cls(**kw)


def _check_c_grid(c_grid: Iterable[float]) -> tuple[float, ...]:
    grid = tuple(float(c) for c in c_grid)
    if not grid or not all(np.isfinite(c) and c > 0 for c in grid):
        raise ValueError(f"c_grid={grid!r} is invalid; expected positive finite values")
    if len(set(grid)) != len(grid):
        raise ValueError(f"c_grid={grid!r} is invalid; values must be distinct")
    return tuple(sorted(grid))


@dataclass(frozen=True)
class _LogReg:
    """Logistic-regression settings of one evaluation; its methods are the parallel work units."""

    c_grid: tuple[float, ...]
    tol: float
    max_iter: int
    warm_start: bool = True
    round_decimals: int | None = None

    def new(self, c: float, warm: bool = False) -> Any:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(
            C=c, solver="lbfgs", tol=self.tol, max_iter=self.max_iter, warm_start=warm
        )

    def path(self, X: np.ndarray, y: np.ndarray, tr: Any, te: Any) -> tuple[np.ndarray, int]:
        """Accuracy on ``te`` of fits on ``tr`` for every C (ascending; warm-started if
        ``warm_start``, else a fresh fit per C).

        Returns (accuracies of shape (len(c_grid),), number of fits that hit ``max_iter``).
        """
        X_tr, y_tr, X_te, y_te = X[tr], y[tr], X[te], y[te]
        clf = self.new(self.c_grid[0], warm=True)
        acc, hit = np.zeros(len(self.c_grid)), 0
        for j, c in enumerate(self.c_grid):
            if self.warm_start:
                clf.set_params(C=c)
            else:
                clf = self.new(c)
            clf.fit(X_tr, y_tr)
            hit += int(np.max(clf.n_iter_) >= self.max_iter)
            acc[j] = clf.score(X_te, y_te)
        return acc, hit

    def predict(
        self, c: float, X: np.ndarray, y: np.ndarray, tr: Any, X_te: np.ndarray
    ) -> tuple[np.ndarray, int]:
        """Fit at ``c`` on ``X[tr]`` (cold start) and predict ``X_te``."""
        clf = self.new(c).fit(X[tr], y[tr])
        return clf.predict(X_te), int(np.max(clf.n_iter_) >= self.max_iter)

    def best(self, mean_acc: np.ndarray) -> tuple[float, float]:
        """SentEval's choice: round percent accuracy to 2 decimals, first (smallest) best C."""
        scores = np.round(100 * mean_acc, 2)
        j = int(np.argmax(scores))
        return self.c_grid[j], float(scores[j])

    def fold_mean(self, paths: Sequence[np.ndarray]) -> np.ndarray:
        """Mean over folds of each C's accuracy, shape (len(c_grid),).

        Under rounding (senteval) each C's fold scores are averaged as one contiguous vector, as
        SentEval's ``np.mean`` of a list does, so the float sums (and the rounding) are its.
        """
        A = np.asarray(paths)
        if self.round_decimals is None:
            return np.mean(A, axis=0)
        return np.array([np.mean(np.ascontiguousarray(A[:, j])) for j in range(A.shape[1])])

    def percent(self, fraction: float) -> float:
        """``100 * fraction``, rounded to ``round_decimals`` when set (SentEval: 2)."""
        v = 100.0 * float(fraction)
        return v if self.round_decimals is None else round(v, self.round_decimals)


def _run(n_jobs: int, calls: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[Any]:
    """Run ``fn(*args)`` for each call, in threads when ``n_jobs > 1`` (BLAS is single-threaded)."""
    if n_jobs == 1 or len(calls) == 1:
        return [fn(*args) for fn, args in calls]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs, backend="threading")(delayed(fn)(*args) for fn, args in calls)


def _inner_splits(
    y: np.ndarray, tr: np.ndarray, k: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(tr[a], tr[b]) for a, b in skf.split(np.zeros(len(tr)), y[tr])]


def _cv_protocol(
    lr: _LogReg, X: np.ndarray, y: np.ndarray, kfold: int, inner_kfold: int, seed: int, n_jobs: int
):
    """Outer stratified k-fold CV with C chosen per outer fold by inner CV (SentEval InnerKFold)."""
    from sklearn.model_selection import StratifiedKFold

    outer = list(StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed).split(X, y))
    jobs = [
        (o, a, b)
        for o, (tr, _) in enumerate(outer)
        for a, b in _inner_splits(y, tr, inner_kfold, seed)
    ]
    paths = _run(n_jobs, [(lr.path, (X, y, a, b)) for _, a, b in jobs])
    hit = sum(h for _, h in paths)
    chosen = [
        lr.best(lr.fold_mean([p[0] for (o, _, _), p in zip(jobs, paths, strict=True) if o == k]))
        for k in range(kfold)
    ]
    preds = _run(
        n_jobs,
        [
            (lr.predict, (c, X, y, tr, X[te]))
            for (c, _), (tr, te) in zip(chosen, outer, strict=True)
        ],
    )
    hit += sum(h for _, h in preds)
    accs = [lr.percent(np.mean(p == y[te])) for (p, _), (_, te) in zip(preds, outer, strict=True)]
    return [c for c, _ in chosen], [d for _, d in chosen], accs, hit


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """MRPC features ``[|u - v|, u * v]``, shape (n, 2 d) (Sent2Vec paper section 4; SentEval)."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def _senteval_order(split: TransferSplit) -> np.ndarray:
    """Stable order by (token count, label), the order SentEval sorts samples in before CV."""
    keys: list[tuple[int, ...]]
    if split.pair_sentences is None:
        keys = [
            (len(s.split()), int(y)) for s, y in zip(split.sentences, split.labels, strict=True)
        ]
    else:
        keys = [
            (len(a.split()), len(b.split()), int(y))
            for a, b, y in zip(split.sentences, split.pair_sentences, split.labels, strict=True)
        ]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def _encode_distinct(
    encoder: Encoder, sentences: list[str], batch_size: int | None, show_progress_bar: bool | None
) -> tuple[dict[str, int], np.ndarray]:
    distinct = list(dict.fromkeys(sentences))
    emb = encoder.encode(distinct, batch_size=batch_size, show_progress_bar=show_progress_bar)
    emb = np.asarray(emb)
    if emb.ndim != 2 or emb.shape[0] != len(distinct):
        raise ValueError(
            f"encoder returned shape {emb.shape} for {len(distinct)} sentences; expected (n, d)"
        )
    if not np.isfinite(emb).all():
        raise ValueError(f"encoder returned {int((~np.isfinite(emb)).sum())} non-finite values")
    return {s: i for i, s in enumerate(distinct)}, emb.astype(np.float64)


def _protocol_settings(
    protocol: str,
    train_test: bool,
    kfold: int,
    inner_kfold: int | None,
    c_grid: Sequence[float] | None,
    tol: float | None,
    max_iter: int | None,
) -> tuple[int, _LogReg, str]:
    """(inner folds, classifier settings, feature dtype) of ``protocol`` for one task;
    ``train_test``: a train/test task without dev (SentEval's ``KFoldClassifier``)."""
    check_choice("protocol", protocol, TRANSFER_PROTOCOLS)
    if protocol == "senteval":
        given = [
            k
            for k, v in (
                ("inner_kfold", inner_kfold),
                ("c_grid", c_grid),
                ("tol", tol),
                ("max_iter", max_iter),
            )
            if v is not None
        ]
        if given:
            raise ValueError(
                f"protocol='senteval' fixes {', '.join(given)} as SentEval does "
                "(inner folds = kfold, its C grids, tol=1e-4, max_iter=100); "
                "use protocol='sentvec' to set them"
            )
        grid = SENTEVAL_TRAIN_TEST_C_GRID if train_test else SENTEVAL_C_GRID
        return kfold, _LogReg(grid, 1e-4, 100, warm_start=False, round_decimals=2), "float32"
    inner = 5 if inner_kfold is None else inner_kfold
    lr = _LogReg(
        _check_c_grid(DEFAULT_C_GRID if c_grid is None else c_grid),
        check_float_range("tol", 1e-6 if tol is None else tol, low=0, low_inclusive=False),
        check_positive_int("max_iter", 2000 if max_iter is None else max_iter),
    )
    return check_positive_int("inner_kfold", inner, minimum=2), lr, "float64"


def evaluate_transfer(
    encoder: Encoder,
    task: TransferTaskName | TransferData,
    *,
    protocol: TransferProtocol = "sentvec",
    data_dir: str | Path | None = None,
    seed: int = 1111,
    kfold: int = 10,
    inner_kfold: int | None = None,
    c_grid: Sequence[float] | None = None,
    batch_size: int | None = None,
    lowercase: bool = False,
    preprocess: Callable[[str], str] | Any = None,
    tol: float | None = None,
    max_iter: int | None = None,
    n_jobs: int = 1,
    show_progress_bar: bool | None = None,
) -> TransferResult:
    """Evaluate sentence embeddings on one transfer task with logistic regression.

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode(sentences, *, batch_size, show_progress_bar)`` returning
        ndarray (n, d). Each distinct sentence of the task is encoded once.
    task : task name or TransferData
        A name from :data:`TRANSFER_TASKS`, or already-loaded (e.g. subsampled) data.
    protocol : {"sentvec", "senteval"}
        The classifier protocol (module docstring): "sentvec" (default; the reference README's
        C grid, inner 5-fold CV, warm-started lbfgs to tol 1e-6, float64) or "senteval"
        (SentEval's scikit-learn path exactly: its C grids, inner folds = ``kfold``, a cold
        lbfgs fit per C with tol 1e-4 and max_iter 100, float32, accuracies rounded to 2 places).
    data_dir : path, optional
        Data root for :func:`load_transfer`.
    seed : int
        ``random_state`` of the stratified fold shuffles (1111 = SentEval's).
    kfold : int
        Outer folds for MR, CR, SUBJ, MPQA (10 in the Sent2Vec paper and reference README); for
        ``protocol="senteval"`` also the inner folds, and TREC's and MRPC's folds on train.
    inner_kfold : int, optional
        Folds of the inner CV choosing C (sentvec default 5). Fixed by ``protocol="senteval"``.
    c_grid : sequence of float, optional
        Candidate inverse L2 strengths C (sentvec default 2^-2 ... 2^4), tried in ascending
        order. Fixed by ``protocol="senteval"``.
    batch_size : int, optional
        Passed to ``encoder.encode`` (default: the encoder's own).
    lowercase : bool
        Lower-case sentences before encoding (a model trained on lower-cased text).
    preprocess : callable or Preprocessing, optional
        A callable ``str -> str`` applied to each sentence before encoding (before
        ``lowercase``), or an object whose ``prepare_batch(list of str) -> list of str`` gets
        all sentences of a split at once (:class:`sentvec.sent2vec.Preprocessing`).
    tol, max_iter : float, int, optional
        lbfgs gradient tolerance and iteration cap (sentvec defaults 1e-6 and 2000: at
        scikit-learn's 1e-4 a warm start would stop at once); fits hitting ``max_iter`` are
        counted in ``n_convergence_warnings``. Fixed by ``protocol="senteval"`` (1e-4, 100).
    n_jobs : int
        Threads running independent fits (inner folds, outer folds; single-threaded BLAS each).

    Returns
    -------
    TransferResult
        With the protocol's settings (``protocol_name``, ``c_grid``, ``tol``, ...).

    Raises
    ------
    ValueError
        Unknown task or protocol, bad fold counts, seed or grid, a setting the "senteval"
        protocol fixes, splits other than all / train+test(+dev), bad encoder output.

    Warns
    -----
    ConvergenceWarning
        Once, with their number, if any lbfgs fit stopped at ``max_iter``.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    data = task if isinstance(task, TransferData) else load_transfer(task, data_dir=data_dir)
    kfold = check_positive_int("kfold", kfold, minimum=2)
    n_jobs = check_positive_int("n_jobs", n_jobs)
    seed = check_positive_int("seed", seed, minimum=0)  # None would make folds irreproducible
    if batch_size is not None:
        batch_size = check_positive_int("batch_size", batch_size)
    inner_kfold, lr, dtype = _protocol_settings(
        protocol, _train_test_only(data), kfold, inner_kfold, c_grid, tol, max_iter
    )
    splits = _prepared_splits(data, preprocess, lowercase)
    index, emb = _encode_distinct(
        encoder, [x for s in splits.values() for x in _sides(s)], batch_size, show_progress_bar
    )
    t_enc = time.perf_counter() - t0
    if dtype == "float32":  # SentEval gets float32 from its batchers; exact for float32 encoders
        emb = emb.astype(np.float32)
    # order samples as SentEval does (by the loaded text, before preprocessing)
    order = {s.name: _senteval_order(s) for s in data.splits}
    X = {k: _features(s, index, emb)[order[k]] for k, s in splits.items()}
    y = {k: s.labels[order[k]] for k, s in splits.items()}
    fit = _fit(lr, X, y, data.task, kfold, inner_kfold, seed, n_jobs)
    timings = (t_enc, time.perf_counter() - t0, time.process_time() - c0)
    return _result(data, fit, lr, dtype, protocol, index, emb, encoder, seed, kfold, timings)


def _result(
    data: TransferData,
    fit: _Fitted,
    lr: _LogReg,
    dtype: str,
    protocol: str,
    index: dict[str, int],
    emb: np.ndarray,
    encoder: Encoder,
    seed: int,
    kfold: int,
    timings: tuple[float, float, float],
) -> TransferResult:
    """The :class:`TransferResult` of a fit: the scores (SentEval's rounding of the means where
    the protocol rounds), the sentences and vectors counted, the settings, the seconds (encode,
    wall, CPU)."""
    accuracy, dev_accuracy = np.mean(fit.accs), np.mean(fit.devs)
    if lr.round_decimals is not None:  # SentEval rounds the np.float64 means (numpy's round)
        accuracy, dev_accuracy = (np.round(v, lr.round_decimals) for v in (accuracy, dev_accuracy))
    return TransferResult(
        task=data.task,
        accuracy=float(accuracy),
        f1=fit.f1,
        dev_accuracy=float(dev_accuracy),
        n_samples=data.n_samples,
        n_train=fit.n_train,
        n_test=fit.n_test,
        n_dev=fit.n_dev,
        n_distinct_sentences=len(index),
        n_empty_sentences=sum(not s.strip() for s in index),
        n_zero_vectors=int((~emb.any(axis=1)).sum()),
        c=tuple(fit.cs),
        fold_accuracies=tuple(fit.accs),
        protocol=_protocol_description(fit.how, lr, dtype, data, protocol),
        model=describe_encoder(encoder),
        seed=seed,
        kfold=kfold,
        inner_kfold=fit.inner_kfold,
        c_grid=lr.c_grid,
        n_convergence_warnings=fit.n_stopped,
        protocol_name=protocol,
        tol=lr.tol,
        max_iter=lr.max_iter,
        warm_start=lr.warm_start,
        feature_dtype=dtype,
        round_decimals=lr.round_decimals,
        encode_seconds=timings[0],
        wall_seconds=timings[1],
        cpu_seconds=timings[2],
    )


def _train_test_only(data: TransferData) -> bool:
    """Whether the task is split into train and test alone (else all, or train, dev and test:
    any other split is a ValueError)."""
    names = sorted(s.name for s in data.splits)
    if names not in (["all"], ["test", "train"], ["dev", "test", "train"]):
        raise ValueError(
            f"{data.task}: splits {names} are invalid; expected 'all' (scored by "
            "cross-validation) or 'train' and 'test', optionally with 'dev'"
        )
    return names == ["test", "train"]


def _prepared_splits(
    data: TransferData, preprocess: Any, lowercase: bool
) -> dict[str, TransferSplit]:
    """The task's splits with ``preprocess`` (a callable per sentence, or ``prepare_batch`` per
    split) and ``lowercase`` applied to their sentences."""
    batch = getattr(preprocess, "prepare_batch", None)
    if preprocess is not None and not callable(batch) and not callable(preprocess):
        raise TypeError(
            f"preprocess must be a callable str -> str or have prepare_batch(), got "
            f"{type(preprocess).__name__}"
        )

    def prep(sentences: Sequence[str]) -> tuple[str, ...]:
        out: Sequence[str] = sentences
        if callable(batch):  # one call for the whole split (the compiled Moses tokenizer)
            out = list(batch(list(sentences)))
        elif preprocess is not None:
            out = [preprocess(s) for s in sentences]
        return tuple(s.lower() for s in out) if lowercase else tuple(out)

    return {
        s.name: TransferSplit(
            s.name,
            prep(s.sentences),
            s.labels,
            None if s.pair_sentences is None else prep(s.pair_sentences),
        )
        for s in data.splits
    }


@dataclass
class _Fitted:
    """What the classifier protocol gave on one task: C, dev and test accuracy per (outer)
    fold, the fits that stopped at ``max_iter``, MRPC's F1, the split sizes, how C was chosen
    (with ``inner_kfold`` folds)."""

    cs: list[float]
    devs: list[float]
    accs: list[float]
    n_stopped: int
    f1: float | None
    n_train: int
    n_test: int
    n_dev: int | None
    how: str
    inner_kfold: int


def _fit(
    lr: _LogReg,
    X: dict[str, np.ndarray],
    y: dict[str, np.ndarray],
    task: str,
    kfold: int,
    inner_kfold: int,
    seed: int,
    n_jobs: int,
) -> _Fitted:
    """The classifier protocol on the features of each split (single-threaded BLAS; lbfgs's
    convergence warnings counted, then shown once for the caller of evaluate_transfer)."""
    from sklearn.exceptions import ConvergenceWarning

    fitted = _fit_quietly(lr, X, y, task, kfold, inner_kfold, seed, n_jobs)
    if fitted.n_stopped:
        warnings.warn(
            f"{task}: {fitted.n_stopped} logistic-regression fits stopped at "
            f"max_iter={lr.max_iter} before converging",
            ConvergenceWarning,
            stacklevel=3,  # _fit, evaluate_transfer, its caller
        )
    return fitted


def _fit_quietly(
    lr: _LogReg,
    X: dict[str, np.ndarray],
    y: dict[str, np.ndarray],
    task: str,
    kfold: int,
    inner_kfold: int,
    seed: int,
    n_jobs: int,
) -> _Fitted:
    """:func:`_fit` with lbfgs's convergence warnings counted, not shown."""
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # counted via n_iter_ instead
        if list(X) == ["all"]:
            cs, devs, accs, hit = _cv_protocol(
                lr, X["all"], y["all"], kfold, inner_kfold, seed, n_jobs
            )
            how = (
                f"{kfold}-fold stratified CV; C per fold by inner {inner_kfold}-fold "
                "stratified CV on the training folds"
            )
            n = len(y["all"])
            return _Fitted(cs, devs, accs, hit, None, n, n, None, how, inner_kfold)
        Xtr, ytr = X["train"], y["train"]
        n_dev = None
        if "dev" in X:
            acc, hit = lr.path(
                np.concatenate([Xtr, X["dev"]]),
                np.concatenate([ytr, y["dev"]]),
                slice(0, len(ytr)),
                slice(len(ytr), None),
            )
            c, dev = lr.best(acc)
            n_dev = len(y["dev"])
            how = "train/dev/test; C by dev accuracy"
        else:
            tr = np.arange(len(ytr))
            paths = _run(
                n_jobs,
                [(lr.path, (Xtr, ytr, a, b)) for a, b in _inner_splits(ytr, tr, inner_kfold, seed)],
            )
            c, dev = lr.best(lr.fold_mean([p for p, _ in paths]))
            hit = sum(h for _, h in paths)
            how = f"train/test; C by {inner_kfold}-fold stratified CV on train"
        pred, h = lr.predict(c, Xtr, ytr, slice(None), X["test"])
        f1 = lr.percent(_f1(y["test"], pred)) if task == "MRPC" else None
        acc_test = lr.percent(np.mean(pred == y["test"]))
        n_test = len(y["test"])
        return _Fitted(
            [c], [dev], [acc_test], hit + h, f1, len(ytr), n_test, n_dev, how, inner_kfold
        )


def _protocol_description(
    how: str, lr: _LogReg, dtype: str, data: TransferData, protocol: str
) -> str:
    """:attr:`TransferResult.protocol`: how C was chosen, the classifier and the features."""
    desc = how + (
        f"; L2 logistic regression (lbfgs, tol={lr.tol:g}, max_iter={lr.max_iter}, "
        f"{'warm starts along the C grid' if lr.warm_start else 'a cold fit per C'}), "
        f"C grid {list(lr.c_grid)}, raw {dtype} features"
    )
    if data.splits[0].pair_sentences is not None:
        desc += "; pair features [|u-v|, u*v]"
    if lr.round_decimals is not None:
        desc += f"; accuracies rounded to {lr.round_decimals} decimals per fold and in the mean"
    if protocol == "senteval":
        desc = "SentEval scikit-learn path: " + desc
    return desc


def _sides(s: TransferSplit) -> tuple[str, ...]:
    return s.sentences + (s.pair_sentences or ())


def _features(s: TransferSplit, index: dict[str, int], emb: np.ndarray) -> np.ndarray:
    u = emb[[index[x] for x in s.sentences]]
    if s.pair_sentences is None:
        return u
    return pair_features(u, emb[[index[x] for x in s.pair_sentences]])


def _f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """F1 of the positive class, as a fraction."""
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_pred, pos_label=1))


# --------------------------------------------------------------------------- Markdown table


def transfer_table_markdown(
    results: Iterable[TransferResult] | Mapping[str, Iterable[TransferResult]],
    *,
    name: str = "model",
    digits: int = 1,
) -> str:
    """Markdown table in the Sent2Vec paper's column order (Table 1 / Table 6).

    Columns: ``MRPC (acc / F1) | MR | CR | SUBJ | MPQA | TREC | Avg | SST2``. ``Avg`` is the mean of
    MRPC accuracy, MR, CR, SUBJ, MPQA and TREC (the paper's and the reference README's average),
    shown only when all six are present; SST2 is an extra column outside the average. Missing
    tasks show ``-``.

    Parameters
    ----------
    results : iterable of TransferResult, or mapping row name -> iterable of TransferResult
    name : str
        Row name when ``results`` is a plain iterable.
    digits : int
        Decimals shown (the paper shows 1).
    """
    rows = dict(results) if isinstance(results, Mapping) else {name: results}
    head = "| Model | MRPC (acc / F1) | MR | CR | SUBJ | MPQA | TREC | Avg | SST2 |"
    lines = [head, "|---" * 9 + "|"]
    fmt = f"{{:.{digits}f}}".format
    for row_name, res in rows.items():
        by_task = {r.task: r for r in res}
        cells = []
        mrpc = by_task.get("MRPC")
        cells.append(
            "-" if mrpc is None else f"{fmt(mrpc.accuracy)} / {fmt(mrpc.f1 or float('nan'))}"
        )
        for t in ("MR", "CR", "SUBJ", "MPQA", "TREC"):
            cells.append(fmt(by_task[t].accuracy) if t in by_task else "-")
        if all(t in by_task for t in AVERAGED_TASKS):
            cells.append(fmt(float(np.mean([by_task[t].accuracy for t in AVERAGED_TASKS]))))
        else:
            cells.append("-")
        cells.append(fmt(by_task["SST2"].accuracy) if "SST2" in by_task else "-")
        lines.append(f"| {row_name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
