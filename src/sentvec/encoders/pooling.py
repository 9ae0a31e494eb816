"""Pooling of transformer token vectors into sentence vectors (pure torch functions).

Every function returns a new tensor and never modifies its inputs. Shapes use ``B`` for the batch
size, ``T`` for the padded sequence length, ``d`` for the hidden size and ``L`` for the number of
transformer layers (a Hugging Face model returns ``L + 1`` hidden states with
``output_hidden_states=True``: index 0 is the non-contextual embedding output, index ``l`` is
transformer layer ``l``).

Source: WhiteningBERT (Huang et al., 2021, Sect. 3.1-3.2) and the authors' public code
(``github.com/Jun-jie-Huang/WhiteningBERT``, commit d1ef06a): token=AVG is a masked mean over all
real tokens including [CLS] and [SEP]; token=CLS is the first token's hidden vector (not
``pooler_output``); layers are combined by averaging, ``s = (s^1 + s^L) / 2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from sentvec._validation import check_choice

if TYPE_CHECKING:  # torch is imported by the functions that need it, so that the layer-index
    import torch  # validator (normalize_layers) can be used without it

#: Token pooling modes.
Pooling = Literal["cls", "max", "mean"]
POOLING_MODES: tuple[str, ...] = get_args(Pooling)

#: How ``mean`` divides the masked sum: ``"exact"`` by the number of real tokens n, ``"paper"``
#: by n + 0.01 as the WhiteningBERT authors' code does (vectors then shrink by n / (n + 0.01)).
MeanMode = Literal["exact", "paper"]
MEAN_MODES: tuple[str, ...] = get_args(MeanMode)

#: The constant the WhiteningBERT code adds to the token count in its average pooling.
PAPER_MEAN_EPSILON = 0.01

#: Poolings that combine the ``mean`` and ``cls`` poolings of one forward pass
#: (:func:`pool_layers_mean_cls`): ``"mean_cls_unit"`` averages the two after scaling each to
#: unit norm, ``"mean_cls"`` averages them as they are.
MEAN_CLS_POOLINGS: tuple[str, ...] = ("mean_cls_unit", "mean_cls")


def _float_mask(attention_mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(B, T) 0/1 mask -> (B, T, 1) mask of ``like``'s dtype and device."""
    return attention_mask.to(device=like.device, dtype=like.dtype).unsqueeze(-1)


def _check_shapes(hidden: torch.Tensor, attention_mask: torch.Tensor) -> None:
    if hidden.dim() != 3:
        raise ValueError(
            f"hidden must have shape (batch, seq_len, hidden), got {tuple(hidden.shape)}"
        )
    if tuple(attention_mask.shape) != tuple(hidden.shape[:2]):
        raise ValueError(
            f"attention_mask shape {tuple(attention_mask.shape)} does not match hidden "
            f"{tuple(hidden.shape)}; expected (batch, seq_len) = {tuple(hidden.shape[:2])}"
        )


def mean_pool(
    hidden: torch.Tensor, attention_mask: torch.Tensor, *, mean_mode: MeanMode = "exact"
) -> torch.Tensor:
    """Masked mean of token vectors (token=AVG).

    Parameters
    ----------
    hidden : Tensor of shape (B, T, d)
        Token vectors of one layer.
    attention_mask : Tensor of shape (B, T)
        1 for real tokens (including [CLS] and [SEP]), 0 for padding.
    mean_mode : {"exact", "paper"}
        ``"exact"`` divides the masked sum by the number n of real tokens; ``"paper"`` divides by
        n + 0.01, as the WhiteningBERT authors' code does.

    Returns
    -------
    Tensor of shape (B, d)
        Same dtype as ``hidden``. A row whose mask is all zero gives a zero vector in ``paper``
        mode and NaN in ``exact`` mode (tokenizers always emit at least [CLS] and [SEP], so the
        encoder never produces such a row).
    """
    check_choice("mean_mode", mean_mode, MEAN_MODES)
    _check_shapes(hidden, attention_mask)
    mask = _float_mask(attention_mask, hidden)
    summed = (hidden * mask).sum(dim=1)
    count = mask.sum(dim=1)
    if mean_mode == "paper":
        count = count + PAPER_MEAN_EPSILON
    return summed / count


def max_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Element-wise maximum over real tokens; padding positions never win.

    Parameters
    ----------
    hidden : Tensor of shape (B, T, d)
    attention_mask : Tensor of shape (B, T)
        1 for real tokens, 0 for padding.

    Returns
    -------
    Tensor of shape (B, d)
        Same dtype as ``hidden``; ``-inf`` for a row with no real token.
    """
    _check_shapes(hidden, attention_mask)
    keep = attention_mask.to(device=hidden.device).bool().unsqueeze(-1)
    masked = hidden.masked_fill(~keep, float("-inf"))  # out of place
    return masked.max(dim=1).values


def cls_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Hidden vector of the first real token ([CLS] for BERT-like tokenizers).

    With right padding this is position 0; with left padding it is the first position whose mask
    is 1, so both padding sides give the same vector. The model's ``pooler_output`` (a trained
    dense layer + tanh on top of [CLS]) is deliberately not used, as in WhiteningBERT.

    Parameters
    ----------
    hidden : Tensor of shape (B, T, d)
    attention_mask : Tensor of shape (B, T)

    Returns
    -------
    Tensor of shape (B, d)
    """
    _check_shapes(hidden, attention_mask)
    first = attention_mask.to(device=hidden.device).int().argmax(dim=1)  # first 1 in each row
    import torch

    rows = torch.arange(hidden.shape[0], device=hidden.device)
    return hidden[rows, first]


def pool(
    hidden: torch.Tensor,
    attention_mask: torch.Tensor,
    pooling: Pooling,
    *,
    mean_mode: MeanMode = "exact",
) -> torch.Tensor:
    """Pool (B, T, d) token vectors with the named mode -> (B, d).

    Raises
    ------
    ValueError
        If ``pooling`` is not one of ``POOLING_MODES`` (the message lists them).
    """
    check_choice("pooling", pooling, POOLING_MODES)
    if pooling == "mean":
        return mean_pool(hidden, attention_mask, mean_mode=mean_mode)
    if pooling == "max":
        return max_pool(hidden, attention_mask)
    return cls_pool(hidden, attention_mask)


def normalize_layers(layers: Sequence[int] | int, num_hidden_states: int) -> tuple[int, ...]:
    """Validate layer indices and map them to non-negative positions in ``hidden_states``.

    Parameters
    ----------
    layers : int or sequence of int
        Hugging Face ``hidden_states`` indices: 0 = embedding output, l = transformer layer l,
        negative values count from the end (-1 = last layer).
    num_hidden_states : int
        L + 1 for a model with L transformer layers.

    Returns
    -------
    tuple of int
        Indices in ``[0, L]``, in the given order.

    Raises
    ------
    ValueError
        If ``layers`` is empty, holds a non-integer, an index outside ``[-(L+1), L]`` (the
        message names the valid range), or names the same hidden state twice.
    """
    # checked at run time: any object may come in, and a bool is refused below
    given: Any = layers
    if isinstance(given, (int, np.integer)) and not isinstance(given, bool):
        given = (given,)
    try:
        items = tuple(given)
    except TypeError:
        raise ValueError(
            f"layers={layers!r} is invalid; expected an int or a sequence of ints"
        ) from None
    if not items:
        raise ValueError("layers=() is invalid; name at least one hidden state")
    lo, hi = -num_hidden_states, num_hidden_states - 1
    out: list[int] = []
    for raw in items:
        if isinstance(raw, np.integer):
            raw = int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"layers={layers!r} is invalid; {raw!r} is not an integer")
        if not lo <= raw <= hi:
            raise ValueError(
                f"layer index {raw} is out of range for a model with {num_hidden_states - 1} "
                f"layers: valid hidden_states indices are {lo}..{hi} "
                f"(0 = embedding output, {hi} or -1 = last layer)"
            )
        idx = raw % num_hidden_states
        if idx in out:
            raise ValueError(f"layers={tuple(items)!r} names hidden state {idx} more than once")
        out.append(idx)
    return tuple(out)


def average_layers(hidden_states: Sequence[torch.Tensor], layers: Sequence[int]) -> torch.Tensor:
    """Average the token vectors of the chosen hidden states.

    Parameters
    ----------
    hidden_states : sequence of L + 1 Tensors of shape (B, T, d)
        A Hugging Face model's ``output.hidden_states``.
    layers : sequence of int
        Indices into ``hidden_states`` (validated by :func:`normalize_layers`).

    Returns
    -------
    Tensor of shape (B, T, d)
        Mean over the selected layers. Followed by mean or CLS pooling this equals pooling each
        layer and averaging the sentence vectors (both are linear); for max pooling it does not.
    """
    idx = normalize_layers(layers, len(hidden_states))
    import torch

    return torch.stack([hidden_states[i] for i in idx], dim=0).mean(dim=0)


def pool_layers(
    hidden_states: Sequence[torch.Tensor],
    attention_mask: torch.Tensor,
    pooling: Pooling,
    layers: Sequence[int],
    *,
    mean_mode: MeanMode = "exact",
) -> torch.Tensor:
    """Sentence vector from several layers: pool each chosen layer, then average -> (B, d).

    This is the paper's ``s = (s^1 + s^L) / 2`` and gives exactly the average of the per-layer
    vectors of :func:`pool_all_layers`, for every pooling mode (for max pooling, pooling before
    averaging differs from averaging token vectors first; sentvec always pools first so that
    ``encode`` and the layer search built on ``encode_layers`` agree).
    """
    idx = normalize_layers(layers, len(hidden_states))
    pooled = [pool(hidden_states[i], attention_mask, pooling, mean_mode=mean_mode) for i in idx]
    if len(pooled) == 1:
        return pooled[0]
    import torch

    return torch.stack(pooled, dim=0).mean(dim=0)


def pool_all_layers(
    hidden_states: Sequence[torch.Tensor],
    attention_mask: torch.Tensor,
    pooling: Pooling,
    *,
    mean_mode: MeanMode = "exact",
) -> torch.Tensor:
    """Pool every hidden state at once.

    Parameters
    ----------
    hidden_states : sequence of L + 1 Tensors of shape (B, T, d)
    attention_mask : Tensor of shape (B, T)
    pooling : {"cls", "max", "mean"}

    Returns
    -------
    Tensor of shape (B, L + 1, d)
        ``out[:, l]`` equals ``pool(hidden_states[l], attention_mask, pooling)``.
    """
    check_choice("pooling", pooling, POOLING_MODES)
    states = tuple(hidden_states)
    # layer by layer: the same arithmetic as pool() per layer (so encode(layers=...) agrees
    # bit for bit), without first copying all L+1 token tensors into one stack (3x faster)
    import torch

    return torch.stack(
        [pool(h, attention_mask, pooling, mean_mode=mean_mode) for h in states], dim=1
    )


def pool_layers_mean_cls(
    hidden_states: Sequence[torch.Tensor],
    attention_mask: torch.Tensor,
    layers: Sequence[int],
    *,
    unit: bool = True,
    mean_mode: MeanMode = "exact",
) -> torch.Tensor:
    """The average of the ``mean`` and ``cls`` poolings (:func:`pool_layers`) of the same hidden
    states: ``(mean + cls) / 2``, or with ``unit`` ``(mean / ||mean|| + cls / ||cls||) / 2``, so
    that both contribute equally to each vector's direction.

    ``sentvec distill``'s token rows (``pooling="mean_cls_unit"`` / ``"mean_cls"``, see
    :data:`MEAN_CLS_POOLINGS`).

    Parameters
    ----------
    hidden_states : sequence of L + 1 Tensors of shape (B, T, d)
    attention_mask : Tensor of shape (B, T)
    layers : sequence of int
        Hidden states pooled and averaged, as :func:`pool_layers` takes them.
    unit : bool, default True
        Scale each pooling to unit norm first (norms in float64; a zero vector stays zero).
    mean_mode : {"exact", "paper"}, default "exact"

    Returns
    -------
    Tensor of shape (B, d)
        float64 with ``unit``, else the dtype of ``hidden_states``.
    """
    mean = pool_layers(hidden_states, attention_mask, "mean", layers, mean_mode=mean_mode)
    cls = pool_layers(hidden_states, attention_mask, "cls", layers, mean_mode=mean_mode)
    if unit:
        return (_unit_rows(mean) + _unit_rows(cls)) / 2
    return (mean + cls) / 2


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row of a torch tensor divided by its Euclidean norm, in float64 (zero rows stay
    zero)."""
    x = x.double()
    n = x.norm(dim=-1, keepdim=True)
    return x / n.clamp_min(float(np.finfo(np.float64).tiny))
