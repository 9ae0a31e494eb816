"""Getting an encoder: ``load_encoder`` turns a ``--model`` argument into an encoder.

* a directory holding ``pipeline.json``            -> :class:`sentvec.Pipeline`
* an official sent2vec ``.bin`` file (by magic)    -> :class:`sentvec.Sent2Vec`
* a directory saved by ``Sent2Vec.save``           -> :class:`sentvec.Sent2Vec`
* a Model2Vec directory, a sentence-transformers directory whose first module is
  ``StaticEmbedding``, or ``"wordllama"`` (``-128``, ``-64``)  -> :class:`sentvec.StaticEncoder`
* anything else (alias such as ``"minilm"``, a Hugging Face model directory or hub name)
                                                   -> :class:`sentvec.TransformerEncoder`

torch is imported only in the last case.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from sentvec.encoders.base import PIPELINE_FILE, Encoder
from sentvec.exceptions import EncoderOptionsError

__all__ = [
    "load_encoder",
    "model_kind",
    "ModelKind",
    "describe_without_loading",
    "EncoderOptionsError",
]


def _is_transformer_dir(path: Path) -> bool:
    return (path / "config.json").is_file() or (path / "sentvec_encoder.json").is_file()


def load_encoder(name_or_path: str | os.PathLike[str], **overrides: Any) -> Encoder:
    """Return the encoder named by ``name_or_path``.

    Parameters
    ----------
    name_or_path : str or path-like
        A saved pipeline directory, an official sent2vec ``.bin`` file, a directory written by
        ``Sent2Vec.save``, a Model2Vec directory, a sentence-transformers ``StaticEmbedding``
        directory, ``"wordllama"`` (``"wordllama-128"``, ``"wordllama-64"``), a Hugging Face
        model directory, a model alias (``"minilm"``) or a hub
        name (loaded only from the local Hugging Face cache when offline).
    **overrides
        Keyword arguments for ``TransformerEncoder.from_pretrained`` (``pooling``, ``layers``,
        ``max_length``, ``device``, ``precision``); ignored keys set to ``None`` are dropped.
        Passing transformer options for a Sent2Vec model or a pipeline raises ``ValueError``,
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
        (a ValueError) if transformer options are given for a Sent2Vec model or a pipeline.
    """
    overrides = {k: v for k, v in overrides.items() if v is not None}
    text = os.fspath(name_or_path)
    path = Path(text).expanduser()
    from sentvec._io import check_model_path

    check_model_path(path)  # a FIFO or device: say so (not "not found", and never block on it)
    if path.suffix.lower() == ".bin" and not path.exists():
        raise FileNotFoundError(f"model file not found: {text!r}")
    kind = model_kind(text)
    if kind != "transformer" and overrides.get("precision") == "auto":
        del overrides["precision"]  # "auto": the best precision of any model, float32 for these
    if kind == "pipeline":
        from sentvec.encoders.pipeline import Pipeline

        _reject_overrides(overrides, "a saved pipeline")
        return Pipeline.load(path)
    if kind in ("sent2vec-bin", "sent2vec-dir"):
        from sentvec.sent2vec.model import Sent2Vec

        _reject_overrides(overrides, "a Sent2Vec model")
        return Sent2Vec.load(path)
    if kind == "other-file":
        what = "an empty file" if path.stat().st_size == 0 else "wrong magic number"
        raise ValueError(
            f"{text!r} is a file but not an official sent2vec .bin model ({what}); "
            "give a sent2vec .bin, a model directory or a model name"
        )
    if kind == "transformer":
        from sentvec.encoders.transformer import TransformerEncoder

        return TransformerEncoder.from_pretrained(text, **overrides)
    _reject_overrides(overrides, "a static embedding model")
    return _static_encoder(kind, text, path)


ModelKind = Literal[
    "pipeline",
    "sent2vec-bin",
    "other-file",
    "bigram-static",
    "model2vec",
    "sentence-transformers-static",
    "wordllama",
    "sent2vec-dir",
    "transformer",
]


def model_kind(name_or_path: str | os.PathLike[str]) -> ModelKind:
    """Which loader :func:`load_encoder` uses for ``name_or_path``, read from file names and
    magic numbers only (no model is loaded, torch is not imported).

    The order of the checks is the dispatch order of :func:`load_encoder`: a pipeline
    directory, a file (an official ``.bin`` by magic number, else ``"other-file"``), a static
    model directory (sentvec bigram, Model2Vec, sentence-transformers ``StaticEmbedding``), a
    WordLlama alias that is not a path, a Sent2Vec directory (or a directory that is no
    transformer), and finally a transformer (directory, alias or hub name).

    Parameters
    ----------
    name_or_path : str or path-like
        As :func:`load_encoder`.

    Returns
    -------
    str
        One of the :data:`ModelKind` values.

    Raises
    ------
    OSError
        If reading a file's magic number fails.
    """
    from sentvec.encoders.static_bigrams import is_bigram_model_dir
    from sentvec.encoders.static_loaders import static_model_format, wordllama_alias

    text = os.fspath(name_or_path)
    path = Path(text).expanduser()
    if path.is_dir() and os.path.lexists(path / PIPELINE_FILE):  # a FIFO there: load says so
        return "pipeline"
    if path.is_file():
        from sentvec.sent2vec.binfile import is_bin_file

        return "sent2vec-bin" if is_bin_file(path) else "other-file"
    if is_bigram_model_dir(path):
        return "bigram-static"
    static = static_model_format(path)
    if static == "model2vec":
        return "model2vec"
    if static == "sentence-transformers":
        return "sentence-transformers-static"
    if not path.exists() and wordllama_alias(text) is not False:
        return "wordllama"
    if path.is_dir():
        from sentvec.sent2vec.model import is_model_dir

        if is_model_dir(path) or not _is_transformer_dir(path):
            return "sent2vec-dir"
    return "transformer"


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
        if model_kind(text) != "transformer":
            return None
        return describe_pretrained(text, **overrides)
    except (OSError, ValueError, TypeError):
        return None


def _static_encoder(kind: ModelKind, text: str, path: Path) -> Encoder:
    """The static encoder of a ``kind`` that :func:`model_kind` gave for a static model."""
    from sentvec.encoders.static_bigrams import BigramStaticEncoder
    from sentvec.encoders.static_loaders import (
        load_static_sentence_transformers,
        load_wordllama,
        wordllama_alias,
    )

    if kind == "bigram-static":
        return BigramStaticEncoder.load(path)
    if kind == "model2vec":
        from sentvec.encoders.static import StaticEncoder

        return StaticEncoder.from_model2vec(path)
    if kind == "sentence-transformers-static":
        return load_static_sentence_transformers(path)
    assert kind == "wordllama", kind
    dim = wordllama_alias(text)
    return load_wordllama(None if dim is None else int(dim))


def _reject_overrides(overrides: dict[str, Any], what: str) -> None:
    if overrides:
        raise EncoderOptionsError(f"options {sorted(overrides)} do not apply to {what}")
