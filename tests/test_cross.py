"""Tests for attention.cross beyond its record in ``tests/table.py`` (which
checks batched outputs against the formula, with the default ``d_context``
(``d_in``) and others)."""

from __future__ import annotations

import pytest
import torch

from attention import CrossAttention, SelfAttention_v2


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
