"""Tests for attention.cross beyond its record in ``tests/table.py`` (which
checks batched outputs against the formula, ``d_context != d_in`` included)."""

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
