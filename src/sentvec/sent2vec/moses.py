"""The reference recipe's Moses tokenizer, compiled: sacremoses' tokens at kernel speed.

:class:`MosesTokenizer` gives, for every line, exactly the tokens of sacremoses
``MosesTokenizer("en").tokenize(line, escape=False)`` (optionally lower-cased with
:meth:`str.lower`), the preparation of the reference corpus and of the SentEval STS files
(``shared/data/MANIFEST.md``). A batch of lines is encoded once to UTF-32 and tokenized by the
numba kernels of :mod:`sentvec.sent2vec._moses` (the same ordered rewrite rules as sacremoses,
with its own Unicode classes and nonbreaking prefixes), in parallel threads without the GIL.
:meth:`MosesTokenizer.tokenize_utf8` takes UTF-8 bytes and gives UTF-8 bytes, decoding,
lower-casing and encoding in the kernels too (:mod:`sentvec.sent2vec._moses_utf8`); it is what
``sentvec tokenize`` runs, and :meth:`MosesTokenizer.tokenize_lines` hands it every batch whose
lines hold no newline and no lone surrogate (the rest take the UTF-32 path).

Exactness: the classes (IsAlnum, IsAlpha, IsN, IsLower) and the English nonbreaking prefixes
are read from the installed sacremoses, and the rules are those of sacremoses 0.2.0
(:data:`VERIFIED_SACREMOSES`, checked line by line on the 1M-sentence reference corpus and the
STS raw files by ``bench/moses_identity.py``). A line the kernel cannot handle (its
intermediate text outgrows the scratch buffer) is tokenized by sacremoses itself and counted in
:attr:`MosesTokenizer.n_fallback`; with another sacremoses version every line is (with a
:class:`UserWarning`), so the tokens stay sacremoses' own.

The class tables are built once from sacremoses (about a second, mostly its import) and cached
under ``$SENTVEC_CACHE/moses/`` (default ``~/.cache/sentvec``), keyed by the sacremoses and
Unicode versions; later processes load them in milliseconds without importing sacremoses.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._parallel import available_cpus, fan_out, piece_bounds

#: sacremoses versions whose English rules the kernels implement (identity-checked).
VERIFIED_SACREMOSES: tuple[str, ...] = ("0.2.0",)
#: Bumped when the cached table layout changes.
_TABLES_FORMAT = 3
#: Whether this process has called the kernels once (:meth:`MosesTokenizer.load`).
_kernels_loaded = False


def sacremoses_version() -> str | None:
    """The installed sacremoses version (read from its metadata, without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sacremoses")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def _sacremoses() -> Any:
    from sacremoses import MosesTokenizer as SacreMosesTokenizer

    return SacreMosesTokenizer(lang="en")


def sacremoses_tokens(line: str, *, lowercase: bool = False) -> list[str]:
    """The reference: sacremoses ``MosesTokenizer("en").tokenize(line, escape=False)``.

    Parameters
    ----------
    line : str
    lowercase : bool, default False
        Apply :meth:`str.lower` to each token (the reference corpus recipe).

    Returns
    -------
    list of str
    """
    toks = _sacremoses().tokenize(line, escape=False)
    return [t.lower() for t in toks] if lowercase else toks


@dataclass(frozen=True)
class _Tables:
    flags: np.ndarray  # uint8 (0x110000,), bits of sentvec.sent2vec._moses
    prefixes: np.ndarray  # uint32, the prefixes' code points back to back
    prefix_offsets: np.ndarray  # int64 (P + 1,)
    prefix_kind: np.ndarray  # uint8 (P,), NONBREAKING or NUMERIC_ONLY
    lower: np.ndarray  # uint32 (0x110000,), str.lower per code point or LOWER_IN_PYTHON


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _build_tables() -> tuple[np.ndarray, dict[str, int]]:
    """Flags from sacremoses' classes and Python's ``\\s``; prefix kinds from its lists."""
    from sentvec.sent2vec import _moses as k

    tok = _sacremoses()
    flags = np.zeros(0x110000, dtype=np.uint8)
    for chars, bit in (
        (tok.IsAlnum, k.ALNUM),
        (tok.IsAlpha, k.ALPHA),
        (tok.IsN, k.NUMBER),
        (tok.IsLower, k.LOWER),
    ):
        flags[_codepoints(chars)] |= bit
    # sacremoses matches whitespace with re's \s: Python's own Unicode whitespace
    everything = "".join(map(chr, range(0x110000)))
    spaces = "".join(re.findall(r"\s", everything))
    flags[_codepoints(spaces)] |= k.SPACE
    numeric = set(tok.NUMERIC_ONLY_PREFIXES)
    kinds = {p: k.NUMERIC_ONLY for p in numeric}
    for p in tok.NONBREAKING_PREFIXES:
        if p not in numeric and not any(ch.isspace() for ch in p):
            kinds[p] = k.NONBREAKING
    return flags, kinds


def _lower_changes() -> dict[str, list[int]]:
    """The code points :meth:`str.lower` changes: ``"to_one"`` pairs ``[c, lower(c)]`` and
    ``"in_python"``, those not lower-cased to one code point on their own (U+0130 gives two
    characters; U+03A3 gives final or medial sigma depending on its neighbours)."""
    to_one: list[int] = []
    in_python: list[int] = []
    for c in range(0x110000):
        ch = chr(c)
        low = ch.lower()
        if c == 0x3A3 or len(low) != 1:
            in_python.append(c)
        elif low != ch:
            to_one += [c, ord(low)]
    return {"to_one": to_one, "in_python": in_python}


def _lower_table(changes: dict[str, list[int]]) -> np.ndarray:
    from sentvec.sent2vec import _moses_utf8 as k

    lower = np.arange(0x110000, dtype=np.uint32)
    pairs = np.asarray(changes["to_one"], dtype=np.int64).reshape(-1, 2)
    lower[pairs[:, 0]] = pairs[:, 1]
    lower[np.asarray(changes["in_python"], dtype=np.int64)] = k.LOWER_IN_PYTHON
    return lower


def _digest(flags: np.ndarray, lower: np.ndarray) -> str:
    return hashlib.sha256(flags.tobytes() + lower.tobytes()).hexdigest()


def _tables_path(version: str) -> Path:
    from sentvec._environment import default_cache_dir

    tag = f"en-v{_TABLES_FORMAT}-sacremoses{version}-unicode{unicodedata.unidata_version}"
    return default_cache_dir() / "moses" / tag


def _pack(flags: np.ndarray, kinds: dict[str, int], lower: np.ndarray) -> _Tables:
    names = sorted(kinds)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in names], out=offsets[1:])
    return _Tables(
        flags=flags,
        prefixes=_codepoints("".join(names)) if names else np.zeros(1, np.uint32),
        prefix_offsets=offsets,
        prefix_kind=np.array([kinds[p] for p in names], dtype=np.uint8),
        lower=lower,
    )


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    """The tables, from the disk cache or built (and cached; a failed write only warns)."""
    from sentvec._io import atomic_save_npy, atomic_write_json, load_npy
    from sentvec._readers import read_json_object

    version = sacremoses_version() or "none"
    stem = _tables_path(version)
    npy, meta = stem.with_suffix(".npy"), stem.with_suffix(".json")
    try:
        stored = read_json_object(meta)
        flags = load_npy(npy)
        if flags.shape == (0x110000,) and flags.dtype == np.uint8:
            lower = _lower_table(stored["lower"])
            if _digest(flags, lower) == stored["sha256"]:  # a damaged file is rebuilt, never used
                kinds = {str(p): int(v) for p, v in stored["prefixes"].items()}
                return _pack(flags, kinds, lower)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        pass
    flags, kinds = _build_tables()
    changes = _lower_changes()
    lower = _lower_table(changes)
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        atomic_save_npy(npy, flags)
        atomic_write_json(
            meta,
            {
                "sacremoses": version,
                "sha256": _digest(flags, lower),
                "prefixes": kinds,
                "lower": changes,
            },
        )
    except OSError as exc:
        warnings.warn(
            f"could not cache the Moses tables under {str(stem.parent)!r} ({exc}); they are "
            "rebuilt by the next process",
            UserWarning,
            stacklevel=3,
        )
    return _pack(flags, kinds, lower)


def _decode_line(raw: bytes, i: int, decode: Callable[[bytes, int], str] | None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if decode is None:
            return raw.decode("utf-8", "surrogateescape")
        return decode(raw, i)


def _encode_utf8(text: str) -> bytes:
    """UTF-8, with the surrogates of ``surrogateescape`` written back as their bytes (other lone
    surrogates as they are)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


class MosesTokenizer:
    """sacremoses' English Moses tokenizer (``escape=False``), compiled, with exact fallback.

    Parameters
    ----------
    lowercase : bool, default False
        Lower-case the tokens (:meth:`str.lower`, as the reference corpus recipe does).
    num_threads : int, optional
        Threads for the (GIL-free) kernel; default: the CPUs available to this process.

    Attributes
    ----------
    n_lines, n_fallback : int
        Lines tokenized so far, and how many of them sacremoses itself tokenized.
    n_in_python : int
        Lines :meth:`tokenize_utf8` handed to :meth:`tokenize_lines` (see there).
    compiled : bool
        False when the installed sacremoses is not one of :data:`VERIFIED_SACREMOSES` (every
        line then goes to sacremoses).

    Notes
    -----
    Source: Koehn et al.'s ``tokenizer.perl`` as ported by sacremoses (``MosesTokenizer.tokenize``
    with ``lang="en"``, ``escape=False``, no aggressive dash splits, no protected patterns).
    """

    def __init__(self, *, lowercase: bool = False, num_threads: int | None = None) -> None:
        from sentvec._validation import check_positive_int

        self.lowercase = bool(lowercase)
        self.num_threads = (
            available_cpus()
            if num_threads is None
            else check_positive_int("num_threads", num_threads)
        )
        version = sacremoses_version()
        self.compiled = version in VERIFIED_SACREMOSES
        if not self.compiled:
            warnings.warn(
                f"sacremoses {version} is not a version the compiled Moses tokenizer was "
                f"checked against ({', '.join(VERIFIED_SACREMOSES)}); tokenizing with "
                "sacremoses itself (exact, slower)",
                UserWarning,
                stacklevel=2,
            )
        self.n_lines = 0
        self.n_fallback = 0
        self.n_in_python = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MosesTokenizer(lowercase={self.lowercase}, num_threads={self.num_threads})"

    def _reference(self, line: str) -> str:
        return " ".join(sacremoses_tokens(line, lowercase=self.lowercase))

    def tokenize_text(self, lines: Sequence[str]) -> tuple[str, list[int]]:
        """Tokenize ``lines``; each line's tokens joined by single spaces, lines by ``"\\n"``.

        Parameters
        ----------
        lines : sequence of str
            One sentence per item (a newline inside an item is whitespace, as in sacremoses).

        Returns
        -------
        text : str
            ``"\\n".join(...)`` of the tokenized lines, with a trailing ``"\\n"`` after the
            last line (empty for no lines). The lines left to sacremoses are empty in it.
        fallback : list of int
            Indices of the lines the kernel left to sacremoses (see :meth:`tokenize_lines`,
            which fills them in).
        """
        from sentvec.sent2vec import _moses as k

        n = len(lines)
        if n == 0:
            return "", []
        if not self.compiled:
            return "\n" * n, list(range(n))
        if not _kernels_loaded:
            self.load()
        tables = _tables()
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, lines), dtype=np.int64, count=n), out=offsets[1:])
        data = _codepoints("".join(lines))
        if data.size == 0:
            data = np.zeros(1, dtype=np.uint32)
        out = np.empty(2 * int(offsets[-1]) + n, dtype=np.uint32)
        out_len = np.empty(n, dtype=np.int64)
        args = (tables.flags, tables.prefixes, tables.prefix_offsets, tables.prefix_kind)
        fan_out(
            lambda a, b: k.tokenize_range(data, offsets, a, b, *args, out, out_len),
            piece_bounds(n, self.num_threads),
        )
        joined = np.empty(int(np.maximum(out_len, 0).sum()) + n, dtype=np.uint32)
        m = k.gather(offsets, out, out_len, 10, joined)
        text = joined[:m].tobytes().decode("utf-32-le", "surrogatepass")
        if self.lowercase:
            text = text.lower()
        fallback = np.flatnonzero(out_len < 0).tolist()
        return text, fallback

    def tokenize_lines(self, lines: Sequence[str]) -> list[str]:
        """Tokenize ``lines``: each line's tokens joined by single spaces.

        Parameters
        ----------
        lines : sequence of str

        Returns
        -------
        list of str
            ``" ".join(sacremoses tokens)`` per line (lower-cased if :attr:`lowercase`); ``""``
            for a line without tokens.
        """
        n = len(lines)
        if self.compiled and n:
            joined = "\n".join(lines)
            try:  # lone surrogates (no UTF-8) and newlines inside a line take the str path
                data = joined.encode("utf-8") if joined.count("\n") == n - 1 else None
            except UnicodeEncodeError:
                data = None
            if data is not None:  # one UTF-8 block: lower-cased in the kernel, no str.lower
                text, _, n_left = self._utf8(data, None)
                with self._lock:
                    self.n_lines += n - n_left  # the lines left were counted by _lines_str
                return text.decode("utf-8").split("\n")[:-1]
        return self._lines_str(lines)

    def _lines_str(self, lines: Sequence[str]) -> list[str]:
        """:meth:`tokenize_lines` through :meth:`tokenize_text` (UTF-32 kernel, ``str.lower``)."""
        text, fallback = self.tokenize_text(lines)
        out = text.split("\n")[:-1] if text else []
        for i in fallback:
            out[i] = self._reference(lines[i])
        with self._lock:
            self.n_lines += len(lines)
            self.n_fallback += len(fallback)
        return out

    def tokenize_utf8(
        self, data: bytes, decode: Callable[[bytes, int], str] | None = None
    ) -> bytes:
        """Tokenize the UTF-8 lines of ``data``, bytes in, bytes out.

        The kernel decodes each line, tokenizes it, lower-cases it (if asked) and writes it as
        UTF-8, in parallel threads: no Python string is made for a line, except for the few
        it leaves to :meth:`tokenize_lines` (Notes). The tokens are those of
        :meth:`tokenize_lines` on the decoded lines.

        Parameters
        ----------
        data : bytes
            The lines are ``data.split(b"\\n")``: ``b""`` is one empty line, and a final
            newline starts one more, empty line (strip it first). Blocks of a few MB suit it
            (``sentvec tokenize`` passes 4 MB): the output buffer reserves 8 bytes per input
            byte, of which only what is written gets touched.
        decode : callable, optional
            ``decode(raw, i)`` gives the text of line ``i`` (its bytes ``raw``) when they are
            not valid UTF-8; it may raise, which stops the call. Default:
            ``raw.decode("utf-8", "surrogateescape")``.

        Returns
        -------
        bytes
            Each line's tokens joined by single spaces and followed by ``b"\\n"``, in UTF-8
            (surrogates that ``surrogateescape`` made are written back as their bytes).

        Notes
        -----
        Lines left to :meth:`tokenize_lines`, and counted in :attr:`n_in_python`: those that are
        not valid UTF-8 (decoded by ``decode``), those with a character whose lower case is not
        one code point on its own (U+0130 lower-cases to two; U+03A3 to final or medial sigma
        depending on its neighbours), when lower-casing, and those the kernel cannot handle.
        The other characters are lower-cased through a table made from :meth:`str.lower` of
        each code point, so the output equals :meth:`str.lower` of the tokens.
        """
        text, n, n_left = self._utf8(data, decode)
        with self._lock:
            self.n_lines += n - n_left
            self.n_in_python += n_left
        return text

    def _utf8(
        self, data: bytes, decode: Callable[[bytes, int], str] | None
    ) -> tuple[bytes, int, int]:
        """:meth:`tokenize_utf8`, without counting its lines: (output, lines, lines left)."""
        from sentvec.sent2vec import _moses_utf8 as k

        buf = np.frombuffer(data, dtype=np.uint8)
        starts = k.line_starts(buf)
        n = starts.size - 1
        out = np.empty(k.utf8_region(starts, n), dtype=np.uint8)
        out_start = np.zeros(n, dtype=np.int64)
        status = np.ones(n, dtype=np.uint8)
        bounds, ends = [0, n], [0]
        if self.compiled:
            if not _kernels_loaded:
                self.load()
            t = _tables()
            args = (t.flags, t.prefixes, t.prefix_offsets, t.prefix_kind, t.lower)
            rest = (bool(self.lowercase), out, out_start, status)
            bounds = piece_bounds(n, self.num_threads)
            ends = fan_out(
                lambda a, b: k.tokenize_utf8_range(buf, starts, a, b, *args, *rest), bounds
            )
        view = out.data
        left = np.flatnonzero(status).tolist()
        done: list[str] = []
        if left:
            done = self._lines_str(
                [_decode_line(data[starts[i] : starts[i + 1] - 1], i, decode) for i in left]
            )
        pieces: list[bytes | memoryview] = []
        j = 0
        for a, b, end in zip(bounds[:-1], bounds[1:], ends, strict=True):
            cur = k.utf8_region(starts, a)
            while j < len(left) and left[j] < b:
                at = int(out_start[left[j]])
                pieces += [view[cur:at], _encode_utf8(done[j]) + b"\n"]
                cur, j = at, j + 1
            pieces.append(view[cur:end])
        return b"".join(pieces), n, len(left)

    def tokenize(self, line: str) -> list[str]:
        """Tokens of one line (as :func:`sacremoses_tokens`, lower-cased if asked)."""
        if not isinstance(line, str):
            raise TypeError(f"line must be str, got {type(line).__name__}")
        (text,) = self.tokenize_lines([line])
        return text.split(" ") if text else []

    def load(self) -> None:
        """Load the tables and the kernels now (numba compiles them on a first run, about 10 s,
        saying so on stderr: :func:`sentvec._jit.compiling_notice`). The first tokenizing call
        of a process calls it."""
        global _kernels_loaded
        if self.compiled and not _kernels_loaded:
            from sentvec._jit import COMPILE_SECONDS, compiling_notice

            _kernels_loaded = True  # first: the calls below would come back here
            with compiling_notice(expected=COMPILE_SECONDS["moses"]):
                self.tokenize_text(["a"])
                self._utf8(b"a", None)
