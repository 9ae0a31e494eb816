"""Atomic file writes (temp file in the same directory, fsync, then rename), atomic directory
swaps and the checks of a directory about to be replaced, and the checked ``.npy`` reader.

The checks of input and output paths (``_path_checks``), UTF-8 text-line reading
(``_text_lines``) and directory locks (``_locks``) live in their own modules and are importable
from here too."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal, cast

import numpy as np

from sentvec._locks import LOCK_NAME as LOCK_NAME
from sentvec._locks import DirectoryLock as DirectoryLock
from sentvec._path_checks import check_input_file as check_input_file
from sentvec._path_checks import check_model_path as check_model_path
from sentvec._path_checks import check_output_path as check_output_path
from sentvec._path_checks import check_outputs_not_inputs as check_outputs_not_inputs
from sentvec._readers import check_regular_file, read_json_object
from sentvec._tempdirs import host_tag as host_tag  # re-exported: its earlier home
from sentvec._tempdirs import owner_tag, remove_dead_entries
from sentvec._tempdirs import pid_alive as pid_alive  # re-exported: its earlier home
from sentvec._text_lines import CONVERT_HINT as CONVERT_HINT
from sentvec._text_lines import UTF8_BOM as UTF8_BOM
from sentvec._text_lines import TextLineReader as TextLineReader
from sentvec._text_lines import read_text_lines as read_text_lines
from sentvec.exceptions import DirectoryLockedError as DirectoryLockedError
from sentvec.exceptions import DiskFullError


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
