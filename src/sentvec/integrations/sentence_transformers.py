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
as sentvec pools) -> ``Dense`` carrying the whitening (identity activation, see below) -> no
``Normalize``.

The whitening ``x_hat = (x - mu) W_k`` (WhiteningBERT Eq. 1, ``W_k = U_k D_k^{-1/2}``) is the
affine map ``x_hat = x W_k + b`` with ``b = -mu W_k``; a Dense layer computes ``x A^T + b``, so its
weight is ``A = W_k^T`` (shape (k, d)) and its bias ``b`` (shape (k,)). The components are
stored largest variance first, so ``SentenceTransformer(DIR, truncate_dim=k')`` gives exactly
the whitening with ``k'`` components fitted on the same data (the first ``k'`` columns of ``W``;
signs are fixed deterministically by :class:`sentvec.Whitening`).

With ``serving_compatible=True`` only the subset that text-embeddings-inference reads is allowed:
``config.json`` + ``tokenizer.json`` + ``model.safetensors`` in the root,
``sentence_bert_config.json`` (``max_seq_length``), ``1_Pooling/config.json`` (cls or mean) and
an optional ``2_Dense`` (``config.json`` + ``model.safetensors``, identity activation). That
server computes the last layer only, so a pipeline that averages layers, uses another layer or
max pooling is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ExportError",
    "check_exportable",
    "export_sentence_transformers",
    "dense_whitening_parameters",
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
#: hub names of sentvec's model aliases, for the model card's ``base_model``
_ALIAS_HUB_NAMES = {"minilm": "sentence-transformers/all-MiniLM-L6-v2",
                    "mpnet": "sentence-transformers/all-mpnet-base-v2"}


class ExportError(ValueError):
    """The pipeline cannot be expressed in the requested sentence-transformers layout."""


def dense_whitening_parameters(whitening: Any) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias of the Dense layer equal to a fitted whitening.

    ``(x - mu) W = x W + b`` with ``b = -mu W``; ``torch.nn.Linear`` computes ``x A^T + b``.

    Parameters
    ----------
    whitening : fitted sentvec.Whitening
        Uses ``mean_`` (d,) and ``whitening_matrix_`` (d, k), both float64.

    Returns
    -------
    weight : ndarray of shape (k, d), float32
        ``W_k^T``.
    bias : ndarray of shape (k,), float32
        ``-mu W_k``, computed in float64, then rounded.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``whitening`` is not fitted.

    References
    ----------
    Huang et al., WhiteningBERT (Findings of EMNLP 2021), Eq. 1; Su et al., BERT-whitening
    (2021): keeping the first k columns of W reduces the dimension.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(whitening, "whitening_matrix_")
    W = np.asarray(whitening.whitening_matrix_, dtype=np.float64)
    mu = np.asarray(whitening.mean_, dtype=np.float64)
    weight = np.ascontiguousarray(W.T, dtype=np.float32)
    bias = np.ascontiguousarray(-(mu @ W), dtype=np.float32)
    return weight, bias


# --------------------------------------------------------------------------- checks
def _split(model: Any, whitening: Any) -> tuple[Any, Any]:
    """(encoder, whitening) of a Pipeline or a bare encoder (+ optional whitening)."""
    from sentvec import Pipeline, TransformerEncoder

    if isinstance(model, Pipeline):
        if whitening is not None and model.whitening is not None:
            raise ValueError("the pipeline has its own whitening; pass whitening=None, or a "
                             "Pipeline without whitening")
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
            "sentvec.integrations.mteb)")
    if not isinstance(encoder, TransformerEncoder):
        raise TypeError(f"can export a sentvec Pipeline or TransformerEncoder, got "
                        f"{type(encoder).__name__}")
    if whitening is not None:
        from sklearn.utils.validation import check_is_fitted

        from sentvec.encoders.base import check_whitening_fits

        check_is_fitted(whitening, "whitening_matrix_")
        check_whitening_fits(encoder, whitening)
    return encoder, whitening


def _check_mapping(encoder: Any, serving_compatible: bool) -> bool:
    """Raise ExportError for options sentence-transformers cannot reproduce; return whether a
    WeightedLayerPooling module is needed."""
    if encoder.mean_mode != "exact" and encoder.pooling == "mean":
        raise ExportError(
            f"mean_mode={encoder.mean_mode!r} divides the token sum by n + 0.01 (the "
            "WhiteningBERT code); sentence-transformers' Pooling divides by n. Export an encoder "
            "with mean_mode='exact' (encoder.with_options(mean_mode='exact'))")
    import torch

    dtype = next(encoder.model.parameters()).dtype
    if dtype != torch.float32:
        raise ExportError(
            f"the model runs in {dtype}; sentvec pools and whitens in float32 on top of it, "
            "while sentence-transformers would run every module in the model's dtype; export "
            "a float32 model (load it without dtype=...) and choose the dtype when serving")
    idx = tuple(encoder.layer_indices)
    needs_layers = idx != (encoder.num_layers,)
    if needs_layers and len(idx) > 1 and encoder.pooling == "max":
        raise ExportError(
            f"max pooling over several layers {list(encoder.layers)}: sentvec max-pools each "
            "layer and then averages, while sentence-transformers (WeightedLayerPooling, then "
            "Pooling) averages the token vectors first, which gives other vectors for max "
            "pooling; export one layer, or mean or cls pooling")
    if serving_compatible:
        if needs_layers:
            raise ExportError(
                f"serving_compatible: the pipeline uses hidden states {list(idx)} "
                f"(layers={list(encoder.layers)}), but text-embeddings-inference pools the last "
                f"layer ({encoder.num_layers}) only and cannot average layers; export "
                "without serving_compatible (sentence-transformers loads it), or choose "
                "layers=(-1,)")
        if encoder.pooling not in ("cls", "mean"):
            raise ExportError(
                f"serving_compatible: text-embeddings-inference pools with cls or mean only, "
                f"not {encoder.pooling!r}")
    return needs_layers


def check_exportable(model: Any, *, whitening: Any = None,
                     serving_compatible: bool = False) -> tuple[Any, Any]:
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
    import torch
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()},
              str(path))


def _save_transformer(encoder: Any, root: Path, *, hidden_states: bool) -> None:
    """HF model + tokenizer into ``root`` (safetensors), ``sentence_bert_config.json``."""
    encoder.model.save_pretrained(root, safe_serialization=True)
    encoder.tokenizer.save_pretrained(root)
    if not (root / "tokenizer.json").is_file():
        raise ExportError(f"the tokenizer of {encoder.name_or_path!r} is not a fast tokenizer "
                          "(no tokenizer.json); sentence-transformers and serving tools need one")
    cfg_path = root / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    # layer combination needs every hidden state: both old and new sentence-transformers read
    # the flag from the model config (the encoder's own config is left as it is)
    if hidden_states:
        cfg["output_hidden_states"] = True
    else:
        cfg.pop("output_hidden_states", None)
    _write_json(cfg_path, cfg)
    _write_json(root / "sentence_bert_config.json",
                {"max_seq_length": int(encoder.max_length), "do_lower_case": False})


def _versions() -> dict[str, str]:
    import torch
    import transformers

    import sentvec

    return {"transformers": transformers.__version__, "pytorch": torch.__version__,
            "sentvec": sentvec.__version__}


def _source_model(encoder: Any) -> str:
    desc = encoder.config_dict()
    return str(desc.get("source_model") or desc.get("model") or encoder.name_or_path)


def _hub_name(source: str) -> str | None:
    from sentvec.encoders.models import canonical_alias, looks_like_path

    alias = canonical_alias(source)
    if alias is not None:
        return _ALIAS_HUB_NAMES.get(alias)
    return None if looks_like_path(source) else source


def _sts_markdown(sts: Any) -> str | None:
    if sts is None:
        return None
    if isinstance(sts, str):
        return sts.rstrip() + "\n"
    from sentvec.evaluation.results import STSResult, results_table_markdown

    rows = {"this model": sts} if isinstance(sts, STSResult) else dict(sts)
    for label, res in rows.items():
        if not isinstance(res, STSResult):
            raise TypeError(f"sts[{label!r}] must be an STSResult, got {type(res).__name__}")
    first = next(iter(rows.values()))
    text = results_table_markdown(rows)
    variant = first.metadata.get("text_variant")
    agg = first.aggregation
    return (text + f"\nSpearman correlation x 100 of cosine similarity; aggregation over "
            f"subsets: {agg}" + (f"; STS text: {variant}" if variant else "") + ".\n")


def _model_card(info: dict[str, Any], sts_md: str | None) -> str:
    hub = info["base_model"]
    front = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity",
             "tags:", "- sentence-transformers", "- feature-extraction",
             "- sentence-similarity", "- sentvec"]
    if info["whitening"]:
        front.append("- whitening")
    if hub:
        front.append(f"base_model: {hub}")
    front.append("---")
    layers = info["layers"]
    lines = [
        *front, "",
        f"# {info['title']}", "",
        "Sentence embeddings exported from a [sentvec](https://pypi.org/project/sentvec/) "
        "pipeline (unsupervised: no fine-tuning; WhiteningBERT, Huang et al., 2021).", "",
        "| | |", "|---|---|",
        f"| source model | `{info['source_model']}`" + (f" (`{hub}`)" if hub and hub !=
                                                          info['source_model'] else "") + " |",
        f"| architecture | {info['num_layers']} layers x {info['hidden_size']} |",
        f"| pooling | {info['pooling']}"
        + (" (mean over all real tokens, [CLS] and [SEP] included)"
           if info["pooling"] == "mean" else "") + " |",
        f"| layers | hidden states {layers['indices']} (0 = embedding output), "
        + ("averaged" if len(layers["indices"]) > 1 else "one layer")
        + f"; given as {layers['given']} |",
        f"| max sequence length | {info['max_seq_length']} tokens (longer inputs are truncated) |",
    ]
    w = info["whitening"]
    if w:
        lines += [
            f"| whitening | k = {w['n_components']} of {w['n_features']} components, fitted on "
            f"{w['corpus']} ({w['n_samples']} sentences) |",
            f"| output dimension | {w['n_components']} |",
        ]
    else:
        lines += ["| whitening | none |", f"| output dimension | {info['hidden_size']} |"]
    lines += ["", "## Modules", ""]
    for m in info["modules"]:
        lines.append(f"- `{m['path'] or '.'}`: `{m['type']}`")
    lines += ["", "Vectors are not L2-normalised (no `Normalize` module); compare them with "
              "cosine similarity."]
    if w:
        lines += [
            "", "The whitening `x -> (x - mu) W_k` (`W_k = U_k D_k^-1/2`, components largest "
            "variance first) is the Dense layer: weight `W_k^T`, bias `-mu W_k`, identity "
            "activation. Because the components are sorted, truncating the output "
            "(`SentenceTransformer(path, truncate_dim=k')`) equals the whitening with `k'` "
            "components fitted on the same corpus."]
    lines += ["", "## Usage", "", "```python", "from sentence_transformers import "
              "SentenceTransformer", "", "model = SentenceTransformer(\"PATH\")",
              "embeddings = model.encode([\"A sentence.\", \"Another one.\"])", "```"]
    if info["serving_compatible"]:
        lines += ["", "This directory uses only what text-embeddings-inference reads "
                  "(`1_Pooling/config.json`, `2_Dense` with identity activation, last layer): "
                  "`text-embeddings-inference --model-id PATH`. That server L2-normalises by "
                  "default (cosines unchanged) and may run in float16 on a GPU."]
    if sts_md:
        lines += ["", "## STS evaluation (computed with sentvec)", "", sts_md.rstrip()]
    return "\n".join(lines) + "\n"


def export_sentence_transformers(model: Any, path: str | os.PathLike[str], *,
                                 whitening: Any = None, whitening_corpus: str | None = None,
                                 serving_compatible: bool = False, sts: Any = None,
                                 title: str | None = None) -> Path:
    """Write a sentvec pipeline as a directory that ``SentenceTransformer(path)`` loads.

    Parameters
    ----------
    model : sentvec.Pipeline or sentvec.TransformerEncoder
        A transformer pipeline (encoder + optional whitening) or a bare encoder. Its pooling,
        layers and ``max_length`` are reproduced; a Sent2Vec model raises :class:`ExportError`.
    path : path-like
        Output directory: missing, empty, or an earlier export (which is replaced as a whole).
    whitening : fitted sentvec.Whitening, optional
        Whitening for a bare encoder (or a Pipeline without one), exported as a Dense layer.
    whitening_corpus : str, optional
        What the whitening was fitted on, for the model card (e.g. ``"corpus.txt"``).
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
        A Sent2Vec model (hashed n-grams have no sentence-transformers module); a model whose
        weights are not float32; mean pooling
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
    from sentvec._io import atomic_directory

    encoder, whitening = _split(model, whitening)
    needs_layers = _check_mapping(encoder, bool(serving_compatible))
    d, L = int(encoder.hidden_size), int(encoder.num_layers)
    idx = tuple(int(i) for i in encoder.layer_indices)
    modules: list[dict[str, Any]] = [
        {"idx": 0, "name": "0", "path": "", "type": ST_MODULE_TYPES["transformer"]}]
    if needs_layers:
        modules.append({"idx": 1, "name": "1", "path": "1_WeightedLayerPooling",
                        "type": ST_MODULE_TYPES["layers"]})
    n = len(modules)
    modules.append({"idx": n, "name": str(n), "path": f"{n}_Pooling",
                    "type": ST_MODULE_TYPES["pooling"]})
    if whitening is not None:
        n += 1
        modules.append({"idx": n, "name": str(n), "path": f"{n}_Dense",
                        "type": ST_MODULE_TYPES["dense"]})
    source = _source_model(encoder)
    w_info = None
    if whitening is not None:
        w_info = {"n_components": int(whitening.n_components_), "n_features": d,
                  "n_samples": int(getattr(whitening, "n_samples_seen_", 0) or 0),
                  "corpus": whitening_corpus or "an unnamed corpus"}
    info: dict[str, Any] = {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
        "source_model": source, "base_model": _hub_name(source),
        "pooling": encoder.pooling, "mean_mode": encoder.mean_mode,
        "layers": {"given": list(encoder.layers), "indices": list(idx)},
        "num_layers": L, "hidden_size": d, "max_seq_length": int(encoder.max_length),
        "whitening": w_info, "serving_compatible": bool(serving_compatible),
        "modules": modules, "versions": _versions(),
    }
    pool_name = {"mean": "AVG", "cls": "CLS", "max": "MAX"}[encoder.pooling]
    info["title"] = title or (
        f"{source}: {pool_name} " + "+".join(f"L{i}" for i in idx)
        + (f" + whitening (k={w_info['n_components']})" if w_info else ""))
    sts_md = _sts_markdown(sts)

    with atomic_directory(path, marker=EXPORT_MARKER, marker_format=EXPORT_FORMAT,
                          kind="a sentvec sentence-transformers export") as tmp:
        _save_transformer(encoder, tmp, hidden_states=needs_layers)
        if needs_layers:
            start = min(idx)
            weights = np.zeros(L + 1 - start, dtype=np.float32)
            weights[[i - start for i in idx]] = 1.0
            sub = tmp / modules[1]["path"]
            _write_json(sub / "config.json", {"word_embedding_dimension": d,
                                              "layer_start": start, "num_hidden_layers": L})
            _save_safetensors(sub / "model.safetensors", {"layer_weights": weights})
        pool = next(m for m in modules if m["type"] == ST_MODULE_TYPES["pooling"])
        _write_json(tmp / pool["path"] / "config.json", {
            "word_embedding_dimension": d,
            "pooling_mode_cls_token": encoder.pooling == "cls",
            "pooling_mode_mean_tokens": encoder.pooling == "mean",
            "pooling_mode_max_tokens": encoder.pooling == "max",
            "pooling_mode_mean_sqrt_len_tokens": False,
        })
        if whitening is not None:
            weight, bias = dense_whitening_parameters(whitening)
            sub = tmp / modules[-1]["path"]
            _write_json(sub / "config.json", {"in_features": d,
                                              "out_features": int(weight.shape[0]),
                                              "bias": True, "activation_function": _IDENTITY})
            _save_safetensors(sub / "model.safetensors",
                              {"linear.weight": weight, "linear.bias": bias})
        _write_json(tmp / "modules.json", modules)
        _write_json(tmp / "config_sentence_transformers.json", {
            "__version__": {k: v for k, v in info["versions"].items() if k != "sentvec"},
            "prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine",
        })
        from sentvec._io import atomic_write_text

        atomic_write_text(tmp / "README.md", _model_card(info, sts_md))
        _write_json(tmp / EXPORT_MARKER, info)
    return Path(path)
