"""SentEval-style transfer (sentence classification) tasks: MR, CR, SUBJ, MPQA, TREC, MRPC, SST2.

Readers follow SentEval's own parsing so that sample counts equal SentEval's (MR 10662, CR 3775,
SUBJ 10000, MPQA 10606, TREC 5452 + 500, MRPC 4076 + 1725 pairs, SST2 67349 / 872 / 1821):

* MR, CR, SUBJ, MPQA: decoded as latin-1, split with ``str.splitlines``; empty lines are kept
  (they are samples in SentEval's CR and MPQA totals). Label 1 for ``*.pos`` (SUBJ: objective),
  0 for ``*.neg`` (SUBJ: subjective), as SentEval's ``BinaryClassifierEval`` assigns them.
* TREC: latin-1 (``train_5500.label`` line 66 holds one non-UTF-8 byte); coarse labels
  (ABBR, DESC, ENTY, HUM, LOC, NUM); the fine label after the colon is dropped.
* MRPC: UTF-8 with byte-order mark and one header line; columns 0 (label), 3 and 4 (sentences).
* SST2: ``SST/binary/sentiment-{train,dev,test}``, UTF-8, ``text<TAB>label``.

SentEval hands encoders whitespace-split token lists, which batchers join with one space; the
sentences here are those strings (``" ".join(line.split())``), with no lower-casing or
tokenization added. Models trained on lower-cased text either carry their own preprocessing (a
Sent2Vec model applies its preprocessing record in ``encode``) or are evaluated with
``lowercase=True`` / ``preprocess=...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from sentvec._data import data_dir as _data_dir
from sentvec._validation import check_choice

__all__ = ["TRANSFER_TASKS", "TransferSplit", "TransferData", "load_transfer"]

TransferTaskName = Literal["MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC", "SST2"]
#: Supported tasks, in the order of the Sent2Vec paper's Table 1 (SST2 last, an extra column).
TRANSFER_TASKS: tuple[str, ...] = ("MRPC", "MR", "CR", "SUBJ", "MPQA", "TREC", "SST2")

_BINARY_FILES = {
    "MR": ("rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("custrev.pos", "custrev.neg"),
    "SUBJ": ("subj.objective", "subj.subjective"),
    "MPQA": ("mpqa.pos", "mpqa.neg"),
}
_TREC_LABELS = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


@dataclass(frozen=True, eq=False)
class TransferSplit:
    """One labelled split of a transfer task.

    Attributes
    ----------
    name : {"all", "train", "dev", "test"}
        ``"all"`` for the cross-validated tasks (MR, CR, SUBJ, MPQA).
    sentences : tuple of str, length n
        First (or only) sentence of each sample.
    labels : ndarray of shape (n,), int64
    pair_sentences : tuple of str or None
        Second sentence of each pair (MRPC), else None.
    """

    name: str
    sentences: tuple[str, ...]
    labels: np.ndarray
    pair_sentences: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.sentences)


@dataclass(frozen=True, eq=False)
class TransferData:
    """A loaded transfer task: its splits and label names (see :func:`load_transfer`)."""

    task: str
    splits: tuple[TransferSplit, ...]
    label_names: tuple[str, ...]

    def split(self, name: str) -> TransferSplit:
        """Return the split called ``name``; ValueError naming the available ones otherwise."""
        for s in self.splits:
            if s.name == name:
                return s
        check_choice("split", name, [s.name for s in self.splits])
        raise AssertionError  # unreachable

    @property
    def n_samples(self) -> int:
        """Total number of labelled samples (pairs for MRPC) over all splits."""
        return sum(len(s) for s in self.splits)

    def all_sentences(self) -> list[str]:
        """Every sentence of every split (both sides of pairs), with repetitions."""
        out: list[str] = []
        for s in self.splits:
            out.extend(s.sentences)
            if s.pair_sentences is not None:
                out.extend(s.pair_sentences)
        return out


def _tokens_joined(line: str) -> str:
    return " ".join(line.split())


def _task_dir(task: str, data_dir: str | Path | None) -> Path:
    sub = "SST/binary" if task == "SST2" else task
    d = _data_dir(data_dir) / "downstream" / sub
    if not d.is_dir():
        raise FileNotFoundError(f"{task} data directory not found: {str(d)!r}")
    return d


def _read(path: Path, encoding: str) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"transfer-task file not found: {str(path)!r}")
    with open(path, encoding=encoding) as fh:  # universal newlines, as SentEval's io.open
        return fh.read()


def _split(name: str, sents: list[str], labels: list[int], pairs: list[str] | None = None):
    return TransferSplit(
        name,
        tuple(sents),
        np.asarray(labels, dtype=np.int64),
        None if pairs is None else tuple(pairs),
    )


def _load_binary(task: str, d: Path) -> TransferData:
    pos_file, neg_file = _BINARY_FILES[task]
    pos = [_tokens_joined(x) for x in _read(d / pos_file, "latin-1").splitlines()]
    neg = [_tokens_joined(x) for x in _read(d / neg_file, "latin-1").splitlines()]
    names = ("subjective", "objective") if task == "SUBJ" else ("negative", "positive")
    return TransferData(task, (_split("all", pos + neg, [1] * len(pos) + [0] * len(neg)),), names)


def _load_trec_file(path: Path, name: str) -> TransferSplit:
    sents, labels = [], []
    for i, line in enumerate(_read(path, "latin-1").splitlines(), start=1):
        coarse, sep, rest = line.strip().partition(":")
        parts = rest.split(" ", 1)
        if not sep or coarse not in _TREC_LABELS or len(parts) != 2:
            raise ValueError(
                f"{str(path)!r} line {i}: expected 'COARSE:fine question', got {line!r:.80}"
            )
        sents.append(_tokens_joined(parts[1]))
        labels.append(_TREC_LABELS.index(coarse))
    return _split(name, sents, labels)


def _load_mrpc_file(path: Path, name: str) -> TransferSplit:
    lines = _read(path, "utf-8-sig").splitlines()
    if not lines or not lines[0].startswith("Quality\t"):
        raise ValueError(f"{str(path)!r}: expected the MRPC header line 'Quality\\t#1 ID\\t...'")
    a, b, labels = [], [], []
    for i, line in enumerate(lines[1:], start=2):
        cols = line.strip().split("\t")
        if len(cols) != 5 or cols[0] not in ("0", "1"):
            raise ValueError(
                f"{str(path)!r} line {i}: expected 5 tab-separated fields with label 0/1"
            )
        labels.append(int(cols[0]))
        a.append(_tokens_joined(cols[3]))
        b.append(_tokens_joined(cols[4]))
    return _split(name, a, labels, b)


def _load_sst2_file(path: Path, name: str) -> TransferSplit:
    sents, labels = [], []
    for i, line in enumerate(_read(path, "utf-8").splitlines(), start=1):
        cols = line.strip().split("\t")
        if len(cols) != 2 or cols[1] not in ("0", "1"):
            raise ValueError(f"{str(path)!r} line {i}: expected 'text<TAB>0|1', got {line!r:.80}")
        sents.append(_tokens_joined(cols[0]))
        labels.append(int(cols[1]))
    return _split(name, sents, labels)


def load_transfer(task: TransferTaskName, *, data_dir: str | Path | None = None) -> TransferData:
    """Read a transfer task as SentEval reads it.

    Parameters
    ----------
    task : {"MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC", "SST2"}
    data_dir : path, optional
        Root holding ``downstream/`` (default: ``sentvec._data.data_dir()``, the package copy).

    Returns
    -------
    TransferData
        One split ``"all"`` (MR, CR, SUBJ, MPQA), ``"train"``/``"test"`` (TREC, MRPC) or
        ``"train"``/``"dev"``/``"test"`` (SST2). See the module docstring for the parsing rules.

    Raises
    ------
    ValueError
        Unknown task, or a malformed line (the message names file and line).
    FileNotFoundError
        Missing data directory or file.
    """
    check_choice("task", task, TRANSFER_TASKS)
    d = _task_dir(task, data_dir)
    if task in _BINARY_FILES:
        return _load_binary(task, d)
    if task == "TREC":
        return TransferData(
            task,
            (
                _load_trec_file(d / "train_5500.label", "train"),
                _load_trec_file(d / "TREC_10.label", "test"),
            ),
            _TREC_LABELS,
        )
    if task == "MRPC":
        return TransferData(
            task,
            (
                _load_mrpc_file(d / "msr_paraphrase_train.txt", "train"),
                _load_mrpc_file(d / "msr_paraphrase_test.txt", "test"),
            ),
            ("not_paraphrase", "paraphrase"),
        )
    return TransferData(
        task,
        tuple(_load_sst2_file(d / f"sentiment-{s}", s) for s in ("train", "dev", "test")),
        ("negative", "positive"),
    )
