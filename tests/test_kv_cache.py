"""Tests for attention.kv_cache beyond its records in ``tests/table.py`` (cached
and plain generation, chunked prefill and decode steps each equal the formula,
row by row, left-padded or not, with or without positions, logits at every
position, so a cache that let a token see the future or a pad would fail
them): a full context, gradients and dropout."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from attention import (
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    TinyAttentionModel,
    cached_attention,
    decode_step,
    generate_greedy,
    generate_greedy_cached,
    kv_cache_bytes,
)


def _logit_gap(model, prompt, max_new):
    """Largest difference between the logits of plain and cached generation."""
    plain = generate_greedy(model, prompt, max_new)[1]
    cached = generate_greedy_cached(model, prompt, max_new)[1]
    return (plain - cached).abs().max().item()


def _without_causal_mask(model):
    model = copy.deepcopy(model)
    for layer in model.layers:
        layer.mask.zero_()  # every layer may look at future tokens
    return model


@pytest.mark.parametrize("num_layers", [2, 3])
def test_the_causal_mask_is_what_makes_the_cache_valid(num_layers):
    # From two layers on, a layer's keys are made from the outputs of the one
    # below: without the mask those change with every new token, and the
    # cache keeps stale ones. Cached against uncached catches it.
    torch.manual_seed(0)
    model = TinyAttentionModel(20, 16, 24, 2, num_layers=num_layers).eval()
    prompt = torch.randint(20, (2, 5), generator=torch.Generator().manual_seed(1))
    assert _logit_gap(model, prompt, 8) < 1e-5
    assert _logit_gap(_without_causal_mask(model), prompt, 8) > 1e-3


def test_one_layer_cannot_tell_a_missing_mask():
    # Why the test above needs two layers: one layer's keys come from the
    # embeddings, and its last position sees the whole past either way.
    torch.manual_seed(0)
    model = TinyAttentionModel(20, 16, 24, 2).eval()
    prompt = torch.randint(20, (2, 5), generator=torch.Generator().manual_seed(1))
    assert _logit_gap(_without_causal_mask(model), prompt, 8) < 1e-5


def test_a_cache_reused_for_a_second_prompt_continues_the_first():
    torch.manual_seed(0)
    model = TinyAttentionModel(20, 16, 24, 2, num_layers=2).eval()
    first, second = torch.tensor([[3, 1, 4]]), torch.tensor([[5, 9]])
    with torch.no_grad():
        cache = KVCache(24, num_layers=2)
        decode_step(model, first, cache)
        reused = decode_step(model, second, cache)
        joined = model(torch.cat((first, second), dim=1))[:, 3:]
        alone = model(second)
    torch.testing.assert_close(reused, joined)
    assert not torch.allclose(reused, alone, atol=1e-4)


def test_a_prompt_that_fills_the_context_gets_one_token():
    torch.manual_seed(0)
    model = TinyAttentionModel(11, 16, 12, 4, num_layers=2).double().eval()
    prompt = torch.randint(11, (2, 12), generator=torch.Generator().manual_seed(1))
    tokens, logits = generate_greedy_cached(model, prompt, 1)
    torch.testing.assert_close(logits[:, 0], model(prompt)[:, -1])


def test_cached_attention_gradients_match_the_full_pass_in_float64():
    torch.manual_seed(0)
    attn = GroupedQueryAttention(4, 6, 5, 0.0, 3, 1).double().eval()
    x = torch.rand(1, 5, 4, dtype=torch.float64, requires_grad=True)

    def run(x):
        cache = KVCache(5)
        parts = x.split([2, 3], dim=1)  # a prefill of 2 tokens, then 3
        return torch.cat([cached_attention(attn, p, cache) for p in parts], dim=1)

    assert torch.autograd.gradcheck(run, (x,))
    grad_cached = torch.autograd.grad(run(x).sum(), x)[0]
    grad_full = torch.autograd.grad(attn(x).sum(), x)[0]
    torch.testing.assert_close(grad_cached, grad_full)


def test_dropout_acts_in_training_only():
    torch.manual_seed(0)
    attn = MultiHeadAttention(4, 4, 6, 0.5, 2)
    x = torch.rand(1, 6, 4)
    eval_out = cached_attention(attn.eval(), x, KVCache(6))
    torch.testing.assert_close(cached_attention(attn, x, KVCache(6)), eval_out)
    train_out = cached_attention(attn.train(), x, KVCache(6))
    assert not torch.allclose(train_out, eval_out)


def test_kv_cache_bytes_takes_numpy_integers_without_wrapping_around():
    # A NumPy integer is an integer (numbers.Integral), so it is accepted;
    # int64 arithmetic would wrap 2**66 around to 0 without a word.
    sizes = (np.int64(2**20), 2**20, 2**10, 64, 128, np.int32(4))
    total = kv_cache_bytes(*sizes)
    assert total == 2**66
    assert type(total) is int


def test_generation_takes_a_numpy_integer_as_max_new_tokens():
    torch.manual_seed(0)
    model = TinyAttentionModel(10, 8, 6, num_heads=2).eval()
    prompt = torch.tensor([[3, 1]])
    for generate in (generate_greedy, generate_greedy_cached):
        tokens, logits = generate(model, prompt, np.int64(3))
        assert torch.equal(tokens, generate(model, prompt, 3)[0])
        assert logits.shape == (1, 3, 10)
