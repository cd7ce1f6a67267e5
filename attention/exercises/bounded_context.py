"""The exercises of the page bounded-context."""

from __future__ import annotations

import torch

from ..flash import flash_attention
from ..window import window_mask
from .grader import Case, Exercise, Mistake, Words


def _window_cases() -> list[Case]:
    # (num_queries, num_keys, window, sink_tokens); queries are the last
    # num_queries positions of the keys.
    return [
        Case("a window of 2 over 5 tokens", "5 个词元，窗口为 2", (5, 5, 2)),
        Case("a window of 3, one sink token", "窗口为 3，一个汇词元", (7, 7, 3, 1)),
        Case(
            "two new queries after four cached keys",
            "四个已缓存的键之后的两个新查询",
            (2, 6, 3),
        ),
        Case("no window: the causal mask", "没有窗口：因果掩码", (4, 4, None)),
        Case(
            "a window longer than the sequence",
            "窗口比序列还长",
            (3, 3, 8),
        ),
        Case(
            "a window of 1 and two sink tokens",
            "窗口为 1，两个汇词元",
            (6, 6, 1, 2),
        ),
        Case(
            "one query after six keys, window 2, three sink tokens",
            "六个键之后的一个查询，窗口为 2，三个汇词元",
            (1, 7, 2, 3),
        ),
    ]


def _positions(num_queries: int, num_keys: int) -> tuple[torch.Tensor, torch.Tensor]:
    # (Tq, 1) and (1, Tk): positions, the queries at the end of the keys
    query = torch.arange(num_keys - num_queries, num_keys)[:, None]
    return query, torch.arange(num_keys)[None, :]


def _one_key_too_many(num_queries, num_keys, window=None, sink_tokens=0):
    # p - j <= window: window + 1 keys, flash-attn's window_size=(window, 0)
    p, j = _positions(num_queries, num_keys)
    hidden = j > p
    if window is not None:
        hidden |= (j < p - window) & (j >= sink_tokens)
    return hidden


def _top_left(num_queries, num_keys, window=None, sink_tokens=0):
    # queries at positions 0 .. Tq - 1, as if no key came before them
    p = torch.arange(num_queries)[:, None]
    j = torch.arange(num_keys)[None, :]
    hidden = j > p
    if window is not None:
        hidden |= (j <= p - window) & (j >= sink_tokens)
    return hidden


def _sinks_forgotten(num_queries, num_keys, window=None, sink_tokens=0):
    p, j = _positions(num_queries, num_keys)
    hidden = j > p
    if window is not None:
        hidden |= j <= p - window
    return hidden


def _sinks_from_the_future(num_queries, num_keys, window=None, sink_tokens=0):
    # the sink tokens shown to every query, even one that comes before them
    p, j = _positions(num_queries, num_keys)
    hidden = j > p
    if window is not None:
        hidden |= j <= p - window
    return hidden & (j >= sink_tokens)


def _sink_cases() -> list[Case]:
    gen = torch.Generator().manual_seed(0)

    def qkv(heads, num_queries, num_keys, d=4):
        # (h, Tq, d), (h, Tk, d), (h, Tk, d), float64
        q = torch.randn(heads, num_queries, d, generator=gen, dtype=torch.float64)
        k = torch.randn(heads, num_keys, d, generator=gen, dtype=torch.float64)
        v = torch.randn(heads, num_keys, d, generator=gen, dtype=torch.float64)
        return q, k, v

    def sinks(*values):
        return torch.tensor(values, dtype=torch.float64)  # (h,)

    return [
        Case(
            "two heads, causal, 5 tokens",
            "两个头，因果，5 个词元",
            qkv(2, 5, 5),
            {"causal": True, "sinks": sinks(0.5, -1.0)},
        ),
        Case(
            "two new queries after four cached keys",
            "四个已缓存的键之后的两个新查询",
            qkv(2, 2, 6),
            {"causal": True, "sinks": sinks(0.0, 1.0)},
        ),
        Case(
            "no causal mask",
            "没有因果掩码",
            qkv(1, 3, 4),
            {"causal": False, "sinks": sinks(0.3)},
        ),
        Case(
            "a large sink: almost every weight goes to it",
            "很大的汇：几乎所有权重都流向它",
            qkv(1, 4, 4),
            {"causal": True, "sinks": sinks(8.0)},
        ),
        Case(
            "a batch of two sequences, two heads",
            "两条序列的批次，两个头",
            tuple(x.expand(2, -1, -1, -1).clone() for x in qkv(2, 3, 3)),
            {"causal": True, "sinks": sinks(-0.5, 2.0)},
        ),
    ]


def _scores(queries, keys, causal):
    # (..., h, Tq, d) @ (..., h, d, Tk) -> (..., h, Tq, Tk), scaled and masked
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    if causal:
        num_queries, num_keys = scores.shape[-2:]
        scores = scores.masked_fill(window_mask(num_queries, num_keys), -torch.inf)
    return scores


def _no_sink(queries, keys, values, causal=False, sinks=None):
    scores = _scores(queries, keys, causal)
    return torch.softmax(scores, dim=-1) @ values, torch.logsumexp(scores, dim=-1)


def _renormalised(queries, keys, values, causal=False, sinks=None):
    # the sink's column dropped, then each row normalised again to sum to 1
    scores = _scores(queries, keys, causal)
    lse = torch.logsumexp(scores, dim=-1)
    with_sink = torch.logaddexp(lse, sinks[:, None])
    return torch.softmax(scores, dim=-1) @ values, with_sink


def _lse_without_sink(queries, keys, values, causal=False, sinks=None):
    scores = _scores(queries, keys, causal)
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)  # (..., h, Tq, 1)
    share = torch.sigmoid(lse - sinks[:, None, None])  # the real keys' share
    return (torch.softmax(scores, dim=-1) @ values) * share, lse[..., 0]


def _sink_scaled(queries, keys, values, causal=False, sinks=None):
    # the sink divided by sqrt(d) as if it were a dot product
    scaled = sinks / queries.shape[-1] ** 0.5
    scores = _scores(queries, keys, causal)
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    with_sink = torch.logaddexp(lse, scaled[:, None, None])
    out = torch.softmax(scores, dim=-1) @ values * torch.exp(lse - with_sink)
    return out, with_sink[..., 0]


EXERCISES = (
    Exercise(
        name="sliding_window_mask",
        reference=window_mask,
        cases=_window_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your window shows window + 1 keys: a query at p may see "
                    "key j when p - window < j, not p - window <= j (that is "
                    "flash-attn's window_size=(window, 0)).",
                    zh_CN="你的窗口显示了 window + 1 个键：位置 p 的查询能看到键 j "
                    "的条件是 p - window < j，而不是 p - window <= j（那是 "
                    "flash-attn 的 window_size=(window, 0)）。",
                ),
                _one_key_too_many,
            ),
            Mistake(
                Words(
                    en="your queries start at position 0. They are the last "
                    "num_queries positions: query i stands at "
                    "i + num_keys - num_queries.",
                    zh_CN="你的查询从位置 0 开始。它们是最后 num_queries 个位置："
                    "查询 i 位于 i + num_keys - num_queries。",
                ),
                _top_left,
            ),
            Mistake(
                Words(
                    en="your mask forgets the sink tokens: the first sink_tokens "
                    "keys stay visible to every query after them, however far "
                    "back.",
                    zh_CN="你的掩码忘了汇词元：最前面 sink_tokens 个键，无论多远，"
                    "对它们之后的每个查询都保持可见。",
                ),
                _sinks_forgotten,
            ),
            Mistake(
                Words(
                    en="your sink tokens are visible to queries that come before "
                    "them: a sink is still a key of the past, hide it from "
                    "earlier queries.",
                    zh_CN="你的汇词元对位于它们之前的查询也可见：汇仍然是过去的键，"
                    "要对更早的查询遮住它。",
                ),
                _sinks_from_the_future,
            ),
        ),
    ),
    Exercise(
        name="sink_attention",
        reference=flash_attention,
        cases=_sink_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your output is attention without the sink: the sink "
                    "joins each row's softmax as one more score, and its column "
                    "is dropped before the values.",
                    zh_CN="你的输出是没有汇的注意力：汇作为多出来的一个分数参与每一行"
                    "的 softmax，在乘以值之前再丢掉它那一列。",
                ),
                _no_sink,
            ),
            Mistake(
                Words(
                    en="your weights on the keys sum to 1: the row was normalised "
                    "again after the sink's column was dropped. The sink's share "
                    "must stay out of the output.",
                    zh_CN="你在键上的权重之和为 1：丢掉汇那一列之后，这一行又被重新"
                    "归一化了。汇分走的那部分权重必须留在输出之外。",
                ),
                _renormalised,
            ),
            Mistake(
                Words(
                    en="your output is right, but your log-sum-exp leaves the "
                    "sink out: it is logaddexp(lse of the keys, sink).",
                    zh_CN="你的输出是对的，但 log-sum-exp 漏掉了汇：它应当是 "
                    "logaddexp(键的 lse, sink)。",
                ),
                _lse_without_sink,
            ),
            Mistake(
                Words(
                    en="your sink is divided by sqrt(head_dim). The sink is "
                    "compared with the scaled scores as it is: it is not a dot "
                    "product.",
                    zh_CN="你把汇除以了 sqrt(head_dim)。汇直接与缩放后的分数相比："
                    "它不是点积。",
                ),
                _sink_scaled,
            ),
        ),
    ),
)
