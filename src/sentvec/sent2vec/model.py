"""The Sent2Vec model: load/save (official ``.bin`` or a directory) and sentence embedding.

A sentence vector is the mean of the input-matrix rows of its in-vocabulary words and of its
hashed word n-grams (paper eq. 2, §2.2), computed exactly as the official ``textVector``:
unknown tokens are dropped *before* n-grams form, repeats count, and a sentence with no known
word gets a zero vector (counted and warned about here).
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_directory, atomic_save_npy, atomic_write_text, load_npy
from sentvec._parallel import available_cpus, fan_out, kernel_executor, piece_bounds
from sentvec._path_checks import check_model_path
from sentvec._readers import read_json_object
from sentvec._validation import check_positive_int, check_sentences
from sentvec.exceptions import InferenceOnlyError, ModelFormatError
from sentvec.sent2vec.binfile import check_mmap_mode, read_bin, write_bin
from sentvec.sent2vec.dictionary import Dictionary
from sentvec.sent2vec.encode_stats import EncodeStats, warn_encode_stats
from sentvec.sent2vec.model_dir import (
    _ARRAYS,
    _CONFIG,
    _VOCAB,
    DIR_FORMAT,
    DIR_FORMAT_VERSION,
    _check_load_memory,
    _json_default,
    _mapped_files,
    _not_a_model_dir_message,
    check_save_target,
    is_model_dir,
)
from sentvec.sent2vec.preprocessing import Preprocessing

_DEFAULT_BATCH = 16384


@dataclass(frozen=True)
class PreparedSentences:
    """Sentences as :meth:`Sent2Vec.embed_prepared` reads them: each one's UTF-8 bytes after the
    model's :attr:`~Sent2Vec.preprocessing`, back to back (made by :meth:`Sent2Vec.prepare`).

    Attributes
    ----------
    data : ndarray of shape (n_bytes,), uint8
        The sentences' bytes (one NUL byte when there are none: never an empty buffer).
    offsets : ndarray of shape (n + 1,), int64
        Sentence ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    Raises
    ------
    ValueError
        At construction: arrays of another dtype or shape, or offsets that decrease or point
        outside ``data`` (the kernel would read memory past the buffer).
    """

    data: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        data, offsets = self.data, self.offsets
        for name, arr, dtype in (("data", data, np.uint8), ("offsets", offsets, np.int64)):
            if not (
                isinstance(arr, np.ndarray)
                and arr.dtype == dtype
                and arr.ndim == 1
                and len(arr) >= 1
                and arr.flags.c_contiguous
            ):
                raise ValueError(
                    f"PreparedSentences.{name} must be a non-empty contiguous 1-d "
                    f"{np.dtype(dtype).name} array"
                )
        # the kernel reads data[offsets[i]:offsets[i + 1]] unchecked: a bad offset would read
        # memory outside the buffer
        if offsets[0] < 0 or offsets[-1] > len(data) or (np.diff(offsets) < 0).any():
            raise ValueError(
                "PreparedSentences.offsets must start at 0 or more, never decrease and end "
                f"within data ({len(data)} bytes); make them with Sent2Vec.prepare"
            )

    def __len__(self) -> int:
        return len(self.offsets) - 1


class Sent2Vec:
    """A Sent2Vec model (paper: Pagliardini et al. 2018, arXiv:1703.02507).

    Parameters
    ----------
    dictionary : Dictionary
        Vocabulary in the official order, with ``bucket`` and ``word_ngrams``.
    input_matrix : ndarray of shape (nwords + bucket (+1), dim), float32
        Source vectors: word rows, then hashed n-gram rows (official files have one extra row).
    output_matrix : ndarray of shape (nwords, dim), float32, optional
        Target vectors (only needed to write a complete ``.bin``; zeros if omitted, unless
        ``inference_only``).
    args : dict, optional
        Hyper-parameters by official flag name (``dim``, ``epoch``, ``lr``, ``minCount``, ...).
    preprocessing : Preprocessing or dict, optional
        Text preparation applied by :meth:`encode` (default: none, as the official code).
    inference_only : bool, default False
        The model has no output matrix (``output_matrix`` must be None and stays None): it
        encodes and saves as a directory, but :meth:`save_bin` raises
        :class:`InferenceOnlyError`.

    Attributes
    ----------
    dim, nwords : int
    words : list of str
    inference_only : bool
    preferred_text_variant : str
        ``"senteval"``: the reference models were trained on Moses-tokenized lower-cased text.
    """

    preferred_text_variant = "senteval"

    #: Pipeline component type (see :func:`sentvec.encoders.formats.by_encoder_type`).
    encoder_type = "sent2vec"

    def __init__(
        self,
        dictionary: Dictionary,
        input_matrix: np.ndarray,
        output_matrix: np.ndarray | None = None,
        *,
        args: dict[str, Any] | None = None,
        preprocessing: Preprocessing | dict[str, Any] | None = None,
        inference_only: bool = False,
    ) -> None:
        if not isinstance(dictionary, Dictionary):
            raise TypeError(f"dictionary must be a Dictionary, got {type(dictionary).__name__}")
        inp = input_matrix if isinstance(input_matrix, np.memmap) else np.asarray(input_matrix)
        if inp.ndim != 2 or inp.dtype != np.float32:
            raise ValueError(
                f"input_matrix must be a 2-D float32 array, got shape {inp.shape} dtype {inp.dtype}"
            )
        need = dictionary.nwords + (dictionary.bucket if dictionary.word_ngrams > 1 else 0)
        if inp.shape[0] < need:
            raise ValueError(
                f"input_matrix has {inp.shape[0]} rows; the dictionary needs at least "
                f"{need} (nwords {dictionary.nwords} + bucket {dictionary.bucket})"
            )
        if inference_only:
            if output_matrix is not None:
                raise ValueError(
                    "an inference_only model has no output matrix; pass output_matrix=None"
                )
            out = None
        else:
            if output_matrix is None:
                output_matrix = np.zeros((dictionary.nwords, inp.shape[1]), dtype=np.float32)
            out = (
                output_matrix if isinstance(output_matrix, np.memmap) else np.asarray(output_matrix)
            )
            if out.shape != (dictionary.nwords, inp.shape[1]) or out.dtype != np.float32:
                raise ValueError(
                    f"output_matrix must be float32 of shape "
                    f"{(dictionary.nwords, inp.shape[1])}, got {out.shape} "
                    f"{out.dtype}"
                )
        self.dictionary = dictionary
        self.input_matrix = inp
        self.output_matrix: np.ndarray | None = out
        self.inference_only = bool(inference_only)
        self._mapped = _mapped_files((inp, out))
        self.args: dict[str, Any] = dict(args or {})
        self.args.update(
            dim=int(inp.shape[1]), wordNgrams=dictionary.word_ngrams, bucket=dictionary.bucket
        )
        if isinstance(preprocessing, Preprocessing):
            self.preprocessing = preprocessing
        else:
            self.preprocessing = Preprocessing.from_dict(preprocessing)
        self.source: str | None = None
        self._table: tuple | None = None

    # ------------------------------------------------------------------ description
    @property
    def dim(self) -> int:
        return int(self.input_matrix.shape[1])

    @property
    def nwords(self) -> int:
        return self.dictionary.nwords

    @property
    def words(self) -> list[str]:
        return self.dictionary.words

    def __repr__(self) -> str:
        return (
            f"Sent2Vec(nwords={self.nwords}, dim={self.dim}, "
            f"word_ngrams={self.dictionary.word_ngrams}, bucket={self.dictionary.bucket}"
            f"{', inference_only=True' if self.inference_only else ''})"
        )

    def get_sentence_embedding_dimension(self) -> int:
        """The width of the vectors (:attr:`dim`)."""
        return self.dim

    def config_dict(self) -> dict[str, Any]:
        """JSON-serialisable description for result records."""
        return {
            "encoder": "Sent2Vec",
            "source": self.source,
            "dim": self.dim,
            "nwords": self.nwords,
            "ntokens": self.dictionary.ntokens,
            "args": {k: v for k, v in self.args.items()},
            "preprocessing": self.preprocessing.to_dict(),
        }

    def get_word_vector(self, word: str) -> np.ndarray:
        """Input-matrix row of ``word`` (shape (dim,), float32).

        Raises
        ------
        KeyError
            If ``word`` is not in the vocabulary.
        """
        i = self.dictionary.get_id(word)
        if i < 0:
            raise KeyError(f"{word!r} is not in the vocabulary")
        self._check_mapped()
        return np.array(self.input_matrix[i])

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        mmap: str | bool | None = "r",
        inference_only: bool = False,
    ) -> Sent2Vec:
        """Load an official ``.bin`` file or a directory written by :meth:`save`.

        Parameters
        ----------
        path : path-like
            ``.bin`` file (recognised by its magic number) or model directory.
        mmap : {"r", "c", None}, default "r"
            gensim's convention. ``"r"`` memory-maps the matrices read-only, straight from the
            ``.bin`` (at their offsets: no copy, no conversion) or from the directory's
            ``.npy`` files: loading takes about as long as reading the vocabulary, only the
            rows that encoding touches are read, and processes mapping the same file share
            those pages through the page cache. ``"c"`` maps copy-on-write (the matrices are
            writable; writes stay in this process). None reads the matrices into memory (the
            behaviour before version 0.2 for ``.bin`` files). True and False mean ``"r"`` and
            None. A file that cannot be mapped is read, with a warning.
        inference_only : bool, default False
            Skip the output matrix, which only training and :meth:`save_bin` need (with
            ``mmap=None`` this saves reading it: a third of the file for the published
            models). A model directory saved from an inference-only model has no output
            matrix and always loads inference-only.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        ModelFormatError
            If it is neither a valid ``.bin`` nor a valid model directory (a ValueError); every
            size is checked against the files before anything is mapped.
        ValueError
            If ``mmap`` is not one of the values above.
        InsufficientMemoryError
            (a ValueError) ``mmap=None`` and the model files (about the matrices' size) exceed
            the memory available or ``$SENTVEC_MAX_MEMORY``; nothing is read.
        """
        mode = check_mmap_mode(mmap)
        p = Path(path)
        check_model_path(p)
        if not p.exists():
            raise FileNotFoundError(f"model not found: {str(p)!r}")
        if mode is None:  # read into memory: the matrices must fit (memory maps need not)
            _check_load_memory(p)
        if p.is_dir():
            model = cls._load_dir(p, mmap=mode, inference_only=inference_only)
        else:
            b = read_bin(p, mmap=mode, inference_only=inference_only)
            model = cls(
                b.dictionary,
                b.input_matrix,
                b.output_matrix,
                args=b.args,
                inference_only=inference_only,
            )
        model.source = str(p)
        return model

    @classmethod
    def _load_dir(cls, d: Path, *, mmap: str | None, inference_only: bool) -> Sent2Vec:
        cfg_path = d / _CONFIG
        if not cfg_path.is_file():
            raise ModelFormatError(_not_a_model_dir_message(d))
        cfg = read_json_object(cfg_path, error=ModelFormatError)
        vocab = read_json_object(d / _VOCAB, error=ModelFormatError, missing=ModelFormatError)
        if cfg.get("format") != DIR_FORMAT:
            raise ModelFormatError(f"{str(cfg_path)!r} is not a {DIR_FORMAT} config")
        if cfg.get("format_version") != DIR_FORMAT_VERSION:
            raise ModelFormatError(
                f"{str(cfg_path)!r}: unsupported format_version {cfg.get('format_version')!r}"
            )
        has_output = cfg.get("output_matrix", True) is not False
        inference_only = inference_only or not has_output
        arrays: dict[str, Any] = {}
        for name in _ARRAYS:
            if name == "output" and not has_output:
                continue
            f = d / f"{name}.npy"
            if not os.path.lexists(f):  # else load_npy says what is there instead of a file
                raise ModelFormatError(f"{str(d)!r}: missing {name}.npy")
            # an inference-only load still checks output.npy, by mapping it (header and size)
            mode = "r" if name == "output" and inference_only else mmap
            try:  # load_npy: an empty or corrupt file is a ValueError naming it
                arrays[name] = load_npy(f, mmap=mode if name in ("input", "output") else False)
            except (OSError, ValueError) as exc:
                raise ModelFormatError(str(exc)) from exc
        if inference_only and "output" in arrays:
            out, inp = arrays["output"], arrays["input"]
            if (
                out.ndim != 2
                or inp.ndim != 2
                or out.shape[1] != inp.shape[1]
                or out.dtype != np.float32
            ):
                raise ModelFormatError(
                    f"{str(d)!r}: output.npy holds {out.dtype} of shape "
                    f"{out.shape}, which does not fit input.npy's "
                    f"{inp.dtype} of shape {inp.shape}"
                )
        if inference_only:
            arrays["output"] = None
        try:
            dc = cfg["dictionary"]
            dictionary = Dictionary(
                vocab["words"],
                arrays["counts"],
                ntokens=dc["ntokens"],
                bucket=dc["bucket"],
                word_ngrams=dc["word_ngrams"],
                labels=vocab.get("labels", []),
                label_counts=arrays["label_counts"],
                pruneidx_size=dc.get("pruneidx_size", -1),
                prune_pairs=arrays["prune_pairs"],
            )
            return cls(
                dictionary,
                arrays["input"],
                arrays["output"],
                args=cfg.get("args"),
                preprocessing=cfg.get("preprocessing"),
                inference_only=inference_only,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ModelFormatError(f"{str(d)!r}: inconsistent model files: {what}") from exc

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the model as a directory (``config.json``, ``vocab.json``, ``*.npy``; no pickle).

        The directory is written under a temporary name next to ``directory`` and renamed into
        place; an existing model directory there is replaced. An :attr:`inference_only` model
        is written without ``output.npy`` (recorded in ``config.json``); such a directory
        loads inference-only.

        Raises
        ------
        FileExistsError
            If ``directory`` exists and is not empty and not a sentvec Sent2Vec model directory.
        ValueError
            If ``directory`` cannot be replaced by a rename (the working directory or one of its
            parents, a filesystem root, a mount point).
        """
        target = Path(directory)
        self._check_mapped()
        with atomic_directory(
            target, marker=_CONFIG, marker_format=DIR_FORMAT, kind="a Sent2Vec model"
        ) as tmp:
            d = self.dictionary
            cfg = {
                "format": DIR_FORMAT,
                "format_version": DIR_FORMAT_VERSION,
                "args": self.args,
                "preprocessing": self.preprocessing.to_dict(),
                "dictionary": {
                    "nwords": d.nwords,
                    "nlabels": d.nlabels,
                    "ntokens": d.ntokens,
                    "bucket": d.bucket,
                    "word_ngrams": d.word_ngrams,
                    "pruneidx_size": d.pruneidx_size,
                },
                "dim": self.dim,
                "output_matrix": not self.inference_only,
            }
            text = json.dumps(cfg, indent=2, default=_json_default)
            atomic_write_text(tmp / _CONFIG, text + "\n")
            # ensure_ascii keeps non-UTF-8 bytes (lone surrogates) representable
            atomic_write_text(tmp / _VOCAB, json.dumps({"words": d.words, "labels": d.labels}))
            for name, arr in (
                ("counts", d.counts),
                ("label_counts", d.label_counts),
                ("prune_pairs", d.prune_pairs),
                ("input", self.input_matrix),
                ("output", self.output_matrix),
            ):
                if arr is not None:
                    atomic_save_npy(tmp / f"{name}.npy", arr)
        return target

    def save_bin(self, path: str | os.PathLike[str]) -> Path:
        """Write an official sent2vec ``.bin`` file (readable by the official binary), atomically.

        The ``.bin`` format cannot record :attr:`preprocessing`; a warning says so when it is not
        the default.

        Raises
        ------
        InferenceOnlyError
            If the model has no output matrix (:attr:`inference_only`); nothing is written.
        ModelFormatError
            If a memory-mapped model file has shrunk since it was loaded.
        """
        if self.output_matrix is None:
            raise InferenceOnlyError(
                f"save_bin needs the output matrix, which this model{_from(self.source)} does not "
                "hold (it was loaded with inference_only=True, or from a directory saved without "
                "one); load the complete model with Sent2Vec.load(path, inference_only=False) "
                "from its .bin or a complete model directory"
            )
        self._check_mapped()
        if not self.preprocessing.is_identity:
            warnings.warn(
                f"the .bin format cannot record preprocessing "
                f"{self.preprocessing.to_dict()}; apply it yourself to text given to "
                "this file's model",
                UserWarning,
                stacklevel=2,
            )
        write_bin(
            path,
            args=self.args,
            dictionary=self.dictionary,
            input_matrix=self.input_matrix,
            output_matrix=self.output_matrix,
        )
        return Path(path)

    def __getstate__(self) -> dict[str, Any]:
        # the mmap objects behind memory-mapped matrices do not pickle; the matrices travel as
        # arrays (a copy), so a pickled model (a Dask worker's, say) is an in-memory model
        state = self.__dict__.copy()
        state["_mapped"] = []
        return state

    def _check_mapped(self) -> None:
        """Raise :class:`ModelFormatError` if a file the matrices are mapped from has become
        shorter than they need (touching a page past its end would kill the process with
        SIGBUS). One ``fstat`` per mapped file."""
        for mm, need, name in self._mapped:
            try:
                now = mm.size()
            except (OSError, ValueError) as exc:
                raise ModelFormatError(
                    f"{name!r}: the memory-mapped model file can no longer "
                    f"be checked ({exc}); load the model again"
                ) from exc
            if now < need:
                raise ModelFormatError(
                    f"{name!r}: the model file was truncated to {now} bytes after it was "
                    f"memory-mapped; its matrices need {need} bytes. Restore the file and load "
                    "the model again (replace model files by renaming a new file over them, "
                    "never by rewriting them in place)"
                )

    # ------------------------------------------------------------------ inference
    def _lookup_table(self) -> tuple:
        if self._table is None:
            d = self.dictionary
            wbytes, offsets = d.word_bytes()
            self._table = (d.word_table(), wbytes, offsets, d.eos_id)
        return self._table

    def _tables(self, show_progress_bar: bool | None = None) -> tuple:
        """The kernel's lookup tables; on first use the kernel is loaded from numba's cache (or
        compiled, with a notice) by one call on no sentences."""
        if self._table is None:
            from sentvec._jit import COMPILE_SECONDS, compiling_notice

            with compiling_notice(
                show_progress_bar, expected=COMPILE_SECONDS["sent2vec-inference"]
            ):
                none = PreparedSentences(
                    np.frombuffer(b"\x00", dtype=np.uint8), np.zeros(1, dtype=np.int64)
                )
                empty = np.zeros(0, dtype=np.int64)
                out = np.zeros((0, self.dim), dtype=np.float32)
                self._embed_range(none, 0, 0, out, empty, empty, empty, self._lookup_table())
        return self._lookup_table()

    def _prepare_items(self, items: list[str]) -> PreparedSentences:
        if not self.preprocessing.is_identity:
            items = self.preprocessing.prepare_batch(items)
        enc = [_encode_utf8(s) for s in items]
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in enc], out=offsets[1:])
        return PreparedSentences(np.frombuffer(b"".join(enc) or b"\x00", dtype=np.uint8), offsets)

    def prepare(self, sentences: Any) -> PreparedSentences:
        """The Python half of :meth:`encode`: the sentences after :attr:`preprocessing`, as
        UTF-8 bytes (lone surrogates kept), ready for :meth:`embed_prepared`.

        With the identity preprocessing (a ``.bin``, or a model trained on tokenized text) this
        is one ``str.encode`` per sentence; ``sentvec serve`` runs it on its event loop so that
        its encoding thread only runs the GIL-free kernel.

        Parameters
        ----------
        sentences : str or sequence of str

        Returns
        -------
        PreparedSentences

        Raises
        ------
        TypeError
            If ``sentences`` is not a str or a sequence of str.
        """
        items, _ = check_sentences(sentences)
        return self._prepare_items(items)

    def _embed_range(
        self,
        prepared: PreparedSentences,
        a: int,
        b: int,
        out: np.ndarray,
        nfeat: np.ndarray,
        ntok: np.ndarray,
        nskip: np.ndarray,
        tables: tuple,
    ) -> None:
        """Sentences ``a:b`` of ``prepared`` into ``out[a:b]`` and the counts' ``[a:b]`` (the
        kernel, without the GIL)."""
        from sentvec.sent2vec import _infer

        table, wbytes, woffsets, skip = tables
        d = self.dictionary
        _infer.embed_range(
            prepared.data,
            prepared.offsets,
            a,
            b,
            table,
            wbytes,
            woffsets,
            skip,
            self.input_matrix,
            d.nwords,
            d.bucket,
            d.word_ngrams,
            out,
            nfeat,
            ntok,
            nskip,
        )

    def embed_prepared(self, prepared: PreparedSentences) -> tuple[np.ndarray, np.ndarray]:
        """The compiled half of :meth:`encode`, on the calling thread: the kernel runs without
        the GIL, so threads embed side by side (Python work: a few array allocations).

        Parameters
        ----------
        prepared : PreparedSentences
            From :meth:`prepare` of this model.

        Returns
        -------
        vectors : ndarray of shape (n, dim), float32
            What :meth:`encode` returns for the same sentences (zero rows for sentences without
            a known word; no warning here).
        tokens : ndarray of shape (n,), int64
            Tokens of each sentence as the model splits it (:attr:`EncodeStats.tokens`).

        Raises
        ------
        ModelFormatError
            A memory-mapped model file was truncated since it was loaded.
        """
        tables = self._tables()
        self._check_mapped()
        n = len(prepared)
        out = np.zeros((n, self.dim), dtype=np.float32)
        counts = np.zeros((3, n), dtype=np.int64)
        self._embed_range(prepared, 0, n, out, counts[0], counts[1], counts[2], tables)
        return out, counts[1]

    def encode_with_stats(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
        num_threads: int | None = None,
    ) -> tuple[np.ndarray, EncodeStats]:
        """Like :meth:`encode`, without warnings, also returning :class:`EncodeStats`."""
        items, single = check_sentences(sentences)
        batch = (
            _DEFAULT_BATCH if batch_size is None else check_positive_int("batch_size", batch_size)
        )
        threads = (
            available_cpus()
            if num_threads is None
            else check_positive_int("num_threads", num_threads)
        )
        self._check_mapped()
        n = len(items)
        out = np.zeros((n, self.dim), dtype=np.float32)
        nfeat = np.zeros(n, dtype=np.int64)
        ntok = np.zeros(n, dtype=np.int64)
        nskip = np.zeros(n, dtype=np.int64)
        tables = self._tables(show_progress_bar)
        starts = range(0, n, batch)
        if show_progress_bar:
            from sentvec._progress import progress_bar

            starts = progress_bar(starts, show=True, desc="Sent2Vec encode", unit="batch")
        pool = kernel_executor(threads, n)
        try:
            for lo in starts:
                hi = min(n, lo + batch)
                self._check_mapped()  # a model file shrunk since: an error, not a SIGBUS
                prepared = self._prepare_items(items[lo:hi])
                views = (out[lo:hi], nfeat[lo:hi], ntok[lo:hi], nskip[lo:hi])

                # the batch's arrays bound as defaults: each iteration's run sees its own batch
                def run(
                    a: int,
                    b: int,
                    prepared: PreparedSentences = prepared,
                    views: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = views,
                ) -> None:
                    self._embed_range(prepared, a, b, *views, tables)

                fan_out(run, piece_bounds(hi - lo, threads), pool)
        finally:
            if pool is not None:
                pool.shutdown()
        if normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            np.divide(out, norms, out=out, where=norms > 0)
        stats = EncodeStats(
            n_sentences=n,
            n_zero=int((nfeat == 0).sum()),
            n_empty=int((ntok == 0).sum()),
            n_eos_tokens=int(nskip.sum()),
            n_nonfinite=int((~np.isfinite(out)).any(axis=1).sum()) if n else 0,
            tokens=ntok,
        )
        return (out[0] if single else out), stats

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
        num_threads: int | None = None,
    ) -> np.ndarray:
        """Embed sentences: mean of the input rows of their known words and hashed n-grams.

        Each item is one sentence. Tokens are split on the official separators (space, ``\\t``,
        ``\\r``, ``\\v``, ``\\f``, NUL) after the model's :attr:`preprocessing`. Deliberate
        differences from the official wrapper, which would silently cut the sentence: a newline
        inside an item is one more separator, and a literal ``</s>`` token is ignored (not
        averaged, and its neighbours form a bigram), with a warning counting them.

        Parameters
        ----------
        sentences : str or sequence of str
        batch_size : int, optional
            Sentences prepared per batch (memory bound); default 16384.
        show_progress_bar : bool, optional
            Show a tqdm bar over batches.
        normalize : bool, optional
            Scale each non-zero vector to unit L2 norm; None (the default) is False.
        num_threads : int, optional
            Threads for the (GIL-free) kernel; default: the CPUs available to this process.

        Returns
        -------
        ndarray of shape (n, dim), float32
            ``(dim,)`` for a single string, ``(0, dim)`` for an empty list. Sentences without any
            in-vocabulary word (including empty and whitespace-only ones) get zero vectors; one
            UserWarning gives their count.

        Raises
        ------
        TypeError
            If ``sentences`` is not a str or a sequence of str.
        """
        emb, stats = self.encode_with_stats(
            sentences,
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            normalize=normalize,
            num_threads=num_threads,
        )
        warn_encode_stats(stats, stacklevel=3)
        return emb


def _from(source: str | None) -> str:
    return f" from {source!r}" if source else ""


def _encode_utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # lone surrogates not made by surrogateescape: keep them, unmatched
        return s.encode("utf-8", "surrogatepass")


__all__ = [
    "Sent2Vec",
    "EncodeStats",
    "InferenceOnlyError",
    "ModelFormatError",
    "check_save_target",
    "is_model_dir",
    "warn_encode_stats",
]
