"""What a vector-cache entry is keyed by (:mod:`sentvec.cache` stores the entries).

A :class:`CacheKey` holds everything that changes a cached array of sentence vectors: the model
(name and a fingerprint of its files' contents, :func:`content_fingerprint`, or of the encoder's
configuration), the text variant, pooling, maximum length, the sentences
(:func:`sentences_sha256`), the source of the encoding code (:func:`code_fingerprint`), the
versions of the libraries that compute the vectors (:func:`library_versions`), the sentvec
version and :data:`CACHE_FORMAT_VERSION`. Keys come from a loaded encoder
(:func:`encoder_cache_key`) or from a description of one, without loading it
(:func:`description_cache_key`).

A model file's SHA-256 is remembered under the cache's ``fingerprints/`` directory against its
device, inode, size, modification and status-change times, so it is read once, and any write
to it, which moves its status-change time, makes it hashed again (:func:`file_sha256`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_write_json
from sentvec.encoders.base import Encoder

#: Bumped whenever the layout of cache entries (or the pooled values' definition) changes.
CACHE_FORMAT_VERSION = 3


#: Distributions whose code computes cached vectors (their versions are part of every key).
_LIBRARIES = ("numpy", "torch", "transformers", "tokenizers")


#: A file whose status changed less than this long ago is hashed but its digest not remembered
#: (a write within the file system's timestamp granularity could otherwise go unseen).
_RACY_NS = 2_000_000_000


#: Encoder options that do not change per-layer vectors (``kind="layers"`` keys ignore them).
_LAYER_INDEPENDENT = ("pooling", "layers", "layer_indices")


#: Key fields that name the sentences; every other field names how their vectors were computed.
_SENTENCE_FIELDS = ("sentences_sha256", "n_sentences")


def sentences_sha256(sentences: Iterable[str]) -> tuple[str, int]:
    """Return the SHA-256 (hex) of a sentence list and its length.

    Each sentence is hashed as its UTF-8 byte length (8 bytes, little endian) followed by its
    bytes, so ``["ab", "c"]`` and ``["a", "bc"]`` differ and order matters.
    """
    h = hashlib.sha256()
    n = 0
    for s in sentences:
        b = s.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
        n += 1
    return h.hexdigest(), n


def fingerprint_path(path: str | os.PathLike[str]) -> str:
    """Return a SHA-256 (hex) over the relative name, size and mtime (ns) of the files at ``path``.

    ``path`` may be a file or a directory (walked recursively, hidden entries skipped). Rewriting
    or touching a weight file changes the fingerprint; file contents are not read (fast for
    gigabyte-sized weights).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    """
    files, base = _model_files(path)
    h = hashlib.sha256()
    for p in files:
        st = p.stat()
        h.update(f"{p.relative_to(base).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _model_files(path: str | os.PathLike[str]) -> tuple[list[Path], Path]:
    """The files at ``path`` (a file, or a directory walked without hidden entries), sorted,
    and the directory their names are relative to; FileNotFoundError if it does not exist."""
    root = Path(path).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"model path not found: {str(root)!r}")
    if root.is_file():
        return [root], root.parent
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    return files, root


def file_sha256(
    path: str | os.PathLike[str], memo_dir: str | os.PathLike[str] | None = None
) -> str:
    """SHA-256 (hex) of a file's bytes, remembered in ``memo_dir`` while the file is unchanged.

    The remembered digest is used only while the file's device, inode, size, modification time
    and status-change time (``st_ctime_ns``, which every write and every ``utime`` moves and
    which a user cannot set back) are all the same. A digest is not remembered while the status
    change is under 2 s old (a write within the timestamp granularity), nor when the file
    changed while it was being read.

    Raises
    ------
    OSError
        The file cannot be read (a failing memo write is ignored).
    """
    p = Path(path).resolve()
    st = p.stat()
    stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    memo = None
    if memo_dir is not None:
        name = hashlib.sha256(os.fsencode(p)).hexdigest()
        memo = Path(memo_dir) / f"{name}.json"
        try:
            known = json.loads(memo.read_text(encoding="utf-8"))
            if known.get("path") == str(p) and known.get("stamp") == stamp:
                return str(known["sha256"])
        except (OSError, ValueError, KeyError, AttributeError, UnicodeDecodeError):
            pass
    with open(p, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    st2 = p.stat()
    same = stamp == [st2.st_dev, st2.st_ino, st2.st_size, st2.st_mtime_ns, st2.st_ctime_ns]
    if memo is not None and same and time.time_ns() - st.st_ctime_ns > _RACY_NS:
        try:
            atomic_write_json(memo, {"path": str(p), "stamp": stamp, "sha256": digest})
        except OSError:
            pass
    return digest


def content_fingerprint(
    path: str | os.PathLike[str], memo_dir: str | os.PathLike[str] | None = None
) -> str:
    """SHA-256 (hex) over the relative name, size and :func:`file_sha256` of the files at ``path``.

    ``path`` may be a file or a directory (walked recursively, hidden entries skipped). Unlike
    :func:`fingerprint_path` it depends on the bytes only: a rewritten file with the same size
    and modification time changes it, a copy of the same files elsewhere does not. With
    ``memo_dir`` each file is read once while unchanged (see :func:`file_sha256`).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    """
    files, base = _model_files(path)
    h = hashlib.sha256()
    for p in files:
        digest = file_sha256(p, memo_dir)
        h.update(f"{p.relative_to(base).as_posix()}\0{p.stat().st_size}\0{digest}\n".encode())
    return h.hexdigest()


def library_versions() -> str:
    """``"numpy=2.1.3,torch=2.13.0,..."``: the installed versions of the libraries that compute
    cached vectors (``-`` for one not installed), read from the package metadata (no import)."""
    from importlib import metadata

    out = []
    for name in _LIBRARIES:
        try:
            out.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name}=-")
    return ",".join(out)


def _canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True)
class CacheKey:
    """Everything that determines a cached array of sentence vectors.

    Attributes
    ----------
    model : str
        Model name or resolved path, as the encoder describes itself.
    model_fingerprint : str
        :func:`fingerprint_path` of the model files, or a hash of the encoder configuration when
        there are no local files.
    text_variant : str
        Which text was fed to the model (``"senteval"``: tokenized + lower-cased, or ``"raw"``),
        or another label for non-STS text (e.g. ``"corpus:moses-lower"``).
    pooling : str
        Pooling (``"mean"``, ``"cls"``, ...), or several joined by ``+``.
    max_length : int or None
        Tokenizer truncation length (``None``: the model's maximum).
    sentences_sha256 : str
        :func:`sentences_sha256` of the sentence list, in order.
    n_sentences : int
        Number of sentences (rows of the cached array).
    kind : str
        What the array holds: ``"layers"`` (``(n, L+1, d)`` per-layer pooled vectors) or
        ``"embeddings"`` (``(n, d)``).
    config_sha256 : str
        SHA-256 of the encoder's full ``config_dict()`` (covers options not listed above).
    code_sha256 : str
        :func:`code_fingerprint` of the encoder: the source of the code that computed the
        vectors, so a change of the encoding code between two releases (same version) never
        reuses vectors computed by the old code.
    libraries : str
        :func:`library_versions`: numpy, torch, transformers and tokenizers versions.
    sentvec_version : str
        Version of the code that computed the vectors.
    format_version : int
        :data:`CACHE_FORMAT_VERSION`.
    """

    model: str
    model_fingerprint: str
    text_variant: str
    pooling: str
    max_length: int | None
    sentences_sha256: str
    n_sentences: int
    kind: str = "layers"
    config_sha256: str = ""
    code_sha256: str = ""
    libraries: str = field(default_factory=library_versions)
    sentvec_version: str = field(default_factory=lambda: _sentvec_version())
    format_version: int = CACHE_FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Return the key as a JSON-serialisable dict."""
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """Return the SHA-256 (hex) of the canonical JSON of the key: the entry's file name."""
        return hashlib.sha256(_canonical_json(self.to_dict()).encode("utf-8")).hexdigest()

    def computation_digest(self) -> str:
        """Return the SHA-256 (hex) of every field but the sentences: entries with the same
        value hold vectors computed the same way, each for its own sentences."""
        return _computation_digest(self.to_dict())


def _computation_digest(key: Mapping[str, Any]) -> str:
    fields = {k: v for k, v in key.items() if k not in _SENTENCE_FIELDS}
    return hashlib.sha256(_canonical_json(fields).encode("utf-8")).hexdigest()


def code_fingerprint(encoder: Encoder) -> str:
    """SHA-256 of the source files that compute ``encoder``'s vectors.

    These are the module defining the encoder's class and sentvec's pooling module
    (:func:`modules_fingerprint`). Any edit of that code, even between two releases with the
    same version, changes the cache key.

    Returns
    -------
    str
        Hex digest.
    """
    return modules_fingerprint((type(encoder).__module__, "sentvec.encoders.pooling"))


def modules_fingerprint(names: Iterable[str]) -> str:
    """SHA-256 of the named modules' source files, read as bytes without importing them (a
    module without a ``.py`` file counts by name only)."""
    import importlib.util
    import sys

    h = hashlib.sha256()
    for name in sorted(set(names)):
        h.update(name.encode("utf-8") + b"\0")
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if module is None:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            path = getattr(spec, "origin", None)
        if isinstance(path, str) and path.endswith(".py") and os.path.isfile(path):
            h.update(Path(path).read_bytes())
    return h.hexdigest()


def _sentvec_version() -> str:
    from sentvec import __version__

    return __version__


#: Entries of an encoder's description that may name its local model files, in the order they
#: are tried: the resolved directory a transformer was loaded from, the directory a ``Pipeline``
#: was loaded from, then the names the encoder gives its model.
_MODEL_PATH_KEYS = ("model_path", "pipeline", "path", "name_or_path", "model")


def _find_model_path(config: Mapping[str, Any]) -> Path | None:
    """The first existing local file or directory ``config`` names (:data:`_MODEL_PATH_KEYS`).

    Read from the description alone, so that an encoder and a ``DescribedEncoder`` standing
    in for it find the same model files (the same cache key).
    """
    for name in _MODEL_PATH_KEYS:
        value = config.get(name)
        if isinstance(value, str) and value and Path(value).expanduser().exists():
            return Path(value).expanduser()
    return None


def encoder_cache_key(
    encoder: Encoder,
    sentences: list[str],
    *,
    kind: str = "layers",
    pooling: str | None = None,
    text_variant: str | None = None,
    max_length: int | None = None,
    memo_dir: str | os.PathLike[str] | None = None,
) -> CacheKey:
    """Build the :class:`CacheKey` of ``encoder`` applied to ``sentences``.

    The model identity comes from ``encoder.config_dict()`` (see
    :func:`sentvec.encoders.base.describe_encoder`): its ``model``/``name_or_path`` entry names
    the model; when a local model directory or file can be found, its files are fingerprinted
    (names, sizes, contents: :func:`content_fingerprint`), otherwise the fingerprint is the hash
    of the whole configuration.
    For ``kind="layers"`` the encoder's own ``pooling`` / ``layers`` / ``layer_indices`` options
    are left out of the configuration hash (``encode_layers`` pools every hidden state with the
    pooling named in the key), so encoders differing only in those share per-layer entries.

    Parameters
    ----------
    encoder : object
        Any encoder; ``config_dict()`` is used when present.
    sentences : list of str
        The exact sentence list whose vectors are cached (order matters).
    kind : str
        ``"layers"`` or ``"embeddings"`` (see :class:`CacheKey`).
    pooling, text_variant, max_length
        Override what the configuration says (e.g. the pooling passed to ``encode_layers``).
    memo_dir : path-like, optional
        Where file digests are remembered (:func:`file_sha256`; a cache's ``fingerprint_dir``).
    """
    from sentvec.encoders.base import describe_encoder, text_variant_of

    config = describe_encoder(encoder)
    return description_cache_key(
        config,
        sentences,
        model_path=_find_model_path(config),
        code_sha256=code_fingerprint(encoder),
        memo_dir=memo_dir,
        kind=kind,
        pooling=pooling,
        text_variant=text_variant if text_variant is not None else text_variant_of(encoder),
        max_length=max_length,
    )


def description_cache_key(
    config: Mapping[str, Any],
    sentences: Sequence[str],
    *,
    model_path: str | os.PathLike[str] | None,
    code_sha256: str,
    memo_dir: str | os.PathLike[str] | None = None,
    kind: str = "layers",
    pooling: str | None = None,
    text_variant: str | None = None,
    max_length: int | None = None,
) -> CacheKey:
    """The :class:`CacheKey` of an encoder known by its description ``config``
    (``config_dict()``), without the encoder itself: what :func:`encoder_cache_key` computes
    from a loaded encoder, and ``sentvec eval-sts`` from a model's files before loading it.

    Parameters
    ----------
    config : mapping
        The encoder's ``config_dict()`` (or
        :func:`sentvec.encoders.transformer_files.describe_pretrained`).
    sentences : sequence of str
    model_path : path-like or None
        The model files to fingerprint (:func:`content_fingerprint`); None: the configuration
        hash stands for the model.
    code_sha256 : str
        :func:`code_fingerprint` of the encoder (or :func:`modules_fingerprint` of its modules).
    memo_dir : path-like, optional
        Where file digests are remembered (:func:`file_sha256`).
    kind, pooling, text_variant, max_length
        As :func:`encoder_cache_key`; ``text_variant`` defaults to ``config["text_variant"]``.
    """
    hashed = dict(config)
    if kind == "layers":  # encode_layers ignores the encoder's own pooling / layer choice
        for name in _LAYER_INDEPENDENT:
            hashed.pop(name, None)
    config_hash = hashlib.sha256(_canonical_json(hashed).encode("utf-8")).hexdigest()
    model = next(
        (
            str(config[k])
            for k in ("model", "name_or_path", "model_path", "path", "encoder")
            if config.get(k)
        ),
        "encoder",
    )
    fingerprint = (
        content_fingerprint(model_path, memo_dir) if model_path is not None else config_hash
    )
    if pooling is None:
        pooling = str(config.get("pooling", ""))
    if max_length is None:
        ml = config.get("max_length")
        max_length = int(ml) if isinstance(ml, (int, np.integer)) else None
    if text_variant is None:
        text_variant = str(config.get("text_variant", "senteval"))
    digest, n = sentences_sha256(sentences)
    return CacheKey(
        model=model,
        model_fingerprint=fingerprint,
        text_variant=str(text_variant),
        pooling=str(pooling),
        max_length=max_length,
        sentences_sha256=digest,
        n_sentences=n,
        kind=kind,
        config_sha256=config_hash,
        code_sha256=code_sha256,
    )
