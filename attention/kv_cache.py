"""The KV cache, and attention that reads it (beyond the chapter).

Shape legend: ``b`` batch size, ``T_new`` tokens fed in one call, ``T_all``
tokens seen so far (cached plus new), ``h`` ``num_heads``, ``g`` key/value
heads (``num_kv_heads``, or ``num_heads`` for
:class:`~attention.MultiHeadAttention`), ``hd`` ``head_dim``.

A decoder generates one token at a time. With a cache it keeps the keys and
values of every token it has seen, so each step computes the query, key and
value of the newest token only. Generation itself, which drives a model
through the cache, is in :mod:`attention.generation`.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_cached, check_integer, check_kv, check_positive
from .gqa import repeat_kv


class KVCache:
    """The keys and values of the tokens seen so far, one pair per layer.

    Book section: Beyond the chapter, Generation with a KV cache. Each
    ``update`` appends the new tokens' keys and values along the token
    axis and returns everything cached for that layer.

    Args:
        context_length: the most tokens the cache may hold, the model's
            context length.
        num_layers: how many attention layers share the cache. Default: ``1``.

    Shape:
        keys: ``(b, g, T_all, hd)`` per layer
        values: ``(b, g, T_all, hd)`` per layer

    Example:
        >>> cache = KVCache(context_length=4)
        >>> new = torch.ones(1, 2, 3, 5)  # 2 heads, 3 tokens, head_dim 5
        >>> keys, values = cache.update(0, new, new)
        >>> keys.shape, cache.num_tokens(), cache.nbytes()
        (torch.Size([1, 2, 3, 5]), 3, 240)
    """

    def __init__(self, context_length: int, num_layers: int = 1) -> None:
        check_positive(context_length=context_length, num_layers=num_layers)
        self.context_length = context_length
        self.num_layers = num_layers
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers

    def num_tokens(self, layer: int = 0) -> int:
        """How many tokens ``layer`` has cached."""
        check_integer("layer", layer, 0, self.num_layers)
        return self.lengths[layer]

    @property
    def lengths(self) -> tuple[int, ...]:
        """The number of tokens each layer has cached, ``(T_all, ...)``, read-only.

        What a loop over layers and steps reads, where :meth:`num_tokens`
        would check its ``layer`` at every call.
        """
        return tuple(0 if keys is None else keys.shape[2] for keys in self.keys)

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
            Output: two tensors ``(b, g, T_all, hd)``

        Returns:
            ``(keys, values)`` of every token cached for ``layer``, oldest first.
        """
        check_integer("layer", layer, 0, self.num_layers)
        check_kv(keys, values, self.keys[layer], self.context_length)
        return self.append(layer, keys, values)

    def append(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The step every generated token takes in every layer: keep the new
        keys and values, return all of the layer's.

        Unchecked: :meth:`update` checks its arguments, then calls it; the
        package's generation loops call it on keys and values they computed
        from input checked once, before the loop. Shapes as in :meth:`update`.
        """
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = keys, values
        else:
            # (b, g, start, hd) + (b, g, T_new, hd) -> (b, g, T_all, hd)
            self.keys[layer] = torch.cat((self.keys[layer], keys), dim=2)
            self.values[layer] = torch.cat((self.values[layer], values), dim=2)
        return self.keys[layer], self.values[layer]

    def nbytes(self) -> int:
        """Bytes held by every cached key and value tensor, as measured on them."""
        tensors = [t for t in self.keys + self.values if t is not None]
        return sum(t.numel() * t.element_size() for t in tensors)


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
    return attend_cached(attn, x, cache, layer, attention_mask)


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
) -> torch.Tensor:
    """:func:`~attention.cached_attention` after the door: the algorithm alone.

    Book section: Beyond the chapter, Generation with a KV cache. The
    package's loops call it once per layer and step, on inputs checked once
    before the loop (see :mod:`attention.checks`). With ``cache=None``,
    ``x`` is the whole sequence and nothing is kept: the pass without a
    cache, padding mask included. A layer with a ``rotate`` method (a
    :class:`~attention.RotaryMultiHeadAttention`) turns the new queries and
    keys at ``position_ids`` (default: :func:`new_position_ids`) before the
    cache keeps the keys: each key is rotated once.
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

    # The only new line of the algorithm: keep the new keys and values, get
    # all of them back. (b, g, T_new, hd) -> (b, g, T_all, hd)
    if cache is not None:
        keys, values = cache.append(layer, keys, values)
    # Each key/value head serves h / g query heads:
    # (b, g, T_all, hd) -> (b, h, T_all, hd)
    group_size = attn.num_heads // num_kv_heads
    keys = repeat_kv(keys, group_size, check=False)  # checked before the loop
    values = repeat_kv(values, group_size, check=False)

    # (b, h, T_new, hd) @ (b, h, hd, T_all) -> (b, h, T_new, T_all)
    attn_scores = queries @ keys.transpose(2, 3)
    # Rows start .. start + T_new - 1 of the causal mask, True = masked out:
    # the triangle aligned bottom-right. (T_new, T_all)
    hidden = attn.mask[start : start + num_new, : start + num_new]
    if attention_mask is not None:
        padded = attention_mask == 0  # (b, T_all), True = a padded key
        # (T_new, T_all) | (b, 1, 1, T_all) -> (b, 1, T_new, T_all)
        hidden = hidden | padded[:, None, None, :]
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
