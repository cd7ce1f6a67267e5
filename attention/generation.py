"""Greedy generation, with and without a KV cache (beyond the chapter).

Shape legend: ``b`` batch size, ``P`` prompt tokens, ``T_new`` tokens fed in
one call, ``T_all`` tokens so far, ``n`` ``max_new_tokens``, ``V``
``vocab_size``, ``d`` the model's width.

Generation reads its model through :class:`~attention.contract.Decoder`
(``embed``, ``attn``, ``out_head``, ``vocab_size``, ``context_length``), so
any model with those members can be driven. Each public function checks its
arguments once, at the door; the loops run unchecked steps.
"""

from __future__ import annotations

import torch

from .checks import check_decode
from .contract import Decoder
from .kv_cache import KVCache, attend_cached


def decode_step(
    model: Decoder, token_ids: torch.Tensor, cache: KVCache
) -> torch.Tensor:
    """Run ``model`` on new tokens only, with the earlier ones in ``cache``.

    Book section: Beyond the chapter, Generation with a KV cache. The model's
    ``forward``, with two changes: the positions start where the cache ends,
    and the attention is :func:`~attention.cached_attention`. The first call,
    with the whole prompt, is the *prefill*; every later call, with one
    token, is a *decode step*.

    Args:
        model: the decoder, a :class:`~attention.contract.Decoder`.
        token_ids: the new tokens.
        cache: the cache of ``model``'s attention layer, updated in place.

    Shape:
        token_ids: ``(b, T_new)``
        Output: ``(b, T_new, V)``

    Returns:
        The logits of the new tokens.

    Example:
        >>> from attention import TinyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, context_length=6, num_heads=2).eval()
        >>> token_ids = torch.tensor([[3, 1, 4, 1]])
        >>> cache = KVCache(model.context_length)
        >>> logits = decode_step(model, token_ids[:, :3], cache)  # prefill
        >>> logits = decode_step(model, token_ids[:, 3:], cache)  # a decode step
        >>> torch.allclose(logits[:, -1], model(token_ids)[:, -1])
        True
    """
    check_decode(model, token_ids, cache)
    return decode_cached(model, token_ids, cache)


def decode_cached(
    model: Decoder, token_ids: torch.Tensor, cache: KVCache
) -> torch.Tensor:
    """:func:`~attention.decode_step` after the door: what each new token costs.

    Book section: Beyond the chapter, Generation with a KV cache. No checks:
    :func:`~attention.decode_step` and the generation loops check once, before it.
    """
    start = cache._held(0)
    x = model.embed(token_ids, start)  # (b, T_new) -> (b, T_new, d)
    context_vec = attend_cached(model.attn, x, cache)  # (b, T_new, d)
    return model.out_head(context_vec)  # (b, T_new, d) -> (b, T_new, V)


@torch.no_grad()
def generate_greedy(
    model: Decoder, token_ids: torch.Tensor, max_new_tokens: int
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
        >>> from attention import TinyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, context_length=6, num_heads=2).eval()
        >>> tokens, logits = generate_greedy(model, torch.tensor([[3, 1]]), 4)
        >>> tokens, logits.shape
        (tensor([[3, 1, 7, 5, 1, 7]]), torch.Size([1, 4, 10]))
    """
    check_decode(model, token_ids, max_new_tokens=max_new_tokens)
    step_logits = []
    for _ in range(max_new_tokens):
        x = model.embed(token_ids)  # (b, T_all) -> (b, T_all, d)
        logits = model.out_head(model.attn(x))[:, -1]  # (b, T_all, V) -> (b, V)
        step_logits.append(logits)
        next_id = logits.argmax(dim=-1, keepdim=True)  # (b, V) -> (b, 1)
        token_ids = torch.cat((token_ids, next_id), dim=1)  # (b, T_all + 1)
    logits = torch.stack(step_logits, dim=1)  # n x (b, V) -> (b, n, V)
    return token_ids, logits


@torch.no_grad()
def generate_greedy_cached(
    model: Decoder, token_ids: torch.Tensor, max_new_tokens: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation with a KV cache: a prefill, then one token per step.

    Book section: Beyond the chapter, Generation with a KV cache. The same
    tokens as :func:`~attention.generate_greedy`, the same logits up to rounding.

    Args:
        model: the decoder, in eval mode.
        token_ids: the prompt, at least one token.
        max_new_tokens: how many tokens to add, at least 1, with
            ``P + max_new_tokens - 1 <= model.context_length``.

    Shape:
        token_ids: ``(b, P)``
        Output: ``(b, P + n)`` and ``(b, n, V)``

    Returns:
        ``(token_ids, logits)`` as :func:`~attention.generate_greedy` returns them.

    Example:
        >>> from attention import TinyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> model = TinyAttentionModel(10, 8, context_length=6, num_heads=2).eval()
        >>> tokens, logits = generate_greedy_cached(model, torch.tensor([[3, 1]]), 4)
        >>> tokens
        tensor([[3, 1, 7, 5, 1, 7]])
    """
    check_decode(model, token_ids, max_new_tokens=max_new_tokens)
    cache = KVCache(model.context_length)
    logits = decode_cached(model, token_ids, cache)[:, -1]  # prefill: (b, V)
    step_logits = [logits]
    for _ in range(max_new_tokens - 1):
        next_id = logits.argmax(dim=-1, keepdim=True)  # (b, V) -> (b, 1)
        token_ids = torch.cat((token_ids, next_id), dim=1)  # (b, T_all + 1)
        logits = decode_cached(model, next_id, cache)[:, -1]  # one token: (b, V)
        step_logits.append(logits)
    next_id = logits.argmax(dim=-1, keepdim=True)  # the last one, never fed
    token_ids = torch.cat((token_ids, next_id), dim=1)
    logits = torch.stack(step_logits, dim=1)  # n x (b, V) -> (b, n, V)
    return token_ids, logits
