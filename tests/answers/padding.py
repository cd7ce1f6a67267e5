"""Answers to the exercises of the padding page."""

from __future__ import annotations

import torch

from . import Answers, Wrong


def mask_from_positions(attention_mask):
    # Compare positions instead of building a triangle.
    positions = torch.arange(attention_mask.shape[-1])
    future = positions[None, :] > positions[:, None]  # (T, T)
    padding = attention_mask == 0  # (b, T)
    return future[None, :, :] | padding[:, None, :]


def mask_from_loop(attention_mask):
    # One sequence at a time, one query at a time.
    batch, num_tokens = attention_mask.shape
    mask = torch.zeros(batch, num_tokens, num_tokens, dtype=torch.bool)
    for n in range(batch):
        for i in range(num_tokens):
            for j in range(num_tokens):
                mask[n, i, j] = bool(j > i or attention_mask[n, j] == 0)
    return mask


def true_means_keep(attention_mask):
    num_tokens = attention_mask.shape[-1]
    keep = torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
    return keep[None] & attention_mask.bool()[:, None, :]


def no_causal_part(attention_mask):
    num_tokens = attention_mask.shape[-1]
    padding = (attention_mask == 0)[:, None, :]
    return padding.expand(-1, num_tokens, -1)


def padding_hides_rows(attention_mask):
    num_tokens = attention_mask.shape[-1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return future[None] | (attention_mask == 0)[:, :, None]


def and_instead_of_or(attention_mask):
    num_tokens = attention_mask.shape[-1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return future[None] & (attention_mask == 0)[:, None, :]


ANSWERS = [
    Answers(
        "padded_causal_mask",
        right=(mask_from_positions, mask_from_loop),
        wrong={
            "a padding mask built with True meaning keep": Wrong(
                true_means_keep, "True", "True"
            ),
            "the causal part forgotten": Wrong(no_causal_part, "future", "未来"),
            "padding applied to the queries' rows": Wrong(
                padding_hides_rows, "keys (columns)", "键"
            ),
            "the masks combined with & instead of |": Wrong(
                and_instead_of_or, "expected [False, True, True, True]"
            ),
        },
    ),
]
