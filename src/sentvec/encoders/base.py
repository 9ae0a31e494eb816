"""The encoder contract: what every part of sentvec may ask of an encoder.

Evaluation, search and file encoding know an encoder only through ``encode`` (:class:`Encoder`);
anything with that method works (a ``TransformerEncoder``, a ``Sent2Vec`` model, a ``Pipeline``,
a user's object). Every further capability is a declared, ``runtime_checkable`` protocol below,
asked with ``isinstance`` (never by probing attribute names), so mypy and the contract tests see
what each encoder class provides:

* :class:`Encoder`: ``encode(sentences, *, batch_size, show_progress_bar, normalize)``;
* :class:`SelfDescribing`: ``config_dict()``, the JSON description of result records;
* :class:`DimensionStating`: ``get_sentence_embedding_dimension()``, the width ``d``;
* :class:`TextVariantAware`: ``preferred_text_variant``, ``"senteval"`` or ``"raw"`` text;
* :class:`TokenCounting`: ``count_tokens`` and ``max_length`` (a transformer);
* :class:`LayeredEncoder`: ``encode_layers`` (per-layer pooled vectors, the Table 1 block),
  ``num_layers``, ``pooling``, ``layer_indices``;
* :class:`TokenEmbeddings`: ``input_token_embeddings()`` (a transformer's input table),
  ``tokenizer``, ``name_or_path``;
* :class:`DeviceEncoder`: ``device`` and ``pooling``, a torch model's forward pass;
* :class:`PreparedInput`: ``encode_with_stats``, ``prepare``, ``embed_prepared`` and
  ``preprocessing``, Sent2Vec's encoding in two halves (the server's fast path);
* :class:`YearPostprocessing`: ``year_postprocessor()``, a post-processor fitted per STS year;
* :class:`PostProcessed`: ``encoder`` and ``whitening``, an encoder + post-processor;
* :class:`Persistable`: ``save(path) -> Path`` and the classmethod ``load(path)``;
* :class:`PipelineComponent`: a :class:`Persistable` with ``encoder_type``, which
  ``pipeline.json`` records.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sentvec.exceptions import TruncationWarning

__all__ = [
    "Encoder",
    "SelfDescribing",
    "DimensionStating",
    "TextVariantAware",
    "TokenCounting",
    "LayeredEncoder",
    "TokenEmbeddings",
    "DeviceEncoder",
    "PreparedInput",
    "Preprocessing",
    "YearPostprocessing",
    "PostProcessed",
    "Persistable",
    "PipelineComponent",
    "PIPELINE_FILE",
    "TRANSFORMER_BACKENDS",
    "PRECISIONS",
    "precision_for_backend",
    "describe_encoder",
    "text_variant_of",
    "output_dimension",
    "check_whitening_fits",
    "TruncationWarning",
    "DescribedEncoder",
]

#: The marker file of a saved :class:`sentvec.Pipeline` directory (its ``pipeline.json``).
PIPELINE_FILE = "pipeline.json"

#: Forward-pass backends of :class:`sentvec.TransformerEncoder`: torch, or ONNX Runtime on the
#: CPU (the ``onnx`` extra). Here, not in ``transformer.py``, so the CLI lists them without torch.
TRANSFORMER_BACKENDS = ("torch", "onnx")
#: Forward-pass precisions of :class:`sentvec.TransformerEncoder` (``--precision`` of every
#: command that loads a transformer): see :func:`sentvec.encoders.resolve_precision`; ``"int8"``
#: (dynamic int8 quantization of the ONNX graph) needs ``backend="onnx"``.
PRECISIONS = ("auto", "float32", "bfloat16", "int8")


def precision_for_backend(backend: str, precision: str, resolved: str) -> str:
    """The precision a forward-pass ``backend`` runs for a requested ``precision``.

    Parameters
    ----------
    backend : {"torch", "onnx"}
    precision : str
        As requested (one of :data:`PRECISIONS`).
    resolved : str
        ``precision`` with ``"auto"`` resolved for the device (``"float32"``, ``"bfloat16"``
        or ``"int8"``).

    Returns
    -------
    str
        ``resolved``, except that ``"auto"`` gives ``"float32"`` with ``backend="onnx"`` (the
        graph's best exact precision; int8 is never chosen by ``"auto"``).

    Raises
    ------
    ValueError
        ``"int8"`` with the torch backend; ``"bfloat16"`` with the ONNX backend.
    """
    if backend == "onnx" and resolved == "bfloat16":
        if precision == "auto":
            return "float32"
        raise ValueError(
            f"precision={precision!r} needs backend='torch'; the ONNX backend runs float32 or int8"
        )
    if backend != "onnx" and resolved == "int8":
        raise ValueError(
            f"precision='int8' needs backend='onnx' (dynamic int8 quantization of the ONNX "
            f"graph; --model-backend onnx), not backend={backend!r}"
        )
    return resolved


@runtime_checkable
class Encoder(Protocol):
    """Maps sentences to fixed-size vectors.

    ``encode(sentences, *, batch_size=None, show_progress_bar=None, normalize=None)`` returns
    an ndarray of shape ``(n, d)`` and dtype float32 for a list of ``n`` strings (shape
    ``(0, d)`` for an empty list, ``(d,)`` for a single string). ``None`` is the encoder's own
    default for each keyword: its batch size; a progress bar for long inputs on a terminal; no
    normalization, except a static model saved with ``normalize`` (as Model2Vec's ``encode``).
    ``normalize=True`` scales each non-zero row to unit L2 norm, ``False`` never does. An
    unknown keyword raises ``TypeError``.
    """

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = ...,
        show_progress_bar: bool | None = ...,
        normalize: bool | None = ...,
    ) -> np.ndarray: ...


@runtime_checkable
class SelfDescribing(Protocol):
    """An encoder that describes itself for result records and cache keys."""

    def config_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict naming model, pooling, layers, text variant, ..."""
        ...


@runtime_checkable
class DimensionStating(Protocol):
    """An encoder that states the width ``d`` of its vectors without encoding."""

    def get_sentence_embedding_dimension(self) -> int | None:
        """The width ``d`` (None when it is not known before encoding)."""
        ...


@runtime_checkable
class TextVariantAware(Protocol):
    """An encoder that prefers one text variant of the evaluation data."""

    #: ``"senteval"`` (tokenized and lower-cased, as SentEval feeds it) or ``"raw"``.
    preferred_text_variant: str


@runtime_checkable
class TokenCounting(Protocol):
    """An encoder that tokenizes before encoding and truncates at ``max_length`` tokens."""

    @property
    def max_length(self) -> int:
        """The longest input, in tokens, before the encoder truncates."""
        ...

    def count_tokens(self, sentences: Sequence[str]) -> np.ndarray:
        """Tokens of each sentence before truncation, special tokens included: ``(n,)`` int64."""
        ...


@runtime_checkable
class LayeredEncoder(Encoder, Protocol):
    """An encoder with hidden layers: per-layer pooled vectors (the Table 1 block)."""

    #: Hidden layers of the model (the embedding output not counted).
    num_layers: int

    @property
    def pooling(self) -> Any:
        """The token pooling of :meth:`encode` (a ``str``-like name, e.g. ``"mean"``)."""
        ...

    @property
    def layer_indices(self) -> tuple[int, ...]:
        """The hidden states :meth:`encode` averages (0 = the embedding output)."""
        ...

    def encode_layers(self, sentences: Any, *args: Any, **kwargs: Any) -> Any:
        """Pooled vectors of every hidden state (see ``TransformerEncoder.encode_layers``)."""
        ...


@runtime_checkable
class TokenEmbeddings(Protocol):
    """An encoder whose input token embedding table can be read (SIF / uSIF word vectors)."""

    #: The Hugging Face tokenizer whose ids index the table.
    tokenizer: Any
    #: What the model was loaded from.
    name_or_path: str

    def input_token_embeddings(self) -> np.ndarray:
        """The input embedding table, ``(vocabulary size, d)`` float32."""
        ...


@runtime_checkable
class DeviceEncoder(Protocol):
    """An encoder that runs a torch model's forward pass on a device, pooling its tokens."""

    #: The ``torch.device`` of the forward pass.
    device: Any

    @property
    def pooling(self) -> Any:
        """The token pooling (a ``str``-like name, e.g. ``"mean"``)."""
        ...


class Preprocessing(Protocol):
    """Text preparation stored with a model."""

    @property
    def is_identity(self) -> bool:
        """Whether the text is used as given."""
        ...


@runtime_checkable
class PreparedInput(Protocol):
    """Sent2Vec's encoding in two halves, and with per-text statistics.

    ``prepare`` (Python: the texts after :attr:`preprocessing`, as UTF-8 bytes) then
    ``embed_prepared`` (the compiled kernel, without the GIL) give what ``encode`` gives;
    ``encode_with_stats`` also reports each text's tokens. ``sentvec serve`` runs ``prepare``
    on its event loop when :attr:`preprocessing` is the identity, so its encoding threads only
    run the kernel.
    """

    @property
    def preprocessing(self) -> Preprocessing:
        """The text preparation ``prepare`` applies."""
        ...

    def prepare(self, sentences: Any) -> Any:
        """The texts, prepared for :meth:`embed_prepared`."""
        ...

    def embed_prepared(self, prepared: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors (n, d) float32, tokens (n,) int64)`` of prepared texts."""
        ...

    def encode_with_stats(
        self,
        sentences: Any,
        *,
        batch_size: int | None = ...,
        show_progress_bar: bool | None = ...,
        normalize: bool | None = ...,
    ) -> tuple[np.ndarray, Any]:
        """Like ``encode``, without warnings, also returning statistics with ``tokens``."""
        ...


@runtime_checkable
class YearPostprocessing(Protocol):
    """An encoder whose vectors need a post-processor fitted on each STS year's sentences
    (SIF / uSIF with ``common_component="year"``)."""

    def year_postprocessor(self) -> Any:
        """An unfitted post-processor (scikit-learn style), or None when none is needed."""
        ...


@runtime_checkable
class PostProcessed(Protocol):
    """An encoder followed by a fitted post-processor (a ``Pipeline``)."""

    #: The encoder that reads the text.
    encoder: Encoder
    #: The fitted post-processor (a ``Whitening``, ...), or None.
    whitening: Any


@runtime_checkable
class Persistable(Protocol):
    """An encoder that saves itself to a directory and loads back from it."""

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model to the directory ``path``; return it as a ``Path``."""
        ...

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Read a model written by :meth:`save`."""
        ...


@runtime_checkable
class PipelineComponent(Persistable, Protocol):
    """A :class:`Persistable` encoder a ``Pipeline`` can hold: ``encoder_type`` names its
    format (:func:`sentvec.encoders.formats.by_encoder_type`; what ``pipeline.json`` records)."""

    encoder_type: str


def describe_encoder(encoder: Encoder) -> dict[str, Any]:
    """Return the encoder's self-description for result records.

    Uses ``encoder.config_dict()`` when present (a JSON-serialisable dict naming model, pooling,
    layers, ...), else the class name.
    """
    if isinstance(encoder, SelfDescribing):
        return dict(encoder.config_dict())
    return {"encoder": type(encoder).__name__}


def text_variant_of(encoder: Encoder, default: str = "senteval") -> str:
    """Text variant (``"senteval"``: tokenized + lower-cased, or ``"raw"``) an encoder prefers."""
    return str(encoder.preferred_text_variant) if isinstance(encoder, TextVariantAware) else default


def output_dimension(encoder: Encoder) -> int | None:
    """The width ``d`` of the encoder's vectors when it says so without encoding, else None.

    Asks ``get_sentence_embedding_dimension()`` (:class:`DimensionStating`, as
    sentence-transformers names it).
    """
    d = (
        encoder.get_sentence_embedding_dimension()
        if isinstance(encoder, DimensionStating)
        else None
    )
    return int(d) if isinstance(d, (int, np.integer)) and not isinstance(d, bool) else None


def check_whitening_fits(encoder: Encoder, whitening: Any, *, what: str = "whitening") -> None:
    """Raise ValueError if a fitted whitening expects another width than the encoder gives.

    Checked before any encoding, so a mismatch does not cost a forward pass. Nothing is
    checked when the encoder does not state its width (see :func:`output_dimension`).
    """
    d = output_dimension(encoder)
    n_in = getattr(whitening, "n_features_in_", None)
    if d is not None and n_in is not None and int(n_in) != d:
        raise ValueError(
            f"{what} was fitted on {int(n_in)}-dimensional vectors, but the "
            f"encoder gives {d}-dimensional ones; fit it on this encoder's vectors"
        )


class DescribedEncoder:
    """An encoder known only by its description, standing in for it where its vectors were
    computed before (a vector-cache hit), so the model is never loaded.

    It describes itself exactly as the described encoder (``config_dict``, text variant,
    width), which is all that scoring given embeddings asks of an encoder
    (:func:`sentvec.evaluation.evaluate_sts` with ``embeddings=``). It cannot encode.

    Parameters
    ----------
    description : mapping
        The encoder's ``config_dict()``, e.g. from
        :func:`sentvec.encoders.describe_without_loading`; ``text_variant`` and
        ``hidden_size`` are read from it when present.
    """

    def __init__(self, description: Any) -> None:
        self._description = dict(description)
        self.preferred_text_variant = str(self._description.get("text_variant", "senteval"))
        width = self._description.get("hidden_size")
        self.dim = int(width) if isinstance(width, int) and not isinstance(width, bool) else None

    def get_sentence_embedding_dimension(self) -> int | None:
        """The described ``hidden_size`` (None when the description has none)."""
        return self.dim

    def config_dict(self) -> dict[str, Any]:
        """The description given (a copy)."""
        return dict(self._description)

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
    ) -> np.ndarray:
        """Always raises: the vectors of a described encoder come from elsewhere.

        Raises
        ------
        RuntimeError
            Always, naming the model.
        """
        model = self._description.get("model", self._description.get("encoder", "?"))
        raise RuntimeError(
            f"{model!r} is only described here (its vectors came from the cache); load it with "
            "sentvec.load_encoder to encode"
        )
