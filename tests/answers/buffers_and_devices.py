"""Answers to the exercises of the buffers-and-devices page."""

from __future__ import annotations

import torch

from . import Answers, Wrong

# --- causal_mask ----------------------------------------------------------------


def mask_from_positions(num_tokens, device=None):
    positions = torch.arange(num_tokens, device=device)
    return positions[None, :] > positions[:, None]  # key after query: (T, T)


def mask_by_inverting_tril(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return ~torch.tril(ones)


def printed_books_float_triangle(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device), diagonal=1)


def old_gpt2_uint8(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.uint8, device=device)
    return torch.triu(ones, diagonal=1)


def diagonal_hidden_too(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, device=device, dtype=torch.bool)
    return torch.triu(ones, diagonal=0)


def true_means_keep(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, device=device, dtype=torch.bool)
    return torch.tril(ones)


def built_on_the_cpu(num_tokens, device=None):
    # device accepted, then forgotten: the mask stays behind, like an attribute.
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool)
    return torch.triu(ones, diagonal=1)


# --- causal_attention_forward ---------------------------------------------------


def from_a_fresh_mask(module, x):
    # The same triangle built for this call instead of read from the buffer.
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    scores = torch.einsum("btd,bsd->bts", q, k) / k.shape[-1] ** 0.5
    future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    scores = torch.where(future, float("-inf"), scores)
    return module.dropout(scores.softmax(-1)) @ v


def in_place_on_the_scores(module, x):
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    scores = q @ k.transpose(-2, -1)
    scores.masked_fill_(module.mask[:T, :T], -torch.inf)  # the scores are ours
    return torch.softmax(scores / module.d_out**0.5, dim=-1) @ v


def _parts(module, x):
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    return q @ k.transpose(1, 2), v, module.mask.bool()[:T, :T], k.shape[-1] ** 0.5


def masked_fill_not_assigned(module, x):
    scores, v, mask, scale = _parts(module, x)
    scores.masked_fill(mask, -torch.inf)
    return torch.softmax(scores / scale, dim=-1) @ v


def mask_after_softmax(module, x):
    scores, v, mask, scale = _parts(module, x)
    weights = torch.softmax(scores / scale, dim=-1)
    return weights.masked_fill(mask, 0.0) @ v


def softmax_over_queries(module, x):
    scores, v, mask, scale = _parts(module, x)
    scores = scores.masked_fill(mask, -torch.inf)
    return torch.softmax(scores / scale, dim=1) @ v


def mask_inverted(module, x):
    scores, v, mask, scale = _parts(module, x)
    scores = scores.masked_fill(~mask, -torch.inf)  # "True = keep"
    return torch.softmax(scores / scale, dim=-1) @ v


def not_scaled(module, x):
    scores, v, mask, _ = _parts(module, x)
    scores = scores.masked_fill(mask, -torch.inf)
    return torch.softmax(scores, dim=-1) @ v


ANSWERS = [
    Answers(
        "causal_mask",
        right=(mask_from_positions, mask_by_inverting_tril),
        wrong={
            "the printed book's float triangle of ones": Wrong(
                printed_books_float_triangle, "float triangle", "浮点三角"
            ),
            "a uint8 mask, as in old GPT-2 checkpoints": Wrong(
                old_gpt2_uint8, "uint8", "uint8"
            ),
            "the diagonal hidden too": Wrong(
                diagonal_hidden_too, "diagonal=1", "对角线"
            ),
            "a mask built with True meaning keep": Wrong(
                true_means_keep, "True marks the hidden future", "True"
            ),
            "the mask built on the CPU whatever the device": Wrong(
                built_on_the_cpu, "stays on the CPU", "CPU"
            ),
        },
    ),
    Answers(
        "causal_attention_forward",
        right=(from_a_fresh_mask, in_place_on_the_scores),
        wrong={
            "masked_fill without assigning its result": Wrong(
                masked_fill_not_assigned, "assign its result", "赋回去"
            ),
            "the mask applied after the softmax": Wrong(
                mask_after_softmax, "after the softmax", "softmax 之后"
            ),
            "the softmax over the wrong axis": Wrong(
                softmax_over_queries, "dim=-1", "dim=-1"
            ),
            "the buffer's mask inverted (True read as keep)": Wrong(
                mask_inverted, "past instead of the future", "过去"
            ),
            "the scores not scaled": Wrong(not_scaled, "sqrt(d_out)", "sqrt(d_out)"),
        },
    ),
]
