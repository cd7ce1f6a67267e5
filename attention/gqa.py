"""Grouped-query and multi-query attention (beyond the chapter).

Shape legend: ``b`` batch size, ``T`` ``num_tokens``, ``d_in`` input width,
``h`` ``num_heads`` (query heads), ``g`` ``num_kv_heads`` (key/value heads),
``r`` ``h // g`` (query heads that share one key/value head), ``hd``
``head_dim``.

Three names for one class:

- ``num_kv_heads == num_heads``: multi-head attention (MHA), as in 3.6.2;
- ``1 < num_kv_heads < num_heads``: grouped-query attention (GQA);
- ``num_kv_heads == 1``: multi-query attention (MQA).
"""

from __future__ import annotations

import torch
from torch import nn

from .causal import causal_mask
from .checks import (
    check_attention_args,
    check_batch,
    check_divides,
    check_flag,
    check_integer,
    check_module,
    check_shapes,
    check_storage,
    check_unrotated,
)
from .multihead import MultiHeadAttention


def repeat_kv(x: torch.Tensor, repeats: int, *, check: bool = True) -> torch.Tensor:
    """Repeat every key/value head ``repeats`` times, next to itself.

    Book section: Beyond the chapter, Grouped-query attention. Key/value head
    ``k`` ends up at heads ``k * repeats`` to ``k * repeats + repeats - 1``,
    the query heads of its group. The result equals
    ``torch.repeat_interleave(x, repeats, dim=1)``; it is built with
    ``expand`` (a view, no copy) and one ``reshape`` (the copy).

    Args:
        x: keys or values, one slice per key/value head.
        repeats: how many query heads share each key/value head, at least 1.
        check: check ``x`` and ``repeats`` first. ``False`` skips the checks:
            for a caller that made ``x`` from input it has checked already,
            such as :class:`GroupedQueryAttention` and the KV cache's
            generation loop, which call it in every forward pass and for
            every generated token. Default: ``True``.

    Shape:
        x: ``(b, g, T, hd)``
        Output: ``(b, g * repeats, T, hd)``

    Returns:
        ``x`` itself when ``repeats == 1``, else the repeated tensor.

    Example:
        >>> x = torch.tensor([10.0, 20.0]).view(1, 2, 1, 1)  # 2 key/value heads
        >>> repeat_kv(x, 3).flatten()
        tensor([10., 10., 10., 20., 20., 20.])
    """
    if check is not False:  # anything else is checked, check itself too
        check_flag("check", check)
        check_integer("repeats", repeats, smallest=1)
        check_shapes(x=(x, "b g T head_dim"))
        check_storage("repeats", repeats, x.numel() * repeats * x.element_size())
    if repeats == 1:
        return x
    b, g, num_tokens, head_dim = x.shape
    # A new axis for the copies, expanded without copying:
    # (b, g, T, hd) -> (b, g, 1, T, hd) -> (b, g, r, T, hd)
    x = x[:, :, None].expand(b, g, repeats, num_tokens, head_dim)
    # Merge the groups and their copies: (b, g, r, T, hd) -> (b, g * r, T, hd)
    return x.reshape(b, g * repeats, num_tokens, head_dim)


class GroupedQueryAttention(nn.Module):
    """Causal attention whose query heads share fewer key/value heads.

    Book section: Beyond the chapter, Grouped-query attention. As
    :class:`~attention.MultiHeadAttention`, except that ``W_key`` and
    ``W_value`` make only ``num_kv_heads`` heads of ``head_dim`` features.
    Each key/value head serves ``num_heads // num_kv_heads`` neighbouring
    query heads (:func:`repeat_kv`). With ``num_kv_heads == num_heads`` the
    module has the same parameters, names and shapes as
    ``MultiHeadAttention`` and computes the same function.

    Args:
        d_in: width of each input token embedding.
        d_out: width of the whole output; must be divisible by
            ``num_heads``, and each head gets ``head_dim = d_out // num_heads``.
        context_length: the longest sequence the module accepts.
        dropout: dropout probability on the attention weights, in ``[0, 1)``.
        num_heads: how many query heads, at least 1.
        num_kv_heads: how many key/value heads; must divide ``num_heads``.
            ``num_heads`` gives MHA, ``1`` gives MQA.
        qkv_bias: add a bias to the query, key and value projections.
            ``out_proj`` always has one. Default: ``False``.

    Shape:
        Input: ``(b, T, d_in)`` with ``T <= context_length``
        Output: ``(b, T, d_out)``

    Returns:
        One context vector per token (from ``forward``).

    Example:
        >>> _ = torch.manual_seed(123)
        >>> gqa = GroupedQueryAttention(
        ...     8, 8, context_length=6, dropout=0.0, num_heads=4, num_kv_heads=2
        ... )
        >>> gqa.W_query.weight.shape, gqa.W_key.weight.shape
        (torch.Size([8, 8]), torch.Size([4, 8]))
        >>> gqa(torch.rand(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        num_kv_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        check_attention_args(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        check_divides(("num_kv_heads", num_kv_heads), ("num_heads", num_heads))
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_out // num_heads
        kv_width = num_kv_heads * self.head_dim  # below d_out if g < h
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, kv_width, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, kv_width, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads' outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)  # (b, T, d_in) -> (b, T, d_out)
        keys = self.W_key(x)  # (b, T, d_in) -> (b, T, g * hd)
        values = self.W_value(x)  # (b, T, d_in) -> (b, T, g * hd)

        # Split into heads, heads next to the batch:
        # (b, T, d_out) -> (b, T, h, hd) -> (b, h, T, hd)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.transpose(1, 2)
        # (b, T, g * hd) -> (b, T, g, hd) -> (b, g, T, hd)
        keys = keys.view(b, num_tokens, self.num_kv_heads, self.head_dim)
        keys = keys.transpose(1, 2)
        values = values.view(b, num_tokens, self.num_kv_heads, self.head_dim)
        values = values.transpose(1, 2)

        # Each key/value head serves r query heads:
        # (b, g, T, hd) -> (b, h, T, hd)
        group_size = self.num_heads // self.num_kv_heads
        keys = repeat_kv(keys, group_size, check=False)  # x was checked above
        values = repeat_kv(values, group_size, check=False)

        # From here on as in MultiHeadAttention:
        # (b, h, T, hd) @ (b, h, hd, T) -> (b, h, T, T)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # (b, h, T, T) @ (b, h, T, hd) -> (b, h, T, hd) -> (b, T, h, hd)
        context_vec = (attn_weights @ values).transpose(1, 2)
        # (b, T, h, hd) -> (b, T, d_out)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)


def mean_pool_kv_heads(
    mha: MultiHeadAttention, num_kv_heads: int
) -> GroupedQueryAttention:
    """A grouped-query module made from a multi-head one by mean-pooling heads.

    Book section: Beyond the chapter, Grouped-query attention. The first step
    of the GQA paper's recipe (Ainslie et al., 2023) for turning a trained
    multi-head checkpoint into a grouped-query one: split the query heads into
    ``num_kv_heads`` groups of neighbours, and give each group one key head
    and one value head, the mean of the group's key and value heads (rows of
    ``W_key`` and ``W_value``, and their biases). ``W_query`` and ``out_proj``
    are copied unchanged. The outputs move; the paper then trains the new
    module a little more ("uptraining") to win the quality back.

    Args:
        mha: the :class:`~attention.MultiHeadAttention` to convert, unchanged;
            not a :class:`~attention.RotaryMultiHeadAttention`, whose
            rotation a :class:`GroupedQueryAttention` would drop.
        num_kv_heads: key/value heads of the result; must divide
            ``mha.num_heads``. ``mha.num_heads`` copies every head as it is,
            ``1`` gives multi-query attention.

    Shape:
        mha.W_key.weight: ``(h * hd, d_in)``, as ``mha.W_value.weight``
        Output W_key.weight: ``(g * hd, d_in)``, as its ``W_value.weight``

    Returns:
        A new :class:`GroupedQueryAttention` with ``mha``'s sizes, dropout,
        ``qkv_bias``, device and dtype, in ``mha``'s training mode.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(8, 8, context_length=6, dropout=0.0, num_heads=4)
        >>> gqa = mean_pool_kv_heads(mha, num_kv_heads=2)
        >>> gqa.W_key.weight.shape
        torch.Size([4, 8])
        >>> hd = mha.head_dim  # key head 0 of gqa: mean of mha's heads 0 and 1
        >>> torch.equal(gqa.W_key.weight[:hd], mha.W_key.weight[: 2 * hd]
        ...             .view(2, hd, 8).mean(dim=0))
        True
    """
    check_module("mha", mha, MultiHeadAttention)
    why = "a GroupedQueryAttention does not rotate: the result would lose RoPE"
    check_unrotated("mha", mha, why)
    check_divides(("num_kv_heads", num_kv_heads), ("num_heads", mha.num_heads))
    weight = mha.W_query.weight
    with torch.device(weight.device):  # build the parameters where mha's are
        gqa = GroupedQueryAttention(
            mha.d_in,
            mha.d_out,
            mha.context_length,
            mha.dropout.p,
            mha.num_heads,
            num_kv_heads,
            qkv_bias=mha.W_query.bias is not None,
        )
    gqa = gqa.to(weight.dtype).train(mha.training)
    group_size = mha.num_heads // num_kv_heads
    pooled = {}
    for name, tensor in mha.state_dict().items():
        if name.startswith(("W_key.", "W_value.")):
            # Rows of head j are j * hd .. j * hd + hd - 1; heads of a group
            # are neighbours: (h * hd, ...) -> (g, r, hd, ...) -> (g * hd, ...)
            grouped = tensor.view(num_kv_heads, group_size, mha.head_dim, -1)
            tensor = grouped.mean(dim=1).view(num_kv_heads * mha.head_dim, -1)
            tensor = tensor.squeeze(-1) if name.endswith(".bias") else tensor
        pooled[name] = tensor
    gqa.load_state_dict(pooled)
    return gqa
