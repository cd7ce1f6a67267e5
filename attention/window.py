"""Bounded context: a sliding window of keys, and sink tokens (beyond the chapter).

Shape legend: ``Tq`` queries, ``Tk`` keys.

A query sees the keys of its own position and before, as with
:func:`~attention.causal_mask`, but only the last ``window`` of them, itself
included: key ``j`` is visible to a query at position ``p`` when
``p - window < j <= p``. That is Hugging Face's ``sliding_window=window``
(Mistral, Gemma 2 and 3's local layers). The first ``sink_tokens`` keys stay
visible to every query that has reached them, however far back they lie:
StreamingLLM's attention sinks.

Public code counts a window in more than one way: :data:`CONVENTIONS` lists
what "a window of ``W``" means in Hugging Face's configs, flash-attn,
Gemma's and Mistral's reference code and FlexAttention's examples, with a
converter from each to this package's ``window``.

Queries are aligned to the *end* of the keys, as in a KV cache: with ``Tq``
queries and ``Tk >= Tq`` keys, query ``i`` sits at position
``i + Tk - Tq``. Masks built here have the package's polarity: ``True``
marks a key that is *hidden*.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from .checks import as_device, check_integer, check_storage


def window_mask(
    num_queries: int,
    num_keys: int,
    window: int | None = None,
    sink_tokens: int = 0,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The keys each query must not see, under a causal sliding window.

    Book section: Beyond the chapter, Bounded context. With ``window=None``
    and ``sink_tokens=0`` this is the causal mask aligned to the last key
    (for ``num_queries == num_keys``, :func:`~attention.causal_mask`).

    Args:
        num_queries: ``Tq``, at least 0.
        num_keys: ``Tk``, at least ``num_queries``: the queries are the last
            ``Tq`` positions of the keys.
        window: how many keys a query sees, itself included, at least 1;
            ``None`` for no window (all the past).
        sink_tokens: how many of the first keys stay visible to every
            query at or after them, at least 0.
        device: where to build the mask. Default: the CPU.

    Shape:
        Output: ``(Tq, Tk)``, boolean.

    Returns:
        ``True`` where attention is forbidden.

    Example:
        >>> window_mask(5, 5, window=2).int()  # each query: itself and one before
        tensor([[0, 1, 1, 1, 1],
                [0, 0, 1, 1, 1],
                [1, 0, 0, 1, 1],
                [1, 1, 0, 0, 1],
                [1, 1, 1, 0, 0]], dtype=torch.int32)
        >>> window_mask(5, 5, window=2, sink_tokens=1).int()  # key 0 stays
        tensor([[0, 1, 1, 1, 1],
                [0, 0, 1, 1, 1],
                [0, 0, 0, 1, 1],
                [0, 1, 0, 0, 1],
                [0, 1, 1, 0, 0]], dtype=torch.int32)
        >>> window_mask(2, 5, window=3).int()  # two new queries at positions 3, 4
        tensor([[1, 0, 0, 0, 1],
                [1, 1, 0, 0, 0]], dtype=torch.int32)
    """
    check_integer("num_queries", num_queries, smallest=0)
    check_integer("num_keys", num_keys, smallest=num_queries)
    if window is not None:
        check_integer("window", window, smallest=1)
    check_integer("sink_tokens", sink_tokens, smallest=0)
    check_storage("num_keys", num_keys, num_queries * num_keys)  # a byte per pair
    return window_hidden(num_queries, num_keys, window, sink_tokens, as_device(device))


def window_hidden(
    num_queries: int,
    num_keys: int,
    window: int | None,
    sink_tokens: int,
    device: torch.device | None,
) -> torch.Tensor:
    """:func:`window_mask` after the door, unchecked: ``(Tq, Tk)``, ``True`` = hidden.

    What a KV cache calls at every generated token, on sizes it checked
    once, before the loop (:mod:`attention.checks`).
    """
    # (Tq, 1): each query's position among the keys; (1, Tk): each key's.
    query_pos = torch.arange(num_keys - num_queries, num_keys, device=device)[:, None]
    key_pos = torch.arange(num_keys, device=device)[None, :]
    return hidden_keys(query_pos, key_pos, window, sink_tokens)  # (Tq, Tk)


def hidden_keys(
    query_pos: torch.Tensor,
    key_pos: torch.Tensor,
    window: int | None = None,
    sink_tokens: int = 0,
) -> torch.Tensor:
    """The rule of :func:`~attention.window_mask` for any positions: one definition.

    Book section: Beyond the chapter, Bounded context. Key ``j`` is hidden
    from a query at position ``p`` when it is in the future (``j > p``), or
    when it is too old for the window (``j <= p - window``) and is not one of
    the first ``sink_tokens`` keys. :func:`~attention.window_mask` calls it on every
    position; :func:`~attention.flash_attention` on one tile pair's positions
    at a time. Unchecked: the callers check their arguments.

    Args:
        query_pos: the queries' positions.
        key_pos: the keys' positions; broadcast against ``query_pos``.
        window: how many keys a query sees, itself included; ``None`` for
            all the past.
        sink_tokens: how many of the first keys stay visible.

    Shape:
        query_pos: ``(Tq, 1)``
        key_pos: ``(1, Tk)``
        Output: ``(Tq, Tk)``, boolean.

    Returns:
        ``True`` where attention is forbidden.

    Example:
        >>> hidden_keys(torch.tensor([[6]]), torch.arange(8)[None, :], window=3).int()
        tensor([[1, 1, 1, 1, 0, 0, 0, 1]], dtype=torch.int32)
    """
    hidden = key_pos > query_pos  # the future, as in the causal mask
    if window is not None:
        too_old = key_pos <= query_pos - window
        is_sink = key_pos < sink_tokens
        hidden = hidden | (too_old & ~is_sink)
    return hidden


# --- what "a window of W" means elsewhere --------------------------------------------


def from_sliding_window(sliding_window: int) -> int:
    """This package's ``window`` for a ``sliding_window`` (or Gemma's
    ``sliding_window_size``) that counts the keys seen, the query's own key
    included: the same number."""
    check_integer("sliding_window", sliding_window, smallest=1)
    return sliding_window


def from_window_size(window_size: tuple[int, int]) -> int:
    """This package's ``window`` for flash-attn's ``window_size=(left, right)``:
    ``left`` keys before the query's own, ``right`` after it, which must be
    0 for a causal window: ``left + 1``.

    >>> from_window_size((4095, 0))  # Mistral 7B's band through flash-attn
    4096
    """
    if not (isinstance(window_size, tuple | list) and len(window_size) == 2):
        got = f"{window_size!r}"
        raise ValueError(f"window_size must be a pair (left, right), got {got}")
    left, right = window_size
    check_integer("window_size[0] (left)", left, smallest=0)
    check_integer("window_size[1] (right)", right, smallest=0, below=1)
    return left + 1


def from_lookback(lookback: int) -> int:
    """This package's ``window`` for a window that counts the keys *before*
    the query (``q - j <= lookback``): the query's own key comes on top,
    ``lookback + 1``."""
    check_integer("lookback", lookback, smallest=0)
    return lookback + 1


class WindowConvention(NamedTuple):
    """One public implementation's meaning of "a window of ``W``".

    ``keeps`` is its rule for a query at position ``q`` and a key at ``j``,
    as that code states it, besides ``j <= q``; ``to_window`` turns its
    number into this package's ``window``; ``source`` is the file it is read
    from."""

    name: str
    parameter: str
    keeps: str
    keys_seen: str
    to_window: Callable
    source: str


#: What "a window of W" means in public code, and how to say it here. Each
#: row is checked in ``tests/test_window_conventions.py`` against that
#: implementation's own rule, written out as it states it.
CONVENTIONS: tuple[WindowConvention, ...] = (
    WindowConvention(
        "Hugging Face configs (Mistral, Gemma 2 and 3, Qwen2)",
        "sliding_window=W",
        "q - W < j",
        "W",
        from_sliding_window,
        "huggingface/transformers src/transformers/masking_utils.py "
        "(sliding_window_overlay)",
    ),
    WindowConvention(
        "flash-attn",
        "window_size=(left, right)",
        "q - left <= j <= q + right (q counted bottom-right)",
        "left + 1 (with right = 0)",
        from_window_size,
        "Dao-AILab/flash-attention flash_attn/flash_attn_interface.py "
        "(flash_attn_func's docstring)",
    ),
    WindowConvention(
        "Gemma's reference code (gemma_pytorch)",
        "sliding_window_size=W",
        "-(W - 1) <= j - q <= W - 1",
        "W",
        from_sliding_window,
        "google/gemma_pytorch gemma/model.py (GemmaAttention.forward)",
    ),
    WindowConvention(
        "Mistral's reference code (prefill mask)",
        "sliding_window=W",
        "j >= q - W (torch.triu(mask, diagonal=-W))",
        "W + 1",
        from_lookback,
        "mistralai/mistral-inference one_file_ref.py (Transformer.forward)",
    ),
    WindowConvention(
        "FlexAttention's examples (attention-gym)",
        "generate_sliding_window(window_size=W)",
        "q - j <= W",
        "W + 1",
        from_lookback,
        "meta-pytorch/attention-gym attn_gym/masks/sliding_window.py",
    ),
)
