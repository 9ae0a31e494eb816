"""The teacher of ``sentvec distill``: a transformer, refused with a clear error when the
model named is another kind of model, loaded with the row pooling's encoder options.
"""

from __future__ import annotations

import os
from typing import Any

from sentvec.distill.config import DEFAULT_ROW_POOLING, DistillConfig
from sentvec.encoders.pooling import MEAN_CLS_POOLINGS

__all__ = ["check_teacher", "load_teacher", "teacher_format_name"]


def teacher_format_name(kind: str) -> str:
    """A model format, as :func:`sentvec.encoders.model_kind` names it, in words.

    The one list of format names ``sentvec distill`` keeps (for its error on a teacher that is
    not a transformer).
    """
    names = {
        "pipeline": "saved pipeline",
        "sent2vec-bin": "Sent2Vec .bin model",
        "sent2vec-dir": "Sent2Vec model directory",
        "bigram-static": "static model with bigram rows",
        "model2vec": "Model2Vec model",
        "sentence-transformers-static": "sentence-transformers StaticEmbedding model",
        "wordllama": "WordLlama model",
    }
    return names.get(kind, kind)


def check_teacher(model: str | os.PathLike[str]) -> None:
    """Refuse a teacher that is not a transformer, before anything is loaded.

    Raises
    ------
    ValueError
        ``model`` is a Sent2Vec, static model or pipeline (the message names what it is), or a
        file or directory that is no model (the loader's own error).
    FileNotFoundError
        ``model`` does not exist.
    """
    from sentvec.encoders import load_encoder, model_kind

    kind = model_kind(model)
    if kind != "transformer":
        if kind in ("other-file", "sent2vec-dir"):
            load_encoder(model)  # a file or directory that is no model: its own error
        raise ValueError(
            f"the teacher {os.fspath(model)!r} is a {teacher_format_name(kind)}, not "
            "a transformer: distill needs a transformer (an alias such as 'minilm' or "
            "a Hugging Face model directory) to pass its vocabulary through"
        )


def load_teacher(config: DistillConfig) -> tuple[Any, str]:
    """The teacher as a :class:`sentvec.TransformerEncoder` in the configured precision, and
    its row pooling.

    A model given by name or directory is loaded with ``config``'s layers, device and backend
    (``mean`` pooling for the ``mean_cls*`` row poolings); a loaded encoder is used as it is
    (its own pooling unless ``config.pooling`` is given), sharing its model.
    """
    from sentvec.encoders import TransformerEncoder

    model = config.model
    if isinstance(model, (str, os.PathLike)):
        pooling = DEFAULT_ROW_POOLING if config.pooling is None else config.pooling
        encoder = TransformerEncoder.from_pretrained(
            model,
            pooling="mean" if pooling in MEAN_CLS_POOLINGS else pooling,  # type: ignore[arg-type]
            layers=config.layers,
            device=config.device,
            backend=config.backend,
            precision=config.precision,
        )
        return encoder, pooling
    if not isinstance(model, TransformerEncoder):
        raise TypeError(f"distill needs a TransformerEncoder teacher, got {type(model).__name__}")
    if model.precision != config.precision:
        model = model.with_options(precision=config.precision)
    return model, model.pooling if config.pooling is None else config.pooling
