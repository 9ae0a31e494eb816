"""Reading UTF-8 text files line by line (``"-"``: stdin): :class:`TextLineReader`, which
decodes each line as it is read and names the file and line of a bad byte, and
:func:`read_text_lines`."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Generator, Iterator
from typing import IO

from sentvec._path_checks import check_input_file

#: UTF-8 byte-order mark; dropped at the very start of an input text file by every reader.
UTF8_BOM = b"\xef\xbb\xbf"


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
