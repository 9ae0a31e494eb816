"""What a Sent2Vec training run reports: per-pass tallies and the run's sizes and timings
(``Sent2VecTrainer.report_``, ``train-sent2vec --report``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["EpochReport", "TrainingReport"]


@dataclass(frozen=True)
class EpochReport:
    """Tallies of one pass over the corpus (summed over threads).

    Attributes
    ----------
    epoch : int
        0-based pass index (with ``epoch_tokens="all"`` the last pass is partial).
    loss : float
        Mean over targets of the summed logistic losses (positive + ``neg`` negatives), as the
        official trainer prints it.
    targets : int
        Training targets (positions kept after subsampling and ``min_count_label``).
    tokens : int
        In-vocabulary tokens processed.
    seconds : float
        Wall time of the pass's training loop.
    final_lr : float
        Learning rate of the last sentence of the pass.
    """

    epoch: int
    loss: float
    targets: int
    tokens: int
    seconds: float
    final_lr: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrainingReport:
    """Sizes and timings of a training run (``Sent2VecTrainer.report_``).

    Attributes
    ----------
    nwords : int
        Vocabulary size (``<PLACEHOLDER>`` and ``</s>`` included).
    n_sentences : int
        Sentences with at least two in-vocabulary tokens (those that can train).
    n_tokens : int
        In-vocabulary tokens of those sentences (work of one epoch).
    raw_tokens : int
        Tokens of the corpus text, in and out of vocabulary (the unit of words/s figures).
    threads : int
    vocab_seconds, convert_seconds, init_seconds, train_seconds, total_seconds : float
        Dictionary pass, id conversion, matrix and table set-up, training loop, everything.
        A new run reads the text once for both (``vocab_seconds``); ``convert_seconds`` is then
        the memory check between them (the id conversion is separate only on a resume).
    epochs : tuple of EpochReport
        Passes trained in this run (after a resume: only the remaining ones); with
        ``epoch_tokens="all"``, more than ``epoch`` (the last one partial).
    epoch : int
        Epochs asked for (``-epoch``).
    resumed_tokens : int
        Tokens of ``epochs[0]`` trained before the checkpoint resumed from (not this run's).
    """

    nwords: int
    n_sentences: int
    n_tokens: int
    raw_tokens: int
    threads: int
    vocab_seconds: float
    convert_seconds: float
    init_seconds: float
    train_seconds: float
    total_seconds: float
    epochs: tuple[EpochReport, ...] = field(default_factory=tuple)
    epoch: int = 0
    resumed_tokens: int = 0

    @property
    def final_loss(self) -> float | None:
        """Loss of the last complete pass (else of the last pass; None without passes)."""
        full = [e for e in self.epochs if e.tokens >= self.n_tokens]
        if full:
            return full[-1].loss
        return self.epochs[-1].loss if self.epochs else None

    @property
    def words_per_sec_per_thread(self) -> float:
        """Corpus words per second of training loop, per thread.

        Words are corpus tokens (in and out of vocabulary), so a pass over the corpus counts
        ``raw_tokens`` words, as gensim and the official binary count them. After a resume only
        the tokens this run trained count (not those before the checkpoint).
        """
        if self.train_seconds <= 0 or self.n_tokens == 0:
            return 0.0
        trained = sum(e.tokens for e in self.epochs) - self.resumed_tokens
        return trained * self.raw_tokens / self.n_tokens / self.train_seconds / self.threads

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["epochs"] = [e.to_dict() for e in self.epochs]
        d["words_per_sec_per_thread"] = self.words_per_sec_per_thread
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)
