"""Static embedding models from other libraries' files, as :class:`StaticEncoder`.

* :func:`load_static_sentence_transformers`: a sentence-transformers directory whose first
  module is ``StaticEmbedding`` (optionally followed by ``Normalize``);
* :func:`load_wordllama`: the weights shipped inside the ``wordllama`` package (never
  downloaded), aliases :data:`WORDLLAMA_ALIASES` for ``--model``;
* :func:`is_static_embedding_dir`: whether a path holds such a sentence-transformers directory
  (its entry of :data:`sentvec.encoders.formats.FORMATS`).

Each loader reproduces its library's own ``encode``: sentence-transformers averages every token
(the unknown one included) with the tokenizer's recorded truncation; WordLlama averages every
token, no truncation, and cuts the table to its first ``trunc_dim`` columns (its Matryoshka
dimensions).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sentvec._readers import read_json
from sentvec.encoders.static import (
    StaticEncoder,
    is_model2vec_dir,
    load_tokenizer_file,
    read_safetensors,
)
from sentvec.exceptions import ModelFormatError

__all__ = [
    "load_static_sentence_transformers",
    "load_wordllama",
    "static_model_format",
    "is_static_embedding_dir",
    "wordllama_alias",
    "WORDLLAMA_ALIASES",
    "WORDLLAMA_DIMS",
    "WORDLLAMA_FILES",
]

#: ``--model`` names of WordLlama's shipped model -> the truncation dimension (None: all 256).
WORDLLAMA_ALIASES: dict[str, int | None] = {
    "wordllama": None,
    "wordllama-256": None,
    "wordllama-128": 128,
    "wordllama-64": 64,
}
#: WordLlama configs whose weights its wheel ships: tokenizer file, tensor name (its ModelURI).
WORDLLAMA_FILES: dict[str, tuple[str, str]] = {
    "l2_supercat": ("l2_supercat_tokenizer_config.json", "embedding.weight"),
}
#: Widths WordLlama's ``trunc_dim`` accepts for its shipped 256-dimensional model.
WORDLLAMA_DIMS = (64, 128, 256)
_STATIC_MODULE = "StaticEmbedding"
_NORMALIZE_MODULE = "Normalize"


def _st_modules(path: Path, *, strict: bool = False) -> list[dict[str, Any]] | None:
    """The modules of ``path/modules.json`` in order; None when absent, or (unless ``strict``:
    loading, where it is a ModelFormatError naming the file) damaged."""
    f = path / "modules.json"
    try:
        mods = read_json(f, expect=list, error=ModelFormatError, missing=ModelFormatError)
        if not mods or not all(isinstance(m, dict) and type(m.get("idx", 0)) is int for m in mods):
            raise ModelFormatError(f"{str(f)!r} is not a list of modules with integer 'idx'")
    except ModelFormatError:
        if strict and os.path.lexists(f):
            raise
        return None
    return sorted(mods, key=lambda m: m.get("idx", 0))


def is_static_embedding_dir(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a sentence-transformers directory whose first module is
    ``StaticEmbedding`` (its ``modules.json`` read strictly; a damaged one does not count)."""
    p = Path(path)
    if not p.is_dir():
        return False
    mods = _st_modules(p)
    if not mods:
        return False
    return str(mods[0].get("type", "")).rsplit(".", 1)[-1] == _STATIC_MODULE


def static_model_format(path: str | os.PathLike[str]) -> str | None:
    """``"model2vec"``, ``"sentence-transformers"`` (first module ``StaticEmbedding``) or None.

    Deprecated: ask :func:`sentvec.encoders.formats.detect_format`, whose entries
    ``model2vec`` and ``sentence-transformers-static`` use the same two checks in this order.
    """
    p = Path(path)
    if not p.is_dir():
        return None
    if is_model2vec_dir(p):
        return "model2vec"
    if is_static_embedding_dir(p):
        return "sentence-transformers"
    return None


def load_static_sentence_transformers(path: str | os.PathLike[str]) -> StaticEncoder:
    """A sentence-transformers directory whose first module is ``StaticEmbedding``.

    The module's ``model.safetensors`` holds ``embedding.weight`` (or Model2Vec's
    ``embeddings`` with optional ``mapping`` / ``weights``, as sentence-transformers folds
    them) and its ``tokenizer.json``; a following ``Normalize`` module sets ``normalize``.
    As ``StaticEmbedding``, every token is averaged (the unknown one too) and texts are cut only
    by the tokenizer's recorded truncation.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a directory.
    ModelFormatError
        Not such a directory, another module after ``StaticEmbedding`` (other than
        ``Normalize``), a truncation that is not on the right, or missing / unreadable /
        inconsistent files (named in the message).
    """
    d = Path(path)
    if not d.is_dir():
        raise FileNotFoundError(f"model directory not found: {str(d)!r}")
    mods = _st_modules(d, strict=True)
    if not mods or str(mods[0].get("type", "")).rsplit(".", 1)[-1] != _STATIC_MODULE:
        raise ModelFormatError(
            f"{str(d / 'modules.json')!r} does not start with a StaticEmbedding module"
        )
    rest = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in mods[1:]]
    if any(t != _NORMALIZE_MODULE for t in rest):
        raise ModelFormatError(
            f"{str(d / 'modules.json')!r}: modules {rest} after StaticEmbedding; sentvec reads "
            "StaticEmbedding alone or followed by Normalize"
        )
    sub = d / str(mods[0].get("path") or "")
    tok_path = sub / "tokenizer.json"
    tokenizer = load_tokenizer_file(tok_path)
    trunc = tokenizer.truncation
    if trunc is not None and trunc.get("direction", "right") != "right":
        raise ModelFormatError(f"{str(tok_path)!r}: truncation from the left is not supported")
    st_path = sub / "model.safetensors"
    tensors = read_safetensors(st_path)
    table = tensors.get("embedding.weight", tensors.get("embeddings"))
    if table is None:
        raise ModelFormatError(
            f"{str(st_path)!r} holds neither 'embedding.weight' nor 'embeddings'"
        )
    try:
        return StaticEncoder(
            table,
            tokenizer,
            weights=tensors.get("weights"),
            token_mapping=tensors.get("mapping"),
            normalize=bool(rest),
            drop_unknown=False,
            max_length=None if trunc is None else int(trunc["max_length"]),
            source=f"sentence-transformers StaticEmbedding {d.name}",
        )
    except ModelFormatError as exc:
        raise ModelFormatError(f"{str(st_path)!r} / {str(tok_path)!r}: {exc}") from exc


def wordllama_alias(name: str) -> int | None | bool:
    """The truncation dimension of a WordLlama ``--model`` alias (None: all); False if ``name``
    is not one."""
    return WORDLLAMA_ALIASES.get(name.strip().lower(), False)


def load_wordllama(trunc_dim: int | None = None, *, config: str = "l2_supercat") -> StaticEncoder:
    """WordLlama's model shipped in the ``wordllama`` package (its ``l2_supercat`` 256-d weights).

    As ``WordLlama.load(config, trunc_dim=...).embed(texts)``: the Llama-2 tokenizer, every
    token averaged, no truncation of texts, the table cut to its first ``trunc_dim`` columns;
    not normalized (``embed``'s default; ``encode(normalize=True)`` = ``embed(norm=True)``).
    Nothing is downloaded.

    Parameters
    ----------
    trunc_dim : {64, 128, 256} or None
    config : str, default "l2_supercat"

    Raises
    ------
    ImportError
        The ``wordllama`` package is not installed (``pip install sentvec[static]``).
    ValueError
        ``trunc_dim`` is not one of :data:`WORDLLAMA_DIMS`.
    ModelFormatError
        The package does not hold the weights or tokenizer file (named).
    """
    import importlib.metadata
    import importlib.util

    # located, not imported: importing wordllama calls logging.basicConfig(level=INFO)
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ImportError(
            "the WordLlama model needs the package 'wordllama': pip install sentvec[static]"
        )
    if trunc_dim is not None and trunc_dim not in WORDLLAMA_DIMS:
        raise ValueError(f"trunc_dim must be one of {WORDLLAMA_DIMS} or None, got {trunc_dim!r}")
    if config not in WORDLLAMA_FILES:
        raise ValueError(
            f"unknown WordLlama config {config!r}; sentvec knows {sorted(WORDLLAMA_FILES)}"
        )
    root = Path(spec.origin).resolve().parent
    dim = max(WORDLLAMA_DIMS)
    tokenizer_file, key = WORDLLAMA_FILES[config]
    st_path = root / "weights" / f"{config}_{dim}.safetensors"  # WordLlama.get_filename
    tensors = read_safetensors(st_path)
    if key not in tensors:
        raise ModelFormatError(f"{str(st_path)!r} holds no {key!r} tensor")
    table = tensors[key]
    if trunc_dim is not None:
        table = table[:, :trunc_dim]
    version = importlib.metadata.version("wordllama")
    tokenizer = load_tokenizer_file(root / "tokenizers" / tokenizer_file)
    return StaticEncoder(
        table,
        tokenizer,
        normalize=False,
        drop_unknown=False,
        max_length=None,
        source=f"WordLlama {config} {version} dim {trunc_dim or dim}".replace("  ", " "),
    )
