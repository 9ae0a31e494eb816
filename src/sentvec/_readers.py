"""Checked reads of the files a model or a config is made of: the regular-file check every
model-file reader makes before opening a file, the one strict JSON reader, and range checks of
integer fields read from JSON.

A FIFO or a device where a model file should be is named for what it is (never "missing", and
never read: a FIFO blocks, ``/dev/zero`` is endless); JSON that does not parse, holds
``NaN`` / ``Infinity`` or another top-level type is an error naming the file and the position,
never silently skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

__all__ = [
    "check_regular_file",
    "json_int",
    "read_json",
    "read_json_object",
    "special_file_kind",
]


def special_file_kind(mode: int) -> str | None:
    """What a ``st_mode`` is, in words, when it is neither a regular file nor a directory
    (``"a FIFO (named pipe)"``, ``"a character device"``, ...); None for those two."""
    import stat as stat_

    for test, kind in (
        (stat_.S_ISFIFO, "a FIFO (named pipe)"),
        (stat_.S_ISCHR, "a character device"),
        (stat_.S_ISBLK, "a block device"),
        (stat_.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    if stat_.S_ISREG(mode) or stat_.S_ISDIR(mode):
        return None
    return "not a regular file"  # pragma: no cover (door, whiteout, ...)


def check_regular_file(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    error: type[Exception] = ValueError,
    missing: type[Exception] = FileNotFoundError,
) -> Path:
    """Check that a file about to be read is a regular file (a symbolic link is followed).

    Every reader of model files calls it before opening one: a FIFO would block the reader, a
    device (``/dev/zero``) would feed it endless bytes, and ``Path.is_file`` alone would call
    either "missing".

    Parameters
    ----------
    path : path-like
    what : str
        How messages name the file (``"tokenizer file"``).
    error : exception class
        Raised when ``path`` exists but is not a regular file.
    missing : exception class
        Raised when nothing is at ``path`` (a dangling symbolic link included).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    missing
        ``"missing tokenizer file '/m/tokenizer.json'"``.
    error
        ``"tokenizer file '/m/tokenizer.json' is a FIFO (named pipe), not a regular file"``; for a
        link, its target too (``"... (a symbolic link to '/dev/zero') is a character device
        ..."``); a symbolic-link loop or an unreadable folder.
    """
    import stat as stat_

    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise missing(f"missing {what} {str(p)!r}") from None
    except OSError as exc:
        raise error(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None
    if not stat_.S_ISREG(mode):
        kind = "a directory" if stat_.S_ISDIR(mode) else special_file_kind(mode)
        link = f" (a symbolic link to {os.path.realpath(p)!r})" if p.is_symlink() else ""
        raise error(f"{what} {str(p)!r}{link} is {kind}, not a regular file")
    return p


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (strict JSON has no NaN or infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not np.isfinite(value):
        raise ValueError(f"the number {text[:40]} overflows a float")
    return value


def read_json(
    path: str | os.PathLike[str],
    *,
    expect: type = dict,
    what: str = "JSON file",
    error: type[Exception] = ValueError,
    missing: type[Exception] = FileNotFoundError,
) -> Any:
    """Read a UTF-8 JSON file strictly: the one JSON reader of every sentvec loader.

    Strict: a syntax error (a trailing comma, binary bytes), ``NaN`` / ``Infinity``, a number
    that overflows a float (``1e999``), or a top-level value of another type than ``expect``
    is an error naming the file (and the line and column of a syntax error); nothing is
    silently skipped. The file must be a regular file (:func:`check_regular_file`).

    Parameters
    ----------
    path : path-like
    expect : type, default dict
        The top-level type (``dict`` for an object, ``list`` for an array).
    what : str
        How the message of a missing or non-regular file names it.
    error : exception class, default ValueError
        Raised for a file that is not strict JSON of the expected type (a loader passes
        ``ModelFormatError``).
    missing : exception class, default FileNotFoundError
        Raised when ``path`` is missing.

    Returns
    -------
    dict or list
        The parsed value, of type ``expect``.

    Raises
    ------
    missing
        ``path`` is missing.
    error
        ``"'/m/config.json' is not valid JSON: Expecting property name enclosed in double
        quotes at line 1 column 38"``, ``"... holds a JSON list, expected an object"``, a
        non-regular file.
    """
    p = check_regular_file(path, what=what, error=error, missing=missing)
    try:
        obj = json.loads(
            p.read_bytes().decode("utf-8"),
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise error(f"{str(p)!r} is not valid JSON: {exc.msg} at {where}") from None
    except UnicodeDecodeError as exc:
        raise error(
            f"{str(p)!r} is not valid JSON: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    except (ValueError, RecursionError) as exc:  # the hooks above; int digits; deep nesting
        raise error(f"{str(p)!r} is not valid JSON: {exc}") from None
    except OSError as exc:
        raise error(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None
    if not isinstance(obj, expect):
        expected = "an object" if expect is dict else f"a {expect.__name__}"
        raise error(f"{str(p)!r} holds a JSON {type(obj).__name__}, expected {expected}")
    return obj


def read_json_object(
    path: str | os.PathLike[str],
    *,
    error: type[Exception] = ValueError,
    missing: type[Exception] = FileNotFoundError,
) -> dict[str, Any]:
    """:func:`read_json` of a file that must hold an object (every sentvec config and manifest).

    Raises
    ------
    missing
        ``path`` is missing (default ``FileNotFoundError``).
    error
        The file is not a regular file, not UTF-8, not strict JSON, or holds something other
        than an object; the message names the file (default ``ValueError``).
    """
    return cast("dict[str, Any]", read_json(path, error=error, missing=missing))


def json_int(
    obj: Mapping[str, Any],
    key: str,
    path: str | os.PathLike[str],
    *,
    default: int | None = None,
    minimum: int = 1,
    maximum: int = 2**31 - 1,
    error: type[Exception] = ValueError,
) -> int | None:
    """The integer ``obj[key]`` read from the JSON file ``path``, checked against a range.

    An absent key gives ``default``, ``null`` gives None. A bool, a float (``1e30``), a string
    or an integer outside ``[minimum, maximum]`` (``10**30`` as ``max_length``) is an error
    naming the file, the key and the range, so that no later step overflows.

    Raises
    ------
    error
        ``"'/m/config.json': max_length=1000000000000000000000000000000 is invalid; expected an
        integer in [1, 2147483647] (or null)"``.
    """
    if key not in obj:
        return default
    value = obj[key]
    if value is not None and (type(value) is not int or not minimum <= value <= maximum):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise error(
            f"{os.fspath(path)!r}: {key}={shown} is invalid; expected an integer in "
            f"[{minimum}, {maximum}] (or null)"
        )
    return value
