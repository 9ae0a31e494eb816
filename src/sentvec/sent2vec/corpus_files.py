"""Reading a training corpus file: ``.xz``, ``.gz`` and ``.bz2`` decompressed on the fly, in
blocks of complete lines (or an iterable of lines, batched the same way)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sentvec._text_lines import UTF8_BOM


def open_binary(path: Path):
    """Open a corpus file for binary reading; ``.xz``, ``.gz`` and ``.bz2`` are decompressed."""
    suffix = path.suffix.lower()
    if suffix == ".xz":
        return lzma.open(path, "rb")
    if suffix == ".gz":
        return gzip.open(path, "rb")
    if suffix == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


_BLOCK = 1 << 22  # bytes of complete lines counted at a time


def iter_line_blocks(source: Any, block_bytes: int = _BLOCK) -> Iterator[bytes]:
    """Yield the corpus as byte blocks of complete lines (only the last may lack its newline).

    ``source`` is a path (``.xz``/``.gz``/``.bz2`` decompressed) read ``block_bytes`` at a time,
    without a UTF-8 byte-order mark at its very start, or an iterable of lines (str or bytes),
    each one line (a newline is added when missing).
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"corpus file not found: {str(path)!r}")
        with open_binary(path) as fh:
            rest = b""
            # a UTF-8 byte-order mark at the start of the file is not part of the first word
            # (the official binary would keep it glued to that word)
            head = fh.read(len(UTF8_BOM))
            if head != UTF8_BOM:
                rest = head
            while True:
                chunk = fh.read(block_bytes)
                if not chunk:
                    break
                cut = chunk.rfind(b"\n")
                if cut < 0:
                    rest += chunk
                    continue
                yield rest + chunk[: cut + 1]
                rest = chunk[cut + 1 :]
            if rest:
                yield rest
        return
    if isinstance(source, (bytes, bytearray)):
        raise TypeError("path_or_lines must be a path or an iterable of lines, got bytes")
    batch: list[bytes] = []
    size = 0
    for i, item in enumerate(source):
        if isinstance(item, str):
            item = item.encode("utf-8", "surrogateescape")
        elif not isinstance(item, (bytes, bytearray)):
            raise TypeError(f"line {i} must be str or bytes, got {type(item).__name__}")
        if not item.endswith(b"\n"):
            item = bytes(item) + b"\n"
        batch.append(bytes(item))
        size += len(item)
        if size >= block_bytes:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)
