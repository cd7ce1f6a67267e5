"""Tests for attention.self_attention: trainable self-attention (section 3.4)."""

from __future__ import annotations

import pytest
import torch
from checks import assert_gradcheck, assert_printed

from attention import SelfAttention_v1, SelfAttention_v2, copy_weights_v2_to_v1

# Printed in section 3.4.1 (seed 123, torch.rand weights, d_in=3, d_out=2).
QUERY_2 = [0.4306, 1.4551]
KEY_2 = [0.4433, 1.1419]
VALUE_2 = [0.3951, 1.0037]
ATTN_SCORE_22 = 1.8524
ATTN_SCORES_2 = [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]
ATTN_WEIGHTS_2 = [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]
CONTEXT_VEC_2 = [0.3061, 0.8210]

# Printed in section 3.4.2.
SA_V1_SEED_123 = [
    [0.2996, 0.8053],
    [0.3061, 0.8210],
    [0.3058, 0.8203],
    [0.2948, 0.7939],
    [0.2927, 0.7891],
    [0.2990, 0.8040],
]
SA_V2_SEED_789 = [
    [-0.0739, 0.0713],
    [-0.0748, 0.0703],
    [-0.0749, 0.0702],
    [-0.0760, 0.0685],
    [-0.0763, 0.0679],
    [-0.0754, 0.0693],
]


# --- parity with the chapter's printouts -------------------------------------


def test_step_by_step_numbers_of_section_3_4_1(inputs: torch.Tensor) -> None:
    torch.manual_seed(123)
    W_query, W_key, W_value = (torch.rand(3, 2) for _ in range(3))
    x_2 = inputs[1]
    query_2 = x_2 @ W_query
    assert_printed(query_2, QUERY_2)
    assert_printed(x_2 @ W_key, KEY_2)
    assert_printed(x_2 @ W_value, VALUE_2)

    keys = inputs @ W_key  # (6, 3) @ (3, 2) -> (6, 2)
    values = inputs @ W_value
    assert_printed(query_2.dot(keys[1]), ATTN_SCORE_22)
    attn_scores_2 = query_2 @ keys.T
    assert_printed(attn_scores_2, ATTN_SCORES_2)
    attn_weights_2 = torch.softmax(attn_scores_2 / keys.shape[-1] ** 0.5, dim=-1)
    assert_printed(attn_weights_2, ATTN_WEIGHTS_2)
    assert_printed(attn_weights_2 @ values, CONTEXT_VEC_2)


def test_v1_draws_its_weights_in_the_chapters_order(inputs: torch.Tensor) -> None:
    torch.manual_seed(123)
    expected = [torch.rand(3, 2) for _ in range(3)]
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    for param, want in zip(
        (sa_v1.W_query, sa_v1.W_key, sa_v1.W_value), expected, strict=True
    ):
        torch.testing.assert_close(param.detach(), want, rtol=0, atol=0)
    assert_printed(inputs[1] @ sa_v1.W_query, QUERY_2)


def test_self_attention_v1_seed_123(inputs: torch.Tensor) -> None:
    torch.manual_seed(123)
    out = SelfAttention_v1(d_in=3, d_out=2)(inputs)
    assert out.shape == (6, 2)
    assert_printed(out, SA_V1_SEED_123)
    assert_printed(out[1], CONTEXT_VEC_2)  # row 2 is the step-by-step z^(2)


def test_self_attention_v2_seed_789(inputs: torch.Tensor) -> None:
    torch.manual_seed(789)
    out = SelfAttention_v2(d_in=3, d_out=2)(inputs)
    assert out.shape == (6, 2)
    assert_printed(out, SA_V2_SEED_789)


# --- equivalences -----------------------------------------------------------------


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
