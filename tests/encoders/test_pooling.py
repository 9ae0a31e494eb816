"""Tests for sentvec.encoders.pooling against pure-numpy oracles."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sentvec.encoders.pooling import (  # noqa: E402
    POOLING_MODES,
    average_layers,
    cls_pool,
    max_pool,
    mean_pool,
    normalize_layers,
    pool,
    pool_all_layers,
    pool_layers,
)


def _batch(seed=0, B=4, T=7, d=5, left=False):
    """Random hidden states with ragged right (or left) padding; padding holds huge values."""
    rng = np.random.default_rng(seed)
    lengths = np.array([T, 1, 3, 5][:B])
    mask = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate(lengths):
        if left:
            mask[b, T - n :] = 1
        else:
            mask[b, :n] = 1
    hidden = rng.standard_normal((B, T, d)).astype(np.float32)
    hidden[mask == 0] = 1e4  # padding must never leak into the result
    return hidden, mask


def _np_mean(hidden, mask, eps=0.0):
    m = mask[..., None].astype(np.float64)
    return (hidden * m).sum(1) / (m.sum(1) + eps)


def _np_max(hidden, mask):
    out = np.empty((hidden.shape[0], hidden.shape[2]))
    for b in range(hidden.shape[0]):
        out[b] = hidden[b, mask[b] == 1].max(axis=0)
    return out


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


@pytest.mark.parametrize("left", [False, True])
def test_mean_pool_is_exact_masked_mean(left):
    hidden, mask = _batch(left=left)
    got = mean_pool(_t(hidden), _t(mask)).numpy()
    np.testing.assert_allclose(got, _np_mean(hidden, mask), rtol=1e-5, atol=1e-6)
    assert got.shape == (4, 5) and got.dtype == np.float32


def test_mean_pool_paper_mode_divides_by_n_plus_001():
    hidden, mask = _batch(seed=1)
    got = mean_pool(_t(hidden), _t(mask), mean_mode="paper").numpy()
    np.testing.assert_allclose(got, _np_mean(hidden, mask, eps=0.01), rtol=1e-5, atol=1e-6)
    # hand-computed: one token of value 2.0 -> 2 / 1.01
    one = mean_pool(torch.full((1, 2, 1), 2.0), torch.tensor([[1, 0]]), mean_mode="paper")
    assert one.item() == pytest.approx(2.0 / 1.01, rel=1e-6)


@pytest.mark.parametrize("left", [False, True])
def test_max_pool_ignores_padding(left):
    hidden, mask = _batch(seed=2, left=left)
    got = max_pool(_t(hidden), _t(mask)).numpy()
    np.testing.assert_allclose(got, _np_max(hidden, mask), rtol=0, atol=0)
    assert got.max() < 1e4


def test_max_pool_padding_never_wins_even_when_all_real_tokens_negative():
    hidden = torch.tensor([[[-5.0, -1.0], [-2.0, -3.0], [0.0, 0.0]]])  # last position padding
    mask = torch.tensor([[1, 1, 0]])
    np.testing.assert_array_equal(max_pool(hidden, mask).numpy(), [[-2.0, -1.0]])


@pytest.mark.parametrize("left", [False, True])
def test_cls_pool_takes_first_real_token(left):
    hidden, mask = _batch(seed=3, left=left)
    first = mask.argmax(axis=1)
    want = hidden[np.arange(4), first]
    np.testing.assert_array_equal(cls_pool(_t(hidden), _t(mask)).numpy(), want)
    if not left:
        np.testing.assert_array_equal(want, hidden[:, 0])


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_pooling_does_not_modify_inputs(mode):
    hidden, mask = _batch(seed=4)
    h, m = _t(hidden.copy()), _t(mask.copy())
    pool(h, m, mode)
    pool_all_layers([h, h * 2], m, mode)
    np.testing.assert_array_equal(h.numpy(), hidden)
    np.testing.assert_array_equal(m.numpy(), mask)


def test_unknown_pooling_lists_options():
    hidden, mask = _batch()
    with pytest.raises(
        ValueError, match=r"pooling='avg' is invalid; expected one of \['cls', 'max', 'mean'\]"
    ):
        pool(_t(hidden), _t(mask), "avg")
    with pytest.raises(ValueError, match="mean_mode"):
        mean_pool(_t(hidden), _t(mask), mean_mode="approx")


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="attention_mask shape"):
        mean_pool(torch.zeros(2, 3, 4), torch.ones(2, 4))
    with pytest.raises(ValueError, match="batch, seq_len, hidden"):
        mean_pool(torch.zeros(2, 3), torch.ones(2, 3))


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_pool_all_layers_equals_pooling_each_layer(mode):
    rng = np.random.default_rng(5)
    _, mask = _batch()
    layers = [_t(rng.standard_normal((4, 7, 5)).astype(np.float32)) for _ in range(3)]
    got = pool_all_layers(layers, _t(mask), mode)
    assert got.shape == (4, 3, 5)
    for i, h in enumerate(layers):
        np.testing.assert_array_equal(got[:, i].numpy(), pool(h, _t(mask), mode).numpy())


def test_average_layers_and_pool_layers():
    rng = np.random.default_rng(6)
    _, mask = _batch()
    raw = [rng.standard_normal((4, 7, 5)).astype(np.float32) for _ in range(4)]
    layers = [_t(x) for x in raw]
    avg = average_layers(layers, (1, -1)).numpy()
    np.testing.assert_allclose(avg, (raw[1] + raw[3]) / 2, rtol=1e-6, atol=1e-6)
    for mode in POOLING_MODES:
        per = [pool(layers[i], _t(mask), mode).numpy() for i in (1, 3)]
        got = pool_layers(layers, _t(mask), mode, (1, -1)).numpy()
        np.testing.assert_allclose(got, (per[0] + per[1]) / 2, rtol=1e-6, atol=1e-6)
    # mean and cls are linear: averaging tokens first gives the same sentence vector
    for mode in ("mean", "cls"):
        a = pool(_t(avg), _t(mask), mode).numpy()
        b = pool_layers(layers, _t(mask), mode, (1, 3)).numpy()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # mean of L1 and L_last equals a numpy masked mean of the averaged layers
    np.testing.assert_allclose(
        pool_layers(layers, _t(mask), "mean", (1, 3)).numpy(),
        _np_mean((raw[1] + raw[3]) / 2, mask),
        rtol=1e-5,
        atol=1e-6,
    )


def test_normalize_layers():
    assert normalize_layers((1, -1), 13) == (1, 12)
    assert normalize_layers(-13, 13) == (0,)
    assert normalize_layers([np.int64(2), 0], 7) == (2, 0)
    with pytest.raises(ValueError, match=r"valid hidden_states indices are -7\.\.6"):
        normalize_layers((1, 7), 7)
    with pytest.raises(ValueError, match=r"-7\.\.6"):
        normalize_layers((-8,), 7)
    with pytest.raises(ValueError, match="more than once"):
        normalize_layers((6, -1), 7)
    with pytest.raises(ValueError, match="at least one"):
        normalize_layers((), 7)
    with pytest.raises(ValueError, match="not an integer"):
        normalize_layers((1.5,), 7)
