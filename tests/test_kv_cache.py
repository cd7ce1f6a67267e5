"""Tests for attention.kv_cache beyond its records in ``tests/table.py`` (cached
and plain generation, chunked prefill and decode steps each equal the formula,
row by row, left-padded or not, with or without positions): that the
comparisons can fail, a full context, gradients and dropout."""

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
    pad_sequences,
)

CONTEXT = 12


def _model(seed=0, vocab_size=11, num_layers=2):
    """Two layers, in float64, weights doubled.

    With one layer the last position sees every token, mask or not, so the
    causal mask cannot change a generated token; with the default
    initialisation a random model repeats one token whatever its prompt.
    """
    torch.manual_seed(seed)
    model = TinyAttentionModel(vocab_size, 16, CONTEXT, 4, num_layers=num_layers)
    with torch.no_grad():
        for weight in model.parameters():
            weight.mul_(2.0)
    return model.double().eval()


def _prompt(b, p, seed=1, vocab_size=11):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(vocab_size, (b, p), generator=g)


def test_a_prompt_that_fills_the_context_gets_one_token():
    model = _model()
    prompt = _prompt(2, CONTEXT)
    tokens, logits = generate_greedy_cached(model, prompt, 1)
    torch.testing.assert_close(logits[:, 0], model(prompt)[:, -1])


@pytest.mark.parametrize("generate", [generate_greedy, generate_greedy_cached])
def test_the_causal_mask_changes_the_tokens_of_a_two_layer_model(generate):
    model = _model()
    prompt = _prompt(3, 4)
    tokens, _ = generate(model, prompt, 6)
    for layer in model.layers:
        layer.mask.zero_()  # no causal mask at all
    leaky, _ = generate(model, prompt, 6)
    assert not torch.equal(leaky, tokens)


def test_generation_fails_loudly_when_the_cache_would_be_wrong():
    # A cache that ignored the mask in the prefill would differ: the records'
    # comparison with the formula can fail.
    model = _model()
    prompt = _prompt(1, 6)
    cache = KVCache(CONTEXT, num_layers=2)
    model.attn.mask.zero_()  # no causal mask in the first layer
    leaky = decode_step(model, prompt, cache)
    model.attn.mask.copy_(torch.ones(CONTEXT, CONTEXT).triu(1).bool())
    assert not torch.allclose(leaky[:, :-1], model(prompt)[:, :-1])


# --- a batch of prompts of different lengths --------------------------------------

LENGTHS = [1, 3, 6, 9]


def test_the_padding_mask_matters():
    # Without the mask the pads are read as tokens: some row changes.
    model = _model()
    prompts = [_prompt(1, n, seed=n)[0] for n in LENGTHS]
    ids, attention_mask = pad_sequences(prompts, side="left", value=7)
    masked, _ = generate_greedy_cached(model, ids, 4, attention_mask)
    unmasked, _ = generate_greedy_cached(model, ids, 4)
    assert not torch.equal(masked, unmasked)


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
