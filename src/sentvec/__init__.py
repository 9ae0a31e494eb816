"""sentvec: unsupervised sentence embeddings (Sent2Vec, WhiteningBERT) and their evaluation.

Importing the package defines names only. Names backed by torch, numba or faiss are imported
lazily on first access, so ``import sentvec`` stays fast and side-effect free.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY: dict[str, str] = {
    # encoders
    "TransformerEncoder": "sentvec.encoders.transformer",
    "load_encoder": "sentvec.pipeline",
    "Pipeline": "sentvec.pipeline",
    # whitening
    "Whitening": "sentvec.whitening",
    "WhiteningStatistics": "sentvec.whitening",
    # STS evaluation
    "load_sts": "sentvec.evaluation.sts",
    "evaluate_sts": "sentvec.evaluation.sts",
    "STSTask": "sentvec.evaluation.sts",
    "STSResult": "sentvec.evaluation.results",
    "score_sts": "sentvec.evaluation.sts",
    "STSScorer": "sentvec.evaluation.sts",
    "unique_sentences": "sentvec.evaluation.sts",
    "results_table_markdown": "sentvec.evaluation.results",
    # transfer tasks
    "load_transfer": "sentvec.evaluation.transfer",
    "evaluate_transfer": "sentvec.evaluation.transfer",
    "TransferResult": "sentvec.evaluation.transfer",
    # Sent2Vec
    "Sent2Vec": "sentvec.sent2vec.model",
    "train_sent2vec": "sentvec.sent2vec.trainer",
    "Sent2VecTrainer": "sentvec.sent2vec.trainer",
    # search and large-file encoding
    "SemanticSearch": "sentvec.search",
    "encode_file": "sentvec.encode_files",
    "load_whitening": "sentvec.pipeline",
    # integrations (optional extras; imported only on access)
    "export_sentence_transformers": "sentvec.integrations.sentence_transformers",
    "MTEBEncoder": "sentvec.integrations.mteb",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'sentvec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # pragma: no cover
    from sentvec.encoders.transformer import TransformerEncoder
    from sentvec.whitening import Whitening
