"""Export a sentvec transformer pipeline as a sentence-transformers model directory.

The directory is written by sentvec itself (no sentence-transformers needed to export), so that
plain ``SentenceTransformer(DIR)`` loads it without sentvec installed. Module type strings and
config keys are those of release 2.0, which later releases map to their own; module weights are
safetensors files, read by releases 3.0 and later (tried: 3.0.1 and 6.2.0, identical vectors;
2.2.2, 2.3.1 and 2.7.0 read only pickled ``pytorch_model.bin`` files, which are not written, and
fail on the Dense and WeightedLayerPooling modules). Modules:

``0`` Transformer (the Hugging Face model and tokenizer in the root, ``sentence_bert_config.json``;
``output_hidden_states`` set in ``config.json`` when layers are combined)
-> ``WeightedLayerPooling`` (only when the pipeline averages layers or uses a layer other than
the last: weight 1 on each chosen hidden state, 0 elsewhere, so that its weighted mean is the plain
average) -> ``Pooling`` (cls / mean / max; mean over every real token, [CLS] and [SEP] included,
as sentvec pools) -> the post-processing as ``Dense`` layers (identity activation, see below)
-> no ``Normalize``.

Every post-processor that maps to Dense layers is an affine map ``y = (x - mu) A``
(:func:`affine_parameters`): the whitening (WhiteningBERT Eq. 1, ``A = W_k = U_k D_k^{-1/2}``,
shape (d, k)), all-but-the-top (Mu & Viswanath 2018, ``A = I - U_D^T U_D``) and SIF / uSIF
common-component removal (``mu = 0``, ``A = I - U^T diag(lambda) U``). It is written as two
Dense layers: the centring (weight ``I``, bias ``-mu``) and then the map (weight ``A^T``, no
bias), so that float32 arithmetic computes ``(x - mu) A`` as sentvec does. Folding both into
one layer (weight ``A^T``, bias ``-mu A``) is the same map in exact arithmetic, but in float32
``x A`` and ``-mu A`` are large and cancel (sentence embeddings are anisotropic: ``|mu|`` is
most of ``|x|``): for MiniLM it is 1e-4 away from the pipeline at k = d, against 1e-6 for the
two layers. Whitening components are stored largest variance first, so
``SentenceTransformer(DIR, truncate_dim=k')`` gives exactly the whitening with ``k'``
components fitted on the same data (the first ``k'`` columns of ``W``; signs are fixed
deterministically by :class:`sentvec.Whitening`).

With ``serving_compatible=True`` only the subset that text-embeddings-inference (TEI) reads is
allowed: ``config.json`` + ``tokenizer.json`` + ``model.safetensors`` in the root,
``sentence_bert_config.json`` (``max_seq_length``), ``1_Pooling/config.json`` (cls or mean) and
at most one ``2_Dense`` (``config.json`` + ``model.safetensors``, identity activation). TEI up
to 1.8.0 loads that one folder only; 1.8.1 and later apply every Dense of ``modules.json`` in
order, so a second Dense would be silently skipped by older servers. The centring is therefore
folded into the bias of the model's final LayerNorm (every token vector, hence its cls or mean
pool, is shifted by ``-mu``; the bias is computed in float64 and rounded once), and ``2_Dense``
carries ``A^T`` alone. Models whose final LayerNorm is not known (see
:data:`FINAL_NORM_BIAS`) get the folded single Dense with a UserWarning about its precision.
That server computes the last layer only, so a pipeline that averages layers, uses another
layer or max pooling is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sentvec._readers import read_json_object
from sentvec.encoders.base import TokenEmbeddings
from sentvec.exceptions import ExportError
from sentvec.integrations.sentence_transformers_card import (
    hub_name,
    model_card,
    package_versions,
    source_card,
    sts_markdown,
)

__all__ = [
    "ExportError",
    "check_exportable",
    "export_sentence_transformers",
    "dense_whitening_parameters",
    "affine_parameters",
    "FINAL_NORM_BIAS",
    "EXPORT_MARKER",
    "ST_MODULE_TYPES",
]

#: File that marks a directory written by this export (so a later export may replace it).
EXPORT_MARKER = "sentvec_export.json"
EXPORT_FORMAT = "sentvec-sentence-transformers-export"
EXPORT_VERSION = 1

#: ``modules.json`` type strings: the short ``sentence_transformers.models.X`` names, which
#: releases 2.x-3.x import directly and releases 5.4+ map to their moved modules.
ST_MODULE_TYPES: dict[str, str] = {
    "transformer": "sentence_transformers.models.Transformer",
    "layers": "sentence_transformers.models.WeightedLayerPooling",
    "pooling": "sentence_transformers.models.Pooling",
    "dense": "sentence_transformers.models.Dense",
}
_IDENTITY = "torch.nn.modules.linear.Identity"


#: Hugging Face ``model_type`` -> name (``{last}`` = index of the last layer) of the bias of the
#: LayerNorm that produces ``last_hidden_state`` (post-LN encoders: nothing follows it), into
#: which the serving-compatible export folds the centring.
FINAL_NORM_BIAS: dict[str, str] = {
    **{
        t: "encoder.layer.{last}.output.LayerNorm.bias"
        for t in ("bert", "roberta", "xlm-roberta", "camembert", "electra", "mpnet")
    },
    "distilbert": "transformer.layer.{last}.output_layer_norm.bias",
}


def affine_parameters(postprocessor: Any) -> tuple[np.ndarray | None, np.ndarray]:
    """A fitted post-processor as the affine map ``y = (x - mu) A``.

    Parameters
    ----------
    postprocessor : fitted sentvec.Whitening, AllButTheTop or CommonComponentRemoval

    Returns
    -------
    mu : ndarray of shape (d,), float64, or None
        The subtracted mean (None for CommonComponentRemoval, which subtracts nothing).
    A : ndarray of shape (d, k), float64
        ``Whitening``: ``whitening_matrix_`` (``k = n_components_``; WhiteningBERT Eq. 1).
        ``AllButTheTop``: ``I - U^T U`` with ``U`` the ``D`` removed components (rows),
        ``k = d`` (Mu & Viswanath, ICLR 2018, Algorithm 1). ``CommonComponentRemoval``:
        ``I - U^T diag(lambda) U`` (SIF: Arora et al. 2017, Algorithm 1; uSIF: Ethayarajh
        2018, Algorithm 1), ``k = d``.

    Raises
    ------
    ExportError
        Any other post-processor (its type is named): it has no Dense-layer equivalent that
        sentvec knows.
    sklearn.exceptions.NotFittedError
        The post-processor is not fitted.
    """
    from sklearn.utils.validation import check_is_fitted

    from sentvec.whitening import AllButTheTop, CommonComponentRemoval, Whitening

    if isinstance(postprocessor, Whitening):
        check_is_fitted(postprocessor, "mean_")
        return (
            np.asarray(postprocessor.mean_, dtype=np.float64),
            np.asarray(postprocessor.whitening_matrix_, dtype=np.float64),
        )
    if isinstance(postprocessor, (AllButTheTop, CommonComponentRemoval)):
        check_is_fitted(postprocessor, "components_")
        U = np.asarray(postprocessor.components_, dtype=np.float64)
        lam = np.asarray(postprocessor.component_weights_, dtype=np.float64)
        A = np.eye(U.shape[1]) - U.T @ (lam[:, None] * U)
        if isinstance(postprocessor, CommonComponentRemoval):
            return None, A
        return np.asarray(postprocessor.mean_, dtype=np.float64), A
    raise ExportError(
        f"a post-processor of type {type(postprocessor).__name__} has no sentence-transformers "
        "equivalent known to sentvec; exportable are the affine maps (x - mu) A of Whitening, "
        "AllButTheTop and CommonComponentRemoval, written as Dense layers"
    )


def dense_whitening_parameters(whitening: Any) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias of ONE Dense layer equal to a fitted post-processor.

    ``(x - mu) A = x A + b`` with ``b = -mu A``; ``torch.nn.Linear`` computes ``x A^T + b``.
    This folding is what the export falls back to in serving-compatible mode when the model's
    final LayerNorm is unknown; in float32 ``x A`` and ``b`` cancel (about 1e-4 for MiniLM at
    k = d), so the export otherwise writes the centring as a layer of its own.

    Parameters
    ----------
    whitening : fitted sentvec.Whitening (or AllButTheTop, CommonComponentRemoval)
        See :func:`affine_parameters`.

    Returns
    -------
    weight : ndarray of shape (k, d), float32
        ``A^T`` (``W_k^T`` for a whitening).
    bias : ndarray of shape (k,), float32
        ``-mu A``, computed in float64, then rounded (zeros when nothing is centred).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``whitening`` is not fitted.
    ExportError
        As :func:`affine_parameters`.

    References
    ----------
    Huang et al., WhiteningBERT (Findings of EMNLP 2021), Eq. 1; Su et al., BERT-whitening
    (2021): keeping the first k columns of W reduces the dimension.
    """
    mu, A = affine_parameters(whitening)
    weight = np.ascontiguousarray(A.T, dtype=np.float32)
    bias = np.zeros(A.shape[1]) if mu is None else -(mu @ A)
    return weight, np.ascontiguousarray(bias, dtype=np.float32)


# --------------------------------------------------------------------------- checks
def _split(model: Any, whitening: Any) -> tuple[Any, Any]:
    """(encoder, whitening) of a Pipeline or a bare encoder (+ optional whitening)."""
    from sentvec import Pipeline, TransformerEncoder

    if isinstance(model, Pipeline):
        if whitening is not None and model.whitening is not None:
            raise ValueError(
                "the pipeline has its own whitening; pass whitening=None, or a "
                "Pipeline without whitening"
            )
        encoder, whitening = model.encoder, model.whitening if whitening is None else whitening
    else:
        encoder = model
    from sentvec import Sent2Vec

    if isinstance(encoder, Sent2Vec):
        raise ExportError(
            "a Sent2Vec model has no sentence-transformers equivalent: its sentence vector is "
            "the mean of the embeddings of its in-vocabulary words AND of their word n-grams "
            f"(wordNgrams={encoder.dictionary.word_ngrams}), the n-grams hashed into "
            f"{encoder.dictionary.bucket} shared buckets, over sentvec's own tokenization with "
            "unknown words dropped before the n-grams form; sentence-transformers has no "
            "tokenizer module that emits overlapping hashed n-grams next to the words "
            "(WordEmbeddings/StaticEmbedding look up one token each; PhraseTokenizer merges "
            "known phrases instead of adding them), so no export would give the same vectors. "
            "Use the Sent2Vec model through sentvec (encode, or the MTEB adapter "
            "sentvec.integrations.mteb)"
        )
    from sentvec import SIFEncoder, USIFEncoder

    if isinstance(encoder, (SIFEncoder, USIFEncoder)):
        raise ExportError(
            f"a {type(encoder).__name__} has no sentence-transformers equivalent: it averages "
            "word or token vectors weighted by their corpus frequency and removes its own "
            "common components; sentence-transformers' Transformer module pools contextual "
            "token vectors without such weights, and its WordEmbeddings / WordWeights modules "
            "split text with their own word tokenizer, not the encoder's, so no export gives "
            "the same vectors. "
            "Use it through sentvec (encode, or the MTEB adapter sentvec.integrations.mteb); "
            "a CommonComponentRemoval on a TransformerEncoder's vectors does export"
        )
    if not isinstance(encoder, TransformerEncoder):
        raise TypeError(
            f"can export a sentvec Pipeline or TransformerEncoder, got {type(encoder).__name__}"
        )
    if whitening is not None:
        from sentvec.encoders.base import check_whitening_fits

        affine_parameters(whitening)  # refuses what maps to no Dense layer; checks it is fitted
        check_whitening_fits(encoder, whitening)
    return encoder, whitening


def _check_mapping(encoder: Any, serving_compatible: bool) -> bool:
    """Raise ExportError for options sentence-transformers cannot reproduce; return whether a
    WeightedLayerPooling module is needed."""
    if encoder.mean_mode != "exact" and encoder.pooling == "mean":
        raise ExportError(
            f"mean_mode={encoder.mean_mode!r} divides the token sum by n + 0.01 (the "
            "WhiteningBERT code); sentence-transformers' Pooling divides by n. Export an encoder "
            "with mean_mode='exact' (encoder.with_options(mean_mode='exact'))"
        )
    import torch

    dtype = next(encoder.model.parameters()).dtype
    if dtype != torch.float32:
        raise ExportError(
            f"the model runs in {dtype}; sentvec pools and whitens in float32 on top of it, "
            "while sentence-transformers would run every module in the model's dtype; export "
            "a float32 model (load it without dtype=...) and choose the dtype when serving"
        )
    idx = tuple(encoder.layer_indices)
    needs_layers = idx != (encoder.num_layers,)
    if needs_layers and len(idx) > 1 and encoder.pooling == "max":
        raise ExportError(
            f"max pooling over several layers {list(encoder.layers)}: sentvec max-pools each "
            "layer and then averages, while sentence-transformers (WeightedLayerPooling, then "
            "Pooling) averages the token vectors first, which gives other vectors for max "
            "pooling; export one layer, or mean or cls pooling"
        )
    if serving_compatible:
        if needs_layers:
            raise ExportError(
                f"serving_compatible: the pipeline uses hidden states {list(idx)} "
                f"(layers={list(encoder.layers)}), but text-embeddings-inference pools the last "
                f"layer ({encoder.num_layers}) only and cannot average layers; export "
                "without serving_compatible (sentence-transformers loads it), or choose "
                "layers=(-1,)"
            )
        if encoder.pooling not in ("cls", "mean"):
            raise ExportError(
                f"serving_compatible: text-embeddings-inference pools with cls or mean only, "
                f"not {encoder.pooling!r}"
            )
    return needs_layers


def check_exportable(
    model: Any, *, whitening: Any = None, serving_compatible: bool = False
) -> tuple[Any, Any]:
    """Check, before any work, that ``model`` maps to sentence-transformers modules.

    Parameters
    ----------
    model, whitening, serving_compatible
        As for :func:`export_sentence_transformers`.

    Returns
    -------
    encoder : sentvec.TransformerEncoder
    whitening : fitted sentvec.Whitening or None
        The pipeline's own, or ``whitening``.

    Raises
    ------
    ExportError, TypeError, ValueError
        As :func:`export_sentence_transformers`.
    """
    encoder, whitening = _split(model, whitening)
    _check_mapping(encoder, bool(serving_compatible))
    return encoder, whitening


# --------------------------------------------------------------------------- writing
def _write_json(path: Path, obj: Any) -> None:
    from sentvec._io import atomic_write_json

    atomic_write_json(path, obj)


def _save_safetensors(path: Path, tensors: Mapping[str, np.ndarray]) -> None:
    from sentvec._io import atomic_write_safetensors

    atomic_write_safetensors(path, tensors)


def _final_norm_bias(encoder: Any) -> str | None:
    """Name of the bias of the LayerNorm that produces ``last_hidden_state`` (a float32
    parameter of ``encoder.model``), or None when the architecture is not in
    :data:`FINAL_NORM_BIAS`."""
    pattern = FINAL_NORM_BIAS.get(str(getattr(encoder.model.config, "model_type", "")))
    if pattern is None:
        return None
    name = pattern.format(last=int(encoder.num_layers) - 1)
    params = dict(encoder.model.named_parameters())
    return name if name in params and tuple(params[name].shape) == (encoder.hidden_size,) else None


def _save_transformer(
    encoder: Any,
    root: Path,
    *,
    hidden_states: bool,
    fold_mean: tuple[str, np.ndarray] | None = None,
) -> None:
    """HF model + tokenizer into ``root`` (safetensors), ``sentence_bert_config.json``.

    ``fold_mean=(name, mu)`` writes the parameter ``name`` (the final LayerNorm's bias) as
    ``bias - mu`` (float64, rounded once to float32); the live model is left unchanged."""
    state_dict = None
    if fold_mean is not None:
        import torch

        name, mu = fold_mean
        state_dict = dict(encoder.model.state_dict())
        bias = state_dict[name].detach().cpu().to(torch.float64).numpy()
        state_dict[name] = torch.from_numpy((bias - mu).astype(np.float32))
    encoder.model.save_pretrained(root, safe_serialization=True, state_dict=state_dict)
    encoder.tokenizer.save_pretrained(root)
    _drop_loader_keys(root / "tokenizer_config.json", _source_dir(encoder))
    if not (root / "tokenizer.json").is_file():
        raise ExportError(
            f"the tokenizer of {encoder.name_or_path!r} is not a fast tokenizer "
            "(no tokenizer.json); sentence-transformers and serving tools need one"
        )
    cfg_path = root / "config.json"
    cfg = read_json_object(cfg_path)
    # layer combination needs every hidden state: both old and new sentence-transformers read
    # the flag from the model config (the encoder's own config is left as it is)
    if hidden_states:
        cfg["output_hidden_states"] = True
    else:
        cfg.pop("output_hidden_states", None)
    _write_json(cfg_path, cfg)
    _write_json(
        root / "sentence_bert_config.json",
        {"max_seq_length": int(encoder.max_length), "do_lower_case": False},
    )


#: Keys that transformers' loader adds to ``tokenizer_config.json`` when it saves a tokenizer
#: it loaded (how it was loaded, not what it is); dropped unless the source model has them.
_LOADER_KEYS = ("local_files_only", "is_local", "max_length")


def _source_dir(encoder: TokenEmbeddings) -> Path | None:
    """The local directory of the model the encoder was made from (its recorded source model
    first: a directory saved by sentvec records the one it came from), when there is one."""
    from sentvec.encoders.models import resolve_model

    for name in (_source_model(encoder), encoder.name_or_path):
        if not name:
            continue
        if Path(str(name)).is_dir():
            return Path(str(name))
        try:
            resolved = resolve_model(str(name))
        except (OSError, ValueError):
            continue
        if Path(resolved).is_dir():
            return Path(resolved)
    return None


def _drop_loader_keys(path: Path, source: Path | None) -> None:
    """Remove from the saved ``tokenizer_config.json`` the loader keys the source lacks."""
    cfg = read_json_object(path)
    src_keys: set[str] = set()
    if source is not None and (source / "tokenizer_config.json").is_file():
        src_keys = set(read_json_object(source / "tokenizer_config.json"))
    dropped = [k for k in _LOADER_KEYS if k in cfg and k not in src_keys]
    if dropped:
        _write_json(path, {k: v for k, v in cfg.items() if k not in dropped})


def _source_model(encoder: Any) -> str:
    desc = encoder.config_dict()
    return str(desc.get("source_model") or desc.get("model") or encoder.name_or_path)


def export_sentence_transformers(
    model: Any,
    path: str | os.PathLike[str],
    *,
    whitening: Any = None,
    whitening_corpus: str | None = None,
    serving_compatible: bool = False,
    sts: Any = None,
    title: str | None = None,
) -> Path:
    """Write a sentvec pipeline as a directory that ``SentenceTransformer(path)`` loads.

    Parameters
    ----------
    model : sentvec.Pipeline or sentvec.TransformerEncoder
        A transformer pipeline (encoder + optional post-processor) or a bare encoder. Its
        pooling, layers and ``max_length`` are reproduced; a Sent2Vec, SIF or uSIF model raises
        :class:`ExportError`.
    path : path-like
        Output directory: missing, empty, or an earlier export (which is replaced as a whole).
    whitening : fitted sentvec.Whitening, AllButTheTop or CommonComponentRemoval, optional
        Post-processor for a bare encoder (or a Pipeline without one), exported as Dense
        layers (see :func:`affine_parameters`; the module docstring gives the layout).
    whitening_corpus : str, optional
        What the post-processor was fitted on, for the model card (e.g. ``"corpus.txt"``).
    serving_compatible : bool, default False
        Restrict to what text-embeddings-inference reads (last layer, cls or mean pooling,
        ``1_Pooling``, ``2_Dense``); other pipelines raise :class:`ExportError`.
    sts : STSResult, mapping of label to STSResult, or str, optional
        The pipeline's STS scores, written into the model card as a table (a str is written
        as given).
    title : str, optional
        Model card heading (default: derived from the source model and configuration).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ExportError (a ValueError)
        A Sent2Vec model (hashed n-grams have no sentence-transformers module); a SIF / uSIF
        encoder (frequency-weighted word vectors); a post-processor other than the three
        above; a model whose weights are not float32; mean pooling
        with ``mean_mode="paper"``; max pooling over several layers; with
        ``serving_compatible``, any layer other than the last alone or max pooling.
    TypeError
        ``model`` is neither a Pipeline nor a TransformerEncoder; ``sts`` of a wrong type.
    ValueError
        The whitening does not fit the encoder's width, or both the pipeline and ``whitening``
        carry one.
    FileExistsError
        ``path`` is a file or a non-empty directory that is not an earlier export; nothing is
        written.

    Warns
    -----
    UserWarning
        ``serving_compatible`` with a centring post-processor on a model whose final LayerNorm
        is not in :data:`FINAL_NORM_BIAS`: one folded Dense layer is written instead (float32
        cancellation, about 1e-4 for MiniLM at k = d).

    Notes
    -----
    Module type strings are ``sentence_transformers.models.Transformer`` / ``...Pooling`` /
    ``...WeightedLayerPooling`` / ``...Dense``, and module configs use the key names of release
    2.x (``word_embedding_dimension``, ``pooling_mode_*_tokens``), which later releases map to
    their own. sentvec averages the pooled vectors of the chosen layers; for mean and cls
    pooling that equals pooling the average token vectors, which is what WeightedLayerPooling
    (weights 1 on the chosen hidden states, 0 elsewhere, divided by their sum) then Pooling
    compute. The result agrees with ``model.encode`` up to float32 rounding: about 1e-6 before
    whitening; whitening multiplies rounding by up to 1/sqrt(smallest kept eigenvalue).
    """
    from sentvec._io import atomic_directory, atomic_write_text

    encoder, whitening = _split(model, whitening)
    needs_layers = _check_mapping(encoder, bool(serving_compatible))
    post = _dense_layers(encoder, whitening, bool(serving_compatible))
    modules = _module_entries(needs_layers, len(post.dense))
    info = _export_info(encoder, whitening, modules, post, whitening_corpus, title)
    sts_md = sts_markdown(sts)
    info.update(source_card(_source_dir(encoder)))

    with atomic_directory(
        path,
        marker=EXPORT_MARKER,
        marker_format=EXPORT_FORMAT,
        kind="a sentvec sentence-transformers export",
    ) as tmp:
        _save_transformer(encoder, tmp, hidden_states=needs_layers, fold_mean=post.fold)
        _write_modules(tmp, encoder, info, post.dense)
        atomic_write_text(tmp / "README.md", model_card(info, sts_md, sts))
        _write_json(tmp / EXPORT_MARKER, info)
    return Path(path)


#: A Dense layer of the export: weight (out, in), bias (out,) or None.
_Dense = tuple[np.ndarray, np.ndarray | None]


class _DenseLayers(NamedTuple):
    """The post-processing ``(x - mu) A`` as Dense layers (see the module docstring)."""

    #: the layers, in order (none without post-processing)
    dense: list[_Dense]
    #: ``"map"``, ``"two"``, ``"folded-norm"``, ``"one"``; None without post-processing
    layout: str | None
    #: for ``"folded-norm"``: the LayerNorm bias the mean is folded into, and the mean
    fold: tuple[str, np.ndarray] | None
    #: restricted to what text-embeddings-inference reads
    serving_compatible: bool


def _dense_layers(encoder: Any, whitening: Any, serving_compatible: bool) -> _DenseLayers:
    """The post-processing ``whitening`` of ``encoder``'s vectors as Dense layers."""
    if whitening is None:
        return _DenseLayers([], None, None, serving_compatible)
    mu, A = affine_parameters(whitening)
    mapping = (np.ascontiguousarray(A.T, dtype=np.float32), None)
    if mu is None:
        return _DenseLayers([mapping], "map", None, serving_compatible)
    if not serving_compatible:
        d = int(encoder.hidden_size)
        centring = (np.eye(d, dtype=np.float32), (-mu).astype(np.float32))
        return _DenseLayers([centring, mapping], "two", None, serving_compatible)
    name = _final_norm_bias(encoder)
    if name is not None:
        return _DenseLayers([mapping], "folded-norm", (name, mu), serving_compatible)
    import warnings

    warnings.warn(
        f"serving_compatible: the final LayerNorm of model_type "
        f"{encoder.model.config.model_type!r} is not known to sentvec, so the "
        "centring cannot be folded into it; writing ONE Dense layer (weight A^T, "
        "bias -mu A), whose float32 cancellation puts the vectors up to ~1e-4 from "
        "the pipeline's (MiniLM, k = d). Without serving_compatible the export "
        "writes the centring as its own Dense layer",
        UserWarning,
        stacklevel=3,
    )
    return _DenseLayers([dense_whitening_parameters(whitening)], "one", None, serving_compatible)


def _module_entries(needs_layers: bool, n_dense: int) -> list[dict[str, Any]]:
    """``modules.json``: Transformer, WeightedLayerPooling (only when layers are combined),
    Pooling, then ``n_dense`` Dense modules."""
    modules: list[dict[str, Any]] = [
        {"idx": 0, "name": "0", "path": "", "type": ST_MODULE_TYPES["transformer"]}
    ]
    if needs_layers:
        modules.append(
            {
                "idx": 1,
                "name": "1",
                "path": "1_WeightedLayerPooling",
                "type": ST_MODULE_TYPES["layers"],
            }
        )
    n = len(modules)
    modules.append(
        {"idx": n, "name": str(n), "path": f"{n}_Pooling", "type": ST_MODULE_TYPES["pooling"]}
    )
    for _ in range(n_dense):
        n += 1
        modules.append(
            {"idx": n, "name": str(n), "path": f"{n}_Dense", "type": ST_MODULE_TYPES["dense"]}
        )
    return modules


def _export_info(
    encoder: Any,
    whitening: Any,
    modules: list[dict[str, Any]],
    post: _DenseLayers,
    whitening_corpus: str | None,
    title: str | None,
) -> dict[str, Any]:
    """The content of ``sentvec_export.json`` (also what the model card is written from)."""
    dense, layout, fold = post.dense, post.layout, post.fold
    d, L = int(encoder.hidden_size), int(encoder.num_layers)
    idx = tuple(int(i) for i in encoder.layer_indices)
    source = _source_model(encoder)
    pp_info = None
    if whitening is not None:
        from sentvec.whitening import postprocessor_type_of

        pp_info = {
            "type": postprocessor_type_of(whitening),
            "n_components": int(whitening.n_components_),
            "n_features": d,
            "output_dimension": int(dense[-1][0].shape[0]),
            "n_samples": int(getattr(whitening, "n_samples_seen_", 0) or 0),
            "corpus": whitening_corpus or "an unnamed corpus",
            "layout": layout,
            "mean_folded_into": fold[0] if fold else None,
            "solver": getattr(whitening, "solver_", None),
        }
    w_info = pp_info if pp_info and pp_info["type"] == "whitening" else None
    info: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "source_model": source,
        "base_model": hub_name(source),
        "pooling": encoder.pooling,
        "mean_mode": encoder.mean_mode,
        "layers": {"given": list(encoder.layers), "indices": list(idx)},
        "num_layers": L,
        "hidden_size": d,
        "max_seq_length": int(encoder.max_length),
        "whitening": w_info,
        "post_processing": pp_info,
        "serving_compatible": post.serving_compatible,
        "modules": modules,
        "versions": package_versions(),
    }
    pool_name = {"mean": "AVG", "cls": "CLS", "max": "MAX"}[encoder.pooling]
    pp_title = ""
    if pp_info:
        pp_title = {
            "whitening": f" + whitening (k={pp_info['n_components']})",
            "all-but-the-top": f" + all-but-the-top (D={pp_info['n_components']})",
            "common-component-removal": f" + common-component removal ({pp_info['n_components']})",
        }[str(pp_info["type"])]
    info["title"] = title or (f"{source}: {pool_name} " + "+".join(f"L{i}" for i in idx) + pp_title)
    return info


def _write_modules(tmp: Path, encoder: Any, info: dict[str, Any], dense: list[_Dense]) -> None:
    """Write the WeightedLayerPooling, Pooling and Dense modules' folders under ``tmp``,
    ``modules.json`` and ``config_sentence_transformers.json``."""
    modules = info["modules"]
    d, L = int(encoder.hidden_size), int(encoder.num_layers)
    idx = tuple(int(i) for i in encoder.layer_indices)
    if modules[1]["type"] == ST_MODULE_TYPES["layers"]:
        start = min(idx)
        weights = np.zeros(L + 1 - start, dtype=np.float32)
        weights[[i - start for i in idx]] = 1.0
        sub = tmp / modules[1]["path"]
        _write_json(
            sub / "config.json",
            {"word_embedding_dimension": d, "layer_start": start, "num_hidden_layers": L},
        )
        _save_safetensors(sub / "model.safetensors", {"layer_weights": weights})
    pool = next(m for m in modules if m["type"] == ST_MODULE_TYPES["pooling"])
    _write_json(
        tmp / pool["path"] / "config.json",
        {
            "word_embedding_dimension": d,
            "pooling_mode_cls_token": encoder.pooling == "cls",
            "pooling_mode_mean_tokens": encoder.pooling == "mean",
            "pooling_mode_max_tokens": encoder.pooling == "max",
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )
    for (weight, bias), module in zip(dense, modules[len(modules) - len(dense) :], strict=True):
        sub = tmp / module["path"]
        _write_json(
            sub / "config.json",
            {
                "in_features": int(weight.shape[1]),
                "out_features": int(weight.shape[0]),
                "bias": bias is not None,
                "activation_function": _IDENTITY,
            },
        )
        tensors = {"linear.weight": weight}
        if bias is not None:
            tensors["linear.bias"] = np.ascontiguousarray(bias, dtype=np.float32)
        _save_safetensors(sub / "model.safetensors", tensors)
    _write_json(tmp / "modules.json", modules)
    _write_json(
        tmp / "config_sentence_transformers.json",
        {
            "__version__": {k: v for k, v in info["versions"].items() if k != "sentvec"},
            "prompts": {},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
    )
