"""Tests for attention.gqa beyond its records in ``tests/table.py`` (each
equals the formula with key/value heads shared by their group)."""

from __future__ import annotations

import pytest
import torch
from helpers import chapter_state, reference_multihead

from attention import (
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    cached_attention,
    count_parameters,
    kv_cache_bytes,
    mean_pool_kv_heads,
)


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize(
    ("d_in", "d_out", "num_heads"), [(3, 2, 2), (4, 8, 4), (6, 6, 1)]
)
def test_with_as_many_kv_heads_as_heads_it_is_multihead_attention(
    d_in, d_out, num_heads, qkv_bias
):
    # The same seed draws the same weights under the same names and shapes, so
    # the chapter's state_dict loads as it is.
    torch.manual_seed(123)
    mha = MultiHeadAttention(d_in, d_out, 8, 0.0, num_heads, qkv_bias)
    torch.manual_seed(123)
    gqa = GroupedQueryAttention(d_in, d_out, 8, 0.0, num_heads, num_heads, qkv_bias)
    assert list(gqa.state_dict()) == list(mha.state_dict())  # names, in order
    torch.testing.assert_close(gqa.state_dict(), mha.state_dict(), rtol=0, atol=0)
    x = torch.rand(2, 6, d_in)
    assert torch.equal(gqa(x), mha(x))


def test_each_group_of_query_heads_shares_one_key_value_head():
    # The record draws 4 heads over 2 only now and then: the quick loop needs this.
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(4, 12, 8, 0.0, num_heads=6, num_kv_heads=2)
    x = torch.rand(2, 6, 4)
    torch.testing.assert_close(gqa(x), reference_multihead(chapter_state(gqa), x, 6, 2))


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_mean_pooling_heads_that_agree_in_each_group_loses_nothing(qkv_bias):
    # An MHA whose key/value heads repeat within each group (neighbours
    # 0 0 0 1 1 1) is a GQA module in disguise: pooling must give it back.
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(4, 12, 8, 0.0, 6, 2, qkv_bias)
    state = gqa.state_dict()
    for name in [n for n in state if n.startswith(("W_key", "W_value"))]:
        # (g * hd, ...) -> (g, hd, ...) -> (h, hd, ...) -> (h * hd, ...)
        heads = state[name].unflatten(0, (2, 2))
        state[name] = heads.repeat_interleave(3, dim=0).flatten(0, 1)
    mha = MultiHeadAttention(4, 12, 8, 0.0, 6, qkv_bias)
    mha.load_state_dict(state)

    pooled = mean_pool_kv_heads(mha, num_kv_heads=2)

    torch.testing.assert_close(pooled.state_dict(), gqa.state_dict())
    x = torch.rand(2, 6, 4)
    torch.testing.assert_close(pooled(x), gqa(x))
    torch.testing.assert_close(mha.state_dict(), state, rtol=0, atol=0)  # untouched


# --- parameters and cache sizes at GPT-2 size --------------------------------------

D, HEADS, HEAD_DIM, CONTEXT = 768, 12, 64, 1024


@pytest.mark.parametrize("num_kv_heads", [12, 4, 1])
def test_gpt2_size_parameters_follow_the_formula(num_kv_heads):
    gqa = GroupedQueryAttention(D, D, CONTEXT, 0.0, HEADS, num_kv_heads)
    kv_width = num_kv_heads * HEAD_DIM
    # W_query and out_proj (with its bias) keep their size; W_key and W_value shrink.
    expected = D * D + 2 * D * kv_width + D * D + D
    assert count_parameters(gqa) == expected


@pytest.mark.parametrize("num_kv_heads", [12, 4, 1])
def test_measured_cache_bytes_follow_the_formula(num_kv_heads):
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(
        64, 48, 16, 0.0, num_heads=12, num_kv_heads=num_kv_heads
    )
    cache = KVCache(16, num_layers=2)
    x = torch.rand(3, 10, 64)
    for layer in range(2):
        cached_attention(gqa, x, cache, layer)
    assert cache.nbytes() == kv_cache_bytes(3, 10, 2, num_kv_heads, 4, 4)
