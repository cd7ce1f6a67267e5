"""Self-attention with trainable weights (book section 3.4).

Shape legend: ``T`` is ``num_tokens``; ``d_in`` the input width; ``d_out``
the width of every query, key, value and context vector.

Both classes take one sequence, ``(T, d_in)``, as the chapter does; batches
arrive with :class:`~attention.CausalAttention` in section 3.5.3.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_batch, check_copy, check_flag, check_positive


class SelfAttention_v1(nn.Module):
    """Scaled dot-product self-attention with hand-made weight matrices.

    Book section: 3.4.2. The weights are ``nn.Parameter(torch.rand(d_in,
    d_out))``: uniform in ``[0, 1)``, applied as ``x @ W``.

    Args:
        d_in: width of each input token embedding.
        d_out: width of each query, key, value and output context vector.

    Shape:
        Input: ``(T, d_in)``
        Output: ``(T, d_out)``

    Returns:
        One context vector per token (from ``forward``).

    Example:
        >>> from attention import example_inputs
        >>> _ = torch.manual_seed(123)
        >>> sa_v1 = SelfAttention_v1(d_in=3, d_out=2)
        >>> sa_v1(example_inputs())
        tensor([[0.2996, 0.8053],
                [0.3061, 0.8210],
                [0.3058, 0.8203],
                [0.2948, 0.7939],
                [0.2927, 0.7891],
                [0.2990, 0.8040]], grad_fn=<MmBackward0>)
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        check_positive(d_in=d_in, d_out=d_out)
        self.d_in = d_in
        self.d_out = d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x, ndim=2)
        queries = x @ self.W_query  # (T, d_in) @ (d_in, d_out) -> (T, d_out)
        keys = x @ self.W_key  # (T, d_out)
        values = x @ self.W_value  # (T, d_out)
        attn_scores = queries @ keys.T  # (T, d_out) @ (d_out, T) -> (T, T)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values  # (T, T) @ (T, d_out) -> (T, d_out)
        return context_vec


class SelfAttention_v2(nn.Module):
    """Scaled dot-product self-attention built on ``nn.Linear`` layers.

    Book section: 3.4.2. Same computation as :class:`SelfAttention_v1`, but
    each projection is an ``nn.Linear``, which brings a better weight
    initialisation and an optional bias. ``nn.Linear`` stores its weight
    transposed, as ``(d_out, d_in)``, and computes ``x @ weight.T``.

    Args:
        d_in: width of each input token embedding.
        d_out: width of each query, key, value and output context vector.
        qkv_bias: add a learnable bias to the query, key and value
            projections. Default: ``False``.

    Shape:
        Input: ``(T, d_in)``
        Output: ``(T, d_out)``

    Returns:
        One context vector per token (from ``forward``).

    Example:
        >>> from attention import example_inputs
        >>> _ = torch.manual_seed(789)
        >>> sa_v2 = SelfAttention_v2(d_in=3, d_out=2)
        >>> sa_v2(example_inputs())
        tensor([[-0.0739,  0.0713],
                [-0.0748,  0.0703],
                [-0.0749,  0.0702],
                [-0.0760,  0.0685],
                [-0.0763,  0.0679],
                [-0.0754,  0.0693]], grad_fn=<MmBackward0>)
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        check_positive(d_in=d_in, d_out=d_out)
        check_flag("qkv_bias", qkv_bias)
        self.d_in = d_in
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x, ndim=2)
        queries = self.W_query(x)  # (T, d_in) -> (T, d_out)
        keys = self.W_key(x)  # (T, d_out)
        values = self.W_value(x)  # (T, d_out)
        attn_scores = queries @ keys.T  # (T, d_out) @ (d_out, T) -> (T, T)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values  # (T, T) @ (T, d_out) -> (T, d_out)
        return context_vec


@torch.no_grad()
def copy_weights_v2_to_v1(sa_v2: SelfAttention_v2, sa_v1: SelfAttention_v1) -> None:
    """Load a :class:`SelfAttention_v2`'s weights into a :class:`SelfAttention_v1`.

    Book section: 3.4.2, exercise 3.1. ``nn.Linear`` keeps ``(d_out, d_in)``
    and multiplies by its transpose, ``v1`` keeps ``(d_in, d_out)``, so each
    matrix is copied transposed. After the copy both modules compute the
    same output.

    Args:
        sa_v2: the source; must have no bias (``qkv_bias=False``), since
            ``v1`` has nowhere to put one.
        sa_v1: the destination, changed in place.

    Shape:
        sa_v2: each weight is ``(d_out, d_in)``, as ``nn.Linear`` stores it.
        sa_v1: each weight is ``(d_in, d_out)``.

    Returns:
        ``None``.

    Example:
        >>> from attention import example_inputs
        >>> _ = torch.manual_seed(789)
        >>> sa_v2 = SelfAttention_v2(3, 2)
        >>> sa_v1 = SelfAttention_v1(3, 2)
        >>> copy_weights_v2_to_v1(sa_v2, sa_v1)
        >>> x = example_inputs()
        >>> torch.allclose(sa_v1(x), sa_v2(x))
        True
    """
    check_copy(sa_v2, sa_v1, SelfAttention_v2, SelfAttention_v1)
    sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
    sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
    sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
