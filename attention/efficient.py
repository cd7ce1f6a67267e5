"""Efficient multi-head attention (beyond the chapter).

Shape legend: ``b`` batch size, ``T`` ``num_tokens``, ``d_in`` input width,
``d_out`` output width, ``h`` ``num_heads``, ``hd`` ``head_dim = d_out // h``.

Three drop-in replacements for :class:`~attention.MultiHeadAttention`. Each
takes the same constructor arguments, in the same order and with the same
meaning (``d_out`` is the width of the *whole* output), checks its input the
same way and, given the same weights, computes the same function:

- :class:`FusedQKVMultiHeadAttention`: one ``nn.Linear`` makes queries, keys
  and values at once; the attention itself is the chapter's masked softmax.
- :class:`SDPAMultiHeadAttention`: the fused projection, then PyTorch's
  fused kernel ``F.scaled_dot_product_attention(..., is_causal=True)``.
- :class:`TorchMultiHeadAttention`: ``torch.nn.MultiheadAttention`` with a
  causal ``attn_mask``, wrapped to the chapter's signature.

These three and the chapter's class are in :data:`attention.VARIANTS`,
with the variants of later pages. Each describes its
weights in the chapter's layout (``mha_state_dict``) and loads them from it
(``load_mha_state_dict``), so :func:`~attention.copy_weights` moves weights
between any two of them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._layout import layout_names, split_qkv, stack_qkv
from .causal import causal_mask
from .checks import check_attention_args, check_batch, check_state


class _FusedWeights(nn.Module):
    """The weight layout shared by the two fused-projection classes.

    ``qkv`` holds the query, key and value weights stacked row-wise and
    ``out_proj`` mixes the heads; these methods translate that layout to and
    from the chapter's ``MultiHeadAttention`` names.
    """

    qkv: nn.Linear
    out_proj: nn.Linear

    def mha_state_dict(self) -> dict[str, torch.Tensor]:
        """This module's weights, named and shaped as in ``MultiHeadAttention``.

        Book section: Beyond the chapter, Efficient multi-head attention.

        Returns:
            A dict from :class:`~attention.MultiHeadAttention` parameter
            names to detached views of this module's weights.
        """
        # (3 * d_out, d_in) -> 3 x (d_out, d_in): rows are query | key | value
        state = split_qkv(self.qkv.weight, "weight")
        if self.qkv.bias is not None:
            state |= split_qkv(self.qkv.bias, "bias")
        state |= {"out_proj.weight": self.out_proj.weight}
        state |= {"out_proj.bias": self.out_proj.bias}
        names = layout_names(self.qkv.bias is not None)
        return {name: state[name].detach() for name in names}

    def load_mha_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Copy weights given in ``MultiHeadAttention``'s layout into this module.

        Book section: Beyond the chapter, Efficient multi-head attention.

        Args:
            state: the output of ``mha_state_dict()`` of any registry class
                of the same size.
        """
        check_state(state, self.mha_state_dict())
        with torch.no_grad():
            # 3 x (d_out, d_in) -> (3 * d_out, d_in)
            self.qkv.weight.copy_(stack_qkv(state, "weight"))
            if self.qkv.bias is not None:
                self.qkv.bias.copy_(stack_qkv(state, "bias"))
            self.out_proj.weight.copy_(state["out_proj.weight"])
            self.out_proj.bias.copy_(state["out_proj.bias"])


class FusedQKVMultiHeadAttention(_FusedWeights):
    """Multi-head causal attention with one fused query-key-value projection.

    Book section: Beyond the chapter, Efficient multi-head attention.
    :class:`~attention.MultiHeadAttention` with ``W_query``, ``W_key`` and
    ``W_value`` stacked into one ``nn.Linear(d_in, 3 * d_out)``: one matrix
    product instead of three. Its weight rows are the query, key and value
    weights in that order. Everything after the projection is the chapter's
    masked-softmax math. With ``qkv_bias=False`` the same seed draws the same
    weights as :class:`~attention.MultiHeadAttention`.

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
        >>> fused = FusedQKVMultiHeadAttention(
        ...     3, 2, context_length=6, dropout=0.0, num_heads=2
        ... )
        >>> fused.qkv.weight.shape  # W_query, W_key, W_value stacked
        torch.Size([6, 3])
        >>> context_vecs = fused(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 2])
        >>> context_vecs[0, :2]  # MultiHeadAttention's numbers, same seed
        tensor([[0.3190, 0.4858],
                [0.2943, 0.3897]], grad_fn=<SliceBackward0>)
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
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)  # q | k | v
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads' outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        qkv = self.qkv(x)  # (b, T, d_in) -> (b, T, 3 * d_out)

        # Split the last dimension into (which of q/k/v, head, feature):
        # (b, T, 3 * d_out) -> (b, T, 3, h, hd)
        qkv = qkv.view(b, num_tokens, 3, self.num_heads, self.head_dim)
        # Three views, no copy: (b, T, 3, h, hd) -> 3 x (b, T, h, hd)
        queries, keys, values = qkv.unbind(2)

        # Heads next to the batch: (b, T, h, hd) -> (b, h, T, hd). Without
        # this, the matmul below would pair up heads instead of tokens.
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
        # Merge the heads (copies, since the transpose left memory out of
        # order): (b, T, h, hd) -> (b, T, d_out)
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)


class SDPAMultiHeadAttention(_FusedWeights):
    """Multi-head causal attention on PyTorch's fused attention kernel.

    Book section: Beyond the chapter, Efficient multi-head attention. The
    fused projection of :class:`FusedQKVMultiHeadAttention`, then one call to
    ``torch.nn.functional.scaled_dot_product_attention`` with
    ``is_causal=True`` in place of the scores, mask, softmax, dropout and
    weighted sum. On the CPU that call runs a flash-attention kernel: it walks
    over blocks of keys with a running softmax, never stores the ``T x T``
    matrix, and skips the key blocks that lie entirely in a query block's
    future. No mask buffer is needed.

    Equivalent to :class:`FusedQKVMultiHeadAttention` up to rounding: same
    parameters, same outputs. Dropout acts on the attention weights in
    training mode only, as ``nn.Dropout`` would.

    Args:
        d_in: width of each input token embedding.
        d_out: width of the *whole* output; must be divisible by
            ``num_heads``, and each head gets ``head_dim = d_out // num_heads``.
        context_length: the longest sequence the module accepts.
        dropout: dropout probability on the attention weights, in ``[0, 1)``;
            used in training mode only.
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
        >>> sdpa = SDPAMultiHeadAttention(
        ...     3, 2, context_length=6, dropout=0.0, num_heads=2
        ... )
        >>> context_vecs = sdpa(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 2])
        >>> context_vecs[0, :2]  # MultiHeadAttention's numbers, same seed
        tensor([[0.3190, 0.4858],
                [0.2943, 0.3897]], grad_fn=<SliceBackward0>)
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
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)  # q | k | v
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads' outputs
        self.dropout_p = dropout  # a probability: the kernel applies it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        qkv = self.qkv(x)  # (b, T, d_in) -> (b, T, 3 * d_out)

        # Views, no copies: (b, T, 3 * d_out) -> (b, T, 3, h, hd)
        qkv = qkv.view(b, num_tokens, 3, self.num_heads, self.head_dim)
        # (b, T, 3, h, hd) -> 3 x (b, T, h, hd)
        queries, keys, values = qkv.unbind(2)
        # (b, T, h, hd) -> (b, h, T, hd): strided views that the CPU kernel
        # reads in place.
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)

        # Scores, causal mask, softmax, dropout and weighted sum in one call:
        # (b, h, T, hd) x 3 -> (b, h, T, hd)
        context_vec = F.scaled_dot_product_attention(
            queries,
            keys,
            values,
            dropout_p=self.dropout_p if self.training else 0.0,
            is_causal=True,
        )
        # Merge the heads: (b, h, T, hd) -> (b, T, h, hd) -> (b, T, d_out).
        # The CPU kernel writes its output as (b, T, h, hd) already, so the
        # reshape is a free view; it copies only when another kernel ran.
        context_vec = context_vec.transpose(1, 2)
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)


class TorchMultiHeadAttention(nn.Module):
    """``torch.nn.MultiheadAttention`` with a causal mask, in the chapter's signature.

    Book section: Beyond the chapter, Efficient multi-head attention. An
    adapter, for comparison: the work is done by PyTorch's own module
    (``self.attn``, built with ``batch_first=True``), called the way it runs
    fastest on a causal task: an additive float ``attn_mask`` (``0`` where a
    query may look, ``-inf`` in its future), ``is_causal=True`` and
    ``need_weights=False``. With those, ``nn.MultiheadAttention`` hands the
    heads to ``F.scaled_dot_product_attention(..., is_causal=True)``, whose
    CPU kernel skips the blocks that lie in the future. A boolean mask would
    be read the same way, but in eval mode without gradients it sends the
    module down its "fast path" (``torch._native_multi_head_attention``),
    which ignores ``is_causal`` and computes every score: at GPT-2 size on a
    2-core CPU that path took 2.7 times as long (see the efficiency page).

    Two differences from the chapter's layout are bridged here:

    - ``nn.MultiheadAttention`` has one ``bias`` switch for both the input
      and the output projections, while the chapter's ``out_proj`` always has
      a bias. The module is built with biases; with ``qkv_bias=False`` its
      input bias ``attn.in_proj_bias`` is set to zero and frozen
      (``requires_grad=False``), so it stays zero and is not counted by
      :func:`~attention.count_parameters`.
    - It projects the *query* with a ``(d_out, d_out)`` matrix, so the query
      must arrive ``d_out`` wide. When ``d_in == d_out`` nothing is needed
      (``query_in`` is ``nn.Identity``). Otherwise ``query_in`` is the
      query projection ``nn.Linear(d_in, d_out, bias=False)`` and the
      internal query matrix is a frozen identity; keys and values use the
      module's own ``kdim = vdim = d_in`` projections. This keeps every
      chapter weight in exactly one place, so weights move both ways.

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
        >>> from attention import MultiHeadAttention, copy_weights, example_inputs
        >>> inputs = example_inputs()
        >>> batch = torch.stack((inputs, inputs))
        >>> _ = torch.manual_seed(123)
        >>> mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
        >>> adapter = TorchMultiHeadAttention(
        ...     3, 2, context_length=6, dropout=0.0, num_heads=2
        ... )
        >>> copy_weights(mha, adapter)
        >>> context_vecs = adapter(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 2])
        >>> context_vecs[0, :2]
        tensor([[0.3190, 0.4858],
                [0.2943, 0.3897]], grad_fn=<SliceBackward0>)
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
        self.qkv_bias = qkv_bias
        self.attn = nn.MultiheadAttention(
            d_out,
            num_heads,
            dropout=dropout,
            bias=True,  # out_proj always has a bias, as in the chapter
            kdim=d_in,
            vdim=d_in,
            batch_first=True,
        )
        if not qkv_bias:
            nn.init.zeros_(self.attn.in_proj_bias)
            self.attn.in_proj_bias.requires_grad_(False)
        if d_in == d_out:
            self.query_in = nn.Identity()
        else:
            self.query_in = nn.Linear(d_in, d_out, bias=False)
            with torch.no_grad():
                self.attn.q_proj_weight.copy_(torch.eye(d_out))
            self.attn.q_proj_weight.requires_grad_(False)
        # Additive: 0 where a query may look, -inf in its future. A float
        # mask, not a boolean one, so that nn.MultiheadAttention takes its
        # standard path, which honours is_causal (see the class docstring).
        future = causal_mask(context_length)
        self.register_buffer(
            "mask", torch.zeros(future.shape).masked_fill(future, -torch.inf)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        num_tokens = x.shape[1]
        query = self.query_in(x)  # (b, T, d_in) -> (b, T, d_out)
        context_vec, _ = self.attn(
            query,  # (b, T, d_out)
            x,  # keys from x: (b, T, d_in)
            x,  # values from x: (b, T, d_in)
            attn_mask=self.mask[:num_tokens, :num_tokens],  # (T, T)
            need_weights=False,  # don't return the (b, T, T) weights ...
            is_causal=True,  # ... so the mask is a hint: SDPA's causal kernel runs
        )
        return context_vec  # (b, T, d_out)

    def mha_state_dict(self) -> dict[str, torch.Tensor]:
        """This module's weights, named and shaped as in ``MultiHeadAttention``.

        Book section: Beyond the chapter, Efficient multi-head attention.

        Returns:
            A dict from :class:`~attention.MultiHeadAttention` parameter
            names to detached views of this module's weights.
        """
        attn = self.attn
        if self.d_in == self.d_out:
            # (3 * d_out, d_in) -> 3 x (d_out, d_in): query | key | value
            state = split_qkv(attn.in_proj_weight, "weight")
        else:
            state = {
                "W_query.weight": self.query_in.weight,
                "W_key.weight": attn.k_proj_weight,
                "W_value.weight": attn.v_proj_weight,
            }
        if self.qkv_bias:
            state |= split_qkv(attn.in_proj_bias, "bias")
        state |= {"out_proj.weight": attn.out_proj.weight}
        state |= {"out_proj.bias": attn.out_proj.bias}
        names = layout_names(self.qkv_bias)
        return {name: state[name].detach() for name in names}

    def load_mha_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Copy weights given in ``MultiHeadAttention``'s layout into this module.

        Book section: Beyond the chapter, Efficient multi-head attention.

        Args:
            state: the output of ``mha_state_dict()`` of any registry class
                of the same size.
        """
        check_state(state, self.mha_state_dict())
        attn = self.attn
        with torch.no_grad():
            if self.d_in == self.d_out:
                attn.in_proj_weight.copy_(stack_qkv(state, "weight"))
            else:
                self.query_in.weight.copy_(state["W_query.weight"])
                attn.k_proj_weight.copy_(state["W_key.weight"])
                attn.v_proj_weight.copy_(state["W_value.weight"])
            if self.qkv_bias:
                attn.in_proj_bias.copy_(stack_qkv(state, "bias"))
            attn.out_proj.weight.copy_(state["out_proj.weight"])
            attn.out_proj.bias.copy_(state["out_proj.bias"])
