"""FlashAttention from scratch (attention.flash): what the table's records
(``tests/table.py``: each function equals the formula) do not reach, such as
skipped tiles, gradients through autograd and the saved tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention
from attention import (
    FlashAttentionFunction,
    FlashMultiHeadAttention,
    MultiHeadAttention,
    copy_weights,
    flash_attention,
)

F64 = {"atol": 1e-12, "rtol": 1e-10}


def qkv(shape, num_keys=None):
    """Seeded float64 queries, keys and values ``(..., T, hd)``; ``num_keys`` keys."""
    gen = torch.Generator().manual_seed(0)
    *lead, t, hd = shape
    q = torch.randn(*lead, t, hd, generator=gen, dtype=torch.float64)
    k = torch.randn(*lead, num_keys or t, hd, generator=gen, dtype=torch.float64)
    v = torch.randn(*lead, num_keys or t, hd, generator=gen, dtype=torch.float64)
    return q, k, v


# --- attention over tiles ---------------------------------------------------------


@pytest.mark.parametrize("tile_index", [0, 1, 2])
def test_causal_tiles_above_the_diagonal_are_never_computed(tile_index: int) -> None:
    # NaN in every key and value that lies wholly in the future of query tile
    # `tile_index`. Masking alone would not keep it out: a masked weight is 0,
    # and 0 * NaN is NaN. Only skipping those tiles gives finite outputs.
    tile, t = 4, 16
    q, k, v = qkv((1, 2, t, 8))
    end = (tile_index + 1) * tile  # one past the tile's last query
    k_nan, v_nan = (x.index_fill(-2, torch.arange(end, t), torch.nan) for x in (k, v))
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
    torch.testing.assert_close(grads, expected_grads, **F64)  # items 0, 1, 2: q, k, v


# --- the class ------------------------------------------------------------------------


def test_class_with_its_default_tiles_at_a_length_they_do_not_divide() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(32, 32, 200, 0.0, 4).eval()
    flash = FlashMultiHeadAttention(32, 32, 200, 0.0, 4).eval()
    copy_weights(mha, flash)
    assert flash.tile_size == 64
    x = torch.randn(2, 150, 32)  # tiles of 64, 64 and 22 tokens
    torch.testing.assert_close(flash(x), mha(x), atol=1e-5, rtol=1e-5)


# --- the backward pass, step by step ------------------------------------------------


def test_blind_queries_get_zero_gradient_not_nan() -> None:
    q, k, v = (t.requires_grad_() for t in qkv((1, 7, 4), num_keys=5))
    out, _ = FlashAttentionFunction.apply(q, k, v, True, 3)  # 2 queries see no key
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in grads)
    assert (grads[0][:, :2] == 0).all()


@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
@pytest.mark.parametrize("t_q", [3, 5], ids=["Tq<Tk", "Tq=Tk"])
def test_gradcheck_of_the_function(t_q: int, causal: bool) -> None:
    q, k, v = (t.requires_grad_() for t in qkv((1, 2, t_q, 3), num_keys=5))
    assert torch.autograd.gradcheck(
        lambda q, k, v: FlashAttentionFunction.apply(q, k, v, causal, 2)[0], (q, k, v)
    )


def test_the_function_saves_q_k_v_o_and_l_only() -> None:
    saved = []
    q, k, v = (t.requires_grad_() for t in qkv((2, 3, 40, 4)))
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved.append(tuple(t.shape)) or t, lambda t: t
    ):
        FlashAttentionFunction.apply(q, k, v, True, 8)
    assert saved == [(2, 3, 40, 4)] * 4 + [(2, 3, 40)]  # Q, K, V, O, L


@pytest.mark.parametrize("tile_size", [1, 3, 5, 9, 64])
@pytest.mark.parametrize(
    ("b", "t", "d_in", "d_out", "h"),
    [(2, 11, 6, 8, 2), (1, 14, 4, 12, 3), (1, 7, 5, 3, 1)],
    ids=["two-heads", "three-heads", "batch-and-head-of-one"],
)
def test_class_equals_the_chapters_in_outputs_and_gradients(
    b, t, d_in, d_out, h, tile_size
) -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_in, d_out, 16, 0.0, h, qkv_bias=True).double()
    flash = FlashMultiHeadAttention(d_in, d_out, 16, 0.0, h, qkv_bias=True).double()
    copy_weights(mha, flash)
    flash.tile_size = tile_size
    x = torch.randn(b, t, d_in, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(b, t, d_out, dtype=torch.float64)
    out = flash(x)
    torch.testing.assert_close(out, mha(x), **F64)
    grads = torch.autograd.grad(out, (x, *flash.parameters()), grad_out)
    ref = torch.autograd.grad(mha(x), (x, *mha.parameters()), grad_out)
    # qkv = [W_query; W_key; W_value] stacked by rows, weight then bias
    q_w, q_b, k_w, k_b, v_w, v_b, out_w, out_b = ref[1:]
    expected = (ref[0], torch.cat((q_w, k_w, v_w)), torch.cat((q_b, k_b, v_b)))
    expected += (out_w, out_b)
    torch.testing.assert_close(grads, expected, atol=1e-10, rtol=0)


def test_tile_backward_gives_zero_gradients_to_a_query_that_sees_no_key():
    # Three queries, two keys, causal bottom-right: query 0 sees no key, so
    # flash_attention gives it a zero output and L = -inf. One tile pair's
    # backward must give it zero gradients too, as autograd does, and leave
    # the other queries' gradients as they are (no nan spreads to dK, dV).
    q, k, v = (t.requires_grad_() for t in qkv((3, 4), num_keys=2))
    out, lse = flash_attention(q, k, v, causal=True)
    assert lse[0] == -torch.inf and torch.equal(out[0], torch.zeros(4).double())
    grad_out = torch.randn(3, 4, generator=torch.Generator().manual_seed(1)).double()
    expected = torch.autograd.grad(out, (q, k, v), grad_out)
    future = torch.arange(2) > torch.arange(3)[:, None] - 1  # key j > query i - 1
    delta = attention.backward_delta(grad_out, out.detach())
    grads = attention.tile_backward(q, k, v, grad_out, lse.detach(), delta, future)
    assert torch.equal(grads[0][0], torch.zeros(4).double())
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, **F64)
