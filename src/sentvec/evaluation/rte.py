"""RTE: zero-shot entailment by a cosine threshold (WhiteningBERT appendix A.2, Table 3).

The paper encodes both sentences of each pair of the GLUE RTE development set (277 pairs), takes
the cosine of the two sentence vectors and predicts "entailment" when it exceeds a threshold set
by hand to 0.5; BERT-base (AVG, L1 + L12, whitening) scores 52.7 % accuracy. The protocol here,
as read from the authors' code (github.com/Jun-jie-Huang/WhiteningBERT at d1ef06a,
``WhiteningBinaryClassificationEvaluator``; that repository has no RTE script or reader):

* whitening (Eq. 1) fitted on the vectors of **both sides of every pair**, first sentences then
  second sentences, duplicates kept (``2 x 277`` rows), and applied to the same rows -- what
  their STS evaluator does per file (``whitening="task"``). ``"none"``, a fitted whitening or a
  corpus of vectors to fit on are also accepted and recorded;
* a pair is predicted "entailment" when ``cosine > threshold`` (strictly greater, as their
  ``acc_given_threshold``), and accuracy is the share of pairs predicted right, x 100.

146 of the 277 pairs are entailment, so predicting "entailment" everywhere also scores 52.7; a
result therefore reports the majority-class accuracy, the share of pairs predicted entailment,
the accuracy at every threshold of a grid over -1...1, the ROC AUC of the cosine (free of any
threshold) and the best threshold chosen on the evaluated pairs themselves (an upper bound, not
a zero-shot score). ``docs/rte.md`` has the measurements.

:func:`load_rte` reads ``downstream/RTE/dev.tsv`` of the data root (the Hugging Face ``glue/rte``
validation split exported to TSV: ``sentence1 sentence2 label idx``, label 0 = entailment,
1 = not_entailment) with the ``csv`` module, since fields holding a double quote are quoted.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._data import data_dir as _data_dir
from sentvec._validation import check_choice, check_embeddings, check_float_range
from sentvec.encoders.base import Encoder, YearPostprocessing
from sentvec.evaluation.cosine import cosine_similarity_rows
from sentvec.evaluation.results import JSONRecord, WhiteningInfo
from sentvec.evaluation.sts import encode_checked
from sentvec.evaluation.sts_data import TEXT_VARIANTS
from sentvec.whitening import Whitening

__all__ = [
    "RTE_DEV_PAIRS",
    "RTE_COLUMNS",
    "RTE_LABELS",
    "RTE_WHITENING_MODES",
    "RTE_THRESHOLD_GRID",
    "PAPER_RTE_ACCURACY",
    "RTEData",
    "RTEThresholdPoint",
    "RTEResult",
    "load_rte",
    "prepare_rte_text",
    "score_rte",
    "evaluate_rte",
    "rte_threshold_table",
]

#: Pairs of the GLUE RTE development set (146 entailment, 131 not_entailment).
RTE_DEV_PAIRS = 277
_RTE_DEV_ENTAILMENT = 146
#: Header of the TSV file (Hugging Face ``glue/rte`` layout).
RTE_COLUMNS: tuple[str, ...] = ("sentence1", "sentence2", "label", "idx")
#: The file's label values and their names (GLUE: 0 = entailment, the positive class here).
RTE_LABELS: dict[str, str] = {"0": "entailment", "1": "not_entailment"}
#: ``whitening`` strings of :func:`score_rte`: none, or fitted on both sides of the pairs.
RTE_WHITENING_MODES: tuple[str, ...] = ("none", "task")
#: Thresholds of the accuracy curve: -1.0, -0.9, ..., 1.0.
RTE_THRESHOLD_GRID: tuple[float, ...] = tuple(round(-1.0 + 0.1 * i, 1) for i in range(21))
#: WhiteningBERT Table 3: BERT-base, AVG, L1 + L12, whitening, threshold 0.5.
PAPER_RTE_ACCURACY = 52.7


@dataclass(frozen=True, eq=False)
class RTEData:
    """Pairs of an RTE file (see :func:`load_rte`).

    Attributes
    ----------
    sentence1, sentence2 : tuple of str, length n
        Premise and hypothesis of each pair, as the file holds them.
    entailment : ndarray of shape (n,), bool
        True where the file's label is 0 (entailment), the positive class.
    idx : ndarray of shape (n,), int64
        The file's ``idx`` column.
    source : str
        The file read.
    """

    sentence1: tuple[str, ...]
    sentence2: tuple[str, ...]
    entailment: np.ndarray
    idx: np.ndarray
    source: str

    @property
    def n_pairs(self) -> int:
        return len(self.sentence1)

    @property
    def n_entailment(self) -> int:
        return int(self.entailment.sum())


def _fail(path: Path, where: str, message: str) -> ValueError:
    return ValueError(f"{str(path)!r} {where}: {message}")


def _decode(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"RTE data file not found: {str(path)!r}")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _fail(
            path, f"line {line}", f"byte 0x{data[exc.start]:02X} is not valid UTF-8"
        ) from None


def _parse_rows(path: Path) -> tuple[list[str], list[str], list[bool], list[int]]:
    reader = csv.reader(io.StringIO(_decode(path), newline=""), delimiter="\t", strict=True)
    s1: list[str] = []
    s2: list[str] = []
    ent: list[bool] = []
    ids: list[int] = []
    seen: dict[int, int] = {}
    end = 0
    header = False
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            where = f"line {start}" if start == end else f"lines {start}-{end}"
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # a blank line
            if not header:
                if tuple(c.strip() for c in row) != RTE_COLUMNS:
                    raise _fail(path, where, f"expected the header {'<TAB>'.join(RTE_COLUMNS)}")
                header = True
                continue
            if len(row) != len(RTE_COLUMNS):
                raise _fail(
                    path,
                    where,
                    f"expected {len(RTE_COLUMNS)} tab-separated fields "
                    f"({', '.join(RTE_COLUMNS)}), got {len(row)} (a stray double quote "
                    "joins lines: fields holding one must be quoted, CSV style)",
                )
            a, b, label, idx = (c.strip() for c in row)
            if not a or not b:
                raise _fail(path, where, "empty sentence")
            if label not in RTE_LABELS:
                raise _fail(
                    path, where, f"label {label!r} is not 0 (entailment) or 1 (not_entailment)"
                )
            try:
                i = int(idx)
            except ValueError:
                raise _fail(path, where, f"idx {idx!r} is not an integer") from None
            if i in seen:
                raise _fail(path, where, f"idx {i} repeats the pair of line {seen[i]}")
            seen[i] = start
            s1.append(a)
            s2.append(b)
            ent.append(label == "0")
            ids.append(i)
    except csv.Error as exc:
        raise _fail(path, f"line {reader.line_num}", f"malformed CSV quoting ({exc})") from None
    if not header:
        raise _fail(path, "line 1", "empty file; expected a header and pairs")
    return s1, s2, ent, ids


def load_rte(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> RTEData:
    """Read RTE pairs from a TSV file of the Hugging Face ``glue/rte`` layout.

    Parameters
    ----------
    path : path-like, optional
        A file with the header ``sentence1 sentence2 label idx`` (any split). Default: the GLUE
        development set ``downstream/RTE/dev.tsv`` of the data root, which must then hold
        exactly 277 pairs, 146 of them entailment.
    data_dir : path-like, optional
        Data root (default ``$SENTVEC_DATA`` or the packaged copy); only without ``path``.

    Returns
    -------
    RTEData

    Raises
    ------
    FileNotFoundError
        No such file (or data root).
    ValueError
        Not UTF-8, malformed CSV quoting, a wrong header, a row without 4 fields, an empty
        sentence, a label other than 0 / 1, a non-integer or repeated ``idx``, fewer than 2
        pairs, or (the development set) not its 277 / 146 pairs. Messages name the file and
        line.
    """
    if path is not None and data_dir is not None:
        raise ValueError("give path or data_dir, not both")
    dev = path is None
    p = _data_dir(data_dir) / "downstream" / "RTE" / "dev.tsv" if path is None else Path(path)
    s1, s2, ent, ids = _parse_rows(p)
    if len(s1) < 2:
        raise _fail(p, "end", f"{len(s1)} pair(s); at least 2 are needed")
    if dev and (len(s1), sum(ent)) != (RTE_DEV_PAIRS, _RTE_DEV_ENTAILMENT):
        raise _fail(
            p,
            "end",
            f"{len(s1)} pairs, {sum(ent)} entailment; the GLUE RTE development set has "
            f"{RTE_DEV_PAIRS}, {_RTE_DEV_ENTAILMENT} entailment",
        )
    return RTEData(tuple(s1), tuple(s2), np.array(ent, dtype=bool), np.array(ids), str(p))


def prepare_rte_text(sentences: Iterable[str], variant: str) -> list[str]:
    """The text fed to the encoder for a text variant of :data:`sentvec.evaluation.TEXT_VARIANTS`.

    ``"raw"``: as the file holds it. ``"senteval"``: Moses-tokenised (sacremoses, ``en``,
    ``escape=False``) then lower-cased, the preparation of the SentEval STS files that
    ``eval-sts`` feeds by default and of the corpus the reference Sent2Vec models were trained on.
    """
    check_choice("variant", variant, TEXT_VARIANTS)
    items = list(sentences)
    if variant == "raw":
        return items
    from sentvec.sent2vec.preprocessing import Preprocessing

    prep = Preprocessing(lowercase=True, tokenizer="moses")
    return [prep.prepare(s) for s in items]


@dataclass(frozen=True)
class RTEThresholdPoint(JSONRecord):
    """Accuracy (%) and share of pairs predicted entailment (%) at one threshold."""

    threshold: float
    accuracy: float
    predicted_entailment: float


@dataclass(frozen=True)
class RTEResult(JSONRecord):
    """Zero-shot RTE by a cosine threshold (:func:`score_rte`, :func:`evaluate_rte`).

    Attributes
    ----------
    threshold : float
        Pairs with ``cosine > threshold`` are predicted entailment.
    accuracy : float
        Percent of pairs predicted right at ``threshold`` (``100 * n_correct / n_pairs``).
    n_correct, n_pairs, n_entailment : int
    majority_accuracy : float
        Percent of the larger class (predicting it everywhere); ``majority_label`` names it.
    predicted_entailment : float
        Percent of pairs predicted entailment at ``threshold``.
    curve : tuple of RTEThresholdPoint
        Accuracy against the threshold over :data:`RTE_THRESHOLD_GRID` (or the grid given).
    best_threshold, best_accuracy : float
        The threshold with the highest accuracy on these very pairs (midpoints between sorted
        cosines, lowest on ties) and that accuracy: an upper bound, not a zero-shot score.
    auc : float
        ROC AUC x 100 of the cosine for entailment (NaN with one class only).
    mean_cosine_entailment, mean_cosine_not_entailment : float
    whitening : WhiteningInfo
        ``mode``: "none", "task" (fitted on both sides of the pairs), "corpus" or "fitted".
    n_zero_vectors, n_zero_cosine_pairs : int
        Zero encoder vectors (before whitening; kept zero after it) and the pairs whose cosine
        is therefore undefined (scored 0, as SentEval).
    cosines : ndarray of shape (n_pairs,), float64
    entailment : ndarray of shape (n_pairs,), bool
        The gold labels, in the order of ``cosines`` (any threshold can be re-scored).
    metadata : dict
        Encoder description and settings (``text_variant``, ...).
    """

    threshold: float
    accuracy: float
    n_correct: int
    n_pairs: int
    n_entailment: int
    majority_label: str
    majority_accuracy: float
    predicted_entailment: float
    curve: tuple[RTEThresholdPoint, ...]
    best_threshold: float
    best_accuracy: float
    auc: float
    mean_cosine_entailment: float
    mean_cosine_not_entailment: float
    whitening: WhiteningInfo
    n_zero_vectors: int = 0
    n_zero_cosine_pairs: int = 0
    cosines: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    entailment: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    metadata: dict[str, Any] = field(default_factory=dict)


def _fit_whitening(
    whitening: Any, X: np.ndarray, n_components: int | None, n_pairs: int
) -> tuple[Any, WhiteningInfo]:
    """The fitted transform of ``whitening`` and its record; ``(None, none)`` for "none"."""
    if isinstance(whitening, str):
        check_choice("whitening", whitening, RTE_WHITENING_MODES)
        if whitening == "none":
            if n_components is not None:
                raise ValueError("n_components applies to whitening; invalid with 'none'")
            return None, WhiteningInfo(mode="none")
        w = Whitening(n_components).fit(X)
        return w, WhiteningInfo(
            mode="task",
            n_components=n_components,
            fit_corpus="both sentences of every pair (first sentences, then second; "
            "duplicates kept)",
            fit_size=2 * n_pairs,
            n_dropped={"RTE": int(w.n_dropped_)},
        )
    if callable(getattr(whitening, "transform", None)):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(whitening)
        if n_components is not None:
            raise ValueError("n_components is invalid with an already fitted whitening")
        size = getattr(whitening, "n_samples_seen_", None)
        return whitening, WhiteningInfo(
            mode="fitted",
            n_components=getattr(whitening, "n_components_", None),
            fit_corpus=f"fitted {type(whitening).__name__} instance",
            fit_size=None if size is None else int(size),
        )
    corpus = check_embeddings(whitening, name="whitening corpus", n_features=X.shape[1])
    w = Whitening(n_components).fit(corpus)
    return w, WhiteningInfo(
        mode="corpus",
        n_components=n_components,
        fit_corpus="embeddings array",
        fit_size=int(corpus.shape[0]),
    )


def _best_threshold(cos: np.ndarray, ent: np.ndarray) -> tuple[float, float]:
    """Highest accuracy over all cuts ``cos > t`` and its lowest ``t`` (midpoints)."""
    values = np.unique(cos)
    cuts = np.concatenate([[values[0] - 1e-6], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-6]])
    accs = [float(np.mean((cos > t) == ent)) for t in cuts]
    k = int(np.argmax(accs))
    return float(cuts[k]), 100.0 * accs[k]


def score_rte(
    vectors1: Any,
    vectors2: Any,
    entailment: Any,
    *,
    whitening: Any = "task",
    n_components: int | None = None,
    threshold: float = 0.5,
    thresholds: Sequence[float] = RTE_THRESHOLD_GRID,
    metadata: Mapping[str, Any] | None = None,
) -> RTEResult:
    """Score sentence vectors of RTE pairs by a cosine threshold (WhiteningBERT Table 3).

    Parameters
    ----------
    vectors1, vectors2 : array-like of shape (n, d)
        Vectors of the first and second sentence of each pair (float32 or float64, finite).
    entailment : array-like of shape (n,), bool or 0/1
        True (1) where the pair is entailment, the positive class.
    whitening : {"task", "none"}, fitted whitening, or array-like of shape (m, d)
        "task" (default, the paper's protocol): Eq. 1 fitted on ``vstack([vectors1,
        vectors2])`` and applied to those rows; "none"; anything fitted with ``transform``
        (a :class:`~sentvec.Whitening`, :class:`~sentvec.AllButTheTop`, ...); or vectors of a
        corpus to fit a Whitening on.
    n_components : int, optional
        Dimensions kept by a whitening fitted here.
    threshold : float, default 0.5
        Predict entailment where ``cosine > threshold``.
    thresholds : sequence of float
        Thresholds of ``result.curve`` (default -1.0, -0.9, ..., 1.0).
    metadata : mapping, optional
        Stored in ``result.metadata``.

    Returns
    -------
    RTEResult

    Raises
    ------
    ValueError
        Shapes that disagree, non-finite vectors, fewer than 2 pairs, a non-finite threshold,
        an unknown ``whitening`` string, or ``n_components`` with "none" or a fitted whitening.

    Notes
    -----
    A zero encoder vector (e.g. an all-OOV Sent2Vec sentence) carries no information: it stays
    zero after whitening and its pair's cosine is 0 (counted in ``n_zero_cosine_pairs``).
    """
    A, B, ent = _checked_pairs(vectors1, vectors2, entailment)
    threshold = check_float_range("threshold", threshold)
    grid = [check_float_range("thresholds", t) for t in thresholds]
    n = A.shape[0]
    X = np.vstack([A, B]).astype(np.float64)
    zero = ~X.any(axis=1)
    fitted, info = _fit_whitening(whitening, X, n_components, n)
    Z = X if fitted is None else np.asarray(fitted.transform(X), dtype=np.float64)
    Z[zero] = 0.0
    cos, undefined = cosine_similarity_rows(Z[:n], Z[n:])

    def at(t: float) -> tuple[float, float]:
        pred = cos > t
        return 100.0 * float(np.mean(pred == ent)), 100.0 * float(np.mean(pred))

    accuracy, share = at(threshold)
    n_ent = int(ent.sum())
    best_t, best_acc = _best_threshold(cos, ent)
    auc = math.nan
    if 0 < n_ent < n:
        from sklearn.metrics import roc_auc_score

        auc = 100.0 * float(roc_auc_score(ent, cos))
    return RTEResult(
        threshold=threshold,
        accuracy=accuracy,
        n_correct=int(np.sum((cos > threshold) == ent)),
        n_pairs=n,
        n_entailment=n_ent,
        majority_label="entailment" if 2 * n_ent >= n else "not_entailment",
        majority_accuracy=100.0 * max(n_ent, n - n_ent) / n,
        predicted_entailment=share,
        curve=tuple(RTEThresholdPoint(t, *at(t)) for t in grid),
        best_threshold=best_t,
        best_accuracy=best_acc,
        auc=auc,
        mean_cosine_entailment=float(cos[ent].mean()) if n_ent else math.nan,
        mean_cosine_not_entailment=float(cos[~ent].mean()) if n_ent < n else math.nan,
        whitening=info,
        n_zero_vectors=int(zero.sum()),
        n_zero_cosine_pairs=int(undefined.sum()),
        cosines=cos,
        entailment=ent,
        metadata=dict(metadata or {}),
    )


def _checked_pairs(vectors1: Any, vectors2: Any, entailment: Any) -> tuple[Any, Any, np.ndarray]:
    """:func:`score_rte`'s inputs checked: two finite (n, d) arrays, n >= 2, and n booleans."""
    A = check_embeddings(vectors1, name="vectors1", min_rows=2)
    B = check_embeddings(vectors2, name="vectors2", n_features=A.shape[1])
    ent = np.asarray(entailment)
    if B.shape != A.shape or ent.shape != (A.shape[0],):
        raise ValueError(
            f"vectors1 {A.shape}, vectors2 {B.shape} and entailment {ent.shape} disagree; "
            "expected (n, d), (n, d) and (n,)"
        )
    if not np.isin(ent, (0, 1)).all():
        raise ValueError("entailment must hold booleans or 0 / 1")
    return A, B, ent.astype(bool)


def evaluate_rte(
    encoder: Encoder,
    data: RTEData | str | Path | None = None,
    *,
    whitening: Any = "task",
    n_components: int | None = None,
    threshold: float = 0.5,
    thresholds: Sequence[float] = RTE_THRESHOLD_GRID,
    variant: str | None = None,
    data_dir: str | Path | None = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> RTEResult:
    """Encode RTE pairs with ``encoder`` and score them by a cosine threshold (Table 3).

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode(sentences, **kw) -> ndarray (n, d)``.
    data : RTEData or path-like, optional
        Default: the GLUE development set of ``data_dir`` (:func:`load_rte`).
    whitening : {"task", "none"}, fitted whitening, list of str or array-like
        As :func:`score_rte`, plus a list of sentences: a corpus encoded (as given) with the same
        encoder and a Whitening fitted on it.
    n_components, threshold, thresholds
        As :func:`score_rte`.
    variant : {"senteval", "raw"}, optional
        Text fed to the encoder (:func:`prepare_rte_text`); default the encoder's preference
        (``sentvec.encoders.base.text_variant_of``), as ``eval-sts``.
    data_dir : path-like, optional
        Data root when ``data`` is not given.
    batch_size, show_progress_bar : optional
        Passed to ``encoder.encode`` when not None.
    metadata : mapping, optional
        Added to the encoder's description in ``result.metadata``.

    Returns
    -------
    RTEResult

    Raises
    ------
    ValueError, FileNotFoundError
        As :func:`load_rte` and :func:`score_rte`; an encoder output of the wrong shape.

    Notes
    -----
    Every distinct prepared sentence is encoded once, in one ``encode`` call. An encoder with
    its own per-task post-processor (``year_postprocessor()``, e.g. SIF with
    ``common_component="year"``) has it fitted on both sides of the pairs, before any whitening.
    """
    from sentvec.encoders.base import describe_encoder, text_variant_of

    if not isinstance(encoder, Encoder):
        raise TypeError(f"encoder must have an encode method, got {type(encoder).__name__}")
    if not isinstance(data, RTEData):
        data = load_rte(data, data_dir=data_dir)
    variant = variant or text_variant_of(encoder)
    texts = prepare_rte_text(data.sentence1 + data.sentence2, variant)
    distinct = list(dict.fromkeys(texts))

    def encode(items: list[str]) -> np.ndarray:
        return encode_checked(encoder, items, batch_size, show_progress_bar)

    emb = encode(distinct)
    row = {s: i for i, s in enumerate(distinct)}
    X = emb[[row[s] for s in texts]]
    own = encoder.year_postprocessor() if isinstance(encoder, YearPostprocessing) else None
    if own is not None:
        from sklearn.base import clone

        X = clone(own).fit_transform(X.astype(np.float64))
    if isinstance(whitening, (list, tuple)):
        whitening = encode(list(whitening))
    meta = describe_encoder(encoder)
    meta.update(metadata or {})
    meta.update(text_variant=variant, data=data.source, n_distinct_sentences=len(distinct))
    n = data.n_pairs
    return score_rte(
        X[:n],
        X[n:],
        data.entailment,
        whitening=whitening,
        n_components=n_components,
        threshold=threshold,
        thresholds=thresholds,
        metadata=meta,
    )


def rte_threshold_table(result: RTEResult, *, markdown: bool = False) -> str:
    """The accuracy curve of ``result`` as a text (or Markdown) table, one row per threshold.

    The row of ``result.threshold``, when on the grid, is marked (``*``; bold in Markdown).
    """
    head = ("threshold", "accuracy", "predicted entailment %")
    lines = (
        ["| " + " | ".join(head) + " |", "|---:|---:|---:|"]
        if markdown
        else [f"{head[0]:>9}  {head[1]:>8}  {head[2]}"]
    )
    for p in result.curve:
        cells: tuple[str, ...] = (
            f"{p.threshold:+.1f}",
            f"{p.accuracy:.1f}",
            f"{p.predicted_entailment:.1f}",
        )
        mark = math.isclose(p.threshold, result.threshold, abs_tol=1e-12)
        if markdown:
            cells = tuple(f"**{c}**" for c in cells) if mark else cells
            lines.append("| " + " | ".join(cells) + " |")
        else:
            a, b, c = cells
            lines.append(f"{a:>9}  {b:>8}  {c:>22}" + ("  *" if mark else ""))
    return "\n".join(lines) + "\n"
