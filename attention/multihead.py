"""Multi-head attention (book section 3.6).

Shape legend: ``b`` batch size, ``T`` ``num_tokens``, ``d_in`` input width,
``h`` ``num_heads``, ``hd`` ``head_dim``.

``d_out`` means different things in the two classes, as in the chapter:

- :class:`MultiHeadAttentionWrapper`: ``d_out`` is the width of *one head*;
  the output is ``num_heads * d_out`` wide.
- :class:`MultiHeadAttention`: ``d_out`` is the width of the *whole output*;
  each head gets ``head_dim = d_out // num_heads``.
"""

from __future__ import annotations

import torch
from torch import nn

from .causal import CausalAttention, causal_mask
from .checks import (
    check_attention_args,
    check_batch,
    check_module,
    check_positive,
)


class MultiHeadAttentionWrapper(nn.Module):
    """Multi-head attention as a stack of :class:`~attention.CausalAttention` heads.

    Book section: 3.6.1. Each head runs on the same input; their outputs
    are concatenated along the last dimension.

    Args:
        d_in: width of each input token embedding.
        d_out: width of *each head's* output; the module returns
            ``num_heads * d_out`` features per token.
        context_length: the longest sequence the module accepts.
        dropout: dropout probability on each head's attention weights,
            in ``[0, 1)``.
        num_heads: how many heads, at least 1.
        qkv_bias: add a bias to every query, key and value projection.
            Default: ``False``.

    Shape:
        Input: ``(b, T, d_in)`` with ``T <= context_length``
        Output: ``(b, T, num_heads * d_out)``

    Returns:
        The heads' context vectors side by side (from ``forward``).

    Example:
        >>> from attention import example_inputs
        >>> inputs = example_inputs()
        >>> batch = torch.stack((inputs, inputs))
        >>> _ = torch.manual_seed(123)
        >>> mha = MultiHeadAttentionWrapper(
        ...     3, 2, context_length=6, dropout=0.0, num_heads=2
        ... )
        >>> context_vecs = mha(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 4])
        >>> context_vecs[0, :2]
        tensor([[-0.4519,  0.2216,  0.4772,  0.1063],
                [-0.5874,  0.0058,  0.5891,  0.3257]], grad_fn=<SliceBackward0>)
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        check_positive(num_heads=num_heads)
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # num_heads x (b, T, d_out) -> (b, T, num_heads * d_out)
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with one projection split across the heads.

    Book section: 3.6.2. One ``W_query``, ``W_key`` and ``W_value`` of width
    ``d_out`` each; their outputs are viewed as ``num_heads`` slices of
    ``head_dim`` features, all heads are computed by one batched matrix
    product, and ``out_proj`` mixes the concatenated heads.

    The scores are scaled after ``queries @ keys.T``, as in the chapter; in
    float16 they overflow past 65,504 with large inputs (GPT-2 size, inputs
    of about ``randn * 96``) and the output turns ``nan``. The mask buffer
    takes ``context_length ** 2`` bytes. Sections 3.6 and 3.5 measure them.

    Args:
        d_in: width of each input token embedding.
        d_out: width of the *whole* output; must be divisible by
            ``num_heads``, and each head gets ``head_dim = d_out // num_heads``.
        context_length: the longest sequence the module accepts.
        dropout: dropout probability on the attention weights, in ``[0, 1)``.
        num_heads: how many heads, at least 1.
        qkv_bias: add a bias to the query, key and value projections.
            ``out_proj`` always has one. Default: ``False``.

    Shape:
        Input: ``(b, T, d_in)`` with ``T <= context_length``
        Output: ``(b, T, d_out)``

    Returns:
        One context vector per token (from ``forward``).

    Example:
        >>> from attention import example_inputs
        >>> inputs = example_inputs()
        >>> batch = torch.stack((inputs, inputs))
        >>> _ = torch.manual_seed(123)
        >>> mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
        >>> context_vecs = mha(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 2])
        >>> context_vecs[0]
        tensor([[0.3190, 0.4858],
                [0.2943, 0.3897],
                [0.2856, 0.3593],
                [0.2693, 0.3873],
                [0.2639, 0.3928],
                [0.2575, 0.4028]], grad_fn=<SelectBackward0>)
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        check_attention_args(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads' outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)  # (b, T, d_in) -> (b, T, d_out)
        keys = self.W_key(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)

        # Split the last dimension into heads: (b, T, d_out) -> (b, T, h, hd)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)

        # Heads next to the batch: (b, T, h, hd) -> (b, h, T, hd)
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)

        # Every head at once: (b, h, T, hd) @ (b, h, hd, T) -> (b, h, T, T)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # (b, h, T, T) @ (b, h, T, hd) -> (b, h, T, hd) -> (b, T, h, hd)
        context_vec = (attn_weights @ values).transpose(1, 2)
        # Merge the heads; the transpose left memory out of order, so copy
        # it contiguous before the view: (b, T, h, hd) -> (b, T, d_out)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)


def parameter_breakdown(module: nn.Module) -> dict[str, int]:
    """Count trainable parameters per named parameter tensor.

    Book section: 3.6.2, exercise 3.3. Buffers such as the causal mask are
    not parameters and are not counted.

    Args:
        module: any module.

    Returns:
        A dict from each parameter's name to its number of elements, in
        registration order.

    Example:
        >>> mha = MultiHeadAttention(4, 4, context_length=8, dropout=0.0, num_heads=2)
        >>> parameter_breakdown(mha)
        {'W_query.weight': 16, 'W_key.weight': 16, 'W_value.weight': 16,
         'out_proj.weight': 16, 'out_proj.bias': 4}
    """
    check_module("module", module)
    return {name: p.numel() for name, p in module.named_parameters() if p.requires_grad}


def count_parameters(module: nn.Module) -> int:
    """Total number of trainable parameters in ``module``.

    Book section: 3.6.2, exercise 3.3.

    Args:
        module: any module.

    Returns:
        The sum of :func:`parameter_breakdown`'s values.

    Example:
        >>> gpt2 = MultiHeadAttention(
        ...     768, 768, context_length=1024, dropout=0.0, num_heads=12
        ... )
        >>> count_parameters(gpt2)
        2360064
    """
    check_module("module", module)
    return sum(parameter_breakdown(module).values())
