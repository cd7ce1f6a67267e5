"""Tests for attention.cross: cross-attention between two sequences."""

from __future__ import annotations

import torch

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
