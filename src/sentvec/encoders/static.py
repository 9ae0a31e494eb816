"""Static embedding models: a sentence vector is the (weighted) mean of per-token rows.

:class:`StaticEncoder` covers Model2Vec (Tulkens & van Dongen 2024, ``StaticModel``),
sentence-transformers' ``StaticEmbedding`` and WordLlama: a Hugging Face ``tokenizers``
tokenizer, a float32 or float16 row table, optional per-token weights and a token -> row mapping
(Model2Vec's vocabulary quantization). ``encode`` tokenizes in Rust, then a numba kernel
(:mod:`sentvec.encoders._static_kernels`) averages the rows without the GIL.

Its directory format is Model2Vec's own (``config.json``, ``model.safetensors`` with
``embeddings`` and optional ``weights`` / ``mapping``, ``tokenizer.json``, ``modules.json``), so
``model2vec.StaticModel.from_pretrained`` and sentence-transformers load what
:meth:`StaticEncoder.save` writes; sentvec's own settings are one extra ``"sentvec"`` entry of
``config.json``. Other sources (a sentence-transformers directory, WordLlama's packaged
weights) are read by :mod:`sentvec.encoders.static_loaders`.

The chunk cache: when the tokenizer provably tokenizes each space-separated chunk of a text
independently (:func:`chunk_separable`), ``encode`` splits texts on ``" "``, tokenizes each
distinct chunk once and remembers its ids, so the Rust tokenizer only sees new chunks; the
result is the same token sequence (tested against the tokenizer on corpus text).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._parallel import available_cpus, fan_out, kernel_executor, piece_bounds
from sentvec._readers import check_regular_file, json_int, read_json_object
from sentvec._validation import check_positive_int, check_sentences
from sentvec.exceptions import ModelFormatError, TruncationWarning

__all__ = [
    "StaticEncoder",
    "chunk_separable",
    "is_model2vec_dir",
    "MODEL2VEC_FILES",
    "DEFAULT_MAX_LENGTH",
    "load_tokenizer_file",
    "read_safetensors",
    "warn_zero_vectors",
]

#: The three files of a Model2Vec directory.
MODEL2VEC_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: Model2Vec's default ``max_length`` (tokens kept per text).
DEFAULT_MAX_LENGTH = 512
_BATCH = 16384
_CACHE_LIMIT = 1 << 20  # distinct chunks remembered before the cache starts over
_JOIN = 512  # new chunks tokenized together as one text
_COMPILED: set[str] = set()  # table dtypes whose kernel this process has loaded

_SEPARABLE_NORMALIZERS = {
    "BertNormalizer",
    "Lowercase",
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "StripAccents",
}
_SEPARABLE_PRETOKENIZERS = {
    "BertPreTokenizer",
    "Whitespace",
    "WhitespaceSplit",
    "Punctuation",
    "Digits",
}
_SPLITTING_PRETOKENIZERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}


def _flatten(node: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    if node is None:
        return []
    if node.get("type") == "Sequence":
        return [m for sub in node.get(key, []) for m in _flatten(sub, key)]
    return [node]


def _component(obj: Any) -> dict[str, Any] | None:
    """The JSON description of a tokenizer component (normalizer, pre-tokenizer), or None."""
    return None if obj is None else json.loads(obj.__getstate__())


def chunk_separable(tokenizer: Any) -> bool:
    """Whether tokenizing ``a + " " + b`` always gives the tokens of ``a`` then those of ``b``.

    True when every normalizer maps characters one by one (BERT's, lower-casing, Unicode
    normal forms, accent stripping), the pre-tokenizers split at spaces and drop them
    (BERT's, ``Whitespace``, ``WhitespaceSplit``, possibly with ``Punctuation`` / ``Digits``),
    the model is deterministic (no BPE dropout) and no added token holds whitespace.
    Anything else (SentencePiece's ``Metaspace``, byte-level BPE, ``Replace``...) is False.
    """
    norms = _flatten(_component(tokenizer.normalizer), "normalizers")
    pres = _flatten(_component(tokenizer.pre_tokenizer), "pretokenizers")
    if any(n.get("type") not in _SEPARABLE_NORMALIZERS for n in norms):
        return False
    if not pres or any(p.get("type") not in _SEPARABLE_PRETOKENIZERS for p in pres):
        return False
    if not any(p.get("type") in _SPLITTING_PRETOKENIZERS for p in pres):
        return False
    if getattr(tokenizer.model, "dropout", None) not in (None, 0, 0.0):
        return False
    added = tokenizer.get_added_tokens_decoder().values()
    return not any(any(c.isspace() for c in t.content) for t in added)


def is_model2vec_dir(path: str | os.PathLike[str]) -> bool:
    """A directory whose ``config.json`` names a Model2Vec model (``model_type``
    ``"model2vec"`` or architecture ``StaticModel``) or whose ``model.safetensors`` holds an
    ``embeddings`` tensor (what ``StaticModel.save_pretrained`` writes); its files are checked
    on loading. A ``config.json`` that does not parse does not hide the table: such a
    directory is a Model2Vec directory whose loading then names the broken file."""
    p = Path(path)
    if not os.path.lexists(p / "config.json"):
        return False
    try:
        cfg = read_json_object(p / "config.json")
    except (OSError, ValueError):
        cfg = {}
    if cfg.get("model_type") == "model2vec" or "StaticModel" in (cfg.get("architectures") or []):
        return True
    # a bare StaticModel(...).save_pretrained() writes no model_type: look for the table
    return "embeddings" in _safetensors_keys(p / "model.safetensors")


def _safetensors_keys(path: Path) -> set[str]:
    """Tensor names in a safetensors header (empty if unreadable); reads only the header."""
    try:
        check_regular_file(path)  # a FIFO would block the open below
        with open(path, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if not 2 <= n <= 100_000_000:
                return set()
            header = json.loads(fh.read(n))
    except (OSError, ValueError):
        return set()
    return set(header) - {"__metadata__"} if isinstance(header, dict) else set()


def load_tokenizer_file(path: Path) -> Any:
    """A ``tokenizers.Tokenizer`` from a ``tokenizer.json``; ModelFormatError naming it."""
    from tokenizers import Tokenizer

    check_regular_file(
        path, what="tokenizer file", error=ModelFormatError, missing=ModelFormatError
    )
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust error types are not exported
        raise ModelFormatError(f"{str(path)!r} is not a readable tokenizer: {exc}") from exc


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """All tensors of a ``.safetensors`` file as numpy arrays; ModelFormatError naming it."""
    from safetensors.numpy import load_file

    check_regular_file(path, what="weights file", error=ModelFormatError, missing=ModelFormatError)
    try:
        return dict(load_file(str(path)))
    except Exception as exc:  # SafetensorError is not a public class
        raise ModelFormatError(f"{str(path)!r} is not a readable safetensors file: {exc}") from exc


class StaticEncoder:
    """Sentence vector = mean of the rows of its tokens (Model2Vec, StaticEmbedding, WordLlama).

    For a text with tokens ``t_1 .. t_n`` (the tokenizer's ids without special tokens, the
    first ``max_length`` of them, the unknown token dropped when ``drop_unknown``) the vector is
    ``(1/m) sum_i w[t_i] E[r(t_i)]`` over the ``m`` kept tokens, ``r`` the token -> row mapping
    (identity by default) and ``w`` the per-token weights (1 by default) -- Model2Vec's
    ``StaticModel.encode`` -- then scaled to unit L2 norm when ``normalize``.

    Parameters
    ----------
    embeddings : ndarray of shape (n_rows, d), float32 or float16
        The row table (int8 and float64 are converted to float32 on loading).
    tokenizer : tokenizers.Tokenizer
        Its padding and truncation are turned off (``max_length`` truncates instead).
    weights : ndarray of shape (vocab,), optional
        Per-token weights (Model2Vec's ``weights``), indexed by token id.
    token_mapping : ndarray of shape (vocab,), int, optional
        Row of each token id (Model2Vec's vocabulary quantization ``mapping``).
    normalize : bool, default False
        Scale vectors to unit L2 norm (the source model's setting; ``encode(normalize=...)``
        overrides it per call).
    drop_unknown : bool, default True
        Leave the tokenizer's unknown token out of the mean (Model2Vec does;
        sentence-transformers' ``StaticEmbedding`` and WordLlama do not).
    max_length : int or None, default 512
        Tokens kept per text (counted before dropping unknown ones); None keeps all.
    max_chars : int or None, default None
        Cut each text to this many characters first (Model2Vec cuts at ``max_length`` times the
        median token length).
    source : str, optional
        Where the model came from, for result records.
    config : dict, optional
        The source's own ``config.json`` entries, written back by :meth:`save`.

    Raises
    ------
    ModelFormatError
        A table that is not 2-D, empty, of another dtype, or with NaN/infinite values; weights
        or mapping without exactly one value per token; without a mapping, a table without
        exactly one row per token id (Model2Vec's rule: a tokenizer with fewer tokens than rows
        is another model's).
    """

    encoder_type = "static"
    preferred_text_variant = "raw"

    def __init__(
        self,
        embeddings: np.ndarray,
        tokenizer: Any,
        *,
        weights: np.ndarray | None = None,
        token_mapping: np.ndarray | None = None,
        normalize: bool = False,
        drop_unknown: bool = True,
        max_length: int | None = DEFAULT_MAX_LENGTH,
        max_chars: int | None = None,
        source: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        E = np.asarray(embeddings)
        if E.ndim != 2 or 0 in E.shape:
            raise ModelFormatError(f"embeddings must be a non-empty 2-D table, got shape {E.shape}")
        if E.dtype == np.int8 or E.dtype == np.float64:
            E = E.astype(np.float32)
        if E.dtype not in (np.float32, np.float16):
            raise ModelFormatError(f"embeddings must be float32 or float16, got {E.dtype}")
        E = np.ascontiguousarray(E)
        bad = ~np.isfinite(E).all(axis=1)
        if bad.any():
            raise ModelFormatError(
                f"embeddings hold NaN or infinity in {int(bad.sum())} rows (first: row "
                f"{int(np.argmax(bad))})"
            )
        ids = tokenizer.get_vocab(with_added_tokens=True).values()
        vocab = max(ids) + 1 if ids else 0
        self.embeddings = E
        self.weights = self._vector(weights, vocab, "weights", np.float32)
        self.token_mapping = self._vector(token_mapping, vocab, "mapping", np.int64)
        if self.token_mapping is not None:
            m = self.token_mapping
            if len(m) and (m.min() < 0 or m.max() >= len(E)):
                raise ModelFormatError(f"mapping points outside the {len(E)} embedding rows")
        elif vocab != len(E):  # Model2Vec's rule: one row per token, no more, no fewer
            raise ModelFormatError(
                f"the tokenizer has {vocab} tokens but embeddings {len(E)} rows; a table without "
                "a token mapping needs exactly one row per token (is this the model's tokenizer?)"
            )
        self.tokenizer = tokenizer
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self.normalize = bool(normalize)
        self.drop_unknown = bool(drop_unknown)
        self.max_length = (
            None if max_length is None else check_positive_int("max_length", max_length)
        )
        self.max_chars = None if max_chars is None else check_positive_int("max_chars", max_chars)
        self.source = source
        self.config = dict(config or {})
        self.unk_id = self._unknown_id()
        self._separable = chunk_separable(tokenizer)
        self._lut = None
        if E.dtype == np.float16:
            from sentvec.encoders._static_kernels import half_lut

            self._lut = half_lut()
        self._lock = threading.Lock()
        self._reset_cache()

    @staticmethod
    def _vector(a: Any, n: int, name: str, dtype: type) -> np.ndarray | None:
        if a is None:
            return None
        a = np.asarray(a)
        if a.ndim != 1 or len(a) != n or a.dtype.kind not in ("iu" if dtype is np.int64 else "fiu"):
            raise ModelFormatError(
                f"{name} must be a 1-D {np.dtype(dtype).name} vector with one value per "
                f"token ({n}), got shape {a.shape} dtype {a.dtype}"
            )
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ModelFormatError(f"{name} hold NaN or infinity")
        return np.ascontiguousarray(a, dtype=dtype)

    def _unknown_id(self) -> int:
        """The unknown token's id, as Model2Vec finds it (-1: none)."""
        model = self.tokenizer.model
        if hasattr(model, "unk_token"):  # WordPiece, BPE, WordLevel
            unk = model.unk_token
            tid = None if unk is None else self.tokenizer.token_to_id(str(unk))
        else:  # Unigram: only its JSON records unk_id
            tid = json.loads(self.tokenizer.to_str())["model"].get("unk_id")
        return -1 if tid is None else int(tid)

    def __getstate__(self) -> dict[str, Any]:  # pickles (Dask workers) leave the cache behind
        state = dict(self.__dict__)
        del state["_lock"], state["_chunks"], state["_piece_ptr"], state["_piece_tok"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._chunks: dict[str, int] = {}
        self._piece_ptr = np.zeros(1, dtype=np.int64)
        self._piece_tok = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ description
    @property
    def dim(self) -> int:
        """Width ``d`` of the vectors."""
        return int(self.embeddings.shape[1])

    def get_sentence_embedding_dimension(self) -> int:
        """Width ``d`` of the vectors (sentence-transformers' name)."""
        return self.dim

    def config_dict(self) -> dict[str, Any]:
        """JSON-serialisable description for result records."""
        return {
            "encoder": "StaticEncoder",
            "source": self.source,
            "dim": self.dim,
            "rows": int(self.embeddings.shape[0]),
            "dtype": self.embeddings.dtype.name,
            "weights": self.weights is not None,
            "mapping": self.token_mapping is not None,
            "normalize": self.normalize,
            "drop_unknown": self.drop_unknown,
            "max_length": self.max_length,
            "text_variant": self.preferred_text_variant,
        }

    def __repr__(self) -> str:
        return (
            f"StaticEncoder(rows={self.embeddings.shape[0]}, dim={self.dim}, "
            f"dtype={self.embeddings.dtype.name}, normalize={self.normalize}, "
            f"source={self.source!r})"
        )

    # ------------------------------------------------------------------ tokens
    def _encode_ids(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        return [e.ids for e in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def _add_chunks(self, chunks: list[str]) -> None:
        """Tokenize new chunks and append them to the cache.

        Tokenizing each chunk as a text of its own costs the tokenizer's per-text overhead
        (most of the time for one-word texts), so chunks are joined by spaces into texts of
        about :data:`_JOIN` chunks, and each token goes back to the chunk its character
        offset falls in (a token never spans a space: :func:`chunk_separable`).
        """
        if len(self._chunks) + len(chunks) > _CACHE_LIMIT:
            self._reset_cache()
        lengths = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
        groups = range(0, len(chunks), _JOIN)
        texts = [" ".join(chunks[g : g + _JOIN]) for g in groups]
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        owner_parts, id_parts = [], []
        for g, e in zip(groups, encodings, strict=True):
            lens = lengths[g : g + _JOIN]
            starts = np.zeros(len(lens), dtype=np.int64)
            np.cumsum(lens[:-1] + 1, out=starts[1:])
            offsets = np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2)
            owner_parts.append(g + np.searchsorted(starts, offsets[:, 0], side="right") - 1)
            id_parts.append(np.asarray(e.ids, dtype=np.int64))
        owner = np.concatenate(owner_parts) if owner_parts else np.zeros(0, np.int64)
        flat = np.concatenate(id_parts) if id_parts else np.zeros(0, np.int64)
        counts = np.bincount(owner, minlength=len(chunks))
        base = len(self._chunks)
        self._chunks.update(zip(chunks, range(base, base + len(chunks)), strict=True))
        self._piece_ptr = np.concatenate([self._piece_ptr, self._piece_ptr[-1] + np.cumsum(counts)])
        self._piece_tok = np.concatenate([self._piece_tok, flat])

    def _pieces(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(sent_ptr, pieces, piece_ptr, piece_tok) of a batch (see the kernel's docstring)."""
        n = len(texts)
        if self._separable:
            words = " ".join(texts).split(" ")
            lengths = np.fromiter((s.count(" ") + 1 for s in texts), dtype=np.int64, count=n)
            sent_ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lengths, out=sent_ptr[1:])
            with self._lock:  # the cache's dict and arrays change together
                new = set(words).difference(self._chunks)
                if new:
                    self._add_chunks(list(new))
                pieces = np.fromiter(
                    map(self._chunks.__getitem__, words), dtype=np.int64, count=len(words)
                )
                return sent_ptr, pieces, self._piece_ptr, self._piece_tok
        ids = self._encode_ids(texts)
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=n)
        piece_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=piece_ptr[1:])
        flat = np.fromiter(
            (t for row in ids for t in row), dtype=np.int64, count=int(piece_ptr[-1])
        )
        return np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64), piece_ptr, flat

    def tokenize(self, sentences: Sequence[str]) -> list[list[int]]:
        """Token ids of each text as ``encode`` averages them (after ``max_chars`` and
        ``max_length``, unknown tokens dropped when ``drop_unknown``)."""
        items, _ = check_sentences(sentences)
        items = self._cut(items)
        sent_ptr, pieces, piece_ptr, piece_tok = self._pieces(items)
        out = []
        for s in range(len(items)):
            toks = [
                int(t)
                for p in pieces[sent_ptr[s] : sent_ptr[s + 1]]
                for t in piece_tok[piece_ptr[p] : piece_ptr[p + 1]]
            ]
            if self.max_length is not None:
                toks = toks[: self.max_length]
            out.append([t for t in toks if not (self.drop_unknown and t == self.unk_id)])
        return out

    def _cut(self, texts: list[str]) -> list[str]:
        m = self.max_chars
        return texts if m is None else [s[:m] if len(s) > m else s for s in texts]

    # ------------------------------------------------------------------ encode
    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
        num_threads: int | None = None,
    ) -> np.ndarray:
        """Embed texts: the (weighted) mean of their token rows.

        Parameters
        ----------
        sentences : str or sequence of str
        batch_size : int, optional
            Texts tokenized per batch (memory bound); default 16384.
        show_progress_bar : bool, optional
            A tqdm bar over batches.
        normalize : bool, optional
            Unit L2 norm; default: the model's :attr:`normalize` (as Model2Vec's ``encode``).
        num_threads : int, optional
            Threads for the GIL-free kernel; default: the CPUs available to this process.

        Returns
        -------
        ndarray of shape (n, d), float32
            ``(d,)`` for a single string, ``(0, d)`` for an empty list. A text without any
            averaged token (empty, or only unknown tokens) gets a zero vector; one UserWarning
            gives their count.

        Warns
        -----
        TruncationWarning
            Some texts were cut to ``max_chars`` characters or ``max_length`` tokens.

        Raises
        ------
        TypeError
            ``sentences`` is not a str or a sequence of str, or an unknown keyword is given.
        """
        from sentvec.encoders import _static_kernels as K

        items, single = check_sentences(sentences)
        if self.embeddings.dtype.name not in _COMPILED:  # first use: load or compile kernels
            from sentvec._jit import compiling_notice

            with compiling_notice(show_progress_bar):
                self._warm_up(K)
        batch = _BATCH if batch_size is None else check_positive_int("batch_size", batch_size)
        threads = (
            available_cpus()
            if num_threads is None
            else check_positive_int("num_threads", num_threads)
        )
        norm = self.normalize if normalize is None else bool(normalize)
        n = len(items)
        out = np.zeros((n, self.dim), dtype=np.float32)
        counts = np.zeros(n, dtype=np.int64)
        cut = np.zeros(n, dtype=np.bool_)
        self._mean_batches(K, items, batch, threads, norm, show_progress_bar, out, counts, cut)
        n_cut = int(cut.sum())
        if n_cut:
            warnings.warn(
                f"{n_cut} of {n} texts were longer than max_length={self.max_length} tokens "
                f"or max_chars={self.max_chars} characters and were truncated",
                TruncationWarning,
                stacklevel=2,
            )
        warn_zero_vectors(int((counts == 0).sum()), n, stacklevel=3)
        return out[0] if single else out

    def _mean_batches(
        self,
        K: Any,
        items: list[str],
        batch: int,
        threads: int,
        norm: bool,
        show_progress_bar: bool | None,
        out: np.ndarray,
        counts: np.ndarray,
        cut: np.ndarray,
    ) -> None:
        """The kernel over ``items`` in batches of ``batch`` texts (each batch split over
        ``threads``): rows into ``out``, averaged tokens into ``counts``, truncated texts
        marked in ``cut``."""
        n = len(items)
        chars_cut: list[int] = []
        table = self.embeddings.view(np.uint16) if self._lut is not None else self.embeddings
        lut = self._lut if self._lut is not None else np.zeros(1, dtype=np.float32)
        empty_i = np.zeros(0, dtype=np.int64)
        mapping = self.token_mapping if self.token_mapping is not None else empty_i
        weights = self.weights if self.weights is not None else np.zeros(0, dtype=np.float32)
        unk = self.unk_id if self.drop_unknown else -1
        max_len = -1 if self.max_length is None else self.max_length
        starts: Any = range(0, n, batch)
        if show_progress_bar:
            from sentvec._progress import progress_bar

            starts = progress_bar(starts, show=True, desc="static encode", unit="batch")
        pool = kernel_executor(threads, n)
        try:
            for lo in starts:
                hi = min(n, lo + batch)
                chunk = items[lo:hi]
                if self.max_chars is not None:
                    long = [i for i, s in enumerate(chunk) if len(s) > self.max_chars]
                    chars_cut.extend(lo + i for i in long)
                    chunk = self._cut(chunk) if long else chunk
                sent_ptr, pieces, piece_ptr, piece_tok = self._pieces(chunk)

                args = (sent_ptr, pieces, piece_ptr, piece_tok, table, lut, mapping, weights)
                tail = (unk, max_len, norm, out[lo:hi], counts[lo:hi], cut[lo:hi])

                def run(a: int, b: int, args: tuple = args, tail: tuple = tail) -> None:
                    K.mean_rows(a, b, *args, *tail)

                fan_out(run, piece_bounds(hi - lo, threads), pool)
        finally:
            if pool is not None:
                pool.shutdown()
        cut[chars_cut] = True

    def _warm_up(self, K: Any) -> None:
        """Call the kernel once on a one-token text (numba loads it from its cache or compiles)."""
        z = np.zeros(2, dtype=np.int64)
        one = np.ones(1, dtype=np.int64)
        table = (
            self.embeddings[:1].view(np.uint16) if self._lut is not None else self.embeddings[:1]
        )
        lut = self._lut if self._lut is not None else np.zeros(1, dtype=np.float32)
        out = np.zeros((1, self.dim), dtype=np.float32)
        e_i, e_f = np.zeros(0, np.int64), np.zeros(0, np.float32)
        K.mean_rows(0, 1, np.array([0, 1]), z[:1], np.array([0, 1]), z[:1], table, lut, e_i, e_f,
                    -1, -1, False, out, one.copy(), np.zeros(1, np.bool_))  # fmt: skip
        _COMPILED.add(self.embeddings.dtype.name)

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a Model2Vec directory (atomically: built aside, then renamed); return ``path``.

        ``model.safetensors`` (``embeddings`` in the table's dtype, ``weights`` and ``mapping``
        when set), ``tokenizer.json``, ``config.json`` (the source's entries, Model2Vec's
        ``normalize`` / ``max_length`` / ``embedding_dtype``, sentvec's settings under
        ``"sentvec"``) and sentence-transformers' ``modules.json``.

        Raises
        ------
        FileExistsError
            ``path`` is a file or a non-empty directory that is not a Model2Vec directory.
        """
        from sentvec._io import atomic_directory, atomic_write_json, atomic_write_safetensors

        with atomic_directory(path, marker="config.json", kind="a Model2Vec model") as tmp:
            tensors = {"embeddings": self.embeddings}
            if self.weights is not None:
                tensors["weights"] = self.weights
            if self.token_mapping is not None:
                tensors["mapping"] = self.token_mapping
            atomic_write_safetensors(tmp / "model.safetensors", tensors)
            self.tokenizer.save(str(tmp / "tokenizer.json"), pretty=False)
            cfg = {
                "model_type": "model2vec",
                "architectures": ["StaticModel"],
                **{k: v for k, v in self.config.items() if k != "sentvec"},
                "hidden_dim": self.dim,
                "normalize": self.normalize,
                "max_length": self.max_length,
                "embedding_dtype": self.embeddings.dtype.name,
                "sentvec": {
                    "drop_unknown": self.drop_unknown,
                    "max_chars": self.max_chars,
                    "source": self.source,
                },
            }
            if self.token_mapping is not None:
                cfg["vocabulary_quantization"] = int(self.embeddings.shape[0])
            else:
                cfg.pop("vocabulary_quantization", None)
            atomic_write_json(tmp / "config.json", cfg)
            modules = [
                {
                    "idx": 0,
                    "name": "0",
                    "path": ".",
                    "type": "sentence_transformers.models.StaticEmbedding",
                }
            ]
            if self.normalize:
                modules.append(
                    {
                        "idx": 1,
                        "name": "1",
                        "path": "1_Normalize",
                        "type": "sentence_transformers.models.Normalize",
                    }
                )
                (tmp / "1_Normalize").mkdir()
            atomic_write_json(tmp / "modules.json", modules)
        return Path(path)

    @classmethod
    def from_model2vec(cls, path: str | os.PathLike[str]) -> StaticEncoder:
        """Load a Model2Vec directory (local only; also what :meth:`save` writes).

        Reads ``config.json`` (``normalize``, ``max_length``), ``model.safetensors``
        (``embeddings``, optional ``weights`` and ``mapping``) and ``tokenizer.json``. As
        Model2Vec's ``encode``, texts are first cut to ``max_length`` times the median token
        length in characters, then to ``max_length`` tokens, and unknown tokens are dropped.

        Raises
        ------
        FileNotFoundError
            ``path`` is not a directory.
        ModelFormatError
            A missing or unreadable file, a tokenizer that does not match the table, a table of
            the wrong shape or dtype or with NaN rows (the message names the file).
        """
        d = Path(path)
        if not d.is_dir():
            raise FileNotFoundError(f"Model2Vec directory not found: {str(d)!r}")
        cfg_path = d / "config.json"
        cfg = read_json_object(cfg_path, error=ModelFormatError, missing=ModelFormatError)
        tok_path = d / "tokenizer.json"
        tokenizer = load_tokenizer_file(tok_path)
        st_path = d / "model.safetensors"
        tensors = read_safetensors(st_path)
        if "embeddings" not in tensors:
            raise ModelFormatError(f"{str(st_path)!r} holds no 'embeddings' tensor")
        own = cfg.get("sentvec", {})
        if not isinstance(own, dict):
            raise ModelFormatError(f"{str(cfg_path)!r}: 'sentvec' must be an object")
        max_length = json_int(
            cfg, "max_length", cfg_path, default=DEFAULT_MAX_LENGTH, error=ModelFormatError
        )
        if "max_chars" in own:
            max_chars = json_int(own, "max_chars", cfg_path, error=ModelFormatError)
        elif max_length is None:
            max_chars = None
        else:  # Model2Vec: max_length times the median token length
            tokens = [t for t, _ in sorted(tokenizer.get_vocab().items(), key=lambda x: x[1])]
            max_chars = max_length * int(np.median([len(t) for t in tokens]))
        try:
            return cls(
                tensors["embeddings"],
                tokenizer,
                weights=tensors.get("weights"),
                token_mapping=tensors.get("mapping"),
                normalize=bool(cfg.get("normalize", False)),
                drop_unknown=bool(own.get("drop_unknown", True)),
                max_length=max_length,
                max_chars=max_chars or None,
                source=own.get("source") or f"Model2Vec {d.name}",
                config=cfg,
            )
        except ModelFormatError as exc:
            where = tok_path if "tokenizer" in str(exc) else st_path
            raise ModelFormatError(f"{str(where)!r}: {exc}") from exc

    load = from_model2vec


def warn_zero_vectors(n_zero: int, n: int, *, stacklevel: int = 2) -> None:
    """Warn (UserWarning) that ``n_zero`` of ``n`` texts got a zero vector; nothing if none.

    The one wording of every static encoder's zero rows; ``stacklevel`` counts from the caller
    of this function (3: the caller of the ``encode`` that calls it).
    """
    if n_zero:
        warnings.warn(
            f"{n_zero} of {n} texts have no known token (empty, whitespace-only or "
            "only unknown tokens); their vectors are zero",
            UserWarning,
            stacklevel=stacklevel,
        )
