"""Getting an encoder: ``load_encoder`` turns a ``--model`` argument into an encoder.

It dispatches on :func:`sentvec.encoders.formats.detect_format`, the one table of the formats
sentvec reads (:data:`sentvec.encoders.formats.FORMATS`: a pipeline, an official Sent2Vec
``.bin``, a Sent2Vec directory, the static models, SIF / uSIF, a transformer directory, alias
or hub name). torch is imported only to load a transformer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, cast

from sentvec.encoders.base import Encoder
from sentvec.encoders.formats import detect_format
from sentvec.exceptions import EncoderOptionsError

__all__ = [
    "load_encoder",
    "model_kind",
    "ModelKind",
    "describe_without_loading",
    "EncoderOptionsError",
]


def load_encoder(name_or_path: str | os.PathLike[str], **overrides: Any) -> Encoder:
    """Return the encoder named by ``name_or_path``.

    Parameters
    ----------
    name_or_path : str or path-like
        A saved pipeline directory, an official sent2vec ``.bin`` file, a directory written by
        ``Sent2Vec.save``, a Model2Vec directory, a sentence-transformers ``StaticEmbedding``
        directory, ``"wordllama"`` (``"wordllama-128"``, ``"wordllama-64"``), a static model
        with bigram rows, a saved SIF / uSIF encoder, a Hugging Face model directory, a model
        alias (``"minilm"``) or a hub name (loaded only from the local Hugging Face cache when
        offline): the formats of :data:`sentvec.encoders.formats.FORMATS`.
    **overrides
        Keyword arguments for ``TransformerEncoder.from_pretrained`` (``pooling``, ``layers``,
        ``max_length``, ``device``, ``precision``); ignored keys set to ``None`` are dropped.
        Passing transformer options for any other format raises ``ValueError``,
        except ``precision="auto"``, which every model accepts (float32 for all but a
        transformer).

    Returns
    -------
    encoder
        An object with ``encode(sentences, ...) -> ndarray (n, d) float32``.

    Raises
    ------
    FileNotFoundError
        If ``name_or_path`` names a ``.bin`` file or looks like a path (contains a separator or
        starts with ``.``/``~``) and does not exist.
    ValueError
        If a file exists but is not a model sentvec can read, or ``name_or_path`` is a FIFO, a
        device or a socket (the message says which); :class:`EncoderOptionsError`
        (a ValueError) if transformer options are given for a model that is no transformer.
    """
    overrides = {k: v for k, v in overrides.items() if v is not None}
    text = os.fspath(name_or_path)
    path = Path(text).expanduser()
    from sentvec._path_checks import check_model_path

    check_model_path(path)  # a FIFO or device: say so (not "not found", and never block on it)
    if path.suffix.lower() == ".bin" and not path.exists():
        raise FileNotFoundError(f"model file not found: {text!r}")
    fmt = detect_format(text)
    if fmt is None:
        what = "an empty file" if path.stat().st_size == 0 else "wrong magic number"
        raise ValueError(
            f"{text!r} is a file but not an official sent2vec .bin model ({what}); "
            "give a sent2vec .bin, a model directory or a model name"
        )
    if not fmt.takes_options:
        if overrides.get("precision") == "auto":
            del overrides["precision"]  # "auto": the best precision of any model, float32 here
        _reject_overrides(overrides, fmt.human_name)
    return fmt.load(text, **overrides)


ModelKind = Literal[
    "pipeline",
    "sent2vec-bin",
    "other-file",
    "bigram-static",
    "model2vec",
    "sentence-transformers-static",
    "wordllama",
    "sif",
    "usif",
    "sent2vec-dir",
    "transformer",
]


def model_kind(name_or_path: str | os.PathLike[str]) -> ModelKind:
    """The name of the format :func:`load_encoder` reads ``name_or_path`` as, or
    ``"other-file"`` for a file that is no model (no model is loaded, torch is not imported).

    Deprecated: use :func:`sentvec.encoders.formats.detect_format`, whose entry's ``name``
    this is.

    Parameters
    ----------
    name_or_path : str or path-like
        As :func:`load_encoder`.

    Returns
    -------
    str
        One of the :data:`ModelKind` values.
    """
    fmt = detect_format(name_or_path)
    return "other-file" if fmt is None else cast("ModelKind", fmt.name)


def describe_without_loading(
    name_or_path: str | os.PathLike[str], **overrides: Any
) -> dict[str, Any] | None:
    """What ``load_encoder(name_or_path, **overrides).config_dict()`` would return, read from
    the model files without loading the model, when that model is a local transformer.

    Parameters
    ----------
    name_or_path, **overrides
        As :func:`load_encoder`; ``device`` does not change the description.

    Returns
    -------
    dict or None
        :func:`sentvec.encoders.transformer_files.describe_pretrained`'s description; None for
        anything :func:`load_encoder` would not load as a local ``TransformerEncoder`` (a
        pipeline, a Sent2Vec or static model, a hub name) or whose description is uncertain.
        Never raises for a bad argument: :func:`load_encoder` reports those.
    """
    from sentvec.encoders.transformer_files import describe_pretrained

    overrides = {k: v for k, v in overrides.items() if v is not None}
    device = overrides.pop("device", None)  # where the vectors are computed, not what
    overrides.pop("onnx_cache_dir", None)
    if "precision" in overrides:  # "auto" depends on the device
        overrides["device"] = None if device is None else str(device)
    text = os.fspath(name_or_path)
    try:
        fmt = detect_format(text)
        if fmt is None or fmt.name != "transformer":
            return None
        return describe_pretrained(text, **overrides)
    except (OSError, ValueError, TypeError):
        return None


def _reject_overrides(overrides: dict[str, Any], what: str) -> None:
    if overrides:
        raise EncoderOptionsError(f"options {sorted(overrides)} do not apply to a {what}")
