"""Teacher features of corpus sentences: resumable ``.npy`` shards and their manifest.

A features directory holds

* ``features.json``: the manifest (see :data:`FEATURES_FORMAT`): the teacher's description,
  the pooling, the hidden-state indices stored, the forward pass's precision, the corpus, the
  shard size and one record per finished shard (sentence range, SHA-256 of the sentences'
  UTF-8 text, SHA-256 of the ``.npy`` file);
* ``shard-AAAAAAAAA-BBBBBBBBB.npy``: float32 array of shape ``(B - A, n_layers, d)``, the
  teacher's pooled hidden states of sentences ``A .. B-1``, unwhitened.

Sentences are the corpus's non-empty lines, stripped (:func:`sentvec.distill.corpus.corpus_lines`),
numbered from 0. Each shard is written atomically and recorded in the manifest only after, so a
killed run continues at the first missing shard; a run whose options or corpus disagree with an
existing manifest is refused (:class:`FeaturesMismatchError`) instead of mixing features.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_save_npy, atomic_write_json
from sentvec._locks import DirectoryLock
from sentvec._progress import progress_bar
from sentvec._readers import read_json_object
from sentvec.exceptions import FeaturesMismatchError, TruncationWarning

#: ``format`` field of ``features.json``.
FEATURES_FORMAT = "sentvec-teacher-features"
#: ``version`` field of ``features.json``.
FEATURES_VERSION = 1
MANIFEST_FILE = "features.json"
#: Hidden states stored by default: layer 1 and the last layer, each mean-pooled, so that
#: training can target the last layer or WhiteningBERT's (1, -1) average.
DEFAULT_FEATURE_LAYERS = (1, -1)
DEFAULT_SHARD_SIZE = 10_000

#: The manifest fields that must agree for a run to add shards to an existing directory.
_CONFIG_FIELDS = ("teacher", "pooling", "layers", "dim", "precision", "shard_size", "corpus_name")


@dataclass(frozen=True)
class FeatureShard:
    """One finished shard: sentences ``[start, end)`` in ``file``."""

    file: str
    start: int
    end: int
    text_sha256: str
    file_sha256: str


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _text_sha256(lines: Sequence[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def shard_file_name(start: int, end: int) -> str:
    """The file name of the shard of sentences ``[start, end)``."""
    return f"shard-{start:09d}-{end:09d}.npy"


def read_features_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check ``features.json`` of a features directory.

    Parameters
    ----------
    directory : path-like

    Returns
    -------
    dict
        The manifest; ``manifest["shards"]`` is a list of :class:`FeatureShard` fields.

    Raises
    ------
    FileNotFoundError
        No ``features.json`` in ``directory``.
    FeaturesMismatchError
        A file of another format or version, or a field missing.
    """
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{os.fspath(directory)!r} holds no {MANIFEST_FILE}: not a features directory "
            "(write one with sentvec.static_training.featurize_corpus or "
            "`sentvec train-static --features DIR`)"
        )
    m = read_json_object(path)
    if m.get("format") != FEATURES_FORMAT or m.get("version") != FEATURES_VERSION:
        raise FeaturesMismatchError(
            f"{os.fspath(path)!r} is not a {FEATURES_FORMAT} manifest of version "
            f"{FEATURES_VERSION} (format={m.get('format')!r}, version={m.get('version')!r})"
        )
    missing = [k for k in (*_CONFIG_FIELDS, "shards") if k not in m]
    if missing:
        raise FeaturesMismatchError(f"{os.fspath(path)!r} lacks the field(s) {missing}")
    return m


def contiguous_sentences(manifest: dict[str, Any]) -> int:
    """Sentences ``0 .. n-1`` that finished shards of ``manifest`` cover without a gap."""
    n = 0
    for s in sorted(manifest["shards"], key=lambda r: int(r["start"])):
        if int(s["start"]) != n:
            break
        n = int(s["end"])
    return n


def _teacher_description(encoder: Any) -> str:
    from sentvec.encoders import TransformerEncoder

    if isinstance(encoder, TransformerEncoder):
        return str(encoder.name_or_path)
    return type(encoder).__name__


def _check_config(existing: dict[str, Any], wanted: dict[str, Any], directory: Path) -> None:
    diff = [
        f"{k}: {existing.get(k)!r} there, {wanted[k]!r} asked"
        for k in _CONFIG_FIELDS
        if existing.get(k) != wanted[k]
    ]
    if diff:
        raise FeaturesMismatchError(
            f"features directory {os.fspath(directory)!r} was written with other options ("
            + "; ".join(diff)
            + "); use another directory or the same options"
        )


def _chunks(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    while True:
        chunk = list(itertools.islice(lines, size))
        if not chunk:
            return
        yield chunk


def teacher_features(
    encoder: Any, sentences: Sequence[str], layers: Sequence[int], *, batch_size: int = 64
) -> np.ndarray:
    """Pooled hidden states ``layers`` of ``sentences`` from one forward pass each.

    Parameters
    ----------
    encoder : TransformerEncoder
        Pooled by its own pooling mode.
    sentences : sequence of str
    layers : sequence of int
        Hidden-state indices (0 = embeddings, negatives from the end).
    batch_size : int

    Returns
    -------
    ndarray of shape (n, len(layers), d), float32
    """
    out = encoder.encode_layers(list(sentences), batch_size=batch_size, show_progress_bar=False)
    k = out.shape[1]
    idx = [i % k for i in layers]
    return np.ascontiguousarray(out[:, idx, :], dtype=np.float32)


_WORKER_ENCODERS: dict[tuple[Any, ...], Any] = {}


def _worker_features(
    spec: tuple[str, str, str, str | None], sentences: list[str], layers: tuple[int, ...]
) -> np.ndarray:
    """A shard's features on a Dask worker; the teacher is loaded once per worker process."""
    encoder = _WORKER_ENCODERS.get(spec)
    if encoder is None:
        model, pooling, precision, device = spec
        encoder = load_teacher(model, pooling=pooling, precision=precision, device=device)
        _WORKER_ENCODERS[spec] = encoder
    return teacher_features(encoder, sentences, layers)


def load_teacher(teacher: str | os.PathLike[str], **options: Any) -> Any:
    """Load ``teacher`` as a :class:`~sentvec.encoders.transformer.TransformerEncoder`.

    Raises
    ------
    ValueError
        ``teacher`` is a model of another kind (a static or Sent2Vec model has no hidden states
        to featurize): refused before it is loaded, naming its format
        (:func:`sentvec.distill.teacher.check_teacher`).
    """
    from sentvec.distill.teacher import check_teacher
    from sentvec.encoders.loading import load_encoder
    from sentvec.encoders.transformer import TransformerEncoder

    check_teacher(teacher)
    encoder = load_encoder(os.fspath(teacher), **options)
    if not isinstance(encoder, TransformerEncoder):
        raise ValueError(
            f"teacher {os.fspath(teacher)!r} is a {type(encoder).__name__}, not a transformer; "
            "the teacher must be a transformer (an alias such as minilm or a model directory)"
        )
    return encoder


def featurize_corpus(
    teacher: str | os.PathLike[str],
    corpus: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    *,
    max_sentences: int | None = None,
    layers: Sequence[int] = DEFAULT_FEATURE_LAYERS,
    pooling: str = "mean",
    precision: str = "auto",
    shard_size: int = DEFAULT_SHARD_SIZE,
    batch_size: int = 64,
    device: str | None = None,
    client: Any = None,
    show_progress_bar: bool | None = None,
) -> dict[str, Any]:
    """Teacher vectors of a corpus's sentences, written as resumable ``.npy`` shards.

    Parameters
    ----------
    teacher : str or path-like
        A transformer: an alias (``"minilm"``) or a local model directory.
    corpus : path-like
        One sentence per line (``.xz`` / ``.gz`` / ``.bz2`` read as they are); blank lines are
        skipped.
    output_dir : path-like
        The features directory (created; an existing one is continued when its manifest agrees).
    max_sentences : int, optional
        Featurize the first this many sentences (default: all).
    layers : sequence of int, default (1, -1)
        Hidden states stored side by side, each pooled by ``pooling``.
    pooling : {"mean", "cls", "max"}, default "mean"
    precision : {"auto", "float32", "bfloat16"}, default "auto"
        The teacher's forward pass (:class:`~sentvec.encoders.transformer.TransformerEncoder`).
    shard_size : int, default 10000
        Sentences per shard.
    batch_size : int, default 64
    device : str, optional
    client : distributed.Client, optional
        Run the shards on this Dask cluster (each worker loads the teacher once; the shards are
        written here as they arrive). Default: in this process.
    show_progress_bar : bool, optional

    Returns
    -------
    dict
        The manifest, as written to ``output_dir/features.json``.

    Raises
    ------
    FeaturesMismatchError
        ``output_dir`` holds features of other options, another teacher or other sentences.
    ValueError
        The corpus has no non-empty line, ``shard_size`` or ``max_sentences`` below 1.
    FileNotFoundError
        The corpus does not exist.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size={shard_size} is invalid; it must be at least 1")
    if max_sentences is not None and max_sentences < 1:
        raise ValueError(f"max_sentences={max_sentences} is invalid; it must be at least 1")
    corpus = Path(corpus)
    if not corpus.is_file():
        raise FileNotFoundError(f"corpus {os.fspath(corpus)!r} does not exist or is not a file")
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    encoder = load_teacher(teacher, pooling=pooling, precision=precision, device=device)
    layers = tuple(int(x) for x in layers)
    n_states = int(encoder.num_layers) + 1
    config = {
        "teacher": _teacher_description(encoder),
        "pooling": pooling,
        "layers": [x % n_states for x in layers],
        "dim": int(encoder.get_sentence_embedding_dimension()),
        "precision": str(encoder.precision),
        "shard_size": int(shard_size),
        "corpus_name": corpus.name,
    }
    with DirectoryLock(out):
        manifest = _open_manifest(out, config, corpus, encoder)
        bar = progress_bar(
            total=max_sentences, show=show_progress_bar, desc="teacher features", unit="sent"
        )
        shards = _ShardWriter(out, manifest, bar)
        spec = (os.fspath(teacher), pooling, precision, device)
        with _truncations_summed():  # one warning for the run, not one per shard
            n_seen = _featurize_shards(
                shards, corpus, max_sentences, shard_size, encoder, spec, layers, client
            )
        bar.close()
        if n_seen == 0:
            raise ValueError(f"corpus {os.fspath(corpus)!r} has no non-empty line")
        shards.write_manifest()
    return manifest


@contextlib.contextmanager
def _truncations_summed() -> Iterator[None]:
    """Hold back the :class:`TruncationWarning` of each shard's forward pass and give one for
    all of them at the end (other warnings are given back as they were)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            parts = [w.message for w in caught if isinstance(w.message, TruncationWarning)]
            others = [w for w in caught if not isinstance(w.message, TruncationWarning)]
    for w in others:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if parts:
        n = sum(m.n_truncated or 0 for m in parts)
        longest = max(m.longest or 0 for m in parts)
        limit = parts[0].max_length
        warnings.warn(
            TruncationWarning(
                f"teacher features: {n} corpus sentences (in {len(parts)} shards) were longer "
                f"than max_length={limit} tokens (longest: {longest}) and were truncated to "
                f"{limit} tokens",
                n_truncated=n,
                longest=longest,
                max_length=limit,
            ),
            stacklevel=4,
        )


def _open_manifest(out: Path, config: dict[str, Any], corpus: Path, encoder: Any) -> dict[str, Any]:
    """The manifest of ``out`` to continue (its options checked against ``config``), or a new one."""
    if (out / MANIFEST_FILE).exists():
        manifest = read_features_manifest(out)
        _check_config(manifest, config, out)
        return manifest
    return {
        "format": FEATURES_FORMAT,
        "version": FEATURES_VERSION,
        **config,
        "corpus": os.fspath(corpus.resolve()),
        "max_length": int(encoder.max_length),
        "dtype": "float32",
        "shape": "(sentences, len(layers), dim)",
        "shards": [],
    }


class _ShardWriter:
    """Writes each finished shard, then records it in the manifest (so a killed run resumes)."""

    def __init__(self, out: Path, manifest: dict[str, Any], bar: Any) -> None:
        self.out = out
        self.manifest = manifest
        self.bar = bar
        #: The finished shards by first sentence.
        self.done: dict[int, dict[str, Any]] = {int(s["start"]): s for s in manifest["shards"]}

    def record(self, s: int, chunk_len: int, text_sha: str, arr: np.ndarray) -> None:
        """Write the features ``arr`` of sentences ``[s, s + chunk_len)`` and record them."""
        name = shard_file_name(s, s + chunk_len)
        atomic_save_npy(self.out / name, arr)
        self.done[s] = {
            "file": name,
            "start": s,
            "end": s + chunk_len,
            "text_sha256": text_sha,
            "file_sha256": _sha256_file(self.out / name),
        }
        self.manifest["shards"] = [self.done[k] for k in sorted(self.done)]
        self.write_manifest()
        self.bar.update(chunk_len)

    def write_manifest(self) -> None:
        """Write the manifest (atomically), its sentence count updated."""
        self.manifest["n_sentences"] = sum(
            int(v["end"]) - int(v["start"]) for v in self.done.values()
        )
        atomic_write_json(self.out / MANIFEST_FILE, self.manifest)


def _featurize_shards(
    shards: _ShardWriter,
    corpus: Path,
    max_sentences: int | None,
    shard_size: int,
    encoder: Any,
    spec: tuple[str, str, str, str | None],
    layers: tuple[int, ...],
    client: Any,
) -> int:
    """Featurize the shards ``shards`` lacks, here or on ``client``'s cluster; the sentences seen.

    A shard already recorded is skipped when its file is there, and refused
    (:class:`FeaturesMismatchError`) when it was computed from other sentences.
    """
    from sentvec.distill.corpus import corpus_lines

    lines: Iterator[str] = corpus_lines(corpus)
    if max_sentences is not None:
        lines = itertools.islice(lines, max_sentences)
    pending: list[Any] = []
    start = 0
    n_seen = 0
    for chunk in _chunks(lines, shard_size):
        n_seen += len(chunk)
        text_sha = _text_sha256(chunk)
        prev = shards.done.get(start)
        if prev is not None:
            if prev["text_sha256"] != text_sha or int(prev["end"]) != start + len(chunk):
                raise FeaturesMismatchError(
                    f"features directory {os.fspath(shards.out)!r}: shard {prev['file']} was "
                    f"computed from other sentences than lines {start}..{start + len(chunk)} "
                    f"of {os.fspath(corpus)!r}; use another directory for another corpus"
                )
            if (shards.out / prev["file"]).is_file():
                shards.bar.update(len(chunk))
                start += len(chunk)
                continue
        if client is None:
            shards.record(start, len(chunk), text_sha, teacher_features(encoder, chunk, layers))
        else:
            fut = client.submit(_worker_features, spec, chunk, layers, pure=False)
            pending.append((fut, start, len(chunk), text_sha))
        start += len(chunk)
    if pending:
        from distributed import as_completed

        by_future = {p[0]: p for p in pending}
        for fut in as_completed(list(by_future)):
            _, s, n, sha = by_future[fut]
            shards.record(s, n, sha, fut.result())
    return n_seen


def load_features(
    directory: str | os.PathLike[str],
    *,
    max_sentences: int | None = None,
    verify: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The features of a directory written by :func:`featurize_corpus`, in sentence order.

    Parameters
    ----------
    directory : path-like
    max_sentences : int, optional
        Read only the first this many sentences.
    verify : bool, default True
        Check each shard's SHA-256 against the manifest.

    Returns
    -------
    features : ndarray of shape (n, n_layers, d), float32
        Sentences ``0 .. n-1``: the shards from sentence 0 on without a gap.
    manifest : dict

    Raises
    ------
    FileNotFoundError
        No manifest, or a recorded shard file is missing.
    FeaturesMismatchError
        A shard whose checksum or shape disagrees with the manifest, or no shard at sentence 0.
    """
    out = Path(directory)
    m = read_features_manifest(out)
    parts: list[np.ndarray] = []
    expect = 0
    for s in sorted(m["shards"], key=lambda r: int(r["start"])):
        if int(s["start"]) != expect:
            break  # a gap: a run still going or killed; use what is contiguous
        path = out / s["file"]
        if not path.is_file():
            raise FileNotFoundError(f"features shard {os.fspath(path)!r} is missing")
        if verify and _sha256_file(path) != s["file_sha256"]:
            raise FeaturesMismatchError(
                f"features shard {os.fspath(path)!r} does not match its SHA-256 in the manifest"
            )
        arr = np.load(path, allow_pickle=False)
        n = int(s["end"]) - int(s["start"])
        if arr.shape != (n, len(m["layers"]), int(m["dim"])):
            raise FeaturesMismatchError(
                f"features shard {os.fspath(path)!r} has shape {arr.shape}, expected "
                f"{(n, len(m['layers']), int(m['dim']))}"
            )
        parts.append(arr)
        expect = int(s["end"])
        if max_sentences is not None and expect >= max_sentences:
            break
    if not parts:
        raise FeaturesMismatchError(f"features directory {os.fspath(out)!r} has no shard yet")
    feats = np.concatenate(parts, axis=0)
    if max_sentences is not None:
        feats = feats[:max_sentences]
    return feats, m
