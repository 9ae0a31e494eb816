"""A disk cache of pooled sentence vectors (per-layer or final), so a second run takes seconds.

One entry is two files named by the SHA-256 of its key: ``<digest>.npy`` (the array, no pickle)
and ``<digest>.json`` (the full key, written last: it is the commit marker). Both are written
atomically, so a reader sees either a complete entry or none. Per-layer vectors (``(n, L+1, d)``)
are stored layer-major, ``(L+1, n, d)``, and memory-mapped on reading, so a reader that uses a
few hidden states (the Table 1 block of ``sentvec eval-sts``: 3 of 14 pooled layers) reads only
those from the disk, while ``sentvec layers`` reads them all; one format for every command.
Per-layer entries also store one 16-byte id per sentence (``<digest>.rows``), so an entry serves
every subset of its sentences: the seven STS tasks of the default ``sentvec eval-sts`` serve a
later run over one of them, with any layers (:meth:`VectorCache.load_rows`).

The key holds everything that changes the vectors: model name/path, a fingerprint of the model
files' contents (:func:`content_fingerprint`: relative name, size and SHA-256 of every file; a
file's digest is remembered under ``<root>/fingerprints/`` against its device, inode, size,
modification and status-change times, so it is read once, and any write to it, which moves its
status-change time, makes it hashed again) or of the encoder's configuration, text variant,
pooling, maximum length, the SHA-256 of the sentence list, a hash of the encoding code's source
files (so an edit between two releases counts too), the versions of the libraries that compute
the vectors (numpy, torch, transformers, tokenizers), the sentvec version and the cache format
version. Any change of any component gives another digest, so stale vectors are never reused.
The key of a local transformer can be computed from its files without loading it
(:func:`description_cache_key` with
:func:`sentvec.encoders.transformer_files.describe_pretrained`). An entry that cannot be read
(truncated, wrong shape, non-finite values in the layers read, key mismatch) is ignored with a
:class:`CacheWarning` and recomputed.

Content check: the key file also records the SHA-256 of the array's bytes (``content_sha256``:
one digest per hidden state of a per-layer entry, the layer-major slab that a reader maps, or
one for a whole final-vector array), written atomically with the key. :meth:`VectorCache.load`
hashes the bytes it serves (the hidden states read) and compares, so an entry altered in place,
even with its size and modification time restored, is recomputed with one warning instead of
being served. SHA-256 (hashlib, OpenSSL's SHA extensions) hashes about 1.7 GB/s per core here,
faster than BLAKE2b (0.9 GB/s). Entries of format 2 have no checksum; format 3 changes every
key, so they are never read (recomputed once, then removed by the size limit's pruning):
their bytes cannot be verified after the fact, so stamping them would certify whatever they
now hold.

Location: ``directory`` argument, else ``$SENTVEC_CACHE``, else ``~/.cache/sentvec``. Nothing is
created until the first write.

Size: every key holds the code and library versions, so each upgrade leaves the old entries
unused. After each write the least recently used entries (a hit refreshes an entry's time) are
removed until the entries take at most ``max_bytes`` (default 10 GiB, ``$SENTVEC_CACHE_MAX_GB``);
the entries written by the same cache object (one run) are always kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._environment import CACHE, CACHE_MAX_GB, default_cache_dir
from sentvec._io import atomic_save_npy, atomic_write_bytes, atomic_write_json, load_npy
from sentvec.cache_keys import (
    CACHE_FORMAT_VERSION,
    CacheKey,
    code_fingerprint,
    content_fingerprint,
    description_cache_key,
    encoder_cache_key,
    file_sha256,
    fingerprint_path,
    library_versions,
    modules_fingerprint,
    sentences_sha256,
)
from sentvec.encoders.base import Encoder, LayeredEncoder
from sentvec.exceptions import CacheWarning

#: The public names; those of the keys (:mod:`sentvec.cache_keys`) stay importable from here.
__all__ = [
    "CACHE_ENV",
    "CACHE_MAX_ENV",
    "DEFAULT_CACHE_MAX_BYTES",
    "VECTORS_SUBDIR",
    "ROWS_SUFFIX",
    "FINGERPRINTS_SUBDIR",
    "CHECKSUM_FIELD",
    "ROWS_CHECKSUM_FIELD",
    "CacheWarning",
    "default_cache_dir",
    "sentence_row_ids",
    "VectorCache",
    "pooled_layer_vectors",
    "load_or_encode_layer_vectors",
    "save_layer_vectors",
    "cached_layer_vectors",
    "CACHE_FORMAT_VERSION",
    "CacheKey",
    "code_fingerprint",
    "content_fingerprint",
    "description_cache_key",
    "encoder_cache_key",
    "file_sha256",
    "fingerprint_path",
    "library_versions",
    "modules_fingerprint",
    "sentences_sha256",
]

#: Environment variable naming the cache directory.
CACHE_ENV = CACHE.name
#: Environment variable: the most GiB the vector entries may take (see :class:`VectorCache`).
CACHE_MAX_ENV = CACHE_MAX_GB.name
#: The default of :data:`CACHE_MAX_ENV`, in bytes.
DEFAULT_CACHE_MAX_BYTES = 10 * 2**30
#: Sub-directory of the cache root holding sentence-vector entries.
VECTORS_SUBDIR = "vectors"
#: Suffix of the file of an entry's sentence ids (:func:`sentence_row_ids`), beside its ``.npy``.
ROWS_SUFFIX = ".rows"
#: Sub-directory of the cache root remembering the SHA-256 of model files.
FINGERPRINTS_SUBDIR = "fingerprints"
#: Bytes of a sentence's row id in an entry's ``.rows`` file (:func:`sentence_row_ids`).
_ROW_ID_BYTES = 16
#: Field of an entry's key file holding the SHA-256 digests of its array's bytes.
CHECKSUM_FIELD = "content_sha256"
#: Field of a per-layer entry's key file holding the SHA-256 of its ``.rows`` file.
ROWS_CHECKSUM_FIELD = "rows_sha256"


class _LayerOutOfRange(ValueError):
    """A load asked for a hidden state the entry does not have."""


def _bytes_sha256(block: np.ndarray) -> str:
    """SHA-256 (hex) of a C-contiguous array's bytes (a memory map is hashed in place)."""
    return hashlib.sha256(np.ascontiguousarray(block).data.cast("B")).hexdigest()


def _entry_checksums(stored: np.ndarray, *, per_state: bool) -> list[str]:
    """The SHA-256 digests an entry's key file records for the array as stored on disk.

    Parameters
    ----------
    stored : ndarray, float32
        The array in its file layout: ``(L + 1, n, d)`` for a per-layer entry.
    per_state : bool
        One digest per hidden state (``stored[i]``, so a reader checks only what it reads),
        else one for the whole array.

    Returns
    -------
    list of str
        Hex digests.
    """
    if per_state:
        return [_bytes_sha256(stored[i]) for i in range(stored.shape[0])]
    return [_bytes_sha256(stored)]


def _max_bytes_from_env() -> int:
    text = (CACHE_MAX_GB.value() or "").strip()
    if not text:
        return DEFAULT_CACHE_MAX_BYTES
    try:
        gib = float(text)
    except ValueError:
        gib = -1.0
    if not gib >= 0 or gib == float("inf"):
        raise ValueError(f"${CACHE_MAX_ENV} must be a number of GiB >= 0, got {text!r}")
    return int(gib * 2**30)


def sentence_row_ids(sentences: Iterable[str]) -> np.ndarray:
    """Return one 16-byte id per sentence: the BLAKE2b-128 digest of its UTF-8 bytes.

    A per-layer entry stores these ids beside its array (``<digest>.rows``), so a later request
    for any subset of its sentences, in any order, is served from its rows
    (:meth:`VectorCache.load_rows`).

    Returns
    -------
    ndarray of shape (n, 16), uint8
    """
    ids = [
        hashlib.blake2b(s.encode("utf-8"), digest_size=_ROW_ID_BYTES).digest() for s in sentences
    ]
    return np.frombuffer(b"".join(ids), dtype=np.uint8).reshape(len(ids), _ROW_ID_BYTES)


def _row_index(stored: np.ndarray, wanted: np.ndarray) -> np.ndarray | None:
    """Row of each ``wanted`` id among ``stored`` ids (both ``(n, 16)`` uint8 arrays), or None
    when one is missing."""
    if len(wanted) == 0:
        return None
    step = _ROW_ID_BYTES
    raw = stored.tobytes()
    first: dict[bytes, int] = {}
    for i in range(len(stored)):
        first.setdefault(raw[i * step : (i + 1) * step], i)
    want = wanted.tobytes()
    index = [first.get(want[i * step : (i + 1) * step], -1) for i in range(len(wanted))]
    if min(index) < 0:
        return None
    return np.asarray(index, dtype=np.intp)


class VectorCache:
    """Disk cache of sentence-vector arrays keyed by :class:`CacheKey`.

    Parameters
    ----------
    directory : path-like, optional
        Cache root (default :func:`default_cache_dir`). Entries go to ``<root>/vectors/``.
    enabled : bool
        ``False`` makes :meth:`load` always miss and :meth:`save` a no-op (``--no-cache``).
    max_bytes : int, optional
        After each write, the least recently used entries are removed until all entries take
        at most this many bytes (:meth:`prune`); 0 keeps only the entries this object wrote.
        Default: ``$SENTVEC_CACHE_MAX_GB`` GiB if set, else :data:`DEFAULT_CACHE_MAX_BYTES`
        (10 GiB).

    Raises
    ------
    ValueError
        If ``max_bytes`` is negative, or ``$SENTVEC_CACHE_MAX_GB`` is not a number >= 0.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        enabled: bool = True,
        max_bytes: int | None = None,
    ) -> None:
        root = Path(directory).expanduser() if directory is not None else default_cache_dir()
        if max_bytes is None:
            max_bytes = _max_bytes_from_env()
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self.directory = root / VECTORS_SUBDIR
        #: Where model-file digests are remembered (:func:`file_sha256`).
        self.fingerprint_dir = root / FINGERPRINTS_SUBDIR
        self.enabled = bool(enabled)
        self._executor: Any = None
        self._pending: list[Any] = []
        self._written: set[Path] = set()  # key files this cache wrote: never pruned by it
        # key files found unusable: a miss without a second read or warning until rewritten
        self._rejected: set[Path] = set()

    def paths(self, key: CacheKey) -> tuple[Path, Path]:
        """Return ``(array_path, key_path)`` of the entry for ``key``."""
        d = key.digest()
        return self.directory / f"{d}.npy", self.directory / f"{d}.json"

    def load(self, key: CacheKey, *, layers: Iterable[int] | None = None) -> np.ndarray | None:
        """Return the cached array for ``key``, or ``None`` on a miss.

        Per-layer entries (``key.kind == "layers"``) come back as a read-only view of shape
        ``(n, L + 1, d)`` over the memory-mapped layer-major file: only the hidden states that
        are used are read from the disk.

        Parameters
        ----------
        key : CacheKey
        layers : iterable of int, optional
            For a per-layer entry, the hidden-state indices (negatives from the end) the caller
            will read; only these are hashed and checked for non-finite values (default: all).

        A present but unusable entry (unreadable JSON or ``.npy``, a stored key different from
        ``key``, a row count other than ``key.n_sentences``, a dtype other than float32, bytes
        of the checked part that do not match the SHA-256 recorded with the key, non-finite
        values in the checked part, or a layer index out of range) emits one
        :class:`CacheWarning` naming the file and the reason, and counts as a miss; further
        loads of it by this object are misses without a second warning until it is rewritten.
        """
        if not self.enabled:
            return None
        arr_path, key_path = self.paths(key)
        if key_path in self._rejected or not key_path.is_file():
            return None
        try:
            stored = json.loads(key_path.read_text(encoding="utf-8"))
            sums = stored.pop(CHECKSUM_FIELD, None) if isinstance(stored, dict) else None
            if isinstance(stored, dict):
                stored.pop(ROWS_CHECKSUM_FIELD, None)  # load_rows checks the sentence ids
            if stored != key.to_dict():
                raise ValueError("stored key differs from the requested key")
            stack = key.kind == "layers"
            arr = load_npy(arr_path, mmap="r" if stack else False)
            if arr.dtype != np.float32:
                raise ValueError(f"dtype {arr.dtype}, expected float32")
            rows = arr.shape[1] if stack and arr.ndim == 3 else arr.shape[0]
            if arr.ndim < 2 or (stack and arr.ndim != 3) or rows != key.n_sentences:
                raise ValueError(f"shape {arr.shape}, expected {key.n_sentences} rows")
            n_sums = arr.shape[0] if stack else 1
            if not (
                isinstance(sums, list)
                and len(sums) == n_sums
                and all(isinstance(x, str) for x in sums)
            ):
                raise ValueError(f"the key file has no valid {CHECKSUM_FIELD!r} list")
            if stack:
                n_states = arr.shape[0]
                checked = range(n_states) if layers is None else list(layers)
                for i in checked:
                    if not -n_states <= i < n_states:
                        raise _LayerOutOfRange(f"no hidden state {i} among {n_states}")
                for i in sorted({i % n_states for i in checked}):
                    if _bytes_sha256(arr[i]) != sums[i]:
                        raise ValueError(
                            f"hidden state {i} does not match its SHA-256 (damaged on disk)"
                        )
                    if not np.isfinite(arr[i]).all():
                        raise ValueError(f"hidden state {i} holds non-finite values")
                arr = arr.transpose(1, 0, 2)  # (n, L + 1, d), a view
            else:
                if _bytes_sha256(arr) != sums[0]:
                    raise ValueError("the array does not match its SHA-256 (damaged on disk)")
                if not np.isfinite(arr).all():
                    raise ValueError("array holds non-finite values")
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            if not isinstance(exc, _LayerOutOfRange):  # the request's fault, not the entry's
                self._rejected.add(key_path)
            warnings.warn(
                f"ignoring unusable cache entry {str(key_path.with_suffix(''))!r}: "
                f"{exc}; recomputing",
                CacheWarning,
                stacklevel=2,
            )
            return None
        try:  # least recently used first when pruning: a hit makes the entry recent
            os.utime(key_path)
        except OSError:
            pass  # a read-only cache still serves hits
        return arr

    def load_rows(
        self,
        key: CacheKey,
        sentences: Sequence[str],
        *,
        layers: Iterable[int] | None = None,
    ) -> np.ndarray | None:
        """Return the vectors of ``sentences`` under ``key``: its own entry, or the rows of an
        entry computed the same way for a superset of the sentences; ``None`` when neither is
        cached.

        An entry stored with its sentences (:meth:`save` with ``sentences=``) serves every
        subset of them in any order: a run over seven STS tasks serves a later run over one of
        them. Candidates are entries whose key differs from ``key`` only in the sentences
        (:meth:`CacheKey.computation_digest`); their sentence ids are checked against the
        SHA-256 recorded in the key file (damaged ids: one :class:`CacheWarning`, not a
        candidate), and the chosen entry is read through :meth:`load`, with all its checks.

        Parameters
        ----------
        key : CacheKey
            Built from ``sentences`` (same order).
        sentences : sequence of str
        layers : iterable of int, optional
            As :meth:`load`.

        Returns
        -------
        ndarray of shape (len(sentences), ...), float32, or None
            A read-only memory-mapped view for an exact hit; a new array for a subset.
        """
        exact = self.load(key, layers=layers)
        if exact is not None or not self.enabled or not self.directory.is_dir():
            return exact
        wanted = key.computation_digest()
        ids: np.ndarray | None = None
        for key_path in sorted(self.directory.glob("*.json")):
            rows_path = key_path.with_suffix(ROWS_SUFFIX)
            try:
                stored = json.loads(key_path.read_text(encoding="utf-8"))
                if not isinstance(stored, dict):
                    continue
                stored.pop(CHECKSUM_FIELD, None)  # load() checks it
                rows_sum = stored.pop(ROWS_CHECKSUM_FIELD, None)
                other = CacheKey(**stored)
                if other.computation_digest() != wanted or not isinstance(rows_sum, str):
                    continue
                n = int(stored["n_sentences"])
                if n < len(sentences) or rows_path.stat().st_size != n * _ROW_ID_BYTES:
                    continue
                stored_ids = np.fromfile(rows_path, dtype=np.uint8).reshape(n, _ROW_ID_BYTES)
                if _bytes_sha256(stored_ids) != rows_sum:
                    warnings.warn(
                        f"ignoring the sentence ids {str(rows_path)!r}: they do not match their "
                        "SHA-256 (damaged on disk); recomputing",
                        CacheWarning,
                        stacklevel=2,
                    )
                    continue
                if ids is None:
                    ids = sentence_row_ids(sentences)
                index = _row_index(stored_ids, ids)
                if index is None:
                    continue
            except (OSError, ValueError, TypeError, KeyError):
                continue  # not a candidate (unreadable, or written by another version)
            arr = self.load(other, layers=layers)
            if arr is not None:
                return np.ascontiguousarray(arr[index])
        return None

    def save(
        self,
        key: CacheKey,
        array: np.ndarray,
        *,
        background: bool = False,
        sentences: Sequence[str] | None = None,
    ) -> None:
        """Store ``array`` (float32, first axis = sentences) under ``key``, atomically.

        The ``.npy`` file is written first and the key file last (with the SHA-256 of the
        array's bytes, see the module notes), so an interrupted write leaves no entry that
        :meth:`load` would accept.

        Parameters
        ----------
        key : CacheKey
        array : ndarray of shape (key.n_sentences, ...)
        background : bool
            Write in a background thread (the caller goes on computing while the disk works)
            and return at once; the caller must not modify ``array`` until :meth:`wait`, which
            also re-raises any error of the write.
        sentences : sequence of str, optional
            The sentences of the rows (those ``key`` was built from). Given, their ids
            (:func:`sentence_row_ids`) are stored with the entry, and :meth:`load_rows` serves
            any subset of them from it.

        Raises
        ------
        ValueError
            If the array's row count differs from ``key.n_sentences``, or from the number of
            ``sentences`` (checked before any write, also with ``background=True``).
        """
        if not self.enabled:
            return
        arr = np.asarray(array, dtype=np.float32)
        if key.kind == "layers" and arr.ndim != 3:
            raise ValueError(f"a per-layer entry needs an (n, L + 1, d) array, got {arr.shape}")
        if arr.ndim < 2 or arr.shape[0] != key.n_sentences:
            raise ValueError(
                f"array of shape {arr.shape} does not match n_sentences={key.n_sentences}"
            )
        row_ids = None if sentences is None else sentence_row_ids(sentences)
        if row_ids is not None and len(row_ids) != key.n_sentences:
            raise ValueError(
                f"{len(row_ids)} sentences given for an entry of n_sentences={key.n_sentences}"
            )
        if background:
            if self._executor is None:
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(1, thread_name_prefix="sentvec-cache")
            self._pending.append(self._executor.submit(self._write, key, arr, row_ids))
        else:
            self._write(key, arr, row_ids)

    def _write(self, key: CacheKey, arr: np.ndarray, row_ids: np.ndarray | None = None) -> None:
        arr_path, key_path = self.paths(key)
        stack = key.kind == "layers"
        # per-layer vectors layer-major: np.save streams the transposed view, no full copy
        stored = arr.transpose(1, 0, 2) if stack else arr
        sums = _entry_checksums(stored, per_state=stack)
        atomic_save_npy(arr_path, stored)
        record = {**key.to_dict(), CHECKSUM_FIELD: sums}
        if row_ids is not None:
            atomic_write_bytes(arr_path.with_suffix(ROWS_SUFFIX), row_ids.tobytes())
            record[ROWS_CHECKSUM_FIELD] = _bytes_sha256(row_ids)
        atomic_write_json(key_path, record)
        self._written.add(key_path)
        self._rejected.discard(key_path)
        self.prune(keep=self._written)

    def prune(self, *, keep: Iterable[Path] = ()) -> int:
        """Remove the least recently used entries until all take at most :attr:`max_bytes`.

        An entry's time is its key file's modification time (written last, refreshed by each
        hit). The key file goes first, so a reader never accepts a half-removed entry; arrays
        whose key file is missing (an interrupted write) older than an hour go too. An entry
        another process removes meanwhile is skipped.

        Parameters
        ----------
        keep : iterable of Path
            Key files never removed: :meth:`save` passes the entries this cache object wrote
            (one run's entries, e.g. the cls and mean pooling of a Table 1 block), even when
            they alone are larger than :attr:`max_bytes`.

        Returns
        -------
        int
            The number of entries removed.

        Warns
        -----
        CacheWarning
            If a file cannot be removed (the cache stays larger; nothing else changes).
        """
        kept = set(keep)
        entries: list[tuple[float, int, Path]] = []
        total = 0
        now = time.time()
        try:
            for arr_path in self.directory.glob("*.npy"):
                key_path = arr_path.with_suffix(".json")
                try:
                    st = arr_path.stat()
                    size = st.st_size
                    if not key_path.exists():
                        if now - st.st_mtime > 3600:
                            arr_path.unlink()
                            arr_path.with_suffix(ROWS_SUFFIX).unlink(missing_ok=True)
                        continue
                    entries.append((key_path.stat().st_mtime, size, key_path))
                except FileNotFoundError:
                    continue
                total += size
            removed = 0
            for _, size, key_path in sorted(entries):
                if total <= self.max_bytes:
                    break
                if key_path in kept:
                    continue
                key_path.unlink(missing_ok=True)
                key_path.with_suffix(".npy").unlink(missing_ok=True)
                key_path.with_suffix(ROWS_SUFFIX).unlink(missing_ok=True)
                total -= size
                removed += 1
        except OSError as exc:
            warnings.warn(
                f"could not prune the vector cache under {str(self.directory)!r} ({exc})",
                CacheWarning,
                stacklevel=2,
            )
            return 0
        return removed

    def wait(self) -> None:
        """Block until every background :meth:`save` has finished.

        Raises
        ------
        OSError
            The first error of a background write (the entry is then absent, never partial).
        """
        pending, self._pending = self._pending, []
        errors = [f.exception() for f in pending]
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        for exc in errors:
            if exc is not None:
                raise exc

    def finish_writes(self) -> None:
        """:meth:`wait`, with a failed write turned into a warning instead of an error.

        For callers whose vectors are already computed and in use: a cache that cannot be
        written (full disk, read-only or invalid directory) must not cost the results; the
        entry is simply absent and the next run recomputes it.

        Warns
        -----
        CacheWarning
            Naming the cache directory and the OS error.
        """
        try:
            self.wait()
        except OSError as exc:
            warnings.warn(
                f"could not write the vector cache under {str(self.directory)!r} "
                f"({exc}); the results are unaffected, the next run recomputes the "
                "vectors",
                CacheWarning,
                stacklevel=2,
            )

    def get_or_compute(
        self, key: CacheKey, compute: Callable[[], np.ndarray]
    ) -> tuple[np.ndarray, bool]:
        """Return ``(array, hit)``: the cached array, or ``compute()`` stored then returned."""
        arr = self.load(key)
        if arr is not None:
            return arr, True
        arr = np.ascontiguousarray(compute(), dtype=np.float32)
        self.save(key, arr)
        return arr, False


# --------------------------------------------------------------- per-layer vectors
def pooled_layer_vectors(
    encoder: Encoder,
    sentences: Sequence[str],
    *,
    pooling: str | Sequence[str] = "mean",
    text_variant: str = "senteval",
    cache: Any = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    background_save: bool = False,
) -> tuple[dict[str, np.ndarray], bool, float]:
    """Per-layer pooled vectors of ``sentences``, from the disk cache or one forward pass.

    Parameters
    ----------
    encoder : TransformerEncoder
        Anything with ``encode_layers(sentences, pooling=tuple, ...) -> dict``.
    sentences : sequence of str
    pooling : str or sequence of str
        Each mode is cached under its own key; all missing modes come from ONE forward pass.
    text_variant : str
        Recorded in the cache key (which text the sentences are).
    cache : VectorCache, optional
        ``None``: no caching.
    batch_size, show_progress_bar : optional
        Passed to ``encode_layers``.
    background_save : bool
        Return while new cache entries are still being written (background thread); the caller
        must call ``cache.finish_writes()`` before exiting and must not modify the arrays.
        Otherwise the writes are finished before returning. Either way a failed write is a
        :class:`sentvec.cache.CacheWarning`, never an error.

    Returns
    -------
    vectors : dict of str to ndarray of shape (n, L + 1, d), float32
    cache_hit : bool
        True when every pooling came from the cache (no forward pass ran).
    seconds : float
        Wall time of loading and/or computing.

    Raises
    ------
    TypeError
        If the encoder has no ``encode_layers`` (e.g. Sent2Vec: it has no layers).
    """
    vectors, hit, unsaved, seconds = load_or_encode_layer_vectors(
        encoder,
        sentences,
        pooling=pooling,
        text_variant=text_variant,
        cache=cache,
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )
    save_layer_vectors(cache, unsaved, wait=not background_save)
    return vectors, hit, seconds


def load_or_encode_layer_vectors(
    encoder: Encoder,
    sentences: Sequence[str],
    *,
    pooling: str | Sequence[str],
    text_variant: str,
    cache: Any,
    batch_size: int | None,
    show_progress_bar: bool | None,
) -> tuple[dict[str, np.ndarray], bool, list[tuple[Any, np.ndarray, list[str]]], float]:
    """:func:`pooled_layer_vectors` without writing the cache: returns the vectors, the cache
    hit flag, the ``(cache key, array)`` entries still to be saved (see
    :func:`save_layer_vectors`) and the seconds."""
    if not isinstance(encoder, LayeredEncoder):
        raise TypeError(
            f"{type(encoder).__name__} has no encode_layers(); the layer analysis "
            "needs a transformer encoder"
        )
    poolings = (pooling,) if isinstance(pooling, str) else tuple(dict.fromkeys(pooling))
    sentences = list(sentences)
    t0 = time.perf_counter()
    if cache is not None and not getattr(cache, "enabled", True):
        cache = None  # --no-cache: no key (no file hashing) is needed
    memo = getattr(cache, "fingerprint_dir", None)
    keys = {
        p: encoder_cache_key(
            encoder, sentences, kind="layers", pooling=p, text_variant=text_variant, memo_dir=memo
        )
        for p in (poolings if cache is not None else ())
    }
    out: dict[str, np.ndarray] = {}
    if cache is not None:
        for p in poolings:
            arr = cache.load_rows(keys[p], sentences)
            if arr is not None:
                out[p] = arr
    missing = tuple(p for p in poolings if p not in out)
    if missing:
        kwargs: dict[str, Any] = {"show_progress_bar": show_progress_bar}
        if batch_size is not None:
            kwargs["batch_size"] = batch_size
        computed = encoder.encode_layers(sentences, pooling=missing, **kwargs)
        if not isinstance(computed, Mapping) or not set(missing) <= set(computed):
            got = sorted(computed) if isinstance(computed, Mapping) else type(computed).__name__
            raise ValueError(
                f"{type(encoder).__name__}.encode_layers(pooling={missing}) "
                f"returned {got}, not a dict holding every requested pooling"
            )
        for p in missing:
            out[p] = np.ascontiguousarray(computed[p], dtype=np.float32)
    unsaved = [(keys[p], out[p], sentences) for p in missing] if cache is not None else []
    return {p: out[p] for p in poolings}, not missing, unsaved, time.perf_counter() - t0


def save_layer_vectors(
    cache: Any, entries: list[tuple[Any, np.ndarray, list[str]]], *, wait: bool
) -> None:
    """Write the ``(key, array, sentences)`` entries in the cache's background thread; with
    ``wait``, finish them (a failed write is a CacheWarning, never an error)."""
    if cache is None:
        return
    for key, arr, sentences in entries:
        cache.save(key, arr, background=True, sentences=sentences)
    if wait:
        cache.finish_writes()


def cached_layer_vectors(
    description: Mapping[str, Any],
    sentences: Sequence[str],
    *,
    pooling: Sequence[str],
    text_variant: str,
    cache: Any,
    layers: Mapping[str, Iterable[int]] | None = None,
) -> dict[str, np.ndarray] | None:
    """Per-layer pooled vectors of a transformer known only by its description, or None.

    The keys are those :func:`pooled_layer_vectors` uses for the loaded encoder (the same
    digests: ``tests/test_cache.py`` compares them), computed from ``description`` (see
    :func:`sentvec.encoders.transformer_files.describe_pretrained`) and the model files, so a
    hit costs no model load.

    Parameters
    ----------
    description : mapping
        The transformer's ``config_dict()``; its ``model_path`` is fingerprinted.
    sentences : sequence of str
    pooling : sequence of str
        Every mode must be cached for a hit.
    text_variant : str
    cache : VectorCache or None
    layers : mapping of pooling to hidden-state indices, optional
        The hidden states each pooling's caller will read (only they are checked and read).

    Returns
    -------
    dict of str to ndarray of shape (n, L + 1, d), or None
        None when any pooling is missing (or the cache is disabled or absent).
    """
    if cache is None or not getattr(cache, "enabled", True):
        return None
    model_path = description.get("model_path")
    code = modules_fingerprint(("sentvec.encoders.transformer", "sentvec.encoders.pooling"))
    sentences = list(sentences)
    out: dict[str, np.ndarray] = {}
    for p in dict.fromkeys(pooling):
        key = description_cache_key(
            description,
            sentences,
            model_path=model_path if isinstance(model_path, str) else None,
            code_sha256=code,
            memo_dir=cache.fingerprint_dir,
            kind="layers",
            pooling=p,
            text_variant=text_variant,
        )
        arr = cache.load_rows(key, sentences, layers=None if layers is None else layers.get(p))
        if arr is None:
            return None
        out[p] = arr
    return out
