"""FlashAttention from scratch: online softmax and tiles (beyond the chapter).

Shape legend: ``b`` batch size, ``h`` ``num_heads``, ``T`` ``num_tokens``,
``Tq`` and ``Tk`` the number of queries and keys, ``hd`` ``head_dim``,
``bq`` and ``bk`` the sizes of a query tile and a key tile, ``n`` the length
of a row of scores, ``...`` any leading (batch, head) dimensions.

The algorithm behind every fast attention kernel, built in steps, one
function each:

1. :func:`softmax_three_pass`: the softmax as three passes over a row
   (largest score, sum of exponentials, division).
2. :func:`online_softmax_stats` and :func:`online_softmax`: the largest score
   and the sum in *one* pass over tiles of the row, with a running maximum
   and a running sum that is rescaled whenever the maximum grows.
3. :func:`attention_over_key_tiles`: attention for a block of queries, one
   tile of keys and values at a time; the running output is rescaled with
   the running sum, so the weights are never written out.
4. :func:`flash_attention`: tiles of queries times tiles of keys. With
   ``causal=True`` the tiles wholly above the diagonal are skipped and only
   the tiles on the diagonal are masked. It returns the log-sum-exp of every
   row with the output.
5. :func:`weights_from_lse`: why the log-sum-exp is kept: from it and the
   queries and keys alone, any tile of attention weights can be recomputed
   exactly, which is what a backward pass needs.
6. The backward pass: :func:`softmax_backward` (one row),
   :func:`backward_delta` (``D = rowsum(dO * O)``), :func:`tile_backward`
   (one tile pair's ``dQ``, ``dK``, ``dV``), :func:`flash_attention_backward`
   (every tile pair, with the causal skip), and
   :class:`FlashAttentionFunction`, which saves only ``Q``, ``K``, ``V``,
   ``O`` and ``L``.

:class:`FlashMultiHeadAttention` is :class:`~attention.MultiHeadAttention`
with steps 4 and 6 as its attention core; it is listed in
:data:`attention.VARIANTS`. Everything here is plain PyTorch; a real kernel
fuses each tile's steps in C++ or CUDA.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .checks import (
    check_attention_args,
    check_batch,
    check_flag,
    check_integer,
    check_positive,
    check_shapes,
    check_tiled,
    check_window,
)
from .efficient import _FusedWeights
from .window import hidden_keys


def softmax_three_pass(attn_scores: torch.Tensor) -> torch.Tensor:
    """The softmax of the last dimension, in three passes over each row.

    Book section: Beyond the chapter, FlashAttention from scratch. Pass 1
    finds the largest score ``m``, pass 2 sums ``exp(s - m)``, pass 3
    divides. Subtracting ``m`` changes nothing mathematically and keeps every
    exponential at most 1, so nothing overflows.

    Args:
        attn_scores: scores, any shape; the softmax runs over the last
            dimension.

    Shape:
        attn_scores: ``(..., n)``
        Output: ``(..., n)``

    Returns:
        The attention weights, each row non-negative and summing to 1.

    Example:
        >>> scores = torch.tensor([1.0, 3.0, 2.0, 1000.0])
        >>> softmax_three_pass(scores)
        tensor([0., 0., 0., 1.])
        >>> _ = torch.manual_seed(0)
        >>> scores = torch.randn(2, 5)
        >>> torch.allclose(softmax_three_pass(scores), torch.softmax(scores, -1))
        True
    """
    check_shapes(attn_scores=(attn_scores, "... n"))
    check_integer("the n of attn_scores (scores a row)", attn_scores.shape[-1], 1)
    m = attn_scores.amax(dim=-1, keepdim=True)  # pass 1: (..., 1)
    ell = torch.exp(attn_scores - m).sum(dim=-1, keepdim=True)  # pass 2
    return torch.exp(attn_scores - m) / ell  # pass 3: (..., n)


def online_softmax_stats(
    attn_scores: torch.Tensor, tile_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The largest score and the sum of exponentials of each row, in one pass.

    Book section: Beyond the chapter, FlashAttention from scratch. The row
    is read one tile of ``tile_size`` scores at a time. A running maximum
    ``m`` and a running sum ``ell = sum(exp(s - m))`` are kept; when a tile
    raises the maximum from ``m`` to ``m_new``, the sum so far is multiplied
    by ``exp(m - m_new)``, which turns every ``exp(s - m)`` in it into
    ``exp(s - m_new)``. After the last tile, ``m`` and ``ell`` are exactly
    the numbers of passes 1 and 2 of :func:`softmax_three_pass`.

    Args:
        attn_scores: scores; the rows are the last dimension.
        tile_size: how many scores one step reads, at least 1.

    Shape:
        attn_scores: ``(..., n)``
        m: ``(..., 1)``
        ell: ``(..., 1)``

    Returns:
        ``(m, ell)``: the largest score of each row and the sum of
        ``exp(s - m)`` over the row.

    Example:
        >>> scores = torch.tensor([[1.0, 3.0, 2.0, 5.0, 0.0]])
        >>> m, ell = online_softmax_stats(scores, tile_size=2)
        >>> m
        tensor([[5.]])
        >>> torch.allclose(ell, torch.exp(scores - 5.0).sum(-1, keepdim=True))
        True
    """
    check_shapes(attn_scores=(attn_scores, "... n"))
    check_integer("the n of attn_scores (scores a row)", attn_scores.shape[-1], 1)
    check_positive(tile_size=tile_size)
    m = torch.full_like(attn_scores[..., :1], -torch.inf)  # (..., 1)
    ell = torch.zeros_like(m)  # (..., 1)
    for start in range(0, attn_scores.shape[-1], tile_size):
        tile = attn_scores[..., start : start + tile_size]  # (..., tile)
        m_new = torch.maximum(m, tile.amax(dim=-1, keepdim=True))
        # Rescale the old sum to the new maximum, then add this tile's part.
        ell = ell * torch.exp(m - m_new) + torch.exp(tile - m_new).sum(
            dim=-1, keepdim=True
        )
        m = m_new
    return m, ell


def online_softmax(attn_scores: torch.Tensor, tile_size: int) -> torch.Tensor:
    """The softmax of the last dimension, with its statistics from one tiled pass.

    Book section: Beyond the chapter, FlashAttention from scratch.
    :func:`online_softmax_stats` gives ``m`` and ``ell`` in one pass over
    tiles; one more pass writes the weights ``exp(s - m) / ell``. Attention
    does not need that second pass: it never writes the weights out (see
    :func:`attention_over_key_tiles`).

    Args:
        attn_scores: scores; the softmax runs over the last dimension.
        tile_size: how many scores one step reads, at least 1.

    Shape:
        attn_scores: ``(..., n)``
        Output: ``(..., n)``

    Returns:
        The attention weights, equal to ``torch.softmax(attn_scores, -1)``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> scores = torch.randn(3, 10)
        >>> weights = online_softmax(scores, tile_size=4)  # tiles of 4, 4, 2
        >>> torch.allclose(weights, softmax_three_pass(scores))
        True
    """
    m, ell = online_softmax_stats(attn_scores, tile_size)  # (..., 1) each
    return torch.exp(attn_scores - m) / ell  # (..., n)


def attention_over_key_tiles(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    tile_size: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of a block of queries, one tile of keys and values at a time.

    Book section: Beyond the chapter, FlashAttention from scratch. Besides
    the running maximum ``m`` and running sum ``ell`` of
    :func:`online_softmax_stats`, each query keeps a running output ``o``,
    the sum of ``exp(s - m) * v`` over the keys read so far. When the maximum
    grows, ``o`` is rescaled by ``exp(m - m_new)`` like ``ell``. After the
    last tile, ``o / ell`` is the context vector: the weights were never
    written out, only one tile of scores at a time existed. No mask: every
    query sees every key.

    Args:
        queries: the queries, not pre-scaled (the scores are divided by
            ``sqrt(hd)`` here).
        keys: the keys.
        values: the values, one per key.
        tile_size: keys per tile, at least 1.

    Shape:
        queries: ``(..., Tq, hd)``
        keys: ``(..., Tk, hd)``
        values: ``(..., Tk, hd)``
        context_vec: ``(..., Tq, hd)``
        lse: ``(..., Tq)``

    Returns:
        ``(context_vec, lse)``: the attention output and the log-sum-exp
        ``m + log(ell)`` of each query's scaled scores.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = torch.randn(3, 4, 10, 8).unbind(0)  # (T, hd) = (10, 8)
        >>> out, lse = attention_over_key_tiles(q, k, v, tile_size=3)
        >>> expected = F.scaled_dot_product_attention(q, k, v)
        >>> torch.allclose(out, expected, atol=1e-6)
        True
        >>> out.shape, lse.shape
        (torch.Size([4, 10, 8]), torch.Size([4, 10]))
    """
    check_tiled(queries, keys, tile_size, values=values)
    scale = queries.shape[-1] ** -0.5
    m = torch.full_like(queries[..., :1], -torch.inf)  # (..., Tq, 1)
    ell = torch.zeros_like(m)  # (..., Tq, 1)
    o = torch.zeros_like(queries)  # (..., Tq, hd)
    for start in range(0, keys.shape[-2], tile_size):
        k_tile = keys[..., start : start + tile_size, :]  # (..., bk, hd)
        v_tile = values[..., start : start + tile_size, :]  # (..., bk, hd)
        # (..., Tq, hd) @ (..., hd, bk) -> (..., Tq, bk)
        attn_scores = queries @ k_tile.transpose(-2, -1) * scale
        m_new = torch.maximum(m, attn_scores.amax(dim=-1, keepdim=True))
        p = torch.exp(attn_scores - m_new)  # unnormalised (..., Tq, bk)
        rescale = torch.exp(m - m_new)  # (..., Tq, 1)
        ell = ell * rescale + p.sum(dim=-1, keepdim=True)
        o = o * rescale + p @ v_tile  # (..., Tq, bk) @ (..., bk, hd)
        m = m_new
    lse = (m + torch.log(ell)).squeeze(-1)  # (..., Tq, 1) -> (..., Tq)
    return o / ell, lse  # (..., Tq, hd), (..., Tq)


def flash_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    causal: bool = False,
    tile_size: int = 64,
    dropout_p: float = 0.0,
    window: int | None = None,
    sinks: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiled, exact attention: query tiles times key tiles, with a running softmax.

    Book section: Beyond the chapter, FlashAttention from scratch. Each tile
    of ``tile_size`` queries walks over the key tiles with the running
    maximum, sum and output of :func:`attention_over_key_tiles`. With
    ``causal=True`` the walk stops at the diagonal: key tiles wholly in the
    queries' future are never computed, tiles wholly in their past need no
    mask, and only the tiles the diagonal crosses are masked.

    The causal triangle is aligned bottom-right, as in FlashAttention: the
    last query is the last position, so query ``i`` of ``Tq`` may see key
    ``j`` of ``Tk`` when ``j <= i + Tk - Tq``. With ``Tq == Tk`` that is
    the chapter's mask; with fewer queries than keys, the queries are the
    newest tokens after ``Tk - Tq`` earlier ones (a decode step of several
    tokens, a chunk of a prefill). A query that sees no key at all (only
    possible when ``Tq > Tk``) gets a context vector of zeros and a
    log-sum-exp of ``-inf``.

    Bounded context (Beyond the chapter, Bounded context): with ``window=W``
    (and ``causal=True``) a query at position ``p`` sees only the keys
    ``p - W < j <= p``, as :func:`~attention.window_mask` says, and the walk
    also *starts* late: key tiles wholly older than the window are never
    computed either (:func:`~attention.flash.computed_tiles` lists the pairs that are).
    ``sinks``, one learned logit ``s`` per head (GPT-OSS), joins every row's
    softmax as a score with no value: the running maximum starts at ``s``
    and the running sum at ``exp(s - s) = 1``, as if the sink were the first
    key read. The sink takes some weight and returns nothing, so every
    output shrinks by ``sigmoid(lse_keys - s)``, and the returned
    log-sum-exp includes it (a query that sees no key gets ``lse = s``).

    Equivalent to ``F.scaled_dot_product_attention(queries, keys, values,
    is_causal=causal, dropout_p=dropout_p)`` when ``Tq == Tk``, and to its
    ``attn_mask=causal_lower_right(Tq, Tk)`` otherwise, for any
    ``tile_size``. Dropout, if any, zeroes unnormalised weights before they
    meet the values, and leaves the running sum alone, so it acts on the
    normalised weights as ``nn.Dropout`` would.

    Args:
        queries: the queries of every head.
        keys: the keys.
        values: the values, one per key.
        causal: mask every key that comes after its query, aligned
            bottom-right. Default: ``False``.
        tile_size: queries per query tile and keys per key tile, at least 1.
            Need not divide the sequence length. Default: 64.
        dropout_p: dropout probability on the attention weights. Default: 0.
        window: how many keys each query sees, itself included (Hugging
            Face's ``sliding_window``), at least 1; needs ``causal=True``.
            Default: ``None``, all the past.
        sinks: one sink logit per head, compared with the scaled scores,
            or ``None`` (default) for no sink.

    Shape:
        queries: ``(..., Tq, hd)``, or ``(..., h, Tq, hd)`` with ``sinks``
        keys: ``(..., Tk, hd)``
        values: ``(..., Tk, hd)``
        sinks: ``(h,)``
        context_vec: ``(..., Tq, hd)``
        lse: ``(..., Tq)``

    Returns:
        ``(context_vec, lse)``: the attention output, and the log-sum-exp of
        each query's scaled (and masked) scores, and of its sink if any, the
        one number per query that a backward pass needs (see
        :func:`flash_attention_backward`).

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = torch.randn(3, 2, 4, 10, 8).unbind(0)  # (b, h, T, hd)
        >>> out, lse = flash_attention(q, k, v, causal=True, tile_size=4)
        >>> expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        >>> torch.allclose(out, expected, atol=1e-6)
        True
        >>> lse.shape
        torch.Size([2, 4, 10])
        >>> last, _ = flash_attention(q[..., 7:, :], k, v, causal=True, tile_size=3)
        >>> torch.allclose(last, expected[..., 7:, :], atol=1e-6)  # 3 newest
        True
        >>> near, _ = flash_attention(q, k, v, causal=True, tile_size=4, window=3)
        >>> from attention import window_mask
        >>> hidden = window_mask(10, 10, window=3)  # True = hidden
        >>> expected = F.scaled_dot_product_attention(q, k, v, attn_mask=~hidden)
        >>> torch.allclose(near, expected, atol=1e-6)
        True
    """
    check_tiled(
        queries, keys, tile_size, causal, dropout_p,
        values=values, window=window, sinks=sinks,
    )  # fmt: skip
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    offset = num_keys - num_queries  # query i is position i + offset
    scale = queries.shape[-1] ** -0.5
    if num_queries == 0:  # no tile at all: empty results of the right shapes
        out = queries.new_zeros(*queries.shape[:-1], values.shape[-1])
        return out, queries.new_zeros(queries.shape[:-1])
    device = queries.device  # where each tile's mask is made
    if sinks is not None:
        sink_scores = sinks.view(-1, 1, 1)  # (h,) -> (h, 1, 1), as (..., h, bq, 1)
    out_tiles, lse_tiles = [], []
    for q0 in range(0, num_queries, tile_size):
        q_tile = queries[..., q0 : q0 + tile_size, :]  # (..., bq, hd)
        q1 = q0 + q_tile.shape[-2]  # one past the tile's last query
        if sinks is None:  # nothing read yet: no maximum, an empty sum
            m = torch.full_like(q_tile[..., :1], -torch.inf)  # (..., bq, 1)
            ell = torch.zeros_like(m)  # (..., bq, 1)
        else:  # the sink is read first: a score s with exp(s - s) = 1, no value
            m = sink_scores.expand_as(q_tile[..., :1])  # (..., h, bq, 1)
            ell = torch.ones_like(m)  # (..., h, bq, 1)
        o = torch.zeros_like(q_tile)  # (..., bq, hd)
        # causal: the last query sees keys up to q1 - 1 + offset; skip the rest
        last_key = min(num_keys, q1 + offset) if causal else num_keys
        # window: the first query sees keys from q0 + offset - window + 1 on
        first_key = 0 if window is None else max(0, q0 + offset - window + 1)
        # Some query here has seen no key yet: it sees none at all (more
        # queries than keys), or its window starts in a later key tile.
        blind_rows = causal and (q0 + offset < 0 or window is not None)
        for k0 in range(first_key // tile_size * tile_size, last_key, tile_size):
            k_tile = keys[..., k0 : k0 + tile_size, :]  # (..., bk, hd)
            v_tile = values[..., k0 : k0 + tile_size, :]  # (..., bk, hd)
            # (..., bq, hd) @ (..., hd, bk) -> (..., bq, bk)
            attn_scores = q_tile @ k_tile.transpose(-2, -1) * scale
            k1 = k0 + k_tile.shape[-2]  # one past the tile's last key
            hidden = None  # unless the diagonal or the window's edge crosses it
            if causal:
                hidden = tile_mask(q0, q1, k0, k1, offset, window, device)
            if hidden is not None:
                attn_scores = attn_scores.masked_fill(hidden, -torch.inf)
            # The result does not depend on m (it cancels), so no
            # gradient needs to flow through it: detach() saves work.
            m_tile = attn_scores.detach().amax(dim=-1, keepdim=True)
            m_new = torch.maximum(m, m_tile)  # (..., bq, 1)
            shift = m_new  # what the exponents subtract: the running maximum,
            if blind_rows:  # or 0, not -inf, where a row has seen no key yet
                shift = m_new.masked_fill(m_new == -torch.inf, 0.0)
            p = torch.exp(attn_scores - shift)  # unnormalised (..., bq, bk)
            rescale = torch.exp(m - shift)  # (..., bq, 1)
            ell = ell * rescale + p.sum(dim=-1, keepdim=True)
            if dropout_p > 0.0:
                p = F.dropout(p, dropout_p)  # the weights, not the sum
            o = o * rescale + p @ v_tile  # (..., bq, bk) @ (..., bk, hd)
            m = m_new
        lse_tiles.append((m + torch.log(ell)).squeeze(-1))  # (..., bq)
        if blind_rows:  # a row that saw no key: o = 0, ell = 0, lse = -inf
            ell = ell.masked_fill(ell == 0, 1.0)  # so its output is 0 / 1
        out_tiles.append(o / ell)  # (..., bq, hd)
    # Tiles in query order: bq-sized pieces -> (..., Tq, hd) and (..., Tq)
    return torch.cat(out_tiles, dim=-2), torch.cat(lse_tiles, dim=-1)


def tile_mask(
    q0: int,
    q1: int,
    k0: int,
    k1: int,
    offset: int,
    window: int | None = None,
    device: torch.device | None = None,
) -> torch.Tensor | None:
    """The causal (and window) mask of one tile pair, or ``None`` if it hides nothing.

    Book section: Beyond the chapter, FlashAttention from scratch, and Bounded
    context. Queries ``q0 <= i < q1`` sit at positions ``i + offset``; keys
    are ``k0 <= j < k1``. A tile needs a mask only when the diagonal crosses
    it (its last key is after its first query) or the window's lower edge
    does (its first key is too old for its last query); otherwise it is
    computed whole. The mask itself is :func:`~attention.window.hidden_keys`,
    the one definition of the window. Unchecked: the tile loops call it, on
    ``device`` (default: the CPU).

    Shape:
        Output: ``(q1 - q0, k1 - k0)``, boolean, ``True`` = hidden.

    Example:
        >>> tile_mask(4, 8, 0, 4, offset=0) is None  # wholly in the past
        True
        >>> tile_mask(4, 8, 0, 4, offset=0, window=3).int()  # the window's edge
        tensor([[1, 1, 0, 0],
                [1, 1, 1, 0],
                [1, 1, 1, 1],
                [1, 1, 1, 1]], dtype=torch.int32)
    """
    first_query, last_query = q0 + offset, q1 - 1 + offset  # their positions
    crosses_diagonal = k1 - 1 > first_query
    crosses_window = window is not None and k0 <= last_query - window
    if not (crosses_diagonal or crosses_window):
        return None
    query_pos = torch.arange(first_query, last_query + 1, device=device)[:, None]
    key_pos = torch.arange(k0, k1, device=device)[None, :]  # (1, bk); (bq, 1) above
    return hidden_keys(query_pos, key_pos, window)  # (bq, bk)


class TilePair(NamedTuple):
    """One tile pair that :func:`~attention.flash_attention` computes: the query tile's
    and the key tile's index (``q0 // tile_size``, ``k0 // tile_size``), and
    whether a mask is applied to it (the diagonal or the window crosses it)."""

    query_tile: int
    key_tile: int
    masked: bool


def computed_tiles(
    num_queries: int,
    num_keys: int,
    tile_size: int,
    causal: bool = False,
    window: int | None = None,
) -> list[TilePair]:
    """The tile pairs :func:`~attention.flash_attention` computes; the rest are skipped.

    Book section: Beyond the chapter, FlashAttention from scratch, and Bounded
    context. The same walk as :func:`~attention.flash_attention`'s loops, without the
    arithmetic: for each query tile, the key tiles from the one holding the
    first query's oldest key in the window to the one holding the last
    query's own position. A pair not listed holds no pair of a query and a
    key it may see.

    Args:
        num_queries: ``Tq``, at least 0.
        num_keys: ``Tk``, at least 1.
        tile_size: queries per query tile and keys per key tile, at least 1.
        causal: mask the future, aligned bottom-right. Default: ``False``.
        window: keys each query sees, itself included; needs ``causal``.

    Returns:
        The computed pairs in the loops' order (query tiles, then key tiles).

    Example:
        >>> pairs = computed_tiles(12, 12, tile_size=4, causal=True, window=4)
        >>> [(p.query_tile, p.key_tile) for p in pairs]
        [(0, 0), (1, 0), (1, 1), (2, 1), (2, 2)]
        >>> len(computed_tiles(12, 12, tile_size=4))  # no mask: all 3 x 3
        9
    """
    check_integer("num_queries", num_queries, smallest=0)
    check_integer("num_keys", num_keys, smallest=1)
    check_positive(tile_size=tile_size)
    check_flag("causal", causal)
    check_window(window, causal)
    offset = num_keys - num_queries  # query i is position i + offset
    pairs = []
    for q0 in range(0, num_queries, tile_size):
        q1 = min(q0 + tile_size, num_queries)
        last_key = min(num_keys, q1 + offset) if causal else num_keys
        first_key = 0 if window is None else max(0, q0 + offset - window + 1)
        for k0 in range(first_key // tile_size * tile_size, last_key, tile_size):
            k1 = min(k0 + tile_size, num_keys)
            masked = causal and tile_mask(q0, q1, k0, k1, offset, window) is not None
            pairs.append(TilePair(q0 // tile_size, k0 // tile_size, masked))
    return pairs


def weights_from_lse(
    queries: torch.Tensor, keys: torch.Tensor, lse: torch.Tensor
) -> torch.Tensor:
    """Recompute attention weights from the queries, the keys and the log-sum-exp.

    Book section: Beyond the chapter, FlashAttention from scratch. A
    softmax weight is ``exp(s) / sum(exp(s)) = exp(s - lse)``, with
    ``lse = log(sum(exp(s)))`` of the query's row. So the forward pass keeps
    one number per query, the ``lse`` that :func:`flash_attention` returns,
    and a backward pass recomputes any tile of weights from one tile of
    queries and one tile of keys, without the rest of the row and without
    storing ``T x T`` weights. (Masked positions must then be masked again;
    this function takes tiles with no masked pair.)

    Args:
        queries: a tile of queries.
        keys: a tile of keys.
        lse: the log-sum-exp of each query's full row of scaled scores.

    Shape:
        queries: ``(..., bq, hd)``
        keys: ``(..., bk, hd)``
        lse: ``(..., bq)``
        Output: ``(..., bq, bk)``

    Returns:
        The attention weights of those queries on those keys.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = torch.randn(3, 10, 8).unbind(0)  # (T, hd)
        >>> _, lse = flash_attention(q, k, v, tile_size=4)
        >>> weights = torch.softmax(q @ k.T / 8**0.5, dim=-1)  # (T, T)
        >>> tile = weights_from_lse(q[4:8], k[0:4], lse[4:8])  # one 4 x 4 tile
        >>> torch.allclose(tile, weights[4:8, 0:4], atol=1e-6)
        True
    """
    check_tiled(queries, keys, lse=lse)
    # (..., bq, hd) @ (..., hd, bk) -> (..., bq, bk)
    scale = queries.shape[-1] ** -0.5
    attn_scores = queries @ keys.transpose(-2, -1) * scale
    return torch.exp(attn_scores - lse.unsqueeze(-1))  # (..., bq, bk)


def softmax_backward(
    attn_weights: torch.Tensor, grad_weights: torch.Tensor
) -> torch.Tensor:
    """The gradient of the softmax, row by row: from the weights' to the scores'.

    Book section: Beyond the chapter, FlashAttention from scratch, the
    backward pass. For one row, ``p = softmax(s)`` has the Jacobian
    ``dp_j / ds_k = p_j (1[j = k] - p_k)``, so a gradient ``dp`` on the
    weights becomes ``ds = p * (dp - sum(p * dp))`` on the scores: no
    ``n x n`` Jacobian is ever built, one dot product per row is enough.

    Args:
        attn_weights: the softmax's output, each row summing to 1.
        grad_weights: the gradient of the loss with respect to those weights.

    Shape:
        attn_weights: ``(..., n)``
        grad_weights: ``(..., n)``
        Output: ``(..., n)``

    Returns:
        The gradient of the loss with respect to the scores.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> scores = torch.randn(5, requires_grad=True)
        >>> weights = torch.softmax(scores, dim=-1)
        >>> grad_weights = torch.randn(5)
        >>> (expected,) = torch.autograd.grad(weights, scores, grad_weights)
        >>> torch.allclose(softmax_backward(weights, grad_weights), expected)
        True
    """
    check_shapes(attn_weights=(attn_weights, "..."), grad_weights=(grad_weights, "..."))
    row_dot = (attn_weights * grad_weights).sum(dim=-1, keepdim=True)  # (..., 1)
    return attn_weights * (grad_weights - row_dot)  # (..., n)


def backward_delta(grad_out: torch.Tensor, context_vec: torch.Tensor) -> torch.Tensor:
    """``D = rowsum(dO * O)``: the softmax backward's dot product, from the output.

    Book section: Beyond the chapter, FlashAttention from scratch, the
    backward pass. :func:`softmax_backward` needs ``sum_j P_ij dP_ij`` for
    every query ``i``, a sum over the whole row of weights. With
    ``dP = dO V^T`` and ``O = P V``, that sum is
    ``sum_j P_ij (dO_i . V_j) = dO_i . (sum_j P_ij V_j) = dO_i . O_i``:
    one dot product of two vectors of ``hd`` numbers that the backward pass
    already has, computed once before the tiles.

    Args:
        grad_out: the gradient of the loss with respect to the output ``O``.
        context_vec: the output ``O`` of the forward pass.

    Shape:
        grad_out: ``(..., Tq, hd)``
        context_vec: ``(..., Tq, hd)``
        Output: ``(..., Tq)``

    Returns:
        ``D``, one number per query.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v, grad_out = torch.randn(4, 6, 8).unbind(0)  # (T, hd)
        >>> weights = torch.softmax(q @ k.T / 8**0.5, dim=-1)  # (T, T)
        >>> grad_weights = grad_out @ v.T  # dP = dO V^T, (T, T)
        >>> row_dot = (weights * grad_weights).sum(-1)  # needs the whole row
        >>> torch.allclose(backward_delta(grad_out, weights @ v), row_dot)
        True
    """
    check_shapes(grad_out=(grad_out, "..."), context_vec=(context_vec, "..."))
    return (grad_out * context_vec).sum(dim=-1)  # (..., Tq, hd) -> (..., Tq)


def tile_backward(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    grad_out: torch.Tensor,
    lse: torch.Tensor,
    delta: torch.Tensor,
    future: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One tile pair's share of ``dQ``, ``dK`` and ``dV``, weights recomputed from L.

    Book section: Beyond the chapter, FlashAttention from scratch, the
    backward pass. For a tile of queries and a tile of keys: recompute the
    scores ``S = Q K^T / sqrt(hd)`` and the weights ``P = exp(S - L)``
    (:func:`weights_from_lse`; every exponent is at most 0, since
    ``L >= max S``), then ``dV = P^T dO``, ``dP = dO V^T``,
    ``dS = P * (dP - D)`` (:func:`softmax_backward`, with
    :func:`backward_delta` for the row's dot product), ``dQ = dS K / sqrt(hd)``
    and ``dK = dS^T Q / sqrt(hd)``. A query's ``dQ`` is the sum of its shares
    over the key tiles, a key's ``dK`` and ``dV`` the sum over the query
    tiles.

    Args:
        queries: a tile of queries ``Q``.
        keys: a tile of keys ``K``.
        values: the values ``V`` of those keys.
        grad_out: ``dO``, the gradient on the queries' outputs.
        lse: ``L``, the log-sum-exp of each query's whole row (from
            :func:`flash_attention`).
        delta: ``D`` of each query (from :func:`backward_delta`).
        future: where the tile is masked (``True`` = key in the query's
            future), or ``None`` for a tile with no masked pair.

    Shape:
        queries: ``(..., bq, hd)``
        keys: ``(..., bk, hd)``
        values: ``(..., bk, hd)``
        grad_out: ``(..., bq, hd)``
        lse: ``(..., bq)``
        delta: ``(..., bq)``
        future: ``(bq, bk)``
        Output: ``(..., bq, hd)``, ``(..., bk, hd)``, ``(..., bk, hd)``

    Returns:
        ``(grad_queries, grad_keys, grad_values)``: this tile pair's share.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = (t.requires_grad_() for t in torch.randn(3, 6, 8).unbind(0))
        >>> out, lse = flash_attention(q, k, v)  # one tile pair: the whole matrix
        >>> grad_out = torch.randn(6, 8)
        >>> expected = torch.autograd.grad(out, (q, k, v), grad_out)
        >>> delta = backward_delta(grad_out, out.detach())
        >>> grads = tile_backward(q, k, v, grad_out, lse.detach(), delta)
        >>> all(torch.allclose(g, e, atol=1e-6) for g, e in zip(grads, expected))
        True
    """
    check_tiled(
        queries,
        keys,
        future=future,
        values=values,
        grad_out=grad_out,
        lse=lse,
        delta=delta,
    )
    lse = _finite_lse(lse)  # a query that sees no key: zero gradients, not nan
    return tile_pair_gradients(queries, keys, values, grad_out, lse, delta, future)


def _finite_lse(lse: torch.Tensor) -> torch.Tensor:
    """``lse`` with 0 where it is ``-inf``: a query that sees no key (causal,
    more queries than keys) has ``L = -inf`` and only masked scores; with
    ``L = 0`` its weights are ``exp(-inf - 0) = 0``, not ``exp(-inf + inf) =
    nan``, so its gradients are 0, as its output is."""
    return lse.masked_fill(lse == -torch.inf, 0.0)


def tile_pair_gradients(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    grad_out: torch.Tensor,
    lse: torch.Tensor,
    delta: torch.Tensor,
    future: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The body of the loop of :func:`~attention.flash_attention_backward`.

    Book section: Beyond the chapter, FlashAttention from scratch, the
    backward pass. One tile pair's share of the gradients, as
    :func:`~attention.tile_backward` computes it, for the loop that calls it
    once per tile pair on slices of tensors it checked once: unchecked.
    Arguments and shapes as in :func:`~attention.tile_backward`.
    """
    scale = q.shape[-1] ** -0.5
    # S = Q K^T / sqrt(hd): (..., bq, hd) @ (..., hd, bk) -> (..., bq, bk)
    attn_scores = q @ k.transpose(-2, -1) * scale
    if future is not None:
        attn_scores = attn_scores.masked_fill(future, -torch.inf)
    # P = exp(S - L): (..., bq, bk) - (..., bq, 1); masked entries give 0
    attn_weights = torch.exp(attn_scores - lse.unsqueeze(-1))
    # dV = P^T dO: (..., bk, bq) @ (..., bq, hd) -> (..., bk, hd)
    grad_values = attn_weights.transpose(-2, -1) @ grad_out
    # dP = dO V^T: (..., bq, hd) @ (..., hd, bk) -> (..., bq, bk)
    grad_weights = grad_out @ v.transpose(-2, -1)
    # dS = P * (dP - D): (..., bq, bk) - (..., bq, 1)
    grad_scores = attn_weights * (grad_weights - delta.unsqueeze(-1))
    # dQ = dS K / sqrt(hd): (..., bq, bk) @ (..., bk, hd) -> (..., bq, hd)
    grad_queries = grad_scores @ k * scale
    # dK = dS^T Q / sqrt(hd): (..., bk, bq) @ (..., bq, hd) -> (..., bk, hd)
    grad_keys = grad_scores.transpose(-2, -1) @ q * scale
    return grad_queries, grad_keys, grad_values


def flash_attention_backward(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    context_vec: torch.Tensor,
    lse: torch.Tensor,
    grad_out: torch.Tensor,
    causal: bool = False,
    tile_size: int = 64,
    window: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients of :func:`flash_attention`, tile by tile, from ``L`` alone.

    Book section: Beyond the chapter, FlashAttention from scratch, the
    backward pass. ``D = rowsum(dO * O)`` once (:func:`backward_delta`),
    then, as in FlashAttention-2, one key tile at a time: its ``dK`` and
    ``dV`` are summed over the query tiles, and each query tile's ``dQ``
    receives its share (:func:`tile_backward`). Nothing of size
    ``Tq x Tk`` is kept: each tile of weights is recomputed from the queries,
    the keys and the log-sum-exp. With ``causal=True`` (aligned
    bottom-right, as in the forward pass), the tile pairs wholly in the
    future are skipped and only those the diagonal crosses are masked; with
    a ``window``, so are those wholly older than the window, and those its
    edge crosses are masked. Sinks change nothing here: ``L`` includes them,
    so ``P = exp(S - L)`` is already each key's share after the sink's; the
    sinks' own gradient is :func:`~attention.flash.sink_gradient`.

    Args:
        queries: the forward pass's queries.
        keys: its keys.
        values: its values.
        context_vec: its output ``O``.
        lse: its log-sum-exp ``L``.
        grad_out: ``dO``, the gradient of the loss with respect to ``O``.
        causal: whether the forward pass was causal. Default: ``False``.
        tile_size: queries per query tile and keys per key tile. Default: 64.
        window: the forward pass's window, or ``None``. Default: ``None``.

    Shape:
        queries: ``(..., Tq, hd)``
        keys: ``(..., Tk, hd)``
        values: ``(..., Tk, hd)``
        context_vec: ``(..., Tq, hd)``
        lse: ``(..., Tq)``
        grad_out: ``(..., Tq, hd)``
        Output: ``(..., Tq, hd)``, ``(..., Tk, hd)``, ``(..., Tk, hd)``

    Returns:
        ``(grad_queries, grad_keys, grad_values)``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = (t.requires_grad_() for t in torch.randn(3, 2, 9, 4).unbind(0))
        >>> expected_out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        >>> grad_out = torch.randn(2, 9, 4)
        >>> expected = torch.autograd.grad(expected_out, (q, k, v), grad_out)
        >>> with torch.no_grad():
        ...     out, lse = flash_attention(q, k, v, causal=True, tile_size=4)
        ...     grads = flash_attention_backward(q, k, v, out, lse, grad_out, True, 4)
        >>> all(torch.allclose(g, e, atol=1e-6) for g, e in zip(grads, expected))
        True
    """
    check_tiled(
        queries,
        keys,
        tile_size,
        causal,
        values=values,
        context_vec=context_vec,
        lse=lse,
        grad_out=grad_out,
        window=window,
    )
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    offset = num_keys - num_queries  # query i is position i + offset
    device = queries.device  # where each tile's mask is made
    delta = (grad_out * context_vec).sum(dim=-1)  # D: (..., Tq, hd) -> (..., Tq)
    lse = _finite_lse(lse)  # once, before the tiles
    grad_queries = torch.zeros_like(queries)  # (..., Tq, hd)
    grad_keys = torch.zeros_like(keys)  # (..., Tk, hd)
    grad_values = torch.zeros_like(values)  # (..., Tk, hd)
    for k0 in range(0, num_keys, tile_size):
        k1 = min(k0 + tile_size, num_keys)  # one past the tile's last key
        # causal: the first query tile whose last query may see key k0
        first = max(0, k0 - offset) // tile_size * tile_size if causal else 0
        # window: one past the last query whose window reaches key k1 - 1
        last = num_queries if window is None else k1 - 1 + window - offset
        for q0 in range(first, min(last, num_queries), tile_size):
            q1 = min(q0 + tile_size, num_queries)  # one past its last query
            future = None  # unless the diagonal or the window's edge crosses it
            if causal:
                future = tile_mask(q0, q1, k0, k1, offset, window, device)
            dq, dk, dv = tile_pair_gradients(
                queries[..., q0:q1, :],
                keys[..., k0:k1, :],
                values[..., k0:k1, :],
                grad_out[..., q0:q1, :],
                lse[..., q0:q1],
                delta[..., q0:q1],
                future,
            )
            grad_queries[..., q0:q1, :] += dq  # (..., bq, hd)
            grad_keys[..., k0:k1, :] += dk  # (..., bk, hd)
            grad_values[..., k0:k1, :] += dv  # (..., bk, hd)
    return grad_queries, grad_keys, grad_values


def sink_gradient(
    sinks: torch.Tensor, lse: torch.Tensor, delta: torch.Tensor
) -> torch.Tensor:
    """The gradient of the sink logits: ``-sum(P_sink * D)``, no tile needed.

    Book section: Beyond the chapter, Bounded context. The sink is one more
    column of every row's scores, with weight ``P_sink = exp(s - L)`` and no
    value, so its ``dP`` is 0 and the softmax backward
    (:func:`~attention.softmax_backward`) gives it ``dS = P_sink * (0 - D)``, with
    ``D = rowsum(dO * O)`` (:func:`~attention.backward_delta`). A head's sink is shared
    by all its rows: its gradient is the sum over the batch and the queries.

    Args:
        sinks: the sink logit of each head.
        lse: the forward pass's log-sum-exp ``L``, sink included.
        delta: ``D`` of each query (from :func:`~attention.backward_delta`).

    Shape:
        sinks: ``(h,)``
        lse: ``(..., h, Tq)``
        delta: ``(..., h, Tq)``
        Output: ``(h,)``

    Returns:
        The gradient of the loss with respect to ``sinks``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = torch.randn(3, 2, 5, 4).unbind(0)  # (h, T, hd)
        >>> sinks = torch.tensor([0.5, -1.0], requires_grad=True)
        >>> out, lse = flash_attention(q, k, v, causal=True, sinks=sinks)
        >>> grad_out = torch.randn(2, 5, 4)
        >>> (expected,) = torch.autograd.grad(out, sinks, grad_out)
        >>> delta = backward_delta(grad_out, out.detach())
        >>> torch.allclose(sink_gradient(sinks, lse.detach(), delta), expected)
        True
    """
    check_shapes(lse=(lse, "... h Tq"), delta=(delta, "... h Tq"), sinks=(sinks, "h"))
    sink_weights = torch.exp(sinks[:, None] - lse)  # (h, 1) - (..., h, Tq)
    grad_rows = -sink_weights * delta  # (..., h, Tq)
    # (..., h, Tq) -> (rest, h, Tq) -> (h,): summed over the batch and the rows
    return grad_rows.reshape(-1, sinks.shape[0], lse.shape[-1]).sum(dim=(0, 2))


class FlashAttentionFunction(torch.autograd.Function):
    """:func:`flash_attention` with its own backward pass, linear in memory.

    Book section: Beyond the chapter, FlashAttention from scratch, the
    backward pass. The forward pass runs :func:`flash_attention` and keeps
    only ``Q``, ``K``, ``V``, the output ``O`` and the log-sum-exp ``L``;
    the backward pass is :func:`flash_attention_backward`, which recomputes
    each tile of weights from them. Autograd, differentiating the tiled loop
    itself, would keep every tile's scores and weights instead. No dropout:
    :class:`FlashMultiHeadAttention` falls back to autograd when it needs
    one.

    Call it as ``FlashAttentionFunction.apply(queries, keys, values,
    causal, tile_size, window, sinks)`` (positional arguments, as for every
    ``torch.autograd.Function``; the last four may be left out). With
    ``sinks``, it saves them too, and their gradient is
    :func:`~attention.flash.sink_gradient`'s.

    Args:
        queries: the queries of every head.
        keys: the keys.
        values: the values.
        causal: mask the future, aligned bottom-right.
        tile_size: queries per query tile and keys per key tile, at least 1.
        window: keys each query sees, itself included, or ``None``.
        sinks: one sink logit per head, or ``None``.

    Shape:
        queries: ``(..., Tq, hd)``, or ``(..., h, Tq, hd)`` with ``sinks``
        keys: ``(..., Tk, hd)``
        values: ``(..., Tk, hd)``
        sinks: ``(h,)``
        context_vec: ``(..., Tq, hd)``
        lse: ``(..., Tq)``

    Returns:
        ``(context_vec, lse)`` as :func:`flash_attention` returns them; the
        log-sum-exp has no gradient.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> q, k, v = (t.requires_grad_() for t in torch.randn(3, 7, 4).unbind(0))
        >>> out, lse = FlashAttentionFunction.apply(q, k, v, True, 3)
        >>> out.sum().backward()
        >>> expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        >>> (dq,) = torch.autograd.grad(expected.sum(), q)
        >>> torch.allclose(q.grad, dq, atol=1e-6)
        True
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        causal: bool = False,
        tile_size: int = 64,
        window: int | None = None,
        sinks: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        context_vec, lse = flash_attention(
            queries, keys, values, causal, tile_size, window=window, sinks=sinks
        )
        # Five tensors, each (..., T, hd) or (..., T), and the sinks (h,):
        # nothing of size T x T.
        ctx.save_for_backward(queries, keys, values, context_vec, lse, sinks)
        ctx.causal, ctx.tile_size, ctx.window = causal, tile_size, window
        ctx.mark_non_differentiable(lse)
        return context_vec, lse

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx,
        grad_out: torch.Tensor,
        _grad_lse: torch.Tensor | None,
    ) -> tuple[torch.Tensor | None, ...]:
        queries, keys, values, context_vec, lse, sinks = ctx.saved_tensors
        grads = flash_attention_backward(
            queries, keys, values, context_vec, lse, grad_out,
            ctx.causal, ctx.tile_size, ctx.window,
        )  # fmt: skip
        grad_sinks = None
        if sinks is not None and ctx.needs_input_grad[6]:
            delta = backward_delta(grad_out, context_vec)  # D, (..., h, Tq)
            grad_sinks = sink_gradient(sinks, lse, delta)  # (h,)
        # no gradient for causal, tile_size and window
        return (*grads, None, None, None, grad_sinks)


class FlashMultiHeadAttention(_FusedWeights):
    """Multi-head causal attention with a tiled, FlashAttention-style core.

    Book section: Beyond the chapter, FlashAttention from scratch. The fused
    projection of :class:`~attention.FusedQKVMultiHeadAttention`, then
    :func:`flash_attention` with ``causal=True``: queries and keys in tiles
    of ``tile_size`` tokens, a running softmax, no ``T x T`` tensor and no
    mask buffer. A teaching version in plain PyTorch: a Python loop over the
    tiles, each step a separate kernel. Its backward pass is
    :class:`FlashAttentionFunction`'s, which keeps only ``Q``, ``K``, ``V``,
    the output and the log-sum-exp and recomputes each tile of weights, so
    training needs memory linear in ``T`` too.

    Equivalent to :class:`~attention.MultiHeadAttention` up to rounding:
    same parameters, same outputs, same gradients. Dropout acts on the
    attention weights in training mode only; with dropout, the forward pass
    is :func:`flash_attention` differentiated by autograd (which keeps each
    tile's weights, and the dropout masks, for the backward pass).

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
        >>> flash = FlashMultiHeadAttention(
        ...     3, 2, context_length=6, dropout=0.0, num_heads=2
        ... )
        >>> flash.tile_size = 4  # tiles of 4 and 2 tokens
        >>> context_vecs = flash(batch)
        >>> context_vecs.shape
        torch.Size([2, 6, 2])
        >>> context_vecs[0, :2]  # MultiHeadAttention's numbers, same seed
        tensor([[0.3190, 0.4858],
                [0.2943, 0.3897]], grad_fn=<SliceBackward0>)
    """

    # Tokens per query tile and per key tile; set it on an instance.
    tile_size: int = 64

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
        self.dropout_p = dropout  # a probability: the tiled core applies it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        qkv = self.qkv(x)  # (b, T, d_in) -> (b, T, 3 * d_out)
        # (b, T, 3 * d_out) -> (b, T, 3, h, hd) -> 3 x (b, T, h, hd)
        qkv = qkv.view(b, num_tokens, 3, self.num_heads, self.head_dim)
        queries, keys, values = qkv.unbind(2)
        # (b, T, h, hd) -> (b, h, T, hd)
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)

        # The tiled core: (b, h, T, hd) x 3 -> (b, h, T, hd), with its own
        # backward pass, which keeps Q, K, V, the output and the log-sum-exp.
        if self.training and self.dropout_p > 0.0:  # dropout: autograd's backward
            context_vec, _ = flash_attention(
                queries, keys, values, True, self.tile_size, self.dropout_p
            )
        else:
            context_vec, _ = FlashAttentionFunction.apply(
                queries, keys, values, True, self.tile_size
            )
        # Merge the heads: (b, h, T, hd) -> (b, T, h, hd) -> (b, T, d_out)
        context_vec = context_vec.transpose(1, 2)
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)
