"""Atomic file writes (temp file in the same directory, fsync, then rename) and checked reads
(JSON, .npy, UTF-8 text lines)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sys
import tempfile
from collections.abc import Collection, Generator, Iterator, Mapping
from datetime import UTC
from pathlib import Path
from typing import IO, Any, Literal, cast

import numpy as np

from sentvec._readers import check_regular_file, read_json_object, special_file_kind
from sentvec._tempdirs import host_tag as host_tag  # re-exported: its earlier home
from sentvec._tempdirs import owner_tag, remove_dead_entries
from sentvec._tempdirs import pid_alive as pid_alive  # re-exported: its earlier home
from sentvec.exceptions import DirectoryLockedError, DiskFullError


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ temporary files
#: Marks the temporary files and directories of sentvec's atomic writers:
#: ``.<target name>.sentvec-<pid>-<start>-<host tag>-<random><suffix>`` (owner: ``owner_tag``).
TEMP_MARK = "sentvec"
_TEMP_RE = re.compile(
    r"^\.(?P<name>.+)\.sentvec-(?P<pid>[0-9]+)-(?P<start>[0-9]+)-(?P<host>[0-9a-f]{8})"
    r"-[a-z0-9_]+\.(tmp|old)$"
)
#: Names of earlier versions, without the start time: judged by the pid alone.
_PID_ONLY_TEMP_RE = re.compile(
    r"^\.(?P<name>.+)\.sentvec-(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{8})-[a-z0-9_]+\.(tmp|old)$"
)
_swept: set[str] = set()  # directories already swept by this process


def remove_stale_temps(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files and directories that dead sentvec writers left in ``directory``.

    A name made by :func:`make_temp` records the writer's pid, start time and host. An entry
    is removed when its host is this host, its pid is not this process and its writer no longer
    runs (killed with ``kill -9``, crashed, or the machine lost power: cases no signal handler
    covers); a new process that was given the pid is not the writer. Entries of live
    processes, of other hosts, and names not made by :func:`make_temp` (older versions'
    ``.NAME.<random>.tmp`` included: their writer is unknown) are left alone. The rule is
    :func:`sentvec._tempdirs.remove_dead_entries`, shared with the run folders.

    Parameters
    ----------
    directory : path-like

    Returns
    -------
    list of pathlib.Path
        What was removed (nothing when ``directory`` cannot be listed).
    """
    return remove_dead_entries(directory, (_TEMP_RE, _PID_ONLY_TEMP_RE))


def temp_prefix(target: str | os.PathLike[str]) -> str:
    """The name prefix of this process's temporary files for ``target`` (see :data:`TEMP_MARK`)."""
    return f".{Path(target).name}.{TEMP_MARK}-{owner_tag()}-"


def make_temp(
    target: str | os.PathLike[str], *, directory: bool = False, suffix: str = ".tmp"
) -> Any:
    """Create a temporary file (or directory) next to ``target``, for a write renamed onto it.

    Every atomic writer of sentvec names its temporary files here, so that a later run finds
    and removes those of dead processes: the first call of a process for a folder removes
    them first (:func:`remove_stale_temps`).

    Parameters
    ----------
    target : path-like
        The file or directory that will be written; its folder must exist.
    directory : bool
        Make a directory (mode 0700) instead of a file.
    suffix : {".tmp", ".old"}

    Returns
    -------
    (int, str) or pathlib.Path
        ``tempfile.mkstemp``'s open descriptor and path for a file, the path of a directory.
    """
    parent = os.path.dirname(os.path.abspath(os.fspath(target)))
    if parent not in _swept:
        remove_stale_temps(parent)
        _swept.add(parent)
    prefix = temp_prefix(target)
    if directory:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
    return tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=parent)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; rename it onto ``path`` only on success.

    On any exception the temporary file is removed and ``path`` is left untouched, so a reader
    never sees a half-written file. The temporary file is named by :func:`make_temp` (the pid
    of the writer in the name), so one left by a killed process is removed by a later write.
    A full disk (``ENOSPC``) raises an ``OSError`` naming ``path``.
    """
    if "r" in mode or "a" in mode or "+" in mode:
        raise ValueError(f"atomic_open supports write modes only, got mode={mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = make_temp(path)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and is_disk_full(exc):
            raise DiskFullError(
                errno.ENOSPC,
                f"no space left on the device while writing {str(path)!r} "
                f"({exc.strerror or exc}); free space in {str(path.parent)!r} or choose "
                "another location (nothing was written there)",
            ) from exc
        raise


def is_disk_full(exc: BaseException) -> bool:
    """True if ``exc`` is a failed write for lack of space: ``ENOSPC`` / ``EDQUOT``, or numpy's
    short-write message of ``tofile`` / ``np.save`` (``"N requested and M written"``, no
    errno)."""
    if isinstance(exc, DiskFullError):
        return False  # already described
    if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return True
    return bool(re.search(r"\d+ requested and \d+ written", str(exc)))


def check_free_space(path: str | os.PathLike[str], needed: int, *, what: str = "output") -> None:
    """Refuse, before the work, an output of ``needed`` bytes that cannot fit where it goes.

    Parameters
    ----------
    path : path-like
        The output; the free space of the file system holding its folder is checked
        (``shutil.disk_usage``). A file at ``path`` now is not counted as free: the new file
        is written beside it and renamed onto it at the end.
    needed : int
        Bytes the output will take (a lower bound is fine).
    what : str
        How the message names the output.

    Raises
    ------
    DiskFullError
        (an ``OSError``) Less than ``needed`` bytes are free; the message gives both sizes.
    """
    import shutil

    folder = Path(os.path.abspath(os.fspath(path))).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:  # cannot tell: the write itself will say
        return
    if needed > free:
        raise DiskFullError(
            errno.ENOSPC,
            f"{what} {os.fspath(path)!r} needs about {format_bytes(needed)} but only "
            f"{format_bytes(free)} is free in {str(folder)!r}; free space or choose another "
            "location",
        )


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"`` (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def atomic_save_npy(path: str | os.PathLike[str], array: np.ndarray) -> None:
    """Write ``array`` to ``path`` in ``.npy`` format (no pickle), atomically."""
    with atomic_open(path, "wb") as fh:
        np.save(fh, np.asarray(array), allow_pickle=False)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON to ``path``, atomically."""
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=False, ensure_ascii=False)
        fh.write("\n")


def atomic_write_safetensors(
    path: str | os.PathLike[str],
    tensors: Mapping[str, np.ndarray],
    metadata: dict[str, str] | None = None,
) -> None:
    """Write numpy arrays as a ``.safetensors`` file, atomically and with the usual file mode.

    ``safetensors``' own ``save_file`` creates the file with mode 0600; this writes the same
    bytes (``safetensors.numpy.save``) through :func:`atomic_open`, so the file gets
    ``0666 & ~umask`` as every other file sentvec writes.
    """
    from safetensors.numpy import save

    data = save({k: np.ascontiguousarray(v) for k, v in tensors.items()}, metadata=metadata)
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path``, atomically."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically."""
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def load_npy(path: str | os.PathLike[str], *, mmap: bool | str | None = False) -> np.ndarray:
    """Read a ``.npy`` file with pickle disabled; clear errors for missing or corrupt files.

    Parameters
    ----------
    path : path-like
    mmap : bool, {"r", "c"} or None, default False
        Memory-map the file instead of reading it: True or ``"r"`` read-only, ``"c"``
        copy-on-write (numpy's ``mmap_mode``); False or None read it into memory.

    Raises
    ------
    FileNotFoundError
        ``path`` is missing.
    ValueError
        ``path`` is not a regular file (:func:`check_regular_file`) or not a valid ``.npy``
        file (empty, truncated header, pickled objects, ...); the message names it.
    """
    p = check_regular_file(path, what="array file")
    try:
        # numpy checks the mode string itself (ValueError for an unknown one)
        mode = cast("Literal['r', 'c', 'r+', 'w+'] | None", "r" if mmap is True else (mmap or None))
        return np.load(p, mmap_mode=mode, allow_pickle=False)
    except (
        ValueError,
        OSError,
        EOFError,
        SyntaxError,
        TypeError,
        MemoryError,
        OverflowError,
    ) as exc:
        # numpy parses the header with ast.literal_eval (SyntaxError, tokenize.TokenError, a
        # SyntaxError subclass or not, TypeError on odd values) and allocates from its shape
        raise ValueError(f"{str(p)!r} is not a valid .npy file: {exc}") from exc
    except Exception as exc:  # tokenize.TokenError derives from Exception only
        if type(exc).__name__ != "TokenError":
            raise
        raise ValueError(f"{str(p)!r} is not a valid .npy file: {exc}") from exc


def has_marker(
    directory: str | os.PathLike[str], marker: str, marker_format: str | None = None
) -> bool:
    """True if ``directory / marker`` is a file (a JSON object of ``marker_format`` if set)."""
    f = Path(directory) / marker
    if not f.is_file():
        return False
    if marker_format is None:
        return True
    try:
        return read_json_object(f).get("format") == marker_format
    except (OSError, ValueError):
        return False


def check_replaceable_directory(
    path: str | os.PathLike[str],
    *,
    marker: str | None = None,
    marker_format: str | None = None,
    kind: str = "a sentvec",
) -> None:
    """Check that :func:`atomic_directory` may write a directory at ``path``; touch nothing.

    ``path`` may be missing, an empty directory, or a directory holding the file ``marker``
    (one written earlier by the same kind of save, which is then replaced as a whole).

    Parameters
    ----------
    path : path-like
        The target directory.
    marker : str, optional
        Name of the file that identifies a directory of this kind (e.g. ``"pipeline.json"``).
        None: only a missing path or an empty directory may be written.
    marker_format : str, optional
        Also require ``marker`` to hold a JSON object whose ``"format"`` is this value (for
        generic names such as ``config.json``).
    kind : str
        What is saved, with its article, for the messages (``"a sentvec pipeline"``).

    Raises
    ------
    FileExistsError
        If ``path`` is a file (or a broken symbolic link), or a non-empty directory without
        ``marker``: it is not replaced, since that would delete data.
    ValueError
        If ``path`` cannot be replaced by a rename: a filesystem root, a mount point, or the
        current working directory or one of its parents.
    """
    text = os.fspath(path)
    target = Path(os.path.abspath(text))
    if not target.name:
        raise ValueError(
            f"cannot save {kind} at {text!r}: it is a filesystem root; "
            "give a path to a new or empty directory"
        )
    if not os.path.lexists(target):
        return
    if target.is_symlink() and not target.exists():
        raise FileExistsError(
            f"{text!r} is a broken symbolic link; refusing to replace it with "
            f"{kind} directory: give another path or remove it first"
        )
    if not target.is_dir():
        raise FileExistsError(
            f"{text!r} exists and is not a directory; refusing to replace it "
            f"with {kind} directory: give another path or remove it first"
        )
    if not target.is_symlink():  # a symbolic link is renamed aside itself, not what it names
        real = os.path.realpath(target)
        try:
            cwd = os.path.realpath(os.getcwd())
        except OSError:  # the working directory was deleted: it cannot be the target
            cwd = ""
        if cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep):
            raise ValueError(
                f"cannot save {kind} at {text!r}: it is the current working "
                "directory or one of its parents, which cannot be replaced; give a "
                "path to a new or empty subdirectory"
            )
        if os.path.ismount(target):
            raise ValueError(
                f"cannot save {kind} at {text!r}: it is a mount point, which cannot "
                "be replaced; give a path to a new or empty subdirectory"
            )
    if not any(target.iterdir()):
        return
    if marker is not None and has_marker(target, marker, marker_format):
        return
    if marker is None:
        why = "a non-empty directory"
    else:
        fmt = "" if marker_format is None else f" of format {marker_format!r}"
        why = f"a non-empty directory but not {kind} directory (no {marker}{fmt})"
    raise FileExistsError(
        f"{text!r} is {why}; refusing to replace it (its files would be lost): "
        "give a new or empty directory, or remove it first"
    )


@contextlib.contextmanager
def atomic_directory(
    path: str | os.PathLike[str],
    *,
    marker: str | None = None,
    marker_format: str | None = None,
    kind: str = "a sentvec",
) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; swap it onto ``path`` only on success.

    Whatever the ``with`` body writes into the yielded directory appears at ``path`` at once.
    ``path`` must be missing, an empty directory or a directory of the same kind (one holding
    ``marker``, see :func:`check_replaceable_directory`); this is checked before anything is
    written and again just before the swap. An existing ``path`` is renamed aside and removed
    after the swap (put back if the swap fails). On any exception the temporary directory is
    removed and ``path`` is left untouched.

    Parameters
    ----------
    path : path-like
        The directory to write.
    marker, marker_format, kind
        As for :func:`check_replaceable_directory`.

    Raises
    ------
    FileExistsError, ValueError
        From :func:`check_replaceable_directory`, before anything is written.
    """
    import shutil

    check_replaceable_directory(path, marker=marker, marker_format=marker_format, kind=kind)
    target = Path(os.path.abspath(os.fspath(path)))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp(target, directory=True)
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the usual directory mode
        yield tmp
        # again: something may have been written at path while the body ran
        check_replaceable_directory(path, marker=marker, marker_format=marker_format, kind=kind)
        if os.path.lexists(target):
            old = make_temp(target, directory=True, suffix=".old")
            try:
                os.replace(target, old / "previous")
            except BaseException:
                old.rmdir()
                raise
            try:
                os.replace(tmp, target)
            except BaseException:
                os.replace(old / "previous", target)  # put the old directory back
                old.rmdir()
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


#: UTF-8 byte-order mark; dropped at the very start of an input text file by every reader.
UTF8_BOM = b"\xef\xbb\xbf"


def check_input_file(
    path: str | os.PathLike[str], *, what: str = "input", regular: bool = False
) -> Path:
    """Check that an input file can be opened for reading, with one clear message per failure.

    Parameters
    ----------
    path : path-like
    what : str
        How messages name the path.
    regular : bool
        Require a regular file (one that can be scanned twice and whose size and time identify
        it: resumable encoding). False also accepts pipes and character devices
        (``/dev/stdin``, ``/dev/null``), read once as a stream.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        Nothing at ``path`` (a dangling symbolic link included).
    IsADirectoryError
        ``path`` is a directory.
    ValueError
        A symbolic-link loop, or (``regular=True``) a pipe, socket or device.
    PermissionError
        ``path`` exists but is not readable.
    """
    import stat as stat_

    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} file not found: {str(p)!r}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(
                f"{what} {str(p)!r} is a symbolic-link loop; point it at a file"
            ) from None
        raise OSError(exc.errno, f"cannot read {what} {str(p)!r}: {exc.strerror}") from None
    if stat_.S_ISDIR(st.st_mode):
        raise IsADirectoryError(
            f"{what} {str(p)!r} is a directory; give a text file, one sentence per line"
        )
    if regular and not stat_.S_ISREG(st.st_mode):
        raise ValueError(
            f"{what} {str(p)!r} is not a regular file ({special_file_kind(st.st_mode)}); "
            "this command reads its input more than once (line scan, resume), so "
            "save the stream to a file first"
        )
    if not os.access(p, os.R_OK):
        raise PermissionError(f"{what} {str(p)!r} is not readable (permissions)")
    return p


def check_model_path(path: str | os.PathLike[str], *, what: str = "model") -> None:
    """Refuse a model path that is a FIFO, a device or a socket, saying which (a model is read
    more than once and by offset, so only a file or a directory can be one). Missing paths,
    files and directories pass: the loaders say what is wrong with them.

    Raises
    ------
    ValueError
        ``"model '/tmp/f' is a FIFO (named pipe), not a model file or directory; ..."``.
    """
    try:
        st = os.stat(path)
    except OSError:
        return
    kind = special_file_kind(st.st_mode)
    if kind is not None:
        raise ValueError(
            f"{what} {os.fspath(path)!r} is {kind}, not a model file or directory; give a "
            "sent2vec .bin, a model directory or a model name (save a stream to a file first)"
        )


def check_outputs_not_inputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Mapping[str, str | os.PathLike[str] | None],
    *,
    replaced_dirs: Collection[str] = (),
) -> None:
    """Refuse, before any work, an output that is one of the inputs.

    Every command that reads and writes files calls this first: an output that is the same
    file as an input (``os.path.samefile``: the same path, another spelling of it, a hard or
    symbolic link to it) would replace the input with the results (``embed -i a.txt -o a.txt``
    used to turn the text into vectors). Outputs that do not exist yet, ``None`` and ``"-"``
    (stdout / stdin) pass; so do outputs that are not regular files or directories
    (``/dev/stdout``, ``/dev/null``, a FIFO: writing them destroys nothing). An output in
    ``replaced_dirs`` is a directory replaced as a whole (``Sent2Vec.save``, ``export``): an
    input anywhere inside it is refused too.

    Parameters
    ----------
    outputs : mapping of str to path-like or None
        How the message names each output (its option, e.g. ``"--output"``) to its path.
    inputs : mapping of str to path-like or None
        The same for the inputs (files or directories; a model alias that is not a path is
        skipped since nothing exists at it).
    replaced_dirs : collection of str
        Keys of ``outputs`` that are directories replaced whole.

    Raises
    ------
    ValueError
        ``"--output 'a.txt' is the same file as --input 'a.txt'; writing it would destroy
        the input: choose another output path"``.
    """
    import stat as stat_

    real_inputs = []
    for in_name, in_path in inputs.items():
        if in_path is None or os.fspath(in_path) == "-":
            continue
        try:
            os.stat(in_path)
        except (OSError, ValueError):
            continue
        real_inputs.append((in_name, os.fspath(in_path)))
    for out_name, out_path in outputs.items():
        if out_path is None or os.fspath(out_path) == "-":
            continue
        out = os.fspath(out_path)
        try:
            mode = os.stat(out).st_mode
        except (OSError, ValueError):
            continue  # a new output (or one the output checks will refuse)
        if not (stat_.S_ISREG(mode) or stat_.S_ISDIR(mode)):
            continue
        for in_name, inp in real_inputs:
            same = os.path.samefile(out, inp)
            inside = (
                out_name in replaced_dirs
                and stat_.S_ISDIR(mode)
                and _is_inside(os.path.realpath(inp), os.path.realpath(out))
            )
            if same or inside:
                relation = "is the same file as" if same else "is a directory that holds"
                raise ValueError(
                    f"{out_name} {out!r} {relation} {in_name} {inp!r}; writing it would "
                    "destroy the input: choose another output path"
                )


def _is_inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


class TextLineReader:
    """The lines of a UTF-8 text file (``"-"``: stdin), decoded one by one as they are read.

    Lines split on ``b"\\n"`` only (the newline is removed, a ``"\\r"`` before it is kept). A
    UTF-8 byte-order mark at the very start of the stream is dropped (elsewhere it is kept).
    ``n_bad`` counts the lines that needed the ``errors`` handler.

    Parameters
    ----------
    source : str
        A file path, or ``"-"`` for standard input.
    errors : {"strict", "replace", "surrogateescape"}
        Python's codec error handler for lines that are not valid UTF-8.
    hint : str
        Ends the message of a decoding error under ``errors="strict"``.
    what : str
        How the messages name the source when it is missing or a directory.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        When iteration starts, if ``source`` is missing or a directory (pipes and devices such as
        ``/dev/stdin`` and ``/dev/null`` are read as streams).
    ValueError
        A symbolic-link loop (see :func:`check_input_file`); under ``errors="strict"``, for the first line that is not valid UTF-8 (naming the file
        and line).
    """

    def __init__(
        self,
        source: str,
        errors: str,
        hint: str = "use --errors replace or surrogateescape",
        *,
        what: str = "input",
    ) -> None:
        self.source, self.errors, self.hint, self.what, self.n_bad = source, errors, hint, what, 0

    @contextlib.contextmanager
    def _open(self) -> Iterator[IO[bytes]]:
        if self.source == "-":
            yield sys.stdin.buffer
        else:
            with open(check_input_file(self.source, what=self.what), "rb") as fh:
                yield fh

    def decode_line(self, raw: bytes, lineno: int) -> str:
        """The text of line ``lineno`` (its bytes ``raw``, without the newline), decoded as
        iteration decodes it: ``errors`` for bytes that are not valid UTF-8 (counted in
        ``n_bad``; under ``"strict"`` a :class:`ValueError` naming the file and line)."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.errors == "strict":
                raise ValueError(
                    f"{self._name()} line {lineno} is not valid UTF-8 ({exc.reason} at "
                    f"byte {exc.start}); {self.hint}"
                ) from None
            self.n_bad += 1
            return raw.decode("utf-8", self.errors)

    def __iter__(self) -> Generator[str, None, None]:
        with self._open() as fh:
            for lineno, raw in enumerate(fh, 1):
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if lineno == 1 and raw.startswith(UTF8_BOM):
                    raw = raw[len(UTF8_BOM) :]
                yield self.decode_line(raw, lineno)

    def blocks(self, chunk_bytes: int = 1 << 22) -> Generator[tuple[bytes, int], None, None]:
        """The raw bytes of whole lines, about ``chunk_bytes`` at a time, undecoded.

        Yields ``(body, lineno)``: ``body.split(b"\\n")`` are the lines iteration would give
        before decoding (the BOM at the start dropped, no final newline), the first of them
        line ``lineno`` (from 1). Decode them with :meth:`decode_line`.
        """
        lineno = 1
        with self._open() as fh:
            while block := fh.read(chunk_bytes):
                if not block.endswith(b"\n"):
                    block += fh.readline()
                if lineno == 1 and block.startswith(UTF8_BOM):
                    block = block[len(UTF8_BOM) :]
                body = block[:-1] if block.endswith(b"\n") else block
                yield body, lineno
                lineno += body.count(b"\n") + 1

    def _name(self) -> str:
        return "stdin" if self.source == "-" else repr(self.source)


#: Ends the decoding-error message of readers without an ``--errors`` option.
CONVERT_HINT = "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)"


def read_text_lines(
    path: str | os.PathLike[str], *, what: str = "input", max_lines: int | None = None
) -> list[str]:
    """The lines of a UTF-8 text file, as :class:`TextLineReader` reads them (strict), without
    a ``"\\r"`` before the newline; with ``max_lines``, only the first ones are read.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        ``path`` is missing or a directory (the message names ``what``).
    ValueError
        A line read is not valid UTF-8 (the message names the file and line, then how to
        convert it).
    """
    import itertools

    lines = iter(TextLineReader(os.fspath(path), "strict", hint=CONVERT_HINT, what=what))
    try:
        return [
            line[:-1] if line.endswith("\r") else line
            for line in itertools.islice(lines, max_lines)
        ]
    finally:
        lines.close()  # closes the file when fewer than all lines were read


def check_output_path(
    path: str | os.PathLike[str], *, what: str = "output", kind: str = "file"
) -> Path:
    """Check, before any work is done, that an output file or directory can be written.

    The target must not be of the wrong kind, the folder where the write happens must exist
    (missing parent folders are never created: every command refuses them, naming the folder
    to create), and it must accept a new file (tried with a temporary file, removed at once), so
    that a read-only or misspelt location fails before a long computation rather than after it.
    An output directory itself (``kind="dir"`` / ``"whole-dir"``) may be missing: it is created.

    Parameters
    ----------
    path : path-like
    what : str
        How messages name the path (``"--output"``, ``"--out directory"``).
    kind : {"file", "dir", "whole-dir"}
        ``"file"``: a file written at ``path`` through a temporary file next to it (``path`` must
        not be a directory). ``"dir"``: a directory that receives files (``path`` must not be a
        file). ``"whole-dir"``: a directory written next to ``path`` and renamed onto it (as
        ``Sent2Vec.save`` does); whether an existing ``path`` may be replaced is the caller's
        rule.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        If the folder that would hold ``path`` does not exist.
    IsADirectoryError
        If a file is to be written and ``path`` is an existing directory.
    NotADirectoryError
        If a directory is to be written and ``path`` is an existing file, or an ancestor of
        ``path`` is a file.
    PermissionError
        If no file can be created where ``path`` would go (read-only file system, permissions).
    ValueError
        If ``kind`` is not one of the above.
    """
    if kind not in ("file", "dir", "whole-dir"):
        raise ValueError(f"kind={kind!r} is invalid; expected 'file', 'dir' or 'whole-dir'")
    p = Path(path)
    if kind == "dir" and p.exists() and not p.is_dir():
        raise NotADirectoryError(
            f"{what} {str(p)!r} exists and is not a directory; give a directory path"
        )
    if kind == "file" and p.is_dir():
        raise IsADirectoryError(f"{what} {str(p)!r} is an existing directory; give a file path")
    where = p if kind == "dir" and p.is_dir() else p.absolute().parent
    if not where.exists():
        # missing folders are not created silently: a misspelt path fails here, before the work
        top = where
        while not top.parent.exists() and top != top.parent:
            top = top.parent
        if top.parent.exists() and not top.parent.is_dir():
            raise NotADirectoryError(
                f"cannot write {what} {str(p)!r}: {str(top.parent)!r} is not a directory"
            )
        raise FileNotFoundError(
            f"cannot write {what} {str(p)!r}: the folder {str(where)!r} "
            f"does not exist; create it first (mkdir -p {str(where)!r})"
        )
    if not where.is_dir():
        raise NotADirectoryError(
            f"cannot write {what} {str(p)!r}: {str(where)!r} is not a directory"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".sentvec-write-check-", dir=where)
    except OSError as exc:
        raise PermissionError(
            f"cannot write {what} {str(p)!r}: {str(where)!r} is not writable "
            f"({exc.strerror or exc}); choose another location"
        ) from None
    os.close(fd)
    os.unlink(probe)
    return p


# ------------------------------------------------------------------ output-directory locks
#: Name of the lock file :class:`DirectoryLock` keeps in a directory being written.
LOCK_NAME = ".sentvec.lock"


class DirectoryLock:
    """An exclusive lock on a directory being written, held by one process at a time.

    The lock is ``fcntl.flock`` on ``<directory>/.sentvec.lock``, which records the holder
    (pid, host, start time) for the refusal message. The kernel releases a ``flock`` when its
    process dies (``kill -9`` included), so a lock file left by a dead run is stale by
    construction and is simply taken over (no pid guessing; a reused pid cannot fool it). On
    network file systems that do not share ``flock`` between hosts, it excludes only writers on
    the same host.

    Use as a context manager; the lock file is removed on release.

    Raises
    ------
    DirectoryLockedError
        (an ``OSError``) On entry, if another live process holds the lock; the message names its
        pid, host and start time.
    """

    def __init__(self, directory: str | os.PathLike[str], *, what: str = "directory") -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def holder(self) -> dict[str, Any] | None:
        """The holder recorded in the lock file (None when absent or unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def acquire(self) -> DirectoryLock:
        import fcntl
        import socket
        from datetime import datetime

        if self._fd is not None:
            raise RuntimeError("lock already held")
        for _ in range(100):  # retried only when the file was replaced under us
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                h = self.holder() or {}
                raise DirectoryLockedError(
                    f"{self.what} {str(self.directory)!r} is being written by another process "
                    f"(pid {h.get('pid', '?')} on host {h.get('host', '?')}, since "
                    f"{h.get('started', '?')}); wait for it to finish or choose another "
                    f"directory (lock file {str(self.path)!r})"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the previous holder removed the file between our open and flock
                os.close(fd)
                continue
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps(info) + "\n").encode("utf-8"))
            self._fd = fd
            return self
        raise DirectoryLockedError(f"could not lock {str(self.directory)!r}")  # pragma: no cover

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # while still locked: a waiting opener sees a new inode
        os.close(fd)

    def __enter__(self) -> DirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()
