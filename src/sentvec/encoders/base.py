"""The encoder protocol every part of sentvec relies on.

Evaluation, search and file encoding know an encoder only through ``encode``; anything with that
method works (a ``TransformerEncoder``, a ``Sent2Vec`` model, a ``Pipeline``, a user's object).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from sentvec.exceptions import TruncationWarning

__all__ = [
    "Encoder",
    "PIPELINE_FILE",
    "TRANSFORMER_BACKENDS",
    "PRECISIONS",
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
#: command that loads a transformer): see :func:`sentvec.encoders.resolve_precision`.
PRECISIONS = ("auto", "float32", "bfloat16")


@runtime_checkable
class Encoder(Protocol):
    """Maps sentences to fixed-size vectors.

    ``encode(sentences, *, batch_size=..., show_progress_bar=None, normalize=False)`` returns an
    ndarray of shape ``(n, d)`` and dtype float32 for a list of ``n`` strings (shape ``(0, d)``
    for an empty list, ``(d,)`` for a single string).
    """

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int = ...,
        show_progress_bar: bool | None = ...,
        normalize: bool = ...,
    ) -> np.ndarray: ...


# An encoder that can be saved in a pipeline also has ``save(path)`` and a class attribute
# ``encoder_type`` naming its loader in ``sentvec.encoders.pipeline.ENCODER_LOADERS``.


def describe_encoder(encoder: Encoder) -> dict[str, Any]:
    """Return the encoder's self-description for result records.

    Uses ``encoder.config_dict()`` when present (a JSON-serialisable dict naming model, pooling,
    layers, ...), else the class name.
    """
    getter = getattr(encoder, "config_dict", None)
    if callable(getter):
        return dict(getter())
    return {"encoder": type(encoder).__name__}


def text_variant_of(encoder: Encoder, default: str = "senteval") -> str:
    """Text variant (``"senteval"``: tokenized + lower-cased, or ``"raw"``) an encoder prefers."""
    return str(getattr(encoder, "preferred_text_variant", default))


def output_dimension(encoder: Encoder) -> int | None:
    """The width ``d`` of the encoder's vectors when it says so without encoding, else None.

    Asks ``get_sentence_embedding_dimension()`` (transformers, sentence-transformers style), then
    an integer ``dim`` attribute (Sent2Vec).
    """
    getter = getattr(encoder, "get_sentence_embedding_dimension", None)
    d = getter() if callable(getter) else getattr(encoder, "dim", None)
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

    def config_dict(self) -> dict[str, Any]:
        """The description given (a copy)."""
        return dict(self._description)

    def encode(self, sentences: Any, **kwargs: Any) -> np.ndarray:
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
