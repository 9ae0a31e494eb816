"""Encoding and whitening statistics on a Dask distributed cluster, surviving worker loss.

:func:`encode_file_distributed` is :func:`sentvec.encode_files.encode_file` with the shards
encoded by the workers of a ``distributed.Client``; the output directory is the same (the same
``shard-<first>-<end>.npy`` files, one ``manifest.json`` written by the client), so a cluster run
and a single-machine run resume each other's output and :func:`~sentvec.encode_files.load_embeddings`
reads either.

How a run goes:

1. The model is shipped once per worker by a ``distributed.WorkerPlugin``: a model *path or
   alias* (a Sent2Vec ``.bin`` or directory, a Hugging Face directory, ``"minilm"``) travels as
   text and is loaded by :func:`sentvec.load_encoder` on each worker, so the weights never pass
   through the scheduler; an in-memory encoder object is pickled once into the plugin. The
   scheduler re-sends the plugin to every worker that joins later (a restarted worker loads the
   model again). Each task gets one thread (``threads_per_task``: torch intra-op threads and the
   Sent2Vec kernel's threads), so N one-thread workers use N cores.
2. The client counts the lines, plans the shards exactly as ``encode_file`` does, encodes the
   resume probe on a worker, reuses the shards of a matching previous run (either kind) and
   removes shard files that no manifest records.
3. One task per line-range partition (``partition_lines``, a multiple of ``shard_size``; default
   one shard) is submitted with ``retries``. A task writes each shard atomically (temporary file
   + rename) and is idempotent: run again after its worker died, it reuses the shard files the
   earlier attempt finished. The client records each finished partition in the manifest (at
   most once a second, less often for very large manifests, and at the end) and shows a tqdm
   bar in lines/s.
4. A worker that dies loses only the partition it was running: the scheduler reruns it on
   another worker (a task whose workers die more than ``distributed.scheduler.allowed-failures``
   times fails with ``KilledWorker``). A task that raises is retried ``retries`` times by Dask.
   A partition that still fails does not stop the others; once they are done, the run raises
   :class:`PartitionError` naming the failed line ranges, with every finished shard recorded, so
   the same call resumes.

Whitening statistics (WhiteningBERT Eq. 1 needs the mean and covariance of the vectors):
``statistics=True`` makes every task also return the :class:`~sentvec.whitening.WhiteningStatistics`
of its shards (float64 count, mean and centred scatter of the float32 vectors as written); the
client merges them in line order (Chan et al. pairwise update, float64), so
``Whitening().fit_statistics(result.statistics)`` equals ``Whitening().fit`` on all rows. Shards
reused from an earlier run get their statistics from a task reading the shard file, so calling
again on a finished output computes the statistics on the cluster without re-encoding.

``distributed`` is an optional dependency (``pip install "sentvec[dask]"``); this module imports
it, and nothing else in sentvec imports this module until it is used. The workers need sentvec
installed and the input file, the model path and the output directory at the same paths as the
client (a shared file system).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sentvec._extras import require_extra
from sentvec._validation import check_float_range, check_positive_int
from sentvec.encode_files import (
    check_encode_arguments,
    plan_shards,
    remove_shards,
    reusable_shards,
    warn_zero_vectors,
)
from sentvec.encode_manifest import (
    MANIFEST_NAME,
    EncodeManifest,
    ManifestWriter,
    ShardRecord,
    describe_whitening,
    read_manifest,
)
from sentvec.exceptions import PartitionError
from sentvec.line_ranges import scan_lines

require_extra("dask", "sentvec.cluster (Dask distributed)")

import dask  # noqa: E402 - after the check that names the extra to install
import distributed  # noqa: E402

from sentvec.cluster_worker import (  # noqa: E402
    EncoderPlugin,
    _encode_partition,
    _PartitionOutput,
    _probe_task,
    _statistics_task,
)

__all__ = [
    "DistributedEncodeResult",
    "PartitionError",
    "PartitionRecord",
    "encode_file_distributed",
    "local_client",
]

# while partitions finish, the manifest is rewritten at most once per second, and not sooner
# than 50 times the last rewrite took (so its I/O stays under ~2 % even with 100,000 shards)
_MANIFEST_EVERY_S = 1.0
_MANIFEST_IO_FACTOR = 50.0
# Dask's default worker environment entry that local_client unsets (see its Notes)
_TRIM_KEY = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


@dataclass(frozen=True)
class PartitionRecord:
    """What one partition task did: lines ``[start_line, end_line)``, on which worker.

    ``n_encoded`` / ``n_reused`` count its shards encoded now / found already written by an earlier
    attempt of the same task (a rerun after its worker died); ``pid`` is the worker process.
    """

    start_line: int
    end_line: int
    worker: str
    pid: int
    n_encoded: int
    n_reused: int
    seconds: float


@dataclass(frozen=True)
class DistributedEncodeResult:
    """Returned by :func:`encode_file_distributed`.

    Attributes
    ----------
    manifest : EncodeManifest
        As written to ``<output_dir>/manifest.json`` (same format as ``encode_file``'s).
    statistics : WhiteningStatistics or None
        Float64 statistics of every vector of the range (``statistics=True``), else None.
    partitions : tuple of PartitionRecord
        The partition tasks run by this call, in line order (reused partitions are absent).
    dashboard_link : str or None
        The Dask dashboard of the client's cluster.
    """

    manifest: EncodeManifest
    statistics: Any
    partitions: tuple[PartitionRecord, ...]
    dashboard_link: str | None


# --------------------------------------------------------------------------- client side


@contextlib.contextmanager
def local_client(
    n_workers: int,
    *,
    threads_per_worker: int = 1,
    dashboard_address: str | None = ":0",
    **cluster_kwargs: Any,
) -> Iterator[Any]:
    """A ``distributed.Client`` on a new ``LocalCluster`` of worker processes, closed on exit.

    Parameters
    ----------
    n_workers : int
        Worker processes (each with a nanny that restarts it if it dies).
    threads_per_worker : int
        Threads per worker (default 1: one task per core, each task single-threaded).
    dashboard_address : str or None
        ``":0"`` (default) serves the dashboard on a free port of 127.0.0.1 (needs bokeh); a
        port-only address is bound to 127.0.0.1 (distributed alone would bind it to every
        interface); None serves no dashboard (the scheduler's health routes go to a free port of
        127.0.0.1).
    **cluster_kwargs
        More ``distributed.LocalCluster`` arguments (``memory_limit``, ...).

    Yields
    ------
    distributed.Client

    Notes
    -----
    The scheduler, the workers and the dashboard listen on 127.0.0.1 only.

    The workers start without the ``MALLOC_TRIM_THRESHOLD_=65536`` that Dask's nanny sets by
    default (``distributed.nanny.pre-spawn-environ``; one set in this process's environment is
    still inherited): setting any glibc malloc threshold turns off glibc's dynamic mmap
    threshold, so every buffer over 128 KiB a torch forward pass allocates is mapped and unmapped
    again, page-faulted afresh each batch. With it, MiniLM on one thread took 12x the page faults,
    13x the system time and 1.45x the CPU time per line (docs/SCALING.md).
    """
    n_workers = check_positive_int("n_workers", n_workers)
    threads_per_worker = check_positive_int("threads_per_worker", threads_per_worker)
    # distributed binds a port-only dashboard address (":0") to every interface, and with None
    # still serves its HTTP routes on 8787: both are pinned to 127.0.0.1 here
    if dashboard_address is None:
        http = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
    else:
        if dashboard_address.startswith(":"):
            dashboard_address = "127.0.0.1" + dashboard_address
        http = {"dashboard": True, "dashboard_address": dashboard_address}
    kwargs: dict[str, Any] = dict(
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        processes=True,
        host="127.0.0.1",
        dashboard_address=http["dashboard_address"],
    )
    kwargs.update(cluster_kwargs)
    kwargs["scheduler_kwargs"] = {**http, **kwargs.get("scheduler_kwargs", {})}
    # the nannies read their pre-spawn environment when created (restarts reuse it); None is
    # Dask's documented way to unset a default there
    with dask.config.set({_TRIM_KEY: None}):
        cluster = distributed.LocalCluster(**kwargs)
    with cluster, distributed.Client(cluster) as client:
        yield client


#: Seconds ``connect_client`` waits for a scheduler's handshake by default.
CONNECT_TIMEOUT = 30.0


def connect_client(address: str, *, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A ``distributed.Client`` of the running scheduler at ``address``, or a clear error.

    distributed's own connect timeout covers only refused connections: a server that accepts
    and stays silent held the client in its handshake for 300 s and more, and a peer that is
    not Dask (an HTTP server) made it read its reply as a frame length ("Unable to allocate
    3.07 EiB"). The handshake is therefore tried first, bounded by ``timeout``, and any
    failure is a ``ConnectionError`` naming the address.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` (what ``dask scheduler`` prints).
    timeout : float
        Seconds for the connection and the handshake together (and for the client's own
        connection afterwards).

    Returns
    -------
    distributed.Client

    Raises
    ------
    ConnectionError
        (an ``OSError``) Nothing listens there, nothing answers within ``timeout`` seconds,
        or what answers is not a Dask scheduler.
    """
    import asyncio

    from distributed.comm import connect

    timeout = check_float_range("timeout", timeout, low=0.0, low_inclusive=False)

    async def handshake() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        await comm.close()

    try:
        asyncio.run(handshake())
    except TimeoutError:
        raise ConnectionError(
            f"no Dask scheduler answered at {address!r} within {timeout:g} s (a server "
            "that accepts connections but never replies, or a slow network); check the "
            "address, or raise the timeout"
        ) from None
    except OSError as exc:
        raise ConnectionError(f"cannot connect to a Dask scheduler at {address!r}: {exc}") from None
    except (Exception, MemoryError) as exc:  # a peer that is not Dask: any decoding error
        raise ConnectionError(
            f"the server at {address!r} is not a Dask scheduler (its reply to the Dask "
            f"handshake could not be read: {type(exc).__name__}: {str(exc)[:120]})"
        ) from None
    return distributed.Client(address, timeout=timeout)


def _model_spec(encoder: Any) -> Any:
    """A path that exists here is sent as an absolute path (workers share the file system)."""
    if isinstance(encoder, (str, os.PathLike)):
        p = Path(encoder).expanduser()
        return str(p.resolve()) if p.exists() else os.fspath(encoder)
    return encoder


def encode_file_distributed(
    encoder: Any,
    input_path: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    client: Any,
    *,
    shard_size: int = 100_000,
    partition_lines: int | None = None,
    batch_size: int | None = None,
    whitening: Any = None,
    resume: bool = True,
    overwrite: bool = False,
    start_line: int = 0,
    end_line: int | None = None,
    encoding: str = "utf-8",
    statistics: bool = False,
    retries: int = 2,
    threads_per_task: int = 1,
    encoder_options: dict[str, Any] | None = None,
    show_progress_bar: bool | None = None,
    on_partition_done: Callable[[PartitionRecord], None] | None = None,
) -> DistributedEncodeResult:
    """Encode lines ``[start_line, end_line)`` of a text file on a Dask cluster into ``.npy`` shards.

    The output (shards, ``manifest.json``) and the resume rules are those of
    :func:`sentvec.encode_files.encode_file`; the module docstring says how work is spread.

    Parameters
    ----------
    encoder : str, path-like or encoder object
        Model path or alias, loaded on each worker by :func:`sentvec.load_encoder` (preferred:
        nothing large goes through the scheduler), or an encoder object (pickled once).
    input_path, output_dir : path
        Text file (one sentence per line) and output directory, at the same paths on the client
        and every worker (shared file system).
    client : distributed.Client
    shard_size, batch_size, whitening, resume, overwrite, start_line, end_line, encoding
        As :func:`~sentvec.encode_files.encode_file`; a whitening is loaded on the client.
    partition_lines : int, optional
        Lines per task, a multiple of ``shard_size`` (default: ``shard_size``, one shard a task).
    statistics : bool
        Also return the float64 :class:`~sentvec.whitening.WhiteningStatistics` of all vectors
        of the range (as written: whitened if ``whitening`` is given), merged on the client.
    retries : int
        Dask ``retries`` of a task that raises (a worker's death counts against the scheduler's
        ``distributed.scheduler.allowed-failures`` instead).
    threads_per_task : int
        Threads one task uses (torch and Sent2Vec); 1 suits one-thread workers.
    encoder_options : dict, optional
        Keyword arguments for ``load_encoder`` on the workers (``device``, ``pooling``, ...).
    show_progress_bar : bool or None
        tqdm bar over lines (lines/s); None shows it when stderr is a terminal.
    on_partition_done : callable, optional
        Called on the client with each finished :class:`PartitionRecord`.

    Returns
    -------
    DistributedEncodeResult

    Raises
    ------
    FileNotFoundError, IsADirectoryError, ValueError
        As ``encode_file``, and for ``partition_lines`` not a multiple of ``shard_size``.
        Errors of loading the model on a worker are raised as they happened there.
    PartitionError
        Partitions failing after the retries, by line range (calling again resumes).

    Warns
    -----
    UserWarning
        As ``encode_file``, and one per category of the warnings the encoder gave on workers.
    """
    t0, started = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
    path, shard_size, batch_size, start_line, end_line = check_encode_arguments(
        input_path, shard_size, batch_size, start_line, end_line
    )
    job = _Job(
        client=client,
        encoder=_model_spec(encoder),
        path=path,
        out=Path(output_dir).resolve(),
        started=started,
        t0=t0,
        shard_size=shard_size,
        partition_lines=_check_partition_lines(partition_lines, shard_size),
        batch_size=batch_size,
        resume=resume,
        overwrite=overwrite,
        start_line=start_line,
        end_line=end_line,
        encoding=encoding,
        statistics=statistics,
        retries=check_positive_int("retries", retries, minimum=0),
        threads_per_task=check_positive_int("threads_per_task", threads_per_task),
        encoder_options=encoder_options,
        show_progress_bar=show_progress_bar,
        on_partition_done=on_partition_done,
    )
    return _start(job, whitening)


def _check_partition_lines(partition_lines: int | None, shard_size: int) -> int:
    """``partition_lines`` checked: a positive multiple of ``shard_size`` (its default)."""
    if partition_lines is None:
        return shard_size
    partition_lines = check_positive_int("partition_lines", partition_lines)
    if partition_lines % shard_size:
        raise ValueError(
            f"partition_lines={partition_lines} must be a multiple of "
            f"shard_size={shard_size} (a partition is a whole number of shards)"
        )
    return partition_lines


def _start(job: _Job, whitening: Any) -> DistributedEncodeResult:
    """Load ``whitening`` on the client, ship it and the encoder to every worker, run ``job``."""
    import sentvec

    job = dataclasses.replace(job, white=sentvec.load_whitening(whitening))
    job.out.mkdir(parents=True, exist_ok=True)
    plugin = EncoderPlugin(
        job.name,
        job.encoder,
        job.white,
        threads_per_task=job.threads_per_task,
        encoder_options=job.encoder_options,
        statistics=job.statistics,
    )
    job.client.register_plugin(plugin, name=job.name)  # loads the model on every worker
    try:
        return _run(job)
    finally:
        with contextlib.suppress(Exception):  # a closed client must not hide the real error
            job.client.unregister_worker_plugin(job.name)


@dataclass(frozen=True)
class _Job:
    """One call of :func:`encode_file_distributed`, its arguments checked, on the client."""

    client: Any
    encoder: Any  # path, alias or object, as shipped to the workers
    path: Path
    out: Path
    started: str  # ISO time, for the manifest's run record
    t0: float  # perf_counter at the call
    shard_size: int
    partition_lines: int
    batch_size: int | None
    resume: bool
    overwrite: bool
    start_line: int
    end_line: int | None
    encoding: str
    statistics: bool
    retries: int
    threads_per_task: int
    encoder_options: dict[str, Any] | None
    show_progress_bar: bool | None
    on_partition_done: Callable[[PartitionRecord], None] | None
    white: Any = None  # fitted post-processor or None
    # of the EncoderPlugin registered for this call
    name: str = field(default_factory=lambda: f"sentvec-encoder-{uuid.uuid4().hex[:12]}")


def _run(job: _Job) -> DistributedEncodeResult:
    client, path, out = job.client, job.path, job.out
    old = read_manifest(out) if (out / MANIFEST_NAME).is_file() else None
    new = _plan(job)
    done = reusable_shards(old, new, out, job.overwrite, job.resume)
    runs = old.runs if old is not None and old.config_key() == new.config_key() else ()
    state = ManifestWriter(out, new, done, runs, started=job.started, t0=job.t0)
    new = state.write()  # the directory now describes this configuration
    if old is not None:
        remove_shards(out, old, keep={r.file for r in done.values()})
    recorded = {r.file for r in done.values()}
    for f in out.glob("shard-*.npy"):  # unrecorded files: a task reuses only this run's files
        if f.name not in recorded:
            f.unlink(missing_ok=True)
    futures = _submit(job, new, done)
    records, failed, caught, stat_parts = _collect(job, futures, state, done)
    new = state.write()
    _summarise(caught, path)
    if failed:
        failed.sort(key=lambda x: x[0])
        lines = "; ".join(f"lines [{a}, {b}): {type(e).__name__}: {e}" for a, b, e in failed)
        raise PartitionError(
            f"{len(failed)} partition(s) of {str(path)!r} failed after {job.retries} retries: "
            f"{lines}. The {len(state.completed)} finished shards of {new.n_shards} are "
            f"recorded in {str(out)!r}; run again to resume",
            [(a, b) for a, b, _ in failed],
        ) from failed[0][2]
    warn_zero_vectors(new, path, stacklevel=4)
    merged = None
    if job.statistics:
        from sentvec.whitening import WhiteningStatistics

        assert new.dim is not None  # set from the probe above
        merged = WhiteningStatistics.empty(new.dim)
        # a partition's statistics cover its reused shards (key 1) and its new shards (key 0);
        # merging in line-start order gives one reproducible float64 result
        for key in sorted(stat_parts):
            merged = merged.merge(stat_parts[key])
    return DistributedEncodeResult(
        manifest=new,
        statistics=merged,
        partitions=tuple(sorted(records, key=lambda r: r.start_line)),
        dashboard_link=getattr(client, "dashboard_link", None),
    )


def _plan(job: _Job) -> EncodeManifest:
    """Count the lines, plan the shards and encode the resume probe on a worker (meanwhile)."""
    path, start_line, end_line = job.path, job.start_line, job.end_line
    stat = path.stat()
    probe_future = job.client.submit(
        _probe_task, job.name, job.batch_size, pure=False, key=f"sentvec-probe-{job.name}"
    )
    n_seen, offsets = scan_lines(path, start=start_line, step=job.shard_size, stop_line=end_line)
    end = n_seen if end_line is None else end_line
    if start_line not in offsets or end not in offsets:
        raise ValueError(
            f"line range [{start_line}, {end_line}) is outside {str(path)!r}, "
            f"which has {n_seen} lines"
        )
    description, probe = probe_future.result()
    return EncodeManifest(
        input_path=str(path),
        input_size=stat.st_size,
        input_mtime_ns=stat.st_mtime_ns,
        start_line=start_line,
        end_line=end,
        shard_size=job.shard_size,
        encoder=description,
        whitening=describe_whitening(job.white),
        dim=int(probe.shape[1]),
        boundaries=plan_shards(start_line, end, job.shard_size, offsets),
        requested_end_line=end_line,
        probe=tuple(tuple(map(float, v)) for v in probe),
    )


def _submit(
    job: _Job, new: EncodeManifest, done: dict[int, ShardRecord]
) -> dict[Any, tuple[int, int]]:
    """Submit one task per partition with shards to encode, and one per partition with reused
    shards whose statistics are wanted; return each future's line range."""
    client, name = job.client, job.name
    per_part = job.partition_lines // job.shard_size
    groups = [range(k, min(k + per_part, new.n_shards)) for k in range(0, new.n_shards, per_part)]
    bounds = new.boundaries
    futures: dict[Any, tuple[int, int]] = {}
    for g in groups:
        a, b = bounds[g.start][0], bounds[g.stop][0]
        todo = [
            (i, bounds[i][0], bounds[i + 1][0], bounds[i][1], bounds[i + 1][1])
            for i in g
            if i not in done
        ]
        if todo:
            f = client.submit(
                _encode_partition,
                name,
                job.path,
                job.out,
                todo,
                job.batch_size,
                job.encoding,
                new.dim,
                job.statistics,
                retries=job.retries,
                pure=False,
                key=f"sentvec-encode-{a}-{b}-{name[-12:]}",
            )
            futures[f] = (a, b)
        if job.statistics and len(todo) < len(g):
            reused = [done[i].file for i in g if i in done]
            sf = client.submit(
                _statistics_task,
                job.out,
                reused,
                retries=job.retries,
                pure=False,
                key=f"sentvec-statistics-{a}-{b}-{name[-12:]}",
            )
            futures[sf] = (a, b)
    return futures


def _collect(
    job: _Job,
    futures: dict[Any, tuple[int, int]],
    state: ManifestWriter,
    done: dict[int, ShardRecord],
) -> tuple[
    list[PartitionRecord],
    list[tuple[int, int, BaseException]],
    list[tuple[type, str]],
    dict[tuple[int, int], Any],
]:
    """Gather the partitions as they finish, rewriting the manifest now and then.

    Returns the partition records, the failed partitions (line range, error), the warnings the
    encoder gave on the workers, and the statistics by (partition's first line, 1: its reused
    shards / 0: its new shards).
    """
    from sentvec._progress import progress_bar

    records: list[PartitionRecord] = []
    failed: list[tuple[int, int, BaseException]] = []
    caught: list[tuple[type, str]] = []
    stat_parts: dict[tuple[int, int], Any] = {}
    last_write, wait = time.monotonic(), _MANIFEST_EVERY_S
    with progress_bar(
        total=state.manifest.n_lines,
        initial=sum(r.end_line - r.start_line for r in done.values()),
        unit="line",
        unit_scale=True,
        show=job.show_progress_bar,
        desc=f"encode {job.path.name} on {len(job.client.scheduler_info()['workers'])} workers",
    ) as bar:
        for f in distributed.as_completed(list(futures)):
            a, b = futures[f]
            try:
                # a result lost with its worker before it was fetched (status "lost") is
                # recomputed by the scheduler: result() waits for it
                res = f.result()
            except Exception as exc:  # the task's error after its retries, KilledWorker
                failed.append((a, b, exc))  # (allowed-failures), cancelled
                continue
            finally:
                f.release()
            if not isinstance(res, _PartitionOutput):  # statistics of reused shards
                stat_parts[(a, 1)] = res
                continue
            for rec in res.records:
                state.completed[rec.index] = rec
            state.n_encoded += len(res.records)
            if res.statistics is not None:
                stat_parts[(a, 0)] = res.statistics
            caught.extend(res.warnings)
            prec = PartitionRecord(
                a,
                b,
                res.worker,
                res.pid,
                len(res.records) - res.n_reused,
                res.n_reused,
                res.seconds,
            )
            records.append(prec)
            bar.update(sum(r.end_line - r.start_line for r in res.records))
            if time.monotonic() - last_write >= wait:
                t_w = time.monotonic()
                state.write()
                last_write = time.monotonic()
                wait = max(_MANIFEST_EVERY_S, _MANIFEST_IO_FACTOR * (last_write - t_w))
            if job.on_partition_done is not None:
                job.on_partition_done(prec)
    return records, failed, caught, stat_parts


def _summarise(caught: list[tuple[type, str]], path: Path) -> None:
    """One warning per category for what the encoder said on the workers (first message)."""
    by_cat: dict[type, list[str]] = {}
    for cat, msg in caught:
        by_cat.setdefault(cat, []).append(msg)
    for cat, msgs in by_cat.items():
        more = f" (and {len(msgs) - 1} similar warnings)" if len(msgs) > 1 else ""
        warnings.warn(
            f"while encoding {path.name}, the encoder warned: {msgs[0]}{more}", cat, stacklevel=5
        )
