"""Encode text files larger than memory into resumable ``.npy`` shards with a JSON manifest.

A file is a sequence of lines split on ``b"\\n"`` (a trailing ``"\\r"`` is dropped; a last line
without newline counts; the newline after the last line does not start another one; a UTF-8
byte-order mark at the very start of the file is dropped from the first line). Every line
gets exactly one vector -- empty lines included (they get whatever the encoder gives them and are
counted) -- so row ``i`` of the output is line ``start_line + i`` of the file.

Lines ``[start_line, end_line)`` are cut into shards of ``shard_size`` lines. Each shard is encoded
from its byte range, optionally whitened, written atomically as ``shard-<first>-<end>.npy``
(float32, line numbers 0-based) and then recorded in ``manifest.json`` (also written atomically):
its line and byte range, the SHA-256 of its bytes, its counts of empty lines and all-zero vectors.
Peak memory is one shard (its text and its vectors), independent of the file size.

Resume: a re-run with the same input, encoder description, whitening, range and shard size
reuses every recorded shard whose file is present with the recorded shape and only finite values,
and encodes only the rest (a damaged shard file is re-encoded, with a warning). If the input's
size or mtime changed, recorded shards are re-hashed and reused only if their bytes are
unchanged; a changed shard, another encoder or whitening, or another range or shard size raises
``ValueError`` unless ``overwrite=True`` (which discards the old shards), so outputs of two
configurations are never mixed.

Scale-out (Dask): ``encode_file(..., start_line=a, end_line=b)`` encodes one partition anywhere
(on a worker sharing the file system); give each partition its own directory
``<out>/part-<p>``. :func:`encode_file_delayed` builds one ``dask.delayed`` task per partition of
``partition_lines`` lines (``dask.compute(*tasks)`` runs them on any scheduler, each task is
resumable on its own), and :func:`load_embeddings` on ``<out>`` reads the parts back in line order,
checking that they tile the file with one configuration. A ``dask.bag`` job maps the same way:
``db.from_sequence(ranges).map(lambda r: encode_file(enc, path, out / f"part-{r[0]}", start_line=r[0],
end_line=r[1]))``. On a ``distributed`` cluster, :func:`sentvec.cluster.encode_file_distributed`
writes this module's own layout (the same shards and one manifest) from one task per partition,
loading the model once per worker and surviving worker loss.
"""

from __future__ import annotations

import os
import time
import warnings
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_save_npy, check_free_space, load_npy
from sentvec._locks import DirectoryLock
from sentvec._path_checks import check_input_file, check_output_path
from sentvec._validation import check_positive_int
from sentvec.encode_manifest import MANIFEST_NAME as MANIFEST_NAME
from sentvec.encode_manifest import EncodeManifest as EncodeManifest
from sentvec.encode_manifest import ManifestWriter as ManifestWriter
from sentvec.encode_manifest import RunRecord as RunRecord
from sentvec.encode_manifest import ShardRecord as ShardRecord
from sentvec.encode_manifest import describe_whitening as describe_whitening
from sentvec.encode_manifest import jsonable as jsonable
from sentvec.encode_manifest import read_manifest as read_manifest
from sentvec.encoders.base import Encoder, describe_encoder
from sentvec.line_ranges import read_line_range, scan_lines

#: Encoded (and whitened) at every run; their vectors must match the recorded ones to resume.
PROBE_SENTENCES: tuple[str, ...] = (
    "the city is in the north of the country .",
    "A man is playing a guitar on the stage.",
)
_CHUNK_LINES = 8192  # lines per encoder call inside a shard (progress-bar granularity)
_CHECK_ROWS = 65536  # shard rows checked for non-finite values at a time


# --------------------------------------------------------------------------- encoding


def plan_shards(
    start_line: int, end_line: int, shard_size: int, offsets: dict[int, int]
) -> tuple[tuple[int, int], ...]:
    """Shard boundaries: ``(line, byte offset)`` every ``shard_size`` lines from ``start_line``,
    then ``end_line`` (``offsets`` from :func:`sentvec.line_ranges.scan_lines`)."""
    lines = list(range(start_line, end_line, shard_size)) + [end_line]
    if end_line == start_line:
        lines = [start_line]
    return tuple((ln, offsets[ln]) for ln in lines)


def _shard_name(a: int, b: int) -> str:
    return f"shard-{a:012d}-{b:012d}.npy"


def count_nonfinite(arr: np.ndarray) -> int:
    """NaN and infinite values in ``arr`` (read in blocks of rows: bounded memory on a memmap).

    Parameters
    ----------
    arr : ndarray of shape (n, d), float
    """
    return sum(
        int((~np.isfinite(arr[i : i + _CHECK_ROWS])).sum())
        for i in range(0, arr.shape[0], _CHECK_ROWS)
    )


def _shard_problem(out: Path, rec: ShardRecord, dim: int | None) -> str | None:
    """Why the file of ``rec`` cannot be reused (None: it can)."""
    f = out / rec.file
    if not f.is_file():
        return "missing"
    try:
        arr = load_npy(f, mmap=True)
    except ValueError as exc:  # empty, truncated or not .npy
        return f"unreadable ({exc})"
    if arr.dtype != np.float32 or arr.shape != (rec.end_line - rec.start_line, dim):
        return f"{arr.dtype} {arr.shape}, expected float32 {(rec.end_line - rec.start_line, dim)}"
    bad = count_nonfinite(arr)
    return f"{bad} non-finite values (NaN or infinity)" if bad else None


def check_encode_arguments(
    input_path: str | os.PathLike[str],
    shard_size: Any,
    batch_size: Any,
    start_line: Any,
    end_line: Any,
) -> tuple[Path, int, int | None, int, int | None]:
    """Validated arguments of :func:`encode_file` (and the cluster's encoder): the resolved
    input path, ``shard_size``, ``batch_size``, ``start_line`` and ``end_line``.

    Raises
    ------
    IsADirectoryError, FileNotFoundError, ValueError
        The input is a directory, missing or not a regular file (``check_input_file``), or a
        size or line number is not an integer in range.
    """
    path = check_input_file(input_path, regular=True).resolve()
    shard_size = check_positive_int("shard_size", shard_size)
    if batch_size is not None:
        batch_size = check_positive_int("batch_size", batch_size)
    start_line = check_positive_int("start_line", start_line, minimum=0)
    if end_line is not None:
        end_line = check_positive_int("end_line", end_line, minimum=start_line)
    return path, shard_size, batch_size, start_line, end_line


def _locked_output(func: Any) -> Any:
    """Run ``func(encoder, input_path, output_dir, ...)`` holding ``DirectoryLock(output_dir)``
    (a second writer is refused, naming the holder); ``output_dir`` is checked first, created
    if missing (its parent must exist) and removed again if the call fails leaving it empty."""
    import functools

    @functools.wraps(func)
    def wrapper(encoder: Any, input_path: Any, output_dir: Any, *args: Any, **kwargs: Any) -> Any:
        out = check_output_path(output_dir, what="output directory", kind="dir")
        created = not out.exists()
        out.mkdir(exist_ok=True)
        try:
            with DirectoryLock(out, what="output directory"):
                return func(encoder, input_path, output_dir, *args, **kwargs)
        except BaseException:
            if created and not any(out.iterdir()):
                out.rmdir()
            raise

    return wrapper


@_locked_output
def encode_file(
    encoder: Encoder,
    input_path: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    *,
    shard_size: int = 100_000,
    batch_size: int | None = None,
    whitening: Any = None,
    resume: bool = True,
    overwrite: bool = False,
    start_line: int = 0,
    end_line: int | None = None,
    encoding: str = "utf-8",
    show_progress_bar: bool | None = None,
) -> EncodeManifest:
    """Encode lines ``[start_line, end_line)`` of a text file into float32 ``.npy`` shards.

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode(sentences, *, batch_size, show_progress_bar)`` returning
        ndarray (n, d).
    input_path : path
        UTF-8 (or ``encoding``) text, one sentence per line.
    output_dir : path
        Receives the shards and ``manifest.json``; created if missing.
    shard_size : int
        Lines per shard; peak memory is about one shard of text plus its vectors.
    batch_size : int, optional
        Passed to ``encoder.encode`` (default: the encoder's own).
    whitening : fitted Whitening, path of a saved Whitening or pipeline, or None
        Applied (``transform``) to each shard's vectors before writing (a saved pipeline
        contributes its whitening only; pass the pipeline itself as ``encoder`` to use both).
    resume : bool
        Reuse completed shards of a matching previous run (see module docstring); False re-encodes
        every shard.
    overwrite : bool
        Discard shards written with another configuration or from a changed input instead of
        raising.
    start_line, end_line : int
        0-based line range (end exclusive; None = end of file).
    show_progress_bar : bool or None
        Progress over lines (:func:`sentvec._progress.progress_bar`): None shows a bar when
        stderr is a terminal; True also prints periodic one-line records when it is not.

    Returns
    -------
    EncodeManifest
        The manifest as written; ``runs[-1]`` counts the shards encoded and reused by this call.

    Raises
    ------
    DirectoryLockedError
        (an ``OSError``) Another process is writing ``output_dir`` (the message names its pid
        and host); one writer per directory, the second is refused, never mixed in.
    FileNotFoundError
        Missing input (or whitening path), or a missing parent of ``output_dir`` (the directory
        itself is created).
    IsADirectoryError
        If ``input_path`` is a directory.
    ValueError
        Input that is a symbolic-link loop or not a regular file (a pipe such as ``/dev/stdin``:
        resuming needs a file that can be read twice), bad range or sizes, undecodable line, encoder output of the wrong shape or non-finite,
        or an existing output directory written with another configuration / a changed input
        (unless ``overwrite``).

    Warns
    -----
    UserWarning
        For each recorded shard whose file is missing, unreadable, of the wrong shape or holds
        NaN or infinite values (it is re-encoded), and when lines got all-zero vectors.
    """
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    path, shard_size, batch_size, start_line, end_line = check_encode_arguments(
        input_path, shard_size, batch_size, start_line, end_line
    )
    white = _fitting_whitening(encoder, whitening)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    old = read_manifest(out) if (out / MANIFEST_NAME).is_file() else None
    new = _plan(encoder, white, path, start_line, end_line, shard_size, batch_size)
    done = reusable_shards(old, new, out, overwrite, resume)
    todo = new.n_lines - sum(r.end_line - r.start_line for r in done.values())
    check_free_space(out, 4 * int(new.dim or 0) * todo, what="output directory (its new shards)")
    runs = old.runs if old is not None and old.config_key() == new.config_key() else ()
    writer = ManifestWriter(out, new, done, runs, started=started, t0=t0)
    new = writer.write()  # the directory now describes this configuration
    if old is not None:
        remove_shards(out, old, keep={r.file for r in done.values()})
    caught = _encode_shards(encoder, white, path, writer, batch_size, encoding, show_progress_bar)
    new = writer.write()
    _summarise_warnings(caught, path)
    warn_zero_vectors(new, path, stacklevel=3)  # past _locked_output's wrapper
    return new


def _fitting_whitening(encoder: Encoder, whitening: Any) -> Any:
    """``whitening`` loaded (:func:`sentvec.encoders.load_whitening`), checked against the
    encoder's width before any shard is encoded."""
    from sentvec.encoders import load_whitening

    white = load_whitening(whitening)
    if white is not None:  # a whitening of another width would fail only after a shard
        from sentvec.encoders.base import check_whitening_fits

        check_whitening_fits(encoder, white)
    return white


def _plan(
    encoder: Encoder,
    white: Any,
    path: Path,
    start_line: int,
    end_line: int | None,
    shard_size: int,
    batch_size: int | None,
) -> EncodeManifest:
    """The manifest of this configuration, no shard recorded: the line range's shards and the
    resume probe's vectors."""
    stat = path.stat()
    n_seen, offsets = scan_lines(path, start=start_line, step=shard_size, stop_line=end_line)
    end = n_seen if end_line is None else end_line
    if start_line not in offsets or end not in offsets:
        raise ValueError(
            f"line range [{start_line}, {end_line}) is outside {str(path)!r}, "
            f"which has {n_seen} lines"
        )
    probe = encode_lines(encoder, white, list(PROBE_SENTENCES), batch_size)
    return EncodeManifest(
        input_path=str(path),
        input_size=stat.st_size,
        input_mtime_ns=stat.st_mtime_ns,
        start_line=start_line,
        end_line=end,
        shard_size=shard_size,
        encoder=jsonable(describe_encoder(encoder)),
        whitening=describe_whitening(white),
        dim=int(probe.shape[1]),
        boundaries=plan_shards(start_line, end, shard_size, offsets),
        requested_end_line=end_line,
        probe=tuple(tuple(map(float, v)) for v in probe),
    )


def _encode_shards(
    encoder: Encoder,
    white: Any,
    path: Path,
    writer: ManifestWriter,
    batch_size: int | None,
    encoding: str,
    show_progress_bar: bool | None,
) -> list[warnings.WarningMessage]:
    """Encode the shards the writer's manifest does not record yet, one after the other,
    recording each as it is written; return the warnings the encoder gave."""
    from sentvec._progress import progress_bar

    new, done = writer.manifest, set(writer.completed)
    caught: list[warnings.WarningMessage] = []
    with progress_bar(
        total=new.n_lines, unit="line", show=show_progress_bar, desc=f"encode {path.name}"
    ) as bar:
        for i in range(new.n_shards):
            (a, ba), (b, bb) = new.boundaries[i], new.boundaries[i + 1]
            if i in done:
                bar.update(b - a)
                continue
            writer.completed[i] = encode_shard(
                encoder,
                white,
                path,
                writer.out,
                i,
                a,
                b,
                ba,
                bb,
                batch_size,
                encoding,
                new.dim,
                bar,
                caught,
            )
            writer.n_encoded += 1
            writer.write()
    return caught


def warn_zero_vectors(manifest: EncodeManifest, path: Path | str, *, stacklevel: int = 2) -> None:
    """One UserWarning when lines of ``path`` got all-zero vectors (none when none did): their
    count and how many of them were empty lines. ``encode_file`` and the Dask cluster's
    ``encode_file`` both give it; ``stacklevel`` counts as for a ``warnings.warn`` called where
    this function is."""
    if manifest.n_zero:
        warnings.warn(
            f"{manifest.n_zero} of {manifest.n_lines} lines of {str(path)!r} got all-zero "
            f"vectors ({manifest.n_empty} of them empty)",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def _summarise_warnings(caught: list[warnings.WarningMessage], path: Path) -> None:
    """One warning per category for what the encoder said over all chunks (first message shown)."""
    by_cat: dict[type, list[warnings.WarningMessage]] = {}
    for w in caught:
        by_cat.setdefault(w.category, []).append(w)
    for cat, ws in by_cat.items():
        more = f" (and {len(ws) - 1} similar warnings)" if len(ws) > 1 else ""
        warnings.warn(
            f"while encoding {path.name}, the encoder warned: {ws[0].message}{more}",
            cat,
            stacklevel=3,
        )


def reusable_shards(
    old: EncodeManifest | None, new: EncodeManifest, out: Path, overwrite: bool, resume: bool
) -> dict[int, ShardRecord]:
    """Shards of manifest ``old`` that ``new`` may reuse, by index.

    Raises
    ------
    ValueError
        ``old`` was written with another configuration or from a changed input, and
        ``overwrite`` is False.
    """
    if old is None:
        return {}
    hint = "refusing to mix them (pass overwrite=True / --overwrite to discard them)"
    if old.config_key() != new.config_key():
        diff = [k for k, v in old.config_key().items() if new.config_key()[k] != v]
        if overwrite:
            return {}
        raise ValueError(
            f"{str(out)!r} holds shards written with a different {', '.join(diff)}; " + hint
        )
    same_probe = old.dim == new.dim and np.allclose(old.probe, new.probe, rtol=1e-4, atol=1e-6)
    if not same_probe:
        if overwrite:
            return {}
        if old.dim != new.dim:
            what = f"recorded dimension {old.dim}, this encoder gives {new.dim}"
        else:
            gap = float(np.max(np.abs(np.asarray(old.probe) - np.asarray(new.probe))))
            what = (
                f"same dimension {new.dim}, but this encoder's vectors of the probe "
                f"sentences differ from the recorded ones by up to {gap:.3g}: other "
                "weights under the same description"
            )
        raise ValueError(
            f"{str(out)!r} holds shards from an encoder whose output differs from "
            f"this one's ({what}); " + hint
        )
    if not resume:
        return {}
    changed_input = (old.input_size, old.input_mtime_ns) != (new.input_size, new.input_mtime_ns)
    plan = dict(enumerate(pairwise(new.boundaries)))
    done = {}
    for rec in old.shards:
        same_plan = plan.get(rec.index) == (
            (rec.start_line, rec.start_byte),
            (rec.end_line, rec.end_byte),
        )
        if changed_input and not (
            same_plan
            and rec.sha256
            == read_line_range(new.input_path, rec.start_byte, rec.end_byte, rec.start_line)[1]
        ):
            if overwrite:
                return {}
            raise ValueError(
                f"input {new.input_path!r} changed since {str(out)!r} was written "
                f"(lines {rec.start_line}-{rec.end_line} differ); " + hint
            )
        if not same_plan:
            continue
        problem = _shard_problem(out, rec, old.dim)
        if problem is None:
            done[rec.index] = rec
        else:
            warnings.warn(
                f"shard file {str(out / rec.file)!r} (lines {rec.start_line}-"
                f"{rec.end_line}) is damaged: {problem}; re-encoding it",
                UserWarning,
                stacklevel=3,
            )
    return done


def remove_shards(out: Path, old: EncodeManifest, keep: set[str]) -> None:
    """Delete the shard files of ``old`` in ``out`` whose names are not in ``keep``."""
    for rec in old.shards:
        if rec.file not in keep:
            (out / rec.file).unlink(missing_ok=True)


def encode_lines(
    encoder: Encoder,
    white: Any,
    lines: list[str],
    batch_size: int | None,
    bar: Any = None,
    caught: list[warnings.WarningMessage] | None = None,
) -> np.ndarray:
    """Encode ``lines`` in chunks (progress per chunk), whiten, check; float32 (n, d).

    The one encoding step of a shard, shared by :func:`encode_file` and
    :func:`sentvec.cluster.encode_file_distributed`. The encoder's warnings are collected into ``caught`` (summarised once by the caller) instead of
    being repeated for every chunk.
    """
    parts = []
    for c in range(0, len(lines), _CHUNK_LINES):
        chunk = lines[c : c + _CHUNK_LINES]
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            emb = np.asarray(encoder.encode(chunk, batch_size=batch_size, show_progress_bar=False))
        if caught is not None:
            caught.extend(got)
        else:
            for w in got:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if emb.ndim != 2 or emb.shape[0] != len(chunk):
            raise ValueError(f"encoder returned shape {emb.shape} for {len(chunk)} lines")
        parts.append(emb)
        if bar is not None:
            bar.update(len(chunk))
    emb = np.concatenate(parts)
    if white is not None:
        from sentvec.whitening import whiten_keeping_zero_rows

        emb, _ = whiten_keeping_zero_rows(white, emb)  # zero rows stay zero (and are counted)
    emb = emb.astype(np.float32, copy=False)
    if not np.isfinite(emb).all():
        raise ValueError(
            f"{int((~np.isfinite(emb)).sum())} non-finite values in the encoder output"
        )
    return emb


def encode_shard(
    encoder: Encoder,
    white: Any,
    path: Path,
    out: Path,
    i: int,
    a: int,
    b: int,
    ba: int,
    bb: int,
    batch_size: int | None,
    encoding: str,
    dim: int | None,
    bar: Any,
    caught: list[warnings.WarningMessage] | None,
) -> ShardRecord:
    """Encode shard ``i`` (lines ``[a, b)`` at bytes ``[ba, bb)`` of ``path``), write it atomically
    into ``out`` as ``shard-<a>-<b>.npy`` (float32, shape (b - a, dim)) and return its record.

    The step :func:`encode_file` runs for each shard and the Dask workers of
    :func:`sentvec.cluster.encode_file_distributed` run for theirs.

    Raises
    ------
    ValueError
        The file changed under the run (another line count), the encoder's output has another
        width than ``dim`` or is non-finite.
    """
    t = time.perf_counter()
    lines, digest = read_line_range(path, ba, bb, a, encoding=encoding)
    if len(lines) != b - a:
        raise ValueError(
            f"{str(path)!r} changed while encoding: expected {b - a} lines at "
            f"line {a}, read {len(lines)}"
        )
    emb = encode_lines(encoder, white, lines, batch_size, bar, caught)
    if emb.shape[1] != dim:
        raise ValueError(f"shard {i} has dimension {emb.shape[1]}, the probe had {dim}")
    name = _shard_name(a, b)
    atomic_save_npy(out / name, emb)
    return ShardRecord(
        index=i,
        file=name,
        start_line=a,
        end_line=b,
        start_byte=ba,
        end_byte=bb,
        sha256=digest,
        n_empty=sum(not s.strip() for s in lines),
        n_zero=int((~emb.any(axis=1)).sum()),
        seconds=round(time.perf_counter() - t, 3),
    )


# --------------------------------------------------------------------------- loading / Dask


def _manifests(output_dir: Path) -> list[tuple[Path, EncodeManifest]]:
    if (output_dir / MANIFEST_NAME).is_file():
        return [(output_dir, read_manifest(output_dir))]
    parts = sorted(p.parent for p in output_dir.glob(f"part-*/{MANIFEST_NAME}"))
    if not parts:
        raise FileNotFoundError(f"no {MANIFEST_NAME} in {str(output_dir)!r} or its part-* folders")
    found = sorted(((p, read_manifest(p)) for p in parts), key=lambda pm: pm[1].start_line)
    first = found[0][1]
    for (_, m0), (p1, m1) in pairwise(found):
        if m1.start_line != m0.end_line:
            raise ValueError(
                f"partitions do not tile the file: {str(p1)!r} starts at line "
                f"{m1.start_line}, the previous one ends at {m0.end_line}"
            )
    for p, m in found:
        same = (m.input_path, m.encoder, m.whitening, m.dim) == (
            first.input_path,
            first.encoder,
            first.whitening,
            first.dim,
        )
        if not same:
            raise ValueError(f"{str(p)!r} was written with another input, encoder or whitening")
    return found


def load_embeddings(
    output_dir: str | os.PathLike[str],
    *,
    mmap: bool = True,
    concatenate: bool = True,
    allow_incomplete: bool = False,
) -> np.ndarray | list[np.ndarray]:
    """Read the vectors written by :func:`encode_file` (or its Dask partitions), in line order.

    Parameters
    ----------
    output_dir : path
        A directory with ``manifest.json``, or one whose ``part-*`` sub-directories hold them.
    mmap : bool
        Memory-map the shard files (read-only) instead of reading them.
    concatenate : bool
        Return one (n_lines, d) float32 array (a single shard is returned as is, so it stays
        memory-mapped); False returns the list of shard arrays.
    allow_incomplete : bool
        Return the completed shards of an unfinished run instead of raising.

    Raises
    ------
    FileNotFoundError
        No manifest, or a recorded shard file is missing.
    ValueError
        Unfinished run (unless ``allow_incomplete``), or a shard file that is unreadable, whose
        shape differs from its record, that is not float32, or that holds NaN or infinite
        values (re-running :func:`encode_file` re-encodes such shards).
    """
    arrays = []
    found = _manifests(Path(output_dir))
    for d, m in found:
        if not m.complete and not allow_incomplete:
            raise ValueError(
                f"{str(d)!r} is incomplete: {len(m.shards)} of {m.n_shards} shards "
                "done; re-run encode_file to resume"
            )
        for rec in m.shards:
            f = d / rec.file
            if not f.is_file():
                raise FileNotFoundError(f"shard file missing: {str(f)!r}")
            try:
                arr = load_npy(f, mmap=mmap)
            except ValueError as exc:  # empty, truncated or not .npy; the message names f
                raise ValueError(f"shard {exc}; re-run encode_file to re-encode it") from exc
            if arr.shape != (rec.end_line - rec.start_line, m.dim):
                raise ValueError(
                    f"{str(f)!r} has shape {arr.shape}, its manifest says "
                    f"({rec.end_line - rec.start_line}, {m.dim})"
                )
            if arr.dtype != np.float32:  # encode_file writes float32 only
                raise ValueError(
                    f"shard file {str(f)!r} holds {arr.dtype}, not float32 (not "
                    "written by encode_file); re-run encode_file to re-encode it"
                )
            bad = count_nonfinite(arr)
            if bad:
                raise ValueError(
                    f"shard file {str(f)!r} holds {bad} NaN or infinite values "
                    "(damaged after it was written); re-run encode_file to "
                    "re-encode it"
                )
            arrays.append(arr)
    if not concatenate:
        return arrays
    if len(arrays) == 1:
        return arrays[0]
    if not arrays:  # an empty range: (0, dim) as the encoder gives for no sentences
        return np.zeros((0, found[0][1].dim or 0), np.float32)
    return np.concatenate(arrays)


def encode_file_delayed(
    encoder: Encoder,
    input_path: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    *,
    partition_lines: int,
    n_lines: int | None = None,
    **kwargs: Any,
) -> list[Any]:
    """One ``dask.delayed`` :func:`encode_file` task per partition of ``partition_lines`` lines.

    Partition ``p`` covers lines ``[p * partition_lines, (p + 1) * partition_lines)`` and writes to
    ``<output_dir>/part-<p:05d>``; ``kwargs`` go to :func:`encode_file` (``shard_size`` etc.).
    ``n_lines`` skips the line count when known. Run with ``dask.compute(*tasks)``; read with
    ``load_embeddings(output_dir)``. Each task returns its :class:`EncodeManifest`.
    """
    import dask

    partition_lines = check_positive_int("partition_lines", partition_lines)
    if n_lines is None:
        n_lines = scan_lines(input_path)[0]
    out = Path(output_dir)
    out.mkdir(exist_ok=True)  # the partitions' parent (each partition locks its own folder)
    task = dask.delayed(encode_file, pure=False)
    return [
        task(
            encoder,
            input_path,
            out / f"part-{p:05d}",
            start_line=a,
            end_line=min(a + partition_lines, n_lines),
            **kwargs,
        )
        for p, a in enumerate(range(0, n_lines, partition_lines))
    ]
