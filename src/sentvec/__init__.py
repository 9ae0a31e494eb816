"""sentvec: unsupervised sentence embeddings (Sent2Vec, WhiteningBERT) and their evaluation.

Importing the package defines names only. Names backed by torch, numba or faiss are imported
lazily on first access, so ``import sentvec`` stays fast and side-effect free. Where each thing
lives: ``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sentvec._lazy import attach

__version__ = "0.3.0.dev0"

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "Encoder": "sentvec.encoders.base",
    "TransformerEncoder": "sentvec.encoders.transformer",
    "load_encoder": "sentvec.encoders.loading",
    "Pipeline": "sentvec.encoders.pipeline",
    "load_whitening": "sentvec.encoders.pipeline",
    "Whitening": "sentvec.whitening.estimator",
    "WhiteningStatistics": "sentvec.whitening.statistics",
    "AllButTheTop": "sentvec.whitening.component_removal",
    "CommonComponentRemoval": "sentvec.whitening.component_removal",
    "SIFEncoder": "sentvec.encoders.sif",
    "USIFEncoder": "sentvec.encoders.sif",
    "StaticEncoder": "sentvec.encoders.static",
    "load_sts": "sentvec.evaluation.sts_data",
    "STSTask": "sentvec.evaluation.sts_data",
    "unique_sentences": "sentvec.evaluation.sts_data",
    "evaluate_sts": "sentvec.evaluation.sts",
    "evaluate_sts_model": "sentvec.evaluation.sts_model",
    "score_sts": "sentvec.evaluation.sts",
    "STSScorer": "sentvec.evaluation.sts",
    "STSResult": "sentvec.evaluation.results",
    "results_table_markdown": "sentvec.evaluation.results",
    "analyze_layers": "sentvec.evaluation.layers",
    "load_transfer": "sentvec.evaluation.transfer_data",
    "evaluate_transfer": "sentvec.evaluation.transfer",
    "TransferResult": "sentvec.evaluation.transfer",
    "evaluate_rte": "sentvec.evaluation.rte",
    "RTEResult": "sentvec.evaluation.rte",
    "Sent2Vec": "sentvec.sent2vec.model",
    "train_sent2vec": "sentvec.sent2vec.trainer",
    "Sent2VecTrainer": "sentvec.sent2vec.trainer",
    "SemanticSearch": "sentvec.search",
    "encode_file": "sentvec.encode_files",
    "encode_file_distributed": "sentvec.cluster",
    "distill": "sentvec.distill.run",
    "DistillConfig": "sentvec.distill.config",
    "train_static": "sentvec.static_training.api",
    "featurize_corpus": "sentvec.static_training.featurize",
    # integrations (optional extras; imported only on access)
    "export_sentence_transformers": "sentvec.integrations.sentence_transformers",
    "MTEBEncoder": "sentvec.integrations.mteb",
}

__all__, _lazy_getattr, __dir__ = attach(__name__, _LAZY)
__all__ += ["__version__"]


def __getattr__(name: str) -> Any:
    """A public name, imported on first access (:func:`sentvec._lazy.attach`)."""
    if name == "distill":
        # the name of the function and of its subpackage: always the subpackage, which calls
        # as the function, so that it is one object whichever was imported first
        import sentvec.distill as distill_package

        return distill_package
    return _lazy_getattr(name)


if TYPE_CHECKING:  # pragma: no cover - the same names, for IDEs and type checkers
    from sentvec.cluster import encode_file_distributed  # noqa: F401
    from sentvec.distill.config import DistillConfig  # noqa: F401
    from sentvec.distill.run import distill  # noqa: F401
    from sentvec.encode_files import encode_file  # noqa: F401
    from sentvec.encoders.base import Encoder  # noqa: F401
    from sentvec.encoders.loading import load_encoder  # noqa: F401
    from sentvec.encoders.pipeline import Pipeline, load_whitening  # noqa: F401
    from sentvec.encoders.sif import SIFEncoder, USIFEncoder  # noqa: F401
    from sentvec.encoders.static import StaticEncoder  # noqa: F401
    from sentvec.encoders.transformer import TransformerEncoder  # noqa: F401
    from sentvec.evaluation.layers import analyze_layers  # noqa: F401
    from sentvec.evaluation.results import STSResult, results_table_markdown  # noqa: F401
    from sentvec.evaluation.rte import RTEResult, evaluate_rte  # noqa: F401
    from sentvec.evaluation.sts import STSScorer, evaluate_sts, score_sts  # noqa: F401
    from sentvec.evaluation.sts_data import STSTask, load_sts, unique_sentences  # noqa: F401
    from sentvec.evaluation.sts_model import evaluate_sts_model  # noqa: F401
    from sentvec.evaluation.transfer import TransferResult, evaluate_transfer  # noqa: F401
    from sentvec.evaluation.transfer_data import load_transfer  # noqa: F401
    from sentvec.integrations.mteb import MTEBEncoder  # noqa: F401
    from sentvec.integrations.sentence_transformers import export_sentence_transformers  # noqa: F401
    from sentvec.search import SemanticSearch  # noqa: F401
    from sentvec.sent2vec.model import Sent2Vec  # noqa: F401
    from sentvec.sent2vec.trainer import Sent2VecTrainer, train_sent2vec  # noqa: F401
    from sentvec.static_training.api import train_static  # noqa: F401
    from sentvec.static_training.featurize import featurize_corpus  # noqa: F401
    from sentvec.whitening.component_removal import AllButTheTop, CommonComponentRemoval  # noqa: F401
    from sentvec.whitening.estimator import Whitening  # noqa: F401
    from sentvec.whitening.statistics import WhiteningStatistics  # noqa: F401
