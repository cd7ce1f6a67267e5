"""Cross-attention: one sequence asks, another answers (beyond the chapter).

Shape legend: ``b`` batch size; ``T_q`` the number of tokens in ``x``, the
sequence that asks (its tokens make the queries); ``T_kv`` the number of
tokens in ``context``, the sequence that is looked at (its tokens make the
keys and values); ``d_in`` and ``d_context`` their widths; ``d_out`` the
width of every query, key, value and output context vector. Unbatched
inputs work too: drop the leading ``b`` everywhere.

Self-attention is the special case ``context = x``.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import (
    check_cross_input,
    check_cross_weights,
    check_flag,
    check_positive,
)


class CrossAttention(nn.Module):
    """Scaled dot-product attention from the tokens of ``x`` to those of ``context``.

    Book section: Beyond the chapter, Cross-attention. The layout of
    :class:`~attention.SelfAttention_v2` with one change: the queries are
    computed from ``x``, the keys and values from ``context``, so the
    attention matrix is ``T_q x T_kv`` and need not be square. There is no
    mask, because every token of ``context`` is already known; there is no
    dropout either, to keep the one new idea on its own.

    The three layers are created in the same order as in
    :class:`~attention.SelfAttention_v2` and carry the same names, so with
    ``d_context == d_in`` the two modules draw the same weights from the same
    seed and can load each other's ``state_dict``.

    Args:
        d_in: width of each token of ``x`` (the queries' side).
        d_out: width of each query, key, value and output context vector.
        qkv_bias: add a learnable bias to the query, key and value
            projections. Default: ``False``.
        d_context: width of each token of ``context`` (the keys' and
            values' side). Default: ``None``, meaning the same as ``d_in``.

    Shape:
        x: ``(T_q, d_in)`` or ``(b, T_q, d_in)``
        context: ``(T_kv, d_context)`` or ``(b, T_kv, d_context)``, with
          the same number of dimensions as ``x`` and, if batched, the same
          ``b``
        Output: ``(T_q, d_out)`` or ``(b, T_q, d_out)``: one row per
          query token, whatever ``T_kv`` is

    Returns:
        One context vector per token of ``x`` (from ``forward``), a mix of
        the value vectors of ``context``.

    Example:
        >>> _ = torch.manual_seed(123)
        >>> cross = CrossAttention(d_in=3, d_out=2, d_context=5)
        >>> x = torch.rand(4, 3)  # 4 tokens that ask
        >>> context = torch.rand(7, 5)  # 7 tokens that answer
        >>> out = cross(x, context)
        >>> out.shape
        torch.Size([4, 2])
        >>> out
        tensor([[0.1339, 0.2917],
                [0.1348, 0.2917],
                [0.1328, 0.2917],
                [0.1327, 0.2895]], grad_fn=<MmBackward0>)
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        qkv_bias: bool = False,
        d_context: int | None = None,
    ) -> None:
        super().__init__()
        d_context = d_in if d_context is None else d_context
        check_positive(d_in=d_in, d_out=d_out, d_context=d_context)
        check_flag("qkv_bias", qkv_bias)
        self.d_in = d_in
        self.d_out = d_out
        self.d_context = d_context
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_context, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_context, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        check_cross_input(self, x, context)
        keys = self.W_key(context)  # (b, T_kv, d_context) -> (b, T_kv, d_out)
        queries = self.W_query(x)  # (b, T_q, d_in) -> (b, T_q, d_out)
        values = self.W_value(context)  # (b, T_kv, d_out)
        # (b, T_q, d_out) @ (b, d_out, T_kv) -> (b, T_q, T_kv)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        # (b, T_q, T_kv) @ (b, T_kv, d_out) -> (b, T_q, d_out)
        context_vec = attn_weights @ values
        return context_vec


def cross_attention_weights(
    queries: torch.Tensor,
    keys: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """How much each query of one sequence takes from each key of the other.

    Book section: Beyond the chapter, Cross-attention. The attention weights
    of :class:`CrossAttention`, from queries and keys already projected:
    the dot products scaled by ``sqrt(d)``, then a softmax over the keys.
    The matrix is ``T_q x T_kv``, one row per query; it need not be square.
    There is no causal mask, since the whole context is known in advance.
    A padded context hides its padded keys from every query: their scores
    become ``-inf`` before the softmax, so they get a weight of exactly 0.

    Args:
        queries: the queries, from the sequence that asks.
        keys: the keys, from the context.
        key_padding_mask: ``True`` for a padded key, hidden from every
            query: the polarity of :func:`~attention.key_padding_mask` and
            of ``nn.MultiheadAttention``'s ``key_padding_mask``. Each
            context must keep at least one real key. Default: ``None``,
            no padding.

    Shape:
        queries: ``(..., T_q, d)``
        keys: ``(..., T_kv, d)``
        key_padding_mask: ``(..., T_kv)``, boolean
        Output: ``(..., T_q, T_kv)``

    Returns:
        The weights; each row sums to 1 over the real keys.

    Example:
        >>> queries = torch.tensor([[1.0, 0.0], [0.0, 2.0]])  # T_q = 2, d = 2
        >>> keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # T_kv = 3
        >>> cross_attention_weights(queries, keys)
        tensor([[0.4011, 0.1978, 0.4011],
                [0.1084, 0.4458, 0.4458]])
        >>> pads = torch.tensor([False, False, True])  # the third key is a pad
        >>> cross_attention_weights(queries, keys, pads)
        tensor([[0.6698, 0.3302, 0.0000],
                [0.1956, 0.8044, 0.0000]])
    """
    check_cross_weights(queries, keys, key_padding_mask)
    # (..., T_q, d) @ (..., d, T_kv) -> (..., T_q, T_kv)
    attn_scores = queries @ keys.transpose(-2, -1)
    if key_padding_mask is not None:
        # (..., T_kv) -> (..., 1, T_kv): the same keys hidden from every query
        hidden = key_padding_mask.unsqueeze(-2)
        attn_scores = attn_scores.masked_fill(hidden, -torch.inf)
    return torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
