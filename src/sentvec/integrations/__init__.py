"""Bridges to other tools: sentence-transformers export and an MTEB adapter.

Nothing here is imported by ``import sentvec``; each module needs its optional dependency only
where it uses it (``pip install "sentvec[st]"`` to load exports in sentence-transformers,
``"sentvec[mteb]"`` for MTEB). The names below are loaded on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "export_sentence_transformers": "sentvec.integrations.sentence_transformers",
    "dense_whitening_parameters": "sentvec.integrations.sentence_transformers",
    "ExportError": "sentvec.integrations.sentence_transformers",
    "check_exportable": "sentvec.integrations.sentence_transformers",
    "MTEBEncoder": "sentvec.integrations.mteb",
    "mteb_model_meta": "sentvec.integrations.mteb",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'sentvec.integrations' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
