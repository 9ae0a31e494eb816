"""The encoder protocol every part of sentvec relies on.

Evaluation, search and file encoding know an encoder only through ``encode``; anything with that
method works (a ``TransformerEncoder``, a ``Sent2Vec`` model, a ``Pipeline``, a user's object).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """Maps sentences to fixed-size vectors.

    ``encode(sentences, *, batch_size=..., show_progress_bar=None, normalize=False)`` returns an
    ndarray of shape ``(n, d)`` and dtype float32 for a list of ``n`` strings (shape ``(0, d)``
    for an empty list, ``(d,)`` for a single string).
    """

    def encode(self, sentences: Any, **kwargs: Any) -> np.ndarray: ...


def describe_encoder(encoder: Any) -> dict[str, Any]:
    """Return the encoder's self-description for result records.

    Uses ``encoder.config_dict()`` when present (a JSON-serialisable dict naming model, pooling,
    layers, ...), else the class name.
    """
    getter = getattr(encoder, "config_dict", None)
    if callable(getter):
        return dict(getter())
    return {"encoder": type(encoder).__name__}


def text_variant_of(encoder: Any, default: str = "senteval") -> str:
    """Text variant (``"senteval"``: tokenized + lower-cased, or ``"raw"``) an encoder prefers."""
    return str(getattr(encoder, "preferred_text_variant", default))


def output_dimension(encoder: Any) -> int | None:
    """The width ``d`` of the encoder's vectors when it says so without encoding, else None.

    Asks ``get_sentence_embedding_dimension()`` (transformers, sentence-transformers style), then
    an integer ``dim`` attribute (Sent2Vec).
    """
    getter = getattr(encoder, "get_sentence_embedding_dimension", None)
    d = getter() if callable(getter) else getattr(encoder, "dim", None)
    return int(d) if isinstance(d, (int, np.integer)) and not isinstance(d, bool) else None


def check_whitening_fits(encoder: Any, whitening: Any, *, what: str = "whitening") -> None:
    """Raise ValueError if a fitted whitening expects another width than the encoder gives.

    Checked before any encoding, so a mismatch does not cost a forward pass. Nothing is
    checked when the encoder does not state its width (see :func:`output_dimension`).
    """
    d = output_dimension(encoder)
    n_in = getattr(whitening, "n_features_in_", None)
    if d is not None and n_in is not None and int(n_in) != d:
        raise ValueError(f"{what} was fitted on {int(n_in)}-dimensional vectors, but the "
                         f"encoder gives {d}-dimensional ones; fit it on this encoder's vectors")


def check_n_components(encoder: Any, n_components: int | None, *,
                       name: str = "n_components") -> None:
    """Raise ValueError if a whitening dimension exceeds the encoder's width.

    Checked before the forward pass, which is most of an evaluation's cost. Nothing is checked
    when the encoder does not state its width (see :func:`output_dimension`).
    """
    d = output_dimension(encoder)
    if n_components is not None and d is not None and n_components > d:
        raise ValueError(f"{name}={n_components} is invalid; the encoder's vectors have {d} "
                         "dimensions")
