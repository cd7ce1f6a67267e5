"""Answers to the exercises of the FlashAttention page."""

from __future__ import annotations

import math

import torch

from . import Answers, Wrong

# --- attention_over_key_tiles -------------------------------------------------


def normalised_every_tile(queries, keys, values, tile_size):
    # FlashAttention-1's form: the output is kept divided by ell after each tile.
    scale = 1 / math.sqrt(queries.shape[-1])
    out = torch.zeros_like(queries)
    m = torch.full(queries.shape[:-1] + (1,), -math.inf, dtype=queries.dtype)
    ell = torch.zeros_like(m)
    for start in range(0, keys.shape[-2], tile_size):
        k = keys[..., start : start + tile_size, :]
        v = values[..., start : start + tile_size, :]
        s = torch.matmul(queries, k.transpose(-1, -2)) * scale
        m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        p = torch.exp(s - m_new)
        ell_new = ell * torch.exp(m - m_new) + p.sum(dim=-1, keepdim=True)
        out = (ell * torch.exp(m - m_new) * out + p @ v) / ell_new
        m, ell = m_new, ell_new
    return out, (m + ell.log())[..., 0]


def merged_by_lse(queries, keys, values, tile_size):
    # Each tile attended to on its own, then the tiles merged by their lse.
    scale = queries.shape[-1] ** -0.5
    outs, lses = [], []
    for start in range(0, keys.shape[-2], tile_size):
        s = queries @ keys[..., start : start + tile_size, :].mT * scale
        lses.append(torch.logsumexp(s, dim=-1))  # (..., Tq)
        outs.append(
            torch.softmax(s, dim=-1) @ values[..., start : start + tile_size, :]
        )
    lse = torch.logsumexp(torch.stack(lses), dim=0)  # (..., Tq)
    shares = [torch.exp(part - lse)[..., None] for part in lses]  # (..., Tq, 1)
    out = sum(share * o for share, o in zip(shares, outs, strict=True))
    return out, lse


def _loop(queries, keys, values, tile_size, running_max, sum_rescaled, out_rescaled):
    scale = queries.shape[-1] ** -0.5
    m = torch.full_like(queries[..., :1], -torch.inf)
    ell = torch.zeros_like(m)
    o = torch.zeros_like(queries)
    for start in range(0, keys.shape[-2], tile_size):
        k_t = keys[..., start : start + tile_size, :]
        v_t = values[..., start : start + tile_size, :]
        s = queries @ k_t.transpose(-2, -1) * scale
        if running_max:
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        else:
            m_new = s.amax(-1, keepdim=True)
        p = torch.exp(s - m_new)
        ell = (ell * torch.exp(m - m_new) if sum_rescaled else ell) + p.sum(-1, True)
        o = (o * torch.exp(m - m_new) if out_rescaled else o) + p @ v_t
        m = m_new
    return o / ell, (m + torch.log(ell)).squeeze(-1)


def max_of_each_tile(queries, keys, values, tile_size):
    return _loop(queries, keys, values, tile_size, False, True, True)


def sum_never_rescaled(queries, keys, values, tile_size):
    return _loop(queries, keys, values, tile_size, True, False, True)


def output_never_rescaled(queries, keys, values, tile_size):
    return _loop(queries, keys, values, tile_size, True, True, False)


def whole_tiles_only(queries, keys, values, tile_size):
    n = keys.shape[-2] // tile_size  # how many tiles: drops the remainder
    scale = queries.shape[-1] ** -0.5
    m = torch.full_like(queries[..., :1], -torch.inf)
    ell = torch.zeros_like(m)
    o = torch.zeros_like(queries)
    for i in range(n):
        k_t = keys[..., i * tile_size : (i + 1) * tile_size, :]
        v_t = values[..., i * tile_size : (i + 1) * tile_size, :]
        s = queries @ k_t.transpose(-2, -1) * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        ell = ell * torch.exp(m - m_new) + p.sum(-1, keepdim=True)
        o = o * torch.exp(m - m_new) + p @ v_t
        m = m_new
    return o / ell, (m + torch.log(ell)).squeeze(-1)


def lse_forgets_the_max(queries, keys, values, tile_size):
    out, lse = normalised_every_tile(queries, keys, values, tile_size)
    s = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    return out, lse - s.max(dim=-1).values


# --- tile_backward --------------------------------------------------------------


def by_einsum(queries, keys, values, grad_out, lse, delta, future=None):
    scale = queries.shape[-1] ** -0.5
    s = torch.einsum("...qd,...kd->...qk", queries, keys) * scale
    if future is not None:
        s = torch.where(future, -torch.inf, s)
    p = torch.exp(s - lse[..., :, None])
    dv = torch.einsum("...qk,...qd->...kd", p, grad_out)
    dp = torch.einsum("...qd,...kd->...qk", grad_out, values)
    ds = p * (dp - delta[..., :, None]) * scale  # the scale folded in once
    dq = torch.einsum("...qk,...kd->...qd", ds, keys)
    dk = torch.einsum("...qk,...qd->...kd", ds, queries)
    return dq, dk, dv


def _backward(queries, keys, values, grad_out, lse, delta, future, slip):
    scale = queries.shape[-1] ** -0.5
    s = queries @ keys.mT * scale
    if future is not None and slip != "mask":
        s = s.masked_fill(future, float("-inf"))
    p = torch.softmax(s, -1) if slip == "softmax" else torch.exp(s - lse[..., None])
    dv = p.mT @ grad_out
    dp = grad_out @ values.mT
    ds = p * dp if slip == "delta" else p * (dp - delta[..., None])
    if slip == "scale":
        return ds @ keys, ds.mT @ queries, dv
    dk = (p if slip == "dk" else ds).mT @ queries * scale
    return ds @ keys * scale, dk, dv


def delta_not_subtracted(queries, keys, values, grad_out, lse, delta, future=None):
    return _backward(queries, keys, values, grad_out, lse, delta, future, "delta")


def dk_from_p(queries, keys, values, grad_out, lse, delta, future=None):
    return _backward(queries, keys, values, grad_out, lse, delta, future, "dk")


def softmax_of_the_tile(queries, keys, values, grad_out, lse, delta, future=None):
    return _backward(queries, keys, values, grad_out, lse, delta, future, "softmax")


def scale_forgotten(queries, keys, values, grad_out, lse, delta, future=None):
    return _backward(queries, keys, values, grad_out, lse, delta, future, "scale")


def future_ignored(queries, keys, values, grad_out, lse, delta, future=None):
    return _backward(queries, keys, values, grad_out, lse, delta, future, "mask")


ANSWERS = [
    Answers(
        "attention_over_key_tiles",
        right=(normalised_every_tile, merged_by_lse),
        wrong={
            "a tile's running maximum taken per tile instead of running": Wrong(
                max_of_each_tile, "not the running one", "累积最大值"
            ),
            "the old sum not rescaled by exp(m_old - m_new)": Wrong(
                sum_never_rescaled, "running sum is not rescaled", "重新缩放累积和"
            ),
            "the running output not rescaled": Wrong(
                output_never_rescaled, "running output is not rescaled", "累积输出"
            ),
            "the last, shorter tile dropped (Tk // tile_size tiles)": Wrong(
                whole_tiles_only, "last, shorter tile", "最后那块较短"
            ),
            "the log-sum-exp without the maximum": Wrong(
                lse_forgets_the_max, "lse = m + log(ell)", "lse = m + log(ell)"
            ),
        },
    ),
    Answers(
        "tile_backward",
        right=(by_einsum,),
        wrong={
            "the softmax gradient without subtracting D": Wrong(
                delta_not_subtracted, "leaves out D", "漏掉了 D"
            ),
            "dK from P instead of dS": Wrong(dk_from_p, "with dS, not P", "要用 dS"),
            "the weights renormalised within the tile": Wrong(
                softmax_of_the_tile, "exp(S - L[..., None])", "log-sum-exp"
            ),
            "the 1 / sqrt(hd) of the scores forgotten in dQ and dK": Wrong(
                scale_forgotten, "1 / sqrt(hd)", "1 / sqrt(hd)"
            ),
            "the future mask of a diagonal tile ignored": Wrong(
                future_ignored, "ignores `future`", "`future`"
            ),
        },
    ),
]
