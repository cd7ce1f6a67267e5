"""Tests for attention.kv_cache: generation with a KV cache."""

from __future__ import annotations

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
)

CONTEXT = 12


def _model(seed=0, use_positions=True, vocab_size=11):
    torch.manual_seed(seed)
    model = TinyAttentionModel(
        vocab_size, 16, CONTEXT, num_heads=4, use_positions=use_positions
    )
    return model.eval()


def _prompt(b, p, seed=1, vocab_size=11):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(vocab_size, (b, p), generator=g)


@pytest.mark.parametrize("use_positions", [True, False])
@pytest.mark.parametrize("prompt_len", [1, 2, 5, CONTEXT - 1, CONTEXT])
@pytest.mark.parametrize("b", [1, 3])
def test_cached_generation_gives_the_same_tokens_and_logits(
    b, prompt_len, use_positions
):
    model = _model(use_positions=use_positions)
    prompt = _prompt(b, prompt_len)
    # As many tokens as fit: the last new token is never fed back.
    max_new = CONTEXT - prompt_len + 1
    tokens, logits = generate_greedy(model, prompt, max_new)
    cached_tokens, cached_logits = generate_greedy_cached(model, prompt, max_new)
    assert tokens.shape == (b, prompt_len + max_new)
    assert torch.equal(cached_tokens, tokens)
    torch.testing.assert_close(cached_logits, logits)
    assert torch.equal(tokens[:, :prompt_len], prompt)


def test_the_generated_tokens_are_the_greedy_choice_of_the_full_model():
    model = _model()
    tokens, logits = generate_greedy_cached(model, _prompt(2, 3), 6)
    for step in range(6):
        full = model(tokens[:, : 3 + step])[:, -1]  # (b, V)
        torch.testing.assert_close(logits[:, step], full)
        assert torch.equal(tokens[:, 3 + step], full.argmax(dim=-1))


def test_generation_fails_loudly_when_the_cache_would_be_wrong():
    # A cache that ignored the mask in the prefill would differ: this test
    # proves the comparison above can fail.
    model = _model()
    prompt = _prompt(1, 6)
    cache = KVCache(CONTEXT)
    model.attn.mask.zero_()  # no causal mask at all
    leaky = decode_step(model, prompt, cache)
    model.attn.mask.copy_(torch.ones(CONTEXT, CONTEXT).triu(1).bool())
    assert not torch.allclose(leaky[:, :-1], model(prompt)[:, :-1])


def test_eval_is_deterministic():
    model = _model()
    prompt = _prompt(2, 4)
    first = generate_greedy_cached(model, prompt, 5)
    second = generate_greedy_cached(model, prompt, 5)
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


def test_cached_attention_gradients_match_the_full_pass_in_float64():
    torch.manual_seed(0)
    attn = GroupedQueryAttention(4, 6, 5, 0.0, 3, 1).double().eval()
    x = torch.rand(1, 5, 4, dtype=torch.float64, requires_grad=True)

    def run(x):
        cache = KVCache(5)
        return torch.cat(
            (
                cached_attention(attn, x[:, :2], cache),
                cached_attention(attn, x[:, 2:], cache),
            ),
            dim=1,
        )

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


# --- the error contract ------------------------------------------------------------
