"""SIF and uSIF: sentence vectors as frequency-weighted averages of word vectors.

* :class:`SIFEncoder` (Arora, Liang & Ma, "A Simple but Tough-to-Beat Baseline for Sentence
  Embeddings", ICLR 2017, Algorithm 1);
* :class:`USIFEncoder` (Ethayarajh, "Unsupervised Random Walk Sentence Embeddings: A Strong but
  Simple Baseline", RepL4NLP 2018, Algorithm 1).

Both are built from word vectors plus word counts: a Sent2Vec model's unigram input rows and
dictionary counts (``from_sent2vec``), or a transformer's input token embeddings plus token
counts of a corpus file tokenized with its tokenizer (``from_transformer``; the counts are
stored with the encoder). The common-component removal is a
:class:`sentvec.whitening.CommonComponentRemoval`, fitted on a corpus (:meth:`fit`) or, with
``common_component="year"``, transductively on each STS task by the STS protocol
(:func:`sentvec.evaluation.evaluate_sts`, through :meth:`year_postprocessor`).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from sentvec._io import atomic_directory, atomic_save_npy, atomic_write_json, load_npy
from sentvec._readers import read_json, read_json_object
from sentvec._validation import check_choice, check_float_range, check_positive_int, check_sentences
from sentvec.encoders.base import TokenEmbeddings, text_variant_of
from sentvec.encoders.sif_weights import count_tokens, sif_weights, usif_parameter, usif_weights

__all__ = [
    "SIFEncoder",
    "USIFEncoder",
    "COMMON_COMPONENT_MODES",
    "count_tokens",
    "usif_parameter",
    "sif_weights",
    "usif_weights",
    "load_sif_encoder",
    "SIF_DEFAULT_A",
    "USIF_DEFAULT_N",
    "USIF_DEFAULT_M",
]

#: ``common_component`` options: fitted by ``fit`` on a corpus, per STS task, or not removed.
COMMON_COMPONENT_MODES = ("fit", "year", "none")
SIF_DEFAULT_A = 1e-3
USIF_DEFAULT_N = 11
USIF_DEFAULT_M = 5

_CONFIG_FILE = "sif_encoder.json"
_FORMAT = "sentvec-sif-encoder"
_VERSION = 1


class _WeightedAverageEncoder:
    """Shared machinery of SIF and uSIF (this module only)."""

    method = ""
    encoder_type = ""
    _weighting = "full"

    def __init__(
        self,
        vectors: Any,
        counts: Any,
        *,
        words: list[str] | None,
        tokenizer: Any,
        preprocessing: dict[str, Any] | None,
        n_components: int,
        common_component: str,
        source: str | None,
        preferred_text_variant: str,
    ) -> None:
        V = np.asarray(vectors)
        if V.ndim != 2 or V.shape[0] == 0 or V.shape[1] == 0 or V.dtype.kind != "f":
            raise ValueError(
                f"vectors must be a non-empty 2-D float array, got shape {V.shape} dtype {V.dtype}"
            )
        V = np.ascontiguousarray(V, dtype=np.float32)
        if not np.isfinite(V).all():
            raise ValueError("vectors hold NaN or infinity")
        c = np.asarray(counts)
        if c.shape != (V.shape[0],) or c.dtype.kind not in "iu" or (c < 0).any() or not c.any():
            raise ValueError(
                f"counts must be {V.shape[0]} non-negative integers (one per vector "
                "row) with a positive sum"
            )
        if (words is None) == (tokenizer is None):
            raise ValueError("give exactly one of words (whitespace tokens) or tokenizer")
        if words is not None:
            words = list(words)
            if len(words) != V.shape[0]:
                raise ValueError(f"{len(words)} words for {V.shape[0]} vectors")
        self.vectors = V
        self.counts = c.astype(np.int64)
        self.words = words
        self.tokenizer = tokenizer
        self.preprocessing = dict(preprocessing or {})
        self.n_components = check_positive_int("n_components", n_components)
        self.common_component = check_choice(
            "common_component", common_component, COMMON_COMPONENT_MODES
        )
        self.source = source
        self.preferred_text_variant = str(preferred_text_variant)
        #: The fitted :class:`~sentvec.whitening.CommonComponentRemoval` (``fit``), or None.
        self.common_component_: Any = None
        self._word2id: dict[str, int] | None = None
        self._prep: Any = None
        p = self.counts / float(self.counts.sum())
        #: ``p(w)``: count / total count, float64 of shape (vocab,).
        self.probabilities = p
        #: The weight of each vocabulary row, float64 of shape (vocab,).
        self.weights = self._word_weights(p)

    def _word_weights(self, p: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _word_matrix(self) -> np.ndarray:
        return self.vectors

    # ------------------------------------------------------------------ description
    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def vocab_size(self) -> int:
        return int(self.vectors.shape[0])

    def get_sentence_embedding_dimension(self) -> int:
        """The width of the vectors (:attr:`dim`)."""
        return self.dim

    def _params(self) -> dict[str, Any]:
        return {"n_components": self.n_components, "common_component": self.common_component}

    def config_dict(self) -> dict[str, Any]:
        """JSON-serialisable description for result records."""
        return {
            "encoder": type(self).__name__,
            "method": self.method,
            "source": self.source,
            "dim": self.dim,
            "vocab_size": self.vocab_size,
            "tokens": "tokenizer" if self.tokenizer is not None else "words",
            **self._params(),
            "common_component_fitted_on": None
            if self.common_component_ is None
            else int(self.common_component_.n_samples_seen_),
            "text_variant": self.preferred_text_variant,
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, dim={self.dim}, "
            + ", ".join(f"{k}={v!r}" for k, v in self._params().items())
            + ")"
        )

    @classmethod
    def from_sent2vec(cls, model: Any, **params: Any) -> Any:
        """From a Sent2Vec model: its unigram input rows and dictionary counts (``</s>`` and
        ``<PLACEHOLDER>`` left out), its preprocessing and whitespace tokens.

        Parameters
        ----------
        model : sentvec.Sent2Vec
        **params
            The class's parameters (SIF: ``a``, ``n_components``, ``common_component``;
            uSIF: ``n``, ``n_components``, ``common_component``).
        """
        words, vectors, counts = _sent2vec_vocabulary(model)
        return cls(
            vectors,
            counts,
            words=words,
            preprocessing=model.preprocessing.to_dict(),
            source=f"Sent2Vec {model.source or ''}".strip(),
            preferred_text_variant=model.preferred_text_variant,
            **params,
        )

    @classmethod
    def from_transformer(
        cls,
        encoder: Any,
        corpus_path: str | os.PathLike[str],
        *,
        max_lines: int | None = None,
        **params: Any,
    ) -> Any:
        """From a :class:`~sentvec.TransformerEncoder`'s input token embeddings and the token
        counts of ``corpus_path`` (see :func:`count_tokens`), stored with the encoder.

        Raises
        ------
        TypeError
            Not a TransformerEncoder.
        FileNotFoundError
            No corpus file.
        """
        E, counts, source = _transformer_vocabulary(encoder, corpus_path, max_lines)
        return cls(
            E,
            counts,
            tokenizer=encoder.tokenizer,
            source=source,
            preferred_text_variant=text_variant_of(encoder, "raw"),
            **params,
        )

    # ------------------------------------------------------------------ tokens
    def token_ids(self, sentences: list[str]) -> list[np.ndarray]:
        """Vocabulary rows of each sentence's known tokens, in order (repeats kept).

        Word mode: the stored preprocessing, then Sent2Vec's separators; unknown words are
        dropped. Tokenizer mode: the tokenizer's ids without special tokens.
        """
        if self.tokenizer is not None:
            ids = (
                self.tokenizer(
                    list(sentences),
                    add_special_tokens=False,
                    return_attention_mask=False,
                    return_token_type_ids=False,
                    verbose=False,
                )["input_ids"]
                if sentences
                else []
            )
            return [np.asarray(x, dtype=np.int64) for x in ids]
        from sentvec.sent2vec.dictionary import split_tokens
        from sentvec.sent2vec.preprocessing import Preprocessing

        if self._word2id is None:
            self._word2id = {w: i for i, w in enumerate(self.words or [])}
            self._prep = Preprocessing.from_dict(self.preprocessing)
        get, prep = self._word2id.get, self._prep
        if not prep.is_identity:
            sentences = prep.prepare_batch(list(sentences))
        out = []
        for s in sentences:
            out.append(
                np.asarray(
                    [i for i in (get(t, -1) for t in split_tokens(s)) if i >= 0], dtype=np.int64
                )
            )
        return out

    def weighted_average(self, sentences: Any) -> np.ndarray:
        """The weighted averages ``(1/|s|) sum_{w in s} weight(w) v_w`` before any removal.

        Returns
        -------
        ndarray of shape (n, dim), float64
            All-zero for a sentence without a known token.
        """
        items, _ = check_sentences(sentences)
        ids = self.token_ids(items)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        scale = np.repeat(1.0 / np.maximum(lengths, 1), lengths)
        M = scipy.sparse.csr_matrix(
            (self.weights[flat] * scale, flat, indptr), shape=(len(ids), self.vocab_size)
        )
        return np.asarray(M @ self._word_matrix().astype(np.float64))

    # ------------------------------------------------------------------ removal
    def year_postprocessor(self) -> Any:
        """With ``common_component="year"``: the unfitted removal the STS protocol fits on each
        task's scored pairs (both sides, duplicates kept); None otherwise."""
        if self.common_component != "year":
            return None
        from sentvec.whitening import CommonComponentRemoval

        return CommonComponentRemoval(self.n_components, weighting=self._weighting)

    def fit(self, sentences: Any, y: Any = None) -> _WeightedAverageEncoder:
        """Fit the common-component removal on the weighted averages of ``sentences``.

        Raises
        ------
        ValueError
            ``common_component`` is not ``"fit"``, fewer than 2 sentences, or more components
            than dimensions.
        """
        if self.common_component != "fit":
            raise ValueError(
                f"fit applies to common_component='fit', this encoder has {self.common_component!r}"
            )
        from sentvec.whitening import CommonComponentRemoval

        X = self.weighted_average(sentences)
        self.common_component_ = CommonComponentRemoval(
            self.n_components, weighting=self._weighting
        ).fit(X)
        return self

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
    ) -> np.ndarray:
        """Sentence vectors: weighted averages, then the fitted removal (``"fit"``).

        With ``common_component="year"`` or ``"none"`` the weighted averages are returned (the
        STS protocol removes the components per task for ``"year"``).

        Parameters
        ----------
        sentences : str or sequence of str
        batch_size, show_progress_bar : ignored (accepted for the Encoder protocol)
        normalize : bool, optional
            Scale each non-zero vector to unit L2 norm; None (the default) is False.

        Returns
        -------
        ndarray of shape (n, dim), float32
            ``(dim,)`` for a single string. A sentence without a known token gets a zero vector
            (one UserWarning counts them).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            ``common_component="fit"`` before :meth:`fit`.
        """
        items, single = check_sentences(sentences)
        if self.common_component == "fit" and self.common_component_ is None:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"this {type(self).__name__} removes a common component fitted "
                "on a corpus: call fit(sentences) first (or use "
                "common_component='year' / 'none')"
            )
        X = self.weighted_average(items)
        zero = ~X.any(axis=1)
        if self.common_component_ is not None and self.common_component == "fit" and len(X):
            X = self.common_component_.transform(X)
        out = X.astype(np.float32)
        if zero.any():
            warnings.warn(
                f"{int(zero.sum())} of {len(out)} sentences have no known token; their "
                "vectors are zero",
                UserWarning,
                stacklevel=2,
            )
        if normalize and len(out):
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            np.divide(out, norms, out=out, where=norms > 0)
        return out[0] if single else out

    # ------------------------------------------------------------------ save / load
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the encoder to directory ``path`` atomically (no pickle).

        Files: ``sif_encoder.json`` (method, parameters, tokens), ``vectors.npy`` (float32),
        ``counts.npy`` (int64), ``words.json`` or ``tokenizer/`` (``save_pretrained``), and
        ``common_component/`` when fitted.

        Raises
        ------
        FileExistsError, ValueError
            As :meth:`sentvec.Whitening.save`; nothing is written.
        """
        with atomic_directory(path, marker=_CONFIG_FILE, kind="a saved SIF / uSIF encoder") as root:
            atomic_save_npy(root / "vectors.npy", self.vectors)
            atomic_save_npy(root / "counts.npy", self.counts)
            if self.tokenizer is not None:
                self.tokenizer.save_pretrained(str(root / "tokenizer"))
            else:
                atomic_write_json(root / "words.json", self.words)
            if self.common_component_ is not None:
                self.common_component_.save(root / "common_component")
            atomic_write_json(
                root / _CONFIG_FILE,
                {
                    "format": _FORMAT,
                    "version": _VERSION,
                    "method": self.method,
                    "params": self._params(),
                    "source": self.source,
                    "tokens": "tokenizer" if self.tokenizer is not None else "words",
                    "preprocessing": self.preprocessing,
                    "preferred_text_variant": self.preferred_text_variant,
                },
            )
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Read a directory written by :meth:`save` (as :func:`load_sif_encoder`).

        Raises
        ------
        FileNotFoundError, ValueError
            As :func:`load_sif_encoder`; ValueError also when the directory holds another
            method's encoder (``USIFEncoder.load`` of a saved ``SIFEncoder``).
        """
        encoder = load_sif_encoder(path)
        if not isinstance(encoder, cls):
            raise ValueError(
                f"{str(Path(path) / _CONFIG_FILE)!r} holds a {type(encoder).__name__}, "
                f"not a {cls.__name__}; load it with {type(encoder).__name__}.load"
            )
        return encoder


def load_sif_encoder(path: str | os.PathLike[str]) -> Any:
    """Read a directory written by ``SIFEncoder.save`` or ``USIFEncoder.save``.

    Raises
    ------
    FileNotFoundError
        No ``sif_encoder.json`` (or a missing array file).
    ValueError
        Another format or version, an unknown method, corrupt arrays.
    """
    root = Path(path)
    cfg_path = root / _CONFIG_FILE
    if not cfg_path.is_file():
        raise FileNotFoundError(
            f"no {_CONFIG_FILE} in {str(root)!r}: not a saved SIF / uSIF encoder"
        )
    cfg = read_json_object(cfg_path)
    if cfg.get("format") != _FORMAT or cfg.get("version") != _VERSION:
        raise ValueError(f"{str(cfg_path)!r} is not a sentvec SIF encoder of version {_VERSION}")
    methods: dict[str, type[SIFEncoder] | type[USIFEncoder]] = {
        "sif": SIFEncoder,
        "usif": USIFEncoder,
    }
    cls = methods.get(str(cfg.get("method")))
    if cls is None:
        raise ValueError(f"{str(cfg_path)!r}: unknown method {cfg.get('method')!r}")
    words = tokenizer = None
    if cfg.get("tokens") == "tokenizer":
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(root / "tokenizer"))
    else:
        words = _read_word_list(root / "words.json")
    params = cfg.get("params")
    if not isinstance(params, dict):
        raise ValueError(f"{str(cfg_path)!r}: params must be an object")
    enc = cls(
        load_npy(root / "vectors.npy"),
        load_npy(root / "counts.npy"),
        words=words,
        tokenizer=tokenizer,
        preprocessing=cfg.get("preprocessing"),
        source=cfg.get("source"),
        preferred_text_variant=cfg.get("preferred_text_variant", "senteval"),
        **params,
    )
    if (root / "common_component").is_dir():
        from sentvec.whitening import CommonComponentRemoval

        ccr = CommonComponentRemoval.load(root / "common_component")
        if ccr.n_features_in_ != enc.dim:
            raise ValueError(
                f"{str(root)!r}: the common component has {ccr.n_features_in_} "
                f"features, the vectors {enc.dim}"
            )
        enc.common_component_ = ccr
    return enc


def _read_word_list(path: Path) -> list[str]:
    """A JSON list of strings (the saved vocabulary)."""
    data = read_json(path, expect=list)
    if not all(isinstance(w, str) for w in data):
        raise ValueError(f"{str(path)!r} must hold a JSON list of strings")
    return data


def _sent2vec_vocabulary(model: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Words, unigram input rows and counts of a Sent2Vec model, without ``</s>`` and
    ``<PLACEHOLDER>`` (never part of a sentence's tokens)."""
    d = model.dictionary
    skip = {d.eos_id, d.placeholder_id} - {-1}
    keep = np.asarray([i for i in range(d.nwords) if i not in skip], dtype=np.int64)
    words = [d.words[i] for i in keep]
    vectors = np.asarray(model.input_matrix[: d.nwords])[keep]
    return words, vectors, np.asarray(d.counts)[keep]


def _transformer_vocabulary(
    encoder: Any, corpus_path: Any, max_lines: int | None
) -> tuple[np.ndarray, np.ndarray, str]:
    if not isinstance(encoder, TokenEmbeddings):
        raise TypeError(
            f"from_transformer needs a TransformerEncoder, got {type(encoder).__name__}"
        )
    E = encoder.input_token_embeddings()
    counts, n_lines = count_tokens(
        encoder.tokenizer, corpus_path, vocab_size=E.shape[0], max_lines=max_lines
    )
    source = (
        f"{encoder.name_or_path} input token embeddings; token counts of "
        f"{Path(corpus_path).name} ({n_lines} lines)"
    )
    return E, counts, source


class SIFEncoder(_WeightedAverageEncoder):
    """SIF sentence vectors: ``v_s = (1/|s|) sum_{w in s} a / (a + p(w)) v_w``, then the
    projection on the first singular vector(s) of the **uncentred** sentence matrix removed.

    Arora, Liang & Ma, ICLR 2017, Algorithm 1. Choices of the authors' code (PrincetonML/SIF,
    ``data_io.getWordWeight``, ``SIF_embedding.py``), kept here unless noted:

    * ``p(w) = count(w) / N``, ``N`` the sum of the counts of the count table; no smoothing. A
      vocabulary word with count 0 gets ``p = 0``, i.e. weight 1 (their code gives weight 1.0 to
      words missing from the count file: the same value).
    * The average divides by the number of tokens (their ``count_nonzero`` of the weights),
      repeats counted.
    * The component is the top right singular vector of the uncentred matrix (their
      ``TruncatedSVD(n_iter=7)``, randomized; computed exactly here) and removed fully:
      ``v_s <- v_s - u u^T v_s``.
    * Deviation: their code maps unknown words to an ``UUUNKKK`` vector (or the last word's);
      here unknown tokens are skipped, and a sentence without known tokens is a zero vector
      (counted in a warning; it stays zero after the removal).

    Parameters
    ----------
    vectors : array-like of shape (V, d), float
        Word vectors (row ``i`` is vocabulary entry ``i``); stored as float32.
    counts : array-like of shape (V,), int
        Corpus counts.
    words : list of str, optional
        Vocabulary entry of each row, for whitespace tokens (give this or ``tokenizer``).
    tokenizer : transformers tokenizer, optional
        Token ids are rows of ``vectors``.
    preprocessing : dict, optional
        A Sent2Vec :class:`~sentvec.sent2vec.Preprocessing` dict applied before splitting.
    a : float, default 1e-3
        The SIF parameter ``a`` (> 0).
    n_components : int, default 1
        Components removed.
    common_component : {"fit", "year", "none"}, default "fit"
        "fit": removal fitted by :meth:`fit` on a corpus (``encode`` raises before);
        "year": fitted per STS task by the STS protocol (``encode`` returns the averages);
        "none": no removal.
    source : str, optional
        Where the vectors and counts come from (recorded in results).
    preferred_text_variant : str, default "senteval"

    Raises
    ------
    ValueError
        Bad shapes, non-finite vectors, counts not non-negative with a positive sum, bad
        parameters.
    """

    method = "sif"
    encoder_type = "sif"
    _weighting = "full"

    def __init__(
        self,
        vectors: Any,
        counts: Any,
        *,
        words: list[str] | None = None,
        tokenizer: Any = None,
        preprocessing: dict[str, Any] | None = None,
        a: float = SIF_DEFAULT_A,
        n_components: int = 1,
        common_component: str = "fit",
        source: str | None = None,
        preferred_text_variant: str = "senteval",
    ) -> None:
        self.a = check_float_range("a", a, low=0.0, low_inclusive=False)
        super().__init__(
            vectors,
            counts,
            words=words,
            tokenizer=tokenizer,
            preprocessing=preprocessing,
            n_components=n_components,
            common_component=common_component,
            source=source,
            preferred_text_variant=preferred_text_variant,
        )

    def _word_weights(self, p: np.ndarray) -> np.ndarray:
        return sif_weights(p, self.a)

    def _params(self) -> dict[str, Any]:
        return {"a": float(self.a), **super()._params()}


class USIFEncoder(_WeightedAverageEncoder):
    """uSIF sentence vectors: ``v_s = (1/|s|) sum_{w in s} a / (a/2 + p(w)) v_w / ||v_w||``, then
    the top ``m`` singular directions of the uncentred matrix removed, each weighted by its
    squared singular value's share ``s_i^2 / sum_{j<=m} s_j^2``.

    Ethayarajh, RepL4NLP 2018, Algorithm 1. Choices of the authors' code (kawine/usif,
    ``usif.py``), kept here unless noted:

    * ``a`` is derived, not tuned (:func:`usif_parameter`): ``V`` = size of the count table,
      threshold ``1 - (1 - 1/V)^n``, ``alpha`` the share of words above it, ``Z = V / 2``,
      ``a = (1 - alpha) / (alpha Z)``; ``n`` = 11, the expected sentence length of STS.
    * ``p(w) = count(w) / total``; a vocabulary word without a count gets the smallest ``p`` of
      the table (their ``min_prob``).
    * Removal: ``TruncatedSVD(n_components=m)`` on the uncentred vectors in their code
      (randomized; exact here), ``lambda_i`` over the ``m`` components only, removed as
      ``v_s - lambda_i (v_s . u_i) u_i`` for each ``i``.
    * Deviations: word vectors are scaled to unit L2 norm each, as the paper states (their code
      divides by ``np.linalg.norm(v_t, axis=0)``, a per-dimension norm over the sentence's
      tokens); their NLTK tokenization, punctuation filter and hyphen splitting are replaced by
      the model's own tokens; a sentence without known tokens is a zero vector (their code
      returns a constant vector of ``a``'s), counted in a warning.

    Parameters
    ----------
    vectors, counts, words, tokenizer, preprocessing, common_component, source,
    preferred_text_variant
        As :class:`SIFEncoder`.
    n : int, default 11
        Expected random-walk (sentence) length for ``a``.
    n_components : int, default 5
        ``m``, common discourse vectors removed.

    Attributes
    ----------
    a : float
        The derived parameter.
    """

    method = "usif"
    encoder_type = "usif"
    _weighting = "singular-value-share"

    def __init__(
        self,
        vectors: Any,
        counts: Any,
        *,
        words: list[str] | None = None,
        tokenizer: Any = None,
        preprocessing: dict[str, Any] | None = None,
        n: int = USIF_DEFAULT_N,
        n_components: int = USIF_DEFAULT_M,
        common_component: str = "fit",
        source: str | None = None,
        preferred_text_variant: str = "senteval",
    ) -> None:
        self.n = check_positive_int("n", n)
        self.a = usif_parameter(np.asarray(counts), self.n)
        super().__init__(
            vectors,
            counts,
            words=words,
            tokenizer=tokenizer,
            preprocessing=preprocessing,
            n_components=n_components,
            common_component=common_component,
            source=source,
            preferred_text_variant=preferred_text_variant,
        )
        norms = np.linalg.norm(self.vectors.astype(np.float64), axis=1, keepdims=True)
        self._unit = np.divide(
            self.vectors, norms, out=np.zeros(self.vectors.shape), where=norms > 0
        )

    def _word_weights(self, p: np.ndarray) -> np.ndarray:
        return usif_weights(p, self.a)

    def _word_matrix(self) -> np.ndarray:
        return self._unit

    def _params(self) -> dict[str, Any]:
        return {"n": self.n, **super()._params()}
