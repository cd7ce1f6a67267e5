"""FlashAttention from scratch (attention.flash), proven equal to PyTorch.

Every step is compared with PyTorch's own answer: the softmax with
``torch.softmax``, the outputs with ``F.scaled_dot_product_attention``, the
log-sum-exp with the one PyTorch's CPU flash kernel returns, the class with
the chapter's ``MultiHeadAttention``, over tile sizes that do and do not
divide the sequence length, causal and not. What the class shares with every
variant lives in ``tests/test_contract.py``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention import (
    FlashMultiHeadAttention,
    MultiHeadAttention,
    copy_weights,
    flash_attention,
    online_softmax,
    online_softmax_stats,
    softmax_three_pass,
    weights_from_lse,
)

F64 = {"atol": 1e-12, "rtol": 1e-10}


def qkv(shape, seed=0, dtype=torch.float64, num_keys=None):
    """Seeded queries, keys and values ``(..., T, hd)``; keys may be fewer/more."""
    gen = torch.Generator().manual_seed(seed)
    *lead, t, hd = shape
    t_k = t if num_keys is None else num_keys
    q = torch.randn(*lead, t, hd, generator=gen, dtype=dtype)
    k = torch.randn(*lead, t_k, hd, generator=gen, dtype=dtype)
    v = torch.randn(*lead, t_k, hd, generator=gen, dtype=dtype)
    return q, k, v


# --- the softmax, three passes and online ---------------------------------------------


def test_three_pass_softmax_is_torchs_and_does_not_overflow() -> None:
    scores = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 999.0]])
    weights = softmax_three_pass(scores)
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1))
    assert torch.isfinite(weights).all()  # exp(1000) would be inf


@pytest.mark.parametrize("tile_size", [1, 3, 4, 12, 20])
def test_online_stats_equal_the_three_passes(tile_size: int) -> None:
    # Rows whose maximum arrives late, early, or in the middle: a missing
    # rescale of the running sum shows up in the first row.
    rows = torch.stack(
        (
            torch.linspace(-5.0, 30.0, 12),
            torch.linspace(30.0, -5.0, 12),
            torch.randn(12, generator=torch.Generator().manual_seed(3)) * 10,
        )
    ).double()
    m, ell = online_softmax_stats(rows, tile_size)
    torch.testing.assert_close(m, rows.amax(dim=-1, keepdim=True), **F64)
    torch.testing.assert_close(ell, torch.exp(rows - m).sum(-1, keepdim=True), **F64)
    torch.testing.assert_close(online_softmax(rows, tile_size), rows.softmax(-1), **F64)


# --- attention over tiles ---------------------------------------------------------


@pytest.mark.parametrize("tile_index", [0, 1, 2])
def test_causal_tiles_above_the_diagonal_are_never_computed(tile_index: int) -> None:
    # NaN in every key and value that lies wholly in the future of query tile
    # `tile_index`. Masking alone would not keep it out: a masked weight is 0,
    # and 0 * NaN is NaN. Only skipping those tiles gives finite outputs.
    tile, t = 4, 16
    q, k, v = qkv((1, 2, t, 8))
    end = (tile_index + 1) * tile  # one past the tile's last query
    k_nan, v_nan = k.clone(), v.clone()
    k_nan[..., end:, :] = torch.nan
    v_nan[..., end:, :] = torch.nan
    out, lse = flash_attention(q, k_nan, v_nan, causal=True, tile_size=tile)
    expected, expected_lse = flash_attention(q, k, v, causal=True, tile_size=tile)
    torch.testing.assert_close(out[..., :end, :], expected[..., :end, :], **F64)
    torch.testing.assert_close(lse[..., :end], expected_lse[..., :end], **F64)


@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_gradients_through_the_tiles_equal_sdpas(causal: bool) -> None:
    q, k, v = (t.requires_grad_() for t in qkv((2, 2, 11, 4)))
    grad_out = torch.randn(2, 2, 11, 4, dtype=torch.float64)
    out, _ = flash_attention(q, k, v, causal=causal, tile_size=3)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    expected_grads = torch.autograd.grad(expected, (q, k, v), grad_out)
    for name, grad, ref in zip("qkv", grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, ref, **F64, msg=name)


# --- the log-sum-exp: what the backward pass needs ------------------------------------


@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_weights_are_recomputed_from_the_log_sum_exp(causal: bool) -> None:
    q, k, v = qkv((2, 3, 12, 8))
    _, lse = flash_attention(q, k, v, causal=causal, tile_size=4)
    scores = q @ k.transpose(-2, -1) / 8**0.5
    if causal:
        scores = scores.masked_fill(torch.ones(12, 12).triu(1).bool(), -torch.inf)
    weights = scores.softmax(dim=-1)  # (b, h, T, T), the full matrix
    # A tile wholly below the diagonal: queries 8..11, keys 0..3.
    tile = weights_from_lse(q[..., 8:12, :], k[..., 0:4, :], lse[..., 8:12])
    torch.testing.assert_close(tile, weights[..., 8:12, 0:4], **F64)


# --- the class ------------------------------------------------------------------------


@pytest.mark.parametrize("tile_size", [1, 3, 5, 9, 64])
@pytest.mark.parametrize(
    ("b", "t", "d_in", "d_out", "h"),
    [(2, 9, 6, 8, 2), (1, 14, 4, 12, 3), (3, 5, 5, 5, 1)],
    ids=["d_in<d_out", "three-heads", "one-head"],
)
def test_class_equals_multihead_attention_for_any_tile_size(
    b, t, d_in, d_out, h, tile_size: int
) -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_in, d_out, 16, 0.0, h, qkv_bias=True).double()
    flash = FlashMultiHeadAttention(d_in, d_out, 16, 0.0, h, qkv_bias=True).double()
    copy_weights(mha, flash)
    flash.tile_size = tile_size
    x = torch.randn(b, t, d_in, dtype=torch.float64, requires_grad=True)
    out = flash(x)
    torch.testing.assert_close(out, mha(x), **F64)
    (dx,) = torch.autograd.grad(out.sum(), x)
    (dx_ref,) = torch.autograd.grad(mha(x).sum(), x)
    torch.testing.assert_close(dx, dx_ref, **F64)


def test_class_with_its_default_tiles_at_a_length_they_do_not_divide() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(32, 32, 200, 0.0, 4).eval()
    flash = FlashMultiHeadAttention(32, 32, 200, 0.0, 4).eval()
    copy_weights(mha, flash)
    assert flash.tile_size == 64
    x = torch.randn(2, 150, 32)  # tiles of 64, 64 and 22 tokens
    torch.testing.assert_close(flash(x), mha(x), atol=1e-5, rtol=1e-5)
