"""The manifest of an encoded file (``manifest.json``): what each shard and each run recorded,
its strict reader, the description of a post-processor it keys on, and :class:`ManifestWriter`,
which rewrites it atomically as shards are written. Both :func:`sentvec.encode_files.encode_file`
and :func:`sentvec.cluster.encode_file_distributed` write it."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_write_json
from sentvec._readers import read_json_object

MANIFEST_NAME = "manifest.json"
_FORMAT = "sentvec-encoded-file"
_VERSION = 1


@dataclass(frozen=True)
class ShardRecord:
    """One completed shard: lines ``[start_line, end_line)`` of the input (0-based).

    ``sha256`` is the digest of the shard's raw bytes ``[start_byte, end_byte)``; ``n_empty``
    counts whitespace-only lines, ``n_zero`` all-zero output vectors.
    """

    index: int
    file: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    sha256: str
    n_empty: int
    n_zero: int
    seconds: float


@dataclass(frozen=True)
class RunRecord:
    """One invocation of :func:`encode_file` on this output directory."""

    started: str
    n_shards_encoded: int
    n_shards_reused: int
    wall_seconds: float


@dataclass(frozen=True)
class EncodeManifest:
    """Contents of ``manifest.json`` (see the module docstring).

    ``boundaries`` holds the planned shard edges as ``(line, byte)`` pairs (``n_shards + 1`` of
    them); ``requested_end_line`` the ``end_line`` argument (None: to the end of the file);
    ``probe`` the (whitened) vectors of :data:`PROBE_SENTENCES`, re-encoded on resume to detect
    an encoder whose weights changed under an unchanged description; ``shards`` the completed
    shards in order; ``runs`` the history of invocations.
    """

    input_path: str
    input_size: int
    input_mtime_ns: int
    start_line: int
    end_line: int
    shard_size: int
    encoder: dict[str, Any]
    whitening: dict[str, Any] | None
    dim: int | None
    boundaries: tuple[tuple[int, int], ...]
    requested_end_line: int | None = None
    probe: tuple[tuple[float, ...], ...] = ()
    shards: tuple[ShardRecord, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    format: str = _FORMAT
    version: int = _VERSION

    @property
    def n_shards(self) -> int:
        """Number of planned shards."""
        return len(self.boundaries) - 1

    @property
    def complete(self) -> bool:
        """True when every planned shard is recorded."""
        return len(self.shards) == self.n_shards

    @property
    def n_lines(self) -> int:
        """Lines (= vectors) in the planned range."""
        return self.end_line - self.start_line

    @property
    def n_empty(self) -> int:
        return sum(s.n_empty for s in self.shards)

    @property
    def n_zero(self) -> int:
        return sum(s.n_zero for s in self.shards)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["boundaries"] = [list(b) for b in self.boundaries]
        d.update(
            n_shards=self.n_shards,
            complete=self.complete,
            n_lines=self.n_lines,
            n_empty=self.n_empty,
            n_zero=self.n_zero,
        )
        return d

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EncodeManifest:
        kw = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        kw["boundaries"] = tuple((int(a), int(b)) for a, b in kw["boundaries"])
        kw["probe"] = tuple(tuple(map(float, v)) for v in kw.get("probe", ()))
        kw["shards"] = tuple(ShardRecord(**s) for s in kw.get("shards", ()))
        kw["runs"] = tuple(RunRecord(**r) for r in kw.get("runs", ()))
        return cls(**kw)

    def config_key(self) -> dict[str, Any]:
        """The fields two runs must share to write into one directory."""
        return {
            "input_path": self.input_path,
            "start_line": self.start_line,
            "end_line": self.requested_end_line,
            "shard_size": self.shard_size,
            "encoder": self.encoder,
            "whitening": self.whitening,
        }


def read_manifest(output_dir: str | os.PathLike[str]) -> EncodeManifest:
    """Read ``<output_dir>/manifest.json``; FileNotFoundError / ValueError on missing or foreign files."""
    p = Path(output_dir) / MANIFEST_NAME
    if not p.is_file():
        raise FileNotFoundError(f"no encode manifest at {str(p)!r}")
    d = read_json_object(p)
    if d.get("format") != _FORMAT or d.get("version") != _VERSION:
        raise ValueError(
            f"{str(p)!r}: not a sentvec encode manifest (format {d.get('format')!r}, "
            f"version {d.get('version')!r})"
        )
    try:
        m = EncodeManifest.from_dict(d)
        _check_manifest(m)
    except (TypeError, KeyError, AttributeError, ValueError, OverflowError) as exc:
        raise ValueError(
            f"{str(p)!r}: corrupt encode manifest ({type(exc).__name__}: {exc}); "
            "re-encode with --overwrite"
        ) from None
    return m


def _check_manifest(m: EncodeManifest) -> None:
    """Types and consistency of a manifest read from disk (it is untrusted input)."""

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    for name in ("input_size", "input_mtime_ns", "start_line", "end_line", "shard_size"):
        if not is_int(v := getattr(m, name)) or v < 0:
            raise ValueError(f"{name}={v!r} is not an integer >= 0")
    if (
        not isinstance(m.input_path, str)
        or not isinstance(m.encoder, dict)
        or not (m.whitening is None or isinstance(m.whitening, dict))
    ):
        raise ValueError("input_path, encoder or whitening has the wrong type")
    if m.dim is not None and (not is_int(m.dim) or m.dim < 1):
        raise ValueError(f"dim={m.dim!r} is not an integer >= 1")
    lines = [a for a, _ in m.boundaries]
    nbytes = [b for _, b in m.boundaries]
    if (
        not lines
        or lines[0] != m.start_line
        or lines[-1] != m.end_line
        or any(b <= a for a, b in pairwise(lines))
        or any(b < a for a, b in pairwise(nbytes))
        or min(nbytes) < 0
    ):
        raise ValueError("shard boundaries are not increasing from start_line to end_line")
    for r in m.shards:
        if (
            not (is_int(r.index) and 0 <= r.index < m.n_shards)
            or not isinstance(r.file, str)
            or Path(r.file).name != r.file
            or r.file in ("", ".", "..")
        ):
            raise ValueError(f"shard record {r.index!r} has a bad index or file name")
        if (r.start_line, r.end_line) != (lines[r.index], lines[r.index + 1]) or (
            r.start_byte,
            r.end_byte,
        ) != (nbytes[r.index], nbytes[r.index + 1]):
            raise ValueError(f"shard {r.index} does not match the planned boundaries")
        if not all(is_int(v) and v >= 0 for v in (r.n_empty, r.n_zero)) or len(
            {x.index for x in m.shards}
        ) != len(m.shards):
            raise ValueError(f"shard {r.index}: bad n_empty / n_zero, or recorded twice")


def describe_whitening(w: Any) -> dict[str, Any] | None:
    """What the manifest records of a post-processor: class, config and a SHA-256 of its fitted
    ``*_`` arrays (a refitted whitening gives another digest, so its shards are not reused).

    Returns
    -------
    dict or None
        ``{"class", "config", "fitted_sha256"}``; None for ``w=None``.
    """
    if w is None:
        return None
    h = hashlib.sha256()
    for name in sorted(vars(w)):
        v = getattr(w, name)
        if name.endswith("_") and not name.startswith("_") and isinstance(v, np.ndarray):
            h.update(name.encode())
            h.update(np.ascontiguousarray(v).tobytes())
    getter = getattr(w, "config_dict", None) or getattr(w, "get_params", None)
    cfg = jsonable(getter()) if callable(getter) else {}
    return {"class": type(w).__name__, "config": cfg, "fitted_sha256": h.hexdigest()}


def jsonable(obj: Any) -> Any:
    """``obj`` round-tripped through JSON (values JSON cannot hold become their ``str``), as the
    manifest stores it, so a stored and a new description compare equal."""
    return json.loads(json.dumps(obj, default=str))


class ManifestWriter:
    """The manifest of an encoding run while its shards are written: the shards reused and
    encoded so far, and this run's record, written atomically to ``manifest.json``.

    Parameters
    ----------
    out : pathlib.Path
        The output directory.
    manifest : EncodeManifest
        This configuration's manifest (its shards are replaced on each write).
    done : mapping of int to ShardRecord
        The shards reused from a previous run, by index.
    runs : tuple of RunRecord
        The earlier runs' records (this run's is appended on each write).
    started : str
        When this run started (ISO 8601).
    t0 : float
        ``time.perf_counter()`` when this run started.
    """

    def __init__(
        self,
        out: Path,
        manifest: EncodeManifest,
        done: Mapping[int, ShardRecord],
        runs: tuple[RunRecord, ...],
        *,
        started: str,
        t0: float,
    ) -> None:
        self.out, self.manifest, self.runs = out, manifest, runs
        self.started, self.t0 = started, t0
        self.n_reused = len(done)
        #: shards recorded so far (reused and encoded), by index
        self.completed: dict[int, ShardRecord] = dict(done)
        #: shards encoded by this run
        self.n_encoded = 0

    def write(self) -> EncodeManifest:
        """Write ``manifest.json`` atomically; return the manifest written."""
        seconds = round(time.perf_counter() - self.t0, 3)
        run = RunRecord(self.started, self.n_encoded, self.n_reused, seconds)
        shards = tuple(self.completed[k] for k in sorted(self.completed))
        self.manifest = replace(self.manifest, shards=shards, runs=self.runs + (run,))
        atomic_write_json(self.out / MANIFEST_NAME, self.manifest.to_dict())
        return self.manifest
