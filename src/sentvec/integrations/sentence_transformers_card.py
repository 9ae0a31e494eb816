"""The model card (``README.md``) of a sentence-transformers export: front matter the Hub and
MTEB read (tags, base model, licence, ``model-index`` of the STS results), the configuration
table, the post-processing layout, usage and the STS table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: hub names of sentvec's model aliases, for the model card's ``base_model``
_ALIAS_HUB_NAMES = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2",
    "mpnet": "sentence-transformers/all-mpnet-base-v2",
}


def source_card(source: Path | None) -> dict[str, Any]:
    """``license`` and ``language`` of the source model's card (its README front matter)."""
    if source is None or not (source / "README.md").is_file():
        return {}
    import yaml

    text = (source / "README.md").read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return {}
    try:
        meta = yaml.safe_load(text.split("---", 2)[1])
    except (yaml.YAMLError, IndexError):
        return {}
    if not isinstance(meta, dict):
        return {}
    return {k: meta[k] for k in ("license", "language") if isinstance(meta.get(k), (str, list))}


def _model_index(title: str, sts: Any) -> list[str]:
    """``model-index`` front-matter lines (the Hub's and MTEB's evaluation results) for the STS
    results ``sts`` computed; none for a Markdown string or no results."""
    from sentvec.evaluation.results import STSResult

    res = sts if isinstance(sts, STSResult) else None
    if isinstance(sts, Mapping) and len(sts) == 1:
        res = next(iter(sts.values()))
    if not isinstance(res, STSResult):
        return []
    lines = ["model-index:", f"- name: {json.dumps(title)}", "  results:"]
    for task, score in res.task_scores.items():
        lines += [
            "  - task:",
            "      type: STS",
            "    dataset:",
            f"      name: {task}",
            f"      type: {task.lower()}",
            "      split: test",
            "    metrics:",
            "    - type: cos_sim_spearman",
            f"      value: {float(score):.2f}",
            f"      name: Spearman (cosine) x 100, {res.aggregation} over subsets (sentvec)",
        ]
    return lines


def package_versions() -> dict[str, str]:
    """The versions of the packages an exported directory was written with (installed
    distributions' metadata: no torch import)."""
    from importlib.metadata import version

    import sentvec

    return {
        "transformers": version("transformers"),
        "pytorch": version("torch"),
        "sentvec": sentvec.__version__,
    }


def hub_name(source: str) -> str | None:
    from sentvec.encoders.models import canonical_alias, looks_like_path

    alias = canonical_alias(source)
    if alias is not None:
        return _ALIAS_HUB_NAMES.get(alias)
    return None if looks_like_path(source) else source


def sts_markdown(sts: Any) -> str | None:
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
    return (
        text + f"\nSpearman correlation x 100 of cosine similarity; aggregation over "
        f"subsets: {agg}" + (f"; STS text: {variant}" if variant else "") + ".\n"
    )


def _front_matter(info: dict[str, Any], sts: Any) -> list[str]:
    """The YAML front matter: tags, base model, licence, language, ``model-index``."""
    hub = info["base_model"]
    front = [
        "---",
        "library_name: sentence-transformers",
        "pipeline_tag: sentence-similarity",
        "tags:",
        "- sentence-transformers",
        "- feature-extraction",
        "- sentence-similarity",
        "- sentvec",
    ]
    if info["post_processing"]:
        front.append("- " + info["post_processing"]["type"])
    if hub:
        front.append(f"base_model: {hub}")
    for key in ("license", "language"):
        value = info.get(key)
        if isinstance(value, str):
            front.append(f"{key}: {value}")
        elif isinstance(value, list) and value:
            front += [f"{key}:"] + [f"- {v}" for v in value]
    front += _model_index(info["title"], sts)
    front.append("---")
    return front


def _configuration_table(info: dict[str, Any]) -> list[str]:
    """The heading and the table of the exported configuration."""
    hub = info["base_model"]
    layers = info["layers"]
    lines = [
        "",
        f"# {info['title']}",
        "",
        "Sentence embeddings exported from a [sentvec](https://pypi.org/project/sentvec/) "
        "pipeline (unsupervised: no fine-tuning; WhiteningBERT, Huang et al., 2021).",
        "",
        "| | |",
        "|---|---|",
        f"| source model | `{info['source_model']}`"
        + (f" (`{hub}`)" if hub and hub != info["source_model"] else "")
        + " |",
        f"| architecture | {info['num_layers']} layers x {info['hidden_size']} |",
        f"| pooling | {info['pooling']}"
        + (
            " (mean over all real tokens, [CLS] and [SEP] included)"
            if info["pooling"] == "mean"
            else ""
        )
        + " |",
        f"| layers | hidden states {layers['indices']} (0 = embedding output), "
        + ("averaged" if len(layers["indices"]) > 1 else "one layer")
        + f"; given as {layers['given']} |",
        f"| max sequence length | {info['max_seq_length']} tokens (longer inputs are truncated) |",
    ]
    pp = info["post_processing"]
    if pp:
        what = {
            "whitening": f"whitening, k = {pp['n_components']} of {pp['n_features']} components",
            "all-but-the-top": f"all-but-the-top, the top D = {pp['n_components']} "
            "principal directions removed",
            "common-component-removal": f"common-component removal of "
            f"{pp['n_components']} component(s)",
        }[pp["type"]]
        lines += [
            f"| post-processing | {what}, fitted on {pp['corpus']} ({pp['n_samples']} sentences) |",
            f"| output dimension | {pp['output_dimension']} |",
        ]
    else:
        lines += ["| post-processing | none |", f"| output dimension | {info['hidden_size']} |"]
    return lines


def _post_processing_notes(pp: dict[str, Any]) -> list[str]:
    """How the post-processing is written as Dense layers (or folded into a LayerNorm)."""
    lines: list[str] = []
    formula = {
        "whitening": "`x -> (x - mu) W_k` (`W_k = U_k D_k^-1/2`, components largest "
        "variance first)",
        "all-but-the-top": "`x -> (x - mu) (I - U^T U)` (`U`: the removed "
        "principal directions, rows)",
        "common-component-removal": "`x -> x (I - U^T diag(lambda) U)`",
    }[pp["type"]]
    layout = {
        "two": "two Dense layers: the centring (weight `I`, bias `-mu`), then weight "
        "`A^T` without bias",
        "folded-norm": "the mean subtracted in the bias of the final LayerNorm "
        f"(`{pp['mean_folded_into']}`; token embeddings are therefore "
        "the source model's minus `mu`), then one Dense layer, weight "
        "`A^T` without bias",
        "one": "one Dense layer, weight `A^T`, bias `-mu A` (float32 cancellation: "
        "expect about 1e-4 from the sentvec pipeline)",
        "map": "one Dense layer, weight `A^T` without bias",
    }[pp["layout"]]
    lines += [
        "",
        f"The post-processing {formula} is the affine map `(x - mu) A`, written "
        f"as {layout}; identity activations.",
    ]
    if pp["type"] == "whitening" and pp["solver"] == "eigh":
        lines += [
            "Because the components are sorted, truncating the output "
            "(`SentenceTransformer(path, truncate_dim=k')`) equals the whitening "
            "with `k'` components fitted on the same corpus."
        ]
    return lines


def _usage_notes(info: dict[str, Any]) -> list[str]:
    """How to load the directory, and whether text-embeddings-inference serves it."""
    lines: list[str] = []
    lines += [
        "",
        "## Usage",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "",
        'model = SentenceTransformer("PATH")',
        'embeddings = model.encode(["A sentence.", "Another one."])',
        "```",
    ]
    if info["serving_compatible"]:
        lines += [
            "",
            "This directory uses only what text-embeddings-inference reads "
            "(`1_Pooling/config.json`, at most one `2_Dense` with identity activation, last "
            "layer): "
            "`text-embeddings-inference --model-id PATH`. That server L2-normalises by "
            "default (cosines unchanged) and may run in float16 on a GPU. TEI 1.8.1-1.8.2 "
            "ignore a Dense module of a local directory: use 1.8.3 or later.",
        ]
    else:
        lines += [
            "",
            "**Not for text-embeddings-inference (TEI).** TEI does not run this layout: it "
            "skips the layer-combination module (with a log warning), finds no `1_Pooling`, "
            "pools with CLS and applies no Dense, so it serves other vectors without an "
            "error. Export with `--serving-compatible` for TEI. sentence-transformers "
            "(3.x, safetensors) and infinity-emb (torch engine) load this directory "
            "correctly; see docs/guides/export.md of sentvec.",
        ]
    return lines


def model_card(info: dict[str, Any], sts_md: str | None, sts: Any = None) -> str:
    """The ``README.md`` of an export described by ``info`` (its ``sentvec_export.json``),
    with the STS table ``sts_md`` and the ``model-index`` of the results ``sts``."""
    pp = info["post_processing"]
    lines = [*_front_matter(info, sts), *_configuration_table(info)]
    lines += ["", "## Modules", ""]
    for m in info["modules"]:
        lines.append(f"- `{m['path'] or '.'}`: `{m['type']}`")
    lines += [
        "",
        "Vectors are not L2-normalised (no `Normalize` module); compare them with "
        "cosine similarity.",
    ]
    if pp:
        lines += _post_processing_notes(pp)
    lines += _usage_notes(info)
    if sts_md:
        lines += ["", "## STS evaluation (computed with sentvec)", "", sts_md.rstrip()]
    return "\n".join(lines) + "\n"
