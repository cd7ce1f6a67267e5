"""Answers to the exercises of the bounded-context page."""

from __future__ import annotations

import torch

from . import Answers, Wrong


def mask_from_loops(num_queries, num_keys, window=None, sink_tokens=0):
    # One query, one key at a time, the rule as the page states it.
    hidden = torch.zeros(num_queries, num_keys, dtype=torch.bool)
    for i in range(num_queries):
        p = i + num_keys - num_queries
        for j in range(num_keys):
            too_old = window is not None and j <= p - window and j >= sink_tokens
            hidden[i, j] = j > p or too_old
    return hidden


def mask_from_triangles(num_queries, num_keys, window=None, sink_tokens=0):
    # The future above one diagonal, the too-old below another, sinks as columns.
    offset = num_keys - num_queries
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool)
    hidden = torch.triu(ones, diagonal=offset + 1)
    if window is not None:
        too_old = torch.tril(ones, diagonal=offset - window)
        too_old[:, :sink_tokens] = False
        hidden = hidden | too_old
    return hidden


def one_key_too_many(num_queries, num_keys, window=None, sink_tokens=0):
    p = torch.arange(num_keys - num_queries, num_keys)[:, None]
    j = torch.arange(num_keys)[None, :]
    hidden = j > p
    if window is not None:
        hidden |= (j < p - window) & (j >= sink_tokens)
    return hidden


def top_left(num_queries, num_keys, window=None, sink_tokens=0):
    p = torch.arange(num_queries)[:, None]
    j = torch.arange(num_keys)[None, :]
    hidden = j > p
    if window is not None:
        hidden |= (j <= p - window) & (j >= sink_tokens)
    return hidden


def no_sinks(num_queries, num_keys, window=None, sink_tokens=0):
    p = torch.arange(num_keys - num_queries, num_keys)[:, None]
    j = torch.arange(num_keys)[None, :]
    hidden = j > p
    if window is not None:
        hidden |= j <= p - window
    return hidden


def true_means_visible(num_queries, num_keys, window=None, sink_tokens=0):
    return ~mask_from_loops(num_queries, num_keys, window, sink_tokens)


def _masked_scores(queries, keys, causal):
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    if causal:
        num_queries, num_keys = scores.shape[-2:]
        future = torch.ones(num_queries, num_keys, dtype=torch.bool).triu(
            num_keys - num_queries + 1
        )
        scores = scores.masked_fill(future, -torch.inf)
    return scores


def sink_as_a_column(queries, keys, values, causal=False, sinks=None):
    # The extra column: (..., h, Tq, Tk + 1), softmax, drop the sink's column.
    scores = _masked_scores(queries, keys, causal)
    column = sinks[:, None, None].expand(*scores.shape[:-1], 1)
    with_sink = torch.cat([scores, column], dim=-1)
    weights = torch.softmax(with_sink, dim=-1)[..., :-1]
    return weights @ values, torch.logsumexp(with_sink, dim=-1)


def sink_as_a_sigmoid(queries, keys, values, causal=False, sinks=None):
    # Ordinary attention, rescaled by sigmoid(lse - s).
    scores = _masked_scores(queries, keys, causal)
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    sink = sinks[:, None, None]
    out = torch.softmax(scores, dim=-1) @ values * torch.sigmoid(lse - sink)
    return out, torch.logaddexp(lse, sink)[..., 0]


def sink_forgotten(queries, keys, values, causal=False, sinks=None):
    scores = _masked_scores(queries, keys, causal)
    return torch.softmax(scores, dim=-1) @ values, torch.logsumexp(scores, dim=-1)


def renormalised_after_dropping(queries, keys, values, causal=False, sinks=None):
    # The column dropped, then the row normalised again: the sink undone.
    out, lse = sink_as_a_column(queries, keys, values, causal, sinks)
    scores = _masked_scores(queries, keys, causal)
    return torch.softmax(scores, dim=-1) @ values, lse


def lse_of_the_keys(queries, keys, values, causal=False, sinks=None):
    out, _ = sink_as_a_column(queries, keys, values, causal, sinks)
    return out, torch.logsumexp(_masked_scores(queries, keys, causal), dim=-1)


def sink_scaled_like_a_score(queries, keys, values, causal=False, sinks=None):
    scaled = sinks / queries.shape[-1] ** 0.5
    return sink_as_a_column(queries, keys, values, causal, scaled)


ANSWERS = [
    Answers(
        "sliding_window_mask",
        right=(mask_from_loops, mask_from_triangles),
        wrong={
            "a window of window + 1 keys": Wrong(
                one_key_too_many, "window + 1", "window + 1"
            ),
            "queries aligned to the first key": Wrong(top_left, "position 0", "位置 0"),
            "the sink tokens forgotten": Wrong(no_sinks, "sink tokens", "汇词元"),
            "True where a query may look": Wrong(true_means_visible, "True"),
        },
    ),
    Answers(
        "sink_attention",
        right=(sink_as_a_column, sink_as_a_sigmoid),
        wrong={
            "no sink at all": Wrong(sink_forgotten, "without the sink", "没有汇"),
            "the row renormalised after the column is dropped": Wrong(
                renormalised_after_dropping, "normalised again", "重新归一化"
            ),
            "a log-sum-exp of the keys alone": Wrong(
                lse_of_the_keys, "log-sum-exp", "log-sum-exp"
            ),
            "the sink divided by sqrt(head_dim)": Wrong(
                sink_scaled_like_a_score, "sqrt(head_dim)", "sqrt(head_dim)"
            ),
        },
    ),
]
