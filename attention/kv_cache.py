"""Generation with a KV cache (beyond the chapter).

Shape legend: ``b`` batch size, ``P`` prompt tokens, ``T_new`` tokens fed in
one call, ``T_all`` tokens seen so far (cached plus new), ``n``
``max_new_tokens``, ``V`` ``vocab_size``, ``d`` ``d_model``, ``h``
``num_heads``, ``g`` key/value heads (``num_kv_heads``, or ``num_heads`` for
:class:`~attention.MultiHeadAttention`), ``hd`` ``head_dim``.

A decoder generates one token at a time. Without a cache it runs the whole
sequence again for every new token. With a cache it keeps the keys and
values of every token it has seen, so each step computes the query, key and
value of the newest token only.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import (
    check_device,
    check_input,
    check_module,
    check_pair,
    check_positive,
    first_weight,
)
from .gqa import check_4d, repeat_kv
from .learned import TinyAttentionModel


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
        self._check_layer(layer)
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
            Output: two tensors ``(b, g, T_all, hd)``

        Returns:
            ``(keys, values)`` of every token cached for ``layer``, oldest first.
        """
        start = self.num_tokens(layer)
        _check_new_kv(keys, values, self.keys[layer])
        if start + keys.shape[2] > self.context_length:
            limit = self.context_length
            raise ValueError(
                f"the cache holds at most context_length={limit} tokens; "
                f"it has {start} and got {keys.shape[2]} more"
            )
        if start == 0:
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

    def _check_layer(self, layer: int) -> None:
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise ValueError(f"layer must be an integer, got {layer!r}")
        if not 0 <= layer < self.num_layers:
            raise ValueError(f"layer must be in [0, {self.num_layers}), got {layer}")


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
    return 2 * batch * tokens * layers * kv_heads * head_dim * bytes_per_element


def cached_attention(
    attn: nn.Module, x: torch.Tensor, cache: KVCache, layer: int = 0
) -> torch.Tensor:
    """Causal attention of new tokens over the cached ones and themselves.

    Book section: Beyond the chapter, Generation with a KV cache. ``attn`` is
    a :class:`~attention.MultiHeadAttention` or a
    :class:`~attention.GroupedQueryAttention`, used with its own weights. The
    new tokens sit at positions ``start .. start + T_new - 1``, where
    ``start`` is what the cache already holds; new token ``i`` may look at
    keys ``0 .. start + i``. Those are rows ``start ..`` of the module's
    causal mask: the triangle is aligned bottom-right.

    Args:
        attn: the attention module whose weights to use.
        x: the new tokens' embeddings.
        cache: the cache, updated in place with the new keys and values.
        layer: which of the cache's layers ``attn`` is. Default: ``0``.

    Shape:
        x: ``(b, T_new, d_in)``
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
    _check_new_tokens(attn, x, cache, layer)
    b, num_new, _ = x.shape
    start = cache.num_tokens(layer)
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

    # The only new line of the algorithm: keep the new keys and values, get
    # all of them back. (b, g, T_new, hd) -> (b, g, T_all, hd)
    keys, values = cache.update(layer, keys, values)
    # (b, g, T_all, hd) -> (b, h, T_all, hd)
    keys = repeat_kv(keys, attn.num_heads // num_kv_heads)
    values = repeat_kv(values, attn.num_heads // num_kv_heads)

    # (b, h, T_new, hd) @ (b, h, hd, T_all) -> (b, h, T_new, T_all)
    attn_scores = queries @ keys.transpose(2, 3)
    # Rows start .. start + T_new - 1 of the causal mask: (T_new, T_all)
    future = attn.mask[start : start + num_new, : start + num_new]
    attn_scores.masked_fill_(future, -torch.inf)
    attn_weights = torch.softmax(attn_scores / head_dim**0.5, dim=-1)
    attn_weights = attn.dropout(attn_weights)

    # (b, h, T_new, T_all) @ (b, h, T_all, hd) -> (b, h, T_new, hd)
    # -> (b, T_new, h, hd)
    context_vec = (attn_weights @ values).transpose(1, 2)
    # (b, T_new, h, hd) -> (b, T_new, d_out)
    context_vec = context_vec.contiguous().view(b, num_new, attn.d_out)
    return attn.out_proj(context_vec)  # (b, T_new, d_out)


def decode_step(
    model: TinyAttentionModel, token_ids: torch.Tensor, cache: KVCache
) -> torch.Tensor:
    """Run ``model`` on new tokens only, with the earlier ones in ``cache``.

    Book section: Beyond the chapter, Generation with a KV cache.
    :class:`~attention.TinyAttentionModel`'s ``forward``, with two changes:
    the position embeddings start where the cache ends, and the attention is
    :func:`cached_attention`. The first call, with the whole prompt, is the
    *prefill*; every later call, with one token, is a *decode step*.

    Args:
        model: the decoder.
        token_ids: the new tokens.
        cache: the cache of ``model``'s attention layer, updated in place.

    Shape:
        token_ids: ``(b, T_new)``
        Output: ``(b, T_new, V)``

    Returns:
        The logits of the new tokens.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, context_length=6, num_heads=2).eval()
        >>> token_ids = torch.tensor([[3, 1, 4, 1]])
        >>> cache = KVCache(model.context_length)
        >>> logits = decode_step(model, token_ids[:, :3], cache)  # prefill
        >>> logits = decode_step(model, token_ids[:, 3:], cache)  # a decode step
        >>> torch.allclose(logits[:, -1], model(token_ids)[:, -1])
        True
    """
    _check_token_ids(model, token_ids)
    _check_room(model, token_ids, cache)
    start = cache.num_tokens()
    num_new = token_ids.shape[1]
    x = model.tok_emb(token_ids)  # (b, T_new) -> (b, T_new, d)
    if model.pos_emb is not None:
        positions = torch.arange(start, start + num_new, device=x.device)
        x = x + model.pos_emb(positions)  # (b, T_new, d) + (T_new, d)
    context_vec = cached_attention(model.attn, x, cache)  # (b, T_new, d)
    return model.out_head(context_vec)  # (b, T_new, d) -> (b, T_new, V)


@torch.no_grad()
def generate_greedy(
    model: TinyAttentionModel, token_ids: torch.Tensor, max_new_tokens: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation without a cache: the whole sequence again at each step.

    Book section: Beyond the chapter, Generation with a KV cache. Each step
    runs ``model`` on every token so far and appends the token with the
    highest logit at the last position.

    Args:
        model: the decoder, in eval mode.
        token_ids: the prompt, at least one token.
        max_new_tokens: how many tokens to add, at least 1. The last new
            token is never fed back, so ``P + max_new_tokens - 1`` must not
            exceed ``model.context_length``.

    Shape:
        token_ids: ``(b, P)``
        Output: ``(b, P + n)`` and ``(b, n, V)``

    Returns:
        ``(token_ids, logits)``: the prompt with the new tokens, and the
        logits each new token was chosen from.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, context_length=6, num_heads=2).eval()
        >>> tokens, logits = generate_greedy(model, torch.tensor([[3, 1]]), 4)
        >>> tokens, logits.shape
        (tensor([[3, 1, 7, 5, 1, 7]]), torch.Size([1, 4, 10]))
    """
    _check_generation(model, token_ids, max_new_tokens)
    step_logits = []
    for _ in range(max_new_tokens):
        logits = model(token_ids)[:, -1]  # (b, T_all, V) -> (b, V)
        step_logits.append(logits)
        next_id = logits.argmax(dim=-1, keepdim=True)  # (b, V) -> (b, 1)
        token_ids = torch.cat((token_ids, next_id), dim=1)  # (b, T_all + 1)
    logits = torch.stack(step_logits, dim=1)  # n x (b, V) -> (b, n, V)
    return token_ids, logits


@torch.no_grad()
def generate_greedy_cached(
    model: TinyAttentionModel, token_ids: torch.Tensor, max_new_tokens: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation with a KV cache: a prefill, then one token per step.

    Book section: Beyond the chapter, Generation with a KV cache. The same
    tokens as :func:`generate_greedy`, the same logits up to rounding.

    Args:
        model: the decoder, in eval mode.
        token_ids: the prompt, at least one token.
        max_new_tokens: how many tokens to add, at least 1, with
            ``P + max_new_tokens - 1 <= model.context_length``.

    Shape:
        token_ids: ``(b, P)``
        Output: ``(b, P + n)`` and ``(b, n, V)``

    Returns:
        ``(token_ids, logits)`` as :func:`generate_greedy` returns them.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, context_length=6, num_heads=2).eval()
        >>> tokens, logits = generate_greedy_cached(model, torch.tensor([[3, 1]]), 4)
        >>> tokens
        tensor([[3, 1, 7, 5, 1, 7]])
    """
    _check_generation(model, token_ids, max_new_tokens)
    cache = KVCache(model.context_length)
    logits = decode_step(model, token_ids, cache)[:, -1]  # prefill: (b, V)
    step_logits = [logits]
    for _ in range(max_new_tokens - 1):
        next_id = logits.argmax(dim=-1, keepdim=True)  # (b, V) -> (b, 1)
        token_ids = torch.cat((token_ids, next_id), dim=1)  # (b, T_all + 1)
        logits = decode_step(model, next_id, cache)[:, -1]  # one token: (b, V)
        step_logits.append(logits)
    next_id = logits.argmax(dim=-1, keepdim=True)  # the last one, never fed
    token_ids = torch.cat((token_ids, next_id), dim=1)
    logits = torch.stack(step_logits, dim=1)  # n x (b, V) -> (b, n, V)
    return token_ids, logits


def _check_new_kv(
    keys: torch.Tensor, values: torch.Tensor, cached: torch.Tensor | None
) -> None:
    """Raise unless ``keys`` and ``values`` fit each other and the cached ones."""
    check_4d("keys", keys, "(b, g, T_new, hd)")
    check_4d("values", values, "(b, g, T_new, hd)")
    check_pair(("keys", keys), ("values", values))
    if cached is not None:
        check_pair(("keys", keys), ("the cached keys", cached))
    if keys.shape != values.shape:
        raise ValueError(
            "keys and values must have the same shape, got "
            f"{tuple(keys.shape)} and {tuple(values.shape)}"
        )
    if cached is not None:
        expected = (cached.shape[0], cached.shape[1], cached.shape[3])
        got = (keys.shape[0], keys.shape[1], keys.shape[3])
        if got != expected:
            raise ValueError(
                f"new keys must match the cached (b, g, hd) = {expected}, got {got}"
            )


def _check_new_tokens(
    attn: nn.Module, x: torch.Tensor, cache: KVCache, layer: int
) -> None:
    """Raise unless ``attn`` and ``cache`` fit, and ``x`` is new tokens that fit."""
    _check_attn(attn)
    _check_cache(cache)
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != attn.d_in:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must have shape (b, T_new, d_in={attn.d_in}), got {got}")
    weight = first_weight(attn)
    check_input(
        x, ndim=3, d_in=attn.d_in, dtype=None if weight is None else weight.dtype
    )
    check_device("x", x, weight)
    room = attn.context_length - cache.num_tokens(layer)
    if x.shape[1] > room:
        raise ValueError(
            f"context_length is {attn.context_length} and the cache holds "
            f"{cache.num_tokens(layer)} tokens, so at most {room} new tokens fit; "
            f"got {x.shape[1]}"
        )


#: What cached_attention reads from its ``attn``: the chapter's layout.
_ATTN_PARTS = ("W_query", "W_key", "W_value", "out_proj", "dropout", "mask")
#: What decode_step reads from its ``model``: TinyAttentionModel's layout.
_MODEL_PARTS = (
    "vocab_size",
    "context_length",
    "tok_emb",
    "pos_emb",
    "attn",
    "out_head",
)


def _check_attn(attn: nn.Module) -> None:
    """Raise unless ``attn`` has the chapter's separate projections and mask."""
    check_module("attn", attn)
    missing = [part for part in _ATTN_PARTS if not hasattr(attn, part)]
    if missing:
        raise ValueError(
            "attn must be a MultiHeadAttention or GroupedQueryAttention (with "
            f"{', '.join(_ATTN_PARTS)}), got {type(attn).__name__}, which lacks "
            f"{', '.join(missing)}"
        )


def _check_cache(cache: KVCache) -> None:
    """Raise unless ``cache`` is a :class:`KVCache`."""
    if not isinstance(cache, KVCache):
        raise ValueError(
            f"cache must be a KVCache, got {type(cache).__name__}; build one: "
            "KVCache(context_length)"
        )


def _check_model(model: TinyAttentionModel) -> None:
    """Raise unless ``model`` is a decoder laid out as TinyAttentionModel."""
    check_module("model", model)
    missing = [part for part in _MODEL_PARTS if not hasattr(model, part)]
    if missing:
        raise ValueError(
            "model must be a TinyAttentionModel (token ids in, logits out), got "
            f"{type(model).__name__}, which lacks {', '.join(missing)}"
        )


def _check_token_ids(model: TinyAttentionModel, token_ids: torch.Tensor) -> None:
    """Raise unless ``token_ids`` is a non-empty ``(b, T)`` integer tensor of ids."""
    _check_model(model)
    if not isinstance(token_ids, torch.Tensor) or token_ids.dim() != 2:
        got = (
            tuple(token_ids.shape)
            if isinstance(token_ids, torch.Tensor)
            else type(token_ids).__name__
        )
        raise ValueError(f"token_ids must have shape (b, T), got {got}")
    if token_ids.dtype not in (torch.int64, torch.int32) or token_ids.shape[1] == 0:
        raise ValueError(
            "token_ids must hold at least one integer id per sequence, got dtype "
            f"{token_ids.dtype} and shape {tuple(token_ids.shape)}"
        )
    check_device("token_ids", token_ids, first_weight(model))
    if token_ids.device.type == "meta" or token_ids.numel() == 0:
        return  # no values to check
    if not (token_ids.min() >= 0 and token_ids.max() < model.vocab_size):
        raise ValueError(
            f"token ids must lie in [0, {model.vocab_size}), got values from "
            f"{token_ids.min().item()} to {token_ids.max().item()}"
        )


def _check_room(
    model: TinyAttentionModel, token_ids: torch.Tensor, cache: KVCache
) -> None:
    """Raise unless the new tokens fit ``model``'s context after the cached ones."""
    _check_cache(cache)
    held, num_new = cache.num_tokens(), token_ids.shape[1]
    if held + num_new > model.context_length:
        raise ValueError(
            f"context_length is {model.context_length} and the cache holds {held} "
            f"tokens, so at most {model.context_length - held} new tokens fit; "
            f"got {num_new}"
        )


def _check_generation(
    model: TinyAttentionModel, token_ids: torch.Tensor, max_new_tokens: int
) -> None:
    """Raise unless the prompt and ``max_new_tokens`` fit the context."""
    _check_token_ids(model, token_ids)
    check_positive(max_new_tokens=max_new_tokens)
    needed = token_ids.shape[1] + max_new_tokens - 1
    if needed > model.context_length:
        raise ValueError(
            f"a prompt of {token_ids.shape[1]} tokens and max_new_tokens="
            f"{max_new_tokens} need {needed} positions, but context_length is "
            f"{model.context_length}"
        )
