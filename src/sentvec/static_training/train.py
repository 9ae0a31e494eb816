"""Training the rows of a static model so that a sentence's mean row predicts its teacher vector.

The student is a :class:`~sentvec.encoders.static.StaticEncoder`: the vector of a sentence with
kept tokens ``t_1 .. t_m`` is ``v = (1/m) sum_i R[t_i]`` (per-token weights folded into the rows
``R``). The target ``y`` is the teacher's vector of the same sentence, in the teacher's
whitened (WhiteningBERT Eq. 1) or PCA space of the student's dimension. The rows are trained by
Adam over mini-batches (torch ``EmbeddingBag``), with one of three losses:

* ``"cosine"``: ``1 - cos(v, y)``;
* ``"mse"``: ``||v - y||^2 / d``;
* ``"contrastive"``: in-batch InfoNCE, ``-log softmax_j(cos(v_i, y_j) / tau)[i]``.

:func:`loss_and_gradient` is the numpy transcription of the losses (value and gradient with
respect to the sentence vectors) that the tests compare the torch losses with.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sentvec._progress import progress_bar

LOSSES = ("cosine", "mse", "contrastive")
#: Temperature of the in-batch contrastive loss.
CONTRASTIVE_TEMPERATURE = 0.05


@dataclass
class TrainingLog:
    """What a training run did: the loss of each epoch on the training sentences, the time."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    n_sentences: int = 0
    n_tokens: int = 0


def flatten_ids(ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of sentences as one int64 array and offsets of shape (n + 1,)."""
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=int(offsets[-1]))
    return flat, offsets


def sentence_vectors(rows: np.ndarray, flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Mean of each sentence's rows (numpy; the reference of the training's forward pass).

    Parameters
    ----------
    rows : ndarray of shape (V, d)
    flat, offsets : ndarray
        As :func:`flatten_ids`; every sentence must have at least one token.

    Returns
    -------
    ndarray of shape (n, d), float64
    """
    from scipy import sparse

    n = len(offsets) - 1
    counts = np.diff(offsets).astype(np.float64)
    data = np.repeat(1.0 / counts, np.diff(offsets))  # (n, V) averaging matrix, CSR
    M = sparse.csr_matrix((data, flat, offsets), shape=(n, rows.shape[0]))
    return np.asarray(M @ np.asarray(rows, dtype=np.float64))


def loss_and_gradient(
    v: np.ndarray, y: np.ndarray, loss: str, *, temperature: float = CONTRASTIVE_TEMPERATURE
) -> tuple[float, np.ndarray]:
    """Mean loss over a batch and its gradient with respect to the sentence vectors.

    Parameters
    ----------
    v : ndarray of shape (n, d)
        Student sentence vectors.
    y : ndarray of shape (n, d)
        Targets.
    loss : {"cosine", "mse", "contrastive"}
    temperature : float

    Returns
    -------
    value : float
    grad : ndarray of shape (n, d), float64
    """
    v = np.asarray(v, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = v.shape
    if loss == "mse":
        diff = v - y
        return float((diff**2).sum() / (n * d)), 2.0 * diff / (n * d)
    nv = np.linalg.norm(v, axis=1, keepdims=True)
    ny = np.linalg.norm(y, axis=1, keepdims=True)
    u = v / nv
    z = y / ny
    if loss == "cosine":
        c = (u * z).sum(axis=1, keepdims=True)
        grad_u = -z / n
    elif loss == "contrastive":
        logits = u @ z.T / temperature
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        value = float(-np.log(p[np.arange(n), np.arange(n)]).mean())
        g = p.copy()
        g[np.arange(n), np.arange(n)] -= 1.0
        grad_u = g @ z / (temperature * n)
        grad_v = (grad_u - u * (u * grad_u).sum(axis=1, keepdims=True)) / nv
        return value, grad_v
    else:
        raise ValueError(f"loss={loss!r} is invalid; choose one of {list(LOSSES)}")
    value = float((1.0 - c).mean())
    grad_v = (grad_u - u * (u * grad_u).sum(axis=1, keepdims=True)) / nv
    return value, grad_v


def _torch_loss(v: Any, y: Any, loss: str, temperature: float) -> Any:
    import torch
    import torch.nn.functional as F

    if loss == "mse":
        return ((v - y) ** 2).mean()
    if loss == "cosine":
        return (1.0 - F.cosine_similarity(v, y, dim=1, eps=1e-12)).mean()
    u = F.normalize(v, dim=1, eps=1e-12)
    z = F.normalize(y, dim=1, eps=1e-12)
    logits = u @ z.T / temperature
    return F.cross_entropy(logits, torch.arange(len(v)))


def batch_loss(
    rows: np.ndarray,
    flat: np.ndarray,
    offsets: np.ndarray,
    targets: np.ndarray,
    loss: str,
    *,
    temperature: float = CONTRASTIVE_TEMPERATURE,
) -> tuple[float, np.ndarray]:
    """The training's loss of one batch and its gradient with respect to ``rows`` (torch).

    Parameters
    ----------
    rows : ndarray of shape (V, d)
    flat, offsets : ndarray
        The batch's sentences, as :func:`flatten_ids`.
    targets : ndarray of shape (n, d)
    loss : {"cosine", "mse", "contrastive"}

    Returns
    -------
    value : float
    grad : ndarray of shape (V, d), float64
    """
    import torch

    table = torch.nn.EmbeddingBag.from_pretrained(
        torch.as_tensor(np.asarray(rows, dtype=np.float64)), freeze=False, mode="mean"
    )
    v = table(torch.as_tensor(flat), torch.as_tensor(offsets[:-1]))
    value = _torch_loss(
        v, torch.as_tensor(np.asarray(targets, dtype=np.float64)), loss, temperature
    )
    value.backward()
    grad = table.weight.grad
    if grad is None:  # the rows are a leaf with requires_grad: backward always fills it
        raise RuntimeError("the loss did not reach the rows")
    return value.item(), grad.numpy().copy()


def train_rows(
    rows: np.ndarray,
    flat: np.ndarray,
    offsets: np.ndarray,
    targets: np.ndarray,
    *,
    loss: str = "cosine",
    epochs: int = 1,
    batch_size: int = 1024,
    learning_rate: float = 1e-3,
    temperature: float = CONTRASTIVE_TEMPERATURE,
    seed: int = 0,
    show_progress_bar: bool | None = None,
) -> tuple[np.ndarray, TrainingLog]:
    """Train ``rows`` so that each sentence's mean row predicts its target.

    Parameters
    ----------
    rows : ndarray of shape (V, d)
        Initial rows (not modified).
    flat, offsets : ndarray
        Sentences as :func:`flatten_ids`; sentences without tokens must be left out first.
    targets : ndarray of shape (n, d)
    loss : {"cosine", "mse", "contrastive"}
    epochs, batch_size, learning_rate, temperature, seed
        Adam (sparse: only the rows of a batch's tokens move) over shuffled mini-batches;
        ``learning_rate`` is relative to the root mean square of the initial rows, decayed
        linearly to 0.
    show_progress_bar : bool, optional

    Returns
    -------
    rows : ndarray of shape (V, d), float32
    log : TrainingLog

    Raises
    ------
    ValueError
        Unknown loss, shapes that disagree, a sentence without tokens.
    """
    import torch

    if loss not in LOSSES:
        raise ValueError(f"loss={loss!r} is invalid; choose one of {list(LOSSES)}")
    n = len(offsets) - 1
    if targets.shape[0] != n or targets.shape[1] != rows.shape[1]:
        raise ValueError(
            f"targets of shape {targets.shape} do not fit {n} sentences and rows of "
            f"dimension {rows.shape[1]}"
        )
    lengths = np.diff(offsets)
    if n == 0 or (lengths <= 0).any():
        raise ValueError("every training sentence needs at least one token (none given: n == 0)")
    threads = torch.get_num_threads()
    try:
        # the batches are small sparse updates: one thread is as fast on a quiet machine and
        # does not stall in thread barriers on a busy one
        torch.set_num_threads(1)
        return _train(
            rows,
            flat,
            offsets,
            targets,
            loss,
            epochs,
            batch_size,
            learning_rate,
            temperature,
            seed,
            show_progress_bar,
        )
    finally:
        torch.set_num_threads(threads)


def _train(
    rows: np.ndarray,
    flat: np.ndarray,
    offsets: np.ndarray,
    targets: np.ndarray,
    loss: str,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    temperature: float,
    seed: int,
    show_progress_bar: bool | None,
) -> tuple[np.ndarray, TrainingLog]:
    import torch

    n = len(offsets) - 1
    lengths = np.diff(offsets)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    start = np.asarray(rows, dtype=np.float32)
    scale = float(np.sqrt(np.mean(np.square(start, dtype=np.float64))))
    table = torch.nn.EmbeddingBag.from_pretrained(
        torch.as_tensor(start).clone(), freeze=False, mode="mean", sparse=True
    )
    # Adam's steps are about lr per coordinate: relative to the rows' scale, the same
    # learning_rate means the same thing for rows of any magnitude
    opt = torch.optim.SparseAdam(list(table.parameters()), lr=learning_rate * max(scale, 1e-12))
    steps_per_epoch = math.ceil(n / batch_size)
    total = steps_per_epoch * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / total))
    y_all = torch.as_tensor(np.asarray(targets, dtype=np.float32))
    flat_t = torch.as_tensor(flat)
    log = TrainingLog(n_sentences=n, n_tokens=int(offsets[-1]))
    t0 = time.perf_counter()
    bar = progress_bar(total=total, show=show_progress_bar, desc="training rows", unit="batch")
    for _ in range(epochs):
        order = rng.permutation(n)
        run = 0.0
        for b in range(steps_per_epoch):
            idx = order[b * batch_size : (b + 1) * batch_size]
            starts = offsets[idx]
            lens = lengths[idx]
            pos = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
            gather = pos + np.arange(int(lens.sum()))
            bag_offsets = np.concatenate(([0], np.cumsum(lens)[:-1]))
            v = table(flat_t[torch.as_tensor(gather)], torch.as_tensor(bag_offsets))
            value = _torch_loss(v, y_all[torch.as_tensor(idx)], loss, temperature)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            sched.step()
            run += value.item() * len(idx)
            bar.update(1)
        log.losses.append(run / n)
    bar.close()
    log.seconds = time.perf_counter() - t0
    return table.weight.detach().numpy().astype(np.float32), log
