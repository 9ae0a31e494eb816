"""Every public exception and warning class of sentvec, in one module.

The modules that raise them re-export them under their earlier paths
(``sentvec.sent2vec.binfile.ModelFormatError is sentvec.exceptions.ModelFormatError``), so
``except`` clauses written against either path catch the same class. This module imports
nothing from sentvec: any module may import it without an import cycle.
"""

from __future__ import annotations

__all__ = [
    # files and models
    "ModelFormatError",
    "QuantizedModelError",
    "InferenceOnlyError",
    "EncoderOptionsError",
    "ExportError",
    "DiskFullError",
    "DirectoryLockedError",
    # resources and optional dependencies
    "InsufficientMemoryError",
    "MissingExtraError",
    # training and distributed work
    "TrainingDivergedError",
    "PartitionError",
    "FeaturesMismatchError",
    # the server
    "ApiError",
    "QueueFullError",
    "BatcherClosedError",
    # warnings
    "TruncationWarning",
    "CacheWarning",
    "SidecarWarning",
]


# ------------------------------------------------------------------ files and models
class ModelFormatError(ValueError):
    """The file is not a readable sent2vec model (corrupt, truncated or another format)."""


class QuantizedModelError(ModelFormatError, NotImplementedError):
    """The model's input matrix is product-quantized (``.ftz``); not supported."""


class InferenceOnlyError(ValueError):
    """The model holds no output matrix (loaded with ``inference_only=True``), and the operation
    needs it (writing a ``.bin``)."""


class EncoderOptionsError(ValueError):
    """Transformer options (pooling, layers, ...) were given for a model that has none."""


class ExportError(ValueError):
    """The pipeline cannot be expressed in the requested sentence-transformers layout."""


class DiskFullError(OSError):
    """A write failed for lack of space (or quota); the message names the file and the folder."""


class DirectoryLockedError(OSError):
    """Another process is writing the directory (its lock file names the holder)."""


# ------------------------------------------------------------------ resources, extras
class InsufficientMemoryError(ValueError, MemoryError):
    """The estimated memory of an operation exceeds what is available (or the limit).

    A ``ValueError`` (the command line prints it as one error line) and a ``MemoryError``.
    """


class MissingExtraError(ImportError):
    """An optional dependency of sentvec is not installed.

    Parameters
    ----------
    extra : str
        The extra that installs it (a key of :data:`sentvec._extras.EXTRAS`).
    module : str
        The top-level module that was not found.
    feature : str, optional
        What needs it, for the message (``"sentvec serve"``).

    Attributes
    ----------
    extra, module, feature : str
        As given; ``name`` (``ImportError``'s) is ``module`` too.
    """

    def __init__(self, extra: str, module: str, feature: str | None = None) -> None:
        self.extra = extra
        self.module = module
        self.feature = feature or f"the {extra!r} extra"
        super().__init__(
            f"{self.feature} needs the optional module {module!r}: pip install 'sentvec[{extra}]'"
            f" (in a clone: pip install -e '.[{extra}]')",
            name=module,
        )


# ------------------------------------------------------------------ training, clusters
class TrainingDivergedError(ValueError):
    """SGD diverged: the trained matrices hold NaN or infinite values."""


class PartitionError(RuntimeError):
    """One or more partitions failed on the cluster after Dask's retries.

    Attributes
    ----------
    ranges : list of (start_line, end_line)
        0-based line ranges (end exclusive) of the failed partitions, in line order.
    """

    def __init__(self, message: str, ranges: list[tuple[int, int]]) -> None:
        super().__init__(message)
        self.ranges = ranges


# ------------------------------------------------------------------ the server
class FeaturesMismatchError(ValueError):
    """A features directory written with other options, another teacher or another corpus."""


class ApiError(Exception):
    """A request the server refuses or could not serve, with what the client is told.

    Parameters
    ----------
    status : int
        HTTP status (400 malformed request, 401 missing or wrong key, 404 unknown model,
        413 a limit exceeded, 422 well-formed but invalid, 429 queue full, 503 not ready).
    message : str
        A sentence saying what was wrong and, where it helps, what to do instead.
    param : str, optional
        The request field at fault (OpenAI's ``error.param``).
    code : str, optional
        A machine-readable code (OpenAI's ``error.code``, e.g. ``"model_not_found"``).
    headers : dict, optional
        Extra response headers (``Retry-After`` on a 429).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.param = param
        self.code = code
        self.headers = dict(headers or {})


class QueueFullError(Exception):
    """The model's queue holds ``limit`` items already; the request was not queued."""

    def __init__(self, queued: int, requested: int, limit: int) -> None:
        super().__init__(
            f"the model's queue holds {queued} inputs; {requested} more would exceed its "
            f"limit of {limit} (--max-queue-items)"
        )
        self.queued, self.requested, self.limit = queued, requested, limit


class BatcherClosedError(Exception):
    """The batcher was closed (the server is shutting down) before the request was encoded."""


# ------------------------------------------------------------------ warnings
class TruncationWarning(UserWarning):
    """Some inputs were longer than the encoder's ``max_length`` and were truncated.

    Parameters
    ----------
    message : str
    n_truncated, n_texts, longest, max_length : int, optional
        The counts behind the message, for callers that sum several calls' warnings into one
        (the teacher pass of ``sentvec train-static``): texts truncated, texts encoded, the
        longest text's length in tokens, the limit.
    """

    def __init__(
        self,
        message: str,
        *,
        n_truncated: int | None = None,
        n_texts: int | None = None,
        longest: int | None = None,
        max_length: int | None = None,
    ) -> None:
        super().__init__(message)
        self.n_truncated = n_truncated
        self.n_texts = n_texts
        self.longest = longest
        self.max_length = max_length

    @classmethod
    def counted(
        cls, n_truncated: int, n_texts: int, longest: int, max_length: int
    ) -> TruncationWarning:
        """The warning of one encode call: ``n_truncated`` of its ``n_texts`` distinct texts
        were longer than ``max_length`` tokens, the longest ``longest``."""
        return cls(
            f"{n_truncated} of {n_texts} distinct sentences were longer than "
            f"max_length={max_length} tokens (longest: {longest}) and were truncated to "
            f"{max_length} tokens",
            n_truncated=n_truncated,
            n_texts=n_texts,
            longest=longest,
            max_length=max_length,
        )


class CacheWarning(UserWarning):
    """A cache entry was unusable (corrupt or mismatched) and is being recomputed."""


class SidecarWarning(UserWarning):
    """A dictionary index beside a ``.bin`` was stale or damaged; the ``.bin`` is read instead."""
