"""The exercises of the page another-sentence."""

from __future__ import annotations

import torch
from torch import nn

from ..causal import mask_with_neg_inf
from ..self_attention import SelfAttention_v1
from .grader import Case, Exercise, Mistake, Words


def _two_widths(d_in: int, d_k: int, d_v: int, seed: int = 123) -> SelfAttention_v1:
    """A ``SelfAttention_v1`` whose values are ``d_v`` wide, keys ``d_k``.

    Its ``forward`` scales by the keys' width, so it never assumed that the
    values have the same one: it is the page's ``SelfAttentionTwoWidths``.
    """
    torch.manual_seed(seed)
    module = SelfAttention_v1(d_in, d_k)
    module.W_value = nn.Parameter(torch.rand(d_in, d_v))  # (d_in, d_v)
    return module


def _inputs(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator)


def _forward_cases() -> list[Case]:
    # args: (module, x). The first case has five different scales in play
    # (1, sqrt(d_k), d_k, sqrt(d_v), sqrt(d_in)), so each mistake shows alone.
    return [
        Case(
            "3 input features, d_k = 2, d_v = 5",
            "输入 3 个特征，d_k = 2，d_v = 5",
            (_two_widths(3, 2, 5), _inputs(6, 3, seed=0)),
        ),
        Case(
            "the page's widths: d_k = 2, d_v = 4",
            "本页的宽度：d_k = 2，d_v = 4",
            (_two_widths(3, 2, 4), _inputs(6, 3, seed=1)),
        ),
        Case(
            "values narrower than keys: d_k = 4, d_v = 1",
            "值比键窄：d_k = 4，d_v = 1",
            (_two_widths(3, 4, 1), _inputs(5, 3, seed=2)),
        ),
        Case(
            "one token",
            "只有一个词元",
            (_two_widths(3, 2, 4), _inputs(1, 3, seed=3)),
        ),
        Case(
            "equal widths, as in SelfAttention_v1",
            "宽度相同，和 SelfAttention_v1 一样",
            (_two_widths(4, 3, 3), _inputs(4, 4, seed=4)),
        ),
        Case(
            "float64",
            "float64",
            (_two_widths(3, 2, 4).double(), _inputs(6, 3, seed=5).double()),
        ),
    ]


def _mask_cases() -> list[Case]:
    # args: (attn_scores,), queries along -2, keys along -1.
    return [
        Case(
            "the 6 x 6 scores of a sentence",
            "一个句子的 6 x 6 注意力分数",
            (_inputs(6, 6, seed=10),),
        ),
        Case("one token", "只有一个词元", (_inputs(1, 1, seed=11),)),
        Case(
            "a batch of two, two heads each: (2, 2, 4, 4)",
            "批次大小为 2，每个有两个头：(2, 2, 4, 4)",
            (_inputs(2, 2, 4, 4, seed=12),),
        ),
        Case(
            "a batch of one: (1, 3, 3)",
            "批次大小为 1：(1, 3, 3)",
            (_inputs(1, 3, 3, seed=13),),
        ),
        Case(
            "float64",
            "float64",
            (_inputs(5, 5, seed=14).double(),),
        ),
    ]


# --- the mistakes readers make, written as readers write them ---------------


def _parts(module, x):
    return x @ module.W_query, x @ module.W_key, x @ module.W_value


def _weighted(scores, values, dim=-1):
    return torch.softmax(scores, dim=dim) @ values


def _scaled_by_d_v(module, x):
    queries, keys, values = _parts(module, x)
    return _weighted(queries @ keys.T / values.shape[-1] ** 0.5, values)


def _over_queries(module, x):
    queries, keys, values = _parts(module, x)
    return _weighted(queries @ keys.T / keys.shape[-1] ** 0.5, values, dim=0)


def _not_scaled(module, x):
    queries, keys, values = _parts(module, x)
    return _weighted(queries @ keys.T, values)


def _scaled_by_d_k(module, x):
    queries, keys, values = _parts(module, x)
    return _weighted(queries @ keys.T / keys.shape[-1], values)


def _scaled_by_d_in(module, x):
    queries, keys, values = _parts(module, x)
    return _weighted(queries @ keys.T / x.shape[-1] ** 0.5, values)


def _future(scores):
    num_tokens = scores.shape[-1]
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)


def _fill_dropped(scores):
    scores.clone().masked_fill(_future(scores), -torch.inf)  # result dropped
    return scores


def _times_mask(scores):
    return scores * ~_future(scores)


def _keep_polarity(scores):
    return scores.masked_fill(~_future(scores), -torch.inf)


def _diagonal_hidden(scores):
    num_tokens = scores.shape[-1]
    on_or_above = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(0)
    return scores.masked_fill(on_or_above, -torch.inf)


EXERCISES = (
    Exercise(
        name="two_widths_forward",
        reference=SelfAttention_v1.forward,
        cases=_forward_cases,
        mistakes=(
            Mistake(
                Words(
                    en="you scaled by the square root of the values' width, d_v. "
                    "The scale belongs to the dot products of queries and keys: "
                    "divide by sqrt(d_k), keys.shape[-1].",
                    zh_CN="你按值的宽度 d_v 的平方根做了缩放。"
                    "缩放针对的是查询与键的点积："
                    "应除以 sqrt(d_k)，即 keys.shape[-1] 的平方根。",
                ),
                _scaled_by_d_v,
            ),
            Mistake(
                Words(
                    en="each column of your weights sums to 1, not each row: the "
                    "softmax ran over the queries (dim=0). Each query's weights "
                    "must sum to 1: dim=-1.",
                    zh_CN="你的权重是每一列和为 1，而不是每一行：softmax "
                    "沿查询（dim=0）"
                    "进行了。每个查询的权重之和应为 1：用 dim=-1。",
                ),
                _over_queries,
            ),
            Mistake(
                Words(
                    en="your scores were not scaled: divide them by sqrt(d_k) "
                    "before the softmax.",
                    zh_CN="你的注意力分数没有缩放：在 softmax 之前把它们除以 "
                    "sqrt(d_k)。",
                ),
                _not_scaled,
            ),
            Mistake(
                Words(
                    en="you divided the scores by d_k. Their typical size grows as "
                    "sqrt(d_k): divide by the square root.",
                    zh_CN="你把注意力分数除以了 d_k。它们的典型大小按 sqrt(d_k) 增长："
                    "应除以平方根。",
                ),
                _scaled_by_d_k,
            ),
            Mistake(
                Words(
                    en="you scaled by the square root of the input's width, d_in. "
                    "The scale is the width of the queries and keys: sqrt(d_k).",
                    zh_CN="你按输入宽度 d_in 的平方根做了缩放。"
                    "缩放用的是查询和键的宽度："
                    "sqrt(d_k)。",
                ),
                _scaled_by_d_in,
            ),
        ),
    ),
    Exercise(
        name="mask_with_neg_inf",
        reference=mask_with_neg_inf,
        cases=_mask_cases,
        mistakes=(
            Mistake(
                Words(
                    en="nothing above the diagonal became -inf. `masked_fill` "
                    "returns a new tensor and leaves its input as it was: assign "
                    "its result.",
                    zh_CN="对角线以上没有任何位置变成 -inf。`masked_fill` "
                    "返回一个新张量，"
                    "不改变输入：要把它的结果赋给变量。",
                ),
                _fill_dropped,
            ),
            Mistake(
                Words(
                    en="the future holds 0, not -inf. A score of 0 still gets "
                    "weight after the softmax (exp(0) = 1): fill the future with "
                    "-inf instead of multiplying by a 0/1 mask.",
                    zh_CN="未来的位置是 0，而不是 -inf。分数为 0 在 softmax "
                    "之后仍有权重"
                    "（exp(0) = 1）：应当用 -inf 填充未来的位置，而不是乘以 0/1 掩码。",
                ),
                _times_mask,
            ),
            Mistake(
                Words(
                    en="you hid the past and kept the future: the mask has the "
                    "wrong polarity. `masked_fill` fills where the mask is True, "
                    "so True must mark the future: torch.triu(..., diagonal=1).",
                    zh_CN="你遮住了过去，却留下了未来：掩码的取值约定反了。"
                    "`masked_fill` 在掩码为 True 的位置填充，所以 True 应当标出未来："
                    "torch.triu(..., diagonal=1)。",
                ),
                _keep_polarity,
            ),
            Mistake(
                Words(
                    en="the diagonal is -inf too, but each token must see itself. "
                    "Hide only what lies above it: torch.triu(..., diagonal=1).",
                    zh_CN="对角线也成了 -inf，但每个词元必须能看到自己。"
                    "只遮住对角线以上的"
                    "部分：torch.triu(..., diagonal=1)。",
                ),
                _diagonal_hidden,
            ),
        ),
    ),
)
