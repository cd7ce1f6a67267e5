"""Answers to the exercises of the grouped-query attention page.

The wrong ones come from public threads: ``repeat`` (tiling) where the heads
must be interleaved (onnx/onnx#7274, apple/axlearn#842), the repeat along
the sequence axis (PrimeIntellect-ai/prime-rl#2681), and, for pooling, the
GQA paper's comparison of mean-pooling with keeping one head per group.
"""

from __future__ import annotations

import torch

from attention import GroupedQueryAttention

from . import Answers, Wrong


def repeat_with_interleave(x, repeats):
    return torch.repeat_interleave(x, repeats, dim=1)


def repeat_with_index(x, repeats):
    # Query head j reads key/value head j // repeats.
    num_kv_heads = x.shape[1]
    source = torch.arange(num_kv_heads * repeats) // repeats
    return x[:, source]


def repeat_tiled(x, repeats):
    return x.repeat(1, repeats, 1, 1)


def repeat_new_axis_first(x, repeats):
    # The copies' axis put before the heads: the same tiling as repeat.
    b, g, num_tokens, head_dim = x.shape
    copies = x[:, None].expand(b, repeats, g, num_tokens, head_dim)
    return copies.reshape(b, repeats * g, num_tokens, head_dim)


def repeat_along_tokens(x, repeats):
    return x.repeat_interleave(repeats, dim=2)


def expand_without_reshape(x, repeats):
    b, g, num_tokens, head_dim = x.shape
    return x.unsqueeze(2).expand(b, g, repeats, num_tokens, head_dim)


def _like(mha, num_kv_heads):
    gqa = GroupedQueryAttention(
        mha.d_in,
        mha.d_out,
        mha.context_length,
        mha.dropout.p,
        mha.num_heads,
        num_kv_heads,
        qkv_bias=mha.W_key.bias is not None,
    )
    return gqa.to(mha.W_key.weight.dtype)


def pool_with_loop(mha, num_kv_heads):
    # One group at a time, one parameter at a time.
    gqa = _like(mha, num_kv_heads)
    hd = mha.head_dim
    group_size = mha.num_heads // num_kv_heads
    with torch.no_grad():
        gqa.W_query.load_state_dict(mha.W_query.state_dict())
        gqa.out_proj.load_state_dict(mha.out_proj.state_dict())
        for old, new in ((mha.W_key, gqa.W_key), (mha.W_value, gqa.W_value)):
            for name, param in new.named_parameters():
                source = getattr(old, name)
                for k in range(num_kv_heads):
                    first = k * group_size * hd
                    heads = [
                        source[first + j * hd : first + (j + 1) * hd]
                        for j in range(group_size)
                    ]
                    param[k * hd : (k + 1) * hd] = torch.stack(heads).mean(dim=0)
    return gqa


def _pool_rows(mha, num_kv_heads, reduce):
    gqa = _like(mha, num_kv_heads)
    group_size = mha.num_heads // num_kv_heads
    state = mha.state_dict()
    for name in ("W_key.weight", "W_value.weight", "W_key.bias", "W_value.bias"):
        if name in state:
            rows = state[name].reshape(mha.num_heads * mha.head_dim, -1)
            pooled = reduce(rows, num_kv_heads, group_size, mha.head_dim)
            state[name] = pooled.reshape(-1, *state[name].shape[1:])
    gqa.load_state_dict(state)
    return gqa


def pool_strided(mha, num_kv_heads):
    def reduce(rows, g, r, hd):
        return rows.view(r, g, hd, -1).mean(dim=0)

    return _pool_rows(mha, num_kv_heads, reduce)


def keep_first_head(mha, num_kv_heads):
    def reduce(rows, g, r, hd):
        return rows.view(g, r, hd, -1)[:, 0]

    return _pool_rows(mha, num_kv_heads, reduce)


def pool_by_sum(mha, num_kv_heads):
    def reduce(rows, g, r, hd):
        return rows.view(g, r, hd, -1).sum(dim=1)

    return _pool_rows(mha, num_kv_heads, reduce)


def pool_keys_only(mha, num_kv_heads):
    # W_value left as GroupedQueryAttention initialised it.
    gqa = _like(mha, num_kv_heads)
    group_size = mha.num_heads // num_kv_heads
    state = gqa.state_dict()
    for name, tensor in mha.state_dict().items():
        if name.startswith("W_key."):
            grouped = tensor.view(num_kv_heads, group_size, mha.head_dim, -1)
            tensor = grouped.mean(dim=1).reshape(state[name].shape)
        if not name.startswith("W_value."):
            state[name] = tensor
    gqa.load_state_dict(state)
    return gqa


ANSWERS = [
    Answers(
        "repeat_kv",
        right=(repeat_with_interleave, repeat_with_index),
        wrong={
            "repeat (tiling) instead of repeat_interleave": Wrong(
                repeat_tiled, "0, 1, 0, 1", "0, 1, 0, 1"
            ),
            "the copies' axis before the heads": Wrong(
                repeat_new_axis_first, "repeat_interleave(repeats, dim=1)", "紧挨着"
            ),
            "repeated along the tokens": Wrong(
                repeat_along_tokens, "not the heads", "不是头"
            ),
            "expand without the reshape": Wrong(
                expand_without_reshape, "reshape(b, g * repeats, T, hd)", "合并"
            ),
        },
    ),
    Answers(
        "mean_pool_kv_heads",
        right=(pool_with_loop,),
        wrong={
            "groups of heads taken with a stride": Wrong(
                pool_strided, "neighbours", "相邻"
            ),
            "the first head of each group kept": Wrong(
                keep_first_head, "first head", "第一个头"
            ),
            "the group summed, not averaged": Wrong(pool_by_sum, "mean", "平均"),
            "the values left unpooled": Wrong(
                pool_keys_only, "in result 1", "第 1 个结果"
            ),
        },
    ),
]
