"""The sentvec Sent2Vec model directory format (``config.json``, ``vocab.json``, one ``.npy`` per
array): its names, the check of a save target, its detection, what a directory that is not one
looks like, and the memory checks of loading one (in memory or memory-mapped)."""

from __future__ import annotations

import mmap as mmap_module
import os
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import has_marker

#: ``format`` field of a sentvec Sent2Vec model directory's ``config.json``.
DIR_FORMAT = "sentvec-sent2vec"
DIR_FORMAT_VERSION = 1
_CONFIG, _VOCAB = "config.json", "vocab.json"
_ARRAYS = ("counts", "label_counts", "prune_pairs", "input", "output")


def _mapped_files(arrays: Any) -> list[tuple[mmap_module.mmap, int, str]]:
    """(mmap, bytes of the file the array needs, file name) of each memory-mapped array."""
    found: list[tuple[mmap_module.mmap, int, str]] = []
    for arr in arrays:
        if not isinstance(arr, np.memmap):
            continue
        base = arr.base
        while base is not None and not isinstance(base, mmap_module.mmap):
            base = getattr(base, "base", None) or getattr(base, "obj", None)
        if base is not None:
            found.append((base, int(arr.offset) + int(arr.nbytes), str(arr.filename)))
    return found


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"args value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


def _not_a_model_dir_message(d: Path) -> str:
    """Why directory ``d`` (without ``config.json``) is not a model, naming what it looks like."""
    from sentvec.encoders.base import PIPELINE_FILE

    if (d / PIPELINE_FILE).is_file():
        return (
            f"{str(d)!r} is a saved sentvec pipeline ({PIPELINE_FILE}), not a Sent2Vec "
            "model directory: pass it as --model to `sentvec encode`, `eval-sts`, "
            "`eval-transfer` or `search` (or load it with sentvec.load_encoder); "
            "`sentvec embed` takes Sent2Vec models only"
        )
    if (d / "encoder").is_dir():
        return (
            f"{str(d)!r} looks like a saved sentvec pipeline (it has an encoder/ folder) "
            f"but has no {PIPELINE_FILE} (nor a Sent2Vec {_CONFIG}); restore that file or "
            "save the pipeline again"
        )
    return f"{str(d)!r} is not a sentvec Sent2Vec model directory (no {_CONFIG})"


def check_save_target(directory: str | os.PathLike[str]) -> Path:
    """Check, before any work, that :meth:`Sent2Vec.save` would accept ``directory``.

    ``save`` writes a new directory or replaces an empty directory or a sentvec Sent2Vec model
    directory (the rule of :func:`sentvec._io.check_replaceable_directory` with this format's
    ``config.json``); call this before a long training run so that a bad output path fails at
    once. Nothing is written, and whether the parent directory is writable is not checked.

    Parameters
    ----------
    directory : path-like

    Returns
    -------
    pathlib.Path
        ``directory`` as a path.

    Raises
    ------
    FileExistsError
        If ``directory`` is a file, or a non-empty directory that is not a Sent2Vec model
        directory.
    ValueError
        If ``directory`` cannot be replaced by a rename (a filesystem root, a mount point, the
        working directory or one of its parents).
    """
    from sentvec._io import check_replaceable_directory

    check_replaceable_directory(
        directory, marker=_CONFIG, marker_format=DIR_FORMAT, kind="a Sent2Vec model"
    )
    return Path(directory)


def is_model_dir(d: Path) -> bool:
    """True if ``d`` holds a ``config.json`` of the sentvec Sent2Vec directory format."""
    return has_marker(d, _CONFIG, DIR_FORMAT)


def _check_load_memory(p: Path) -> None:
    """Refuse an in-memory load whose files (matrices, about their size) cannot fit."""
    from sentvec._memory import check_memory

    files = [f for f in p.iterdir() if f.is_file()] if p.is_dir() else [p]
    need = sum(f.stat().st_size for f in files)
    check_memory(
        need,
        what=f"loading {str(p)!r} into memory (mmap=None)",
        drivers=f"the model files hold {need:,} bytes",
        hint="load it memory-mapped (mmap='r', the default; on the command line, "
        "leave out --no-mmap)",
    )
