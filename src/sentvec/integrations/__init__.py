"""Bridges to other tools: sentence-transformers export and an MTEB adapter.

Nothing here is imported by ``import sentvec``; each module needs its optional dependency only
where it uses it (``pip install "sentvec[st]"`` to load exports in sentence-transformers,
``"sentvec[mteb]"`` for MTEB). The names below are loaded on first access.
"""

from __future__ import annotations

from sentvec._lazy import attach

_LAZY: dict[str, str] = {
    "export_sentence_transformers": "sentvec.integrations.sentence_transformers",
    "dense_whitening_parameters": "sentvec.integrations.sentence_transformers",
    "affine_parameters": "sentvec.integrations.sentence_transformers",
    "ExportError": "sentvec.exceptions",
    "check_exportable": "sentvec.integrations.sentence_transformers",
    "export_model2vec": "sentvec.integrations.model2vec",
    "sent2vec_static_encoder": "sentvec.integrations.model2vec",
    "MTEBEncoder": "sentvec.integrations.mteb",
    "mteb_model_meta": "sentvec.integrations.mteb",
}

__all__, __getattr__, __dir__ = attach(__name__, _LAZY)
