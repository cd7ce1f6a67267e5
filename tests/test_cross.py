"""Tests for attention.cross beyond its record in ``tests/table.py`` (which
checks batched outputs against the formula, with the default ``d_context``
(``d_in``) and others)."""

from __future__ import annotations

import pytest
import torch

from attention import CrossAttention, SelfAttention_v2, cross_attention_weights


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_same_seed_same_weights_and_attending_to_itself_is_self_attention_v2(
    qkv_bias,
):
    torch.manual_seed(7)
    sa_v2 = SelfAttention_v2(4, 3, qkv_bias=qkv_bias)
    torch.manual_seed(7)
    cross = CrossAttention(4, 3, qkv_bias=qkv_bias)
    assert list(cross.state_dict()) == list(sa_v2.state_dict())  # names, in order
    torch.testing.assert_close(cross.state_dict(), sa_v2.state_dict(), rtol=0, atol=0)
    x = torch.rand(6, 4)
    assert torch.equal(cross(x, x), sa_v2(x))


def test_gradients_reach_both_sequences_and_every_weight():
    torch.manual_seed(0)
    cross = CrossAttention(3, 4, qkv_bias=True, d_context=5)
    x = torch.rand(2, 6, 3, requires_grad=True)
    context = torch.rand(2, 8, 5, requires_grad=True)
    cross(x, context).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert context.grad is not None and context.grad.abs().sum() > 0
    for name, p in cross.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_the_weights_are_those_of_the_module():
    torch.manual_seed(0)
    cross = CrossAttention(3, 4, d_context=5).double()
    x, context = torch.rand(2, 6, 3).double(), torch.rand(2, 8, 5).double()
    with torch.no_grad():
        weights = cross_attention_weights(cross.W_query(x), cross.W_key(context))
        expected = cross(x, context)
        torch.testing.assert_close(weights @ cross.W_value(context), expected)


def test_padding_a_context_further_changes_no_weight_of_a_real_key():
    generator = torch.Generator().manual_seed(1)
    queries = torch.randn(2, 4, 3, generator=generator, dtype=torch.float64)
    keys = torch.randn(2, 5, 3, generator=generator, dtype=torch.float64)
    pads = torch.tensor([[False] * 5, [False, False, True, False, True]])
    weights = cross_attention_weights(queries, keys, pads)
    assert (weights[pads.unsqueeze(-2).expand_as(weights)] == 0).all()
    # The second context alone, without its padded keys
    alone = cross_attention_weights(queries[1], keys[1, ~pads[1]])
    torch.testing.assert_close(weights[1][:, ~pads[1]], alone)
    # Three more pads, of any value: nothing moves
    more = torch.cat((keys, torch.randn(2, 3, 3, dtype=torch.float64) * 50), dim=1)
    more_pads = torch.cat((pads, torch.ones(2, 3, dtype=torch.bool)), dim=1)
    longer = cross_attention_weights(queries, more, more_pads)
    torch.testing.assert_close(longer[..., :5], weights, rtol=0, atol=1e-15)
