"""What one ``Sent2Vec.encode`` call did to its sentences (:class:`EncodeStats`: zero vectors,
empty sentences, literal ``</s>`` tokens, non-finite vectors) and the warnings it gives for them."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields

import numpy as np

from sentvec.sent2vec.dictionary import EOS


@dataclass(frozen=True)
class EncodeStats:
    """What happened to the sentences of one ``encode`` call.

    Attributes
    ----------
    n_sentences : int
    n_zero : int
        Sentences with no in-vocabulary word (zero vectors), ``n_empty`` included.
    n_empty : int
        Empty or whitespace-only sentences.
    n_eos_tokens : int
        Literal ``</s>`` tokens ignored (the official wrapper would end the sentence there).
    n_nonfinite : int
        Vectors holding NaN or infinity (only a model with non-finite weights gives these).
    tokens : ndarray of shape (n_sentences,), int64, or None
        Tokens of each sentence as the model splits it (known or not, literal ``</s>``
        included): what it read. Not part of :meth:`to_dict`.
    """

    n_sentences: int
    n_zero: int
    n_empty: int
    n_eos_tokens: int
    n_nonfinite: int = 0
    tokens: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, int]:
        """The counts (not ``tokens``) as a dict."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tokens"}


def warn_encode_stats(stats: EncodeStats, *, stacklevel: int = 2) -> None:
    """Issue the UserWarnings ``encode`` gives for zero vectors and ignored ``</s>`` tokens."""
    if stats.n_zero:
        warnings.warn(
            f"{stats.n_zero} of {stats.n_sentences} sentences have no in-vocabulary "
            f"word ({stats.n_empty} empty or whitespace-only); their vectors are zero",
            UserWarning,
            stacklevel=stacklevel,
        )
    if stats.n_nonfinite:
        warnings.warn(
            f"{stats.n_nonfinite} of {stats.n_sentences} vectors hold NaN or infinite "
            "values: the model's weights are not finite (a diverged training run?)",
            UserWarning,
            stacklevel=stacklevel,
        )
    if stats.n_eos_tokens:
        warnings.warn(
            f"ignored {stats.n_eos_tokens} literal {EOS!r} tokens (the official "
            "wrapper would end the sentence at each)",
            UserWarning,
            stacklevel=stacklevel,
        )
