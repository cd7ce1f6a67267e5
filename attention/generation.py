"""Greedy generation, with and without a KV cache, for one prompt or a padded batch.

Book section: Beyond the chapter, Generation with a KV cache.

Shape legend: ``b`` batch size, ``P`` prompt tokens (padding included),
``T_new`` tokens fed in one call, ``T_all`` tokens so far, ``n``
``max_new_tokens``, ``V`` ``vocab_size``, ``d`` the model's width.

Generation reads its model through :class:`~attention.contract.Decoder`
(``embed``, ``layers``, ``out_head``, ``vocab_size``, ``context_length``), so
any model with those members can be driven. Each public function checks its
arguments once, at the door; the loops run unchecked steps.

A batch of prompts of different lengths is *left*-padded, with an
``attention_mask`` (1 = a real token, 0 = a pad) as a tokenizer returns it:
every row then ends in its last real token, and each new token goes right
after it. Three things make each row come out as if it ran alone: padded
keys are masked out in every layer and step, a row's positions count its
real tokens only, and the mask grows by a column of ones with each new token.
"""

from __future__ import annotations

import torch

from .checks import check_decode, check_generate
from .contract import Decoder
from .kv_cache import KVCache, attend_cached, new_position_ids


def decode_step(
    model: Decoder,
    token_ids: torch.Tensor,
    cache: KVCache,
    attention_mask: torch.Tensor | None = None,
    *,
    position_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """Run ``model`` on new tokens only, with the earlier ones in ``cache``.

    Book section: Beyond the chapter, Generation with a KV cache. The model's
    ``forward``, with two changes: the positions start where the cache ends,
    and the attention is :func:`~attention.cached_attention`. The first call,
    with the whole prompt, is the *prefill*; every later call is a *decode
    step*, usually of one token. A prompt may also go in as several chunks
    (*chunked prefill*), and a step may bring several tokens: the causal
    triangle is aligned bottom-right either way.

    Args:
        model: the decoder, a :class:`~attention.contract.Decoder`.
        token_ids: the new tokens.
        cache: the cache, one layer per layer of ``model``, updated in place.
        attention_mask: for a left-padded batch, 1 for a real token and 0
            for a pad, over the cached tokens and the new ones. Default: no
            padding.
        position_ids: the new tokens' positions, integers >= 0, for the
            position table or the rotations. Default: each row's real
            tokens counted, after those it has seen
            (:func:`~attention.kv_cache.new_position_ids`). Give them only to
            see what other positions do, e.g. the mistakes of the rotary
            page: the default is what makes a row equal itself alone.

    Shape:
        token_ids: ``(b, T_new)``
        attention_mask: ``(b, T_all)``
        position_ids: ``(T_new,)`` or ``(b, T_new)``
        Output: ``(b, T_new, V)``

    Returns:
        The logits of the new tokens.

    Example:
        >>> from attention import TinyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, 6, num_heads=2, num_layers=2).eval()
        >>> token_ids = torch.tensor([[3, 1, 4, 1]])
        >>> cache = KVCache(model.context_length, num_layers=2)
        >>> logits = decode_step(model, token_ids[:, :3], cache)  # prefill
        >>> logits = decode_step(model, token_ids[:, 3:], cache)  # a decode step
        >>> torch.allclose(logits[:, -1], model(token_ids)[:, -1])
        True
    """
    check_decode(
        model,
        token_ids,
        cache,
        attention_mask=attention_mask,
        position_ids=position_ids,
        cache_type=KVCache,
    )
    return decode_cached(model, token_ids, cache, attention_mask, position_ids)


def decode_cached(
    model: Decoder,
    token_ids: torch.Tensor,
    cache: KVCache | None,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`~attention.decode_step` after the door: what each new token costs.

    Book section: Beyond the chapter, Generation with a KV cache. No checks:
    :func:`~attention.decode_step` and the generation loops check once, before
    it. With ``cache=None`` the tokens are the whole sequence: the pass
    without a cache.
    """
    if position_ids is None:
        start = 0 if cache is None else cache.lengths[0]
        # Each row's real tokens counted: (T_new,), or (b, T_new) with a mask
        position_ids = new_position_ids(
            attention_mask, start, token_ids.shape[1], token_ids.device
        )
    # Learned positions go into the embeddings, rotary ones into each layer.
    x = model.embed(token_ids, position_ids)  # (b, T_new) -> (b, T_new, d)
    windows, sink_tokens = model_windows(model)  # bounded context, if any
    for i, layer in enumerate(model.layers):
        # (b, T_new, d) -> (b, T_new, d)
        x = attend_cached(
            layer, x, cache, i, attention_mask, position_ids, windows[i], sink_tokens
        )
    return model.out_head(x)  # (b, T_new, d) -> (b, T_new, V)


def model_windows(model: Decoder) -> tuple[tuple[int | None, ...], int]:
    """A model's window per layer and its sink tokens: ``(None, ...), 0`` for a
    model without bounded context (the :class:`~attention.contract.Decoder`
    protocol does not require them)."""
    windows = getattr(model, "windows", None)
    if windows is None:
        windows = (None,) * len(model.layers)
    return windows, getattr(model, "sink_tokens", 0)


def _grown(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """The mask with one more real token per row: (b, T_all) -> (b, T_all + 1)."""
    if attention_mask is None:
        return None
    ones = attention_mask.new_ones(attention_mask.shape[0], 1)
    return torch.cat((attention_mask, ones), dim=1)


@torch.no_grad()
def generate_greedy(
    model: Decoder,
    token_ids: torch.Tensor,
    max_new_tokens: int,
    attention_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation without a cache: the whole sequence again at each step.

    Book section: Beyond the chapter, Generation with a KV cache. Each step
    runs ``model`` on every token so far and appends the token with the
    highest logit at the last position.

    Args:
        model: the decoder, in eval mode.
        token_ids: the prompts, at least one token; a batch of prompts of
            different lengths is left-padded.
        max_new_tokens: how many tokens to add, at least 1. The last new
            token is never fed back, so ``P + max_new_tokens - 1`` must not
            exceed ``model.context_length``.
        attention_mask: for a padded batch, 1 for a real token, 0 for a pad,
            with every row's pads on the left. Default: no padding.

    Shape:
        token_ids: ``(b, P)``
        attention_mask: ``(b, P)``
        Output: ``(b, P + n)`` and ``(b, n, V)``

    Returns:
        ``(token_ids, logits)``: the prompts with the new tokens, and the
        logits each new token was chosen from. Each row is what its prompt
        gives on its own.

    Example:
        >>> from attention import TinyAttentionModel, pad_sequences
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, 6, num_heads=2, num_layers=2).eval()
        >>> tokens, logits = generate_greedy(model, torch.tensor([[3, 1]]), 4)
        >>> tokens, logits.shape
        (tensor([[3, 1, 6, 6, 6, 6]]), torch.Size([1, 4, 10]))
        >>> prompts = [torch.tensor([3, 1]), torch.tensor([5, 2, 8])]
        >>> ids, attention_mask = pad_sequences(prompts, side="left")
        >>> generate_greedy(model, ids, 3, attention_mask)[0]
        tensor([[0, 3, 1, 6, 6, 6],
                [5, 2, 8, 6, 6, 6]])
    """
    check_generate(model, token_ids, max_new_tokens, attention_mask, cache_type=KVCache)
    step_logits = []
    for _ in range(max_new_tokens):
        # (b, T_all) -> (b, T_all, V) -> the last position: (b, V)
        logits = decode_cached(model, token_ids, None, attention_mask)[:, -1]
        step_logits.append(logits)
        next_id = logits.argmax(dim=-1, keepdim=True)  # (b, V) -> (b, 1)
        token_ids = torch.cat((token_ids, next_id), dim=1)  # (b, T_all + 1)
        attention_mask = _grown(attention_mask)
    logits = torch.stack(step_logits, dim=1)  # n x (b, V) -> (b, n, V)
    return token_ids, logits


@torch.no_grad()
def generate_greedy_cached(
    model: Decoder,
    token_ids: torch.Tensor,
    max_new_tokens: int,
    attention_mask: torch.Tensor | None = None,
    *,
    cache: KVCache | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation with a KV cache: a prefill, then one token per step.

    Book section: Beyond the chapter, Generation with a KV cache. The same
    tokens as :func:`~attention.generate_greedy`, the same logits up to rounding.

    Args:
        model: the decoder, in eval mode.
        token_ids: the prompts, at least one token; a batch of prompts of
            different lengths is left-padded.
        max_new_tokens: how many tokens to add, at least 1, with
            ``P + max_new_tokens - 1 <= model.context_length``; without that
            limit when every layer of the model has a window (Beyond the
            chapter, Bounded context): its cache stays bounded.
        attention_mask: for a padded batch, 1 for a real token, 0 for a pad,
            with every row's pads on the left. Default: no padding.
        cache: an empty :class:`~attention.KVCache` to generate with, with
            the model's windows and sinks, e.g. one with
            ``positions="in_cache"``. Default: one made from the model.

    Shape:
        token_ids: ``(b, P)``
        attention_mask: ``(b, P)``
        Output: ``(b, P + n)`` and ``(b, n, V)``

    Returns:
        ``(token_ids, logits)`` as :func:`~attention.generate_greedy` returns them.

    Example:
        >>> from attention import TinyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, 6, num_heads=2, num_layers=2).eval()
        >>> tokens, logits = generate_greedy_cached(model, torch.tensor([[3, 1]]), 4)
        >>> tokens
        tensor([[3, 1, 6, 6, 6, 6]])
    """
    check_generate(
        model,
        token_ids,
        max_new_tokens,
        attention_mask,
        cache_type=KVCache,
        cached=True,
        cache=cache,
    )
    if cache is None:
        windows, sink_tokens = model_windows(model)
        cache = KVCache(
            model.context_length,
            num_layers=len(model.layers),
            window=list(windows),
            sink_tokens=sink_tokens,
        )
    # The prefill: every prompt token at once. (b, P) -> (b, P, V) -> (b, V)
    logits = decode_cached(model, token_ids, cache, attention_mask)[:, -1]
    step_logits = [logits]
    for _ in range(max_new_tokens - 1):
        next_id = logits.argmax(dim=-1, keepdim=True)  # (b, V) -> (b, 1)
        token_ids = torch.cat((token_ids, next_id), dim=1)  # (b, T_all + 1)
        attention_mask = _grown(attention_mask)
        # A decode step: one token per row. (b, 1) -> (b, 1, V) -> (b, V)
        logits = decode_cached(model, next_id, cache, attention_mask)[:, -1]
        step_logits.append(logits)
    next_id = logits.argmax(dim=-1, keepdim=True)  # the last one, never fed
    token_ids = torch.cat((token_ids, next_id), dim=1)
    logits = torch.stack(step_logits, dim=1)  # n x (b, V) -> (b, n, V)
    return token_ids, logits
