"""Tests for attention.self_attention: trainable self-attention (section 3.4).

The chapter's outputs of both classes (seeds 123 and 789) are their doctests;
each class equals its formula in the records of ``tests/table.py``.
"""

from __future__ import annotations

import pytest
import torch
from helpers import assert_gradcheck

from attention import SelfAttention_v1, SelfAttention_v2, copy_weights_v2_to_v1


def test_copy_weights_copies_rather_than_aliases() -> None:
    torch.manual_seed(0)
    sa_v2, sa_v1 = SelfAttention_v2(3, 2), SelfAttention_v1(3, 2)
    copy_weights_v2_to_v1(sa_v2, sa_v1)
    assert isinstance(sa_v1.W_query, torch.nn.Parameter)
    x = torch.randn(4, 3)
    before = sa_v1(x).detach().clone()
    with torch.no_grad():
        sa_v2.W_query.weight.add_(1.0)
    torch.testing.assert_close(sa_v1(x), before)


def test_qkv_bias_adds_one_bias_per_projection() -> None:
    without = SelfAttention_v2(3, 2)
    with_bias = SelfAttention_v2(3, 2, qkv_bias=True)
    assert all(layer.bias is None for layer in (without.W_query, without.W_key))
    names = {name for name, _ in with_bias.named_parameters()}
    assert {"W_query.bias", "W_key.bias", "W_value.bias"} <= names
    assert sum(p.numel() for p in with_bias.parameters()) == 3 * (3 * 2 + 2)


@pytest.mark.parametrize("cls", [SelfAttention_v1, SelfAttention_v2])
def test_gradcheck(cls: type) -> None:
    torch.manual_seed(6)
    module = cls(3, 2).double()
    assert_gradcheck(module.eval(), torch.randn(4, 3, dtype=torch.float64))
