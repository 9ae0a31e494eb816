"""One Sent2Vec training run on threads (Hogwild): the shared matrices, each thread's random
stream and negatives table, the producer that cuts epochs into jobs and writes checkpoints
between them, the progress bar, the epoch reports, and the check that SGD did not diverge.

:class:`~sentvec.sent2vec.trainer.Sent2VecTrainer` validates the hyper-parameters, prepares the
corpus and the matrices, and runs one :class:`_Run`.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sentvec.exceptions import TrainingDivergedError
from sentvec.sent2vec.reports import EpochReport

#: version of the training state a checkpoint records (``trainer_state.json``)
_STATE_VERSION = 1


class RunSettings(Protocol):
    """What a training run reads of its :class:`~sentvec.sent2vec.trainer.Sent2VecTrainer`."""

    @property
    def lr(self) -> float: ...
    @property
    def t(self) -> float: ...
    @property
    def epoch(self) -> int: ...
    @property
    def epoch_tokens(self) -> str: ...
    @property
    def update(self) -> str: ...
    @property
    def thread(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def job_tokens(self) -> int: ...
    @property
    def bucket(self) -> int: ...
    @property
    def word_ngrams(self) -> int: ...
    @property
    def dropout_k(self) -> int: ...
    @property
    def neg(self) -> int: ...
    @property
    def lr_update_rate(self) -> int: ...
    @property
    def exclude_target(self) -> bool: ...
    @property
    def sigmoid(self) -> str: ...
    @property
    def l1(self) -> float: ...
    @property
    def checkpoint_every(self) -> float | None: ...
    @property
    def checkpoint_dir(self) -> Any: ...
    @property
    def show_progress_bar(self) -> bool | None: ...

    def config(self) -> dict[str, Any]: ...

    def _save_checkpoint(self, run: _Run, epoch: int, job: int) -> Path: ...


def _init_input(rows: int, dim: int, seed: int) -> np.ndarray:
    """Input matrix uniform in [-1/dim, 1/dim) (official ``Matrix::uniform(1.0 / dim)``):
    numpy's ``default_rng(seed)`` float32 stream, row after row, scaled 16 MiB at a time."""
    wi = np.empty((rows, dim), dtype=np.float32)
    flat = wi.reshape(-1)
    rng = np.random.default_rng(seed)
    step = 1 << 22
    for c in range(0, flat.shape[0], step):
        chunk = flat[c : c + step]
        rng.random(out=chunk, dtype=np.float32)
        chunk *= np.float32(2.0 / dim)
        chunk -= np.float32(1.0 / dim)
    return wi


class _Run:
    """State of one training run: shared matrices, per-thread streams, jobs, threads."""

    def __init__(
        self,
        trainer: RunSettings,
        dictionary: Any,
        ids: Any,
        wi: np.ndarray,
        wo: np.ndarray,
        target_ok: np.ndarray,
        state: dict[str, Any] | None,
    ) -> None:
        from sentvec.sent2vec import kernels

        self.k = kernels
        self.tr = trainer
        self.dictionary = dictionary
        self.ids = ids
        self.wi, self.wo = wi, wo
        self.target_ok = target_ok
        self.keep = dictionary.keep_probabilities(trainer.t)
        table = dictionary.negative_table()
        nth = trainer.thread
        self.tables = []
        for i in range(nth):  # each thread walks its own shuffle of the table (official)
            tab = table.copy()
            kernels.shuffle_table(tab, kernels.rng_initial_state(trainer.seed, -1 - i))
            self.tables.append(tab)
        self.rng = [kernels.rng_initial_state(trainer.seed, i) for i in range(nth)]
        self.neg_pos = [np.zeros(1, dtype=np.int64) for _ in range(nth)]
        n_tok = ids.n_tokens
        per_epoch = dictionary.ntokens if trainer.epoch_tokens == "all" else n_tok
        self.total = int(per_epoch) * trainer.epoch
        self.npasses = -(-self.total // n_tok)
        self.stats = np.zeros((nth, self.npasses, kernels.N_STATS), dtype=np.float64)
        self.sig, self.log = kernels.sigmoid_table(), kernels.log_table()
        self.tokens = np.asarray(ids.tokens)
        self.offsets = ids.offsets
        marks = np.arange(0, n_tok, trainer.job_tokens, dtype=np.int64)
        starts = np.unique(np.searchsorted(self.offsets, marks, side="right") - 1)
        self.job_starts = np.append(starts, ids.n_sentences).astype(np.int64)
        self.njobs = len(self.job_starts) - 1
        # jobs of each pass that start before the end of training
        first_tok = self.offsets[self.job_starts[:-1]]
        self.pass_jobs = [
            int((p * n_tok + first_tok < self.total).sum()) for p in range(self.npasses)
        ]
        self.start = (0, 0)
        self.epoch_seconds = [0.0] * self.npasses
        self.resumed_tokens = 0
        if state is not None:
            self._restore(state)
        self.mode = kernels.MODE_SENTENCE if trainer.update == "sentence" else kernels.MODE_TARGET
        #: read by the compiled jobs before each sentence: 1 ends them (Ctrl-C, SIGTERM)
        self.stop_flag = np.zeros(1, dtype=np.uint8)

    def _restore(self, state: dict[str, Any]) -> None:
        if state["n_tokens"] != self.ids.n_tokens or state["njobs"] != self.njobs:
            raise ValueError(
                "cannot resume: the corpus differs from the checkpoint's "
                f"({self.ids.n_tokens} tokens vs {state['n_tokens']})"
            )
        for i in range(self.tr.thread):
            self.rng[i][0] = np.uint64(int(state["rng"][i]))
            self.neg_pos[i][0] = int(state["neg_pos"][i])
        self.stats[:] = np.asarray(state["stats"], dtype=np.float64)
        self.start = (int(state["epoch"]), int(state["job"]))
        self.epoch_seconds = [float(x) for x in state["epoch_seconds"]]
        if self.start[0] < self.npasses:  # tokens of the first reported pass trained earlier
            self.resumed_tokens = int(self.stats[:, self.start[0], self.k.STAT_TOKENS].sum())

    def state_dict(self, epoch: int, job: int) -> dict[str, Any]:
        return {
            "version": _STATE_VERSION,
            "config": self.tr.config(),
            "epoch": epoch,
            "job": job,
            "n_tokens": self.ids.n_tokens,
            "njobs": self.njobs,
            "rng": [str(int(r[0])) for r in self.rng],
            "neg_pos": [int(p[0]) for p in self.neg_pos],
            "stats": self.stats.tolist(),
            "epoch_seconds": self.epoch_seconds,
        }

    def _call(self, tid: int, stats: np.ndarray, first: int, last: int, before: int) -> None:
        tr, d = self.tr, self.dictionary
        self.k.train_job(
            self.tokens,
            self.offsets,
            first,
            last,
            self.wi,
            self.wo,
            self.keep,
            self.target_ok,
            self.tables[tid],
            self.neg_pos[tid],
            self.rng[tid],
            self.sig,
            self.log,
            d.nwords,
            max(tr.bucket, 1),
            tr.word_ngrams,
            tr.dropout_k,
            tr.neg,
            max(d.placeholder_id, 0),
            tr.lr,
            tr.lr_update_rate,
            before,
            self.total,
            self.mode,
            tr.exclude_target,
            tr.sigmoid == "exact",
            tr.l1,
            stats,
            self.stop_flag,
        )

    def train(self) -> list[EpochReport]:
        tr = self.tr
        q: queue.Queue = queue.Queue(maxsize=2 * tr.thread)
        stop = threading.Event()
        cond = threading.Condition()
        errors: list[BaseException] = []
        counts = {"issued": 0, "done": 0}
        epoch_done = [0] * self.npasses
        epoch_t0 = [0.0] * self.npasses
        e0, j0 = self.start

        def worker(tid: int) -> None:
            while True:
                item = q.get()
                if item is None:
                    return
                e, j = item
                try:
                    if not stop.is_set():
                        first, last = int(self.job_starts[j]), int(self.job_starts[j + 1])
                        self._call(
                            tid,
                            self.stats[tid, e],
                            first,
                            last,
                            e * self.ids.n_tokens + int(self.offsets[first]),
                        )
                except BaseException as exc:  # surfaced by the main thread
                    errors.append(exc)
                    stop.set()
                with cond:
                    counts["done"] += 1
                    epoch_done[e] += 1
                    if epoch_done[e] == self.pass_jobs[e] - (j0 if e == e0 else 0):
                        self.epoch_seconds[e] += time.perf_counter() - epoch_t0[e]
                    cond.notify_all()

        def drain() -> None:
            with cond:
                cond.wait_for(lambda: counts["done"] == counts["issued"] or stop.is_set())

        def checkpoint(e: int, j: int) -> None:
            drain()
            if not stop.is_set():
                tr._save_checkpoint(self, e, j)

        def producer() -> None:
            last_ckpt = time.monotonic()
            try:
                for e in range(e0, self.npasses):
                    epoch_t0[e] = time.perf_counter()
                    for j in range(j0 if e == e0 else 0, self.pass_jobs[e]):
                        if (
                            tr.checkpoint_every is not None
                            and (time.monotonic() - last_ckpt) >= 60 * tr.checkpoint_every
                        ):
                            checkpoint(e, j)
                            last_ckpt = time.monotonic()
                        while not stop.is_set():
                            try:
                                q.put((e, j), timeout=0.1)
                                break
                            except queue.Full:
                                continue
                        if stop.is_set():
                            return
                        with cond:
                            counts["issued"] += 1
                    if tr.checkpoint_dir is not None:
                        checkpoint(e + 1, 0)
                        last_ckpt = time.monotonic()
            except BaseException as exc:
                errors.append(exc)
                stop.set()
            finally:
                for _ in range(tr.thread):
                    q.put(None)

        threads = [
            threading.Thread(target=worker, args=(i,), name=f"sent2vec-worker-{i}", daemon=True)
            for i in range(tr.thread)
        ]
        threads.append(threading.Thread(target=producer, name="sent2vec-producer", daemon=True))
        self._run_threads(threads, stop)
        if errors:
            raise errors[0]
        return self._reports(e0)

    def _run_threads(self, threads: list[threading.Thread], stop: threading.Event) -> None:
        """Start ``threads`` and wait for them, updating the progress bar; on Ctrl-C stop the
        compiled jobs at their next sentence and set ``stop``."""
        show = self.tr.show_progress_bar
        if show is None:
            show = bool(getattr(sys.stderr, "isatty", lambda: False)())
        bar = None
        done0 = int(self.stats[:, :, self.k.STAT_TOKENS].sum())
        if show:
            from sentvec._progress import progress_bar

            bar = progress_bar(
                show=True,
                total=self.total,
                initial=done0,
                unit="tok",
                unit_scale=True,
                desc="Sent2Vec",
                smoothing=0.1,
            )
        t_start = time.perf_counter()
        for th in threads:
            th.start()
        try:
            while True:
                alive = [th for th in threads if th.is_alive()]
                if not alive:
                    break
                alive[0].join(0.25)
                if bar is not None:
                    self._progress(bar, done0, t_start)
        except KeyboardInterrupt:
            self.stop_flag[0] = 1  # the compiled jobs return at their next sentence
            stop.set()
            for th in threads:
                th.join()
            raise
        finally:
            if bar is not None:
                self._progress(bar, done0, t_start)
                bar.close()

    def _progress(self, bar: Any, done0: int, t_start: float) -> None:
        S = self.k
        tok = int(self.stats[:, :, S.STAT_TOKENS].sum())
        bar.update(min(tok, self.total) - bar.n)  # the last sentence may end past the total
        e = int(min(self.npasses - 1, tok // max(self.ids.n_tokens, 1)))
        st = self.stats[:, e]
        lr = st[:, S.STAT_LR]
        lr_now = float(lr[lr > 0].min()) if (lr > 0).any() else self.tr.lr
        el = max(time.perf_counter() - t_start, 1e-9)
        bar.set_postfix(
            {
                "words/s/thread": f"{(tok - done0) / el / self.tr.thread:,.0f}",
                "lr": f"{lr_now:.6f}",
                "loss": f"{st[:, S.STAT_LOSS].sum() / max(st[:, S.STAT_TARGETS].sum(), 1):.4f}",
                "epoch": e + 1,
            },
            refresh=False,
        )

    def _reports(self, e0: int) -> list[EpochReport]:
        S = self.k
        out = []
        for e in range(e0, self.npasses):
            st = self.stats[:, e]
            lr = st[:, S.STAT_LR]
            out.append(
                EpochReport(
                    epoch=e,
                    loss=float(st[:, S.STAT_LOSS].sum() / max(st[:, S.STAT_TARGETS].sum(), 1)),
                    targets=int(st[:, S.STAT_TARGETS].sum()),
                    tokens=int(st[:, S.STAT_TOKENS].sum()),
                    seconds=float(self.epoch_seconds[e]),
                    final_lr=float(lr[lr > 0].min()) if (lr > 0).any() else 0.0,
                )
            )
        return out


def _check_finite(wi: np.ndarray, wo: np.ndarray, lr: float) -> None:
    """Raise :class:`TrainingDivergedError` if either matrix holds a non-finite value."""
    bad_in, bad_out = _count_non_finite(wi), _count_non_finite(wo)
    if bad_in or bad_out:
        raise TrainingDivergedError(
            f"training diverged: {bad_in} of {wi.size} input-matrix values and {bad_out} of "
            f"{wo.size} output-matrix values are NaN or infinite (lr={lr}); no model was "
            "written; lower the learning rate"
        )


def _count_non_finite(a: np.ndarray) -> int:
    """NaN and infinite entries of ``a``, counted 4 Mi at a time (no matrix-sized mask: it
    would add a quarter of the input matrix to the peak memory)."""
    flat = a.reshape(-1)
    step = 1 << 22
    return sum(
        int(min(step, flat.size - i) - np.count_nonzero(np.isfinite(flat[i : i + step])))
        for i in range(0, flat.size, step)
    )
