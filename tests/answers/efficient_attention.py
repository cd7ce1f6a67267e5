"""Answers to the exercises of the efficient-attention page."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention import causal_mask

from . import Answers, Wrong

NAMES = ("W_query", "W_key", "W_value")

# --- load_fused_weights -------------------------------------------------------


def through_load_state_dict(module, state):
    # The module's own state_dict names; the mask buffer is not in `state`.
    own = {
        "qkv.weight": torch.cat([state[f"{n}.weight"] for n in NAMES], dim=0),
        "out_proj.weight": state["out_proj.weight"],
        "out_proj.bias": state["out_proj.bias"],
    }
    if module.qkv.bias is not None:
        own["qkv.bias"] = torch.cat([state[f"{n}.bias"] for n in NAMES])
    module.load_state_dict(own, strict=False)


def slice_by_slice(module, state):
    d_out = module.d_out
    with torch.no_grad():
        for i, name in enumerate(NAMES):
            rows = slice(i * d_out, (i + 1) * d_out)
            module.qkv.weight[rows] = state[f"{name}.weight"]
            if module.qkv.bias is not None:
                module.qkv.bias[rows] = state[f"{name}.bias"]
        module.out_proj.weight[:] = state["out_proj.weight"]
        module.out_proj.bias[:] = state["out_proj.bias"]


def _finish(module, state, qkv_bias=True):
    with torch.no_grad():
        module.out_proj.weight.copy_(state["out_proj.weight"])
        module.out_proj.bias.copy_(state["out_proj.bias"])
        if qkv_bias and module.qkv.bias is not None:
            module.qkv.bias.copy_(torch.cat([state[f"{n}.bias"] for n in NAMES]))


def interleaved_per_head(module, state):
    h, hd = module.num_heads, module.head_dim
    blocks = []
    for head in range(h):
        for name in NAMES:
            blocks.append(state[f"{name}.weight"][head * hd : (head + 1) * hd])
    with torch.no_grad():
        module.qkv.weight.copy_(torch.cat(blocks))
        module.out_proj.weight.copy_(state["out_proj.weight"])
        module.out_proj.bias.copy_(state["out_proj.bias"])
        if module.qkv.bias is not None:
            biases = [
                state[f"{name}.bias"][head * hd : (head + 1) * hd]
                for head in range(h)
                for name in NAMES
            ]
            module.qkv.bias.copy_(torch.cat(biases))


def bias_forgotten(module, state):
    with torch.no_grad():
        module.qkv.weight.copy_(torch.cat([state[f"{n}.weight"] for n in NAMES]))
    _finish(module, state, qkv_bias=False)


def side_by_side(module, state):
    stacked = torch.cat([state[f"{n}.weight"] for n in NAMES], dim=1)
    module.qkv.weight = nn.Parameter(stacked)
    _finish(module, state)


def transposed_side_by_side(module, state):
    stacked = torch.cat([state[f"{n}.weight"].T for n in NAMES], dim=1)
    module.qkv.weight = nn.Parameter(stacked)
    _finish(module, state)


# --- sdpa_forward ---------------------------------------------------------------


def chunked_then_heads(module, x):
    b, T, _ = x.shape
    q, k, v = module.qkv(x).chunk(3, dim=-1)  # 3 x (b, T, d_out)
    q, k, v = (t.view(b, T, module.num_heads, -1).transpose(1, 2) for t in (q, k, v))
    mask = ~causal_mask(T)  # SDPA: True = may attend
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return module.out_proj(out.transpose(1, 2).reshape(b, T, -1))


def by_hand(module, x):
    b, T, _ = x.shape
    qkv = module.qkv(x).reshape(b, T, 3, module.num_heads, module.head_dim)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (3, b, h, T, hd)
    scores = q @ k.transpose(-2, -1) / module.head_dim**0.5
    scores = scores.masked_fill(causal_mask(T), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # (b, h, T, hd)
    return module.out_proj(out.permute(0, 2, 1, 3).reshape(b, T, module.d_out))


def _heads(module, x, order="3h"):
    b, T, _ = x.shape
    h, hd = module.num_heads, module.head_dim
    if order == "3h":
        return module.qkv(x).view(b, T, 3, h, hd).unbind(2)
    return module.qkv(x).view(b, T, h, 3, hd).unbind(3)


def heads_before_qkv(module, x):
    b, T, _ = x.shape
    q, k, v = (t.transpose(1, 2) for t in _heads(module, x, order="h3"))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return module.out_proj(out.transpose(1, 2).reshape(b, T, module.d_out))


def tokens_and_heads_not_swapped(module, x):
    b, T, _ = x.shape
    q, k, v = _heads(module, x)  # (b, T, h, hd), straight into SDPA
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return module.out_proj(out.reshape(b, T, module.d_out))


def merged_without_transpose(module, x):
    b, T, _ = x.shape
    q, k, v = (t.transpose(1, 2) for t in _heads(module, x))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (b, h, T, hd)
    return module.out_proj(out.reshape(b, T, module.d_out))


def package_mask_unflipped(module, x):
    b, T, _ = x.shape
    q, k, v = (t.transpose(1, 2) for t in _heads(module, x))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(T))
    return module.out_proj(out.transpose(1, 2).reshape(b, T, module.d_out))


def is_causal_forgotten(module, x):
    b, T, _ = x.shape
    q, k, v = (t.transpose(1, 2) for t in _heads(module, x))
    out = F.scaled_dot_product_attention(q, k, v)
    return module.out_proj(out.transpose(1, 2).reshape(b, T, module.d_out))


def queries_scaled_first(module, x):
    b, T, _ = x.shape
    q, k, v = (t.transpose(1, 2) for t in _heads(module, x))
    q = q / module.head_dim**0.5  # as in the chapter's class ...
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # ... and again
    return module.out_proj(out.transpose(1, 2).reshape(b, T, module.d_out))


ANSWERS = [
    Answers(
        "load_fused_weights",
        right=(through_load_state_dict, slice_by_slice),
        wrong={
            "q, k, v interleaved per head (fused rows in the wrong order)": Wrong(
                interleaved_per_head, "head by head", "按头交错"
            ),
            "the qkv bias not copied": Wrong(bias_forgotten, "qkv bias", "偏置"),
            "the three weights side by side (dim=1)": Wrong(
                side_by_side, "side by side (dim=1)", "dim=0"
            ),
            "the transposes W.T side by side (a transpose of the wrong layout)": Wrong(
                transposed_side_by_side, "without .T", "不要 .T"
            ),
        },
    ),
    Answers(
        "sdpa_forward",
        right=(chunked_then_heads, by_hand),
        wrong={
            "the fused output split as (b, T, h, 3, hd)": Wrong(
                heads_before_qkv, "view(b, T, 3, h, hd)", "view(b, T, 3, h, hd)"
            ),
            "a transpose of the wrong dimensions: tokens and heads not swapped": Wrong(
                tokens_and_heads_not_swapped, "across heads", "在头之间"
            ),
            "heads merged without transposing back": Wrong(
                merged_without_transpose, "merged the heads", "合并了各头"
            ),
            "the package's mask passed to SDPA unflipped": Wrong(
                package_mask_unflipped, "True means attend", "表示可以关注"
            ),
            "is_causal forgotten": Wrong(is_causal_forgotten, "is_causal=True", "未来"),
            "the scores scaled twice": Wrong(
                queries_scaled_first, "scaled twice", "缩放了两次"
            ),
        },
    ),
]
