"""The KV cache, and attention that reads it (beyond the chapter).

Shape legend: ``b`` batch size, ``T_new`` tokens fed in one call, ``T_all``
tokens seen so far (cached plus new), ``h`` ``num_heads``, ``g`` key/value
heads (``num_kv_heads``, or ``num_heads`` for
:class:`~attention.MultiHeadAttention`), ``hd`` ``head_dim``. A bounded
cache adds ``W`` its ``window``, ``S`` its ``sink_tokens``, ``R`` the window
rows it holds (at most ``W``) and ``S_h`` the sinks it holds (at most ``S``).

A decoder generates one token at a time. With a cache it keeps the keys and
values of every token it has seen, so each step computes the query, key and
value of the newest token only. Generation itself, which drives a model
through the cache, is in :mod:`attention.generation`.

A *bounded* cache (``KVCache(..., window=W, sink_tokens=S)``) keeps, per
layer, the last ``W`` rows in a ring buffer and each sequence's first ``S``
real tokens (its *sinks*), and forgets the rest: Mistral's rolling cache,
StreamingLLM's attention sinks. Its memory stops growing once ``W + S``
tokens have gone through it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .checks import (
    check_cache_bounds,
    check_cached,
    check_integer,
    check_kv,
    check_positive,
    check_window_layers,
    check_window_list,
)
from .gqa import repeat_kv
from .window import window_hidden

#: How a bounded cache places its sinks for RoPE: at their own positions
#: (``"absolute"``, Mistral's way), or right before the window, as if
#: positions were counted inside the cache (``"in_cache"``, StreamingLLM's way).
CACHE_POSITIONS = ("absolute", "in_cache")


class KVCache:
    """The keys and values of the tokens seen so far, one pair per layer.

    Book section: Beyond the chapter, Generation with a KV cache. Each
    ``update`` appends the new tokens' keys and values along the token
    axis and returns everything cached for that layer.

    With a ``window`` (Beyond the chapter, Bounded context), a layer keeps
    only the last ``window`` rows, in a *ring buffer*: row ``r`` lives in
    slot ``r % window``, so a new row overwrites the oldest one in place, and
    nothing moves. With ``sink_tokens=S`` it also keeps, for each sequence
    of the batch, its first ``S`` real tokens (pads do not count) as they
    leave the window: the *attention sinks*. A bounded layer never holds
    more than ``window + sink_tokens`` tokens, and holds exactly what an
    unbounded one would until that many have gone through it.

    A call of ``c`` new tokens needs, for its first query, the ``window - 1``
    rows before it, and for its last one, the chunk itself: so the new
    queries attend over what the layer holds *plus* the new keys,
    ``(b, g, S_h + R + c, hd)``, and only then does the layer evict. A
    chunk longer than the window works the same way.

    Positions stay absolute after eviction (Mistral): a key is rotated once,
    at its own position, before the cache keeps it. With
    ``positions="in_cache"`` the sinks are turned again at each call so that
    they sit right before the oldest row of the window, as if positions were
    counted inside the cache (StreamingLLM). For the rows of the window that
    changes nothing (RoPE sees distances only); for the sinks it caps their
    distance to the newest token at ``window + sink_tokens``.

    Args:
        context_length: the most tokens an unbounded layer may hold, and the
            most tokens one call may bring.
        num_layers: how many attention layers share the cache. Default: ``1``.
        window: ``None`` (keep everything), an integer of at least 1 for
            every layer, or one entry per layer (``None`` for a global layer:
            Gemma's local and global layers). Default: ``None``.
        sink_tokens: how many of each sequence's first real tokens a
            windowed layer keeps after they leave the window, at least 0;
            more than 0 needs a window. Default: ``0``.
        positions: ``"absolute"`` or ``"in_cache"``, where a RoPE layer
            sees its sinks (see above). Default: ``"absolute"``.

    Shape:
        keys: ``(b, g, T_all, hd)`` per layer; for a windowed layer, its
            ring ``(b, g, R, hd)`` in slot order, its sinks in ``sink_keys``
            ``(b, g, S_h, hd)``
        values: as keys (``sink_values`` for the sinks)

    Example:
        >>> cache = KVCache(context_length=4)
        >>> new = torch.ones(1, 2, 3, 5)  # 2 heads, 3 tokens, head_dim 5
        >>> keys, values = cache.update(0, new, new)
        >>> keys.shape, cache.num_tokens(), cache.nbytes()
        (torch.Size([1, 2, 3, 5]), 3, 240)
        >>> ring = KVCache(context_length=4, window=2, sink_tokens=1)
        >>> for _ in range(5):  # 5 tokens, one at a time
        ...     _ = ring.update(0, new[:, :, :1], new[:, :, :1])
        >>> ring.num_tokens(), ring.num_held(), ring.nbytes()  # seen, held, bytes
        (5, 3, 240)
    """

    def __init__(
        self,
        context_length: int,
        num_layers: int = 1,
        *,
        window: int | Sequence[int | None] | None = None,
        sink_tokens: int = 0,
        positions: str = "absolute",
    ) -> None:
        check_positive(context_length=context_length, num_layers=num_layers)
        self.windows = check_window_layers(window, sink_tokens, num_layers)
        check_cache_bounds(positions, list(CACHE_POSITIONS))
        self.context_length = context_length
        self.num_layers = num_layers
        self.sink_tokens = sink_tokens
        self.positions = positions
        # Per layer: the rows (unbounded), or the ring of the last rows.
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        # Per windowed layer: the sinks, column s = a sequence's position s,
        # and which columns hold a real token of that sequence, (b, S_h).
        self.sink_keys: list[torch.Tensor | None] = [None] * num_layers
        self.sink_values: list[torch.Tensor | None] = [None] * num_layers
        self.sink_kept: list[torch.Tensor | None] = [None] * num_layers
        self.seen = [0] * num_layers  # rows gone through each layer, pads included

    def num_tokens(self, layer: int = 0) -> int:
        """How many tokens ``layer`` has seen (an unbounded layer holds them all)."""
        check_integer("layer", layer, 0, self.num_layers)
        return self.lengths[layer]

    def num_held(self, layer: int = 0) -> int:
        """How many tokens ``layer`` holds now: its ring and its sinks."""
        check_integer("layer", layer, 0, self.num_layers)
        held = [
            t.shape[2]
            for t in (self.keys[layer], self.sink_keys[layer])
            if t is not None
        ]
        return sum(held)

    @property
    def lengths(self) -> tuple[int, ...]:
        """The number of tokens each layer has seen, ``(T_all, ...)``, read-only.

        What a loop over layers and steps reads, where :meth:`num_tokens`
        would check its ``layer`` at every call. Positions and the padding
        mask count these rows, whether the layer still holds them or not.
        """
        return tuple(
            self.seen[i] if self.windows[i] is not None else self._rows(i)
            for i in range(self.num_layers)
        )

    def _rows(self, layer: int) -> int:
        keys = self.keys[layer]
        return 0 if keys is None else keys.shape[2]

    def update(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new tokens' keys and values; return all of the layer's.

        Args:
            layer: which layer, in ``[0, num_layers)``.
            keys: the new tokens' keys.
            values: the new tokens' values, same shape as ``keys``.

        Shape:
            keys: ``(b, g, T_new, hd)``
            values: ``(b, g, T_new, hd)``
            Output: two tensors ``(b, g, T_all, hd)``; for a windowed layer
                ``(b, g, S_h + R + T_new, hd)``: its sinks, its ring, the new rows

        Returns:
            ``(keys, values)`` of every token cached for ``layer``, oldest
            first; for a windowed layer, what the new tokens attend over.
        """
        check_integer("layer", layer, 0, self.num_layers)
        held = self._rows(layer) if self.windows[layer] is None else 0
        check_kv(keys, values, self.keys[layer], self.context_length, held)
        return self.append(layer, keys, values)

    def append(
        self,
        layer: int,
        keys: torch.Tensor,
        values: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The step every generated token takes in every layer: keep the new
        keys and values, return all of the layer's.

        Unchecked: :meth:`update` checks its arguments, then calls it; the
        package's generation loops call it on keys and values they computed
        from input checked once, before the loop. Shapes as in :meth:`update`.
        A windowed layer returns its sinks, its ring and the new rows, then
        evicts; ``attention_mask`` ``(b, T_all)`` tells it which rows are
        real, so that each sequence keeps its own first tokens as sinks.
        """
        if self.windows[layer] is not None:
            return self._append_window(layer, keys, values, attention_mask)
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = keys, values
        else:
            # (b, g, start, hd) + (b, g, T_new, hd) -> (b, g, T_all, hd)
            self.keys[layer] = torch.cat((self.keys[layer], keys), dim=2)
            self.values[layer] = torch.cat((self.values[layer], values), dim=2)
        return self.keys[layer], self.values[layer]

    def _append_window(self, layer, keys, values, attention_mask):
        """A windowed layer: return sinks + ring + new, then evict into the ring."""
        window = self.windows[layer]
        start, num_new = self.seen[layer], keys.shape[2]
        end = start + num_new
        ring_k, ring_v = self.keys[layer], self.values[layer]
        # The ring holds R rows, start - R .. start - 1
        held = 0 if ring_k is None else ring_k.shape[2]
        # What the new queries attend over, before anything leaves: sinks
        # (b, g, S_h, hd), ring (b, g, R, hd), new (b, g, T_new, hd)
        # -> (b, g, S_h + R + T_new, hd)
        parts = [(self.sink_keys[layer], self.sink_values[layer]), (ring_k, ring_v)]
        parts = [p for p in parts if p[0] is not None] + [(keys, values)]
        seen_k = torch.cat([k for k, _ in parts], dim=2)
        seen_v = torch.cat([v for _, v in parts], dim=2)

        # Rows start - R .. first_kept - 1 leave the window with this call,
        # oldest first: those still in the ring, then new ones that never fit.
        first_kept = max(0, end - window)
        old_rows = torch.arange(start - held, min(first_kept, start))
        new_rows = torch.arange(start, max(first_kept, start))
        if len(old_rows) + len(new_rows) and self.sink_tokens:
            # (b, g, n_old, hd) + (b, g, n_new, hd) -> (b, g, n, hd), oldest first
            leaving_k = [keys[:, :, new_rows - start]]
            leaving_v = [values[:, :, new_rows - start]]
            if len(old_rows):
                leaving_k.insert(0, ring_k[:, :, old_rows % window])
                leaving_v.insert(0, ring_v[:, :, old_rows % window])
            leaving_k, leaving_v = torch.cat(leaving_k, 2), torch.cat(leaving_v, 2)
            self._keep_sinks(layer, leaving_k, leaving_v, start - held, attention_mask)

        # Write the rows that stay: row r into slot r % window, in place.
        width = min(end, window)
        if held < width:  # the ring still grows: (b, g, R, hd) -> (b, g, width, hd)
            more = keys.new_zeros(*keys.shape[:2], width - held, keys.shape[3])
            ring_k = more if ring_k is None else torch.cat((ring_k, more), dim=2)
            ring_v = (
                more.clone() if ring_v is None else torch.cat((ring_v, more), dim=2)
            )
        kept = torch.arange(max(first_kept, start), end)  # at most window rows
        ring_k[:, :, kept % window] = keys[:, :, kept - start]
        ring_v[:, :, kept % window] = values[:, :, kept - start]
        self.keys[layer], self.values[layer] = ring_k, ring_v
        self.seen[layer] = end
        return seen_k, seen_v

    def _keep_sinks(self, layer, keys, values, first_row, attention_mask):
        """Rows ``first_row ..`` leave the window: each sequence keeps those
        of them that are among its first ``sink_tokens`` real tokens."""
        num_rows = keys.shape[2]
        # (b, n): each leaving row's position in its sequence, and if it is real
        positions, real = row_positions(
            attention_mask, first_row, num_rows, keys.device
        )
        # One sink column per row evicted so far, up to sink_tokens: the cache
        # holds what an unbounded one would until window + sink_tokens rows.
        width = min(self.sink_tokens, first_row + num_rows)
        self._widen_sinks(layer, keys, width)
        # (b or 1, n) -> (b, n): without a mask, one row serves every sequence
        positions = positions.expand(keys.shape[0], -1)
        keep = (real & (positions < self.sink_tokens)).expand(keys.shape[0], -1)
        rows, cols = keep.nonzero(as_tuple=True)
        where = positions[rows, cols]  # column s holds position s
        self.sink_keys[layer][rows, :, where] = keys[rows, :, cols]
        self.sink_values[layer][rows, :, where] = values[rows, :, cols]
        self.sink_kept[layer][rows, where] = True

    def _widen_sinks(self, layer, like: torch.Tensor, width: int) -> None:
        """Grow the sink columns to ``width``: (b, g, S_h, hd) -> (b, g, width, hd)."""
        b, g, _, hd = like.shape
        have = 0 if self.sink_keys[layer] is None else self.sink_keys[layer].shape[2]
        if width <= have:
            return
        more = like.new_zeros(b, g, width - have, hd)
        flags = torch.zeros(b, width - have, dtype=torch.bool, device=like.device)
        if self.sink_keys[layer] is None:
            self.sink_keys[layer], self.sink_values[layer] = more, more.clone()
            self.sink_kept[layer] = flags
            return
        self.sink_keys[layer] = torch.cat((self.sink_keys[layer], more), dim=2)
        self.sink_values[layer] = torch.cat((self.sink_values[layer], more), dim=2)
        self.sink_kept[layer] = torch.cat((self.sink_kept[layer], flags), dim=1)

    def hidden(
        self, layer: int, num_new: int, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Which of a windowed layer's keys each new query must not see.

        Book section: Beyond the chapter, Bounded context. Call it before
        :meth:`append`: the columns are what ``append`` returns, the sinks,
        the ring in slot order, then the new rows. A kept sink is visible to
        every new query. The ring and the new rows are consecutive rows,
        ``start - R .. start + T_new - 1``: in that order,
        ``window_mask`` (``attention/window.py``) says which are in each query's
        window (the ring's columns are then rolled into slot order). A
        sink not yet evicted is visible to the queries at or after it, in
        the window or not. Pads are hidden. Unchecked.

        Shape:
            attention_mask: ``(b, T_all)``, ``T_all = start + T_new``
            Output: ``(b, 1, T_new, S_h + R + T_new)`` (``b = 1`` without
                a mask), ``True`` = hidden
        """
        window = self.windows[layer]
        start = self.seen[layer]
        ring = self.keys[layer]
        held = 0 if ring is None else ring.shape[2]
        device = None if ring is None else ring.device
        if attention_mask is not None:
            device = attention_mask.device
        # (T_new, R + T_new), rows start - R ..: in the window, and not in the future
        in_window = ~window_hidden(num_new, held + num_new, window, 0, device)
        causal = ~window_hidden(num_new, held + num_new, None, 0, device)
        # (b, R + T_new): each row's position in its sequence, and if it is real
        positions, real = row_positions(
            attention_mask, start - held, held + num_new, device
        )
        is_sink = real & (positions < self.sink_tokens)
        # (b, 1, R + T_new) with (T_new, R + T_new) -> (b, T_new, R + T_new)
        recent = real[:, None, :] & (in_window | (is_sink[:, None, :] & causal))
        # The ring's columns, oldest first -> slot order: row r sits in slot r % window
        ring_part = recent[..., :held]
        if held:
            ring_part = ring_part.roll((start - held) % window, dims=-1)
        visible = [ring_part, recent[..., held:]]
        if self.sink_kept[layer] is not None:  # (b, S_h) -> (b, T_new, S_h)
            kept = self.sink_kept[layer][:, None, :].expand(-1, num_new, -1)
            # Without a mask the window part is one row for all: (1, ...) -> (b, ...)
            visible = [part.expand(len(kept), -1, -1) for part in visible]
            visible.insert(0, kept)
        return ~torch.cat(visible, dim=-1)[:, None]  # (b, 1, T_new, S_h + R + T_new)

    def sink_shift(
        self, layer: int, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """How far ``positions="in_cache"`` moves each sequence's sinks, ``(b, 1)``.

        Book section: Beyond the chapter, Bounded context. StreamingLLM counts
        positions inside the cache: sinks ``0 .. S - 1``, then the window.
        RoPE scores see distances only, so that is the same as moving the
        sinks of a sequence forward by (the position of its oldest held row)
        minus (the sinks it holds), and nothing else. 0 until rows beyond
        the sinks have left. Call it before :meth:`append`. Unchecked.
        """
        ring, kept = self.keys[layer], self.sink_kept[layer]
        held = 0 if ring is None else ring.shape[2]
        oldest = self.seen[layer] - held  # the oldest row the ring holds
        positions, _ = row_positions(attention_mask, oldest, 1, kept.device)  # (b, 1)
        num_sinks = kept.sum(dim=1, keepdim=True)  # (b, 1)
        return (positions - num_sinks).clamp(min=0)

    def nbytes(self) -> int:
        """Bytes held by every cached key and value tensor, as measured on them."""
        tensors = self.keys + self.values + self.sink_keys + self.sink_values
        return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def row_positions(
    attention_mask: torch.Tensor | None, first: int, num_rows: int, device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``first .. first + num_rows - 1``: each one's position, and if it is real.

    A position counts the real tokens before it, as
    :func:`new_position_ids` does; a pad gets 0. Unchecked.

    Shape:
        attention_mask: ``(b, T_all)``, ``T_all >= first + num_rows``
        Output: two ``(b, num_rows)`` tensors (``b = 1`` without a mask),
            positions (``torch.long``) and real (``torch.bool``)

    Example:
        >>> mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
        >>> row_positions(mask, 1, 3, "cpu")
        (tensor([[0, 0, 1],
                [1, 2, 3]]), tensor([[False,  True,  True],
                [ True,  True,  True]]))
    """
    if attention_mask is None:  # every row is a real token: (1, num_rows)
        positions = torch.arange(first, first + num_rows, device=device)[None]
        return positions, torch.ones_like(positions, dtype=torch.bool)
    counted = attention_mask[:, : first + num_rows].long().cumsum(dim=1) - 1
    positions = counted[:, first:].clamp(min=0)  # (b, num_rows)
    return positions, attention_mask[:, first : first + num_rows] != 0


def kv_cache_bytes(
    batch: int,
    tokens: int,
    layers: int,
    kv_heads: int,
    head_dim: int,
    bytes_per_element: int,
) -> int:
    """The size of a KV cache by the formula.

    Book section: Beyond the chapter, Generation with a KV cache. Every token
    of every sequence keeps, in every layer, one key and one value
    (the 2) of ``kv_heads * head_dim`` numbers each:
    ``2 * batch * tokens * layers * kv_heads * head_dim * bytes_per_element``.

    Args:
        batch: sequences generated together.
        tokens: tokens per sequence held in the cache.
        layers: attention layers.
        kv_heads: key/value heads per layer.
        head_dim: features per head.
        bytes_per_element: 4 for float32, 2 for float16 and bfloat16.

    Returns:
        The number of bytes, an ``int``.

    Example:
        >>> kv_cache_bytes(1, 1024, 12, 12, 64, 4)  # GPT-2 small, float32
        75497472
    """
    check_positive(
        batch=batch,
        tokens=tokens,
        layers=layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        bytes_per_element=bytes_per_element,
    )
    sizes = (batch, tokens, layers, kv_heads, head_dim, bytes_per_element)
    # Python ints: a NumPy integer would wrap around at 2**63 without a word.
    total = 2
    for size in sizes:
        total *= int(size)
    return total


def layer_windows(
    num_layers: int, window: int, local_per_global: int | None = None
) -> list[int | None]:
    """The window of every layer of a model with local and global layers.

    Book section: Beyond the chapter, Bounded context. ``local_per_global``
    local layers (a window), then one global layer (``None``, the whole
    past), repeated from the first layer: Gemma 2 alternates, ``1``; Gemma 3
    has ``5`` local layers to a global one. ``None``: every layer is local
    (Mistral 7B). The order is Hugging Face's ``layer_types``.

    Args:
        num_layers: how many attention layers, at least 1.
        window: the local layers' window, at least 1.
        local_per_global: local layers before each global one, at least 1,
            or ``None``. Default: ``None``.

    Returns:
        A list of ``num_layers`` entries, each ``window`` or ``None``.

    Example:
        >>> layer_windows(4, 4096, 1)  # Gemma 2's alternation
        [4096, None, 4096, None]
        >>> layer_windows(7, 1024, 5)  # Gemma 3's five to one
        [1024, 1024, 1024, 1024, 1024, None, 1024]
    """
    check_positive(num_layers=num_layers, window=window)
    if local_per_global is None:
        return [window] * num_layers
    check_positive(local_per_global=local_per_global)
    period = local_per_global + 1  # the global layer closes each period
    return [None if (i + 1) % period == 0 else window for i in range(num_layers)]


def kv_cache_bytes_by_layer(
    batch: int,
    tokens: int,
    windows: Sequence[int | None],
    kv_heads: int,
    head_dim: int,
    bytes_per_element: int,
    sink_tokens: int = 0,
) -> int:
    """The size of a KV cache whose layers may each have a window, by the formula.

    Book section: Beyond the chapter, Bounded context. A layer with a
    window holds ``min(tokens, window + sink_tokens)`` tokens, a global layer
    (``None``) all ``tokens``, each with one key and one value of
    ``kv_heads * head_dim`` numbers per sequence. With every entry ``None``
    this is :func:`kv_cache_bytes`.

    Args:
        batch: sequences generated together.
        tokens: tokens seen per sequence.
        windows: the window of every layer (``None`` for a global layer), as
            :func:`layer_windows` makes them.
        kv_heads: key/value heads per layer.
        head_dim: features per head.
        bytes_per_element: 4 for float32, 2 for float16 and bfloat16.
        sink_tokens: tokens a windowed layer keeps besides its window.
            Default: ``0``.

    Returns:
        The number of bytes, an ``int``.

    Example:
        >>> mistral = MODEL_WINDOWS["Mistral 7B"]
        >>> windows = layer_windows(mistral["layers"], mistral["window"])
        >>> kv_cache_bytes_by_layer(1, 32768, windows, 8, 128, 2) // 2**20  # MiB
        512
        >>> kv_cache_bytes(1, 32768, 32, 8, 128, 2) // 2**20  # without the window
        4096
    """
    check_positive(
        batch=batch,
        tokens=tokens,
        kv_heads=kv_heads,
        head_dim=head_dim,
        bytes_per_element=bytes_per_element,
    )
    check_window_list(windows)
    windows = check_window_layers(windows, sink_tokens, len(windows))
    held = 0  # tokens held, summed over the layers
    for window in windows:
        if window is None:
            held += int(tokens)
        else:
            held += min(int(tokens), window + int(sink_tokens))
    # Python ints: a NumPy integer would wrap around at 2**63 without a word.
    sizes = (batch, held, kv_heads, head_dim, bytes_per_element)
    total = 2  # a key and a value
    for size in sizes:
        total *= int(size)
    return total


#: Three real configurations with windows, as their Hugging Face config files
#: give them (``num_hidden_layers``, ``num_key_value_heads``, ``head_dim``,
#: ``sliding_window``) and the layer pattern of transformers' configuration
#: classes (``layer_types``: local layers ``"sliding_attention"``, global
#: ones ``"full_attention"``). ``local_per_global`` is ``None`` when every
#: layer is local. Pass an entry's values to :func:`layer_windows` and
#: :func:`kv_cache_bytes_by_layer`.
MODEL_WINDOWS: dict[str, dict] = {
    "Mistral 7B": {
        "layers": 32,
        "kv_heads": 8,
        "head_dim": 128,  # hidden_size 4096 / 32 attention heads
        "window": 4096,
        "local_per_global": None,
        # mistralai/Mistral-7B-v0.1's config.json, as fine-tunes copy it
        # (e.g. huggingface.co/dmayboroda/42_mistral_0.1); head_dim 128 in
        # huggingface.co/mlx-community/mistral-7B-v0.1's config.json
        "source": "https://huggingface.co/mistralai/Mistral-7B-v0.1",
    },
    "Gemma 2 9B": {
        "layers": 42,
        "kv_heads": 8,
        "head_dim": 256,
        "window": 4096,
        "local_per_global": 1,  # layer 0 local, layer 1 global, ...
        # google/gemma-2-9b's config.json (huggingface.co/hfhugs/gemma-2-9b-it
        # and fine-tunes of google/gemma-2-9b); the alternation:
        # transformers' configuration_gemma2.py, "sliding_attention" if (i + 1) % 2
        "source": "https://huggingface.co/google/gemma-2-9b",
    },
    "Gemma 3 12B": {
        "layers": 48,
        "kv_heads": 8,
        "head_dim": 256,
        "window": 1024,
        "local_per_global": 5,  # sliding_window_pattern 6: every 6th layer global
        # google/gemma-3-12b-it's text config, as
        # huggingface.co/OpenPipe/gemma-3-12b-it-text-only's config.json has it
        # (sliding_window 1024, sliding_window_pattern 6)
        "source": "https://huggingface.co/google/gemma-3-12b-it",
    },
}


def cached_attention(
    attn: nn.Module,
    x: torch.Tensor,
    cache: KVCache,
    layer: int = 0,
    attention_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Causal attention of new tokens over the cached ones and themselves.

    Book section: Beyond the chapter, Generation with a KV cache. ``attn`` is
    a :class:`~attention.MultiHeadAttention` or a
    :class:`~attention.GroupedQueryAttention`, used with its own weights. The
    new tokens sit at positions ``start .. start + T_new - 1``, where
    ``start`` is what the cache already holds; new token ``i`` may look at
    keys ``0 .. start + i``. Those are rows ``start ..`` of the module's
    causal mask: with fewer queries than keys the triangle is aligned
    bottom-right, so a prefill in chunks of any size gives what one
    prefill gives.

    Args:
        attn: the attention module whose weights to use.
        x: the new tokens' embeddings.
        cache: the cache, updated in place with the new keys and values.
        layer: which of the cache's layers ``attn`` is. Default: ``0``.
        attention_mask: for a padded batch, 1 for a real token and 0 for a
            pad, over every token so far: the cached ones, then the new
            ones. Padded keys are masked out like future ones; a query
            that may see no key gets zero weights. Default: no padding.

    Shape:
        x: ``(b, T_new, d_in)``
        attention_mask: ``(b, T_all)``, ``T_all = start + T_new``
        Output: ``(b, T_new, d_out)``

    Returns:
        The context vectors of the new tokens, what ``attn`` would give them
        if it ran on the whole sequence.

    Example:
        >>> from attention import MultiHeadAttention
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(4, 4, context_length=5, dropout=0.0, num_heads=2)
        >>> x = torch.rand(1, 5, 4)
        >>> cache = KVCache(context_length=5)
        >>> first = cached_attention(mha, x[:, :3], cache)  # prefill: 3 tokens
        >>> last = cached_attention(mha, x[:, 3:], cache)  # 2 more
        >>> torch.allclose(torch.cat((first, last), dim=1), mha(x))
        True
    """
    check_cached(attn, x, cache, layer, attention_mask, cache_type=KVCache)
    window, sink_tokens = cache.windows[layer], cache.sink_tokens
    return attend_cached(
        attn, x, cache, layer, attention_mask, None, window, sink_tokens
    )


def new_position_ids(
    attention_mask: torch.Tensor | None, start: int, num_new: int, device
) -> torch.Tensor:
    """The positions of ``num_new`` tokens fed after ``start`` cached ones.

    Book section: Beyond the chapter, Generation with a KV cache. A position
    counts the *real* tokens before it. Without padding that is ``start,
    start + 1, ...``. With a left-padded ``attention_mask`` each row counts
    its own: the real tokens it has seen (not the rows the cache kept, pads
    included), then its new ones. Pads get 0; they are masked out anyway.
    Unchecked: generation checks the mask once, at the door.

    Shape:
        attention_mask: ``(b, T_all)``, ``T_all = start + T_new``
        Output: ``(T_new,)``, or ``(b, T_new)`` with a mask

    Example:
        >>> mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
        >>> new_position_ids(mask, start=3, num_new=2, device="cpu")
        tensor([[1, 2],
                [3, 4]])
        >>> new_position_ids(None, start=3, num_new=2, device="cpu")
        tensor([3, 4])
    """
    if attention_mask is None:  # every cached row is a real token: (T_new,)
        return torch.arange(start, start + num_new, device=device)
    # The real tokens each row has seen before the new ones: (b, 1)
    seen = attention_mask[:, :start].sum(dim=1, keepdim=True)
    new = attention_mask[:, start:].cumsum(dim=1)  # (b, T_new): 1, 2, ... at reals
    return (seen + new - 1).clamp(min=0)  # (b, T_new); a pad's -1 becomes 0


def attend_cached(
    attn: nn.Module,
    x: torch.Tensor,
    cache: KVCache | None,
    layer: int = 0,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    window: int | None = None,
    sink_tokens: int = 0,
) -> torch.Tensor:
    """:func:`~attention.cached_attention` after the door: the algorithm alone.

    Book section: Beyond the chapter, Generation with a KV cache. The
    package's loops call it once per layer and step, on inputs checked once
    before the loop (see :mod:`attention.checks`). With ``cache=None``,
    ``x`` is the whole sequence and nothing is kept: the pass without a
    cache, padding mask included. A layer with a ``rotate`` method (a
    :class:`~attention.RotaryMultiHeadAttention`) turns the new queries and
    keys at ``position_ids`` (default: :func:`new_position_ids`) before the
    cache keeps the keys: each key is rotated once. ``window`` and
    ``sink_tokens`` are the layer's bounded context (Beyond the chapter,
    Bounded context), the cache's own for this layer when there is a cache.
    """
    b, num_new, _ = x.shape
    start = 0 if cache is None else cache.lengths[layer]
    num_kv_heads = getattr(attn, "num_kv_heads", attn.num_heads)
    head_dim = attn.head_dim
    # (b, T_new, d_in) -> (b, T_new, h, hd) -> (b, h, T_new, hd)
    queries = attn.W_query(x).view(b, num_new, attn.num_heads, head_dim)
    queries = queries.transpose(1, 2)
    # (b, T_new, d_in) -> (b, T_new, g, hd) -> (b, g, T_new, hd)
    keys = attn.W_key(x).view(b, num_new, num_kv_heads, head_dim)
    keys = keys.transpose(1, 2)
    values = attn.W_value(x).view(b, num_new, num_kv_heads, head_dim)
    values = values.transpose(1, 2)

    rotate = getattr(attn, "rotate", None)  # a rotary layer: positions in q, k
    if rotate is not None:
        if position_ids is None:  # (T_new,) or (b, T_new)
            position_ids = new_position_ids(attention_mask, start, num_new, x.device)
        queries = rotate(queries, position_ids)  # (b, h, T_new, hd)
        keys = rotate(keys, position_ids)  # (b, g, T_new, hd): once, before caching

    if window is not None:  # bounded context: its own mask, and a ring buffer
        keys, values, hidden = _window_keys(
            cache, layer, keys, values, attention_mask, rotate, window, sink_tokens
        )
    else:
        # The only new line of the algorithm: keep the new keys and values, get
        # all of them back. (b, g, T_new, hd) -> (b, g, T_all, hd)
        if cache is not None:
            keys, values = cache.append(layer, keys, values)
        # Rows start .. start + T_new - 1 of the causal mask, True = masked
        # out: the triangle aligned bottom-right. (T_new, T_all)
        hidden = attn.mask[start : start + num_new, : start + num_new]
        if attention_mask is not None:
            padded = attention_mask == 0  # (b, T_all), True = a padded key
            # (T_new, T_all) | (b, 1, 1, T_all) -> (b, 1, T_new, T_all)
            hidden = hidden | padded[:, None, None, :]
    # Each key/value head serves h / g query heads:
    # (b, g, T_all, hd) -> (b, h, T_all, hd)
    group_size = attn.num_heads // num_kv_heads
    keys = repeat_kv(keys, group_size, check=False)  # checked before the loop
    values = repeat_kv(values, group_size, check=False)

    # (b, h, T_new, hd) @ (b, h, hd, T_all) -> (b, h, T_new, T_all)
    attn_scores = queries @ keys.transpose(2, 3)
    attn_scores = attn_scores.masked_fill(hidden, -torch.inf)
    attn_weights = torch.softmax(attn_scores / head_dim**0.5, dim=-1)
    if attention_mask is not None:
        # A left pad sees no key at all: nan after the softmax, 0 instead.
        attn_weights = attn_weights.masked_fill(hidden, 0.0)
    attn_weights = attn.dropout(attn_weights)

    # (b, h, T_new, T_all) @ (b, h, T_all, hd) -> (b, h, T_new, hd)
    # -> (b, T_new, h, hd)
    context_vec = (attn_weights @ values).transpose(1, 2)
    # (b, T_new, h, hd) -> (b, T_new, d_out)
    context_vec = context_vec.contiguous().view(b, num_new, attn.d_out)
    return attn.out_proj(context_vec)  # (b, T_new, d_out)


def _window_keys(cache, layer, keys, values, attention_mask, rotate, window, sinks):
    """The keys a windowed layer's new queries attend over, and its mask.

    Without a cache: the new keys are the whole sequence, and the mask is
    :func:`padded_window_mask`. With one: the cache's sinks, ring and the
    new rows (:meth:`KVCache.append`), under :meth:`KVCache.hidden`, both
    taken before the cache evicts. ``positions="in_cache"`` turns the sinks
    of each sequence by :meth:`KVCache.sink_shift` first.
    """
    if cache is None:
        hidden = padded_window_mask(attention_mask, keys.shape[2], window, sinks)
        return keys, values, hidden
    hidden = cache.hidden(layer, keys.shape[2], attention_mask)  # (b, 1, T_new, T_att)
    num_sinks = 0 if cache.sink_keys[layer] is None else cache.sink_keys[layer].shape[2]
    shift = None
    if cache.positions == "in_cache" and rotate is not None and num_sinks:
        shift = cache.sink_shift(layer, attention_mask)  # (b, 1)
    # (b, g, S_h + R + T_new, hd): sinks, ring in slot order, new rows
    keys, values = cache.append(layer, keys, values, attention_mask)
    if shift is not None:  # the sinks, turned to sit right before the window
        sink_keys = rotate(keys[:, :, :num_sinks], shift.expand(-1, num_sinks))
        keys = torch.cat((sink_keys, keys[:, :, num_sinks:]), dim=2)
    return keys, values, hidden


def padded_window_mask(
    attention_mask: torch.Tensor | None,
    num_tokens: int,
    window: int | None,
    sink_tokens: int = 0,
) -> torch.Tensor:
    """The window-and-sinks mask of a whole, possibly left-padded, sequence.

    Book section: Beyond the chapter, Bounded context. The pass without a
    cache, what a bounded cache must reproduce. Each sequence counts its
    own positions (its real tokens, as :func:`new_position_ids` does), and
    ``window_mask`` (``attention/window.py``) over positions says which keys a
    query sees: so a sequence's sinks are its own first real tokens, pads
    or not before them. Pads, and rows after a query, are hidden.
    Unchecked.

    Shape:
        attention_mask: ``(b, T)``
        Output: ``(T, T)`` without a mask, else ``(b, 1, T, T)``; ``True`` = hidden

    Example:
        >>> mask = torch.tensor([[0, 1, 1, 1]])  # one pad, then 3 tokens
        >>> padded_window_mask(mask, 4, window=1, sink_tokens=1)[0, 0].int()
        tensor([[1, 1, 1, 1],
                [1, 0, 1, 1],
                [1, 0, 0, 1],
                [1, 0, 1, 0]], dtype=torch.int32)
    """
    device = None if attention_mask is None else attention_mask.device
    by_position = window_hidden(num_tokens, num_tokens, window, sink_tokens, device)
    if attention_mask is None:
        return by_position  # (T, T): positions are rows
    positions, real = row_positions(attention_mask, 0, num_tokens, device)  # (b, T)
    # (T, T) read at (b, T, 1) x (b, 1, T) -> (b, T, T)
    hidden = by_position[positions[:, :, None], positions[:, None, :]]
    future = window_hidden(num_tokens, num_tokens, None, 0, device)  # (T, T), rows
    hidden = hidden | future | ~real[:, None, :]
    return hidden[:, None]  # (b, 1, T, T)
