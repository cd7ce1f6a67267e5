"""Tests for attention.cross: cross-attention between two sequences."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention import CrossAttention, SelfAttention_v2, example_inputs


def _pair(b=None, t_q=6, t_kv=8, d_in=3, d_context=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    lead = () if b is None else (b,)
    x = torch.rand(*lead, t_q, d_in, generator=g)
    context = torch.rand(*lead, t_kv, d_context, generator=g)
    return x, context


def test_attending_to_itself_is_self_attention_v2_exactly():
    torch.manual_seed(123)
    sa_v2 = SelfAttention_v2(3, 2)
    cross = CrossAttention(3, 2)
    cross.load_state_dict(sa_v2.state_dict())
    x = example_inputs()
    assert torch.equal(cross(x, x), sa_v2(x))


def test_same_seed_draws_the_same_weights_as_self_attention_v2():
    torch.manual_seed(7)
    sa_v2 = SelfAttention_v2(4, 3, qkv_bias=True)
    torch.manual_seed(7)
    cross = CrossAttention(4, 3, qkv_bias=True)
    for (name_a, a), (name_b, b) in zip(
        sa_v2.state_dict().items(), cross.state_dict().items(), strict=True
    ):
        assert name_a == name_b
        assert torch.equal(a, b)


def test_batched_self_attending_matches_self_attention_v2_per_sample():
    torch.manual_seed(1)
    sa_v2 = SelfAttention_v2(5, 4)
    cross = CrossAttention(5, 4)
    cross.load_state_dict(sa_v2.state_dict())
    x = torch.rand(3, 7, 5)
    expected = torch.stack([sa_v2(sample) for sample in x])
    torch.testing.assert_close(cross(x, x), expected)


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize(
    ("b", "t_q", "t_kv", "d_in", "d_context", "d_out"),
    [
        (None, 6, 8, 3, 3, 2),  # the page's example
        (None, 1, 1, 2, 5, 3),
        (2, 4, 9, 3, 7, 6),
        (3, 10, 2, 8, 8, 1),
    ],
)
def test_output_shape_follows_the_query_length(
    b, t_q, t_kv, d_in, d_context, d_out, qkv_bias
):
    torch.manual_seed(0)
    cross = CrossAttention(d_in, d_out, qkv_bias=qkv_bias, d_context=d_context)
    x, context = _pair(b, t_q, t_kv, d_in, d_context)
    lead = () if b is None else (b,)
    assert cross(x, context).shape == (*lead, t_q, d_out)


@pytest.mark.parametrize("b", [None, 2])
def test_matches_scaled_dot_product_attention(b):
    torch.manual_seed(3)
    cross = CrossAttention(4, 6, qkv_bias=True, d_context=5)
    x, context = _pair(b, 3, 9, 4, 5)
    expected = F.scaled_dot_product_attention(
        cross.W_query(x), cross.W_key(context), cross.W_value(context)
    )
    torch.testing.assert_close(cross(x, context), expected)


def test_changing_the_context_changes_every_output_row():
    torch.manual_seed(0)
    cross = CrossAttention(3, 4, d_context=5)
    x, context = _pair(None, 6, 8, 3, 5)
    before = cross(x, context)
    other = context.clone()
    other[2] += 1.0  # one context token only
    after = cross(x, other)
    assert (before - after).abs().amax(dim=-1).gt(1e-6).all()


def test_changing_one_query_token_changes_only_its_row():
    torch.manual_seed(0)
    cross = CrossAttention(3, 4, d_context=5)
    x, context = _pair(2, 6, 8, 3, 5)
    before = cross(x, context)
    other = x.clone()
    other[1, 4] += 1.0  # sample 1, query token 4
    after = cross(other, context)
    changed = (before - after).abs().amax(dim=-1) > 0
    expected = torch.zeros(2, 6, dtype=torch.bool)
    expected[1, 4] = True
    assert torch.equal(changed, expected)


def test_each_row_of_the_output_is_a_mix_of_the_context_values():
    # The weights sum to 1, so every output lies in the values' bounding box.
    torch.manual_seed(0)
    cross = CrossAttention(3, 4, d_context=5)
    x, context = _pair(None, 6, 8, 3, 5)
    values = cross.W_value(context)
    out = cross(x, context)
    assert (out <= values.amax(dim=0) + 1e-6).all()
    assert (out >= values.amin(dim=0) - 1e-6).all()


def test_gradients_reach_both_sequences_and_every_weight():
    torch.manual_seed(0)
    cross = CrossAttention(3, 4, qkv_bias=True, d_context=5)
    x, context = _pair(2, 6, 8, 3, 5)
    x.requires_grad_(True)
    context.requires_grad_(True)
    cross(x, context).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert context.grad is not None and context.grad.abs().sum() > 0
    for name, p in cross.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_default_context_width_is_d_in():
    cross = CrossAttention(3, 2)
    assert cross.d_context == 3
    assert cross.W_key.in_features == 3
    assert CrossAttention(3, 2, d_context=9).W_value.in_features == 9


@pytest.mark.parametrize(
    ("x", "context", "message"),
    [
        (torch.rand(6, 4), torch.rand(8, 5), "with x of width 3; got x (6, 4)"),
        (
            torch.rand(6, 3),
            torch.rand(8, 3),
            "with context of width 5; got x (6, 3) and context (8, 3)",
        ),
        (torch.rand(2, 6, 3), torch.rand(3, 8, 5), "same batch size, got 2 and 3"),
        (torch.rand(2, 6, 3), torch.rand(8, 5), "both (batch, num_tokens, width)"),
        (torch.rand(6, 3), torch.rand(1, 8, 5), "got x (6, 3) and context (1, 8, 5)"),
        (torch.rand(3), torch.rand(8, 5), "got x (3,) and context (8, 5)"),
        (torch.rand(1, 2, 6, 3), torch.rand(1, 2, 8, 5), "got x (1, 2, 6, 3)"),
        (torch.rand(6, 3), torch.rand(0, 5), "at least one token"),
        ([[0.0, 0.0, 0.0]], torch.rand(8, 5), "x must be a torch.Tensor, got list"),
        (torch.rand(6, 3), None, "context must be a torch.Tensor, got NoneType"),
        (torch.tensor([[0, 4, 5]]), torch.rand(8, 5), "x must hold floating-point"),
        (torch.rand(6, 3), torch.ones(8, 5, dtype=torch.long), "context must hold"),
        (
            torch.rand(6, 3, dtype=torch.float64),
            torch.rand(8, 5),
            "weights and x must have the same dtype",
        ),
        (
            torch.rand(6, 3),
            torch.rand(8, 5).half(),
            "context must have the same dtype and device, got torch.float32 on cpu "
            "and torch.float16",
        ),
    ],
)
def test_bad_inputs_raise_clear_errors(x, context, message):
    cross = CrossAttention(3, 2, d_context=5)
    with pytest.raises(ValueError) as info:
        cross(x, context)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_in": 0, "d_out": 2}, "d_in must be a positive integer"),
        ({"d_in": 3, "d_out": -1}, "d_out must be a positive integer"),
        ({"d_in": 3, "d_out": 2, "d_context": 0}, "d_context must be a positive"),
    ],
)
def test_bad_sizes_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CrossAttention(**kwargs)


def test_a_float64_module_takes_float64_inputs():
    torch.manual_seed(0)
    cross = CrossAttention(3, 2, d_context=5).to(torch.float64)
    x, context = _pair(2, 6, 8, 3, 5)
    out = cross(x.double(), context.double())
    assert out.dtype == torch.float64
    assert out.shape == (2, 6, 2)
