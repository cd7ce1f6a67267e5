"""Rotary position embeddings (RoPE): positions put into attention itself.

Book section: Beyond the chapter, Rotary position embeddings.

Shape legend: ``b`` batch size, ``h`` heads, ``T`` tokens, ``hd``
``head_dim`` (even), ``hd/2`` the number of rotated pairs.

Each query and key is cut into ``hd/2`` pairs of numbers, and pair ``i`` of
the token at position ``m`` is turned by the angle ``m * base ** (-2i / hd)``.
A score ``(R_m q) . (R_n k)`` then depends on ``m - n`` only: shift both
positions by ``s`` and it stays the same.

Two layouts say which numbers form a pair. ``"half"`` (GPT-NeoX, Llama,
Qwen) pairs ``i`` with ``i + hd/2``; ``"interleaved"`` (GPT-J, RoFormer)
pairs ``2i`` with ``2i + 1``. They are one rotation with the features in
another order: :func:`rope_permutation` gives that order, and
:func:`rope_layout_state_dict` moves a checkpoint's weights from one layout
to the other. A checkpoint read with the wrong layout runs without an error
and gives other outputs.

Angles are computed in float64 and only their cosines and sines are cast to
the input's dtype: position ``m`` times a frequency, multiplied in float32,
loses the low bits of ``m``, more as ``m`` grows. :func:`rope_angles` can
compute them either way, to show the difference (its example: more than
1e-3 rad at position 100,000; the page's table gives it by position).

The five mistakes of RoPE generation, and where this package avoids each.
``tests/test_rope.py`` writes each as a one-line mutant of a copy of the
package and names the test that catches it; a page can show them with
public calls (the last item of each):

1. A cache position used as the position id of a left-padded row.
   :func:`attention.kv_cache.new_position_ids` counts each row's real
   tokens. Counting the pads in every call only shifts a row, which RoPE
   does not see; it breaks once the prefill counts them and the steps do
   not. Show it: ``decode_step(model, ids, cache, mask,
   position_ids=torch.arange(P))`` at the prefill, then a default step.
2. Cached keys rotated a second time. :func:`attention.kv_cache.attend_cached`
   rotates the new keys once, before the cache keeps them. Show it:
   ``cache.keys[i] = apply_rope(cache.keys[i], torch.arange(P))``, then a step.
3. An offset that counts the rows a cache kept (pads included) instead of
   the positions a row has seen. ``new_position_ids`` counts a row's real
   tokens before ``start``. Show it: ``position_ids=start + torch.arange(n)``
   at a step of a left-padded batch.
4. A negative offset at prefill: positions counted back from the end of a
   cache that does not hold the new keys yet (``start - T_new``, so
   ``-P`` at prefill). The prefill alone is only shifted; the next step
   then sits ``P`` positions from the prompt's last token. The package
   counts from ``start``, and :func:`apply_rope` and ``decode_step`` refuse
   negative positions with a ``ValueError``. Show it: ``position_ids=
   torch.arange(-P, 0)`` raises.
5. Two layouts mixed between a checkpoint and the loader:
   :func:`rope_layout_state_dict` reorders the query and key rows. Show it:
   load a checkpoint of one layout into a model of the other without it.
"""

from __future__ import annotations

import torch

from ._layout import ROPE_LAYOUTS
from .checks import (
    check_choice,
    check_even,
    check_number,
    check_rope,
    check_rope_angles,
    check_rotary_batch,
    check_state_layout,
    check_storage,
)
from .multihead import MultiHeadAttention


def rope_angles(
    position_ids: torch.Tensor,
    head_dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """The angle of every pair at every position: ``m * base ** (-2i / head_dim)``.

    Book section: Beyond the chapter, Rotary position embeddings. ``dtype``
    is the precision the frequencies and the products are computed in:
    float64 (the default, what :func:`apply_rope` uses) keeps the low bits
    of large positions; float32 is what a naive implementation gets.

    Args:
        position_ids: integer positions, at least 0.
        head_dim: features per head, even.
        base: the base of the frequencies (``rope_theta``). Default: ``10000.0``.
        dtype: the floating-point dtype to compute in. Default: float64.

    Shape:
        position_ids: ``(T,)`` or ``(b, T)``
        Output: ``(T, hd/2)`` or ``(b, T, hd/2)``

    Returns:
        The angles in radians, in ``dtype``.

    Example:
        >>> rope_angles(torch.tensor([0, 1, 2]), head_dim=4, base=100.0)
        tensor([[0.0000, 0.0000],
                [1.0000, 0.1000],
                [2.0000, 0.2000]], dtype=torch.float64)
        >>> careful = rope_angles(torch.tensor([100_000]), 64)
        >>> naive = rope_angles(torch.tensor([100_000]), 64, dtype=torch.float32)
        >>> bool((careful - naive.double()).abs().max() > 1e-3)
        True
    """
    check_rope_angles(position_ids, head_dim, base, dtype)
    return angles(position_ids, head_dim, base, dtype)


def angles(
    position_ids: torch.Tensor, head_dim: int, base: float, dtype: torch.dtype
) -> torch.Tensor:
    """:func:`rope_angles` after the door, unchecked: ``(..., T) -> (..., T, hd/2)``."""
    pair = torch.arange(head_dim // 2, dtype=dtype, device=position_ids.device)
    inv_freq = base ** (-2 * pair / head_dim)  # (hd/2,): 1, ..., about 1 / base
    return position_ids.to(dtype)[..., None] * inv_freq  # (..., T, 1) * (hd/2,)


def apply_rope(
    x: torch.Tensor,
    position_ids: torch.Tensor,
    *,
    base: float = 10000.0,
    layout: str = "half",
) -> torch.Tensor:
    """Turn each pair of features of ``x`` by its position's angle.

    Book section: Beyond the chapter, Rotary position embeddings. Pair ``i``
    of the token at position ``m`` turns by ``m * base ** (-2i / head_dim)``:
    ``(a, b) -> (a cos - b sin, a sin + b cos)``. Applied to queries and
    keys (never values), it makes every score depend on how far apart two
    tokens are, not on where they are.

    Args:
        x: queries or keys, ``head_dim`` even.
        position_ids: integer positions (``torch.long``), at least 0: one
            row for every sequence, or one row ``(b, T)`` per sequence of a
            batch (then ``x``'s first dimension is ``b``), broadcast over
            the heads.
        base: the base of the frequencies (``rope_theta``). Default: ``10000.0``.
        layout: ``"half"`` pairs feature ``i`` with ``i + head_dim / 2``
            (GPT-NeoX, Llama, Qwen); ``"interleaved"`` pairs ``2i`` with
            ``2i + 1`` (GPT-J, RoFormer). Default: ``"half"``.

    Shape:
        x: ``(..., T, hd)``, e.g. ``(b, h, T, hd)``
        position_ids: ``(T,)`` or ``(b, T)``
        Output: ``(..., T, hd)``, the shape of ``x``

    Returns:
        The rotated ``x``, in its dtype; the angles were computed in float64.

    Example:
        >>> q = torch.ones(2, 3, 4, 8)  # (b, h, T, hd)
        >>> out = apply_rope(q, torch.arange(4))
        >>> out.shape
        torch.Size([2, 3, 4, 8])
        >>> out[0, 0, 1, [0, 4]]  # pair 0 of position 1: turned by 1 radian
        tensor([-0.3012,  1.3818])
        >>> torch.equal(out[..., 0, :], q[..., 0, :])  # position 0 stays put
        True
        >>> apply_rope(torch.ones(2, 5, 8), torch.tensor([[0, 0, 1, 2, 3]] * 2)).shape
        torch.Size([2, 5, 8])
    """
    check_rope(x, position_ids, base, layout)
    return rotate_pairs(x, position_ids, base, layout)


def rotate_pairs(
    x: torch.Tensor, position_ids: torch.Tensor, base: float, layout: str
) -> torch.Tensor:
    """:func:`~attention.apply_rope` after the door: the rotation alone, unchecked.

    What the package's layers and generation loops call on input they
    checked once, before the loop (:mod:`attention.checks`).
    """
    head_dim, num_tokens = x.shape[-1], x.shape[-2]
    theta = angles(position_ids, head_dim, base, torch.float64)  # (..., T, hd/2)
    if position_ids.dim() == 2:  # one row per sequence: (b, T, hd/2) ->
        # (b, 1, ..., 1, T, hd/2), so that it broadcasts over the heads
        lead = [1] * (x.dim() - 3)
        theta = theta.view(position_ids.shape[0], *lead, num_tokens, head_dim // 2)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    if layout == "half":
        # (..., T, hd) -> two (..., T, hd/2): pair i is (a[i], b[i])
        a, b = x[..., : head_dim // 2], x[..., head_dim // 2 :]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]  # features 2i and 2i + 1: (..., T, hd/2)
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
    return turned.flatten(-2)  # (..., T, hd/2, 2) -> (..., T, hd)


def rope_permutation(head_dim: int) -> torch.Tensor:
    """The order of features that makes the interleaved layout the half one.

    Book section: Beyond the chapter, Rotary position embeddings. With
    ``p = rope_permutation(head_dim)``,
    ``apply_rope(x, pos, layout="interleaved")[..., p]`` equals
    ``apply_rope(x[..., p], pos, layout="half")`` exactly: the same
    multiplications on the same numbers, in another order.

    Args:
        head_dim: features per head, even.

    Shape:
        Output: ``(hd,)``, a permutation of ``0 .. hd - 1``

    Returns:
        ``[0, 2, 4, ..., 1, 3, 5, ...]``: the first feature of every
        interleaved pair, then the second.

    Example:
        >>> rope_permutation(6)
        tensor([0, 2, 4, 1, 3, 5])
    """
    check_even("head_dim", head_dim, "RoPE turns pairs of features")
    check_storage("head_dim", head_dim, head_dim * 8)  # int64 indices
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))


def rope_layout_state_dict(
    state: dict[str, torch.Tensor], num_heads: int, *, source: str, target: str
) -> dict[str, torch.Tensor]:
    """A checkpoint's weights moved from one RoPE layout to the other.

    Book section: Beyond the chapter, Rotary position embeddings. The rows
    of every ``W_query`` and ``W_key`` (weights and biases) are reordered
    within each head by :func:`rope_permutation` (or its inverse), so a model
    built with ``target`` computes what the checkpoint computed with
    ``source``. Every other tensor is kept as it is.

    Args:
        state: a ``state_dict()`` of a model whose attention layers keep
            ``W_query`` and ``W_key`` (``(h * hd, d_in)`` weights).
        num_heads: heads per layer, as the model was built. A state dict
            cannot tell it: ``W_query`` has ``num_heads * head_dim`` rows,
            and any count that leaves an even ``head_dim`` passes the
            checks. A wrong one reorders rows across the wrong head
            boundaries and the model gives other outputs, with no error.
        source: the layout the checkpoint was trained with.
        target: the layout of the model that will load it.

    Returns:
        A new dict; ``state`` is not changed.

    Example:
        >>> from attention import TinyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> gptj = TinyAttentionModel(9, 8, 6, 2, "rope", rope_layout="interleaved")
        >>> llama = TinyAttentionModel(9, 8, 6, 2, "rope", rope_layout="half")
        >>> moved = rope_layout_state_dict(
        ...     gptj.state_dict(), 2, source="interleaved", target="half"
        ... )
        >>> _ = llama.load_state_dict(moved)
        >>> ids = torch.tensor([[1, 5, 2, 7]])
        >>> torch.allclose(llama(ids), gptj(ids), atol=1e-6)
        True
    """
    check_choice("source", source, list(ROPE_LAYOUTS))
    check_choice("target", target, list(ROPE_LAYOUTS))
    names = check_state_layout(state, num_heads)
    moved = dict(state)
    if source == target:
        return moved
    for name in names:
        rows = state[name]  # (h * hd, ...) or (h * hd,)
        head_dim = rows.shape[0] // num_heads
        order = rope_permutation(head_dim)  # interleaved -> half
        if source == "half":
            order = order.argsort()  # the inverse: half -> interleaved
        per_head = rows.reshape(num_heads, head_dim, *rows.shape[1:])  # (h, hd, ...)
        moved[name] = per_head[:, order].reshape(rows.shape)
    return moved


class RotaryMultiHeadAttention(MultiHeadAttention):
    """The chapter's multi-head attention, with queries and keys rotated.

    Book section: Beyond the chapter, Rotary position embeddings. The same
    weights and the same steps as :class:`~attention.MultiHeadAttention`,
    plus two lines: after the projections and before the scores, queries
    and keys turn by their positions (:func:`apply_rope`). Values do not.
    A model built from these layers needs no position table.

    Args:
        d_in, d_out, context_length, dropout, num_heads, qkv_bias: as
            :class:`~attention.MultiHeadAttention`; ``head_dim = d_out /
            num_heads`` must be even.
        base: the base of the frequencies. Default: ``10000.0``.
        layout: ``"half"`` or ``"interleaved"``. Default: ``"half"``.

    Shape:
        x: ``(b, T, d_in)``
        position_ids: ``(T,)`` or ``(b, T)``; default ``0 .. T - 1``
        Output: ``(b, T, d_out)``

    Example:
        >>> _ = torch.manual_seed(0)
        >>> mha = RotaryMultiHeadAttention(4, 8, 6, 0.0, num_heads=2)
        >>> x = torch.rand(1, 3, 4)
        >>> mha(x).shape
        torch.Size([1, 3, 8])
        >>> torch.allclose(mha(x), mha(x, torch.arange(3) + 100))  # a shift
        True
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
        *,
        base: float = 10000.0,
        layout: str = "half",
    ) -> None:
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        check_number("base", base)
        check_choice("layout", layout, list(ROPE_LAYOUTS))
        check_even("head_dim", self.head_dim, "RoPE turns pairs of features")
        self.base = float(base)
        self.layout = layout

    def rotate(self, t: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        """Queries or keys ``(b, h, T, hd)`` turned at ``position_ids``, unchecked.

        What a KV cache's attention calls (:func:`~attention.cached_attention`).
        """
        return rotate_pairs(t, position_ids, self.base, self.layout)

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        position_ids = check_rotary_batch(self, x, position_ids)  # default 0..T-1
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

        # The new step: turn queries and keys by their positions. (b, h, T, hd)
        queries = self.rotate(queries, position_ids)
        keys = self.rotate(keys, position_ids)

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
