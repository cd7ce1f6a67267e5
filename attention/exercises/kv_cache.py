"""The exercises of the page kv-cache."""

from __future__ import annotations

import torch

from ..generation import decode_step
from ..kv_cache import KVCache, attend_cached, cached_attention
from ..learned import TinyAttentionModel
from ..multihead import MultiHeadAttention
from .grader import Case, Exercise, Mistake, Words


def _attention_case(en, zh_CN, batch, cached, new, dtype=torch.float32) -> Case:
    """An attention module, ``new`` tokens, and a cache of ``cached`` before them."""
    with torch.random.fork_rng(devices=[]):  # the reader's seed stays put
        torch.manual_seed(batch * 100 + cached * 10 + new)
        attn = MultiHeadAttention(6, 8, context_length=8, dropout=0.0, num_heads=2)
        attn = attn.to(dtype).eval()
        x = torch.rand(batch, cached + new, 6, dtype=dtype)  # (b, T_all, d_in)
    cache = KVCache(context_length=8)
    if cached:
        with torch.no_grad():
            cached_attention(attn, x[:, :cached], cache)
    return Case(en, zh_CN, (attn, x[:, cached:].clone(), cache))


def _attention_cases() -> list[Case]:
    # A decode step first: every known mistake shows on it.
    return [
        _attention_case(
            "one new token after 4 cached ones",
            "缓存 4 个词元之后来了 1 个新词元",
            2,
            4,
            1,
        ),
        _attention_case(
            "a prefill: 4 tokens into an empty cache",
            "预填充：4 个词元进入空缓存",
            2,
            0,
            4,
        ),
        _attention_case(
            "a chunk of 2 new tokens after 3 cached ones",
            "缓存 3 个词元之后来了 2 个新词元",
            2,
            3,
            2,
        ),
        _attention_case(
            "one token into an empty cache, a batch of one",
            "1 个词元进入空缓存，批次大小为 1",
            1,
            0,
            1,
        ),
        _attention_case(
            "float64: 3 new tokens after 2 cached ones",
            "float64：缓存 2 个词元之后来了 3 个新词元",
            1,
            2,
            3,
            torch.float64,
        ),
    ]


def _run_attention(fn, case: Case) -> tuple:
    """The new tokens' outputs, then what the cache holds after the call."""
    cache = case.args[2]
    with torch.no_grad():
        out = fn(*case.args, **case.kwargs)
    return out, cache.keys[0], cache.values[0]


def _cached_with(keys_seen="all", mask="bottom-right", scale=True, keep=True):
    """A wrong ``cached_attention``: which keys it reads, its mask, its scale."""

    def attend(attn, x, cache):
        b, num_new, _ = x.shape
        shape = (b, num_new, attn.num_heads, attn.head_dim)
        # (b, T_new, d_in) -> (b, T_new, h, hd) -> (b, h, T_new, hd)
        queries = attn.W_query(x).view(shape).transpose(1, 2)
        keys = attn.W_key(x).view(shape).transpose(1, 2)
        values = attn.W_value(x).view(shape).transpose(1, 2)
        old_keys, old_values = cache.keys[0], cache.values[0]
        if keep:
            all_keys, all_values = cache.update(0, keys, values)
        else:  # (b, h, start, hd) + (b, h, T_new, hd), nothing kept
            all_keys = torch.cat((old_keys, keys), dim=2)
            all_values = torch.cat((old_values, values), dim=2)
        if keys_seen == "stale":  # raises on an empty cache: not this mistake
            all_keys, all_values = old_keys, old_values
        elif keys_seen == "twice":
            all_keys = torch.cat((all_keys, keys), dim=2)
            all_values = torch.cat((all_values, values), dim=2)
        num_keys = all_keys.shape[2]
        ones = torch.ones(num_new, num_keys, dtype=torch.bool)
        if mask == "bottom-right":
            hidden = ones.triu(num_keys - num_new + 1)  # (T_new, T_all)
        else:  # top-left, as is_causal=True
            hidden = ones.triu(1)
        scores = (queries @ all_keys.transpose(2, 3)).masked_fill(hidden, -torch.inf)
        if scale:
            scores = scores / attn.head_dim**0.5
        weights = torch.softmax(scores, dim=-1)
        context = (weights @ all_values).transpose(1, 2)  # (b, T_new, h, hd)
        return attn.out_proj(context.reshape(b, num_new, attn.d_out))

    return attend


def _model_case(en, zh_CN, batch, cached, new, dtype=torch.float32) -> Case:
    """A two-layer model, ``new`` token ids, and a cache of ``cached`` before them."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(batch * 100 + cached * 10 + new)
        model = TinyAttentionModel(12, 8, context_length=10, num_heads=2, num_layers=2)
        model = model.to(dtype).eval()
        token_ids = torch.randint(12, (batch, cached + new))  # (b, T_all)
    cache = KVCache(model.context_length, num_layers=2)
    if cached:
        with torch.no_grad():
            decode_step(model, token_ids[:, :cached], cache)
    return Case(en, zh_CN, (model, token_ids[:, cached:].clone(), cache))


def _decode_cases() -> list[Case]:
    return [
        _model_case(
            "one new token after a prompt of 4",
            "4 个词元的提示词之后来了 1 个新词元",
            2,
            4,
            1,
        ),
        _model_case(
            "a prefill: a prompt of 5 into an empty cache",
            "预填充：5 个词元的提示词进入空缓存",
            2,
            0,
            5,
        ),
        _model_case(
            "a chunk of 2 new tokens after 3",
            "缓存 3 个词元之后来了 2 个新词元",
            2,
            3,
            2,
        ),
        _model_case(
            "one token into an empty cache, a batch of one",
            "1 个词元进入空缓存，批次大小为 1",
            1,
            0,
            1,
        ),
        _model_case(
            "float64: 2 new tokens after 6",
            "float64：缓存 6 个词元之后来了 2 个新词元",
            1,
            6,
            2,
            torch.float64,
        ),
    ]


def _run_decode(fn, case: Case) -> tuple:
    """The new tokens' logits, then how many tokens each layer has cached."""
    cache = case.args[2]
    with torch.no_grad():
        logits = fn(*case.args, **case.kwargs)
    return logits, cache.lengths


def _decode_with(first_position="start", same_layer=False):
    """A wrong ``decode_step``: its positions, or the cache layer it writes."""

    def step(model, token_ids, cache):
        start, num_new = cache.lengths[0], token_ids.shape[1]
        offset = {"start": start, "zero": 0, "next": start + 1}[first_position]
        x = model.embed(token_ids, torch.arange(offset, offset + num_new))
        for i, layer in enumerate(model.layers):
            x = attend_cached(layer, x, cache, 0 if same_layer else i)
        return model.out_head(x)

    return step


def _without_cache(model, token_ids, cache):
    return model(token_ids)


EXERCISES = (
    Exercise(
        name="cached_attention",
        reference=cached_attention,
        cases=_attention_cases,
        run=_run_attention,
        mistakes=(
            Mistake(
                Words(
                    en="your new tokens do not see their own keys: the cache was "
                    "read before the new keys and values went in. Append first, "
                    "then attend over everything the cache returns.",
                    zh_CN="你的新词元看不到自己的键：读取缓存时，新的键和值还没有放进去。"
                    "先追加，再对缓存返回的全部键值做注意力。",
                ),
                _cached_with(keys_seen="stale"),
            ),
            Mistake(
                Words(
                    en="your new keys count twice: `cache.update` already returns "
                    "them with the cached ones. Do not concatenate them again.",
                    zh_CN="你的新键被算了两次：`cache.update` 返回的结果已经包含它们"
                    "和缓存里的键。不要再拼接一次。",
                ),
                _cached_with(keys_seen="twice"),
            ),
            Mistake(
                Words(
                    en="your causal triangle is aligned top-left, as "
                    "`is_causal=True` aligns it: new token i then sees keys 0 .. i "
                    "only. The new tokens sit at rows start .. start + T_new - 1: "
                    "align the triangle bottom-right.",
                    zh_CN="你的因果三角按左上角对齐，和 `is_causal=True` 一样："
                    "第 i 个新词元只能看到键 0 .. i。新词元位于第 start .. "
                    "start + T_new - 1 行：三角应当按右下角对齐。",
                ),
                _cached_with(mask="top-left"),
            ),
            Mistake(
                Words(
                    en="your scores are not scaled: divide them by "
                    "sqrt(head_dim) before the softmax.",
                    zh_CN="你的分数没有缩放：在 softmax 之前除以 sqrt(head_dim)。",
                ),
                _cached_with(scale=False),
            ),
            Mistake(
                Words(
                    en="your outputs are right but the cache did not keep the new "
                    "keys and values: the next step would not see these tokens. "
                    "Store them (`cache.update(0, keys, values)`).",
                    zh_CN="你的输出是对的，但缓存没有保存新的键和值：下一步就看不到"
                    "这些词元了。要把它们存进去（`cache.update(0, keys, values)`）。",
                ),
                _cached_with(keep=False),
            ),
        ),
    ),
    Exercise(
        name="decode_step",
        reference=decode_step,
        cases=_decode_cases,
        run=_run_decode,
        mistakes=(
            Mistake(
                Words(
                    en="your new tokens' positions start at 0, as if each were "
                    "the first token. They start where the cache ends: "
                    "cache.lengths[0].",
                    zh_CN="你的新词元的位置从 0 开始，仿佛每个都是第一个词元。"
                    "位置应当从缓存结束处开始：cache.lengths[0]。",
                ),
                _decode_with(first_position="zero"),
            ),
            Mistake(
                Words(
                    en="your positions are one too far: the first new token sits "
                    "at cache.lengths[0], not cache.lengths[0] + 1.",
                    zh_CN="你的位置多算了 1：第一个新词元位于 cache.lengths[0]，"
                    "而不是 cache.lengths[0] + 1。",
                ),
                _decode_with(first_position="next"),
            ),
            Mistake(
                Words(
                    en="every layer wrote into layer 0 of the cache: layer i "
                    "keeps its own keys and values, pass it its index i.",
                    zh_CN="每一层都写进了缓存的第 0 层：第 i 层要保存自己的键和值，"
                    "把它的编号 i 传进去。",
                ),
                _decode_with(same_layer=True),
            ),
            Mistake(
                Words(
                    en="your step ignores the cache: the model ran on the new "
                    "tokens alone, so they see none of the earlier ones, and "
                    "nothing was cached. Run each layer through the cache.",
                    zh_CN="你的这一步没有用缓存：模型只在新词元上运行，它们看不到任何"
                    "之前的词元，也没有缓存任何东西。要让每一层都经过缓存。",
                ),
                _without_cache,
            ),
        ),
    ),
)
