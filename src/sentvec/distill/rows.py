"""The teacher's token rows of ``sentvec distill``: each vocabulary token (or word, or bigram)
passed alone through the teacher, ``[CLS] ids [SEP]``, and pooled.

The forward pass is the teacher's own (:meth:`sentvec.TransformerEncoder.hidden_states`): its
backend (torch or ONNX Runtime), device and precision apply. :func:`rows_beside` runs the
teacher's tokens in one torch thread while the corpus pass runs in its child process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sentvec._validation import check_choice, check_positive_int
from sentvec.distill.corpus import CorpusPassProcess
from sentvec.encoders.pooling import MEAN_CLS_POOLINGS

__all__ = ["token_rows", "rows_beside", "ROW_POOLINGS"]

#: Token-row poolings: the encoders' own (:data:`sentvec.encoders.POOLING_MODES`),
#: "mean_cls", the average of the mean over ``[CLS] t [SEP]`` and the ``[CLS]`` output, and
#: "mean_cls_unit", the same average of the two scaled to unit norm first
#: (:func:`sentvec.encoders.pooling.pool_layers_mean_cls`).
ROW_POOLINGS: tuple[str, ...] = (*MEAN_CLS_POOLINGS, "mean", "cls", "max")


def _special_frame(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (``[CLS]`` / ``[SEP]`` for BERT,
    ``<s>`` / ``</s>`` for RoBERTa), found by encoding one word with and without them."""
    bare = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    full = list(tokenizer("a", add_special_tokens=True)["input_ids"])
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return full[:i], full[i + len(bare) :]
    raise ValueError("cannot find where the tokenizer puts its special tokens")


def token_rows(
    encoder: Any,
    token_ids: Sequence[Sequence[int]],
    *,
    batch_size: int = 512,
    precision: str = "auto",
    pooling: str | None = None,
    show_progress_bar: bool | None = None,
) -> np.ndarray:
    """The teacher's vector of each token sequence, passed alone through the model.

    Each entry is framed by the tokenizer's special tokens (``[CLS] ids [SEP]``), run through
    the encoder's forward pass (:meth:`sentvec.TransformerEncoder.hidden_states`: its backend,
    torch or ONNX Runtime, and its device) and pooled with the encoder's pooling (or
    ``pooling``), layers and mean mode (:func:`sentvec.encoders.pooling.pool_layers`):
    Model2Vec's token rows for ``pooling="mean"``, ``layers=(-1,)``; WhiteningBERT's L1 +
    L_last with ``layers=(1, -1)``; ``pooling="mean_cls"`` averages the mean and ``[CLS]``
    poolings; ``"mean_cls_unit"`` (``sentvec distill``'s default) averages them after scaling
    each to unit norm, so both contribute equally to each row's direction
    (:func:`sentvec.encoders.pooling.pool_layers_mean_cls`).

    Parameters
    ----------
    encoder : sentvec.TransformerEncoder
    token_ids : sequence of sequences of int
        One entry per row (a single vocabulary id, or the ids of a word or bigram).
    batch_size : int, default 512
    precision : {"auto", "float32", "bfloat16"}, default "auto"
        The forward pass's matrix products: "bfloat16" runs the model under
        ``torch.autocast`` with bfloat16 (layer norms and softmax stay float32; MiniLM's rows
        within about 0.4 % of float32's, cosine > 0.9999); "auto" picks it where the device
        multiplies bfloat16 in hardware (:func:`sentvec.encoders.bfloat16_is_fast`: a CPU
        with AMX or AVX512-BF16, about 2x faster than float32 there), float32 elsewhere and
        with ``backend="onnx"`` (a float32 graph).
    pooling : {"mean_cls_unit", "mean_cls", "mean", "cls", "max"}, optional
        None: the encoder's own pooling. "mean_cls": ``(mean + cls) / 2`` of the same hidden
        states; "mean_cls_unit": ``(mean / ||mean|| + cls / ||cls||) / 2`` (norms in float64;
        a zero vector stays zero). Chosen on STS-B dev + SICK trial (``docs/distill.md``;
        ``bench/distill_sweep.py --ideas5``).
    show_progress_bar : bool, optional
        None: shown on a terminal (``sentvec._progress.progress_bar``).

    Returns
    -------
    ndarray of shape (len(token_ids), hidden_size), float32

    Raises
    ------
    TypeError
        ``encoder`` is not a :class:`sentvec.TransformerEncoder`.
    ValueError
        An empty entry, an unknown ``precision`` or ``pooling``; ``precision="bfloat16"``
        with ``backend="onnx"``.
    """
    import sys

    from sentvec._progress import progress_bar
    from sentvec.encoders import TransformerEncoder, pool_layers, pool_layers_mean_cls

    if not isinstance(encoder, TransformerEncoder):
        raise TypeError(f"token_rows needs a TransformerEncoder, got {type(encoder).__name__}")
    batch_size = check_positive_int("batch_size", batch_size)
    if precision != encoder.precision:
        encoder = encoder.with_options(precision=precision)  # shares the model
    mode = encoder.pooling if pooling is None else check_choice("pooling", pooling, ROW_POOLINGS)
    if any(len(ids) == 0 for ids in token_ids):
        raise ValueError("token_rows: every entry needs at least one token id")
    head, tail = _special_frame(encoder.tokenizer)
    framed = [head + [int(i) for i in ids] + tail for ids in token_ids]
    lengths = np.fromiter((len(f) for f in framed), dtype=np.int64, count=len(framed))
    order = np.argsort(lengths, kind="stable")
    out = np.empty((len(framed), encoder.hidden_size), dtype=np.float32)
    pad = encoder.tokenizer.pad_token_id or 0
    layers, mean_mode = encoder.layer_indices, encoder.mean_mode
    show = sys.stderr.isatty() if show_progress_bar is None else bool(show_progress_bar)
    with progress_bar(total=len(framed), desc="Teacher forward", unit="tok", show=show) as bar:
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            T = int(lengths[batch].max())
            ids = np.full((len(batch), T), pad, dtype=np.int64)
            mask = np.zeros((len(batch), T), dtype=np.int64)
            for r, j in enumerate(batch):
                ids[r, : lengths[j]] = framed[j]
                mask[r, : lengths[j]] = 1
            hs, mask_t = encoder.hidden_states(ids, mask)
            if mode in MEAN_CLS_POOLINGS:
                unit = mode == "mean_cls_unit"
                rows = pool_layers_mean_cls(hs, mask_t, layers, unit=unit, mean_mode=mean_mode)
            else:
                rows = pool_layers(hs, mask_t, mode, layers, mean_mode=mean_mode)
            out[batch] = rows.cpu().float().numpy()
            bar.update(len(batch))
    return out


def rows_beside(
    child: CorpusPassProcess,
    encoder: Any,
    token_ids: np.ndarray,
    *,
    chunk: int = 2048,
    show_progress_bar: bool | None = None,
    **kwargs: Any,
) -> np.ndarray | None:
    """:func:`token_rows` of single tokens while ``child`` runs: in one torch thread while it
    runs and in torch's own number after (checked every ``chunk`` tokens), so that the two
    processes share the 2 cores instead of fighting over them (docs/distill.md, "Wall time").

    Parameters
    ----------
    child : sentvec.distill.corpus.CorpusPassProcess
    encoder : sentvec.TransformerEncoder
    token_ids : ndarray of int
        Teacher token ids, one row each.
    chunk : int, default 2048
    show_progress_bar : bool, optional
        None: shown on a terminal ("Teacher vocabulary").
    **kwargs
        ``batch_size`` and ``precision`` of :func:`token_rows`.

    Returns
    -------
    ndarray of shape (len(token_ids), hidden_size), float32, or None
        None as soon as the child has failed (a bad corpus): the caller runs the corpus pass
        itself, which raises its error, before any more teacher work.
    """
    import sys

    import torch

    from sentvec._progress import progress_bar

    n_threads = torch.get_num_threads()
    out = np.empty((len(token_ids), int(encoder.hidden_size)), dtype=np.float32)
    show = sys.stderr.isatty() if show_progress_bar is None else bool(show_progress_bar)
    try:
        with progress_bar(
            total=len(token_ids), desc="Teacher vocabulary", unit="tok", show=show
        ) as bar:
            for start in range(0, len(token_ids), chunk):
                if child.failed():
                    return None
                torch.set_num_threads(1 if child.running() else n_threads)
                part = token_ids[start : start + chunk]
                out[start : start + len(part)] = token_rows(
                    encoder, [[int(i)] for i in part], show_progress_bar=False, **kwargs
                )
                bar.update(len(part))
    finally:
        torch.set_num_threads(n_threads)
    return out
