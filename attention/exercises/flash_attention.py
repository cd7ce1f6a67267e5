"""The exercises of the page flash-attention.

Two functions of ``attention.flash``: the running softmax over tiles of keys
(:func:`~attention.attention_over_key_tiles`) and one tile pair's share of
the backward pass (:func:`~attention.tile_backward`).
"""

from __future__ import annotations

import torch

from ..flash import (
    attention_over_key_tiles,
    backward_delta,
    flash_attention,
    tile_backward,
)
from .grader import Case, Exercise, Mistake, Words


def _qkv(shape_q, shape_k, dtype, seed):
    """Queries ``(..., Tq, hd)``, keys and values ``(..., Tk, hd)``, from a seed."""
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(shape_q, generator=gen, dtype=dtype)
    keys = torch.randn(shape_k, generator=gen, dtype=dtype)
    values = torch.randn(shape_k, generator=gen, dtype=dtype)
    return queries, keys, values


def _falling_scores() -> tuple:
    """One query whose scores fall by 1,600 from the first tile to the next."""
    queries = torch.tensor([[40.0, 0.0, 0.0, 0.0]], dtype=torch.float64)  # (1, 4)
    near = torch.tensor([[40.0, 0.0, 0.0, 0.0], [40.0, 1.0, 0.0, 0.0]])
    keys = torch.cat([near, -near, -near]).to(torch.float64)  # (6, 4): 800, -800
    values = torch.arange(24, dtype=torch.float64).view(6, 4)  # (6, 4)
    return queries, keys, values, 2


def _key_tile_cases() -> list[Case]:
    # queries (..., Tq, hd), keys and values (..., Tk, hd), tile_size
    return [
        Case(
            "2 heads, 4 queries, 10 keys in tiles of 3 (the last tile holds one)",
            "2 个头、4 个查询、10 个键，每块 3 个（最后一块只有一个键）",
            (*_qkv((2, 4, 8), (2, 10, 8), torch.float64, 0), 3),
        ),
        Case(
            "one query, 7 keys in tiles of 2, float32",
            "一个查询，7 个键，每块 2 个，float32",
            (*_qkv((1, 4), (7, 4), torch.float32, 1), 2),
        ),
        Case(
            "one key, a tile larger than the row",
            "只有一个键，块比整行还长",
            (*_qkv((3, 4), (1, 4), torch.float64, 2), 4),
        ),
        Case(
            "a batch of one, 2 heads, float32, tiles of 1",
            "批次大小为 1、2 个头，float32，每块 1 个键",
            (*_qkv((1, 2, 5, 4), (1, 2, 6, 4), torch.float32, 3), 1),
        ),
        Case(
            "scores that fall by 1,600 from the first tile to the next",
            "分数从第一块到下一块下降 1600",
            _falling_scores(),
        ),
    ]


def _per_tile_max(queries, keys, values, tile_size):
    # The tile's own maximum, not max(running, tile).
    scale = queries.shape[-1] ** -0.5
    m = torch.full_like(queries[..., :1], -torch.inf)
    ell = torch.zeros_like(m)
    o = torch.zeros_like(queries)
    for start in range(0, keys.shape[-2], tile_size):
        s = queries @ keys[..., start : start + tile_size, :].transpose(-2, -1) * scale
        m_new = s.amax(dim=-1, keepdim=True)
        p = torch.exp(s - m_new)
        ell = ell * torch.exp(m - m_new) + p.sum(dim=-1, keepdim=True)
        o = o * torch.exp(m - m_new) + p @ values[..., start : start + tile_size, :]
        m = m_new
    return o / ell, (m + torch.log(ell)).squeeze(-1)


def _tiles(queries, keys, values, tile_size, rescale_sum=True, rescale_out=True):
    """The tiled loop, with the rescaling of the sum or the output left out."""
    scale = queries.shape[-1] ** -0.5
    m = torch.full_like(queries[..., :1], -torch.inf)
    ell = torch.zeros_like(m)
    o = torch.zeros_like(queries)
    for start in range(0, keys.shape[-2], tile_size):
        s = queries @ keys[..., start : start + tile_size, :].transpose(-2, -1) * scale
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)
        rescale = torch.exp(m - m_new)
        ell = ell * (rescale if rescale_sum else 1.0) + p.sum(dim=-1, keepdim=True)
        o = o * (rescale if rescale_out else 1.0)
        o = o + p @ values[..., start : start + tile_size, :]
        m = m_new
    return o / ell, (m + torch.log(ell)).squeeze(-1)


def _sum_not_rescaled(queries, keys, values, tile_size):
    return _tiles(queries, keys, values, tile_size, rescale_sum=False)


def _output_not_rescaled(queries, keys, values, tile_size):
    return _tiles(queries, keys, values, tile_size, rescale_out=False)


def _whole_tiles_only(queries, keys, values, tile_size):
    # range(Tk // tile_size) tiles: the last, shorter tile is never read.
    whole = keys.shape[-2] // tile_size * tile_size
    return _tiles(queries, keys[..., :whole, :], values[..., :whole, :], tile_size)


def _lse_without_max(queries, keys, values, tile_size):
    context_vec, lse = attention_over_key_tiles(queries, keys, values, tile_size)
    scale = queries.shape[-1] ** -0.5
    m = (queries @ keys.transpose(-2, -1) * scale).amax(dim=-1)
    return context_vec, lse - m  # log(ell) alone


def _tile_pair(q_span, k_span, dtype, seed, causal=False, heads=()):
    """A tile pair cut from whole rows: its arguments for tile_backward.

    The log-sum-exp and D come from the whole rows (``Tq = Tk = 10``), so
    the tile's weights are a part of each row and do not sum to 1.
    """
    gen = torch.Generator().manual_seed(seed)
    queries, keys, values, grad_out = torch.randn(
        4, *heads, 10, 4, generator=gen, dtype=dtype
    ).unbind(0)  # (..., T, hd) each
    context_vec, lse = flash_attention(queries, keys, values, causal=causal)
    delta = backward_delta(grad_out, context_vec)  # (..., T)
    q0, q1 = q_span
    k0, k1 = k_span
    args = (
        queries[..., q0:q1, :],
        keys[..., k0:k1, :],
        values[..., k0:k1, :],
        grad_out[..., q0:q1, :],
        lse[..., q0:q1],
        delta[..., q0:q1],
    )
    if not causal:
        return args
    rows = torch.arange(q0, q1).unsqueeze(1)  # query positions, (bq, 1)
    future = torch.arange(k0, k1) > rows  # (bq, bk): key after query
    return (*args, future)


def _tile_backward_cases() -> list[Case]:
    return [
        Case(
            "queries 4-6 and keys 0-3 of 10, 2 heads",
            "10 个位置中的查询 4-6 与键 0-3，2 个头",
            _tile_pair((4, 7), (0, 4), torch.float64, 10, heads=(2,)),
        ),
        Case(
            "one query and 5 keys, float32",
            "一个查询与 5 个键，float32",
            _tile_pair((9, 10), (5, 10), torch.float32, 11),
        ),
        Case(
            "a tile on the causal diagonal, with its future mask",
            "因果对角线上的一块，带它的未来掩码",
            _tile_pair((4, 8), (4, 8), torch.float64, 12, causal=True),
        ),
        Case(
            "the whole 10 x 10 matrix as one tile, float32",
            "把整个 10 x 10 矩阵当作一块，float32",
            _tile_pair((0, 10), (0, 10), torch.float32, 13),
        ),
    ]


def _tile_grads(queries, keys, values, grad_out, lse, delta, future, mistake):
    """One tile pair's gradients, with one ``mistake`` made on purpose."""
    scale = queries.shape[-1] ** -0.5
    s = queries @ keys.transpose(-2, -1) * scale
    if future is not None and mistake != "no mask":
        s = s.masked_fill(future, -torch.inf)
    if mistake == "tile softmax":
        p = torch.softmax(s, dim=-1)
    else:
        p = torch.exp(s - lse.unsqueeze(-1))
    grad_values = p.transpose(-2, -1) @ grad_out
    grad_weights = grad_out @ values.transpose(-2, -1)
    if mistake == "no delta":
        grad_scores = p * grad_weights
    else:
        grad_scores = p * (grad_weights - delta.unsqueeze(-1))
    if mistake == "no scale":
        scale = 1.0
    grad_queries = grad_scores @ keys * scale
    if mistake == "dK from P":
        grad_keys = p.transpose(-2, -1) @ queries * scale
    else:
        grad_keys = grad_scores.transpose(-2, -1) @ queries * scale
    return grad_queries, grad_keys, grad_values


def _mistaken(mistake):
    def wrong(queries, keys, values, grad_out, lse, delta, future=None):
        return _tile_grads(queries, keys, values, grad_out, lse, delta, future, mistake)

    return wrong


EXERCISES = (
    Exercise(
        name="attention_over_key_tiles",
        reference=attention_over_key_tiles,
        cases=_key_tile_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your maximum is each tile's own, not the running one. Take "
                    "m_new = max(m, the tile's maximum): then exp(m - m_new) is at "
                    "most 1 and cannot overflow when a tile's scores are lower.",
                    zh_CN="你用的是每一块自己的最大值，而不是累积最大值。应取 "
                    "m_new = max(m, 这一块的最大值)：这样 exp(m - m_new) 不超过 1，"
                    "后面一块的分数更低时也不会溢出。",
                ),
                _per_tile_max,
            ),
            Mistake(
                Words(
                    en="your running sum is not rescaled when the maximum grows: "
                    "multiply the old ell by exp(m - m_new) before adding the "
                    "tile's sum.",
                    zh_CN="最大值变大时，你没有重新缩放累积和：先把旧的 ell 乘以 "
                    "exp(m - m_new)，再加上这一块的和。",
                ),
                _sum_not_rescaled,
            ),
            Mistake(
                Words(
                    en="your running output is not rescaled when the maximum grows: "
                    "multiply the old o by exp(m - m_new), as ell is, before adding "
                    "P @ V of the tile.",
                    zh_CN="最大值变大时，你没有重新缩放累积输出：像 ell 一样，先把旧的 "
                    "o 乘以 exp(m - m_new)，再加上这一块的 P @ V。",
                ),
                _output_not_rescaled,
            ),
            Mistake(
                Words(
                    en="your loop never reads the last, shorter tile. Step through "
                    "the keys with range(0, Tk, tile_size): the last slice may hold "
                    "fewer keys.",
                    zh_CN="你的循环没有读到最后那块较短的键。用 "
                    "range(0, Tk, tile_size) 遍历键：最后一个切片可以比 tile_size 短。",
                ),
                _whole_tiles_only,
            ),
            Mistake(
                Words(
                    en="your log-sum-exp is log(ell) alone: ell was summed after "
                    "subtracting m, so add it back: lse = m + log(ell).",
                    zh_CN="你的 log-sum-exp 只有 log(ell)：ell 是减去 m 之后求和的，"
                    "所以要加回来：lse = m + log(ell)。",
                ),
                _lse_without_max,
            ),
        ),
    ),
    Exercise(
        name="tile_backward",
        reference=tile_backward,
        cases=_tile_backward_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your dS leaves out D: the softmax's gradient subtracts each "
                    "row's dot product, dS = P * (dP - D[..., None]).",
                    zh_CN="你的 dS 漏掉了 D：softmax 的梯度要减去每行的点积，"
                    "dS = P * (dP - D[..., None])。",
                ),
                _mistaken("no delta"),
            ),
            Mistake(
                Words(
                    en="your dK is computed from P. Keys reach the loss through the "
                    "scores, so dK = dS^T Q / sqrt(hd), with dS, not P.",
                    zh_CN="你的 dK 是用 P 算的。键通过分数影响损失，所以 "
                    "dK = dS^T Q / sqrt(hd)，要用 dS，而不是 P。",
                ),
                _mistaken("dK from P"),
            ),
            Mistake(
                Words(
                    en="your weights are a softmax over the tile alone. The tile is "
                    "part of longer rows: recompute them from the whole rows' "
                    "log-sum-exp, P = exp(S - L[..., None]).",
                    zh_CN="你的权重只在这一块内部做了 softmax。"
                    "这一块只是更长的行的一部分：要用整行的 log-sum-exp 重新算出权重，"
                    "P = exp(S - L[..., None])。",
                ),
                _mistaken("tile softmax"),
            ),
            Mistake(
                Words(
                    en="your dQ and dK miss the factor 1 / sqrt(hd): the scores were "
                    "scaled by it, so their gradients are too.",
                    zh_CN="你的 dQ 和 dK 少了因子 1 / sqrt(hd)：分数乘过这个因子，"
                    "它们的梯度也要乘上。",
                ),
                _mistaken("no scale"),
            ),
            Mistake(
                Words(
                    en="your tile ignores `future`: set the masked scores to -inf "
                    "before the exponential, so their weights and gradients are 0.",
                    zh_CN="你没有使用 `future`：在取指数之前把被遮住的分数设为 -inf，"
                    "这样它们的权重和梯度都是 0。",
                ),
                _mistaken("no mask"),
            ),
        ),
    ),
)
