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
