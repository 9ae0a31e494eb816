"""The on-disk formats sentvec reads, one entry each: :data:`FORMATS`.

Each :class:`ModelFormat` says how the format is recognised from its files (or its name, for
an alias), how it is loaded, which encoder class it yields and that class's ``encoder_type``.
:func:`sentvec.encoders.loading.load_encoder` dispatches on :func:`detect_format`;
:class:`sentvec.Pipeline` saves a component under its ``encoder_type`` and loads it back
through :func:`component_format`; ``sentvec export`` and the server ask the same table.

Detection reads file names, magic numbers and small JSON configs only: no model is loaded,
torch is not imported, and no FIFO or device is opened (a FIFO where a model file should be
is left for the loader to name). The entries are tried in the order of :data:`FORMATS`; the
last one, a transformer, takes every name that is not a file (a directory, an alias, a hub
name), so a file that matches no entry is no model (:func:`detect_format` returns None).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentvec.encoders.base import PIPELINE_FILE, Encoder

__all__ = [
    "ModelFormat",
    "FORMATS",
    "detect_format",
    "format_named",
    "by_encoder_type",
    "component_format",
    "SIF_CONFIG_FILE",
]


@dataclass(frozen=True)
class ModelFormat:
    """One on-disk format sentvec reads.

    Attributes
    ----------
    name : str
        Short name, e.g. ``"model2vec"``.
    human_name : str
        The format in words, for messages and the docs.
    detected_by : str
        What marks it, in words (the docs' table).
    encoder_class : str
        Dotted path of the class :meth:`load` returns.
    encoder_type : str or None
        That class's ``encoder_type`` (the name a :class:`sentvec.Pipeline` records for its
        encoder); None for a pipeline, which is no pipeline component.
    saved_by_encoder : bool
        This is the format the class's ``save()`` writes: a pipeline component of type
        ``encoder_type`` is read as this format (one such entry per ``encoder_type``).
    takes_options : bool
        :func:`sentvec.load_encoder`'s transformer options (``pooling``, ``layers``, ...) apply.
    older_encoder_types : tuple of str
        Other ``encoder_type`` values a saved pipeline may record for a component in this
        format (a bigram static model recorded as ``"static"``); such a component is
        recognised by its files.
    """

    name: str
    human_name: str
    detected_by: str
    encoder_class: str
    encoder_type: str | None
    detect: Callable[[str, Path], bool] = field(repr=False)
    loader: Callable[..., Encoder] = field(repr=False)
    saved_by_encoder: bool = False
    takes_options: bool = False
    older_encoder_types: tuple[str, ...] = ()

    def matches(self, name_or_path: str | os.PathLike[str]) -> bool:
        """True if ``name_or_path`` holds this format, read from its files alone (entries
        before this one in :data:`FORMATS` are not asked)."""
        text = os.fspath(name_or_path)
        return self.detect(text, Path(text).expanduser())

    def load(self, name_or_path: str | os.PathLike[str], **options: Any) -> Encoder:
        """Load ``name_or_path`` as this format.

        Parameters
        ----------
        name_or_path : str or path-like
        **options
            Transformer options; only for a format that :attr:`takes_options`.

        Returns
        -------
        Encoder
            An instance of :attr:`encoder_class`.

        Raises
        ------
        TypeError
            Options given to a format that takes none.
        FileNotFoundError, ValueError
            As the format's own loader (``ModelFormatError`` names the damaged file).
        """
        if options and not self.takes_options:
            raise TypeError(f"{self.human_name} takes no options, got {sorted(options)}")
        text = os.fspath(name_or_path)
        return self.loader(text, Path(text).expanduser(), **options)


# ----------------------------------------------------------------------------- detection


def _is_pipeline(text: str, path: Path) -> bool:
    return path.is_dir() and os.path.lexists(path / PIPELINE_FILE)  # a FIFO there: load says so


def _is_sent2vec_bin(text: str, path: Path) -> bool:
    from sentvec.sent2vec.binfile import is_bin_file

    return is_bin_file(path)


def _is_bigram_static(text: str, path: Path) -> bool:
    from sentvec.encoders.static_bigrams import is_bigram_model_dir

    return is_bigram_model_dir(path)


def _is_model2vec(text: str, path: Path) -> bool:
    from sentvec.encoders.static import is_model2vec_dir

    return path.is_dir() and is_model2vec_dir(path)


def _is_static_embedding(text: str, path: Path) -> bool:
    from sentvec.encoders.static_loaders import is_static_embedding_dir

    return is_static_embedding_dir(path)


def _is_wordllama(text: str, path: Path) -> bool:
    from sentvec.encoders.static_loaders import wordllama_alias

    return not path.exists() and wordllama_alias(text) is not False


#: The config file of a saved SIF / uSIF encoder (named here so that detection does not import
#: the encoder's module and scipy; ``tests/encoders/test_formats.py`` checks it is the same).
SIF_CONFIG_FILE = "sif_encoder.json"


def _saved_sif_method(path: Path) -> str | None:
    """``"sif"`` or ``"usif"`` for a saved SIF / uSIF directory, else None. A config that
    cannot be read (a FIFO, bad JSON) counts as SIF: its loader then names the file."""
    cfg = path / SIF_CONFIG_FILE
    if not path.is_dir() or not os.path.lexists(cfg):
        return None
    from sentvec._readers import read_json_object

    try:
        method = read_json_object(cfg).get("method")
    except (OSError, ValueError):
        return "sif"
    return "usif" if method == "usif" else "sif"


def _is_sif(text: str, path: Path) -> bool:
    return _saved_sif_method(path) == "sif"


def _is_usif(text: str, path: Path) -> bool:
    return _saved_sif_method(path) == "usif"


def _is_transformer_dir(path: Path) -> bool:
    return (path / "config.json").is_file() or (path / "sentvec_encoder.json").is_file()


def _is_sent2vec_dir(text: str, path: Path) -> bool:
    if not path.is_dir():
        return False
    from sentvec.sent2vec.model_dir import is_model_dir

    # a directory that is no transformer either: Sent2Vec.load names what is missing
    return is_model_dir(path) or not _is_transformer_dir(path)


def _is_transformer(text: str, path: Path) -> bool:
    return not path.is_file()


# ----------------------------------------------------------------------------- loading


def _load_pipeline(text: str, path: Path) -> Encoder:
    # Pipeline loads its components through this table: reached through the package's lazy
    # face (as every public name is), so that the two modules do not import each other
    from sentvec.encoders import Pipeline

    return Pipeline.load(path)


def _load_sent2vec(text: str, path: Path) -> Encoder:
    from sentvec.sent2vec.model import Sent2Vec

    return Sent2Vec.load(path)


def _load_bigram_static(text: str, path: Path) -> Encoder:
    from sentvec.encoders.static_bigrams import BigramStaticEncoder

    return BigramStaticEncoder.load(path)


def _load_model2vec(text: str, path: Path) -> Encoder:
    from sentvec.encoders.static import StaticEncoder

    return StaticEncoder.from_model2vec(path)


def _load_static_embedding(text: str, path: Path) -> Encoder:
    from sentvec.encoders.static_loaders import load_static_sentence_transformers

    return load_static_sentence_transformers(path)


def _load_wordllama(text: str, path: Path) -> Encoder:
    from sentvec.encoders.static_loaders import load_wordllama, wordllama_alias

    dim = wordllama_alias(text)
    return load_wordllama(None if dim is None else int(dim))


def _load_sif(text: str, path: Path) -> Encoder:
    from sentvec.encoders.sif import load_sif_encoder

    encoder: Encoder = load_sif_encoder(path)
    return encoder


def _load_transformer(text: str, path: Path, **options: Any) -> Encoder:
    from sentvec.encoders.transformer import TransformerEncoder

    return TransformerEncoder.from_pretrained(text, **options)


#: Every format sentvec reads, in the order :func:`detect_format` tries them.
FORMATS: tuple[ModelFormat, ...] = (
    ModelFormat(
        name="pipeline",
        human_name="sentvec pipeline directory",
        detected_by=f"a directory holding `{PIPELINE_FILE}`",
        encoder_class="sentvec.encoders.pipeline.Pipeline",
        encoder_type=None,
        detect=_is_pipeline,
        loader=_load_pipeline,
    ),
    ModelFormat(
        name="sent2vec-bin",
        human_name="Sent2Vec .bin model",
        detected_by="a file starting with fastText's magic number",
        encoder_class="sentvec.sent2vec.model.Sent2Vec",
        encoder_type="sent2vec",
        detect=_is_sent2vec_bin,
        loader=_load_sent2vec,
    ),
    ModelFormat(
        name="bigram-static",
        human_name="sentvec static model with bigram rows",
        detected_by="a directory holding `sentvec_bigrams.json`",
        encoder_class="sentvec.encoders.static_bigrams.BigramStaticEncoder",
        encoder_type="bigram-static",
        detect=_is_bigram_static,
        loader=_load_bigram_static,
        saved_by_encoder=True,
        older_encoder_types=("static",),
    ),
    ModelFormat(
        name="model2vec",
        human_name="Model2Vec model directory",
        detected_by="`config.json` naming a Model2Vec model, or `model.safetensors` "
        "holding `embeddings`",
        encoder_class="sentvec.encoders.static.StaticEncoder",
        encoder_type="static",
        detect=_is_model2vec,
        loader=_load_model2vec,
        saved_by_encoder=True,
    ),
    ModelFormat(
        name="sentence-transformers-static",
        human_name="sentence-transformers StaticEmbedding directory",
        detected_by="`modules.json` whose first module is `StaticEmbedding`",
        encoder_class="sentvec.encoders.static.StaticEncoder",
        encoder_type="static",
        detect=_is_static_embedding,
        loader=_load_static_embedding,
    ),
    ModelFormat(
        name="wordllama",
        human_name="WordLlama model shipped in the wordllama package",
        detected_by="the name `wordllama`, `wordllama-256`, `wordllama-128` or "
        "`wordllama-64` (not a path)",
        encoder_class="sentvec.encoders.static.StaticEncoder",
        encoder_type="static",
        detect=_is_wordllama,
        loader=_load_wordllama,
    ),
    ModelFormat(
        name="sif",
        human_name="sentvec SIF encoder directory",
        detected_by="`sif_encoder.json` with method `sif`",
        encoder_class="sentvec.encoders.sif.SIFEncoder",
        encoder_type="sif",
        detect=_is_sif,
        loader=_load_sif,
        saved_by_encoder=True,
    ),
    ModelFormat(
        name="usif",
        human_name="sentvec uSIF encoder directory",
        detected_by="`sif_encoder.json` with method `usif`",
        encoder_class="sentvec.encoders.sif.USIFEncoder",
        encoder_type="usif",
        detect=_is_usif,
        loader=_load_sif,
        saved_by_encoder=True,
    ),
    ModelFormat(
        name="sent2vec-dir",
        human_name="sentvec Sent2Vec model directory",
        detected_by="`config.json` of format `sentvec-sent2vec` (or a directory that is "
        "no transformer)",
        encoder_class="sentvec.sent2vec.model.Sent2Vec",
        encoder_type="sent2vec",
        detect=_is_sent2vec_dir,
        loader=_load_sent2vec,
        saved_by_encoder=True,
    ),
    ModelFormat(
        name="transformer",
        human_name="Hugging Face transformer",
        detected_by="anything else that is not a file: a model directory (`config.json`), "
        "an alias such as `minilm`, a hub name",
        encoder_class="sentvec.encoders.transformer.TransformerEncoder",
        encoder_type="transformer",
        detect=_is_transformer,
        loader=_load_transformer,
        saved_by_encoder=True,
        takes_options=True,
    ),
)

_BY_NAME = {f.name: f for f in FORMATS}
_BY_ENCODER_TYPE = {f.encoder_type: f for f in FORMATS if f.saved_by_encoder}


def detect_format(name_or_path: str | os.PathLike[str]) -> ModelFormat | None:
    """The format of ``name_or_path``, read from file names, magic numbers and small JSON
    configs (no model is loaded, torch is not imported, no FIFO is opened).

    Parameters
    ----------
    name_or_path : str or path-like
        A path, a model alias or a hub name, as :func:`sentvec.load_encoder` takes.

    Returns
    -------
    ModelFormat or None
        The first entry of :data:`FORMATS` that matches; None for a file that is no model
        sentvec reads (an empty file, another magic number).
    """
    text = os.fspath(name_or_path)
    path = Path(text).expanduser()
    for fmt in FORMATS:
        if fmt.detect(text, path):
            return fmt
    return None


def format_named(name: str) -> ModelFormat:
    """The entry of :data:`FORMATS` called ``name``.

    Raises
    ------
    KeyError
        No such format (the message lists the names).
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no model format {name!r}; sentvec reads {sorted(_BY_NAME)}") from None


def by_encoder_type(encoder_type: str) -> ModelFormat:
    """The format that encoders of ``encoder_type`` save themselves in.

    Parameters
    ----------
    encoder_type : str
        An encoder class's ``encoder_type`` (``"transformer"``, ``"sent2vec"``,
        ``"static"``, ``"bigram-static"``, ``"sif"``, ``"usif"``).

    Returns
    -------
    ModelFormat

    Raises
    ------
    KeyError
        No encoder saves itself under that type (the message lists the types).
    """
    try:
        return _BY_ENCODER_TYPE[encoder_type]
    except KeyError:
        raise KeyError(
            f"no encoder type {encoder_type!r}; sentvec saves {sorted(map(str, _BY_ENCODER_TYPE))}"
        ) from None


def component_format(encoder_type: str, directory: str | os.PathLike[str]) -> ModelFormat:
    """The format of a pipeline component that ``pipeline.json`` records as ``encoder_type``.

    That is :func:`by_encoder_type`'s entry, except where the directory's files are those of
    a format whose :attr:`ModelFormat.older_encoder_types` holds ``encoder_type`` (a bigram
    static model recorded as ``"static"``, the type of a Model2Vec component).

    Raises
    ------
    KeyError
        ``encoder_type`` is neither an encoder type nor an older one.
    """
    for fmt in FORMATS:
        if encoder_type in fmt.older_encoder_types and fmt.matches(directory):
            return fmt
    return by_encoder_type(encoder_type)
