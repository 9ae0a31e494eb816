"""Atomic file writes (temp file in the same directory, fsync, then rename) and checked reads."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; rename it onto ``path`` only on success.

    On any exception the temporary file is removed and ``path`` is left untouched, so a reader
    never sees a half-written file.
    """
    if "r" in mode or "a" in mode or "+" in mode:
        raise ValueError(f"atomic_open supports write modes only, got mode={mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_save_npy(path: str | os.PathLike[str], array: np.ndarray) -> None:
    """Write ``array`` to ``path`` in ``.npy`` format (no pickle), atomically."""
    with atomic_open(path, "wb") as fh:
        np.save(fh, np.asarray(array), allow_pickle=False)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON to ``path``, atomically."""
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=False, ensure_ascii=False)
        fh.write("\n")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically."""
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a UTF-8 JSON file that must hold an object (every sentvec config and manifest).

    Raises
    ------
    FileNotFoundError
        If ``path`` is missing.
    ValueError
        If the file is not UTF-8, not JSON, or holds something other than an object; the
        message names the file.
    """
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(p)!r} is not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ValueError(f"{str(p)!r} holds a JSON {type(obj).__name__}, expected an object")
    return obj


def load_npy(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a ``.npy`` file with pickle disabled; clear errors for missing or corrupt files."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"array file not found: {str(p)!r}")
    try:
        return np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{str(p)!r} is not a valid .npy file: {exc}") from exc


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; swap it onto ``path`` only on success.

    Whatever the ``with`` body writes into the yielded directory appears at ``path`` at once.
    An existing ``path`` is first renamed aside and removed after the swap. On any exception the
    temporary directory is removed and ``path`` is left untouched.
    """
    import shutil

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the usual directory mode
        yield tmp
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.replace(target, old / "previous")
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
