"""Bounded context: a sliding window of keys, and sink tokens (beyond the chapter).

Shape legend: ``Tq`` queries, ``Tk`` keys.

A query sees the keys of its own position and before, as with
:func:`~attention.causal_mask`, but only the last ``window`` of them, itself
included: key ``j`` is visible to a query at position ``p`` when
``p - window < j <= p``. That is Hugging Face's ``sliding_window=window``
(Mistral, Gemma 2 and 3's local layers). The first ``sink_tokens`` keys stay
visible to every query that has reached them, however far back they lie:
StreamingLLM's attention sinks.

Queries are aligned to the *end* of the keys, as in a KV cache: with ``Tq``
queries and ``Tk >= Tq`` keys, query ``i`` sits at position
``i + Tk - Tq``. Masks built here have the package's polarity: ``True``
marks a key that is *hidden*.
"""

from __future__ import annotations

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
    hidden = key_pos > query_pos  # the future, as in the causal mask
    if window is not None:
        too_old = key_pos <= query_pos - window
        is_sink = key_pos < sink_tokens
        hidden = hidden | (too_old & ~is_sink)
    return hidden
