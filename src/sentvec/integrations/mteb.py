"""Run any sentvec encoder or pipeline in MTEB (mteb 2.x encoder protocol; 1.x ``encode``).

:class:`MTEBEncoder` wraps anything with ``encode(sentences) -> ndarray (n, d)`` (a
``TransformerEncoder``, a ``Sent2Vec`` model, a ``Pipeline`` with whitening, ...) so that

* mteb 2.x ``mteb.evaluate(MTEBEncoder(pipeline), tasks)`` runs it: ``encode`` receives a
  ``torch.utils.data.DataLoader`` of batches (dicts whose ``"text"`` entry is a list of str)
  plus ``task_metadata``, ``hf_split``, ``hf_subset`` and ``prompt_type``; the model metadata is
  :attr:`MTEBEncoder.mteb_model_meta` (a ``mteb.ModelMeta``, cosine similarity);
* mteb 1.x ``MTEB(tasks=...).run(MTEBEncoder(pipeline))`` runs it: ``encode(sentences,
  task_name=..., prompt_type=..., **kwargs)`` with a list of str.

All texts of one ``encode`` call go to the sentvec encoder at once (it removes duplicates and
sorts by length itself). sentvec encoders take no instructions, so prompts are ignored. This module
needs ``mteb`` only for :attr:`MTEBEncoder.mteb_model_meta`; ``import sentvec`` never imports it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from sentvec._extras import require_extra

__all__ = ["MTEBEncoder", "mteb_model_meta"]

_NAME_OK = re.compile(r"[^A-Za-z0-9._+-]+")


def _default_name(encoder: Any) -> str:
    """``"sentvec/<model>-<pooling>-<layers>[-whiten<k>]"`` from the encoder's description."""
    from sentvec.encoders.base import describe_encoder

    desc = describe_encoder(encoder)
    model = str(desc.get("source_model") or desc.get("model") or desc.get("encoder", "encoder"))
    parts = [model.rstrip("/").split("/")[-1]]
    if desc.get("pooling"):
        parts.append(str(desc["pooling"]))
    idx = desc.get("layer_indices")
    if idx:
        parts.append("+".join(f"L{i}" for i in idx))
    w = desc.get("pipeline_whitening")
    if w:
        parts.append(f"whiten{w.get('n_components')}")
    return "sentvec/" + _NAME_OK.sub("_", "-".join(parts))


def _embed_dim(encoder: Any) -> int | None:
    from sentvec.encoders.base import PostProcessed, output_dimension

    if not isinstance(encoder, PostProcessed):
        return output_dimension(encoder)
    w = encoder.whitening
    if w is not None and getattr(w, "n_components_", None) is not None:
        return int(w.n_components_)
    return output_dimension(encoder.encoder)


def mteb_model_meta(
    encoder: Any, *, name: str | None = None, revision: str | None = None, **overrides: Any
) -> Any:
    """An ``mteb.ModelMeta`` describing a sentvec encoder (mteb 2.x).

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode``.
    name : str, optional
        ``"organization/model_name"`` as MTEB requires; default ``"sentvec/<model>-<pooling>-
        <layers>[-whiten<k>]"``. Results are stored under this name.
    revision : str, optional
        Default: the sentvec version.
    **overrides
        Other ``ModelMeta`` fields (``languages``, ``license``, ``reference``, ...).

    Returns
    -------
    mteb.ModelMeta
        ``similarity_fn_name="cosine"``, ``framework=["PyTorch"]`` (``["NumPy"]`` for an encoder
        without torch), ``embed_dim`` the output width when the encoder states it.

    Raises
    ------
    sentvec._extras.MissingExtraError
        If mteb is not installed (an ``ImportError`` naming ``pip install 'sentvec[mteb]'``).
    """
    require_extra("mteb", "the MTEB adapter")
    from mteb.models import ModelMeta

    import sentvec
    from sentvec.encoders.base import DeviceEncoder, PostProcessed, TokenCounting

    inner = encoder.encoder if isinstance(encoder, PostProcessed) else encoder
    uses_torch = isinstance(inner, DeviceEncoder)
    max_tokens = inner.max_length if isinstance(inner, TokenCounting) else None
    fields: dict[str, Any] = {
        "loader": None,
        "name": name or _default_name(encoder),
        "revision": revision or sentvec.__version__,
        "release_date": None,
        "languages": None,
        "n_parameters": None,
        "memory_usage_mb": None,
        "max_tokens": float(max_tokens) if isinstance(max_tokens, int) else None,
        "embed_dim": _embed_dim(encoder),
        "license": None,
        "open_weights": True,
        "public_training_code": None,
        "public_training_data": None,
        "framework": ["PyTorch"] if uses_torch else ["NumPy"],
        "similarity_fn_name": "cosine",
        "use_instructions": False,
        "training_datasets": None,
    }
    fields.update(overrides)
    return ModelMeta(**fields)


class MTEBEncoder:
    """MTEB model wrapper around a sentvec encoder or pipeline.

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode(sentences, *, batch_size=..., show_progress_bar=...)``: a
        :class:`sentvec.TransformerEncoder`, :class:`sentvec.Sent2Vec`,
        :class:`sentvec.Pipeline` or any sentvec-style encoder.
    name, revision : str, optional
        For :attr:`mteb_model_meta` (see :func:`mteb_model_meta`).
    batch_size : int, optional
        Overrides the batch size MTEB passes (MTEB's default is 32).
    normalize : bool, default False
        L2-normalise the vectors (cosine scores are unchanged; dot-product ones are not).
    meta_overrides : mapping, optional
        Extra ``ModelMeta`` fields.

    Raises
    ------
    TypeError
        ``encoder`` has no ``encode`` method.

    Examples
    --------
    >>> import mteb, sentvec                                          # doctest: +SKIP
    >>> from sentvec.integrations.mteb import MTEBEncoder             # doctest: +SKIP
    >>> model = MTEBEncoder(sentvec.load_encoder("minilm"))          # doctest: +SKIP
    >>> mteb.evaluate(model, mteb.get_tasks(["STSBenchmark"]))       # doctest: +SKIP
    """

    def __init__(
        self,
        encoder: Any,
        *,
        name: str | None = None,
        revision: str | None = None,
        batch_size: int | None = None,
        normalize: bool = False,
        meta_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        from sentvec.encoders.base import Encoder

        if not isinstance(encoder, Encoder):
            raise TypeError(f"encoder must have an encode method, got {type(encoder).__name__}")
        if batch_size is not None:
            from sentvec._validation import check_positive_int

            batch_size = check_positive_int("batch_size", batch_size)
        self.model = encoder
        self.batch_size = batch_size
        self.normalize = bool(normalize)
        self._name, self._revision = name, revision
        self._meta_overrides = dict(meta_overrides or {})
        self._meta: Any = None

    @property
    def mteb_model_meta(self) -> Any:
        """The ``mteb.ModelMeta`` of this model (built on first access; needs mteb 2.x)."""
        if self._meta is None:
            self._meta = mteb_model_meta(
                self.model, name=self._name, revision=self._revision, **self._meta_overrides
            )
        return self._meta

    @staticmethod
    def _texts(inputs: Any) -> list[str]:
        """The texts of a DataLoader of ``{"text": [...]}`` batches, or of a list of str."""
        if isinstance(inputs, str):
            return [inputs]
        if isinstance(inputs, Mapping):
            return list(inputs["text"])
        out: list[str] = []
        for item in inputs:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, Mapping) and "text" in item:
                batch = item["text"]
                out.extend([batch] if isinstance(batch, str) else batch)
            else:
                raise TypeError(
                    "inputs must be a list of str or a DataLoader of batches holding a 'text' "
                    f"list (text tasks only); got an item of type {type(item).__name__}"
                )
        return out

    def encode(
        self,
        inputs: Iterable[Any],
        *,
        task_metadata: Any = None,
        hf_split: str | None = None,
        hf_subset: str | None = None,
        prompt_type: Any = None,
        task_name: str | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Encode MTEB inputs; both the 2.x and the 1.x call signatures.

        Parameters
        ----------
        inputs : DataLoader of batches, or list of str
            mteb 2.x: a ``DataLoader`` whose batches are dicts with a ``"text"`` list;
            mteb 1.x: the sentences.
        task_metadata, hf_split, hf_subset, prompt_type, task_name
            Accepted and ignored (sentvec encoders use no prompts).
        **kwargs
            ``batch_size`` and ``show_progress_bar`` are passed on; others are ignored.

        Returns
        -------
        ndarray of shape (n, d), float32

        Raises
        ------
        TypeError
            Inputs that are not text (image or audio batches).
        """
        texts = self._texts(inputs)
        bs = self.batch_size or kwargs.get("batch_size")
        enc_kwargs: dict[str, Any] = {"batch_size": None if bs is None else int(bs)}
        if "show_progress_bar" in kwargs:
            enc_kwargs["show_progress_bar"] = kwargs["show_progress_bar"]
        X: np.ndarray = np.asarray(self.model.encode(texts, **enc_kwargs), dtype=np.float32)
        if X.ndim != 2 or X.shape[0] != len(texts):
            raise ValueError(
                f"the encoder returned shape {X.shape} for {len(texts)} texts; expected (n, d)"
            )
        if self.normalize and len(X):
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            X = X / np.where(norms > 0, norms, 1.0)
        return X

    # mteb 2.x calls these for the model's own similarity; cosine, as sentvec scores STS
    @staticmethod
    def _as_2d(a: Any) -> np.ndarray:
        arr = np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a, dtype=np.float64)
        return arr[None, :] if arr.ndim == 1 else arr

    @classmethod
    def _unit(cls, a: Any) -> np.ndarray:
        arr = cls._as_2d(a)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms > 0, norms, 1.0)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """Cosine similarity matrix, shape (n1, n2), float64 (zero vectors give 0)."""
        return self._unit(embeddings1) @ self._unit(embeddings2).T

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """Cosine of each pair ``(embeddings1[i], embeddings2[i])``, shape (n,), float64."""
        return np.einsum("ij,ij->i", self._unit(embeddings1), self._unit(embeddings2))

    def __repr__(self) -> str:
        return f"MTEBEncoder({self.model!r})"
