"""The worker side of :func:`sentvec.cluster.encode_file_distributed`: the plugin that holds one
encoder per Dask worker process (:class:`EncoderPlugin`), the resume probe, and the tasks that
encode a partition of shards or sum the whitening statistics of reused shards."""

from __future__ import annotations

import inspect
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from sentvec._extras import require_extra
from sentvec._io import load_npy
from sentvec.encode_files import PROBE_SENTENCES, count_nonfinite, encode_lines, encode_shard
from sentvec.encode_manifest import ShardRecord, jsonable
from sentvec.line_ranges import read_line_range

require_extra("dask", "sentvec.cluster (Dask distributed)")

import distributed  # noqa: E402 - after the check that names the extra to install
from distributed import WorkerPlugin  # noqa: E402


@dataclass(frozen=True)
class _PartitionOutput:
    """What a partition task sends back to the client (small: no vectors)."""

    records: list[ShardRecord]
    statistics: Any  # WhiteningStatistics of the partition's vectors, or None
    n_reused: int
    warnings: list[tuple[type, str]]
    worker: str
    pid: int
    seconds: float


class _ThreadLimited:
    """An encoder whose ``encode`` defaults to ``num_threads=n`` (Sent2Vec's kernel threads).

    Only ``encode`` is asked of it; the encoder's description and width are read from the
    encoder as loaded (``EncoderPlugin.base``).
    """

    def __init__(self, encoder: Any, n: int) -> None:
        self._encoder, self._n = encoder, n

    def encode(self, sentences: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("num_threads", self._n)
        return self._encoder.encode(sentences, **kwargs)


class EncoderPlugin(WorkerPlugin):
    """Holds one encoder (and optional fitted whitening) per worker process.

    Parameters
    ----------
    name : str
        Plugin name; tasks find the plugin as ``get_worker().plugins[name]``.
    encoder : str, path-like or encoder object
        A path or alias is loaded on the worker with :func:`sentvec.load_encoder` (with
        ``encoder_options``); an object is used as it arrives (pickled once with the plugin).
    whitening : fitted Whitening or None
    threads_per_task : int
        Threads one task may use: ``torch.set_num_threads`` when torch is loaded, and
        ``num_threads`` of encoders whose ``encode`` accepts it.
    encoder_options : dict, optional
    statistics : bool
        Import the statistics code at set-up (the tasks will compute WhiteningStatistics).
    """

    def __init__(
        self,
        name: str,
        encoder: Any,
        whitening: Any = None,
        *,
        threads_per_task: int = 1,
        encoder_options: dict[str, Any] | None = None,
        statistics: bool = False,
    ) -> None:
        self.name = name
        self.statistics = statistics
        self.spec = encoder
        self.whitening = whitening
        self.threads_per_task = threads_per_task
        self.encoder_options = dict(encoder_options or {})
        self.base: Any = None  # the encoder as loaded
        self.encoder: Any = None  # the same, thread-limited

    def setup(self, worker: Any) -> None:
        if isinstance(self.spec, (str, os.PathLike)):
            import sentvec

            if (
                self.encoder_options.get("backend") == "onnx"
            ):  # its session fixes its threads at load
                import torch

                torch.set_num_threads(self.threads_per_task)
            self.base = sentvec.load_encoder(self.spec, **self.encoder_options)
        else:
            self.base = self.spec
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(self.threads_per_task)
        enc = self.base
        try:
            takes_threads = "num_threads" in inspect.signature(enc.encode).parameters
        except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
            takes_threads = False
        self.encoder = _ThreadLimited(enc, self.threads_per_task) if takes_threads else enc
        # first calls compile / load kernels (numba, torch) and import the statistics code:
        # done here, once per worker, so that partition times measure encoding only
        self.encoder.encode(list(PROBE_SENTENCES), show_progress_bar=False)
        if self.statistics:
            import sentvec.whitening  # noqa: F401  (scikit-learn: seconds on a cold worker)

    def teardown(self, worker: Any) -> None:
        self.base = self.encoder = None

    def __getstate__(self) -> dict[str, Any]:  # what travels: the spec, never a loaded model
        state = dict(self.__dict__)
        if isinstance(self.spec, (str, os.PathLike)):
            state["base"] = state["encoder"] = None
        return state


def _plugin(name: str) -> EncoderPlugin:
    # registered under this name by the client (register_plugin)
    return cast(EncoderPlugin, distributed.get_worker().plugins[name])


def _probe_task(name: str, batch_size: int | None) -> tuple[dict[str, Any], np.ndarray]:
    """The encoder's description and its (whitened) vectors of PROBE_SENTENCES, on a worker."""
    p = _plugin(name)
    if p.whitening is not None:  # a whitening of another width would fail only after a shard
        from sentvec.encoders.base import check_whitening_fits

        check_whitening_fits(p.base, p.whitening)
    from sentvec.encoders.base import describe_encoder

    probe = encode_lines(p.encoder, p.whitening, list(PROBE_SENTENCES), batch_size)
    return jsonable(describe_encoder(p.base)), probe


def _written_shard(
    out: Path, path: Path, i: int, a: int, b: int, ba: int, bb: int, dim: int, encoding: str
) -> ShardRecord | None:
    """The record of shard ``i`` if an earlier attempt of this run already wrote it, else None."""
    from sentvec.encode_files import _shard_name

    f = out / _shard_name(a, b)
    if not f.is_file():
        return None
    try:
        arr = load_npy(f, mmap=True)
    except ValueError:
        return None
    if arr.dtype != np.float32 or arr.shape != (b - a, dim) or count_nonfinite(arr):
        return None
    lines, digest = read_line_range(path, ba, bb, a, encoding=encoding)
    return ShardRecord(
        index=i,
        file=f.name,
        start_line=a,
        end_line=b,
        start_byte=ba,
        end_byte=bb,
        sha256=digest,
        n_empty=sum(not s.strip() for s in lines),
        n_zero=int((~np.asarray(arr).any(axis=1)).sum()),
        seconds=0.0,
    )


def _shard_statistics(out: Path, name: str) -> Any:
    from sentvec.whitening import WhiteningStatistics

    return WhiteningStatistics.from_array(load_npy(out / name, mmap=True))


def _encode_partition(
    name: str,
    path: Path,
    out: Path,
    shards: list[tuple[int, int, int, int, int]],
    batch_size: int | None,
    encoding: str,
    dim: int,
    statistics: bool,
) -> _PartitionOutput:
    """Encode (or find already written) the shards ``(i, a, b, ba, bb)`` of one partition."""
    t = time.perf_counter()
    p = _plugin(name)
    caught: list[warnings.WarningMessage] = []
    records, stats, n_reused = [], None, 0
    for i, a, b, ba, bb in shards:
        rec = _written_shard(out, path, i, a, b, ba, bb, dim, encoding)
        if rec is None:
            rec = encode_shard(
                p.encoder,
                p.whitening,
                path,
                out,
                i,
                a,
                b,
                ba,
                bb,
                batch_size,
                encoding,
                dim,
                None,
                caught,
            )
        else:
            n_reused += 1
        records.append(rec)
        if statistics:
            s = _shard_statistics(out, rec.file)
            stats = s if stats is None else stats.merge(s)
    return _PartitionOutput(
        records,
        stats,
        n_reused,
        [(w.category, str(w.message)) for w in caught],
        distributed.get_worker().address,
        os.getpid(),
        round(time.perf_counter() - t, 3),
    )


def _statistics_task(out: Path, names: list[str]) -> Any:
    """Merged statistics of already written shard files (in the given order)."""
    stats = None
    for n in names:
        s = _shard_statistics(out, n)
        stats = s if stats is None else stats.merge(s)
    return stats
