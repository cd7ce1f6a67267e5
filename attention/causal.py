"""Causal attention: hiding future tokens (book section 3.5).

Shape legend: ``b`` batch size, ``T`` ``num_tokens``, ``d_in`` input width,
``d_out`` the width of every query, key, value and context vector.

Mask polarity in this package: ``True`` (or 1) marks a position that is
*masked out*, as in ``torch.nn.MultiheadAttention``'s boolean ``attn_mask``.
``torch.nn.functional.scaled_dot_product_attention`` uses the opposite
convention, ``True`` meaning *attend*.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import (
    as_device,
    check_attention_args,
    check_batch,
    check_integer,
    check_shapes,
    check_storage,
)


def causal_mask(
    num_tokens: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """The positions a causal model must not see: everything above the diagonal.

    Book section: 3.5.1. Row ``i`` is query ``i``; column ``j`` is ``True``
    when ``j > i``, that is when token ``j`` lies in query ``i``'s future.

    Args:
        num_tokens: the sequence length, at least 0 (no tokens: an empty
            mask).
        device: where to build the mask. Default: the CPU.

    Shape:
        Output: ``(T, T)``, boolean.

    Returns:
        ``True`` where attention is forbidden.

    Example:
        >>> causal_mask(3)
        tensor([[False,  True,  True],
                [False, False,  True],
                [False, False, False]])
        >>> causal_mask(0).shape  # no tokens, nothing to hide
        torch.Size([0, 0])
    """
    check_integer("num_tokens", num_tokens, smallest=0)
    check_storage("num_tokens", num_tokens, num_tokens**2)  # a byte per pair
    device = as_device(device)
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1)


def renormalize_masked(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mask *after* the softmax: zero the future, then rescale rows to sum to 1.

    Book section: 3.5.1, the first way. Dividing by the row sums undoes the
    share the softmax gave to future tokens, so in exact arithmetic the
    result equals :func:`mask_with_neg_inf` followed by a softmax.

    In floating point it does not always. When a query's allowed scores sit
    about 104 or more below its largest future score (float32), the softmax
    rounds every allowed weight to 0, the row sum is 0, and ``0 / 0`` makes
    the row ``nan``. Masking the scores first (:func:`mask_with_neg_inf`)
    never meets this, which is one reason the chapter prefers it.

    Args:
        attn_weights: softmax-normalised weights over the last dimension.

    Shape:
        attn_weights: ``(..., T, T)``
        Output: same.

    Returns:
        The causal weights, zero above the diagonal and each row summing to
        1; ``nan`` in the rows whose allowed weights all underflowed to 0.

    Example:
        >>> renormalize_masked(torch.full((3, 3), 1 / 3))
        tensor([[1.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.0000],
                [0.3333, 0.3333, 0.3333]])
    """
    check_shapes(attn_weights=(attn_weights, "... T T"))
    keep = ~causal_mask(attn_weights.shape[-1], device=attn_weights.device)
    masked = attn_weights * keep  # zero above the diagonal
    row_sums = masked.sum(dim=-1, keepdim=True)  # (..., T, 1)
    return masked / row_sums


def mask_with_neg_inf(attn_scores: torch.Tensor) -> torch.Tensor:
    """Mask *before* the softmax: set every future score to ``-inf``.

    Book section: 3.5.1, the efficient way. ``exp(-inf) = 0``, so a softmax
    of the result gives the future exactly zero weight and no renormalising
    is needed.

    Args:
        attn_scores: unnormalised scores, queries along ``-2``, keys along
            ``-1``.

    Shape:
        attn_scores: ``(..., T, T)``
        Output: same.

    Returns:
        A new tensor; ``attn_scores`` is left as it was.

    Example:
        >>> scores = mask_with_neg_inf(torch.zeros(3, 3))
        >>> scores
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        >>> torch.softmax(scores, dim=-1)
        tensor([[1.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.0000],
                [0.3333, 0.3333, 0.3333]])
    """
    check_shapes(attn_scores=(attn_scores, "... T T"))
    mask = causal_mask(attn_scores.shape[-1], device=attn_scores.device)
    return attn_scores.masked_fill(mask, -torch.inf)


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout, for batches.

    Book section: 3.5.3. :class:`~attention.SelfAttention_v2` plus three
    changes: a batch dimension, a causal mask kept as a registered buffer,
    and dropout on the attention weights.

    Args:
        d_in: width of each input token embedding.
        d_out: width of each query, key, value and output context vector.
        context_length: the longest sequence the module accepts; sizes the
            mask, a buffer of ``context_length ** 2`` bytes.
        dropout: probability of zeroing each attention weight in training
            mode, in ``[0, 1)``. Survivors are scaled by ``1 / (1 - dropout)``.
        qkv_bias: add a learnable bias to the query, key and value
            projections. Default: ``False``.

    Shape:
        Input: ``(b, T, d_in)`` with ``T <= context_length``
        Output: ``(b, T, d_out)``

    Returns:
        One context vector per token (from ``forward``). The vector of
        token ``t`` depends only on tokens ``0`` to ``t``, as long as every
        input is finite: a ``nan`` or ``inf`` in a later token's values
        turns it to ``nan`` (``0 * nan = nan``; see section 3.5.3).

    Example:
        >>> from attention import example_inputs
        >>> inputs = example_inputs()
        >>> batch = torch.stack((inputs, inputs))  # (2, 6, 3)
        >>> _ = torch.manual_seed(123)
        >>> ca = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0)
        >>> context_vecs = ca(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 2])
        >>> context_vecs[0]
        tensor([[-0.4519,  0.2216],
                [-0.5874,  0.0058],
                [-0.6300, -0.0632],
                [-0.5675, -0.0843],
                [-0.5526, -0.0981],
                [-0.5299, -0.1081]], grad_fn=<SelectBackward0>)
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        check_attention_args(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias)
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # A buffer, not a parameter: saved in state_dict and moved by .to(),
        # but never trained.
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)  # (b, T, d_in) -> (b, T, d_out)
        keys = self.W_key(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)

        # (b, T, d_out) @ (b, d_out, T) -> (b, T, T)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # (b, T, T) @ (b, T, d_out) -> (b, T, d_out)
        context_vec = attn_weights @ values
        return context_vec
