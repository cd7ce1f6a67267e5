"""Answers to the exercises of the KV cache page.

The wrong ones come from public threads: the new token's position counted
from 0 or past the cache (huggingface/transformers#15751), is_causal=True
with fewer queries than keys (pytorch/pytorch#108108, #144858), scores not
scaled (huggingface/blog#2893), and a cache read before the new keys go in,
or one whose keys are appended twice, which makes generation garbage with
the cache on and fine with it off (lucidrains/x-transformers#219).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attention.kv_cache import cached_attention

from . import Answers, Wrong


def _split(attn, x, linear):
    # (b, T_new, d_in) -> (b, T_new, h, hd) -> (b, h, T_new, hd)
    b, num_new, _ = x.shape
    return linear(x).view(b, num_new, attn.num_heads, attn.head_dim).transpose(1, 2)


def _merge(attn, context):
    # (b, h, T_new, hd) -> (b, T_new, h, hd) -> (b, T_new, d_out)
    b, _, num_new, _ = context.shape
    return attn.out_proj(context.transpose(1, 2).reshape(b, num_new, attn.d_out))


def attention_with_sdpa(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    start = cache.num_tokens()
    keys, values = cache.update(
        0, _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    )
    num_new, num_keys = x.shape[1], keys.shape[2]
    positions = torch.arange(num_keys)
    # SDPA's True means "may attend": key j is visible to new token i if j <= start + i
    allowed = positions[None, :] <= start + torch.arange(num_new)[:, None]
    context = F.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed)
    return _merge(attn, context)


def attention_by_hand(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    keys, values = _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    start = cache.num_tokens()
    keys, values = cache.update(0, keys, values)
    num_new = x.shape[1]
    scores = queries @ keys.transpose(-2, -1) / attn.head_dim**0.5
    rows = attn.mask[start : start + num_new, : start + num_new]  # bottom-right
    weights = scores.masked_fill(rows, float("-inf")).softmax(dim=-1)
    return _merge(attn, weights @ values)


def read_then_append(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    keys, values = _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    past_keys, past_values = cache.keys[0], cache.values[0]
    scores = queries @ past_keys.transpose(2, 3) / attn.head_dim**0.5
    weights = torch.softmax(scores, dim=-1)  # one new token: nothing to mask
    cache.update(0, keys, values)
    return _merge(attn, weights @ past_values)


def appended_twice(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    keys, values = _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    cached_keys, cached_values = cache.update(0, keys, values)
    all_keys = torch.cat((cached_keys, keys), dim=2)
    all_values = torch.cat((cached_values, values), dim=2)
    context = F.scaled_dot_product_attention(queries, all_keys, all_values)
    return _merge(attn, context)


def is_causal_true(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    keys, values = cache.update(
        0, _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    )
    context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
    return _merge(attn, context)


def not_scaled(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    start = cache.num_tokens()
    keys, values = cache.update(
        0, _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    )
    num_new = x.shape[1]
    scores = queries @ keys.transpose(2, 3)
    scores = scores.masked_fill(
        attn.mask[start : start + num_new, : start + num_new], -torch.inf
    )
    return _merge(attn, torch.softmax(scores, dim=-1) @ values)


def cache_not_kept(attn, x, cache):
    queries = _split(attn, x, attn.W_query)
    keys, values = _split(attn, x, attn.W_key), _split(attn, x, attn.W_value)
    if cache.keys[0] is not None:
        keys = torch.cat((cache.keys[0], keys), dim=2)
        values = torch.cat((cache.values[0], values), dim=2)
    num_keys, num_new = keys.shape[2], x.shape[1]
    mask = attn.mask[num_keys - num_new : num_keys, :num_keys]
    scores = (queries @ keys.transpose(2, 3)).masked_fill(mask, -torch.inf)
    return _merge(attn, torch.softmax(scores / attn.head_dim**0.5, dim=-1) @ values)


def _positions(cache, token_ids, first):
    return torch.arange(first, first + token_ids.shape[1])


def step_layer_by_layer(model, token_ids, cache):
    start = cache.lengths[0]
    x = model.embed(token_ids, _positions(cache, token_ids, start))
    for i, layer in enumerate(model.layers):
        x = cached_attention(layer, x, cache, layer=i)
    return model.out_head(x)


def step_positions_from_zero(model, token_ids, cache):
    x = model.embed(token_ids)  # the default positions: 0, 1, ...
    for i, layer in enumerate(model.layers):
        x = cached_attention(layer, x, cache, layer=i)
    return model.out_head(x)


def step_positions_one_past(model, token_ids, cache):
    x = model.embed(token_ids, _positions(cache, token_ids, cache.num_tokens() + 1))
    for i, layer in enumerate(model.layers):
        x = cached_attention(layer, x, cache, layer=i)
    return model.out_head(x)


def step_one_cache_layer(model, token_ids, cache):
    start = cache.num_tokens()
    x = model.embed(token_ids, _positions(cache, token_ids, start))
    for layer in model.layers:
        x = cached_attention(layer, x, cache)  # layer=0 for every layer
    return model.out_head(x)


def step_without_cache(model, token_ids, cache):
    return model(token_ids)


ANSWERS = [
    Answers(
        "cached_attention",
        right=(attention_with_sdpa, attention_by_hand),
        wrong={
            "a cache read before the new keys are appended": Wrong(
                read_then_append, "Append first", "先追加"
            ),
            "the new keys appended twice": Wrong(appended_twice, "twice", "两次"),
            "is_causal=True: the triangle aligned top-left": Wrong(
                is_causal_true, "bottom-right", "右下角"
            ),
            "scores not scaled": Wrong(not_scaled, "sqrt(head_dim)", "sqrt(head_dim)"),
            "the new keys and values not kept": Wrong(
                cache_not_kept, "did not keep", "没有保存"
            ),
        },
    ),
    Answers(
        "decode_step",
        right=(step_layer_by_layer,),
        wrong={
            "positions counted from 0 at every step": Wrong(
                step_positions_from_zero, "start at 0", "从 0 开始"
            ),
            "positions one past the cache": Wrong(
                step_positions_one_past, "one too far", "多算了 1"
            ),
            "every layer in layer 0 of the cache": Wrong(
                step_one_cache_layer, "layer 0", "第 0 层"
            ),
            "the cache ignored": Wrong(
                step_without_cache, "ignores the cache", "没有用缓存"
            ),
        },
    ),
]
