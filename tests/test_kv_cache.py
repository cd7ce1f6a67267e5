"""Tests for attention.kv_cache: generation with a KV cache."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

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


@pytest.mark.parametrize("splits", [[7], [1] * 7, [3, 1, 1, 2], [2, 5]])
@pytest.mark.parametrize("cls_args", [(4, 4), (4, 2), (4, 1)])
def test_any_split_into_chunks_equals_one_full_pass(splits, cls_args):
    h, g = cls_args
    torch.manual_seed(0)
    attn = GroupedQueryAttention(5, 8, 7, 0.0, h, g).eval()
    x = torch.rand(2, 7, 5)
    cache = KVCache(7)
    outs, start = [], 0
    for n in splits:
        outs.append(cached_attention(attn, x[:, start : start + n], cache))
        start += n
    torch.testing.assert_close(torch.cat(outs, dim=1), attn(x))
    assert cache.num_tokens() == 7


def test_sdpa_is_causal_is_wrong_with_fewer_queries_than_keys():
    # The page's claim: SDPA aligns the triangle top-left.
    torch.manual_seed(0)
    q, k, v = torch.rand(1, 1, 1, 4), torch.rand(1, 1, 5, 4), torch.rand(1, 1, 5, 4)
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(top_left, v[:, :, :1])  # only key 0 is seen
    right = F.scaled_dot_product_attention(q, k, v)  # the last token sees every key
    assert not torch.allclose(top_left, right)


def test_cache_bytes_match_the_formula_for_mha():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 12, 10, 0.0, num_heads=3)
    cache = KVCache(10, num_layers=3)
    x = torch.rand(2, 6, 8)
    for layer in range(3):
        cached_attention(mha, x, cache, layer)
    assert cache.nbytes() == kv_cache_bytes(2, 6, 3, 3, 4, 4) == 3456
    cache64 = KVCache(10)
    cached_attention(mha.double(), x.double(), cache64)
    assert cache64.nbytes() == kv_cache_bytes(2, 6, 1, 3, 4, 8)


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


def test_the_cache_refuses_more_than_context_length():
    cache = KVCache(4)
    cache.update(0, torch.ones(1, 2, 3, 5), torch.ones(1, 2, 3, 5))
    with pytest.raises(
        ValueError, match=r"at most context_length=4 .* has 3 and got 2"
    ):
        cache.update(0, torch.ones(1, 2, 2, 5), torch.ones(1, 2, 2, 5))
    assert cache.num_tokens() == 3  # nothing was appended


@pytest.mark.parametrize(
    ("keys", "values", "message"),
    [
        (
            torch.ones(2, 3, 5),
            torch.ones(2, 3, 5),
            r"keys and values must both have shape .*, got \(2, 3, 5\)",
        ),
        (torch.ones(1, 2, 1, 5), None, r"values must be a torch.Tensor, got NoneType"),
        (
            torch.ones(1, 2, 1, 5),
            torch.ones(1, 2, 1, 4),
            r"must both have shape .*, got \(1, 2, 1, 5\) and \(1, 2, 1, 4\)",
        ),
        (
            torch.ones(1, 3, 1, 5),
            torch.ones(1, 3, 1, 5),
            r"cached \(b, g, hd\) = \(1, 2\) and 5, got shape \(1, 3, 1, 5\)",
        ),
    ],
)
def test_the_cache_refuses_keys_that_do_not_fit(keys, values, message):
    cache = KVCache(8)
    cache.update(0, torch.ones(1, 2, 1, 5), torch.ones(1, 2, 1, 5))
    with pytest.raises(ValueError, match=message):
        cache.update(0, keys, values)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0,), r"context_length must be a positive integer, got 0"),
        ((4, 0), r"num_layers must be a positive integer, got 0"),
    ],
)
def test_bad_cache_sizes(args, message):
    with pytest.raises(ValueError, match=message):
        KVCache(*args)


@pytest.mark.parametrize("layer", [2, -1, "0"])
def test_bad_layer(layer):
    with pytest.raises(ValueError, match=r"layer must be"):
        KVCache(4, num_layers=2).num_tokens(layer)


def test_cached_attention_refuses_tokens_beyond_the_context():
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 4, 6, 0.0, 2)
    cache = KVCache(6)
    cached_attention(mha, torch.rand(1, 5, 4), cache)
    with pytest.raises(
        ValueError, match=r"context_length is 6 .* holds 5 .* 1 new .* 2"
    ):
        cached_attention(mha, torch.rand(1, 2, 4), cache)
    with pytest.raises(ValueError, match=r"x must have 3 dimensions .* shape \(1, 3\)"):
        cached_attention(mha, torch.rand(1, 3), cache)


@pytest.mark.parametrize(
    ("prompt", "max_new", "message"),
    [
        (
            torch.zeros(1, CONTEXT, dtype=torch.long),
            2,
            r"must hold 1 to 11 tokens: context_length is 12",
        ),
        (torch.zeros(1, 5, dtype=torch.long), 0, r"max_new_tokens must be a positive"),
        (
            torch.zeros(5, dtype=torch.long),
            1,
            r"shape \(batch, num_tokens\), .* shape \(5,\)",
        ),
        (torch.zeros(1, 0, dtype=torch.long), 1, r"token_ids must hold 1 to"),
        (torch.zeros(1, 3), 1, r"dtype torch\.float32"),
        (
            torch.tensor([[1, 11]]),
            1,
            r"token_ids must lie in \[0, 11\) .*, got values from 1 to 11",
        ),
    ],
)
@pytest.mark.parametrize("generate", [generate_greedy, generate_greedy_cached])
def test_bad_generation_arguments(generate, prompt, max_new, message):
    with pytest.raises(ValueError, match=message):
        generate(_model(), prompt, max_new)
