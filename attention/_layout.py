"""The chapter's weight layout: the one language every registry class speaks.

``MultiHeadAttention`` names its weights ``W_query``, ``W_key``, ``W_value``
(each ``(d_out, d_in)``, biases ``(d_out,)``) and ``out_proj``. Every class in
:data:`attention.VARIANTS` translates its own storage to and from these names
(``mha_state_dict`` / ``load_mha_state_dict``). Queries, keys and values come
in that order everywhere: names, stacked rows, unpacking.

The other names that several modules read are here too, once: RoPE's two
layouts and the three kinds of positions of a model.
"""

from __future__ import annotations

import torch

QKV = ("W_query", "W_key", "W_value")

#: The two layouts of the same RoPE rotation: which features form a pair
#: (:mod:`attention.rope`).
ROPE_LAYOUTS = ("half", "interleaved")

#: The kinds of positions of a ``TinyAttentionModel`` (:mod:`attention.learned`).
POSITION_KINDS = ("learned", "rope", "none")


def layout_names(qkv_bias: bool) -> tuple[str, ...]:
    """The parameter names of a ``MultiHeadAttention``, in registration order.

    >>> layout_names(False)
    ('W_query.weight', 'W_key.weight', 'W_value.weight',
     'out_proj.weight', 'out_proj.bias')
    """
    parts = ("weight", "bias") if qkv_bias else ("weight",)
    qkv = tuple(f"{name}.{part}" for name in QKV for part in parts)
    return (*qkv, "out_proj.weight", "out_proj.bias")


def stack_qkv(state: dict[str, torch.Tensor], part: str) -> torch.Tensor:
    """Query, key and value ``part`` (``"weight"`` or ``"bias"``) stacked row-wise.

    ``3 x (d_out, ...) -> (3 * d_out, ...)``: rows are query | key | value.
    """
    return torch.cat([state[f"{name}.{part}"] for name in QKV])


def split_qkv(stacked: torch.Tensor, part: str) -> dict[str, torch.Tensor]:
    """The inverse of :func:`stack_qkv`: ``(3 * d_out, ...) -> 3 x (d_out, ...)``."""
    chunks = stacked.chunk(3)
    return {f"{name}.{part}": chunk for name, chunk in zip(QKV, chunks, strict=True)}
