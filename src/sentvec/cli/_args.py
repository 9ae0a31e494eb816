"""Argument types shared by the sub-commands (argparse ``type=`` callables) and the STS task
loading they share."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def int_at_least(minimum: int) -> Callable[[str], int]:
    """Return a parser of integers ``>= minimum`` that raises ``ArgumentTypeError`` otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    return parse


#: Parser of integers >= 1 (batch sizes, k, n_components).
positive_int = int_at_least(1)


def positive_int_list(text: str) -> list[int]:
    """Comma-separated integers >= 1 (``"8,16,32"``); ``ArgumentTypeError`` otherwise."""
    values = [positive_int(p.strip()) for p in text.split(",") if p.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, got {text!r}")
    return values


#: ``--model`` help of every command that takes any encoder (``sentvec.pipeline.load_encoder``).
MODEL_HELP = ("model alias (minilm, mpnet), Hugging Face directory or hub name already in the "
              "local hub cache (nothing is downloaded), sent2vec .bin or directory, or saved "
              "pipeline (default: minilm)")


#: Short STS task names accepted on the command line (case-insensitive).
STS_TASK_ALIASES = {
    "stsb": "STSBenchmark", "sts-b": "STSBenchmark", "stsbenchmark": "STSBenchmark",
    "sick": "SICKRelatedness", "sick-r": "SICKRelatedness", "sickrelatedness": "SICKRelatedness",
    **{f"sts{y}": f"STS{y}" for y in range(12, 17)},
}


def sts_task_list(text: str) -> list[str]:
    """Comma-separated STS task names or short names (``stsb,sick,sts12``), checked at once.

    Unknown names are an ``ArgumentTypeError`` naming both the full and the short names, so a
    typo fails before any model is loaded.
    """
    from sentvec.evaluation.sts import STS_TASKS

    names = [STS_TASK_ALIASES.get(p.lower(), p) for p in (x.strip() for x in text.split(","))
             if p]
    if not names:
        raise argparse.ArgumentTypeError("expected at least one task name")
    unknown = [n for n in names if n not in STS_TASKS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown STS task(s) {unknown}; expected {list(STS_TASKS)} or the short names "
            f"{sorted(STS_TASK_ALIASES)}")
    return names


def layer_list(text: str) -> tuple[int, ...]:
    """Hidden-state indices ``"1,-1"`` or ``"1+-1"`` (0 = embedding output, -1 = last layer)."""
    parts = [p for p in text.replace("+", ",").split(",") if p.strip()]
    try:
        out = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated hidden-state indices such as 1,-1, got {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one layer index")
    return out


def sts_tasks_for(args: argparse.Namespace, encoder: Any) -> list[Any]:
    """The STS tasks of ``--tasks`` / ``--data`` / ``--variant`` (default: the encoder's text)."""
    from sentvec.encoders.base import text_variant_of
    from sentvec.evaluation.sts import load_sts

    variant = args.variant or text_variant_of(encoder)
    return load_sts(args.tasks, data_dir=args.data, variant=variant)


def check_output_path(path: str | os.PathLike[str], *, what: str = "output",
                      kind: str = "file") -> Path:
    """Check, before any work is done, that an output file or directory can be written.

    The target must not be of the wrong kind, and the directory where the write happens (or its
    nearest existing ancestor, created later) must accept a new file (tried with a temporary
    file, removed at once), so that a read-only or misspelt location fails before a long
    computation rather than after it.

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
        raise NotADirectoryError(f"{what} {str(p)!r} exists and is not a directory; give a "
                                 "directory path")
    if kind == "file" and p.is_dir():
        raise IsADirectoryError(f"{what} {str(p)!r} is an existing directory; give a file path")
    where = p if kind == "dir" and p.is_dir() else p.absolute().parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise NotADirectoryError(f"cannot write {what} {str(p)!r}: {str(where)!r} is not a "
                                 "directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".sentvec-write-check-", dir=where)
    except OSError as exc:
        raise PermissionError(f"cannot write {what} {str(p)!r}: {str(where)!r} is not writable "
                              f"({exc.strerror or exc}); choose another location") from None
    os.close(fd)
    os.unlink(probe)
    return p


def plain_text(doc: str) -> str:
    """A module docstring paragraph for ``--help``: reST literals (double backticks) removed."""
    return doc.replace("``", "")
