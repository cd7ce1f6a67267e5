"""Answers to the exercises of the rotary position embeddings page.

The wrong ones come from public threads: an exponent that is not -2i/d
(bkitano/llama-from-scratch#8, rasbt/LLMs-from-scratch#410), a rotate_half
split used with the angles of neighbouring pairs
(raiyanyahya/how-to-train-your-gpt#6, rasbt/LLMs-from-scratch#838), the two
layouts mixed up (huggingface/transformers#25199), and angles computed in
float32 (huggingface/transformers#29285).
"""

from __future__ import annotations

import math

import torch

from . import Answers, Wrong


def angles_by_loop(position_ids, head_dim, base=10000.0, dtype=torch.float64):
    # One pair at a time, with Python floats.
    theta = torch.zeros(*position_ids.shape, head_dim // 2, dtype=dtype)
    for i in range(head_dim // 2):
        frequency = 1.0 / base ** (2 * i / head_dim)
        theta[..., i] = position_ids.to(dtype) * frequency
    return theta


def angles_by_outer(position_ids, head_dim, base=10000.0, dtype=torch.float64):
    # The logarithm form: base ** (-2i/d) = exp(-2i/d * ln base).
    pair = torch.arange(0, head_dim, 2, dtype=dtype)  # 2i
    inv_freq = torch.exp(-pair / head_dim * math.log(base))
    return position_ids.to(dtype).unsqueeze(-1) * inv_freq


def angles_i_over_d(position_ids, head_dim, base=10000.0, dtype=torch.float64):
    i = torch.arange(head_dim // 2, dtype=dtype)
    return position_ids.to(dtype)[..., None] / base ** (i / head_dim)


def angles_positive_exponent(position_ids, head_dim, base=10000.0, dtype=torch.float64):
    i = torch.arange(head_dim // 2, dtype=dtype)
    return position_ids.to(dtype)[..., None] * base ** (2 * i / head_dim)


def angles_from_one(position_ids, head_dim, base=10000.0, dtype=torch.float64):
    i = torch.arange(head_dim // 2, dtype=dtype)
    positions = (position_ids + 1).to(dtype)
    return positions[..., None] * base ** (-2 * i / head_dim)


def angles_in_float32(position_ids, head_dim, base=10000.0, dtype=torch.float64):
    # torch.arange makes float32 by default; the cast comes at the end.
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    return (position_ids.float()[..., None] * inv_freq).to(dtype)


def _theta(x, position_ids, base):
    head_dim = x.shape[-1]
    inv_freq = 1.0 / base ** (
        torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    )
    theta = position_ids.double()[..., None] * inv_freq  # (..., T, hd/2)
    if position_ids.dim() == 2:
        theta = theta[:, None]  # (b, T, hd/2) -> (b, 1, T, hd/2): over the heads
    return theta


def rope_rotate_half(x, position_ids, base=10000.0):
    # Hugging Face's form: x * cos + rotate_half(x) * sin, angles repeated.
    theta = _theta(x, position_ids, base)
    emb = torch.cat((theta, theta), dim=-1)  # (..., T, hd)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def rope_complex(x, position_ids, base=10000.0):
    # Meta's form, with the half layout: pair i is (x[i], x[i + hd/2]).
    theta = _theta(x, position_ids, base)
    half = x.shape[-1] // 2
    pairs = torch.complex(x[..., :half].double(), x[..., half:].double())
    turned = pairs * torch.polar(torch.ones_like(theta), theta)
    return torch.cat((turned.real, turned.imag), dim=-1).to(x.dtype)


def rope_interleaved(x, position_ids, base=10000.0):
    theta = _theta(x, position_ids, base)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    even, odd = x[..., ::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., ::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def rope_neighbour_angles(x, position_ids, base=10000.0):
    # cos as c0, c0, c1, c1, ... with the rotate_half split.
    theta = _theta(x, position_ids, base)
    emb = theta.repeat_interleave(2, dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def rope_clockwise(x, position_ids, base=10000.0):
    theta = _theta(x, position_ids, base)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * cos + b * sin, b * cos - a * sin), dim=-1)


def rope_positions_from_one(x, position_ids, base=10000.0):
    return rope_rotate_half(x, position_ids + 1, base)


def rope_heads_not_broadcast(x, position_ids, base=10000.0):
    # (b, T, hd/2) against (b, h, T, hd/2): with b == h it broadcasts, wrongly.
    head_dim = x.shape[-1]
    inv_freq = 1.0 / base ** (
        torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    )
    theta = position_ids.double()[..., None] * inv_freq
    emb = torch.cat((theta, theta), dim=-1)
    half = head_dim // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


ANSWERS = [
    Answers(
        "rope_angles",
        right=(angles_by_loop, angles_by_outer),
        wrong={
            "the exponent i/d instead of 2i/d": Wrong(
                angles_i_over_d, "-2i / head_dim"
            ),
            "a positive exponent": Wrong(angles_positive_exponent, "negative", "为负"),
            "positions starting at 1": Wrong(angles_from_one, "position 0", "位置 0"),
            "angles computed in float32": Wrong(
                angles_in_float32, "float32", "float32"
            ),
        },
    ),
    Answers(
        "apply_rope",
        right=(rope_rotate_half, rope_complex),
        wrong={
            "interleaved pairs where the layout is half": Wrong(
                rope_interleaved, "interleaved layout", "交错布局"
            ),
            "rotate_half with the angles of neighbouring pairs": Wrong(
                rope_neighbour_angles, "cat((theta, theta), -1)", "对半布局"
            ),
            "the rotation turned the other way": Wrong(
                rope_clockwise, "other way", "相反的方向"
            ),
            "positions starting at 1": Wrong(
                rope_positions_from_one, "start at 1", "从 1 开始"
            ),
            "per-row positions not broadcast over the heads": Wrong(
                rope_heads_not_broadcast, "(b, 1, T, hd/2)", "(b, 1, T, hd/2)"
            ),
        },
    ),
]
