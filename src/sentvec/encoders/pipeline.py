"""Whole pipelines: an encoder followed by an optional fitted post-processor (whitening,
all-but-the-top, common-component removal), saved as one directory.

:class:`Pipeline` saves each component through its own ``save()`` and names it by its
``encoder_type`` (``pipeline.json``), and loads it back through the loader of that type, so a
Sent2Vec pipeline never imports torch. Both go through the format table
(:mod:`sentvec.encoders.formats`). :func:`load_whitening` gets a fitted whitening from a
saved Whitening or pipeline directory. Turning a ``--model`` argument into an encoder is
:func:`sentvec.encoders.loading.load_encoder`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._readers import read_json_object
from sentvec._validation import check_sentences
from sentvec.encoders.base import (
    PIPELINE_FILE,
    Encoder,
    PipelineComponent,
    check_whitening_fits,
    describe_encoder,
    text_variant_of,
)
from sentvec.encoders.formats import (
    FORMATS,
    by_encoder_type,
    component_format,
    detect_format,
    format_named,
)

__all__ = ["Pipeline", "load_whitening", "PIPELINE_FORMAT", "PIPELINE_VERSION", "ENCODER_LOADERS"]

PIPELINE_FORMAT = "sentvec-pipeline"
PIPELINE_VERSION = 1


#: ``encoder_type`` of a saved component -> its loader (a directory written by its ``save()``).
#: Deprecated: a view of :data:`sentvec.encoders.formats.FORMATS`; use
#: :func:`sentvec.encoders.formats.by_encoder_type`.
ENCODER_LOADERS: dict[str, Callable[..., Encoder]] = {
    str(f.encoder_type): f.load for f in FORMATS if f.saved_by_encoder
}


def _component_dir(root: Path, name: Any, cfg_path: Path) -> Path:
    """``root / name`` for a component named in ``pipeline.json``: a plain sub-directory name
    (a pipeline never reads files outside its own directory)."""
    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        raise ValueError(
            f"{str(cfg_path)!r}: component path {name!r} is not a sub-directory "
            "name of the pipeline"
        )
    return root / name


def load_whitening(whitening: Any) -> Any:
    """A fitted post-processor from itself, a saved post-processor directory or a pipeline's.

    Parameters
    ----------
    whitening : Whitening, path-like or None
        A fitted post-processor (anything with ``transform``), or a directory written by
        :meth:`sentvec.Whitening.save`, :meth:`sentvec.AllButTheTop.save` or
        ``CommonComponentRemoval.save`` (see
        :func:`sentvec.whitening.load_postprocessor`), or by :meth:`Pipeline.save` (its
        post-processor is used).

    Returns
    -------
    fitted Whitening or None

    Raises
    ------
    FileNotFoundError
        The directory holds no saved post-processor and no ``pipeline.json``.
    ValueError
        A pipeline without whitening, or corrupt files.
    TypeError
        Anything else.
    """
    if whitening is None or hasattr(whitening, "transform"):
        return whitening
    if isinstance(whitening, (str, os.PathLike)):
        from sentvec.whitening import load_postprocessor

        if format_named("pipeline").matches(whitening):  # a saved pipeline: use its whitening
            w = Pipeline.load(whitening).whitening
            if w is None:
                raise ValueError(f"the pipeline at {str(whitening)!r} has no whitening")
            return w
        return load_postprocessor(whitening)
    raise TypeError(
        f"whitening must be a fitted Whitening, a path to a saved Whitening or "
        f"pipeline, or None; got {type(whitening).__name__}"
    )


class Pipeline:
    """An encoder followed by an optional fitted post-processor (:class:`sentvec.Whitening`,
    :class:`sentvec.AllButTheTop`, ``CommonComponentRemoval``).

    ``encode`` returns ``whitening.transform(encoder.encode(sentences))``, then optionally
    L2-normalises. A row the encoder returns as exactly zero (an empty or out-of-vocabulary-only
    sentence, for Sent2Vec) carries no information and stays exactly zero: it is not whitened
    (see :func:`sentvec.whitening.whiten_keeping_zero_rows`), and their count is reported in a
    UserWarning. Saved
    as a directory: ``pipeline.json`` (format, version, component types), ``encoder/`` (the
    encoder's own format) and ``whitening/``; no pickle anywhere.

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode`` works in memory; saving needs an encoder with ``save(path)``
        and an ``encoder_type`` of :func:`sentvec.encoders.formats.by_encoder_type`
        (``TransformerEncoder``, ``Sent2Vec``, ``StaticEncoder``, ``BigramStaticEncoder``,
        ``SIFEncoder``, ``USIFEncoder``).
    whitening : fitted post-processor, optional
        A fitted transform (Whitening, AllButTheTop, CommonComponentRemoval, or anything with
        ``transform`` in memory) whose ``n_features_in_`` equals the encoder's dimension. Its
        type is recorded in ``pipeline.json`` (``whitening.type``, see
        :data:`sentvec.whitening.POSTPROCESSOR_TYPES`).

    Raises
    ------
    TypeError
        ``encoder`` has no ``encode`` method.
    ValueError
        The whitening was fitted on vectors of another width than the encoder gives (checked
        when the encoder states its width).
    sklearn.exceptions.NotFittedError
        The whitening is not fitted.
    """

    def __init__(self, encoder: Encoder, whitening: Any = None) -> None:
        if not isinstance(encoder, Encoder):
            raise TypeError(f"encoder must have an encode method, got {type(encoder).__name__}")
        if whitening is not None:
            from sklearn.utils.validation import check_is_fitted

            check_is_fitted(whitening)
            check_whitening_fits(encoder, whitening, what="the pipeline's whitening")
        self.encoder = encoder
        self.whitening = whitening
        #: Directory this pipeline was loaded from (None when built in memory).
        self.path: str | None = None

    @property
    def preferred_text_variant(self) -> str:
        return text_variant_of(self.encoder)

    def config_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (encoder description + whitening summary)."""
        info = describe_encoder(self.encoder)
        if self.path is not None:
            info["pipeline"] = self.path
        if self.whitening is not None:
            info["pipeline_whitening"] = {
                "type": type(self.whitening).__name__,
                "n_components": int(self.whitening.n_components_),
                "n_features_in": getattr(self.whitening, "n_features_in_", None),
                "n_samples_seen": int(getattr(self.whitening, "n_samples_seen_", 0) or 0),
            }
        return info

    def encode(
        self,
        sentences: Any,
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
    ) -> np.ndarray:
        """Encode then whiten; rows the encoder returns as all-zero stay all-zero.

        Returns
        -------
        ndarray of shape (n, k), float32
            ``(k,)`` for a single string; ``(0, k)`` for an empty list. ``k`` is the whitening's
            number of kept components (the encoder's dimension when no whitening is set).

        Warns
        -----
        UserWarning
            With a whitening, when some encoder vectors are all-zero (their count; they are left
            zero instead of being whitened).
        """
        items, single = check_sentences(sentences)
        X: np.ndarray = np.asarray(
            self.encoder.encode(items, batch_size=batch_size, show_progress_bar=show_progress_bar),
            dtype=np.float32,
        )
        if self.whitening is not None:
            if len(X):
                from sentvec.whitening import whiten_keeping_zero_rows

                X, n_zero = whiten_keeping_zero_rows(self.whitening, X)
                if n_zero:
                    warnings.warn(
                        f"{n_zero} of {len(X)} encoder vectors are all-zero "
                        "(empty or out-of-vocabulary sentences?); they are left zero, "
                        "not whitened",
                        UserWarning,
                        stacklevel=2,
                    )
            else:
                X = np.zeros((0, self._out_dim(X.shape[1])), dtype=np.float32)
        if normalize and len(X):
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            X = X / np.where(norms > 0, norms, 1.0)
        return X[0] if single else X

    def get_sentence_embedding_dimension(self) -> int | None:
        """Width of the vectors :meth:`encode` returns, known without encoding (None when the
        encoder does not state its own): the post-processor's output width, else the
        encoder's. Lets every check that needs only the width (``eval-sts --n-components``)
        run before any encoding."""
        from sentvec.encoders.base import output_dimension

        d = output_dimension(self.encoder)
        return d if self.whitening is None or d is None else self._out_dim(d)

    def _out_dim(self, d: int) -> int:
        names = getattr(self.whitening, "get_feature_names_out", None)
        if callable(names):  # scikit-learn's output width (d for all-but-the-top)
            return len(names())
        return int(getattr(self.whitening, "n_components_", d))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the pipeline directory atomically (built in a temp dir, then renamed); return
        ``path`` as a ``Path``.

        ``path`` may be missing, an empty directory or a saved pipeline (one holding
        ``pipeline.json``), which is replaced as a whole.

        Raises
        ------
        FileExistsError
            If ``path`` is a file or a non-empty directory that is not a saved pipeline; nothing
            is written.
        ValueError
            If ``path`` cannot be replaced by a rename (the working directory or one of its
            parents, a filesystem root, a mount point); nothing is written.
        TypeError
            If the encoder has no ``save`` method or no known ``encoder_type``, its ``save``
            writes files that are not the format its ``encoder_type`` names (they could not be
            loaded back), or the post-processor is not one of
            :data:`sentvec.whitening.POSTPROCESSOR_TYPES`.
        """
        from sentvec._io import atomic_directory, atomic_write_json

        with atomic_directory(path, marker=PIPELINE_FILE, kind="a sentvec pipeline") as tmp:
            enc_type = self._save_encoder(tmp / "encoder")
            wcfg = None
            if self.whitening is not None:
                from sentvec.whitening import postprocessor_type_of

                wcfg = {"path": "whitening", "type": postprocessor_type_of(self.whitening)}
                self.whitening.save(tmp / "whitening")
            atomic_write_json(
                tmp / PIPELINE_FILE,
                {
                    "format": PIPELINE_FORMAT,
                    "version": PIPELINE_VERSION,
                    "encoder": {"type": enc_type, "path": "encoder"},
                    "whitening": wcfg,
                },
            )
        return Path(path)

    def _save_encoder(self, directory: Path) -> str:
        encoder = self.encoder
        enc_type = encoder.encoder_type if isinstance(encoder, PipelineComponent) else None
        try:
            fmt = by_encoder_type(enc_type) if isinstance(enc_type, str) else None
        except KeyError:
            fmt = None
        if fmt is None or not isinstance(encoder, PipelineComponent):
            saved = [f for f in FORMATS if f.saved_by_encoder]
            classes = ", ".join(sorted({f.encoder_class.rpartition(".")[2] for f in saved}))
            raise TypeError(
                f"cannot save an encoder of type {type(self.encoder).__name__}; a saved pipeline "
                f"needs an encoder with save(path) and an encoder_type in "
                f"{sorted(str(f.encoder_type) for f in saved)} ({classes})"
            )
        encoder.save(directory)
        # the files must read back as the format the type names, or the pipeline cannot load
        found = detect_format(directory)
        if found is not fmt:
            raise TypeError(
                f"{type(encoder).__name__} has encoder_type {enc_type!r} ({fmt.human_name}) "
                f"but its save() wrote "
                + ("no format sentvec reads" if found is None else f"a {found.human_name}")
            )
        return str(enc_type)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Pipeline:
        """Read a directory written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            If the directory or ``pipeline.json`` is missing.
        ValueError
            If ``pipeline.json`` is not a sentvec pipeline of a known version, names a component
            outside the pipeline directory or of an unknown type, or its whitening does not fit
            its encoder.
        """
        root = Path(path)
        cfg_path = root / PIPELINE_FILE
        if not os.path.lexists(cfg_path):
            raise FileNotFoundError(f"no {PIPELINE_FILE} in {str(root)!r}: not a saved pipeline")
        cfg = read_json_object(cfg_path)  # a FIFO or a device there: named, never opened
        if cfg.get("format") != PIPELINE_FORMAT:
            raise ValueError(f"{str(cfg_path)!r} is not a sentvec pipeline file")
        version = cfg.get("version")
        if type(version) is not int or version != PIPELINE_VERSION:
            raise ValueError(
                f"unsupported pipeline version {version!r} (this sentvec reads "
                f"version {PIPELINE_VERSION})"
            )
        enc = cfg.get("encoder") or {}
        if not isinstance(enc, dict):
            raise ValueError(f"{str(cfg_path)!r}: 'encoder' must be an object, got {enc!r:.60}")
        enc_dir = _component_dir(root, enc.get("path", "encoder"), cfg_path)
        etype = enc.get("type")
        try:
            fmt = component_format(etype, enc_dir) if isinstance(etype, str) else None
        except KeyError:
            fmt = None
        if fmt is None:
            raise ValueError(f"unknown encoder type {enc.get('type')!r} in {str(cfg_path)!r}")
        encoder = fmt.load(enc_dir)
        whitening = None
        if cfg.get("whitening"):
            from sentvec.whitening import load_postprocessor

            wcfg = cfg["whitening"]
            if not isinstance(wcfg, dict):
                raise ValueError(
                    f"{str(cfg_path)!r}: 'whitening' must be an object or null, got {wcfg!r:.60}"
                )
            # pipelines written before the type field hold a Whitening
            wtype = wcfg.get("type", "whitening")
            if not isinstance(wtype, str):
                raise ValueError(
                    f"{str(cfg_path)!r}: whitening 'type' must be a string, got {wtype!r:.60}"
                )
            whitening = load_postprocessor(
                _component_dir(root, wcfg.get("path", "whitening"), cfg_path), wtype
            )
        pipeline = cls(encoder, whitening)
        pipeline.path = str(root)
        return pipeline
