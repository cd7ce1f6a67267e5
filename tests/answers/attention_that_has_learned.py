"""Answers to the exercises of the attention-that-has-learned page.

The wrong answers are mistakes found in public code: heads split by a view
without the transpose (reczoo/FuxiCTR#30, jsbaan/transformer-from-scratch#6,
the question of hyunwoongko/transformer#15), the scale by the model's width
instead of the head's (karpathy/ng-video-lecture#6, lucidrains/vit-pytorch#65,
omihub777/ViT-CIFAR#11), ``masked_fill`` whose result is dropped
(lucidrains/flamingo-pytorch#10, facebookresearch/ParlAI#3068), the mask
applied after the softmax (huggingface/pytorch-image-models#2236), the
softmax over the wrong axis (labmlai/annotated_deep_learning_paper_implementations#282),
and, for the mass, the wrong diagonal and Python's index -1 reading the last
key for query 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import Answers, Wrong

# --- previous_token_mass(attn_weights) ----------------------------------------


def mass_with_a_loop(attn_weights):
    batch, num_heads, num_tokens, _ = attn_weights.shape
    totals = attn_weights.new_zeros(num_heads)
    for i in range(1, num_tokens):  # query 0 has no previous token
        totals += attn_weights[:, :, i, i - 1].sum(dim=0)
    return totals / (batch * (num_tokens - 1))


def mass_with_indices(attn_weights):
    queries = torch.arange(1, attn_weights.shape[-1])  # 1 .. T - 1
    picked = attn_weights[:, :, queries, queries - 1]  # (b, h, T - 1)
    return picked.mean(dim=2).mean(dim=0)


def mass_next_token(attn_weights):
    return attn_weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def mass_dims_swapped(attn_weights):
    # dim1 and dim2 swapped: offset -1 then walks the keys' side.
    return attn_weights.diagonal(offset=-1, dim1=-1, dim2=-2).mean(dim=(0, 2))


def mass_counts_query_0(attn_weights):
    num_tokens = attn_weights.shape[-1]
    picked = [attn_weights[:, :, i, i - 1] for i in range(num_tokens)]
    return torch.stack(picked, dim=-1).mean(dim=(0, 2))


def mass_mean_over_heads(attn_weights):
    below = torch.diagonal(attn_weights, offset=-1, dim1=2, dim2=3)  # (b, h, T-1)
    return below.mean(dim=(0, 1))


def mass_summed(attn_weights):
    below = torch.diagonal(attn_weights, offset=-1, dim1=2, dim2=3)
    return below.sum(dim=2).sum(dim=0)


# --- attention_weights(model, token_ids) ---------------------------------------


def split_heads(t, num_heads):
    b, num_tokens, width = t.shape
    # (b, T, d) -> (b, T, h, hd) -> (b, h, T, hd)
    return t.view(b, num_tokens, num_heads, width // num_heads).transpose(1, 2)


@torch.no_grad()
def weights_by_hand(model, token_ids):
    attn = model.attn
    x = model.tok_emb(token_ids)
    if model.pos_emb is not None:
        x = x + model.pos_emb(torch.arange(token_ids.shape[1]))
    queries = split_heads(attn.W_query(x), attn.num_heads)
    keys = split_heads(attn.W_key(x), attn.num_heads)
    scores = queries @ keys.transpose(2, 3) / attn.head_dim**0.5
    num_tokens = token_ids.shape[1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1)


@torch.no_grad()
def weights_with_einops_style_permute(model, token_ids):
    attn = model.attn
    x = model.embed(token_ids)
    b, num_tokens, _ = x.shape
    shape = (b, num_tokens, attn.num_heads, attn.head_dim)
    queries = attn.W_query(x).reshape(shape).permute(0, 2, 1, 3)
    keys = attn.W_key(x).reshape(shape).permute(0, 2, 1, 3)
    scores = torch.einsum("bhqd,bhkd->bhqk", queries, keys) / attn.head_dim**0.5
    allowed = torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()
    return scores.masked_fill(~allowed, -torch.inf).softmax(dim=-1)


@torch.no_grad()
def weights_heads_by_view(model, token_ids):
    attn = model.attn
    x = model.embed(token_ids)
    b, num_tokens, _ = x.shape
    queries = attn.W_query(x).view(b, attn.num_heads, num_tokens, attn.head_dim)
    keys = attn.W_key(x).view(b, attn.num_heads, num_tokens, attn.head_dim)
    scores = queries @ keys.transpose(2, 3) / attn.head_dim**0.5
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


@torch.no_grad()
def weights_scaled_by_d_model(model, token_ids):
    attn = model.attn
    x = model.embed(token_ids)
    queries = split_heads(attn.W_query(x), attn.num_heads)
    keys = split_heads(attn.W_key(x), attn.num_heads)
    d_model = x.shape[-1]
    scores = queries @ keys.transpose(2, 3) / d_model**0.5
    num_tokens = x.shape[1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


@torch.no_grad()
def weights_fill_not_assigned(model, token_ids):
    attn = model.attn
    x = model.embed(token_ids)
    queries = split_heads(attn.W_query(x), attn.num_heads)
    keys = split_heads(attn.W_key(x), attn.num_heads)
    scores = queries @ keys.transpose(2, 3) / attn.head_dim**0.5
    scores.masked_fill(attn.mask.bool()[: x.shape[1], : x.shape[1]], -torch.inf)
    return torch.softmax(scores, dim=-1)


@torch.no_grad()
def weights_masked_after_softmax(model, token_ids):
    attn = model.attn
    x = model.embed(token_ids)
    queries = split_heads(attn.W_query(x), attn.num_heads)
    keys = split_heads(attn.W_key(x), attn.num_heads)
    weights = F.softmax(queries @ keys.transpose(2, 3) / attn.head_dim**0.5, dim=-1)
    num_tokens = x.shape[1]
    return weights * torch.tril(torch.ones(num_tokens, num_tokens))


@torch.no_grad()
def weights_softmax_dim_2(model, token_ids):
    attn = model.attn
    x = model.embed(token_ids)
    queries = split_heads(attn.W_query(x), attn.num_heads)
    keys = split_heads(attn.W_key(x), attn.num_heads)
    scores = queries @ keys.transpose(2, 3) / attn.head_dim**0.5
    num_tokens = x.shape[1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=2)


@torch.no_grad()
def weights_without_positions(model, token_ids):
    attn = model.attn
    x = model.tok_emb(token_ids)  # the position embeddings left out
    queries = split_heads(attn.W_query(x), attn.num_heads)
    keys = split_heads(attn.W_key(x), attn.num_heads)
    scores = queries @ keys.transpose(2, 3) / attn.head_dim**0.5
    num_tokens = x.shape[1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


ANSWERS = [
    Answers(
        "previous_token_mass",
        right=(mass_with_a_loop, mass_with_indices),
        wrong={
            "the diagonal above the main one (the next token)": Wrong(
                mass_next_token, "key i + 1", "i + 1"
            ),
            "a transpose of the wrong dimensions (dim1 and dim2 swapped)": Wrong(
                mass_dims_swapped, "dim1=-2", "dim1=-2"
            ),
            "query 0 counted, reading key -1": Wrong(
                mass_counts_query_0, "Query 0 has no previous token", "查询 0"
            ),
            "the mean over the heads instead of the queries": Wrong(
                mass_mean_over_heads, "one number per head", "每个头"
            ),
            "a sum instead of a mean": Wrong(mass_summed, "not means", "平均"),
        },
    ),
    Answers(
        "attention_weights",
        right=(weights_by_hand, weights_with_einops_style_permute),
        wrong={
            "heads split by a view without the transpose": Wrong(
                weights_heads_by_view, "transpose(1, 2)", "transpose(1, 2)"
            ),
            "the scores scaled by sqrt(d_model), not sqrt(head_dim)": Wrong(
                weights_scaled_by_d_model, "sqrt(head_dim)", "sqrt(head_dim)"
            ),
            "masked_fill without assigning its result": Wrong(
                weights_fill_not_assigned, "assign its result", "赋给变量"
            ),
            "the mask applied after the softmax": Wrong(
                weights_masked_after_softmax, "after the softmax", "之后"
            ),
            "the softmax over the queries (dim=2)": Wrong(
                weights_softmax_dim_2, "dim=-1", "dim=-1"
            ),
            "the position embeddings left out": Wrong(
                weights_without_positions, "position embeddings", "位置嵌入"
            ),
        },
    ),
]
