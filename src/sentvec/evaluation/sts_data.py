"""STS test sets: the readers (SentEval and raw layouts) and the sentences they score.

:func:`load_sts` returns :class:`STSTask` objects (STS12-16, STS Benchmark, SICK-R) holding only
the scored pairs, read under SentEval's conventions (fixed subset lists, unscored pairs skipped,
no CSV quoting); :func:`unique_sentences` lists the distinct sentences to encode once. Scoring
lives in :mod:`sentvec.evaluation.sts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sentvec._validation import check_choice

__all__ = [
    "STS_TASKS",
    "STS_SUBSETS",
    "STS_SPLITS",
    "TEXT_VARIANTS",
    "GOLD_RANGE",
    "STSSubset",
    "STSTask",
    "load_sts",
    "unique_sentences",
    "as_task_list",
    "STS_TASK_ALIASES",
    "canonical_sts_task",
]


STS_TASKS: tuple[str, ...] = (
    "STS12",
    "STS13",
    "STS14",
    "STS15",
    "STS16",
    "STSBenchmark",
    "SICKRelatedness",
)
#: Short names of :data:`STS_TASKS` (lower-case keys; matching is case-insensitive), the names
#: the command line and the result tables use (STSB, SICK, sts12, ...).
STS_TASK_ALIASES: dict[str, str] = {
    "stsb": "STSBenchmark",
    "sts-b": "STSBenchmark",
    "sick": "SICKRelatedness",
    "sick-r": "SICKRelatedness",
    **{t.lower(): t for t in STS_TASKS},
}
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
_SICK_FILES = {
    "train": "SICK_train.txt",
    "trial": "SICK_trial.txt",
    "test": "SICK_test_annotated.txt",
}


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
                f"({len(self.sent1)}, {len(self.sent2)}, {gold.shape})"
            )
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
        raise ValueError(
            f"{str(path)!r} line {line}: byte 0x{data[exc.start]:02X} is not valid "
            "UTF-8; STS files must be UTF-8 (convert it, e.g. with iconv)"
        ) from None
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
    for i, (pair, g) in enumerate(zip(pairs, golds, strict=True), 1):
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
        raise ValueError(
            f"{str(path)!r} line {line}: gold score {text!r} is outside "
            f"[{GOLD_RANGE[0]:g}, {GOLD_RANGE[1]:g}], the STS scale"
        )
    return value


def _non_empty(subset: STSSubset, path: Path) -> STSSubset:
    if subset.n_pairs == 0:
        raise ValueError(
            f"{str(path)!r}: subset {subset.name!r} has no scored pairs (no "
            "non-blank gold score); its correlation would be undefined"
        )
    return subset


def _read_table(
    path: Path, *, name: str, score_col: int, sent_cols: tuple[int, int], header: str | None
) -> STSSubset:
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
            raise ValueError(
                f"{str(path)!r} line {i}: expected at least {need} tab-separated "
                f"fields, got {len(fields)}"
            )
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


def canonical_sts_task(name: str) -> str:
    """The SentEval name (one of :data:`STS_TASKS`) of a task name or short name.

    ``"STSB"``, ``"stsb"``, ``"sts-b"`` -> ``"STSBenchmark"``; ``"SICK"`` -> ``"SICKRelatedness"``;
    ``"sts12"`` -> ``"STS12"`` (case-insensitive, see :data:`STS_TASK_ALIASES`).

    Raises
    ------
    ValueError
        Not a task name nor a short name; the message lists both.
    """
    if not isinstance(name, str):
        raise ValueError(f"task must be a string, got {type(name).__name__}")
    full = STS_TASK_ALIASES.get(name.strip().lower())
    if full is None:
        short = sorted(set(STS_TASK_ALIASES) - {t.lower() for t in STS_TASKS})
        raise ValueError(
            f"task={name!r} is invalid; expected one of {list(STS_TASKS)} or the "
            f"short names {short} (case-insensitive)"
        )
    return full


def load_sts(
    tasks: str | Iterable[str] | None = None,
    *,
    data_dir: Any = None,
    variant: TextVariant | str = "senteval",
    split: str = "test",
) -> list[STSTask]:
    """Read STS tasks (only their scored pairs).

    Parameters
    ----------
    tasks : str or iterable of str, optional
        Names from :data:`STS_TASKS` (SentEval's names) or their short names
        (:data:`STS_TASK_ALIASES`: ``"STSB"``, ``"SICK"``, ``"sts12"``, case-insensitive);
        default all seven, in that order. Returned tasks carry the SentEval name.
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
    names = [canonical_sts_task(name) for name in names]
    all_splits = sorted(set(chain.from_iterable(STS_SPLITS.values())) | {"dev"})
    check_choice("split", split, all_splits)
    for name in names:
        actual = "trial" if (name == "SICKRelatedness" and split == "dev") else split
        if actual not in STS_SPLITS[name]:
            raise ValueError(
                f"split={split!r} is invalid for task {name!r}; expected one of "
                f"{list(STS_SPLITS[name])}"
            )
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
            sub = _read_table(
                directory / _STSB_FILES[split],
                name=split,
                score_col=4,
                sent_cols=(5, 6),
                header=None,
            )
            out.append(STSTask(name, (sub,), variant, split))
        else:
            actual = "trial" if split == "dev" else split
            sub = _read_table(
                directory / _SICK_FILES[actual],
                name=actual,
                score_col=3,
                sent_cols=(1, 2),
                header="pair_ID",
            )
            out.append(STSTask(name, (sub,), variant, actual))
    return out


def as_task_list(tasks: Any) -> list[STSTask]:
    """``tasks`` (one STSTask or an iterable of them) as a non-empty list with unique names.

    Raises
    ------
    TypeError
        An item is not an STSTask.
    ValueError
        No tasks, or two with the same name.
    """
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
    for task in as_task_list(tasks):
        for sub in task.subsets:
            for a, b in zip(sub.sent1, sub.sent2, strict=True):
                seen[a] = None
                seen[b] = None
    return list(seen)
