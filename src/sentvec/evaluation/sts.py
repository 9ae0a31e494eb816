"""STS readers (SentEval and raw layouts) and the WhiteningBERT STS protocol.

Readers: :func:`load_sts` returns :class:`STSTask` objects (STS12-16, STS Benchmark, SICK-R)
holding only the scored pairs. Scoring: :func:`score_sts` takes embeddings of
:func:`unique_sentences` and computes cosine similarity, Spearman and Pearson correlation x 100
per subset, three aggregations per task and optional whitening (WhiteningBERT Table 1
protocol, see ``docs/whiteningbert.md``); :func:`evaluate_sts` encodes and scores in one go.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sentvec._numeric import MIN_VARIANCE, LazyKernel
from sentvec._validation import check_choice, check_embeddings, check_positive_int
from sentvec.evaluation.results import (
    AGGREGATIONS,
    STSResult,
    WhiteningInfo,
    aggregate_scores,
    rank_golds,
)

__all__ = [
    "STS_TASKS", "STS_SUBSETS", "TEXT_VARIANTS", "STSSubset", "STSTask", "load_sts",
    "unique_sentences", "score_sts", "STSScorer", "evaluate_sts", "cosine_similarity_rows",
]

STS_TASKS: tuple[str, ...] = (
    "STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
#: Fixed subset lists (SentEval / WhiteningBERT); files are never globbed.
STS_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
TextVariant = Literal["senteval", "raw"]
TEXT_VARIANTS: tuple[str, ...] = ("senteval", "raw")
_VARIANT_DIRS = {"senteval": "downstream", "raw": "raw"}
#: Splits per task; SICK's "dev" is accepted as an alias of "trial" (SentEval's name for it).
STS_SPLITS: dict[str, tuple[str, ...]] = {
    **{name: ("test",) for name in STS_SUBSETS},
    "STSBenchmark": ("train", "dev", "test"),
    "SICKRelatedness": ("train", "trial", "test"),
}
_STSB_FILES = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
_SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt",
               "test": "SICK_test_annotated.txt"}
WhiteningMode = Literal["none", "year"]
WHITENING_MODES: tuple[str, ...] = ("none", "year")


@dataclass(frozen=True, eq=False)
class STSSubset:
    """The scored pairs of one STS subset (e.g. STS12 MSRpar, or the STS-B test split).

    Attributes
    ----------
    name : str
    sent1, sent2 : tuple of str, length n_pairs
        The two sides of each pair, whitespace-stripped, otherwise as in the file.
    gold : ndarray of shape (n_pairs,), float64, read-only
        Gold similarity in [0, 5] (SICK relatedness in [1, 5]).
    """

    name: str
    sent1: tuple[str, ...]
    sent2: tuple[str, ...]
    gold: np.ndarray

    def __post_init__(self) -> None:
        gold = np.array(self.gold, dtype=np.float64)
        if gold.ndim != 1 or not (len(self.sent1) == len(self.sent2) == len(gold)):
            raise ValueError(
                f"subset {self.name!r}: sent1, sent2 and gold lengths differ "
                f"({len(self.sent1)}, {len(self.sent2)}, {gold.shape})")
        gold.setflags(write=False)
        object.__setattr__(self, "sent1", tuple(self.sent1))
        object.__setattr__(self, "sent2", tuple(self.sent2))
        object.__setattr__(self, "gold", gold)

    @property
    def n_pairs(self) -> int:
        return len(self.gold)


@dataclass(frozen=True, eq=False)
class STSTask:
    """One STS task (a SemEval year, STS-B or SICK-R) as a tuple of scored subsets.

    Attributes
    ----------
    name : str
        One of :data:`STS_TASKS` (any name for user-built tasks).
    subsets : tuple of STSSubset
    variant : {"senteval", "raw"}
        Which text was read: SentEval's tokenised (lower-cased for STS) files or the raw ones.
    split : str
        ``"test"`` for STS12-16; the split of STS-B / SICK.
    """

    name: str
    subsets: tuple[STSSubset, ...]
    variant: str
    split: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "subsets", tuple(self.subsets))

    @property
    def n_pairs(self) -> int:
        return sum(s.n_pairs for s in self.subsets)

    @property
    def subset_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.subsets)


# --------------------------------------------------------------------------- readers
def _read_lines(path: Path) -> list[str]:
    """UTF-8 lines without BOM and line terminators (\\n or \\r\\n); only \\n splits lines."""
    if not path.is_file():
        raise FileNotFoundError(f"STS data file not found: {str(path)!r}")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{str(path)!r} line {line}: byte 0x{data[exc.start]:02X} is not valid "
                         "UTF-8; STS files must be UTF-8 (convert it, e.g. with iconv)") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _read_semeval(directory: Path, subset: str) -> STSSubset:
    inp = directory / f"STS.input.{subset}.txt"
    gs = directory / f"STS.gs.{subset}.txt"
    pairs, golds = _read_lines(inp), _read_lines(gs)
    if len(pairs) != len(golds):
        raise ValueError(f"{str(inp)!r} has {len(pairs)} lines but {str(gs)!r} has {len(golds)}")
    s1: list[str] = []
    s2: list[str] = []
    gold: list[float] = []
    for i, (pair, g) in enumerate(zip(pairs, golds), 1):
        g = g.strip()
        if not g:  # unscored pair (STS15/16 hold the whole released set): skipped like SentEval
            continue
        fields = pair.split("\t")
        if len(fields) < 2:  # raw STS16 has 4 columns (sentences + sources): take the first 2
            raise ValueError(f"{str(inp)!r} line {i}: expected 2 tab-separated sentences")
        s1.append(fields[0].strip())
        s2.append(fields[1].strip())
        gold.append(_parse_score(g, gs, i))
    return _non_empty(STSSubset(subset, tuple(s1), tuple(s2), np.array(gold)), gs)


#: Range of STS gold scores (SemEval 0-5; SICK relatedness 1-5).
GOLD_RANGE = (0.0, 5.0)


def _parse_score(text: str, path: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{str(path)!r} line {line}: score {text!r} is not a number") from None
    if not GOLD_RANGE[0] <= value <= GOLD_RANGE[1]:  # also NaN
        raise ValueError(f"{str(path)!r} line {line}: gold score {text!r} is outside "
                         f"[{GOLD_RANGE[0]:g}, {GOLD_RANGE[1]:g}], the STS scale")
    return value


def _non_empty(subset: STSSubset, path: Path) -> STSSubset:
    if subset.n_pairs == 0:
        raise ValueError(f"{str(path)!r}: subset {subset.name!r} has no scored pairs (no "
                         "non-blank gold score); its correlation would be undefined")
    return subset


def _read_table(path: Path, *, name: str, score_col: int, sent_cols: tuple[int, int],
                header: str | None) -> STSSubset:
    """Tab-separated file, no CSV quoting (quotes are part of the sentences)."""
    lines = _read_lines(path)
    if header is not None and lines and lines[0].startswith(header):
        lines = lines[1:]
        first = 2
    else:
        first = 1
    need = max(score_col, *sent_cols) + 1
    s1: list[str] = []
    s2: list[str] = []
    gold: list[float] = []
    for i, line in enumerate(lines, first):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < need:
            raise ValueError(f"{str(path)!r} line {i}: expected at least {need} tab-separated "
                             f"fields, got {len(fields)}")
        s1.append(fields[sent_cols[0]].strip())
        s2.append(fields[sent_cols[1]].strip())
        gold.append(_parse_score(fields[score_col].strip(), path, i))
    return _non_empty(STSSubset(name, tuple(s1), tuple(s2), np.array(gold)), path)


def _variant_root(base: Path, variant: str) -> Path:
    """Find the folder holding ``STS/`` and/or ``SICK/`` for ``variant`` under ``base``."""
    sub = _VARIANT_DIRS[variant]
    for cand in (base / sub, base / "data" / sub, base):
        if (cand / "STS").is_dir() or (cand / "SICK").is_dir():
            return cand
    return base / sub


def _task_dir(root: Path, name: str) -> Path:
    if name == "SICKRelatedness":
        return root / "SICK"
    if name == "STSBenchmark":
        return root / "STS" / "STSBenchmark"
    return root / "STS" / f"{name}-en-test"


def load_sts(tasks: str | Iterable[str] | None = None, *, data_dir: Any = None,
             variant: TextVariant = "senteval", split: str = "test") -> list[STSTask]:
    """Read STS tasks (only their scored pairs).

    Parameters
    ----------
    tasks : str or iterable of str, optional
        Names from :data:`STS_TASKS` (SentEval's names); default all seven, in that order.
    data_dir : path-like, optional
        Root of the data. Default: ``sentvec._data.data_dir()`` (``$SENTVEC_DATA`` or the copy
        shipped in the package). The variant's folder (``downstream/`` for "senteval", ``raw/``
        for "raw") is looked up in ``data_dir``, in ``data_dir/data`` (a SentEval checkout), or
        ``data_dir`` itself when it directly holds ``STS/`` and ``SICK/``.
    variant : {"senteval", "raw"}
        "senteval": SentEval's preprocessed files (Moses-tokenised; STS lower-cased), nearly the
        text WhiteningBERT evaluates on: the authors' own CSVs differ in 135 STS12-16 pairs and
        22 STS-B pairs (abbreviations: ``mr .`` there, ``mr.`` here; SICK-R is identical).
        "raw": the official untokenised, cased files.
    split : str
        "test" (default). STSBenchmark also has "train", "dev"; SICKRelatedness "train",
        "trial" ("dev" is accepted as an alias). STS12-16 have only "test".

    Returns
    -------
    list of STSTask

    Notes
    -----
    STS12-16: fixed subset lists (:data:`STS_SUBSETS`); pairs with an empty gold line are skipped
    (SentEval). STS-B: 7+ tab-separated fields, score = column 5, sentences = columns 6 and 7
    (the official files have 9 fields on some lines and literal double quotes: no CSV
    quoting). SICK: header line, sentences = columns 2, 3, relatedness = column 4. CRLF line ends
    and a UTF-8 BOM are tolerated; sentences are whitespace-stripped.

    Raises
    ------
    ValueError
        Unknown task, variant or split (the message lists the options), or a malformed file
        (not UTF-8, a missing field, a gold score that is not a number in [0, 5], a subset
        without scored pairs); the message names the file and line.
    FileNotFoundError
        A data directory or file is missing (the message names the path).
    """
    from sentvec._data import data_dir as _data_dir

    check_choice("variant", variant, TEXT_VARIANTS)
    if tasks is None:
        names = list(STS_TASKS)
    elif isinstance(tasks, str):
        names = [tasks]
    else:
        names = list(tasks)
    for name in names:
        check_choice("task", name, STS_TASKS)
    all_splits = sorted(set(chain.from_iterable(STS_SPLITS.values())) | {"dev"})
    check_choice("split", split, all_splits)
    for name in names:
        actual = "trial" if (name == "SICKRelatedness" and split == "dev") else split
        if actual not in STS_SPLITS[name]:
            raise ValueError(f"split={split!r} is invalid for task {name!r}; expected one of "
                             f"{list(STS_SPLITS[name])}")
    root = _variant_root(_data_dir(data_dir), variant)
    out: list[STSTask] = []
    for name in names:
        directory = _task_dir(root, name)
        if not directory.is_dir():
            raise FileNotFoundError(f"STS task directory not found: {str(directory)!r}")
        if name in STS_SUBSETS:
            subsets = tuple(_read_semeval(directory, s) for s in STS_SUBSETS[name])
            out.append(STSTask(name, subsets, variant, "test"))
        elif name == "STSBenchmark":
            sub = _read_table(directory / _STSB_FILES[split], name=split, score_col=4,
                              sent_cols=(5, 6), header=None)
            out.append(STSTask(name, (sub,), variant, split))
        else:
            actual = "trial" if split == "dev" else split
            sub = _read_table(directory / _SICK_FILES[actual], name=actual, score_col=3,
                              sent_cols=(1, 2), header="pair_ID")
            out.append(STSTask(name, (sub,), variant, actual))
    return out


# --------------------------------------------------------------------------- scoring
def _as_task_list(tasks: Any) -> list[STSTask]:
    if isinstance(tasks, STSTask):
        return [tasks]
    items = list(tasks)
    for i, t in enumerate(items):
        if not isinstance(t, STSTask):
            raise TypeError(f"tasks[{i}] must be an STSTask, got {type(t).__name__}")
    if not items:
        raise ValueError("tasks is empty")
    names = [t.name for t in items]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate task names in tasks: {names}")
    return items


def unique_sentences(tasks: STSTask | Iterable[STSTask]) -> list[str]:
    """Every distinct sentence of ``tasks``, in first-seen order (pair by pair, sent1 first)."""
    seen: dict[str, None] = {}
    for task in _as_task_list(tasks):
        for sub in task.subsets:
            for a, b in zip(sub.sent1, sub.sent2):
                seen[a] = None
                seen[b] = None
    return list(seen)


def _row_dots_impl(A, B, ia, ib, out):  # pragma: no cover - compiled by numba
    d = A.shape[1]
    d4 = d - d % 4
    for p in range(ia.shape[0]):
        a = ia[p]
        b = ib[p]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for k in range(0, d4, 4):
            s0 += np.float64(A[a, k]) * np.float64(B[b, k])
            s1 += np.float64(A[a, k + 1]) * np.float64(B[b, k + 1])
            s2 += np.float64(A[a, k + 2]) * np.float64(B[b, k + 2])
            s3 += np.float64(A[a, k + 3]) * np.float64(B[b, k + 3])
        for k in range(d4, d):
            s0 += np.float64(A[a, k]) * np.float64(B[b, k])
        out[p] = (s0 + s1) + (s2 + s3)


_ROW_DOTS = LazyKernel(_row_dots_impl)
_WARM_UP_LOCK = threading.Lock()
_WARM_UP: threading.Thread | None = None


def _row_dots(A: np.ndarray, B: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """``out[p] = A[ia[p]] . B[ib[p]]`` in float64, without gathering the rows.

    A compiled loop (numba, GIL released, so scoring threads run it in parallel) with four
    interleaved partial sums in a fixed order: the same value on every machine (no fast-math
    reassociation). float32 inputs are multiplied in float64 (exact products).
    """
    out = np.empty(ia.shape[0], dtype=np.float64)
    if out.size:
        _ROW_DOTS(np.ascontiguousarray(A), np.ascontiguousarray(B),
                  np.ascontiguousarray(ia, dtype=np.intp), np.ascontiguousarray(ib, dtype=np.intp),
                  out)
    return out


def _warm_up_scoring() -> None:
    # numba import + the cached float32 / float64 kernels (about 0.5 s) and the LAPACK entry
    # points; errors surface later, in the real call
    try:
        from sentvec._lapack import _SIGNATURES, _routine

        idx = np.zeros(1, dtype=np.intp)
        for dtype in (np.float32, np.float64):
            z = np.zeros((1, 4), dtype=dtype)
            _row_dots(z, z, idx, idx)
        for key in _SIGNATURES:
            _routine(*key)
    except Exception:  # pragma: no cover - reported by the real call
        pass


def start_scoring_warm_up() -> None:
    """Load what scoring needs (compiled cosine kernel, LAPACK entry points) in the background.

    Called before a forward pass, so the one-off loading (about 0.5 s, mostly importing numba)
    overlaps with encoding instead of delaying the first scoring. Idempotent; never raises.
    """
    global _WARM_UP
    with _WARM_UP_LOCK:
        if _WARM_UP is not None or _ROW_DOTS.loaded:
            return
        _WARM_UP = threading.Thread(target=_warm_up_scoring, name="sentvec-scoring-warm-up",
                                    daemon=True)
    _WARM_UP.start()


def _row_norms(A: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row of ``A`` (float64), by :func:`_row_dots`."""
    idx = np.arange(A.shape[0], dtype=np.intp)
    return np.sqrt(_row_dots(A, A, idx, idx))


#: Row norms inside this range leave every product and sum of :func:`_row_dots` in the normal
#: float64 range (no overflow, no underflow to subnormals) for any width up to 2**100.
_SAFE_NORMS = (2.0 ** -450, 2.0 ** 450)


def _rescale_extreme_rows(A: np.ndarray, norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``A`` and its row norms with out-of-range rows scaled by a power of two.

    Only float64 rows can be affected (float32 values squared stay far inside float64's range):
    a row with entries near 1e200 has an infinite squared norm, one near 1e-200 a zero one, and
    either would make its cosines NaN or flag it as a zero vector. Such a row is multiplied by
    ``2**-e``, ``e`` the binary exponent of its largest entry, which is exact and leaves every
    cosine of that row unchanged (cosine is scale-invariant). Other rows are not touched, so
    ordinary inputs give bit-identical results; zero rows stay zero. ``A`` is copied when a row
    changes, never modified.
    """
    bad = ~((norms >= _SAFE_NORMS[0]) & (norms <= _SAFE_NORMS[1]))
    if not bad.any():
        return A, norms
    from sentvec._numeric import unit_scale_rows

    scaled, nonzero = unit_scale_rows(A[bad])
    rows = np.flatnonzero(bad)[nonzero]
    if rows.size == 0:
        return A, norms
    A = np.array(A, dtype=np.float64)
    A[rows] = scaled[nonzero]
    norms = norms.copy()
    norms[rows] = _row_norms(A[rows])
    return A, norms


def cosine_similarity_rows(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise cosine similarity of two (n, d) arrays.

    Parameters
    ----------
    A, B : array-like of shape (n, d)
        float32 or float64 (other real dtypes are converted to float64).

    Returns
    -------
    cos : ndarray of shape (n,), float64
        Cosine of each row pair, rounded to 12 decimals; 0.0 where a row is a zero vector
        (cosine undefined).
    undefined : ndarray of shape (n,), bool
        True where either row has zero norm.

    Raises
    ------
    ValueError
        ``A`` and ``B`` are not 2-D arrays of equal shape, are complex, or hold NaN or inf.

    Notes
    -----
    Dot products and norms are float64 sums over the features in a fixed order, so the scores
    of ``score_sts`` are reproducible across machines. Rounding to 1e-12 makes pairs of
    identical vectors (identical sentences: 65 pairs in STS12 SMTeuroparl) tie exactly at 1.0.
    Unrounded, they come out as ``1 +- few ulp`` depending on the vector, an arbitrary order
    that moved a Spearman score by 0.07 points between two algebraically equal whitening
    computations; with exact ties Spearman uses average ranks.

    float64 rows whose norm lies outside about 1e-135 ... 1e135 (squares would overflow or
    underflow) are first scaled by a power of two, which is exact and does not change their
    cosines, so values such as 1e200 or 1e-200 give correct cosines instead of NaN or 0.
    """
    for name, X in (("A", A), ("B", B)):
        # before check_embeddings, whose float64 cast would drop the imaginary part
        if np.iscomplexobj(X):
            raise ValueError(f"cosine similarity needs real vectors, {name} is complex")
    A, B = check_embeddings(A, name="A"), check_embeddings(B, name="B")
    if A.shape != B.shape:
        raise ValueError(f"A and B must be 2-D of equal shape, got {A.shape} and {B.shape}")
    idx = np.arange(A.shape[0], dtype=np.intp)
    A, norm_a = _rescale_extreme_rows(A, _row_norms(A))
    B, norm_b = _rescale_extreme_rows(B, _row_norms(B))
    return _cosines_from_norms(_row_dots(A, B, idx, idx), norm_a, norm_b)


def _cosines_from_norms(num: np.ndarray, norm1: np.ndarray,
                        norm2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``num / (norm1 * norm2)`` rounded to 12 decimals; 0 and flagged where a norm is 0."""
    den = norm1 * norm2
    undefined = ~(den > 0)
    cos = np.divide(num, den, out=np.zeros_like(num), where=~undefined)
    return np.round(cos, 12), undefined


def _subset_cosines(Z: np.ndarray, subset_pairs: Sequence[tuple[np.ndarray, np.ndarray]]
                    ) -> tuple[list[np.ndarray], int, int]:
    """Cosines of the pairs ``(Z[j1], Z[j2])`` of each subset (as ``cosine_similarity_rows``).

    ``Z``: validated float32 or float64 rows. Row norms are computed once per distinct row.
    Returns the cosines per subset, the number of zero rows of ``Z`` and the number of pairs
    whose cosine is undefined.
    """
    Z, norms = _rescale_extreme_rows(Z, _row_norms(Z))
    out = []
    n_undefined = 0
    for j1, j2 in subset_pairs:
        cos, undefined = _cosines_from_norms(_row_dots(Z, Z, j1, j2), norms[j1], norms[j2])
        n_undefined += int(undefined.sum())
        out.append(cos)
    return out, int((~(norms > 0)).sum()), n_undefined


#: Below this estimated reciprocal condition number the Cholesky shortcut is not used.
_CHOLESKY_MIN_RCOND = 1e-8


def _fit_whiten_for_cosine(X: np.ndarray, counts: np.ndarray, n_components: int | None, *,
                           out: np.ndarray | None = None,
                           work: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Whiten ``X`` with mu, Sigma of its rows repeated ``counts`` times; rows for cosine only.

    Cosine similarity is invariant under an orthogonal rotation of the whitened space, and every
    ``W`` with ``W W^T = Sigma^{-1}`` gives ``(x - mu) W`` equal to Eq. 1's ``(x - mu) U D^{-1/2}``
    up to such a rotation. Without dimension reduction and for a well-conditioned Sigma
    (LAPACK ``dpocon`` estimate >= 1e-8, while Whitening drops directions below 1e-10) we
    therefore use the Cholesky factor ``Sigma = L L^T``, ``W = L^{-T}`` (several times faster
    than ``eigh``). A singular Sigma with a clear null space (a single LayerNorm hidden state)
    goes through a pivoted Cholesky factorisation that drops the same directions as
    :class:`sentvec.Whitening` (see ``_whiten_rank_deficient``). Otherwise (``k`` set, or Sigma
    near-singular without a clear gap) :class:`sentvec.Whitening` with its eigen-decomposition.

    ``out`` / ``work``: optional C-ordered float64 arrays of X's shape for the centred rows
    (then also the returned ``Z`` of the plain Cholesky path) and a scaled copy of them (see
    ``WhiteningStatistics._from_block``; then also the returned ``Z`` of the pivoted path).

    Returns
    -------
    Z : ndarray of shape (n, k), float64
    n_dropped : int
        Directions dropped as numerically zero (not warned about here; the
        caller reports one summary warning).
    """
    from sentvec.whitening import Whitening, WhiteningStatistics

    stats, centred = WhiteningStatistics._from_block(X, counts, out=out, work=work)
    # identical rows (a covariance of rounding noise) go to the eigen path, which rejects them;
    # the mean eigenvalue (trace / d) is a lower bound of the largest one that path tests
    if (n_components is None and stats.n_samples >= 2
            and float(np.trace(stats.scatter)) / (stats.n_samples * stats.n_features)
            > stats._rounding_variance()
            # smaller variances go to Whitening, which rejects them with a clear error
            and float(stats.scatter.diagonal().max()) / stats.n_samples >= MIN_VARIANCE):
        # scipy's LAPACK routines, called without holding the GIL (scoring runs in threads)
        from sentvec._lapack import cholesky_lower_inplace, cholesky_rcond, solve_lower_inplace

        cov = stats.covariance  # a new symmetric array: its transpose is the same matrix
        anorm = float(np.abs(cov).sum(axis=0).max())
        L = cov.T.copy(order="F")  # factorised in place; cov is kept for the pivoted path
        if cholesky_lower_inplace(L) == 0:
            rcond, info = cholesky_rcond(L, anorm)
            if info == 0 and rcond >= _CHOLESKY_MIN_RCOND:
                # Z^T = L^{-1} (X - mu)^T: one triangular solve, in place; (X - mu)^T of a
                # C-ordered array is Fortran-ordered, so LAPACK takes it without a copy
                solve_lower_inplace(L, centred.T)
                return centred, 0
        pivoted = _whiten_rank_deficient(cov, anorm, centred, work)
        if pivoted is not None:
            return pivoted
    # no warnings.catch_warnings here: it is not thread-safe and this runs in scoring threads
    w = Whitening(n_components)._fit_statistics(stats, warn=False)
    # Whitening.transform's arithmetic, (X - mean_) @ whitening_matrix_, on the rows centred above
    return centred @ w.whitening_matrix_, int(w.n_dropped_)


def _whiten_rank_deficient(cov: np.ndarray, anorm: float, centred: np.ndarray,
                           work: np.ndarray | None) -> tuple[np.ndarray, int] | None:
    """Whitened rows of a covariance with a clear null space, by pivoted Cholesky; else None.

    Every single hidden state of a LayerNorm model lies in a hyperplane (its features, scaled by
    the LayerNorm gain, sum to a constant), so its covariance has an exact null direction and
    :class:`sentvec.Whitening` drops it (eigenvalues ``<= eps * largest``, ``eps = 1e-10``).
    The same whitening, up to a rotation (which no cosine sees), comes from the rank-revealing
    factorisation ``P^T Sigma P = L L^T`` stopped after ``r`` pivots: the leading ``r`` permuted
    coordinates span the data and ``L11^{-1}`` whitens them; the other ``d - r`` coordinates are
    linear functions of these and are dropped. As Whitening does, each row's component along
    the null space (rounding noise of the input) is projected out first. Cost: one triangular
    solve and two thin products, instead of an eigen-decomposition and a dense product.

    Taken only when the result provably drops the same number of directions as the eigen path:
    the trailing Schur complement ``S`` bounds the ``d - r`` smallest eigenvalues by
    ``||S||_F``, which must be ``<= 1e-2 * eps * max(diag)`` (<= 1e-2 * eps * largest), and the
    kept block bounds the rest from below (interlacing) by its smallest eigenvalue, estimated as
    ``rcond * ||A||_1`` (LAPACK ``dpocon``), which must be ``>= 1e2 * eps * ||Sigma||_1``
    (>= 1e2 * eps * largest) and ``rcond >= 1e-8`` as in the plain Cholesky path. Otherwise the
    caller falls back to the eigen-decomposition.

    ``cov``: (d, d) float64 covariance; ``centred``: its C-ordered (n, d) float64 centred rows;
    ``work``: an optional C-ordered float64 array of at least ``n * d`` elements that receives
    the whitened rows. Returns ``(Z, n_dropped)``, Z of shape (n, r), float64.
    """
    from scipy.linalg import solve_triangular

    from sentvec._lapack import (cholesky_rcond, pivoted_cholesky_lower_inplace,
                                 solve_lower_inplace)
    from sentvec.whitening import DEFAULT_EPS

    d = cov.shape[0]
    top_diag = float(cov.diagonal().max())
    factor = np.array(cov, order="F")  # factorised in place; cov is kept for the checks
    piv, rank, _ = pivoted_cholesky_lower_inplace(factor, 1e-2 * DEFAULT_EPS * top_diag)
    if not 0 < rank < d:
        return None
    kept, rest = piv[:rank], piv[rank:]
    L21 = factor[rank:, :rank]
    # relative to the largest variance, so that the norm neither overflows nor underflows
    schur = (cov[np.ix_(rest, rest)] - L21 @ L21.T) / top_diag
    if not np.linalg.norm(schur) <= 1e-2 * DEFAULT_EPS:
        return None
    L11 = np.tril(factor[:rank, :rank]).copy(order="F")
    a_norm = float(np.abs(cov[np.ix_(kept, kept)]).sum(axis=0).max())
    rcond, info = cholesky_rcond(L11, a_norm)
    # written so that a NaN (an infinite norm) also falls back to the eigen path
    if info != 0 or not (rcond >= _CHOLESKY_MIN_RCOND
                         and rcond * (a_norm / anorm) >= 1e2 * DEFAULT_EPS):
        return None
    # Whitening projects every row onto the kept eigen-directions, which removes its component
    # along the null space (for float32 input on a hyperplane: the input's rounding noise);
    # do the same: N = P [-L11^{-T} L21^T; I] spans the null space, Q is its orthonormal basis,
    # and L11^{-1} ((x - Q Q^T x)[kept]) = L11^{-1} x[kept] - (L11^{-1} Q[kept]) (Q^T x)
    m = d - rank
    null = np.zeros((d, m))
    null[kept] = -solve_triangular(L11, L21.T, lower=True, trans="T")
    null[rest] = np.eye(m)
    Q = np.linalg.qr(null)[0]
    along = centred @ Q  # (n, m): each row's component along the null space
    shift = solve_triangular(L11, Q[kept], lower=True)  # (r, m)
    n = centred.shape[0]
    if work is not None and work.flags.c_contiguous and work.size >= n * rank:
        Z = work.reshape(-1)[:n * rank].reshape(n, rank)
        np.take(centred, kept, axis=1, out=Z)
    else:
        Z = np.ascontiguousarray(centred[:, kept])
    solve_lower_inplace(L11, Z.T)
    Z -= along @ shift.T
    return Z, m


def _pair_indices(task: STSTask, index: dict[str, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for sub in task.subsets:
        try:
            i1 = np.fromiter((index[s] for s in sub.sent1), dtype=np.intp, count=sub.n_pairs)
            i2 = np.fromiter((index[s] for s in sub.sent2), dtype=np.intp, count=sub.n_pairs)
        except KeyError as exc:
            missing = [s for s in chain(sub.sent1, sub.sent2) if s not in index]
            raise KeyError(
                f"{len(set(missing))} sentence(s) of {task.name}/{sub.name} are not in "
                f"`sentences`, e.g. {exc.args[0]!r:.80}; embed unique_sentences(tasks)") from None
        out.append((i1, i2))
    return out


@dataclass(frozen=True)
class _TaskPlan:
    """Index work of one task, independent of the vectors (see :class:`STSScorer`).

    ``rows``: the task's distinct embedding rows (sorted); ``counts``: how often each is a side
    of a scored pair (the year fit set keeps duplicates); ``subset_pairs``: per subset, the two
    sides' positions in ``rows``; ``fit_size``: ``2 x`` the task's pair count.
    """

    name: str
    rows: np.ndarray
    counts: np.ndarray
    subset_pairs: tuple[tuple[np.ndarray, np.ndarray], ...]
    fit_size: int

    @classmethod
    def build(cls, task: STSTask, index: dict[str, int]) -> "_TaskPlan":
        pairs = _pair_indices(task, index)
        all_rows = np.concatenate([np.concatenate(p) for p in pairs])
        rows, inverse = np.unique(all_rows, return_inverse=True)
        subset_pairs = []
        start = 0
        for i1, _ in pairs:
            n = len(i1)
            subset_pairs.append((inverse[start:start + n], inverse[start + n:start + 2 * n]))
            start += 2 * n
        return cls(task.name, rows, np.bincount(inverse, minlength=len(rows)),
                   tuple(subset_pairs), int(all_rows.shape[0]))


class STSScorer:
    """Scores embeddings of fixed sentences on fixed STS tasks (the engine of :func:`score_sts`).

    Everything that does not depend on the vectors is prepared once: the row of every pair's
    sentences, each task's distinct rows with their repeat counts (the "year" whitening fit set),
    the gold scores and subset names. :meth:`score` then costs only the vector work, which is
    what the layer search (56 or more scorings of the same sentences) needs. ``score_sts`` is
    ``STSScorer(tasks, sentences).score(embeddings, ...)``, so both give identical numbers.

    Parameters
    ----------
    tasks : STSTask or iterable of STSTask
    sentences : sequence of str, length n
        Row order of the embeddings passed to :meth:`score`; every sentence of ``tasks`` must be
        present (extra sentences are ignored; for duplicates the first occurrence is used).

    Raises
    ------
    KeyError
        A task sentence is missing from ``sentences``.
    TypeError
        ``sentences`` is a single string.
    ValueError
        No tasks, or duplicate task names.
    """

    def __init__(self, tasks: STSTask | Iterable[STSTask], sentences: Sequence[str]) -> None:
        self.tasks = _as_task_list(tasks)
        if isinstance(sentences, (str, bytes)):
            raise TypeError("sentences must be a sequence of str (the embeddings' row order, "
                            "e.g. unique_sentences(tasks)), not a single string")
        self.sentences = list(sentences)
        index: dict[str, int] = {}
        for i, s in enumerate(self.sentences):
            index.setdefault(s, i)
        self._plans = tuple(_TaskPlan.build(t, index) for t in self.tasks)
        self._used = np.unique(np.concatenate([p.rows for p in self._plans]))
        self._golds = {t.name: [s.gold for s in t.subsets] for t in self.tasks}
        self._gold_ranks = rank_golds(self._golds)
        self._names = {t.name: list(t.subset_names) for t in self.tasks}
        variants = sorted({t.variant for t in self.tasks})
        self._variant: Any = variants[0] if len(variants) == 1 else variants
        self._scratch = threading.local()  # per-thread work buffers (scorings run in threads)

    @property
    def n_sentences(self) -> int:
        """Rows expected in the embeddings (``len(sentences)``)."""
        return len(self.sentences)

    def score(self, embeddings: Any, *, whitening: Any = "none", n_components: int | None = None,
              aggregation: str = "mean",
              metadata: Mapping[str, Any] | None = None) -> STSResult:
        """Score embeddings of ``sentences``; parameters, result and warnings as :func:`score_sts`.

        Raises
        ------
        ValueError
            Bad shapes, non-finite embeddings, unknown modes.
        """
        check_choice("aggregation", aggregation, AGGREGATIONS)
        emb = check_embeddings(embeddings, name="embeddings")
        if emb.shape[1] == 0:
            raise ValueError("embeddings have 0 features; cosine similarity needs at least one")
        if emb.shape[0] != self.n_sentences:
            raise ValueError(f"embeddings has {emb.shape[0]} rows but sentences has "
                             f"{self.n_sentences}")
        if n_components is not None:
            check_positive_int("n_components", n_components)
        fitted = None
        if isinstance(whitening, str):
            check_choice("whitening", whitening, WHITENING_MODES)
            if whitening == "none" and n_components is not None:
                raise ValueError("n_components applies to whitening; it is invalid with "
                                 "whitening='none'")
        else:
            from sklearn.utils.validation import check_is_fitted

            if not callable(getattr(whitening, "transform", None)):
                raise ValueError(f"whitening={whitening!r} is invalid; expected one of "
                                 f"{list(WHITENING_MODES)} or a fitted Whitening")
            check_is_fitted(whitening)
            if n_components is not None:
                raise ValueError("n_components is invalid with an already fitted Whitening")
            fitted = whitening
        if fitted is not None:
            shared = fitted.transform(emb[self._used])
            tally = _ModeTally("fitted")
            for plan in self._plans:
                tally.add(plan, _subset_cosines(shared[np.searchsorted(self._used, plan.rows)],
                                                plan.subset_pairs))
            # warnings point at the caller: _result, score, caller
            return self._result(tally, aggregation, metadata, fitted=fitted, stacklevel=3)

        def rows_of(rows: np.ndarray, out: np.ndarray) -> np.ndarray:
            return np.take(emb, rows, axis=0, out=out, mode="clip")  # indices are valid

        # warnings: _result, _score_modes, score, caller
        return self._score_modes(rows_of, emb.dtype, emb.shape[1], (whitening,),
                                 n_components=n_components, aggregation=aggregation,
                                 metadata=metadata, stacklevel=4)[0]

    def _buffer(self, name: str, n: int, d: int, dtype: Any) -> np.ndarray:
        """A (n, d) C-ordered work array of this thread, reused across scorings.

        Reusing it spares the page faults of fresh 10-30 MB arrays for every task and scoring
        (about 10% of the layer search's CPU time in system calls otherwise).
        """
        bufs = self._scratch.__dict__
        buf = bufs.get(name)
        if buf is None or buf.dtype != dtype or buf.size < n * d:
            buf = bufs[name] = np.empty(max(n * d, 1), dtype=dtype)
        return buf[:n * d].reshape(n, d)

    def _score_modes(self, rows_of: Callable[[np.ndarray, np.ndarray], np.ndarray], dtype: Any,
                     d: int, modes: Sequence[str], *, n_components: int | None,
                     aggregation: str, metadata: Mapping[str, Any] | None,
                     stacklevel: int = 3) -> list[STSResult]:
        """Score validated vectors under several string modes ("none", "year") at once.

        ``rows_of(rows, out)`` writes the float32 or float64 ``dtype`` vectors of the sentences
        at ``rows`` (sorted row indices) into the C-ordered (len(rows), d) array ``out`` and
        returns it; each task's rows are fetched once and scored under every mode. One result
        per mode, in order."""
        tallies = [_ModeTally(w) for w in modes]
        for plan in self._plans:
            X = rows_of(plan.rows, self._buffer("rows", len(plan.rows), d, dtype))
            for tally in tallies:
                if tally.mode == "year":
                    # fit set = both sides of all the task's pairs, duplicates kept (as repeat
                    # counts); the centred rows are written into this thread's work buffer
                    Z, n_dropped = _fit_whiten_for_cosine(
                        X, plan.counts, n_components,
                        out=self._buffer("centred", len(plan.rows), d, np.float64),
                        work=self._buffer("work", len(plan.rows), d, np.float64))
                    tally.dropped[plan.name] = n_dropped
                    tally.fit_sizes[plan.name] = plan.fit_size
                else:
                    Z = X
                tally.add(plan, _subset_cosines(Z, plan.subset_pairs))
        results = []  # a loop, not a comprehension: its own frame would shift stacklevel
        for tally in tallies:
            results.append(self._result(tally, aggregation, metadata,
                                        n_components=n_components, stacklevel=stacklevel))
        return results

    def _result(self, tally: "_ModeTally", aggregation: str,
                metadata: Mapping[str, Any] | None, *, n_components: int | None = None,
                fitted: Any = None, stacklevel: int = 2) -> STSResult:
        """Warnings, Spearman aggregation and the :class:`STSResult` of one mode's cosines."""
        dropped = tally.dropped
        if any(dropped.values()):
            shown = ", ".join(f"{t}: {n}" for t, n in dropped.items() if n)
            warnings.warn(
                "score_sts: year whitening met numerically singular covariances and dropped "
                f"{sum(dropped.values())} eigen-direction(s) with eigenvalue <= 1e-10 x the "
                f"largest (per task: {shown}); the whitened vectors have that many fewer "
                "dimensions", UserWarning, stacklevel=stacklevel)
        if tally.n_zero_pairs:
            warnings.warn(
                f"score_sts: {tally.n_zero_vectors} sentence vector(s) are zero, so the cosine "
                f"of {tally.n_zero_pairs} pair(s) is undefined; those cosines were set to 0",
                UserWarning, stacklevel=stacklevel)

        scores = aggregate_scores(tally.preds, self._golds, self._names,
                                  gold_ranks=self._gold_ranks)
        if scores.n_undefined:
            warnings.warn(
                f"score_sts: {scores.n_undefined} correlation(s) are undefined (constant "
                "predictions or gold); they are NaN, and so is any aggregate that includes them",
                UserWarning, stacklevel=stacklevel)
        if fitted is not None:
            info = WhiteningInfo(mode="fitted",
                                 n_components=int(getattr(fitted, "n_components_", 0)) or None,
                                 fit_corpus="fitted Whitening instance",
                                 fit_size=int(getattr(fitted, "n_samples_seen_", 0)) or None)
        elif tally.mode == "year":
            info = WhiteningInfo(mode="year", n_components=n_components,
                                 fit_corpus="each task's scored pairs (both sides, duplicates "
                                 "kept)", fit_size=sum(tally.fit_sizes.values()),
                                 fit_sizes=dict(tally.fit_sizes), n_dropped=dict(dropped))
        else:
            info = WhiteningInfo(mode="none")
        meta = dict(metadata or {})
        meta["text_variant"] = self._variant  # the text fed
        return STSResult.from_scores(scores, aggregation=aggregation, whitening=info,
                                     metadata=meta, n_zero_vectors=tally.n_zero_vectors,
                                     n_zero_cosine_pairs=tally.n_zero_pairs)


class _ModeTally:
    """Cosines and counts of one scoring mode, gathered task by task."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.preds: dict[str, list[np.ndarray]] = {}
        self.fit_sizes: dict[str, int] = {}
        self.dropped: dict[str, int] = {}
        self.n_zero_vectors = 0
        self.n_zero_pairs = 0

    def add(self, plan: _TaskPlan, cosines: tuple[list[np.ndarray], int, int]) -> None:
        self.preds[plan.name], n_zero, n_undefined = cosines
        self.n_zero_vectors += n_zero
        self.n_zero_pairs += n_undefined


def score_sts(tasks: STSTask | Iterable[STSTask], sentences: Sequence[str], embeddings: Any, *,
              whitening: Any = "none", n_components: int | None = None,
              aggregation: str = "mean", metadata: Mapping[str, Any] | None = None) -> STSResult:
    """Score precomputed sentence embeddings on STS tasks.

    Parameters
    ----------
    tasks : STSTask or iterable of STSTask
    sentences : sequence of str, length n
        ``embeddings[i]`` is the vector of ``sentences[i]``; every sentence of ``tasks`` must be
        present (extra sentences are ignored; for duplicates the first occurrence is used).
    embeddings : array-like of shape (n, d)
    whitening : {"none", "year"} or fitted Whitening
        "none": raw cosine. "year": WhiteningBERT's protocol: for each task, fit mu and Sigma on
        both sentences of **all** scored pairs of the task (all subsets of a SemEval year,
        duplicates kept; the split's own pairs for STS-B / SICK-R) and score every subset with
        it. A fitted :class:`sentvec.Whitening` is applied to all sentences.
    n_components : int, optional
        Dimensions kept by "year" whitening (BERT-whitening's k); invalid with "none" or a
        fitted instance.
    aggregation : {"mean", "wmean", "all"}
        Which task score :attr:`STSResult.task_scores` holds: unweighted mean over subsets
        (WhiteningBERT, default), mean weighted by pair counts (SentEval), or Spearman over all
        subsets' pairs concatenated (SimCSE). All three are kept in the result.
    metadata : mapping, optional
        Stored in the result (model, pooling, layers, ...); the tasks' text variant is added.

    Returns
    -------
    STSResult
        Spearman and Pearson correlations x 100.

    Warns
    -----
    UserWarning
        When a zero vector makes a cosine undefined (that pair's cosine is set to 0 and counted),
        a correlation is undefined (constant predictions: NaN, counted), or "year" whitening
        drops numerically-zero directions of a singular covariance (one warning per call; counts
        per task in ``result.whitening.n_dropped``).

    Raises
    ------
    KeyError
        A task sentence is missing from ``sentences``.
    ValueError
        Bad shapes, non-finite embeddings, unknown modes.
    """
    return STSScorer(tasks, sentences).score(
        embeddings, whitening=whitening, n_components=n_components, aggregation=aggregation,
        metadata=metadata)


def evaluate_sts(encoder: Any, tasks: Any = None, *, whitening: Any = "none",
                 n_components: int | None = None, aggregation: str = "mean",
                 batch_size: int | None = None, show_progress_bar: bool | None = None,
                 metadata: Mapping[str, Any] | None = None) -> STSResult:
    """Encode the tasks' sentences with ``encoder`` and score them (see :func:`score_sts`).

    Parameters
    ----------
    encoder : object with ``encode(sentences, **kw) -> ndarray (n, d)``
    tasks : iterable of STSTask or of task names, optional
        Default: all seven tasks, read with the encoder's preferred text variant
        (``sentvec.encoders.base.text_variant_of``). Names are read the same way.
    whitening : {"none", "year"}, fitted Whitening, list of str or ndarray
        As :func:`score_sts`, plus a corpus to fit on: a list of sentences (encoded with the same
        encoder in a second ``encode`` call) or an ndarray (n, d) of embeddings. The corpus and
        its size are recorded in the result.
    n_components : int, optional
        Dimensions kept by the whitening fitted here ("year" or a corpus).
    batch_size, show_progress_bar : optional
        Passed to ``encoder.encode`` when not None.
    metadata : mapping, optional
        Added to the encoder's own description (``describe_encoder``).

    Returns
    -------
    STSResult

    Notes
    -----
    All distinct task sentences are encoded in ONE ``encode`` call (:func:`unique_sentences`).

    Differences from other evaluators (README, "Evaluation protocols"): a pair with a zero vector
    scores cosine 0, as in SentEval (WhiteningBERT's unwhitened evaluator gives 1.0 for two zero
    vectors and 0.5 for one). Cosines are float64 sums rounded to 12 decimals, so identical
    vectors tie at 1.0; SentEval's float32 cosines break those ties, which moves its Spearman by
    up to about 0.08 per subset.
    """
    from sentvec.encoders.base import describe_encoder, text_variant_of

    if not callable(getattr(encoder, "encode", None)):
        raise TypeError(f"encoder must have an encode method, got {type(encoder).__name__}")
    if tasks is None:
        task_list = load_sts(variant=text_variant_of(encoder))
    elif isinstance(tasks, (str, STSTask)):
        tasks = [tasks]
        task_list = None
    else:
        tasks = list(tasks)
        task_list = None
    if task_list is None:
        if all(isinstance(t, str) for t in tasks):
            task_list = load_sts(tasks, variant=text_variant_of(encoder))
        else:
            task_list = _as_task_list(tasks)
    kwargs: dict[str, Any] = {}
    if batch_size is not None:
        kwargs["batch_size"] = batch_size
    if show_progress_bar is not None:
        kwargs["show_progress_bar"] = show_progress_bar

    def encode(items: list[str]) -> np.ndarray:
        out = np.asarray(encoder.encode(items, **kwargs))
        if out.ndim != 2 or out.shape[0] != len(items):
            raise ValueError(f"encoder.encode returned shape {out.shape} for {len(items)} "
                             "sentences; expected (n, d)")
        return out

    sentences = unique_sentences(task_list)
    start_scoring_warm_up()  # overlaps with the forward pass
    emb = encode(sentences)
    corpus_info = None
    if isinstance(whitening, np.ndarray) or (
            isinstance(whitening, (list, tuple)) and not isinstance(whitening, str)):
        from sentvec.whitening import Whitening

        if isinstance(whitening, np.ndarray):
            corpus = check_embeddings(whitening, name="whitening corpus", n_features=emb.shape[1])
            desc = "embeddings array"
        else:
            from sentvec._validation import check_sentences

            items, _ = check_sentences(whitening, name="whitening corpus")
            corpus = encode(items)
            desc = "sentences encoded with the evaluated encoder"
        fitted = Whitening(n_components).fit(corpus)
        corpus_info = WhiteningInfo(mode="corpus", n_components=n_components, fit_corpus=desc,
                                    fit_size=int(corpus.shape[0]))
        whitening, n_components = fitted, None
    meta = describe_encoder(encoder)
    meta.update(metadata or {})
    result = score_sts(task_list, sentences, emb, whitening=whitening, n_components=n_components,
                       aggregation=aggregation, metadata=meta)
    if corpus_info is not None:
        result = result.replace(whitening=corpus_info)
    return result
