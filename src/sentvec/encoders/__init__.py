"""Getting sentence vectors from text: encoders, pooling, loading and pipelines.

* ``base``: the :class:`Encoder` protocol every part of sentvec relies on, and the declared
  capability protocols (:class:`TokenCounting`, :class:`LayeredEncoder`, :class:`PreparedInput`,
  :class:`Persistable`, ...) asked with ``isinstance``;
* ``transformer`` / ``pooling`` / ``models``: WhiteningBERT's encoder over a Hugging Face model,
  its token pooling and layer averaging, and the model aliases (local weights only);
* ``onnx_backend``: :class:`OnnxForward`, the ONNX Runtime forward passes of
  ``TransformerEncoder(backend="onnx")`` (export, graph cache);
* ``formats``: :data:`FORMATS`, the one table of the on-disk formats sentvec reads (detection,
  loading, encoder class, ``encoder_type``);
* ``loading``: :func:`load_encoder`, the one place a ``--model`` argument becomes an encoder;
* ``pipeline``: :class:`Pipeline` (encoder + whitening) and :func:`load_whitening`;
* ``sif``: :class:`SIFEncoder` and :class:`USIFEncoder`, frequency-weighted averages of word
  vectors (Sent2Vec unigram rows or a transformer's input token embeddings);
* ``static`` / ``static_loaders``: :class:`StaticEncoder`, static embedding models (Model2Vec,
  sentence-transformers' ``StaticEmbedding``, WordLlama) and their loaders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentvec._lazy import attach

# public name -> module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "Encoder": "sentvec.encoders.base",
    "SelfDescribing": "sentvec.encoders.base",
    "DimensionStating": "sentvec.encoders.base",
    "TextVariantAware": "sentvec.encoders.base",
    "TokenCounting": "sentvec.encoders.base",
    "LayeredEncoder": "sentvec.encoders.base",
    "TokenEmbeddings": "sentvec.encoders.base",
    "DeviceEncoder": "sentvec.encoders.base",
    "PreparedInput": "sentvec.encoders.base",
    "Preprocessing": "sentvec.encoders.base",
    "YearPostprocessing": "sentvec.encoders.base",
    "PostProcessed": "sentvec.encoders.base",
    "Persistable": "sentvec.encoders.base",
    "PipelineComponent": "sentvec.encoders.base",
    "PIPELINE_FILE": "sentvec.encoders.base",
    "describe_encoder": "sentvec.encoders.base",
    "text_variant_of": "sentvec.encoders.base",
    "output_dimension": "sentvec.encoders.base",
    "check_whitening_fits": "sentvec.encoders.base",
    "DescribedEncoder": "sentvec.encoders.base",
    "TRANSFORMER_BACKENDS": "sentvec.encoders.base",
    "PRECISIONS": "sentvec.encoders.base",
    "OnnxForward": "sentvec.encoders.onnx_backend",
    "export_onnx": "sentvec.encoders.onnx_backend",
    "onnx_cache_key": "sentvec.encoders.onnx_backend",
    "ModelFormat": "sentvec.encoders.formats",
    "FORMATS": "sentvec.encoders.formats",
    "detect_format": "sentvec.encoders.formats",
    "format_named": "sentvec.encoders.formats",
    "by_encoder_type": "sentvec.encoders.formats",
    "component_format": "sentvec.encoders.formats",
    "load_encoder": "sentvec.encoders.loading",
    "describe_without_loading": "sentvec.encoders.loading",
    "model_kind": "sentvec.encoders.loading",
    "ModelKind": "sentvec.encoders.loading",
    "EncoderOptionsError": "sentvec.exceptions",
    "Pipeline": "sentvec.encoders.pipeline",
    "load_whitening": "sentvec.encoders.pipeline",
    "PIPELINE_FORMAT": "sentvec.encoders.pipeline",
    "PIPELINE_VERSION": "sentvec.encoders.pipeline",
    "ENCODER_LOADERS": "sentvec.encoders.pipeline",
    "TransformerEncoder": "sentvec.encoders.transformer",
    "bfloat16_is_fast": "sentvec.encoders.transformer",
    "resolve_precision": "sentvec.encoders.transformer",
    "SIFEncoder": "sentvec.encoders.sif",
    "StaticEncoder": "sentvec.encoders.static",
    "BigramStaticEncoder": "sentvec.encoders.static_bigrams",
    "USIFEncoder": "sentvec.encoders.sif",
    "TruncationWarning": "sentvec.exceptions",
    "DEFAULT_POOLING": "sentvec.encoders.transformer_files",
    "DEFAULT_LAYERS": "sentvec.encoders.transformer_files",
    "DEFAULT_BATCH_SIZE": "sentvec.encoders.transformer",
    "POOLING_MODES": "sentvec.encoders.pooling",
    "MEAN_MODES": "sentvec.encoders.pooling",
    "PAPER_MEAN_EPSILON": "sentvec.encoders.pooling",
    "mean_pool": "sentvec.encoders.pooling",
    "max_pool": "sentvec.encoders.pooling",
    "cls_pool": "sentvec.encoders.pooling",
    "pool": "sentvec.encoders.pooling",
    "normalize_layers": "sentvec.encoders.pooling",
    "average_layers": "sentvec.encoders.pooling",
    "pool_layers": "sentvec.encoders.pooling",
    "pool_all_layers": "sentvec.encoders.pooling",
    "pool_layers_mean_cls": "sentvec.encoders.pooling",
    "MEAN_CLS_POOLINGS": "sentvec.encoders.pooling",
    "MODEL_ALIASES": "sentvec.encoders.models",
    "resolve_model": "sentvec.encoders.models",
}

__all__, __getattr__, __dir__ = attach(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from sentvec.encoders.base import (
        PIPELINE_FILE,
        PRECISIONS,
        TRANSFORMER_BACKENDS,
        DescribedEncoder,
        DeviceEncoder,
        DimensionStating,
        Encoder,
        LayeredEncoder,
        Persistable,
        PipelineComponent,
        PostProcessed,
        PreparedInput,
        Preprocessing,
        SelfDescribing,
        TextVariantAware,
        TokenCounting,
        TokenEmbeddings,
        YearPostprocessing,
        check_whitening_fits,
        describe_encoder,
        output_dimension,
        text_variant_of,
    )  # noqa: F401
    from sentvec.encoders.formats import (  # noqa: F401
        FORMATS,
        ModelFormat,
        by_encoder_type,
        component_format,
        detect_format,
        format_named,
    )
    from sentvec.encoders.loading import (  # noqa: F401
        ModelKind,
        describe_without_loading,
        load_encoder,
        model_kind,
    )
    from sentvec.encoders.models import MODEL_ALIASES, resolve_model  # noqa: F401
    from sentvec.encoders.onnx_backend import OnnxForward, export_onnx, onnx_cache_key  # noqa: F401
    from sentvec.encoders.pipeline import (
        ENCODER_LOADERS,
        PIPELINE_FORMAT,
        PIPELINE_VERSION,
        Pipeline,
        load_whitening,
    )  # noqa: F401
    from sentvec.encoders.pooling import (
        MEAN_CLS_POOLINGS,
        MEAN_MODES,
        PAPER_MEAN_EPSILON,
        POOLING_MODES,
        average_layers,
        cls_pool,
        max_pool,
        mean_pool,
        normalize_layers,
        pool,
        pool_all_layers,
        pool_layers,
        pool_layers_mean_cls,
    )  # noqa: F401
    from sentvec.encoders.sif import SIFEncoder, USIFEncoder  # noqa: F401
    from sentvec.encoders.static import StaticEncoder  # noqa: F401
    from sentvec.encoders.static_bigrams import BigramStaticEncoder  # noqa: F401
    from sentvec.encoders.transformer import (
        DEFAULT_BATCH_SIZE,
        TransformerEncoder,
        bfloat16_is_fast,
        resolve_precision,
    )  # noqa: F401
    from sentvec.encoders.transformer_files import DEFAULT_LAYERS, DEFAULT_POOLING  # noqa: F401
    from sentvec.exceptions import EncoderOptionsError, TruncationWarning  # noqa: F401
