"""A static model with bigram rows: Sent2Vec's sentence vector over a subword tokenizer.

Sent2Vec (Pagliardini et al. 2018, Eq. 2) embeds a sentence as the mean of the rows of its
unigrams *and* its bigrams. :class:`BigramStaticEncoder` does the same over the token ids of a
Hugging Face ``tokenizers`` tokenizer (what ``sentvec distill --bigrams N`` writes): for a text
with token ids ``t_1 .. t_n`` (as :meth:`StaticEncoder.tokenize` gives them: unknown tokens
dropped, ``max_length`` kept) the vector is

``v = (sum_i E[t_i] + sum_{b in B} E[V + index(b)]) / (n + |B|)``,

``B`` the adjacent pairs ``(t_i, t_{i+1})`` that have a row (the listed bigrams; a pair without
one is not counted, where Sent2Vec's hashed buckets give every pair some row), then scaled to
unit L2 norm when ``normalize``. Rows ``0 .. V-1`` are the tokens, rows ``V ..`` the bigrams.

Its directory format is sentvec's own, so that no Model2Vec loader can read it and silently
drop the bigrams: ``bigram_model.safetensors`` (``embeddings`` and ``bigrams``, an int64
``(n_bigrams, 2)`` table of token-id pairs in row order), ``tokenizer.json`` and
``sentvec_bigrams.json`` (normalize, max_length, the source). The official Sent2Vec ``.bin``
cannot hold it: its vocabulary is whole words and its bigrams live in hashed buckets.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._readers import json_int, read_json_object
from sentvec._validation import check_positive_int, check_sentences
from sentvec.encoders.static import (
    DEFAULT_MAX_LENGTH,
    StaticEncoder,
    load_tokenizer_file,
    read_safetensors,
    warn_zero_vectors,
)
from sentvec.exceptions import ModelFormatError

__all__ = ["BigramStaticEncoder", "BIGRAM_CONFIG", "is_bigram_model_dir"]

#: Texts tokenized and averaged per batch by default (as :class:`StaticEncoder`'s).
_BATCH = 16384

#: The config file that marks a :class:`BigramStaticEncoder` directory.
BIGRAM_CONFIG = "sentvec_bigrams.json"
_TENSORS = "bigram_model.safetensors"
_FORMAT = "sentvec-static-bigrams"
_COUNTS = ("tokens", "bigrams")  # recorded in the config, checked against the tables


def is_bigram_model_dir(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a directory holding :data:`BIGRAM_CONFIG` (a FIFO or a broken link
    in its place too: loading then says what it is)."""
    return Path(path).is_dir() and os.path.lexists(Path(path) / BIGRAM_CONFIG)


class BigramStaticEncoder:
    """Sentence vector = mean of the rows of its tokens and of its listed bigrams (Sent2Vec).

    Parameters
    ----------
    embeddings : ndarray of shape (V + n_bigrams, d), float32 or float16
        Token rows (row ``i`` = token id ``i``), then one row per bigram.
    tokenizer : tokenizers.Tokenizer
        ``V`` = its largest id + 1.
    bigrams : ndarray of shape (n_bigrams, 2), int
        Token-id pairs, row ``V + j`` for pair ``j``; no pair twice.
    normalize : bool, default True
    max_length : int or None, default 512
        Tokens kept per text (bigrams are formed from the kept tokens).
    source : str, optional
    config : dict, optional
        JSON-serialisable records kept with the model (``sentvec train-static`` writes its
        recipe under ``"sentvec_train_static"``); saved in the config file under ``"config"``.

    Raises
    ------
    ModelFormatError
        A table that does not fit the tokenizer and the bigrams, ids out of range, a repeated
        pair, NaN rows.
    """

    encoder_type = "bigram-static"
    preferred_text_variant = "raw"

    def __init__(
        self,
        embeddings: np.ndarray,
        tokenizer: Any,
        bigrams: np.ndarray,
        *,
        normalize: bool = True,
        max_length: int | None = DEFAULT_MAX_LENGTH,
        source: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        E = np.asarray(embeddings)
        P = np.asarray(bigrams)
        if P.ndim != 2 or P.shape[1] != 2 or P.dtype.kind not in "iu":
            raise ModelFormatError(f"bigrams must be an int (n, 2) table, got {P.shape} {P.dtype}")
        if E.ndim != 2 or E.shape[0] <= len(P):
            raise ModelFormatError(
                f"embeddings of shape {E.shape} cannot hold {len(P)} bigram rows after the tokens"
            )
        n_tokens = E.shape[0] - len(P)
        # the token part is checked (dtype, NaN, tokenizer size) by the StaticEncoder it becomes
        self.unigrams = StaticEncoder(
            E[:n_tokens], tokenizer, normalize=False, max_length=max_length, source=source
        )
        if not np.isfinite(E[n_tokens:]).all():
            raise ModelFormatError("bigram rows hold NaN or infinity")
        if len(P) and (P.min() < 0 or P.max() >= n_tokens):
            raise ModelFormatError(f"bigram token ids outside the {n_tokens} token rows")
        self.n_tokens = n_tokens
        self.embeddings = self.unigrams.embeddings if not len(P) else np.ascontiguousarray(E)
        self.bigrams = P.astype(np.int64)
        keys = self.bigrams[:, 0] * n_tokens + self.bigrams[:, 1]
        if len(np.unique(keys)) != len(keys):
            raise ModelFormatError("a bigram is listed twice")
        self._index = {int(k): n_tokens + j for j, k in enumerate(keys)}
        self.tokenizer = tokenizer
        self.normalize = bool(normalize)
        self.max_length = max_length
        self.source = source
        self.config: dict[str, Any] = dict(config or {})

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def get_sentence_embedding_dimension(self) -> int:
        return self.dim

    def config_dict(self) -> dict[str, Any]:
        """JSON-serialisable description for result records (the key names of the others)."""
        return {
            "encoder": "BigramStaticEncoder",
            "source": self.source,
            "dim": self.dim,
            "tokens": self.n_tokens,
            "bigrams": len(self.bigrams),
            "normalize": self.normalize,
        }

    def __repr__(self) -> str:
        return (
            f"BigramStaticEncoder({self.n_tokens} tokens + {len(self.bigrams)} bigrams x "
            f"{self.dim}, source={self.source!r})"
        )

    def row_ids(self, sentences: Sequence[str]) -> list[list[int]]:
        """Rows averaged for each text: its token ids, then the rows of its listed bigrams."""
        n = self.n_tokens
        out = []
        for ids in self.unigrams.tokenize(sentences):
            pairs = (self._index.get(a * n + b) for a, b in zip(ids, ids[1:], strict=False))
            out.append(ids + [r for r in pairs if r is not None])
        return out

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
    ) -> np.ndarray:
        """Embed texts (see the module docstring).

        Parameters
        ----------
        sentences : str or sequence of str
        batch_size : int, optional
            Texts tokenized and averaged per batch (memory bound); default 16384.
        show_progress_bar : bool, optional
            A tqdm bar over batches.
        normalize : bool, optional
            Unit L2 norm; default: the model's :attr:`normalize`.

        Returns
        -------
        ndarray of shape (n, d), float32
            ``(d,)`` for a single string, ``(0, d)`` for an empty list. A text without any
            row (empty, only unknown tokens) gets a zero vector; one UserWarning gives their
            count.

        Raises
        ------
        TypeError, ValueError
            Not strings (``sentvec._validation.check_sentences``), an unknown keyword, a
            ``batch_size`` below 1.
        """
        import scipy.sparse

        items, single = check_sentences(sentences)
        batch = _BATCH if batch_size is None else check_positive_int("batch_size", batch_size)
        table = self.embeddings.astype(np.float32, copy=False)
        n = len(items)
        X = np.zeros((n, self.dim), dtype=np.float32)
        n_zero = 0
        starts: Any = range(0, n, batch)
        if show_progress_bar:
            from sentvec._progress import progress_bar

            starts = progress_bar(starts, show=True, desc="static encode", unit="batch")
        for lo in starts:
            rows = self.row_ids(items[lo : lo + batch])
            lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
            indptr = np.concatenate([[0], np.cumsum(lengths)])
            flat = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(indptr[-1]))
            vals = np.repeat(1.0 / np.maximum(lengths, 1), lengths)
            M = scipy.sparse.csr_matrix((vals, flat, indptr), shape=(len(rows), len(table)))
            X[lo : lo + len(rows)] = M @ table
            n_zero += int((lengths == 0).sum())
        if self.normalize if normalize is None else normalize:
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
        warn_zero_vectors(n_zero, n, stacklevel=3)
        return X[0] if single else X

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the directory atomically (see the module docstring); return ``path``.

        Raises
        ------
        FileExistsError
            ``path`` is a file or a non-empty directory of another kind.
        """
        from sentvec._io import atomic_directory

        with atomic_directory(path, marker=BIGRAM_CONFIG, kind="a static bigram model") as tmp:
            self.write_into(tmp)
        return Path(path)

    def write_into(self, directory: Path) -> None:
        """Write the model's files into an existing directory (no atomicity: for callers that
        build a whole directory aside, as ``DistilledModel.save`` does)."""
        from sentvec._io import atomic_write_json, atomic_write_safetensors

        atomic_write_safetensors(
            directory / _TENSORS, {"embeddings": self.embeddings, "bigrams": self.bigrams}
        )
        self.tokenizer.save(str(directory / "tokenizer.json"), pretty=False)
        atomic_write_json(
            directory / BIGRAM_CONFIG,
            {
                "format": _FORMAT,
                "version": 1,
                "normalize": self.normalize,
                "max_length": self.max_length,
                "tokens": self.n_tokens,
                "bigrams": len(self.bigrams),
                "embedding_dtype": self.embeddings.dtype.name,
                "source": self.source,
                "config": self.config,
            },
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BigramStaticEncoder:
        """Read a directory written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            ``path`` is not a directory.
        ModelFormatError
            A missing or unreadable file, a wrong format tag, tables that do not fit.
        """
        d = Path(path)
        if not d.is_dir():
            raise FileNotFoundError(f"model directory not found: {str(d)!r}")
        cfg_path = d / BIGRAM_CONFIG
        cfg = read_json_object(cfg_path, error=ModelFormatError, missing=ModelFormatError)
        if cfg.get("format") != _FORMAT:
            raise ModelFormatError(f"{str(cfg_path)!r} is not a {_FORMAT} config")
        max_length = json_int(
            cfg, "max_length", cfg_path, default=DEFAULT_MAX_LENGTH, error=ModelFormatError
        )
        counts = {k: json_int(cfg, k, cfg_path, minimum=0, error=ModelFormatError) for k in _COUNTS}
        tensors = read_safetensors(d / _TENSORS)
        if "embeddings" not in tensors or "bigrams" not in tensors:
            raise ModelFormatError(f"{str(d / _TENSORS)!r} lacks 'embeddings' or 'bigrams'")
        tok_path = d / "tokenizer.json"
        tokenizer = load_tokenizer_file(tok_path)
        try:
            model = cls(
                tensors["embeddings"],
                tokenizer,
                tensors["bigrams"],
                normalize=bool(cfg.get("normalize", True)),
                max_length=max_length,
                source=cfg.get("source") or f"static bigram model {d.name}",
                config=cfg.get("config") if isinstance(cfg.get("config"), dict) else None,
            )
        except ModelFormatError as exc:
            raise ModelFormatError(f"{str(d / _TENSORS)!r} / {str(tok_path)!r}: {exc}") from exc
        found = {"tokens": model.n_tokens, "bigrams": len(model.bigrams)}
        for key, n in counts.items():
            if n is not None and n != found[key]:
                raise ModelFormatError(
                    f"{str(cfg_path)!r} records {n} {key} but {str(d / _TENSORS)!r} holds "
                    f"{found[key]}"
                )
        return model
