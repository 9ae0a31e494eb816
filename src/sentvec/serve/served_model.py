"""One served model: an encoder under a name, with what the APIs need to know about it.

Nothing here depends on the encoder's type: it is asked through the capability protocols of
:mod:`sentvec.encoders.base`. Token counts come from the encoder's own ``count_tokens``
(:class:`~sentvec.encoders.base.TokenCounting`: a pipeline's inner encoder's; a transformer
counts as it tokenizes, special tokens included). An encoder whose ``encode_with_stats`` reports
each text's tokens (:class:`~sentvec.encoders.base.PreparedInput`: Sent2Vec) is counted by the
encoding itself, with no pass of its own; any other encoder (a static model) counts
whitespace-separated words. Neither of these truncates. An
input is truncated when it has more tokens than the encoder's ``max_length``; the server reports
it, never hides it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._parallel import available_cpus
from sentvec.encoders.base import (
    DeviceEncoder,
    Encoder,
    PostProcessed,
    PreparedInput,
    TokenCounting,
    describe_encoder,
)
from sentvec.serve.settings import DEFAULT_BATCH_LIMITS, SENT2VEC_BATCH_LIMITS

__all__ = ["ServedModel", "TokenCounts", "load_served_model", "model_name_for"]

#: The text encoded once at start-up, so the first request pays no lazy initialisation.
WARMUP_TEXT = "sentvec warms up"

#: Token lengths of the synthetic texts a transformer on the CPU encodes at start-up, at every
#: forward batch size (:meth:`ServedModel.warm_batch_shapes`): the lengths of most sentences
#: clients send one at a time, and of the batches they are gathered into.
WARM_TOKEN_LENGTHS = (8, 16, 32, 64)


@dataclass(frozen=True)
class TokenCounts:
    """Token counts of one request's texts.

    Attributes
    ----------
    lengths : ndarray of shape (n,), int64
        Tokens of each text before truncation.
    limit : int or None
        The encoder's ``max_length`` (None: it truncates nothing).
    """

    lengths: np.ndarray
    limit: int | None

    @property
    def truncated(self) -> int:
        """How many texts are longer than ``limit`` (the encoder cuts them to ``limit``)."""
        return 0 if self.limit is None else int((self.lengths > self.limit).sum())

    @property
    def processed(self) -> int:
        """Tokens the encoder reads: each text's count, capped at ``limit``."""
        if self.limit is None:
            return int(self.lengths.sum())
        return int(np.minimum(self.lengths, self.limit).sum())

    def first_too_long(self) -> int:
        """Index of the first text longer than ``limit`` (-1 if none)."""
        if self.limit is None:
            return -1
        hits = np.flatnonzero(self.lengths > self.limit)
        return int(hits[0]) if len(hits) else -1


def _inner(encoder: Any) -> Any:
    """The encoder that reads the text: a pipeline's own encoder, else the encoder itself."""
    if isinstance(encoder, PostProcessed) and isinstance(encoder.encoder, Encoder):
        return encoder.encoder
    return encoder


#: Sentences per forward pass of a transformer on the CPU, inside one gathered batch. The
#: encoder sorts a batch by length, and a CPU gains nothing from wide batches, so smaller forward
#: passes waste less padding: groups of 32 corpus sentences encoded by MiniLM on 2 cores ran at
#: 78-87 sentences/s with 8 per pass against 43-44 with 32 (docs/results/serving.md).
CPU_FORWARD_BATCH_SIZE = 8


def _forward_batch_size(inner: Any) -> int | None:
    """:data:`CPU_FORWARD_BATCH_SIZE` for a transformer on the CPU (a
    :class:`~sentvec.encoders.base.DeviceEncoder` that counts tokens); None (the encoder's own
    default) for anything else. Every :class:`~sentvec.encoders.base.Encoder` takes
    ``batch_size``."""
    if not (isinstance(inner, DeviceEncoder) and isinstance(inner, TokenCounting)):
        return None
    device = inner.device
    return CPU_FORWARD_BATCH_SIZE if getattr(device, "type", device) == "cpu" else None


def model_name_for(source: str | os.PathLike[str]) -> str:
    """The default served name of a ``--model`` value: an alias as given, a path by its last
    component (a ``.bin`` file without its suffix)."""
    text = os.fspath(source)
    path = Path(text)
    if "/" not in text and "\\" not in text and not path.exists():
        return text
    return path.stem if path.suffix.lower() == ".bin" else path.name


class ServedModel:
    """An encoder served under ``name``.

    Parameters
    ----------
    name : str
        The name clients give as ``model``.
    encoder : Encoder
        Anything with ``encode(list of str) -> ndarray (n, d) float32``.
    source : str, optional
        What it was loaded from (shown by ``/info`` and ``/v1/models``).
    warmup : bool, default True
        Encode one text now: loads lazy state (kernels, threads) and measures the width ``d``.

    Attributes
    ----------
    dim : int
        Width of the vectors.
    max_input_length : int or None
        Longest input in tokens before the encoder truncates (None: no limit).
    """

    def __init__(
        self, name: str, encoder: Encoder, *, source: str | None = None, warmup: bool = True
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a model name must be a non-empty string, got {name!r}")
        if not isinstance(encoder, Encoder):
            raise TypeError(f"model {name!r}: {type(encoder).__name__} has no encode method")
        self.name = name
        self.encoder = encoder
        self.source = source or name
        inner = _inner(encoder)
        counting = inner if isinstance(inner, TokenCounting) else None
        self._count: Callable[[Sequence[str]], np.ndarray] | None = (
            None if counting is None else counting.count_tokens
        )
        self.max_input_length: int | None = None if counting is None else int(counting.max_length)
        #: An encoder that reads the text itself and counts no tokens beforehand (Sent2Vec):
        #: its ``encode_with_stats`` carries each text's tokens.
        fast = encoder if isinstance(encoder, PreparedInput) and counting is None else None
        self._stats_encode: Callable[[list[str]], tuple[Any, Any]] | None = (
            None if fast is None else fast.encode_with_stats
        )
        #: A Sent2Vec model without preprocessing: making its texts' UTF-8 bytes (one
        #: ``str.encode`` each) is cheap enough for the event loop, and then the encoding thread
        #: runs the GIL-free kernel only (see :attr:`prepare`).
        cheap = fast is not None and fast.preprocessing.is_identity
        self._prepare: Callable[[list[str]], Any] | None = (
            fast.prepare if fast is not None and cheap else None
        )
        self._embed_prepared = fast.embed_prepared if fast is not None and cheap else None
        self.forward_batch_size = _forward_batch_size(inner)
        vec = self.encode([WARMUP_TEXT]) if warmup else None
        self.dim = int(vec.shape[-1]) if vec is not None else _declared_dim(encoder)
        if warmup:
            self.warm_batch_shapes()

    def warm_batch_shapes(self) -> int:
        """Encode synthetic texts in the forward batches the server will run, so that the
        first requests after ``/health`` turns 200 find them ready (the kernels each new
        batch shape selects, the memory of the largest batch).

        Only a transformer on the CPU (:attr:`forward_batch_size` set) warms: for every batch
        size from 1 to :attr:`forward_batch_size`, texts of about each of
        :data:`WARM_TOKEN_LENGTHS` tokens (capped at :attr:`max_input_length`), then one
        gathered batch of the shortest texts, which the encoder packs into its widest forward
        pass. Any other model has no shapes to warm.

        Returns
        -------
        int
            Texts encoded (0 for a model that warms nothing).
        """
        size = self.forward_batch_size
        if size is None:
            return 0
        limit = self.max_input_length or max(WARM_TOKEN_LENGTHS)
        done = 0
        for tokens in WARM_TOKEN_LENGTHS:
            words = max(1, min(tokens, limit) - 3)  # the model adds its special tokens
            texts = [" ".join([f"{i}", *["warm"] * words]) for i in range(size)]
            for n in range(1, size + 1):
                self.encode(texts[:n])
                done += n
        texts = [f"{i} warm" for i in range(size * 4)]
        self.encode(texts)
        return done + len(texts)

    # ------------------------------------------------------------------ texts
    @property
    def counts_in_thread(self) -> bool:
        """Whether counting a large request's tokens is worth a thread (a tokenizer runs)."""
        return self._count is not None

    @property
    def counts_on_encode(self) -> bool:
        """Whether :meth:`encode_counted` returns each text's token count (then nothing counts
        them beforehand: batches are bounded by :meth:`token_bound`, and nothing is truncated)."""
        return self._stats_encode is not None

    @property
    def concurrent_batches(self) -> int:
        """Batches to encode side by side: one per core for a :attr:`counts_on_encode` model
        (Sent2Vec: a compiled loop without the GIL, one core per batch below a few thousand
        texts), else 1 (a transformer's forward pass uses every core already)."""
        if self._stats_encode is None:
            return 1
        return available_cpus()

    @property
    def batch_limits(self) -> tuple[int, int]:
        """The default bounds of a batch, ``(max_batch_tokens, max_batch_size)``, when the
        server is not given them: (16384, 256) for a model that counts tokens beforehand (a
        transformer, a static model); for a :attr:`counts_on_encode` model (Sent2Vec), whose
        batch is bounded by characters (:meth:`token_bound`), (131072, 512): two requests of
        256 corpus sentences in one batch halve the hand-overs to the encoding thread, which
        cost more than such a model's kernel (docs/results/serving.md)."""
        if self.counts_on_encode:
            return SENT2VEC_BATCH_LIMITS
        return DEFAULT_BATCH_LIMITS

    @property
    def prepare(self) -> Callable[[list[str]], Any] | None:
        """What the batcher runs on the event loop on a batch's texts before the encoding thread
        gets the result (:meth:`encode_prepared`), or None (the thread gets the texts and calls
        :meth:`encode_counted`). Set for a Sent2Vec model without preprocessing: its texts' UTF-8
        bytes, so that the thread only runs the kernel, which needs no GIL."""
        return self._prepare

    def encode_prepared(self, prepared: Any) -> tuple[np.ndarray, np.ndarray]:
        """The batcher's call in its thread after :attr:`prepare`: as :meth:`encode_counted`.

        Returns
        -------
        vectors : ndarray of shape (n, dim), float32
        tokens : ndarray of shape (n,), int64
        """
        if self._embed_prepared is None:
            raise TypeError(f"model {self.name!r} prepares nothing on the event loop")
        out, tokens = self._embed_prepared(prepared)
        return out, tokens

    def token_bound(self, texts: Sequence[str]) -> int:
        """An upper bound of the tokens in ``texts``, without tokenizing: their characters
        (every token holds at least one). Bounds the batches of a :attr:`counts_on_encode`
        model."""
        return sum(map(len, texts))

    def count_tokens(self, texts: Sequence[str]) -> TokenCounts:
        """Token counts of ``texts`` (see the module docstring for how they are counted)."""
        if self._count is None:
            lengths = np.fromiter(map(len, map(str.split, texts)), dtype=np.int64, count=len(texts))
        else:
            lengths = np.asarray(self._count(texts), dtype=np.int64)
        return TokenCounts(lengths, self.max_input_length)

    def encode_counted(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """The batcher's call: :meth:`encode`, and each text's tokens when the encoding counts
        them (:attr:`counts_on_encode`; else None).

        Returns
        -------
        vectors : ndarray of shape (len(texts), dim), float32
        tokens : ndarray of shape (len(texts),), int64, or None
        """
        if self._stats_encode is None:
            return self.encode(texts), None
        out, stats = self._stats_encode(texts)  # no warnings: the responses report zero rows
        vectors = np.asarray(out, dtype=np.float32).reshape(len(texts), -1)
        tokens = stats.tokens
        if tokens is None:
            tokens = self.count_tokens(texts).lengths
        return vectors, np.asarray(tokens, dtype=np.int64)

    def encode(self, texts: list[str]) -> np.ndarray:
        """``encoder.encode(texts)`` as float32, shape ``(len(texts), dim)``."""
        if self.forward_batch_size is None:
            out = self.encoder.encode(texts)
        else:
            out = self.encoder.encode(texts, batch_size=self.forward_batch_size)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)

    # ------------------------------------------------------------- dimensions
    def dimensions_refusal(self, k: int) -> str | None:
        """Why ``dimensions=k`` cannot be served exactly, or None when it can.

        Exact only for a whitening with components sorted by variance (eigen solver): its first
        ``k`` output columns are the whitening that keeps ``k`` components (WhiteningBERT Eq. 1;
        BERT-whitening's dimension reduction). Cutting any other vector would be a different,
        untested model.
        """
        w = self.encoder.whitening if isinstance(self.encoder, PostProcessed) else None
        if w is None or getattr(w, "explained_variance_", None) is None:
            return (
                f"model {self.name!r} cannot shorten its vectors exactly: 'dimensions' is "
                "honoured only for a whitened pipeline, whose components are sorted by "
                "variance (its first k columns are the whitening with k components); "
                "leave 'dimensions' out"
            )
        if getattr(w, "solver_", "eigh") != "eigh":
            return (
                f"model {self.name!r} was whitened with the Cholesky solver, whose columns are "
                "not sorted by variance; 'dimensions' needs a whitening fitted with "
                "solver='eigh'"
            )
        if not 1 <= k <= self.dim:
            return f"'dimensions' must be between 1 and {self.dim} for model {self.name!r}, got {k}"
        return None

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable description (``/info``)."""
        info = describe_encoder(self.encoder)
        return {
            k: v
            for k, v in info.items()
            if isinstance(v, (str, int, float, bool, list, type(None)))
        }

    @property
    def pooling(self) -> str:
        """The inner encoder's token pooling (``"mean"`` when it does not say)."""
        inner = _inner(self.encoder)
        return str(inner.pooling) if isinstance(inner, DeviceEncoder) else "mean"


def _declared_dim(encoder: Any) -> int:
    from sentvec.encoders.base import output_dimension

    d = output_dimension(encoder)
    if d is None:
        raise ValueError(f"{type(encoder).__name__} does not state its width; load it with warmup")
    return d


def load_served_model(
    name: str, source: str | os.PathLike[str], encoder_options: dict[str, Any] | None = None
) -> ServedModel:
    """Load ``source`` with :func:`sentvec.load_encoder` and serve it as ``name``.

    ``encoder_options`` (``device``, ``backend``) apply to the formats that take options
    (:attr:`sentvec.encoders.formats.ModelFormat.takes_options`: a transformer); a model without them
    (Sent2Vec, a saved pipeline) is loaded without them, as every command does.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`sentvec.load_encoder`.
    """
    from sentvec.encoders import detect_format, load_encoder

    fmt = detect_format(source)  # the options apply to the formats that take them
    options = encoder_options if fmt is not None and fmt.takes_options else None
    encoder = load_encoder(source, **(options or {}))
    return ServedModel(name, encoder, source=os.fspath(source))
