"""Sent2Vec training: gensim-style orchestration around GIL-free Numba kernels.

Pipeline (the corpus is streamed from disk, never held in memory):

1. one compiled read of the text counts the tokens and writes their first-occurrence indices
   (:mod:`sentvec.sent2vec._scan`); the :class:`~sentvec.sent2vec.dictionary.Dictionary` is
   built from the counts (official id order);
2. the indices become int32 word ids in a temporary memory-mapped file with sentence offsets
   (:func:`sentvec.sent2vec.corpus.count_and_convert`), so epochs do no Python work per token;
3. a producer thread cuts each epoch into jobs (ranges of sentences, about ``job_tokens``
   tokens) and puts them on a bounded queue; ``thread`` worker threads each call
   :func:`sentvec.sent2vec.kernels.train_job`, which releases the GIL and updates the shared
   matrices without locks (Hogwild), with its own SplitMix64 state, its own shuffled negatives
   table and its own float64 loss tallies; the main thread shows progress and the producer
   writes checkpoints between jobs.

The learning rate decays linearly, ``lr * (1 - progress)``, with progress counted in tokens over
all epochs (official ``trainThread``). With ``thread=1`` a run is bit-reproducible.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from sentvec import _jit
from sentvec._io import atomic_write_json, atomic_write_text
from sentvec._readers import read_json_object
from sentvec._validation import check_choice, check_float_range, check_positive_int
from sentvec.exceptions import TrainingDivergedError as TrainingDivergedError
from sentvec.sent2vec.hogwild import (
    _STATE_VERSION,
    _check_finite,
    _init_input,
    _Run,
)
from sentvec.sent2vec.reports import TrainingReport

if TYPE_CHECKING:  # pragma: no cover
    from sentvec.sent2vec.model import Sent2Vec

logger = logging.getLogger(__name__)

UpdateMode = Literal["sentence", "target"]
#: ``update`` modes: official per-target source updates, or the deferred per-sentence variant.
UPDATE_MODES: tuple[str, ...] = ("sentence", "target")
Loss = Literal["ns"]
#: Only negative sampling is implemented (the official sent2vec command forces ``-loss ns``).
LOSSES: tuple[str, ...] = ("ns",)
EpochTokens = Literal["all", "trained"]
#: ``epoch_tokens``: what one epoch means for the schedule (see :class:`Sent2VecTrainer`).
EPOCH_TOKENS: tuple[str, ...] = ("all", "trained")
Sigmoid = Literal["table", "exact"]
#: ``sigmoid``: the official 512-entry lookup tables, or exact ``1 / (1 + exp(-x))``.
SIGMOIDS: tuple[str, ...] = ("table", "exact")
_STATE_FILE, _MODEL_DIR, _LATEST = "trainer_state.json", "model", "LATEST"
# hyper-parameters that must match when resuming from a checkpoint
_RESUME_KEYS = (
    "dim",
    "epoch",
    "lr",
    "lr_update_rate",
    "min_count",
    "min_count_label",
    "neg",
    "word_ngrams",
    "dropout_k",
    "t",
    "bucket",
    "max_vocab_size",
    "seed",
    "loss",
    "update",
    "exclude_target",
    "l1",
    "sigmoid",
    "job_tokens",
    "thread",
    "epoch_tokens",
)


def _check_int(
    name: str,
    value: Any,
    minimum: int,
    maximum: int | None = None,
    why: str = "the official .bin format stores it as int32",
) -> int:
    """An integer hyper-parameter in [minimum, maximum]; the official ``.bin`` header stores
    each as int32, so the default maximum is ``2**31 - 1`` (checked before training, not when
    saving)."""
    from sentvec.sent2vec.binfile import INT32_MAX

    v = check_positive_int(name, value, minimum=minimum)
    top = INT32_MAX if maximum is None else maximum
    if v > top:
        raise ValueError(f"{name}={v} is invalid; expected at most {top} ({why})")
    return v


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} is invalid; expected True or False")
    return bool(value)


class Sent2VecTrainer:
    """Train a Sent2Vec model (Pagliardini et al. 2018) with the official code's semantics.

    Defaults are the paper's settings where the paper gives them (Table 5: lr 0.2, 10 negatives,
    unigrams + bigrams) and the reference recipe of this project otherwise (dim 100, t 1e-4,
    min counts 5, dropout K 4 as the paper's Wikipedia uni+bi model). The official binary's own
    defaults differ: ``-lr`` 0.05 and ``-wordNgrams`` 1 at the commit the paper card cites
    (``src/args.cc``), ``-minCountLabel`` 0, ``-thread`` 12, and ``-dropoutK`` 2 where the
    ``sent2vec`` command sets it; pass them explicitly to match a given binary.

    Parameters
    ----------
    dim : int, default 100
        Embedding dimension (``-dim``).
    epoch : int, default 5
        Epochs (``-epoch``); see ``epoch_tokens`` for how long one is.
    lr : float, default 0.2
        Initial learning rate (``-lr``), decayed linearly to 0 over all epochs' tokens.
    epoch_tokens : {"all", "trained"}, default "all"
        Tokens in one epoch, for the learning-rate schedule and the stopping point. ``"all"``
        (official ``trainThread``): every token the dictionary pass read, ``</s>`` of each line
        and out-of-vocabulary tokens included, while progress counts only the in-vocabulary
        tokens trained; the run therefore makes ``epoch * ntokens / in-vocabulary tokens``
        passes (5.28 for 5 epochs on the reference corpus), the last one partial.
        ``"trained"``: exactly ``epoch`` passes.
    lr_update_rate : int, default 100
        Tokens between learning-rate refreshes (``-lrUpdateRate``).
    min_count : int, default 5
        Words seen fewer times are out of vocabulary (``-minCount``).
    min_count_label : int, default 5
        Words seen fewer times are never targets but stay in contexts (``-minCountLabel``).
    neg : int, default 10
        Negatives per target, drawn from the count^0.5 table, never the target (``-neg``).
    word_ngrams : int, default 2
        Longest word n-gram feature (``-wordNgrams``; 1 = unigrams, which forces ``bucket`` 0 as
        the official argument parser does).
    dropout_k : int, default 4
        Positions dropped per target, removing the n-grams that touch them (``-dropoutK``).
    t : float, default 1e-4
        Target subsampling threshold (``-t``): keep probability ``sqrt(t/f) + t/f``.
    bucket : int, default 2_000_000
        Hash buckets for n-grams (``-bucket``).
    max_vocab_size : int, optional
        Keep at most this many vocabulary entries (``-maxVocabSize``).
    thread : int, default 2
        Worker threads (``-thread``).
    seed : int, default 1
        Seeds matrix initialisation, per-thread random streams and negatives-table shuffles.
    loss : {"ns"}
        Negative sampling (the only loss of the sent2vec command).
    update : {"target", "sentence"}, default "target"
        ``"target"``: the official per-target update (each target sees the updates of the
        targets before it), computed incrementally at O(dim * (neg + dropout_k)) per target
        rather than O(dim * sentence length); rows are written back once per sentence.
        ``"sentence"``: a deferred variant in which every target of a sentence reads the rows as
        they were at its start (about 10-20 % faster, not the official schedule; needs
        ``word_ngrams <= 2``). See :mod:`sentvec.sent2vec.kernels`.
    exclude_target : bool, default False
        Paper variant: remove the target from its context (``S \\ {w_t}``) instead of the
        official placeholder substitution.
    l1 : float, default 0.0
        Paper appendix B L1 weight tau (proximal soft-threshold after each update; the paper
        used 0.0005; not in the official code).
    sigmoid : {"table", "exact"}, default "table"
        Official lookup tables or exact sigmoid/log.
    job_tokens : int, default 10_000
        Approximate tokens per job handed to a worker.
    checkpoint_dir : path-like, optional
        Write a checkpoint (a Sent2Vec model directory plus trainer state) there after every
        pass and every ``checkpoint_every`` minutes; each is written under a temporary name and
        renamed into place, then ``LATEST`` is updated atomically.
    checkpoint_every : float, optional
        Minutes between mid-epoch checkpoints (needs ``checkpoint_dir``).
    keep_checkpoints : int, default 1
        Checkpoints kept (older ones are deleted).
    resume_from : path-like, optional
        A checkpoint directory (or a ``checkpoint_dir`` holding ``LATEST``) to continue from; its
        hyper-parameters must equal these.
    show_progress_bar : bool, optional
        Progress with words/s/thread, lr, loss and ETA; default: a bar when stderr is a
        terminal; True: also one line every 30 s elsewhere (:mod:`sentvec._progress`).
    tmp_dir : path-like, optional
        Where the temporary id file goes (default: the system temp directory).
    max_memory : int or str, optional
        Memory limit (bytes or ``"16G"``) for :meth:`memory_estimate`, checked before the
        corpus is read and again with the real vocabulary; default ``$SENTVEC_MAX_MEMORY``, else
        the memory available (``MemAvailable``). Over it, ``fit`` raises
        ``InsufficientMemoryError`` (a ValueError) naming the estimate and its arguments.
    """

    def __init__(
        self,
        *,
        dim: int = 100,
        epoch: int = 5,
        lr: float = 0.2,
        lr_update_rate: int = 100,
        min_count: int = 5,
        min_count_label: int = 5,
        neg: int = 10,
        word_ngrams: int = 2,
        dropout_k: int = 4,
        t: float = 1e-4,
        bucket: int = 2_000_000,
        max_vocab_size: int | None = None,
        thread: int = 2,
        seed: int = 1,
        loss: Loss = "ns",
        update: UpdateMode = "target",
        exclude_target: bool = False,
        l1: float = 0.0,
        sigmoid: Sigmoid = "table",
        epoch_tokens: EpochTokens = "all",
        job_tokens: int = 10_000,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_every: float | None = None,
        keep_checkpoints: int = 1,
        resume_from: str | os.PathLike[str] | None = None,
        show_progress_bar: bool | None = None,
        tmp_dir: str | os.PathLike[str] | None = None,
        max_memory: Any = None,
    ) -> None:
        from sentvec._memory import parse_memory_size
        from sentvec.sent2vec.binfile import MAX_DIM

        self.dim = _check_int(
            "dim", dim, 1, MAX_DIM, why="the largest dim a sentvec .bin reader accepts"
        )
        self.epoch = _check_int("epoch", epoch, 1)
        self.lr = check_float_range("lr", lr, low=0.0, low_inclusive=False)
        self.lr_update_rate = _check_int("lr_update_rate", lr_update_rate, 1)
        self.min_count = _check_int("min_count", min_count, 1)
        self.min_count_label = _check_int("min_count_label", min_count_label, 0)
        self.neg = _check_int("neg", neg, 1)
        self.word_ngrams = _check_int("word_ngrams", word_ngrams, 1)
        self.dropout_k = _check_int("dropout_k", dropout_k, 0)
        self.t = check_float_range("t", t, low=0.0, low_inclusive=False)
        self.bucket = _check_int("bucket", bucket, 0)
        if self.word_ngrams > 1 and self.bucket == 0:
            raise ValueError(
                f"bucket=0 is invalid with word_ngrams={self.word_ngrams}: n-grams "
                "need hash buckets (use bucket > 0, or word_ngrams=1)"
            )
        if self.word_ngrams == 1:
            self.bucket = 0  # official Args::parseArgs: no n-grams, no buckets
        self.max_vocab_size = (
            None if max_vocab_size is None else _check_int("max_vocab_size", max_vocab_size, 2)
        )
        self.thread = _check_int("thread", thread, 1)
        self.seed = _check_int("seed", seed, 0)
        self.loss = check_choice("loss", loss, LOSSES)
        self.update = check_choice("update", update, UPDATE_MODES)
        if self.update == "sentence" and self.word_ngrams > 2:
            raise ValueError(
                f"update='sentence' supports word_ngrams <= 2, got "
                f"word_ngrams={self.word_ngrams}; use update='target'"
            )
        self.exclude_target = _check_bool("exclude_target", exclude_target)
        self.l1 = check_float_range("l1", l1, low=0.0)
        self.sigmoid = check_choice("sigmoid", sigmoid, SIGMOIDS)
        self.epoch_tokens = check_choice("epoch_tokens", epoch_tokens, EPOCH_TOKENS)
        self.job_tokens = _check_int("job_tokens", job_tokens, 1)
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        if checkpoint_every is not None:
            checkpoint_every = check_float_range(
                "checkpoint_every", checkpoint_every, low=0.0, low_inclusive=False
            )
            if self.checkpoint_dir is None:
                raise ValueError("checkpoint_every needs checkpoint_dir")
        self.checkpoint_every = checkpoint_every
        self.keep_checkpoints = _check_int("keep_checkpoints", keep_checkpoints, 1)
        self.resume_from = None if resume_from is None else _find_checkpoint(Path(resume_from))
        if show_progress_bar is not None:
            show_progress_bar = _check_bool("show_progress_bar", show_progress_bar)
        self.show_progress_bar = show_progress_bar
        self.tmp_dir = tmp_dir
        self.max_memory = None if max_memory is None else parse_memory_size(max_memory)
        self.report_: TrainingReport | None = None

    def memory_estimate(self, nwords: int = 0, n_sentences: int = 0) -> tuple[int, str]:
        """Bytes the training arrays need, and the formula with these arguments' values.

        Input matrix ``(nwords + bucket) * dim * 4``, output matrix ``nwords * dim * 4``, one
        shuffled negative table per thread (``thread * 10**7 * 4``), per-word tables (about 200
        bytes a word: counts, probabilities, the Python vocabulary) and the sentence offsets
        (``n_sentences * 8``). The corpus ids are memory-mapped from a file and not counted.
        ``nwords=0`` (before the vocabulary pass) gives a lower bound.
        """
        from sentvec.sent2vec.dictionary import NEGATIVE_TABLE_SIZE

        wi = (nwords + self.bucket) * self.dim * 4
        wo = nwords * self.dim * 4
        tables = self.thread * NEGATIVE_TABLE_SIZE * 4
        need = wi + wo + tables + nwords * 200 + n_sentences * 8
        return need, (
            f"input matrix (nwords {nwords:,} + bucket {self.bucket:,}) x dim "
            f"{self.dim} x 4 B + output matrix nwords x dim x 4 B + {self.thread} "
            f"thread negative tables of 40 MB"
        )

    def _check_memory(self, nwords: int, n_sentences: int = 0) -> None:
        from sentvec._memory import check_memory
        from sentvec.sent2vec.kernels import check_job_size

        check_job_size(self.neg, nwords)  # after the vocabulary pass (nwords > 0) only

        need, drivers = self.memory_estimate(nwords, n_sentences)
        check_memory(
            need,
            what="training" + (" (before the vocabulary pass)" if not nwords else ""),
            drivers=drivers,
            max_memory=self.max_memory,
            hint="lower -bucket or -dim, or cap the vocabulary with -maxVocabSize",
        )

    def config(self) -> dict[str, Any]:
        """Hyper-parameters as a JSON-serialisable dict (sentvec names)."""
        return {k: getattr(self, k) for k in _RESUME_KEYS}

    def official_args(self) -> dict[str, Any]:
        """Hyper-parameters by official flag name (stored with the model and in ``.bin``)."""
        return {
            "dim": self.dim,
            "epoch": self.epoch,
            "lr": self.lr,
            "lrUpdateRate": self.lr_update_rate,
            "minCount": self.min_count,
            "minCountLabel": self.min_count_label,
            "neg": self.neg,
            "wordNgrams": self.word_ngrams,
            "dropoutK": self.dropout_k,
            "t": self.t,
            "bucket": self.bucket,
            "maxVocabSize": self.max_vocab_size or 0,
            "thread": self.thread,
            "loss": "ns",
            "model": "sent2vec",
            "sentvec": {
                "update": self.update,
                "exclude_target": self.exclude_target,
                "l1": self.l1,
                "sigmoid": self.sigmoid,
                "seed": self.seed,
                "epoch_tokens": self.epoch_tokens,
            },
        }

    # ------------------------------------------------------------------ training
    def fit(self, corpus: Any) -> Sent2Vec:
        """Build the vocabulary, convert the corpus and train; return the model.

        Parameters
        ----------
        corpus : path-like or sequence of str
            Text file, one tokenized sentence per line (``.xz``/``.gz``/``.bz2`` decompressed
            on the fly), or the lines themselves. Bytes that are not UTF-8 are kept inside
            tokens as the official byte-level reader keeps them (a warning counts such words).

        Returns
        -------
        Sent2Vec
            Input matrix of shape (nwords + bucket, dim), float32, and output matrix.

        Raises
        ------
        FileNotFoundError
            If the corpus file does not exist.
        ValueError
            If the corpus is empty, has no word reaching ``min_count``, or has no sentence with
            a trainable target (two in-vocabulary tokens, one with count >= ``min_count_label``).
        TrainingDivergedError
            (a ``ValueError``) If SGD diverged and the matrices hold NaN or infinite values; no
            model is returned, so none is written.
        """
        from sentvec.sent2vec import corpus as corpus_mod

        src = corpus_mod.check_corpus(corpus)
        if isinstance(src, Path):
            if src.stat().st_size == 0:
                raise ValueError(f"corpus {str(src)!r} is empty: nothing to train on")
        elif not any(line.strip() for line in src):
            raise ValueError("corpus lines are empty: nothing to train on")
        child = self._compile_kernels()
        try:
            return self._fit(src, child)
        finally:  # a run that failed early leaves no child compiling on
            _jit.finish_child(child, kill=True)

    def _fit(self, src: Any, child: Any) -> Sent2Vec:
        from sentvec.sent2vec import corpus as corpus_mod
        from sentvec.sent2vec.model import Sent2Vec

        t0 = time.perf_counter()
        state = None
        self._check_memory(0)  # before the corpus is read: bucket and dim alone may not fit
        if self.resume_from is not None:
            state, ckpt_model = self._load_checkpoint()
            dictionary = ckpt_model.dictionary
            _warn_non_utf8(dictionary.words)
            self._check_memory(dictionary.nwords)
            t1 = time.perf_counter()
            ids = corpus_mod.convert_corpus(
                src, dictionary.words, dictionary.eos_id, directory=self.tmp_dir
            )
        else:
            # one read of the text: counts, then ids (labels are not sent2vec features)
            dictionary, ids = corpus_mod.count_and_convert(
                src,
                min_count=self.min_count,
                max_vocab_size=self.max_vocab_size,
                bucket=self.bucket,
                word_ngrams=self.word_ngrams,
                directory=self.tmp_dir,
            )
            t1 = time.perf_counter()
        try:
            wait = self._finish_kernels(child)  # compiling, not reading: kept out of the clocks
            t0, t1 = t0 + wait, t1 + wait
            if state is None:
                _warn_non_utf8(dictionary.words)
                self._check_memory(dictionary.nwords)  # the real vocabulary, before the matrices
            t2 = time.perf_counter()
            counts = dictionary.counts
            # the placeholder (count 0) is a target only when min_count_label is 0, as officially
            target_ok = (counts >= self.min_count_label).astype(np.uint8)
            if ids.raw_tokens == 0:
                raise ValueError("corpus is empty (only whitespace): nothing to train on")
            if ids.n_sentences == 0:
                raise ValueError(
                    "no sentence of the corpus has two in-vocabulary tokens "
                    f"(min_count={self.min_count}): nothing to train on"
                )
            if not target_ok[np.asarray(ids.tokens)].any():
                raise ValueError(
                    "no token of the corpus can be a target: every word is below "
                    f"min_count_label={self.min_count_label}"
                )
            logger.info(
                "sent2vec: %d words, %d sentences, %d tokens",
                dictionary.nwords,
                ids.n_sentences,
                ids.n_tokens,
            )
            if state is None:
                wi = _init_input(dictionary.nwords + self.bucket, self.dim, self.seed)
                wo = np.zeros((dictionary.nwords, self.dim), dtype=np.float32)
            else:
                wi = np.array(ckpt_model.input_matrix, dtype=np.float32, order="C")
                wo = np.array(ckpt_model.output_matrix, dtype=np.float32, order="C")
                del ckpt_model
            run = _Run(self, dictionary, ids, wi, wo, target_ok, state)
            t3 = time.perf_counter()
            epochs = run.train()
            t4 = time.perf_counter()
        finally:
            ids.close()
        _check_finite(wi, wo, self.lr)
        model = Sent2Vec(dictionary, wi, wo, args=self.official_args())
        self.report_ = TrainingReport(
            nwords=dictionary.nwords,
            n_sentences=ids.n_sentences,
            n_tokens=ids.n_tokens,
            raw_tokens=ids.raw_tokens,
            threads=self.thread,
            vocab_seconds=t1 - t0,
            convert_seconds=t2 - t1,
            init_seconds=t3 - t2,
            train_seconds=t4 - t3,
            total_seconds=time.perf_counter() - t0,
            epochs=tuple(epochs),
            epoch=self.epoch,
            resumed_tokens=run.resumed_tokens,
        )
        return model

    def _compile_kernels(self) -> Any:
        """Compile (or load from numba's cache) the kernels this run calls before any clock
        starts, saying "compiling kernels, once per install: ~15 s" when that takes long.

        On a first run with a spare core (:func:`sentvec._jit.spare_core`) a child process
        compiles the training loop (the longest compile, about 10 s) while this one compiles
        the corpus-scan kernels and reads the corpus; returns that child (or None) for
        :meth:`_finish_kernels`, which then loads the loop from numba's cache.
        """
        from sentvec.sent2vec import _scan, kernels

        job, child = self._job_settings(), None
        with _jit.compiling_notice(
            self.show_progress_bar, expected=_jit.COMPILE_SECONDS["sent2vec-training"]
        ):
            if self.resume_from is None:
                if _jit.spare_core() and not kernels.job_is_cached(*job):
                    child = _jit.compile_in_child(
                        f"from sentvec.sent2vec import kernels; kernels.compile_job{job!r}"
                    )
                _scan.compile_kernels()
            if child is None:
                kernels.compile_job(*job)
        return child

    def _job_settings(self) -> tuple[int, float, int]:
        from sentvec.sent2vec import kernels

        mode = kernels.MODE_SENTENCE if self.update == "sentence" else kernels.MODE_TARGET
        return int(mode), float(self.l1), int(self.word_ngrams)

    def _finish_kernels(self, child: Any) -> float:
        """Wait for the child of :meth:`_compile_kernels` (if any) and load the training loop it
        compiled (or compile it, if the child failed); returns the seconds this took."""
        if child is None:
            return 0.0
        from sentvec.sent2vec import kernels

        t = time.perf_counter()
        with _jit.compiling_notice(
            self.show_progress_bar, expected=_jit.COMPILE_SECONDS["sent2vec-training"]
        ):
            _jit.finish_child(child)
            kernels.compile_job(*self._job_settings())
        return time.perf_counter() - t

    # ------------------------------------------------------------------ checkpoints
    def _load_checkpoint(self) -> tuple[dict[str, Any], Any]:
        from sentvec.sent2vec.model import Sent2Vec

        ck = cast(Path, self.resume_from)  # called only when resuming
        state = read_json_object(ck / _STATE_FILE)
        if state.get("version") != _STATE_VERSION:
            raise ValueError(
                f"{str(ck)!r}: unsupported trainer state version {state.get('version')!r}"
            )
        mine = self.config()
        diff = {
            k: (state["config"].get(k), mine[k])
            for k in _RESUME_KEYS
            if state["config"].get(k) != mine[k]
        }
        if diff:
            shown = ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
            raise ValueError(f"cannot resume from {str(ck)!r}: hyper-parameters differ ({shown})")
        return state, Sent2Vec.load(ck / _MODEL_DIR, mmap=False)

    def _save_checkpoint(self, run: _Run, epoch: int, job: int) -> Path:
        from sentvec.sent2vec.model import Sent2Vec

        root = cast(Path, self.checkpoint_dir)  # called only with a checkpoint_dir
        root.mkdir(parents=True, exist_ok=True)
        n = 1 + max(
            [int(p.name[5:]) for p in root.glob("ckpt-*") if p.name[5:].isdigit()], default=0
        )
        final = root / f"ckpt-{n:06d}"
        tmp = root / f".ckpt-{n:06d}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            Sent2Vec(run.dictionary, run.wi, run.wo, args=self.official_args()).save(
                tmp / _MODEL_DIR
            )
            atomic_write_json(tmp / _STATE_FILE, run.state_dict(epoch, job))
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        atomic_write_text(root / _LATEST, final.name + "\n")
        old = sorted(p for p in root.glob("ckpt-*") if p.name[5:].isdigit() and p != final)
        for p in old[: max(0, len(old) - (self.keep_checkpoints - 1))]:
            shutil.rmtree(p, ignore_errors=True)
        logger.info("sent2vec: checkpoint %s (epoch %d, job %d)", final, epoch, job)
        return final


def _find_checkpoint(p: Path) -> Path:
    if not p.exists():
        raise FileNotFoundError(f"checkpoint not found: {str(p)!r}")
    if (p / _LATEST).is_file():
        p = p / (p / _LATEST).read_text(encoding="utf-8").strip()
    if not (p / _STATE_FILE).is_file() or not (p / _MODEL_DIR).is_dir():
        raise FileNotFoundError(
            f"{str(p)!r} is not a sentvec Sent2Vec training checkpoint "
            f"(no {_STATE_FILE} and {_MODEL_DIR}/)"
        )
    return p


def _warn_non_utf8(words: list[str]) -> None:
    bad = sum(1 for w in words if not w.isascii() and _has_surrogate(w))
    if bad:
        warnings.warn(
            f"{bad} vocabulary words contain bytes that are not UTF-8; they are kept "
            "byte for byte, as the official reader keeps them (surrogate escapes in "
            "Python strings)",
            UserWarning,
            stacklevel=4,
        )


def _has_surrogate(w: str) -> bool:
    try:
        w.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def train_sent2vec(
    corpus: Any,
    *,
    dim: int = 100,
    epoch: int = 5,
    lr: float = 0.2,
    lr_update_rate: int = 100,
    min_count: int = 5,
    min_count_label: int = 5,
    neg: int = 10,
    word_ngrams: int = 2,
    dropout_k: int = 4,
    t: float = 1e-4,
    bucket: int = 2_000_000,
    max_vocab_size: int | None = None,
    thread: int = 2,
    seed: int = 1,
    loss: Loss = "ns",
    update: UpdateMode = "target",
    exclude_target: bool = False,
    l1: float = 0.0,
    sigmoid: Sigmoid = "table",
    epoch_tokens: EpochTokens = "all",
    job_tokens: int = 10_000,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    checkpoint_every: float | None = None,
    keep_checkpoints: int = 1,
    resume_from: str | os.PathLike[str] | None = None,
    show_progress_bar: bool | None = None,
    tmp_dir: str | os.PathLike[str] | None = None,
    max_memory: Any = None,
) -> Sent2Vec:
    """Train a Sent2Vec model on a corpus (paper: Pagliardini et al. 2018, arXiv:1703.02507).

    Every hyper-parameter is documented in :class:`Sent2VecTrainer`, which this function
    constructs and fits (use the class directly to get :attr:`Sent2VecTrainer.report_`). All are
    validated before the corpus is read. Defaults are the paper's (lr 0.2, uni+bigrams, 10
    negatives) and the reference recipe (dim 100, t 1e-4, min counts 5, dropout K 4); the
    official binary's defaults differ (see :class:`Sent2VecTrainer`).

    Parameters
    ----------
    corpus : path-like or sequence of str
        Text file with one tokenized sentence per line (streamed, never loaded whole;
        ``.xz``/``.gz``/``.bz2`` decompressed on the fly), or the lines themselves.

    Returns
    -------
    Sent2Vec
        The trained model: ``input_matrix`` of shape (nwords + bucket, dim) and
        ``output_matrix`` of shape (nwords, dim), float32; ``encode``, ``save``, ``save_bin``.

    Raises
    ------
    FileNotFoundError
        Missing corpus file or checkpoint.
    ValueError
        An invalid hyper-parameter (the message names it and its value), an empty corpus, a
        corpus without a trainable target (no sentence with two in-vocabulary tokens), or
        ``InsufficientMemoryError``: the model cannot fit (``max_memory``).
    TypeError
        A corpus that is neither a path nor a sequence of str.
    """
    return Sent2VecTrainer(
        dim=dim,
        epoch=epoch,
        lr=lr,
        lr_update_rate=lr_update_rate,
        min_count=min_count,
        min_count_label=min_count_label,
        neg=neg,
        word_ngrams=word_ngrams,
        dropout_k=dropout_k,
        t=t,
        bucket=bucket,
        max_vocab_size=max_vocab_size,
        thread=thread,
        seed=seed,
        loss=loss,
        update=update,
        exclude_target=exclude_target,
        l1=l1,
        sigmoid=sigmoid,
        epoch_tokens=epoch_tokens,
        job_tokens=job_tokens,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=checkpoint_every,
        keep_checkpoints=keep_checkpoints,
        resume_from=resume_from,
        show_progress_bar=show_progress_bar,
        tmp_dir=tmp_dir,
        max_memory=max_memory,
    ).fit(corpus)
