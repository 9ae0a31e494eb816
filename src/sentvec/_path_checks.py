"""Checks of input and output paths, made before any work is done: an input file that can be
read, a model path that exists, outputs that would not overwrite an input, an output file or
directory that can be written. Each failure is one clear message naming the path and the option."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path

from sentvec._readers import special_file_kind


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
