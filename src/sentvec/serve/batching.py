"""Dynamic batching: concurrent requests for one model are encoded together.

Requests wait in a bounded per-model queue. One task per model takes the oldest request and
gathers the ones behind it into a batch until the batch would exceed ``max_batch_size`` items or
``max_batch_tokens`` tokens, or ``max_wait_ms`` has passed with nothing new (a request is never
split; one larger than the bounds is a batch of its own). The batch is encoded in the model's own
worker thread, off the event loop, while the next batch gathers; each request then gets its own
rows, in its own order. A request cancelled while queued (its client went away) leaves the queue
at once (it no longer counts toward the queue's depth or its limit) and is skipped, so it costs no
encoding.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sentvec.exceptions import BatcherClosedError, QueueFullError

__all__ = ["DynamicBatcher", "QueueFullError", "BatcherClosedError"]

log = logging.getLogger("sentvec.serve")


@dataclass(eq=False)
class _Job:
    texts: list[str]
    tokens: int
    future: asyncio.Future = field(repr=False)
    queued: bool = True  # counted in the queue's depth


def _rows(result: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of an encode result: an array, or a tuple of arrays and Nones."""
    if isinstance(result, tuple):
        return tuple(None if part is None else part[start:stop] for part in result)
    return result[start:stop]


#: ``on_batch(items, tokens, seconds)``: called after each encoded batch (metrics).
BatchObserver = Callable[[int, int, float], None]


class DynamicBatcher:
    """Gathers concurrent encode requests for one encoder into batches.

    Parameters
    ----------
    encode : callable
        ``encode(list of str) -> ndarray (n, d) float32``, or ``-> (ndarray (n, d), ndarray
        (n,) or None)`` for an encoder that also counts each text's tokens; run in this
        batcher's worker thread, one batch at a time. Each request gets its own rows of each.
        With ``prepare``, ``encode`` gets what ``prepare`` returned instead of the texts.
    prepare : callable, optional
        ``prepare(list of str)``, run on the event loop on each batch's texts before ``encode``
        runs in the thread: cheap work that needs the GIL (a Sent2Vec model's UTF-8 bytes), so
        that the thread runs GIL-free work only. Handing a batch to a thread and back costs
        more when both sides take turns on the GIL (docs/results/serving.md). Its exceptions fail the
        batch's requests, as ``encode``'s do.
    max_batch_tokens : int, default 16384
        Token budget of a batch (the sum of its requests' token counts).
    max_batch_size : int, default 256
        Items (sentences) per batch.
    max_wait_ms : float, default 2.0
        How long a batch waits for more requests when the queue is empty. Not waited when the
        previous batch held a single request (a lone client then pays no delay).
    max_queue_items : int, default 8192
        Items queued at most; beyond, :meth:`submit` raises :class:`QueueFullError`.
    max_concurrent_batches : int, default 1
        Batches encoded at once, each in its own worker thread (the next one gathers while
        they run). More than 1 pays only for an encoder that runs without the GIL and on one
        core per call (Sent2Vec's compiled loop); a transformer's forward pass already uses
        every core.
    name : str
        The model's name (worker thread name, log lines).
    on_batch : callable, optional
        ``on_batch(items, tokens, seconds)`` after each batch.
    on_depth : callable, optional
        ``on_depth(queued_items)`` whenever the queue's depth changes: a request queued, taken
        into a batch, or dropped (its client went away; the batcher closed). Metrics.

    Raises
    ------
    ValueError
        A bound below 1, or a negative wait.
    """

    def __init__(
        self,
        encode: Callable[[Any], Any],
        *,
        prepare: Callable[[list[str]], Any] | None = None,
        max_batch_tokens: int = 16384,
        max_batch_size: int = 256,
        max_wait_ms: float = 2.0,
        max_queue_items: int = 8192,
        max_concurrent_batches: int = 1,
        name: str = "model",
        on_batch: BatchObserver | None = None,
        on_depth: Callable[[int], None] | None = None,
    ) -> None:
        for label, value in (
            ("max_batch_tokens", max_batch_tokens),
            ("max_batch_size", max_batch_size),
            ("max_queue_items", max_queue_items),
            ("max_concurrent_batches", max_concurrent_batches),
        ):
            if int(value) < 1:
                raise ValueError(f"{label} must be >= 1, got {value}")
        if not max_wait_ms >= 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        self._encode = encode
        self._prepare = prepare
        self.max_batch_tokens = int(max_batch_tokens)
        self.max_batch_size = int(max_batch_size)
        self.max_wait = float(max_wait_ms) / 1000.0
        self.max_queue_items = int(max_queue_items)
        self.name = name
        self._on_batch = on_batch
        self._on_depth = on_depth
        self._pending: deque[_Job] = deque()
        self._queued_items = 0
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self.max_concurrent_batches = int(max_concurrent_batches)
        self._executor = ThreadPoolExecutor(
            self.max_concurrent_batches, thread_name_prefix=f"sentvec-encode-{name}"
        )
        self._closed = False
        self._last_batch_jobs = 0
        self._current: set[_Job] = set()  # the jobs of the batches being encoded
        self._encoding: set[asyncio.Task] = set()  # one task per batch being encoded
        #: Set when the batching task died of an unexpected error (the server is unhealthy).
        self.failed: BaseException | None = None

    @property
    def queued_items(self) -> int:
        """Items waiting in the queue (not yet in a batch being encoded)."""
        return self._queued_items

    def _start(self) -> None:
        if self._task is None:
            self._wakeup = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"sentvec-batcher-{self.name}"
            )

    async def submit(self, texts: list[str], tokens: int) -> Any:
        """Queue ``texts`` and return their vectors, shape ``(len(texts), d)``, in order.

        Parameters
        ----------
        texts : list of str
            At least one text.
        tokens : int
            Their token count, or a bound of it (counts against ``max_batch_tokens``).

        Returns
        -------
        ndarray, or tuple
            What ``encode`` returned for the batch, cut to these texts' rows: the vectors, or
            the vectors and the token counts (None stays None).

        Raises
        ------
        QueueFullError
            The queue cannot take ``len(texts)`` more items.
        BatcherClosedError
            The batcher is closed.
        Exception
            Whatever the encoder raised for the batch holding these texts.
        """
        return await self.enqueue(texts, tokens)  # a cancelled await cancels the future

    def enqueue(self, texts: list[str], tokens: int) -> asyncio.Future:
        """Queue ``texts`` now; the future gets what :meth:`submit` returns.

        Cancelling the future drops the request: still queued, it is never encoded; already in a
        batch, its rows are discarded. Raises as :meth:`submit` (at once, nothing queued).
        """
        if self._closed:
            raise BatcherClosedError("the server is shutting down")
        n = len(texts)
        if self._queued_items and self._queued_items + n > self.max_queue_items:
            raise QueueFullError(self._queued_items, n, self.max_queue_items)
        self._start()
        assert self._wakeup is not None
        job = _Job(texts, int(tokens), asyncio.get_running_loop().create_future())
        self._pending.append(job)
        self._queued_items += n
        if self._on_depth is not None:
            self._on_depth(self._queued_items)
        job.future.add_done_callback(lambda _: self._leave(job))  # a cancel: leaves at once
        self._wakeup.set()
        return job.future

    def _leave(self, job: _Job) -> None:
        """``job`` no longer counts as queued (taken into a batch, cancelled, or failed): the one
        place the depth goes down."""
        if job.queued:
            job.queued = False
            self._queued_items -= len(job.texts)
            if self._on_depth is not None:
                self._on_depth(self._queued_items)

    def _pop_live(self) -> _Job | None:
        while self._pending:
            job = self._pending.popleft()
            self._leave(job)
            if not job.future.done():
                return job
        return None

    def _peek_live(self) -> _Job | None:
        while self._pending and self._pending[0].future.done():
            self._leave(self._pending.popleft())
        return self._pending[0] if self._pending else None

    async def _gather(self) -> list[_Job]:
        """The next batch: the oldest live job and the ones that fit behind it."""
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            first = self._pop_live()
            if first is not None:
                break
            self._wakeup.clear()
            await self._wakeup.wait()
        jobs, items, tokens = [first], len(first.texts), first.tokens
        wait = self.max_wait if self._last_batch_jobs > 1 else 0.0
        deadline = loop.time() + wait
        while items < self.max_batch_size and tokens < self.max_batch_tokens:
            job = self._peek_live()
            if job is None:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining)
                except TimeoutError:
                    break
                continue
            if items + len(job.texts) > self.max_batch_size:
                break
            if tokens + job.tokens > self.max_batch_tokens:
                break
            self._pop_live()
            jobs.append(job)
            items += len(job.texts)
            tokens += job.tokens
        return jobs

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        slots = asyncio.Semaphore(self.max_concurrent_batches)
        try:
            while True:
                await slots.acquire()
                jobs = await self._gather()
                self._current.update(jobs)
                self._last_batch_jobs = len(jobs)
                task = loop.create_task(self._encode_batch(jobs))
                self._encoding.add(task)
                task.add_done_callback(self._encoding.discard)
                task.add_done_callback(lambda _: slots.release())
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # pragma: no cover - a bug in the loop itself
            self.failed = exc
            log.exception("model %r: the batching task stopped", self.name)
            raise

    async def _encode_batch(self, jobs: list[_Job]) -> None:
        """Encode one batch in a worker thread and give each job its rows."""
        loop = asyncio.get_running_loop()
        texts = jobs[0].texts if len(jobs) == 1 else [t for job in jobs for t in job.texts]
        t0 = time.perf_counter()
        try:
            try:
                work = texts if self._prepare is None else self._prepare(texts)
                result = await loop.run_in_executor(self._executor, self._encode, work)
            except Exception as exc:  # the encoder failed: those requests fail, not the loop
                log.exception(
                    "model %r: encoding a batch of %d inputs failed", self.name, len(texts)
                )
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(exc)
                return
            counted = result[1] if isinstance(result, tuple) else None
            if self._on_batch is not None:
                tokens = (
                    int(counted.sum()) if counted is not None else sum(job.tokens for job in jobs)
                )
                self._on_batch(len(texts), tokens, time.perf_counter() - t0)
            if len(jobs) == 1:  # the whole result is this job's
                if not jobs[0].future.done():
                    jobs[0].future.set_result(result)
                return
            start = 0
            for job in jobs:
                stop = start + len(job.texts)
                if not job.future.done():
                    job.future.set_result(_rows(result, start, stop))
                start = stop
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # pragma: no cover - a bug in the batching itself
            self.failed = exc
            log.exception("model %r: the batching task stopped", self.name)
            raise
        finally:
            self._current.difference_update(jobs)

    async def aclose(self) -> None:
        """Stop batching: queued requests fail with :class:`BatcherClosedError`; the worker
        threads finish the batches they are encoding, then exit."""
        self._closed = True
        tasks = [t for t in (self._task, *self._encoding) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        while self._pending or self._current:
            job = self._pending.popleft() if self._pending else self._current.pop()
            self._leave(job)
            if not job.future.done():
                job.future.set_exception(BatcherClosedError("the server is shutting down"))
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)
