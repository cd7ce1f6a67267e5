"""The exercises of the page cross-attention."""

from __future__ import annotations

import torch

from ..cross import CrossAttention, cross_attention_weights
from .grader import Case, Exercise, Mistake, Words

# Both exercises: T_q queries (the sequence that asks), T_kv keys and values
# (the context), T_q != T_kv so that a swap of the two shows in the shapes.


def _module(d_in: int, d_out: int, d_context: int, seed: int = 123) -> CrossAttention:
    torch.manual_seed(seed)
    return CrossAttention(d_in, d_out, d_context=d_context)


def _tensor(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator)


def _forward_cases() -> list[Case]:
    # args: (module, x, context); d_in = 3 and d_out = 4 differ, so that a
    # scale by the wrong width shows.
    return [
        Case(
            "a batch of two: 6 tokens ask, 8 context tokens answer",
            "批次大小为 2：6 个词元提问，8 个上下文词元回答",
            (_module(3, 4, 3), _tensor(2, 6, 3, seed=0), _tensor(2, 8, 3, seed=1)),
        ),
        Case(
            "one sequence (no batch dimension), a context 5 wide",
            "单条序列（没有批次维度），上下文宽度为 5",
            (_module(3, 4, 5), _tensor(6, 3, seed=2), _tensor(8, 5, seed=3)),
        ),
        Case(
            "more queries than context tokens: 7 ask, 3 answer",
            "查询多于上下文词元：7 个提问，3 个回答",
            (_module(3, 4, 5), _tensor(1, 7, 3, seed=4), _tensor(1, 3, 5, seed=5)),
        ),
        Case(
            "a context of one token",
            "上下文只有一个词元",
            (_module(3, 4, 5), _tensor(2, 4, 3, seed=6), _tensor(2, 1, 5, seed=7)),
        ),
        Case(
            "one query token",
            "只有一个查询词元",
            (_module(3, 4, 3), _tensor(1, 1, 3, seed=8), _tensor(1, 5, 3, seed=9)),
        ),
        Case(
            "float64",
            "float64",
            (
                _module(3, 4, 5).double(),
                _tensor(2, 6, 3, seed=10).double(),
                _tensor(2, 8, 5, seed=11).double(),
            ),
        ),
    ]


def _weights_cases() -> list[Case]:
    # args: (queries, keys) or (queries, keys, key_padding_mask), True = pad.
    left_padded = torch.tensor([[True, True, True, False], [False] * 4])
    return [
        Case(
            "no padding: 6 queries, 8 keys",
            "没有填充：6 个查询，8 个键",
            (_tensor(6, 4, seed=20), _tensor(8, 4, seed=21)),
        ),
        Case(
            "two contexts of 5 and 3 tokens, padded to 5",
            "两段上下文，分别有 5 个和 3 个词元，填充到 5",
            (
                _tensor(2, 4, 3, seed=22),
                _tensor(2, 5, 3, seed=23),
                torch.tensor([[False] * 5, [False, False, False, True, True]]),
            ),
        ),
        Case(
            "a context whose one real token is its last (left padding)",
            "一段上下文只有最后一个词元是真实的（左侧填充）",
            (_tensor(2, 3, 2, seed=24), _tensor(2, 4, 2, seed=25), left_padded),
        ),
        Case(
            "a context of one token",
            "上下文只有一个词元",
            (_tensor(1, 5, 2, seed=26), _tensor(1, 1, 2, seed=27)),
        ),
        Case(
            "one query, a batch of one",
            "只有一个查询，批次大小为 1",
            (
                _tensor(1, 1, 3, seed=28),
                _tensor(1, 6, 3, seed=29),
                torch.tensor([[False, False, False, False, True, True]]),
            ),
        ),
        Case(
            "float64, with padding",
            "float64，带填充",
            (
                _tensor(2, 4, 3, seed=30).double(),
                _tensor(2, 5, 3, seed=31).double(),
                torch.tensor([[False, False, True, True, True], [False] * 5]),
            ),
        ),
    ]


# --- the mistakes readers make, written as readers write them ---------------


def _scores(queries, keys):
    return queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5


def _causal(scores):
    t_q, t_kv = scores.shape[-2:]
    future = torch.ones(t_q, t_kv, dtype=torch.bool).triu(1)
    return scores.masked_fill(future, -torch.inf)


def _forward_causal(module, x, context):
    scores = _scores(module.W_query(x), module.W_key(context))
    return torch.softmax(_causal(scores), dim=-1) @ module.W_value(context)


def _forward_over_queries(module, x, context):
    scores = _scores(module.W_query(x), module.W_key(context))
    return torch.softmax(scores, dim=-2) @ module.W_value(context)


def _forward_scaled_by_d_in(module, x, context):
    queries, keys = module.W_query(x), module.W_key(context)
    scores = queries @ keys.transpose(-2, -1) / x.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ module.W_value(context)


def _forward_scaled_by_d_out(module, x, context):
    queries, keys = module.W_query(x), module.W_key(context)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]
    return torch.softmax(scores, dim=-1) @ module.W_value(context)


def _forward_not_scaled(module, x, context):
    queries, keys = module.W_query(x), module.W_key(context)
    scores = queries @ keys.transpose(-2, -1)
    return torch.softmax(scores, dim=-1) @ module.W_value(context)


def _forward_roles_swapped(module, x, context):
    # Queries from the context, keys and values from x.
    scores = _scores(module.W_query(context), module.W_key(x))
    return torch.softmax(scores, dim=-1) @ module.W_value(x)


def _weights_mask_after_softmax(queries, keys, key_padding_mask=None):
    weights = torch.softmax(_scores(queries, keys), dim=-1)
    if key_padding_mask is None:
        return weights
    return weights.masked_fill(key_padding_mask.unsqueeze(-2), 0.0)


def _weights_unmasked(queries, keys, key_padding_mask=None):
    return torch.softmax(_scores(queries, keys), dim=-1)


def _weights_keep_polarity(queries, keys, key_padding_mask=None):
    scores = _scores(queries, keys)
    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask.unsqueeze(-2), -torch.inf)
    return torch.softmax(scores, dim=-1)


def _weights_causal(queries, keys, key_padding_mask=None):
    return torch.softmax(_causal(_scores(queries, keys)), dim=-1)


def _weights_swapped(queries, keys, key_padding_mask=None):
    return torch.softmax(_scores(keys, queries), dim=-1)


CAUSAL = Words(
    en="your weights hide the keys above the diagonal: a causal mask. "
    "Cross-attention has none: the whole context is known before the first "
    "query, so every query may read every context token. Drop the mask.",
    zh_CN="你的权重遮住了对角线以上的键：这是因果掩码。交叉注意力不需要它："
    "整个上下文在第一个查询之前就已知，每个查询都可以读取所有上下文词元。去掉这个掩码。"
    "",
)

EXERCISES = (
    Exercise(
        name="cross_attention_forward",
        reference=CrossAttention.forward,
        cases=_forward_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your output has one row per context token: the roles are "
                    "swapped. The queries come from x, the sequence that asks; "
                    "the keys and values from context.",
                    zh_CN="你的输出每个上下文词元一行：两个序列的角色互换了。查询来自"
                    "提问的序列 x；键和值来自 context。",
                ),
                _forward_roles_swapped,
            ),
            Mistake(CAUSAL, _forward_causal),
            Mistake(
                Words(
                    en="each column of your weights sums to 1, not each row: the "
                    "softmax ran over the queries. In a batch, dim=1 is the "
                    "queries' axis; take the softmax over the keys, dim=-1.",
                    zh_CN="你的权重是每一列和为 1，而不是每一行：softmax 沿查询进行了。"
                    "在批次中，dim=1 是查询所在的维度；应沿键做 softmax，即 dim=-1。",
                ),
                _forward_over_queries,
            ),
            Mistake(
                Words(
                    en="you divided the scores by the square root of x's width, "
                    "d_in. The scale is the width of the queries and keys, d_out: "
                    "keys.shape[-1].",
                    zh_CN="你把注意力分数除以了 x 宽度 d_in 的平方根。"
                    "缩放用的是查询和键"
                    "的宽度 d_out：keys.shape[-1]。",
                ),
                _forward_scaled_by_d_in,
            ),
            Mistake(
                Words(
                    en="you divided the scores by d_out. Their typical size grows as "
                    "sqrt(d_out): divide by the square root.",
                    zh_CN="你把注意力分数除以了 d_out。它们的典型大小按 sqrt(d_out) "
                    "增长：应除以平方根。",
                ),
                _forward_scaled_by_d_out,
            ),
            Mistake(
                Words(
                    en="your scores were not scaled: divide them by sqrt(d_out) "
                    "before the softmax.",
                    zh_CN="你的注意力分数没有缩放：在 softmax 之前把它们除以 "
                    "sqrt(d_out)。",
                ),
                _forward_not_scaled,
            ),
        ),
    ),
    Exercise(
        name="cross_attention_weights",
        reference=cross_attention_weights,
        cases=_weights_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your weights have one row per key: queries and keys are "
                    "swapped. Rows are queries: queries @ keys.transpose(-2, -1), "
                    "shape (..., T_q, T_kv).",
                    zh_CN="你的权重每个键一行：查询和键弄反了。行对应查询："
                    "queries @ keys.transpose(-2, -1)，形状为 (..., T_q, T_kv)。",
                ),
                _weights_swapped,
            ),
            Mistake(CAUSAL, _weights_causal),
            Mistake(
                Words(
                    en="the padded keys get 0, but the rows no longer sum to 1: the "
                    "mask came after the softmax. Set the padded scores to -inf "
                    "before the softmax.",
                    zh_CN="填充的键得到了 0，但每行之和不再是 1：掩码加在了 softmax "
                    "之后。应在 softmax 之前把填充位置的分数设为 -inf。",
                ),
                _weights_mask_after_softmax,
            ),
            Mistake(
                Words(
                    en="the padded keys still get weight, as if there were no mask. "
                    "`masked_fill` returns a new tensor and leaves its input as it "
                    "was: assign its result.",
                    zh_CN="填充的键仍然得到了权重，就像没有掩码一样。`masked_fill` "
                    "返回一个新张量，不改变输入：要把它的结果赋给变量。",
                ),
                _weights_unmasked,
            ),
            Mistake(
                Words(
                    en="your mask hides the real keys and keeps the pads. Here "
                    "True marks a padded key, the one to hide: fill where "
                    "key_padding_mask is True.",
                    zh_CN="你的掩码遮住了真实的键，却留下了填充。这里 True 标出的是"
                    "要遮住的填充键：在 key_padding_mask 为 True 的位置填充。",
                ),
                _weights_keep_polarity,
            ),
        ),
    ),
)
