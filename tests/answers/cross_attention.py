"""Answers to the exercises of the cross-attention page.

The wrong answers are mistakes found in public code: a causal mask applied to
cross-attention (huggingface/transformers#48172, Mllama's cross-attention
silently causal under SDPA; NVIDIA/TransformerEngine#629), the softmax over
the wrong axis (PetrochukM/PyTorch-NLP#2,
labmlai/annotated_deep_learning_paper_implementations#282), the scale by
the model's width instead of the keys' (karpathy/ng-video-lecture#6),
``masked_fill`` whose result is dropped (lucidrains/flamingo-pytorch#10,
facebookresearch/ParlAI#3068), the mask applied after the softmax
(huggingface/pytorch-image-models#2236), a mask of the wrong polarity
(lucidrains/halonet-pytorch#4), and the queries taken from the wrong
sequence (the question of google-research/language-table#23).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import Answers, Wrong

# --- cross_attention_forward(self, x, context) --------------------------------


def forward_with_sdpa(self, x, context):
    # PyTorch's fused function scales by the queries' width, d_out.
    return F.scaled_dot_product_attention(
        self.W_query(x), self.W_key(context), self.W_value(context)
    )


def forward_with_einsum(self, x, context):
    queries = self.W_query(x)  # (..., T_q, d_out)
    keys = self.W_key(context)  # (..., T_kv, d_out)
    values = self.W_value(context)
    scores = torch.einsum("...qd,...kd->...qk", queries, keys)
    weights = (scores / math.sqrt(self.d_out)).softmax(dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, values)


def forward_causal(self, x, context):
    queries, keys = self.W_query(x), self.W_key(context)
    scores = queries @ keys.transpose(-2, -1)
    n_q, n_kv = scores.shape[-2], scores.shape[-1]
    mask = torch.triu(torch.ones(n_q, n_kv), diagonal=1).bool()
    scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ self.W_value(context)


def forward_softmax_dim_1(self, x, context):
    # dim=1 is right for one sequence (T_q, T_kv), wrong in a batch.
    queries, keys = self.W_query(x), self.W_key(context)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    return torch.softmax(scores, dim=1) @ self.W_value(context)


def forward_scaled_by_d_in(self, x, context):
    queries, keys = self.W_query(x), self.W_key(context)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.d_in)
    return torch.softmax(scores, dim=-1) @ self.W_value(context)


def forward_roles_swapped(self, x, context):
    queries = self.W_query(context)
    keys, values = self.W_key(x), self.W_value(x)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ values


def forward_not_scaled(self, x, context):
    scores = self.W_query(x) @ self.W_key(context).transpose(-2, -1)
    return torch.softmax(scores, dim=-1) @ self.W_value(context)


def forward_scaled_by_d_out(self, x, context):
    queries, keys = self.W_query(x), self.W_key(context)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]  # no square root
    return torch.softmax(scores, dim=-1) @ self.W_value(context)


# --- cross_attention_weights(queries, keys, key_padding_mask=None) ------------


def weights_with_where(queries, keys, key_padding_mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if key_padding_mask is not None:
        hidden = key_padding_mask[..., None, :]  # (..., 1, T_kv)
        scores = torch.where(hidden, float("-inf"), scores)
    return scores.softmax(dim=-1)


def weights_renormalized(queries, keys, key_padding_mask=None):
    # Mask after the softmax, then rescale the rows: equal in exact arithmetic.
    weights = torch.softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)
    if key_padding_mask is None:
        return weights
    weights = weights * ~key_padding_mask.unsqueeze(-2)
    return weights / weights.sum(dim=-1, keepdim=True)


def weights_zeroed_after_softmax(queries, keys, key_padding_mask=None):
    weights = torch.softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)
    if key_padding_mask is not None:
        weights = weights.masked_fill(key_padding_mask.unsqueeze(-2), 0)
    return weights


def weights_fill_not_assigned(queries, keys, key_padding_mask=None):
    scores = queries @ keys.mT / keys.shape[-1] ** 0.5
    if key_padding_mask is not None:
        scores.masked_fill(key_padding_mask.unsqueeze(-2), float("-inf"))
    return torch.softmax(scores, dim=-1)


def weights_true_means_keep(queries, keys, key_padding_mask=None):
    scores = queries @ keys.mT / keys.shape[-1] ** 0.5
    if key_padding_mask is not None:
        keep = key_padding_mask.unsqueeze(-2)
        scores = scores.masked_fill(keep == 0, float("-inf"))
    return torch.softmax(scores, dim=-1)


def weights_keys_first(queries, keys, key_padding_mask=None):
    scores = keys @ queries.transpose(-2, -1) / keys.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1)


def weights_causal(queries, keys, key_padding_mask=None):
    scores = queries @ keys.mT / keys.shape[-1] ** 0.5
    future = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    if key_padding_mask is not None:
        hidden = key_padding_mask.unsqueeze(-2)
        scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores, dim=-1)


ANSWERS = [
    Answers(
        "cross_attention_forward",
        right=(forward_with_sdpa, forward_with_einsum),
        wrong={
            "a causal mask on cross-attention": Wrong(
                forward_causal, "causal mask", "因果掩码"
            ),
            "the softmax over dim=1, the queries' axis in a batch": Wrong(
                forward_softmax_dim_1, "over the keys, dim=-1", "dim=-1"
            ),
            "the scores scaled by sqrt(d_in) instead of sqrt(d_out)": Wrong(
                forward_scaled_by_d_in, "d_out", "d_out"
            ),
            "queries and keys from the wrong sequences (roles swapped)": Wrong(
                forward_roles_swapped, "roles are swapped", "角色互换"
            ),
            "the scores divided by d_out, not its square root": Wrong(
                forward_scaled_by_d_out, "divide by the square root", "平方根"
            ),
            "the scaling forgotten": Wrong(
                forward_not_scaled, "not scaled", "没有缩放"
            ),
        },
    ),
    Answers(
        "cross_attention_weights",
        right=(weights_with_where, weights_renormalized),
        wrong={
            "queries and keys swapped (T_q and T_kv transposed)": Wrong(
                weights_keys_first, "queries and keys are swapped", "弄反"
            ),
            "a causal mask on cross-attention": Wrong(
                weights_causal, "causal mask", "因果掩码"
            ),
            "the mask added after the softmax": Wrong(
                weights_zeroed_after_softmax, "after the softmax", "之后"
            ),
            "masked_fill without assigning its result": Wrong(
                weights_fill_not_assigned, "assign its result", "赋给变量"
            ),
            "a padding mask read with True meaning keep": Wrong(
                weights_true_means_keep, "True marks a padded key", "True"
            ),
        },
    ),
]
