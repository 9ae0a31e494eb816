"""Line ranges of large text files: count lines and find byte offsets, read a range back.

What sharded and distributed encoding (``encode_files``, ``cluster``) and the search index read
their input with: a file is addressed by line numbers, each shard by the byte range of its lines,
so a range can be read anywhere (another process, another machine) without reading the rest.
Only ``\n`` ends a line; a UTF-8 byte-order mark at byte 0 is not part of the first line.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from sentvec._text_lines import UTF8_BOM
from sentvec._validation import check_positive_int

__all__ = ["scan_lines", "iter_line_chunks", "read_line_range"]

_SCAN_BLOCK = 4 * 2**20  # bytes per read while counting lines (bounds the scan's memory)


def scan_lines(
    path: str | os.PathLike[str],
    *,
    start: int = 0,
    step: int | None = None,
    stop_line: int | None = None,
) -> tuple[int, dict[int, int]]:
    """Count lines and find where lines ``start, start + step, ...`` begin, streaming the file.

    Parameters
    ----------
    path : path
    start, step : int
        Offsets are returned for lines ``start + j * step`` (only ``start`` when ``step`` is None)
        and for the line count itself (mapped to the file size).
    stop_line : int, optional
        Also return this line's offset, and stop reading once it is found.

    Returns
    -------
    n_lines : int
        Lines counted (``stop_line`` when stopped early at it).
    offsets : dict line -> byte offset
    """
    offsets: dict[int, int] = {}

    def want(line: int) -> bool:
        if line == stop_line:
            return True
        if line < start:
            return False
        return line == start if step is None else (line - start) % step == 0

    if want(0):
        offsets[0] = 0
    count, pos, last = 0, 0, b"\n"
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_SCAN_BLOCK)
            if not block:
                break
            nl = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
            # newline j of this block ends line count + j; line count + j + 1 starts after it
            lo, hi = count + 1, count + len(nl)
            cands: set[int] = set()
            if step is not None and hi >= max(lo, start):
                first = start + max(0, -(-(lo - start) // step)) * step
                cands.update(range(first, hi + 1, step))
            elif start >= lo:
                cands.add(start)
            if stop_line is not None:
                cands.add(stop_line)
            for line in cands:
                if lo <= line <= hi:
                    offsets[line] = pos + int(nl[line - lo]) + 1
            if stop_line is not None and stop_line in offsets:
                return stop_line, offsets
            count, pos, last = hi, pos + len(block), block[-1:]
    n_lines = count + (last != b"\n")
    offsets[n_lines] = pos  # the line after the last one "starts" at the end of the file
    return n_lines, offsets


def _is_utf8(encoding: str) -> bool:
    import codecs

    return codecs.lookup(encoding).name == "utf-8"


def _split_lines(
    raw: bytes, first_line: int, encoding: str, path: Any, *, file_start: bool = False
) -> list[str]:
    """Decode ``raw`` (whole lines); ``file_start``: ``raw`` begins the file (BOM dropped)."""
    if file_start and raw.startswith(UTF8_BOM) and _is_utf8(encoding):
        raw = raw[len(UTF8_BOM) :]
    parts = raw.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    out = []
    for i, b in enumerate(parts):
        if b.endswith(b"\r"):
            b = b[:-1]
        try:
            out.append(b.decode(encoding))
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{str(path)!r} line {first_line + i + 1} is not valid {encoding}: "
                f"{exc.reason} at byte {exc.start}"
            ) from None
    return out


def iter_line_chunks(
    path: str | os.PathLike[str], chunk_lines: int, *, encoding: str = "utf-8"
) -> Iterator[list[str]]:
    """Stream the lines of ``path`` (this module's line convention) in lists of ``chunk_lines``."""
    chunk_lines = check_positive_int("chunk_lines", chunk_lines)
    chunk: list[bytes] = []
    first = 0
    with open(path, "rb") as fh:
        for raw in fh:
            chunk.append(raw)
            if len(chunk) == chunk_lines:
                yield _split_lines(b"".join(chunk), first, encoding, path, file_start=first == 0)
                first += len(chunk)
                chunk = []
    if chunk:
        yield _split_lines(b"".join(chunk), first, encoding, path, file_start=first == 0)


def read_line_range(
    path: str | os.PathLike[str],
    start_byte: int,
    end_byte: int,
    first_line: int,
    *,
    encoding: str = "utf-8",
) -> tuple[list[str], str]:
    """Lines in bytes ``[start_byte, end_byte)`` of ``path`` and the SHA-256 of those bytes.

    ``first_line`` (0-based) is used only to name the line in decoding errors (1-based). The
    digest covers the bytes as they are; a UTF-8 byte-order mark at byte 0 is left out of the
    lines.
    """
    with open(path, "rb") as fh:
        fh.seek(start_byte)
        raw = fh.read(end_byte - start_byte)
    if len(raw) != end_byte - start_byte:
        raise ValueError(f"{str(path)!r} is shorter than expected (changed while reading?)")
    return (
        _split_lines(raw, first_line, encoding, path, file_start=start_byte == 0),
        hashlib.sha256(raw).hexdigest(),
    )


# --------------------------------------------------------------------------- whitening
