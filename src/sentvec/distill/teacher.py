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
    """A model format's name (an entry of :data:`sentvec.encoders.formats.FORMATS`) in words.

    Deprecated: read ``human_name`` from :func:`sentvec.encoders.formats.format_named`.
    """
    from sentvec.encoders.formats import format_named

    try:
        return format_named(kind).human_name
    except KeyError:
        return kind


def check_teacher(model: str | os.PathLike[str]) -> None:
    """Refuse a teacher that is not a transformer, before anything is loaded.

    The format comes from the one format table (:func:`sentvec.encoders.formats.detect_format`).

    Raises
    ------
    ValueError
        ``model`` is a Sent2Vec, static model or pipeline (the message names what it is), or a
        file or directory that is no model (the loader's own error).
    FileNotFoundError
        ``model`` does not exist.
    """
    from sentvec.encoders import load_encoder
    from sentvec.encoders.formats import detect_format

    fmt = detect_format(model)
    if fmt is not None and fmt.name == "transformer":
        return
    if fmt is None or fmt.name == "sent2vec-dir":
        load_encoder(model)  # a file or directory that is no model: its own error
    what = "file that is no model" if fmt is None else fmt.human_name
    raise ValueError(
        f"the teacher {os.fspath(model)!r} is a {what}, not a transformer: a teacher must be "
        "a transformer (an alias such as 'minilm' or a Hugging Face model directory), whose "
        "hidden states the static model learns from"
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
