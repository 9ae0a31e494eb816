"""Read and write the official sent2vec ``.bin`` model file.

Layout (little-endian, no padding), as written by epfml/sent2vec ``FastText::saveModel``:

=====================  ==========================================================
part                   content
=====================  ==========================================================
signature              int32 magic 793712314, int32 version 11
args                   :data:`ARGS_HEADER` (12 int32 + float64 ``t``)
dictionary header      :data:`DICT_HEADER` (size, nwords, nlabels, ntokens, pruneidx_size)
dictionary entries     ``size`` times: word bytes, NUL, int64 count, int8 type (0 word, 1 label)
prune pairs            ``max(pruneidx_size, 0)`` times: int32, int32
quant flag             uint8 (1 = product-quantized input matrix: not supported here)
input matrix           int64 rows, int64 cols, rows * cols float32 (row-major)
qout flag              uint8
output matrix          int64 rows, int64 cols, rows * cols float32
=====================  ==========================================================

The tables below drive both reading and writing, so the two cannot drift apart. Every size field
is checked against the bytes left in the file before anything is allocated; a corrupt, truncated or
foreign file raises :class:`ModelFormatError` naming the problem and the byte offset.
"""

from __future__ import annotations

import math
import mmap as mmap_module
import os
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sentvec._io import atomic_open
from sentvec.exceptions import ModelFormatError, QuantizedModelError
from sentvec.sent2vec import _sidecar
from sentvec.sent2vec.dictionary import Dictionary, decode_words

#: ``FASTTEXT_FILEFORMAT_MAGIC_INT32``
FASTTEXT_MAGIC = 793712314
#: ``FASTTEXT_VERSION`` of epfml/sent2vec (facebookresearch/fastText >= 0.2 writes 12).
SENT2VEC_FILE_VERSION = 11

LOSS_NAMES = {1: "hs", 2: "ns", 3: "softmax"}
MODEL_NAMES = {1: "cbow", 2: "sg", 3: "sup", 4: "sent2vec", 5: "cbowCWNgrams"}

#: (field, struct code) of ``Args::save``; names are the official flag names.
ARGS_HEADER: tuple[tuple[str, str], ...] = (
    ("dim", "i"),
    ("ws", "i"),
    ("epoch", "i"),
    ("minCount", "i"),
    ("neg", "i"),
    ("wordNgrams", "i"),
    ("loss", "i"),
    ("model", "i"),
    ("bucket", "i"),
    ("minn", "i"),
    ("maxn", "i"),
    ("lrUpdateRate", "i"),
    ("t", "d"),
)
#: (field, struct code) of the ``Dictionary::save`` header.
DICT_HEADER: tuple[tuple[str, str], ...] = (
    ("size", "i"),
    ("nwords", "i"),
    ("nlabels", "i"),
    ("ntokens", "q"),
    ("pruneidx_size", "q"),
)
#: Values written for args a model does not record (those of the reference binary's files).
ARGS_DEFAULTS: dict[str, Any] = {
    "ws": 5,
    "epoch": 5,
    "minCount": 5,
    "neg": 10,
    "loss": "ns",
    "model": "sent2vec",
    "minn": 3,
    "maxn": 6,
    "lrUpdateRate": 100,
    "t": 1e-4,
}
_ENTRY_TAIL = struct.Struct("<qb")
_MATRIX_HEADER = struct.Struct("<qq")
#: Largest ``dim`` the reader accepts (a sanity bound against corrupt headers); the trainer
#: refuses larger ones up front.
MAX_DIM = 1 << 20
#: The args header stores every integer as int32.
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BinModel:
    """Contents of an official ``.bin`` file.

    Attributes
    ----------
    args : dict
        :data:`ARGS_HEADER` fields by official name (``loss``/``model`` as names, e.g. ``"ns"``,
        ``"sent2vec"``) plus ``qout`` (bool).
    dictionary : Dictionary
    input_matrix : ndarray of shape (nwords + bucket (+1), dim), float32
        A :class:`numpy.memmap` when the file was memory-mapped.
    output_matrix : ndarray of shape (nwords, dim), float32, or None
        None when read with ``inference_only``.
    """

    args: dict[str, Any]
    dictionary: Dictionary
    input_matrix: np.ndarray = field(repr=False)
    output_matrix: np.ndarray | None = field(repr=False)


def _fmt(table: tuple[tuple[str, str], ...]) -> struct.Struct:
    return struct.Struct("<" + "".join(code for _, code in table))


_ARGS_STRUCT = _fmt(ARGS_HEADER)
_DICT_STRUCT = _fmt(DICT_HEADER)
_SIGNATURE = struct.Struct("<ii")


class _Cursor:
    """Bounds-checked reads from a buffer, with error messages naming the file and offset.

    ``off`` and ``size`` are absolute file offsets; ``buf[0]`` is file byte ``base``. With an
    open file ``fh``, the buffer is a ``bytearray`` that grows by reads as far as ``need``
    asks (the in-memory path); otherwise it is a memory map of the whole file.
    """

    def __init__(
        self, buf: Any, path: Path, *, size: int | None = None, base: int = 0, fh: Any = None
    ) -> None:
        self.buf, self.path, self.base, self.fh = buf, path, base, fh
        self.off = base
        self.size = base + len(buf) if size is None else size

    def fail(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{str(self.path)!r}: {msg}")

    def need(self, nbytes: int, what: str, *, load: bool = True) -> None:
        if nbytes < 0 or self.off + nbytes > self.size:
            raise self.fail(
                f"file is truncated or corrupt: {what}: {nbytes} bytes needed at offset "
                f"{self.off}, but the file has {self.size - self.off} bytes left"
            )
        if load:
            self.grow(self.off + nbytes)

    def grow(self, end: int) -> bool:
        """Make the buffer reach file offset ``end`` (at least); False if it cannot grow."""
        have = self.base + len(self.buf)
        if end <= have:
            return True
        if self.fh is None or have >= self.size:
            return False
        want = min(self.size, max(end, self.base + 2 * len(self.buf), self.base + (1 << 20)))
        chunk = os.pread(self.fh.fileno(), want - have, have)
        if len(chunk) != want - have:
            raise self.fail("could not read the file: it changed while reading")
        self.buf += chunk
        return True

    def unpack(self, st: struct.Struct, what: str) -> tuple:
        self.need(st.size, what)
        vals = st.unpack_from(self.buf, self.off - self.base)
        self.off += st.size
        return vals

    def byte(self, what: str) -> int:
        self.need(1, what)
        v = self.buf[self.off - self.base]
        self.off += 1
        return v

    def table(self, st: struct.Struct, table: tuple[tuple[str, str], ...], what: str) -> dict:
        return dict(zip((name for name, _ in table), self.unpack(st, what), strict=True))


def _looks_like_text(head: bytes) -> bool:
    if not head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\t\n\r" for c in text[:-1])


def _check_signature(cur: _Cursor) -> None:
    if cur.size == 0:
        raise cur.fail("file is empty; not a sent2vec model")
    if cur.size < _SIGNATURE.size:
        raise cur.fail(f"file is {cur.size} bytes long, too short for a sent2vec model")
    magic, version = cur.unpack(_SIGNATURE, "signature")
    if magic != FASTTEXT_MAGIC:
        cur.grow(64)
        head = bytes(cur.buf[:64])
        kind = (
            "it looks like a text file"
            if _looks_like_text(head)
            else f"magic number {magic} (0x{magic & 0xFFFFFFFF:08x})"
        )
        raise cur.fail(
            f"not a sent2vec/fastText .bin model: {kind}; expected magic {FASTTEXT_MAGIC}"
        )
    if version != SENT2VEC_FILE_VERSION:
        hint = " (a facebookresearch/fastText >= 0.2 model, not sent2vec)" if version == 12 else ""
        raise cur.fail(
            f"unsupported file version {version}{hint}; sent2vec writes version "
            f"{SENT2VEC_FILE_VERSION}"
        )


def _check_args(cur: _Cursor, raw: dict) -> dict:
    model = MODEL_NAMES.get(raw["model"])
    if raw["model"] != 4:
        what = f"a fastText {model!r} model" if model else f"unknown model type {raw['model']}"
        raise cur.fail(f"{what} (args model={raw['model']}), not a sent2vec model (model=4)")
    if raw["loss"] not in LOSS_NAMES:
        raise cur.fail(f"corrupt args: loss={raw['loss']} is not one of {sorted(LOSS_NAMES)}")
    if not 1 <= raw["dim"] <= MAX_DIM:
        raise cur.fail(f"corrupt args: dim={raw['dim']} outside [1, {MAX_DIM}]")
    if raw["wordNgrams"] < 1 or raw["bucket"] < 0:
        raise cur.fail(f"corrupt args: wordNgrams={raw['wordNgrams']}, bucket={raw['bucket']}")
    if raw["wordNgrams"] > 1 and raw["bucket"] == 0:
        raise cur.fail(f"corrupt args: wordNgrams={raw['wordNgrams']} with bucket=0")
    if not math.isfinite(raw["t"]):
        raise cur.fail(f"corrupt args: t={raw['t']} is not finite")
    args = dict(raw)
    args["loss"] = LOSS_NAMES[raw["loss"]]
    args["model"] = MODEL_NAMES[raw["model"]]
    return args


def _read_dictionary(cur: _Cursor, args: dict, st: os.stat_result) -> Dictionary:
    """The dictionary at the cursor: from its index file (:mod:`._sidecar`) when a valid one
    exists, else read from the entries (and, for a large dictionary, the index written)."""
    h = cur.table(_DICT_STRUCT, DICT_HEADER, "dictionary header")
    size, nwords, nlabels = h["size"], h["nwords"], h["nlabels"]
    if min(size, nwords, nlabels, h["ntokens"]) < 0 or size != nwords + nlabels:
        raise cur.fail(
            f"corrupt dictionary header: size={size}, nwords={nwords}, "
            f"nlabels={nlabels}, ntokens={h['ntokens']}"
        )
    if h["pruneidx_size"] < -1:
        raise cur.fail(f"corrupt dictionary header: pruneidx_size={h['pruneidx_size']}")
    if nwords < _sidecar.MIN_WORDS:
        return _read_entries(cur, args, h)
    found = _sidecar.load(cur.path, st, lambda end: _prefix(cur, end), h, args)
    if found is not None:
        dictionary, cur.off = found
        return dictionary
    dictionary = _read_entries(cur, args, h)
    head = _prefix(cur, cur.off)
    if head is not None:  # the index is an optimisation: without the bytes, none is written
        with head:
            _sidecar.write(cur.path, st, head, h, dictionary)
    return dictionary


def _prefix(cur: _Cursor, end: int) -> memoryview | None:
    """File bytes ``[0, end)`` from the cursor's buffer (grown as needed); None past the end."""
    if cur.base != 0 or end > cur.size or not cur.grow(end):
        return None
    return memoryview(cur.buf)[:end]


def _read_entries(cur: _Cursor, args: dict, h: dict) -> Dictionary:
    size, nwords, nlabels = h["size"], h["nwords"], h["nlabels"]
    cur.need(size * (1 + _ENTRY_TAIL.size), f"{size} dictionary entries")
    from sentvec._jit import load_kernel
    from sentvec.sent2vec._binscan import copy_words, scan_entries

    starts = np.empty(size, dtype=np.int64)
    nuls = np.empty(size, dtype=np.int64)
    counts = np.empty(size, dtype=np.int64)
    types = np.empty(size, dtype=np.int8)
    done, off = 0, cur.off
    while True:
        view = np.frombuffer(cur.buf, dtype=np.uint8)
        scan = (view, off - cur.base, done, size, starts, nuls, counts, types)
        load_kernel(scan_entries, scan)  # a first run compiles: say so if it is long
        done, rel = scan_entries(*scan)
        off = cur.base + int(rel)
        del view  # a bytearray cannot grow while a view of it exists
        if done == size:
            break
        if not cur.grow(cur.base + 2 * len(cur.buf)):
            cur.off = off
            raise cur.fail(
                f"file is truncated or corrupt inside dictionary entry {done} of "
                f"{size} (offset {off})"
            )
    # the words' bytes end to end: no Python str per word (decoded on first use, if ever)
    view = np.frombuffer(cur.buf, dtype=np.uint8)
    parts = []
    for lo, hi in ((0, nwords), (nwords, size)):
        wbytes = np.empty(int((nuls[lo:hi] - starts[lo:hi]).sum()), dtype=np.uint8)
        offsets = np.empty(hi - lo + 1, dtype=np.int64)
        copy_words(view, starts[lo:hi], nuls[lo:hi], cur.base, wbytes, offsets)
        parts.append((wbytes, offsets))
    del view, starts, nuls
    cur.off = off
    if size and (types.min() < 0 or types.max() > 1):
        raise cur.fail("corrupt dictionary: entry type outside {0 (word), 1 (label)}")
    if (types[:nwords] != 0).any() or (types[nwords:] != 1).any():
        raise cur.fail(f"corrupt dictionary: expected {nwords} words followed by {nlabels} labels")
    if (counts < 0).any():
        raise cur.fail("corrupt dictionary: negative word count")
    npairs = max(h["pruneidx_size"], 0)
    cur.need(8 * npairs, f"{npairs} prune-index pairs")
    lo = cur.off - cur.base
    pairs = np.frombuffer(bytes(cur.buf[lo : lo + 8 * npairs]), dtype="<i4").reshape(-1, 2)
    cur.off += 8 * npairs
    return Dictionary.from_word_bytes(
        *parts[0],
        counts[:nwords],
        ntokens=h["ntokens"],
        bucket=args["bucket"],
        word_ngrams=args["wordNgrams"],
        labels=decode_words(*parts[1]),
        label_counts=counts[nwords:],
        pruneidx_size=h["pruneidx_size"],
        prune_pairs=pairs,
    )


def _read_flag(cur: _Cursor, what: str) -> bool:
    v = cur.byte(what)
    if v not in (0, 1):
        raise cur.fail(f"corrupt {what}: byte {v} at offset {cur.off - 1} is not 0 or 1")
    return bool(v)


def _read_matrix(
    cur: _Cursor,
    fh: Any,
    what: str,
    min_rows: int,
    exact_rows: int | None,
    dim: int,
    *,
    mode: Literal["r", "c"] | None,
    skip: bool = False,
) -> np.ndarray | None:
    """The matrix at the cursor: read (``mode`` None), memory-mapped (``"r"``, ``"c"``) or, with
    ``skip``, only checked and stepped over (None). Its size is checked against the file first,
    so a mapped matrix never reaches past the end of the file."""
    rows, cols = cur.unpack(_MATRIX_HEADER, f"{what} shape")
    if cols != dim or rows < min_rows or (exact_rows is not None and rows != exact_rows):
        want = f"{exact_rows}" if exact_rows is not None else f">= {min_rows}"
        raise cur.fail(f"corrupt {what}: shape ({rows}, {cols}), expected ({want}, {dim})")
    cur.need(rows * cols * 4, f"{what} of shape ({rows}, {cols})", load=False)
    start = cur.off
    cur.off += rows * cols * 4
    if skip:
        return None
    if mode is not None:
        return np.memmap(fh, dtype="<f4", mode=mode, offset=start, shape=(rows, cols))
    fh.seek(start)
    mat = np.fromfile(fh, dtype="<f4", count=rows * cols)
    if mat.shape[0] != rows * cols:
        raise cur.fail(f"could not read {what}: file changed while reading")
    return mat.reshape(rows, cols)


#: Accepted ``mmap`` values: numpy's memmap modes that never write to the file.
MMAP_MODES = ("r", "c")


def check_mmap_mode(mmap: str | bool | None) -> Literal["r", "c"] | None:
    """Normalise an ``mmap`` argument: ``"r"`` (read-only map), ``"c"`` (copy-on-write map) or
    None (read into memory); True and False are accepted for ``"r"`` and None.

    Raises
    ------
    ValueError
        For any other value (``"r+"`` and ``"w+"`` would write to the model file).
    """
    if mmap is True:
        return "r"
    if mmap is None or mmap is False:
        return None
    if mmap == "r":
        return "r"
    if mmap == "c":
        return "c"
    raise ValueError(
        f"mmap={mmap!r} is invalid; expected 'r' (read-only memory map), 'c' "
        "(copy-on-write memory map) or None (read into memory)"
    )


def read_bin(
    path: str | os.PathLike[str], *, mmap: str | bool | None = None, inference_only: bool = False
) -> BinModel:
    """Read an official sent2vec ``.bin`` file, or memory-map its matrices.

    Parameters
    ----------
    path : path-like
    mmap : {None, "r", "c"}, default None
        None reads the matrices into memory. ``"r"`` maps them read-only straight from the file
        (:class:`numpy.memmap` at their offsets: no copy, pages read on first touch and shared
        with other processes through the page cache); ``"c"`` maps them copy-on-write (writes
        stay private to the process). Where the file cannot be mapped (a filesystem without
        mmap support), it is read into memory with a warning.
    inference_only : bool, default False
        Skip the output matrix (only training and writing a ``.bin`` need it); its shape is
        still checked. ``output_matrix`` is then None.

    Returns
    -------
    BinModel

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist or is not a file.
    QuantizedModelError
        If the input matrix is quantized (a ``.ftz`` model); also a NotImplementedError.
    ModelFormatError
        If the file is empty, truncated, corrupt, not a fastText file, a fastText model of
        another kind (supervised, skip-gram, CBOW, version 12), or has trailing bytes. Every
        size is checked against the file's size before anything is read or mapped.
    ValueError
        If ``mmap`` is not one of the values above.
    """
    mode = check_mmap_mode(mmap)
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file not found: {str(p)!r}")
    with open(p, "rb") as fh:
        nbytes = os.fstat(fh.fileno()).st_size
        whole = None
        if mode is not None and nbytes:
            try:
                whole = mmap_module.mmap(fh.fileno(), 0, access=mmap_module.ACCESS_READ)
            except OSError as exc:
                warnings.warn(
                    f"{str(p)!r} cannot be memory-mapped ({exc}); reading it into memory instead",
                    UserWarning,
                    stacklevel=2,
                )
                mode = None
        try:
            if whole is not None:
                cur = _Cursor(whole, p)
            else:  # read the header and dictionary as far as they go, not the matrices
                cur = _Cursor(bytearray(), p, size=nbytes, fh=fh)
            _check_signature(cur)
            args = _check_args(cur, cur.table(_ARGS_STRUCT, ARGS_HEADER, "args header"))
            dictionary = _read_dictionary(cur, args, os.fstat(fh.fileno()))
            if _read_flag(cur, "quantization flag"):
                raise QuantizedModelError(
                    f"{str(p)!r}: the input matrix is product-quantized (a .ftz model); "
                    "quantized sent2vec models are not supported"
                )
            need_rows = dictionary.nwords + (args["bucket"] if args["wordNgrams"] > 1 else 0)
            dim = args["dim"]
            inp = _read_matrix(cur, fh, "input matrix", need_rows, None, dim, mode=mode)
            if whole is None:  # the rest (flag, output shape) from a fresh buffer after it
                cur = _Cursor(bytearray(), p, size=nbytes, base=cur.off, fh=fh)
            args["qout"] = _read_flag(cur, "qout flag")
            out = _read_matrix(
                cur, fh, "output matrix", 0, dictionary.nwords, dim, mode=mode, skip=inference_only
            )
            if cur.off != cur.size:
                raise cur.fail(
                    f"{cur.size - cur.off} unexpected trailing bytes after the output "
                    f"matrix (offset {cur.off})"
                )
        finally:
            if whole is not None:
                try:
                    whole.close()
                except BufferError:  # a view is still held by a traceback: left to the GC
                    pass
    assert inp is not None  # _read_matrix returns None only with skip=True
    return BinModel(args=args, dictionary=dictionary, input_matrix=inp, output_matrix=out)


def _args_for_bin(args: dict[str, Any], dictionary: Dictionary, dim: int) -> dict[str, Any]:
    vals = {**ARGS_DEFAULTS, **{k: args[k] for k, _ in ARGS_HEADER if k in args}}
    vals.update(dim=dim, wordNgrams=dictionary.word_ngrams, bucket=dictionary.bucket)
    for key, names in (("loss", LOSS_NAMES), ("model", MODEL_NAMES)):
        v = vals[key]
        if isinstance(v, str):
            inverse = {name: code for code, name in names.items()}
            if v not in inverse:
                raise ValueError(f"{key}={v!r} is invalid; expected one of {sorted(inverse)}")
            vals[key] = inverse[v]
    if vals["model"] != 4:
        raise ValueError(f"model={args.get('model')!r}: only sent2vec models can be written")
    return vals


def write_bin(
    path: str | os.PathLike[str],
    *,
    args: dict[str, Any],
    dictionary: Dictionary,
    input_matrix: np.ndarray,
    output_matrix: np.ndarray,
) -> None:
    """Write an official sent2vec ``.bin`` file, atomically (temp file, then rename).

    Parameters
    ----------
    path : path-like
    args : dict
        Hyper-parameters by official flag name; :data:`ARGS_HEADER` fields missing here take
        :data:`ARGS_DEFAULTS`; ``dim``, ``wordNgrams`` and ``bucket`` always come from the
        matrices and the dictionary. ``qout`` (bool, default False) is written as its flag.
    dictionary : Dictionary
    input_matrix : ndarray of shape (>= nwords + bucket, dim), float32
    output_matrix : ndarray of shape (nwords, dim), float32

    Raises
    ------
    ValueError
        If the shapes disagree with the dictionary or an arg value is invalid.
    """
    inp = np.asarray(input_matrix)
    out = np.asarray(output_matrix)
    if inp.ndim != 2 or out.ndim != 2 or inp.shape[1] != out.shape[1]:
        raise ValueError(f"matrix shapes {inp.shape} and {out.shape} do not fit together")
    dim = int(inp.shape[1])
    need = dictionary.nwords + (dictionary.bucket if dictionary.word_ngrams > 1 else 0)
    if inp.shape[0] < need or out.shape[0] != dictionary.nwords:
        raise ValueError(
            f"input matrix has {inp.shape[0]} rows (needs >= {need}) and output "
            f"matrix {out.shape[0]} (needs {dictionary.nwords})"
        )
    vals = _args_for_bin(args, dictionary, dim)
    header = {
        "size": dictionary.nwords + dictionary.nlabels,
        "nwords": dictionary.nwords,
        "nlabels": dictionary.nlabels,
        "ntokens": dictionary.ntokens,
        "pruneidx_size": dictionary.pruneidx_size,
    }
    entries = bytearray()
    for words, counts, typ in (
        (dictionary.words, dictionary.counts, 0),
        (dictionary.labels, dictionary.label_counts, 1),
    ):
        for w, c in zip(words, counts.tolist(), strict=True):
            entries += w.encode("utf-8", "surrogateescape")
            entries += b"\x00"
            entries += _ENTRY_TAIL.pack(c, typ)
    pairs = dictionary.prune_pairs[: max(dictionary.pruneidx_size, 0)]
    with atomic_open(path, "wb") as fh:
        fh.write(_SIGNATURE.pack(FASTTEXT_MAGIC, SENT2VEC_FILE_VERSION))
        fh.write(_ARGS_STRUCT.pack(*(vals[name] for name, _ in ARGS_HEADER)))
        fh.write(_DICT_STRUCT.pack(*(header[name] for name, _ in DICT_HEADER)))
        fh.write(entries)
        fh.write(np.ascontiguousarray(pairs, dtype="<i4").tobytes())
        fh.write(b"\x00")  # quant flag: never quantized
        _write_matrix(fh, inp)
        fh.write(b"\x01" if args.get("qout", False) else b"\x00")
        _write_matrix(fh, out)


def _write_matrix(fh: Any, mat: np.ndarray) -> None:
    fh.write(_MATRIX_HEADER.pack(*mat.shape))
    step = max(1, (64 << 20) // max(1, mat.shape[1] * 4))  # 64 MiB at a time
    for start in range(0, mat.shape[0], step):
        # a view when the rows already are contiguous little-endian float32 (no copy)
        fh.write(np.ascontiguousarray(mat[start : start + step], dtype="<f4").data)


def is_bin_file(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a file starting with the fastText magic number."""
    if not os.path.isfile(path):  # never open a FIFO or a device: reading it could block
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:  # a directory, a missing or unreadable file
        return False
    return len(head) == 4 and struct.unpack("<i", head)[0] == FASTTEXT_MAGIC
