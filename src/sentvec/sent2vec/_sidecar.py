"""The dictionary index of an official ``.bin``: a sidecar file of plain arrays beside the model.

What reading a ``.bin``'s dictionary produces (the words' bytes end to end and their offsets,
the counts, the labels, and the word-id hash table of :meth:`Dictionary.word_table`) is written
once, after the first read, to ``MODEL.bin.sentvec-index`` beside the model, or under
``$SENTVEC_CACHE/sent2vec-index/`` when the model's directory is not writable. Later loads read
these arrays in one go instead of walking 1-3 M entries and building the hash table.

Layout: 8 bytes magic ``b"SVS2VIDX"``, uint32 format version, uint32 length of a UTF-8 JSON
header, the header, then the arrays, each 64-byte aligned, at the offsets the header gives.

Never trusted stale or damaged. The header records the ``.bin``'s size, ``st_mtime_ns`` and the
CRC-32 of its bytes up to the end of the dictionary (signature, args, dictionary header and
entries, prune pairs), all re-checked on every load, and the CRC-32 of the arrays. A mismatch
or an unreadable file gives a :class:`SidecarWarning`; the dictionary is then read from the
``.bin`` and the index rewritten. Writes are atomic (temporary file, then rename); a failure to
write is silent (the index is an optimisation) and a read-only cache is fine.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_open
from sentvec.exceptions import SidecarWarning
from sentvec.sent2vec.dictionary import Dictionary, decode_words

MAGIC = b"SVS2VIDX"
FORMAT = "sentvec-sent2vec-index"
VERSION = 1
SUFFIX = ".sentvec-index"
#: Sub-directory of the sentvec cache used when the model's directory is not writable.
CACHE_SUBDIR = "sent2vec-index"
#: Dictionaries smaller than this are read from the ``.bin`` only: they take milliseconds.
MIN_WORDS = 100_000
_PREFIX = struct.Struct("<8sII")
_ALIGN = 64
#: The arrays of an index and their dtypes (little-endian, as the ``.bin``).
_ARRAYS = {
    "wbytes": "|u1",
    "offsets": "<i8",
    "counts": "<i8",
    "lbytes": "|u1",
    "loffsets": "<i8",
    "table": "<i4",
}
_MAX_HEADER = 1 << 20


def candidates(bin_path: Path) -> list[Path]:
    """Where the index of ``bin_path`` may be: beside it, then in the sentvec cache."""
    from sentvec._environment import default_cache_dir

    real = os.path.realpath(bin_path)
    key = hashlib.sha256(os.fsencode(real)).hexdigest()[:32]
    return [
        Path(real + SUFFIX),
        default_cache_dir() / CACHE_SUBDIR / f"{key}-{Path(real).name}{SUFFIX}",
    ]


def bin_digest(head: memoryview, end: int) -> int:
    """CRC-32 of bytes ``[0, end)`` of the ``.bin`` (``head`` starts at file byte 0)."""
    return zlib.crc32(head[:end])


def load(
    bin_path: Path,
    st: os.stat_result,
    prefix: Callable[[int], memoryview | None],
    header: dict[str, int],
    args: dict[str, Any],
) -> tuple[Dictionary, int] | None:
    """The dictionary from a valid index of ``bin_path``, and the file offset after the
    dictionary (prune pairs included); None when there is none, or when it is stale or damaged
    (a :class:`SidecarWarning`). ``st`` is the ``.bin``'s ``fstat``; ``prefix(end)`` gives its
    bytes ``[0, end)`` (None past its end); ``header`` its dictionary header, ``args`` its args.
    """
    for path in candidates(bin_path):
        try:
            fh = open(path, "rb")
        except OSError:
            continue
        try:
            with fh:
                return _read(fh, st, prefix, header, args)
        except (_Stale, OSError) as exc:
            warnings.warn(
                f"{str(path)!r}: the dictionary index of {str(bin_path)!r} is {exc}; "
                "reading the dictionary from the .bin and rewriting the index",
                SidecarWarning,
                stacklevel=5,
            )
            return None
    return None


class _Stale(Exception):
    pass


def _read(
    fh: Any,
    st: os.stat_result,
    prefix: Callable[[int], memoryview | None],
    header: dict[str, int],
    args: dict[str, Any],
) -> tuple[Dictionary, int]:
    nbytes = os.fstat(fh.fileno()).st_size
    head = fh.read(_PREFIX.size)
    if len(head) != _PREFIX.size:
        raise _Stale("damaged (too short)")
    magic, version, hlen = _PREFIX.unpack(head)
    if magic != MAGIC or version != VERSION or hlen > min(_MAX_HEADER, nbytes):
        raise _Stale(f"damaged or of another version (magic {magic!r}, version {version})")
    try:
        meta = json.loads(fh.read(hlen).decode("utf-8"))
        b = meta["bin"]
        if meta["format"] != FORMAT:
            raise _Stale(f"damaged (format {meta['format']!r})")
        if b["size"] != st.st_size or b["mtime_ns"] != st.st_mtime_ns:
            raise _Stale("stale (the .bin's size or modification time changed)")
        if meta["header"] != header:
            raise _Stale("stale (the .bin's dictionary header changed)")
        end = int(b["dict_end"])
        specs = {name: meta["arrays"][name] for name in _ARRAYS}
        payload_start, payload_crc = int(meta["payload_start"]), int(meta["payload_crc32"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise _Stale(f"damaged ({type(exc).__name__}: {exc})") from None
    if not _PREFIX.size + hlen <= payload_start <= nbytes or payload_start % _ALIGN:
        raise _Stale("damaged (offsets outside the file)")
    head = prefix(end) if end > 0 else None
    if head is None:
        raise _Stale("stale (the .bin is shorter than its recorded dictionary)")
    with head:
        if bin_digest(head, end) != b["crc32"]:
            raise _Stale("stale (the .bin's header or dictionary bytes changed)")
        npairs = max(header["pruneidx_size"], 0)
        pairs = np.frombuffer(bytes(head[end - 8 * npairs : end]), dtype="<i4").reshape(-1, 2)
    payload = np.empty(nbytes - payload_start, dtype=np.uint8)
    fh.seek(payload_start)
    if fh.readinto(payload) != payload.shape[0]:
        raise _Stale("damaged (it changed while reading)")
    if zlib.crc32(payload.data) != payload_crc:
        raise _Stale("damaged (checksum mismatch)")
    arrays: dict[str, np.ndarray] = {}
    try:
        for name, spec in specs.items():
            dtype = np.dtype(_ARRAYS[name])
            lo, count = int(spec["offset"]) - payload_start, int(spec["count"])
            # aligned views: the compiled kernels get the array types they were compiled for
            if (
                spec["dtype"] != dtype.str
                or lo < 0
                or lo % _ALIGN
                or count < 0
                or lo + count * dtype.itemsize > payload.shape[0]
            ):
                raise _Stale(f"damaged ({name}: {spec})")
            arrays[name] = payload[lo : lo + count * dtype.itemsize].view(dtype)
        nwords, nlabels = header["nwords"], header["nlabels"]
        if (
            arrays["offsets"].shape[0] != nwords + 1
            or arrays["counts"].shape[0] != nwords + nlabels
            or arrays["loffsets"].shape[0] != nlabels + 1
        ):
            raise _Stale("damaged (array sizes do not fit the dictionary header)")
        counts = arrays["counts"].astype(np.int64)  # a writable copy
        d = Dictionary.from_word_bytes(
            arrays["wbytes"],
            arrays["offsets"],
            counts[:nwords],
            ntokens=header["ntokens"],
            bucket=args["bucket"],
            word_ngrams=args["wordNgrams"],
            labels=decode_words(arrays["lbytes"], arrays["loffsets"]),
            label_counts=counts[nwords:],
            pruneidx_size=header["pruneidx_size"],
            prune_pairs=pairs,
        )
    except ValueError as exc:
        raise _Stale(f"damaged ({exc})") from None
    table = arrays["table"]
    cap = table.shape[0]
    if (
        cap < max(16, 2 * nwords + 1)
        or cap & (cap - 1)
        or (cap and (table.min() < -2 or table.max() >= nwords))
    ):
        raise _Stale("damaged (hash table)")  # a bad id would read outside the word arrays
    d._table = table
    return d, end


def write(
    bin_path: Path,
    st: os.stat_result,
    head: memoryview,
    header: dict[str, int],
    dictionary: Dictionary,
) -> Path | None:
    """Write the index of ``bin_path`` (whose bytes up to the end of the dictionary are
    ``head``) beside it, else in the sentvec cache. Returns the path written, or None when
    neither place is writable (the index is an optimisation: nothing is raised)."""
    end = len(head)
    wbytes, offsets = dictionary.word_bytes()
    labels = [w.encode("utf-8", "surrogateescape") for w in dictionary.labels]
    loffsets = np.zeros(len(labels) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in labels], out=loffsets[1:])
    arrays = {
        "wbytes": np.asarray(wbytes, np.uint8),
        "offsets": np.asarray(offsets, "<i8"),
        "counts": np.concatenate([dictionary.counts, dictionary.label_counts]).astype("<i8"),
        "lbytes": np.frombuffer(b"".join(labels), dtype=np.uint8),
        "loffsets": loffsets.astype("<i8"),
        "table": np.asarray(dictionary.word_table(), "<i4"),
    }
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "bin": {
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "dict_end": end,
            "crc32": bin_digest(head, end),
        },
        "header": header,
    }
    # the header's length depends on the offsets it records: reserve room for them
    specs: dict[str, dict[str, Any]] = {
        name: {"dtype": a.dtype.str, "offset": 0, "count": int(a.shape[0])}
        for name, a in arrays.items()
    }
    meta["arrays"], meta["payload_start"], meta["payload_crc32"] = specs, 0, 0
    hlen = len(json.dumps(meta).encode()) + 16 * (len(specs) + 2) + 64
    pos = payload_start = _aligned(_PREFIX.size + hlen)
    for name, a in arrays.items():
        specs[name]["offset"] = pos
        pos = _aligned(pos + a.nbytes)
    payload = np.zeros(pos - payload_start, dtype=np.uint8)
    for name, a in arrays.items():
        lo = specs[name]["offset"] - payload_start
        payload[lo : lo + a.nbytes] = a.view(np.uint8)
    meta["payload_start"], meta["payload_crc32"] = payload_start, zlib.crc32(payload.data)
    text = json.dumps(meta).encode()
    text += b" " * (hlen - len(text))
    assert len(text) == hlen
    for path in candidates(bin_path):
        try:
            with atomic_open(path, "wb") as fh:
                fh.write(_PREFIX.pack(MAGIC, VERSION, hlen))
                fh.write(text)
                fh.write(b"\x00" * (payload_start - _PREFIX.size - hlen))
                fh.write(payload)
        except OSError:  # not writable (a read-only directory or filesystem, a full disk)
            continue
        return path
    return None


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN
