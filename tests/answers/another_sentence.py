"""Answers to the exercises of the another-sentence page.

The wrong answers are mistakes found in public code and threads: the softmax
over the queries (jadore801120/attention-is-all-you-need-pytorch#52,
nerdai/llms-from-scratch-rs#30), the scale by the wrong width
(lucidrains/vit-pytorch#65, Graylab/DL4Proteins-notebooks#12), the scale by
d_k instead of its square root (charliezchen/scaling-matrix-preconditioning#2),
``masked_fill`` whose result is dropped (lucidrains/flamingo-pytorch#10,
facebookresearch/ParlAI#3068), scores multiplied by a 0/1 mask
(georg-wolflein/good-features#1, huggingface/transformers#542), a mask of the
wrong polarity (lucidrains/halonet-pytorch#4), and an in-place fill that
changes the caller's scores (the discussion of
KaijuML/data-to-text-hierarchical#4).
"""

from __future__ import annotations

import math

import torch

from . import Answers, Wrong

# --- two_widths_forward(self, x) ----------------------------------------------


def forward_one_query_at_a_time(self, x):
    # The page's first cells, for every query in turn.
    keys = x @ self.W_key  # (T, d_k)
    values = x @ self.W_value  # (T, d_v)
    rows = []
    for x_i in x:
        query = x_i @ self.W_query  # (d_k,)
        weights = torch.softmax(keys @ query / math.sqrt(keys.shape[1]), dim=0)
        rows.append(weights @ values)  # (d_v,)
    return torch.stack(rows)


def forward_with_einsum(self, x):
    queries = torch.einsum("td,dk->tk", x, self.W_query)
    keys = torch.einsum("td,dk->tk", x, self.W_key)
    values = torch.einsum("td,dv->tv", x, self.W_value)
    scores = torch.einsum("qk,sk->qs", queries, keys) * keys.shape[-1] ** -0.5
    return torch.einsum("qs,sv->qv", scores.softmax(dim=1), values)


def forward_scaled_by_d_v(self, x):
    queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
    scores = queries @ keys.T / math.sqrt(values.shape[-1])
    return torch.softmax(scores, dim=-1) @ values


def forward_softmax_dim_0(self, x):
    queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
    weights = torch.softmax(queries @ keys.T / math.sqrt(keys.shape[-1]), dim=0)
    return weights @ values


def forward_not_scaled(self, x):
    queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
    return torch.softmax(queries @ keys.T, dim=-1) @ values


def forward_scaled_by_d_k(self, x):
    queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
    d_k = keys.shape[-1]
    return torch.softmax(queries @ keys.T / d_k, dim=-1) @ values


def forward_scaled_by_d_in(self, x):
    queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
    d_in = self.W_query.shape[0]
    return torch.softmax(queries @ keys.T / d_in**0.5, dim=-1) @ values


def forward_context_transposed(self, x):
    queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
    weights = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
    return values.T @ weights.T  # (d_v, T): the context vectors as columns


# --- mask_with_neg_inf(attn_scores) -------------------------------------------


def mask_with_where(attn_scores):
    num_tokens = attn_scores.shape[-1]
    rows = torch.arange(num_tokens)[:, None]  # (T, 1): query i
    cols = torch.arange(num_tokens)[None, :]  # (1, T): key j
    return torch.where(cols > rows, float("-inf"), attn_scores)


def mask_by_adding(attn_scores):
    # -inf where j > i, 0 elsewhere, added to the scores.
    num_tokens = attn_scores.shape[-1]
    bias = torch.full((num_tokens, num_tokens), float("-inf")).triu(1)
    return attn_scores + bias.to(attn_scores.dtype)


def mask_fill_not_assigned(attn_scores):
    num_tokens = attn_scores.shape[-1]
    mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)
    attn_scores.masked_fill(mask.bool(), -torch.inf)
    return attn_scores


def mask_by_multiplying(attn_scores):
    num_tokens = attn_scores.shape[-1]
    mask_simple = torch.tril(torch.ones(num_tokens, num_tokens))  # 1 = keep
    return attn_scores * mask_simple


def mask_true_means_keep(attn_scores):
    num_tokens = attn_scores.shape[-1]
    keep = torch.tril(torch.ones(num_tokens, num_tokens)).bool()
    return attn_scores.masked_fill(keep, -torch.inf)


def mask_hides_the_diagonal(attn_scores):
    num_tokens = attn_scores.shape[-1]
    mask = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
    return attn_scores.masked_fill(mask, -torch.inf)


def mask_in_place(attn_scores):
    num_tokens = attn_scores.shape[-1]
    mask = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return attn_scores.masked_fill_(mask, -torch.inf)


ANSWERS = [
    Answers(
        "two_widths_forward",
        right=(forward_one_query_at_a_time, forward_with_einsum),
        wrong={
            "the scores scaled by sqrt(d_v), the values' width": Wrong(
                forward_scaled_by_d_v, "values' width", "d_v"
            ),
            "the softmax over the wrong axis (dim=0)": Wrong(
                forward_softmax_dim_0, "dim=-1", "dim=-1"
            ),
            "the scaling forgotten": Wrong(
                forward_not_scaled, "not scaled", "没有缩放"
            ),
            "the scores divided by d_k, not its square root": Wrong(
                forward_scaled_by_d_k, "divide by the square root", "平方根"
            ),
            "the scores scaled by sqrt(d_in)": Wrong(
                forward_scaled_by_d_in, "input's width", "输入宽度"
            ),
            "the context vectors transposed": Wrong(
                forward_context_transposed, "same sizes in another order", "顺序不同"
            ),
        },
    ),
    Answers(
        "mask_with_neg_inf",
        right=(mask_with_where, mask_by_adding),
        wrong={
            "masked_fill without assigning its result": Wrong(
                mask_fill_not_assigned, "assign its result", "赋给变量"
            ),
            "the scores multiplied by a 0/1 mask": Wrong(
                mask_by_multiplying, "exp(0) = 1", "-inf"
            ),
            "a mask with True meaning keep": Wrong(
                mask_true_means_keep, "wrong polarity", "取值约定"
            ),
            "the diagonal hidden too": Wrong(
                mask_hides_the_diagonal, "must see itself", "看到自己"
            ),
            "masked_fill_ in place, the caller's scores changed": Wrong(
                mask_in_place, "in place", "原地"
            ),
        },
    ),
]
