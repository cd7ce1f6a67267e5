"""The exercises of the page grouped-query-attention."""

from __future__ import annotations

import torch

from ..gqa import GroupedQueryAttention, mean_pool_kv_heads, repeat_kv
from ..multihead import MultiHeadAttention
from .grader import Case, Exercise, Mistake, Words


def _heads(batch: int, g: int, num_tokens: int, head_dim: int, dtype) -> torch.Tensor:
    """(b, g, T, hd) whose values tell every head, token and feature apart."""
    gen = torch.Generator().manual_seed(batch * 100 + g * 10 + num_tokens)
    return torch.randn(batch, g, num_tokens, head_dim, generator=gen, dtype=dtype)


def _repeat_kv_cases() -> list[Case]:
    # The first case has g > 1 and T != r, so that every mistake shows on it.
    return [
        Case(
            "2 key/value heads, each serving 3 query heads",
            "2 个键/值头，每个服务 3 个查询头",
            (_heads(2, 2, 4, 5, torch.float32), 3),
        ),
        Case(
            "multi-query: 1 key/value head for 4 query heads",
            "多查询：1 个键/值头服务 4 个查询头",
            (_heads(2, 1, 3, 2, torch.float32), 4),
        ),
        Case(
            "repeats=1: multi-head attention, nothing to repeat",
            "repeats=1：多头注意力，无需重复",
            (_heads(1, 3, 2, 4, torch.float32), 1),
        ),
        Case(
            "one token, a batch of one, float64",
            "只有一个词元，批次大小为 1，float64",
            (_heads(1, 4, 1, 3, torch.float64), 2),
        ),
    ]


def _tiled(x: torch.Tensor, repeats: int) -> torch.Tensor:
    # Heads in the order 0, 1, 0, 1, ...: the whole stack of heads copied.
    return x.repeat(1, repeats, 1, 1)


def _along_tokens(x: torch.Tensor, repeats: int) -> torch.Tensor:
    return torch.repeat_interleave(x, repeats, dim=2)


def _expanded_only(x: torch.Tensor, repeats: int) -> torch.Tensor:
    b, g, num_tokens, head_dim = x.shape
    return x[:, :, None].expand(b, g, repeats, num_tokens, head_dim)


def _mha_cases() -> list[Case]:
    cases = []
    settings = [
        (
            "4 query heads in 2 groups",
            "4 个查询头，分成 2 组",
            dict(num_heads=4, qkv_bias=False, dtype=torch.float32),
            2,
        ),
        (
            "6 query heads in 3 groups, with qkv_bias",
            "6 个查询头，分成 3 组，带 qkv_bias",
            dict(num_heads=6, qkv_bias=True, dtype=torch.float32),
            3,
        ),
        (
            "multi-query: 4 query heads in 1 group, float64",
            "多查询：4 个查询头只有 1 组，float64",
            dict(num_heads=4, qkv_bias=False, dtype=torch.float64),
            1,
        ),
        (
            "as many groups as heads: every head kept",
            "组数等于头数：每个头原样保留",
            dict(num_heads=2, qkv_bias=True, dtype=torch.float32),
            2,
        ),
    ]
    for en, zh_CN, options, num_kv_heads in settings:
        num_heads = options["num_heads"]
        with torch.random.fork_rng(devices=[]):  # the reader's seed stays put
            torch.manual_seed(len(cases))
            mha = MultiHeadAttention(
                2 * num_heads,
                2 * num_heads,  # head_dim 2
                context_length=4,
                dropout=0.0,
                num_heads=num_heads,
                qkv_bias=options["qkv_bias"],
            )
        cases.append(Case(en, zh_CN, (mha.to(options["dtype"]), num_kv_heads)))
    return cases


def _run_pooled(fn, case: Case) -> tuple:
    """What a pooled module is judged by: its key and value weights, its output."""
    mha = case.args[0]
    gqa = fn(*case.args, **case.kwargs)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(2, 3, mha.d_in, generator=gen).to(mha.W_query.weight.dtype)
    with torch.no_grad():
        return gqa.W_key.weight, gqa.W_value.weight, gqa(x)


def _pooled(mha: MultiHeadAttention, num_kv_heads: int, pool) -> GroupedQueryAttention:
    """A GQA module whose key/value rows are ``pool((h * hd, d_in) rows)``."""
    gqa = GroupedQueryAttention(
        mha.d_in,
        mha.d_out,
        mha.context_length,
        0.0,
        mha.num_heads,
        num_kv_heads,
        qkv_bias=mha.W_query.bias is not None,
    ).to(mha.W_query.weight.dtype)
    state = mha.state_dict()
    for name in state:
        if name.startswith(("W_key.", "W_value.")):
            rows = state[name].reshape(mha.num_heads * mha.head_dim, -1)
            state[name] = pool(rows, mha, num_kv_heads).reshape(
                num_kv_heads * mha.head_dim, *state[name].shape[1:]
            )
    gqa.load_state_dict(state)
    return gqa.eval()


def _strided_groups(rows, mha, num_kv_heads):
    # Heads j, j + g, j + 2g, ... pooled together: (h * hd, n) -> (r, g, hd, n)
    group_size = mha.num_heads // num_kv_heads
    return rows.view(group_size, num_kv_heads, mha.head_dim, -1).mean(dim=0)


def _first_of_group(rows, mha, num_kv_heads):
    # (h * hd, n) -> (g, r, hd, n), head 0 of each group kept
    group_size = mha.num_heads // num_kv_heads
    return rows.view(num_kv_heads, group_size, mha.head_dim, -1)[:, 0]


def _summed(rows, mha, num_kv_heads):
    group_size = mha.num_heads // num_kv_heads
    return rows.view(num_kv_heads, group_size, mha.head_dim, -1).sum(dim=1)


EXERCISES = (
    Exercise(
        name="repeat_kv",
        reference=repeat_kv,
        cases=_repeat_kv_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your heads come in the order 0, 1, 0, 1, …: the whole "
                    "stack was copied (`repeat`, or a new axis before g). Each "
                    "head must sit next to its copies, 0, 0, 1, 1, …: "
                    "`repeat_interleave(repeats, dim=1)`, or a new axis after g.",
                    zh_CN="你的头排成了 0, 1, 0, 1, …：整叠头被复制了（`repeat`，"
                    "或在 g 之前插入新轴）。每个头应当紧挨着自己的副本，"
                    "0, 0, 1, 1, …：用 `repeat_interleave(repeats, dim=1)`，"
                    "或在 g 之后插入新轴。",
                ),
                _tiled,
            ),
            Mistake(
                Words(
                    en="you repeated the tokens (dim 2), not the heads: repeat "
                    "along dim 1, the key/value heads of (b, g, T, hd).",
                    zh_CN="你重复的是词元（第 2 维），而不是头：应沿第 1 维重复，"
                    "即 (b, g, T, hd) 中的键/值头。",
                ),
                _along_tokens,
            ),
            Mistake(
                Words(
                    en="`expand` gave the copies their own axis, (b, g, r, T, hd): "
                    "merge g and r with `reshape(b, g * repeats, T, hd)`.",
                    zh_CN="`expand` 给副本单独加了一根轴，得到 (b, g, r, T, hd)："
                    "再用 `reshape(b, g * repeats, T, hd)` 把 g 和 r 合并。",
                ),
                _expanded_only,
            ),
        ),
    ),
    Exercise(
        name="mean_pool_kv_heads",
        reference=mean_pool_kv_heads,
        cases=_mha_cases,
        run=_run_pooled,
        mistakes=(
            Mistake(
                Words(
                    en="your groups are heads j, j + g, j + 2g, …: a group is "
                    "neighbours, heads k * r to k * r + r - 1. View the rows as "
                    "(g, r, hd, d_in) and take the mean over dim 1.",
                    zh_CN="你的组由头 j, j + g, j + 2g, … 组成；一组应当是相邻的头，"
                    "即头 k * r 到 k * r + r - 1。把这些行 view 成 "
                    "(g, r, hd, d_in)，再沿第 1 维取平均。",
                ),
                lambda mha, g: _pooled(mha, g, _strided_groups),
            ),
            Mistake(
                Words(
                    en="you kept the first head of each group. Mean-pooling takes "
                    "the mean of all r heads of the group.",
                    zh_CN="你只保留了每组的第一个头。"
                    "均值池化要对组内全部 r 个头取平均。",
                ),
                lambda mha, g: _pooled(mha, g, _first_of_group),
            ),
            Mistake(
                Words(
                    en="your key and value heads are r times too large: a sum "
                    "over the group, where the recipe takes the mean.",
                    zh_CN="你的键头和值头大了 r 倍：对组求了和，而做法要求取平均。",
                ),
                lambda mha, g: _pooled(mha, g, _summed),
            ),
        ),
    ),
)
