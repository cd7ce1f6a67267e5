"""Tests for the bounded KV cache (attention/kv_cache.py, ``window=`` and
``sink_tokens=``) and the windowed TinyAttentionModel: the ring buffer holds
the first ``S`` and the last ``W`` tokens and no more, its bytes stop growing
at ``W + S`` tokens, and generation through it equals the pass without a cache
under the same window-and-sinks mask, past the wrap-around, left-padded, and
for a prefill in chunks of every size from 1 to ``W + 3`` (float64, <= 1e-10).
The pass without a cache is itself checked against a mask written out here."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import assert_message_names, checks_called

from attention import (
    MODEL_WINDOWS,
    KVCache,
    TinyAttentionModel,
    decode_step,
    generate_greedy,
    generate_greedy_cached,
    kv_cache_bytes,
    kv_cache_bytes_by_layer,
    layer_windows,
)

W, S = 4, 2  # the window and the sink tokens of most tests here
TOL = 1e-10


def _model(window=W, sink_tokens=S, num_layers=2, context_length=40, seed=0):
    torch.manual_seed(seed)
    return TinyAttentionModel(
        13,
        16,
        context_length,
        2,
        "rope",
        num_layers,
        window=window,
        sink_tokens=sink_tokens,
    ).double()


def _ids(b, T, seed=1):
    return torch.randint(13, (b, T), generator=torch.Generator().manual_seed(seed))


def _token_keys(num_tokens, b=2, g=1, hd=1):
    """Keys whose value is their token's index: (b, g, T, hd)."""
    index = torch.arange(num_tokens, dtype=torch.float64)
    return index.view(1, 1, -1, 1).expand(b, g, num_tokens, hd).clone()


# --- the ring buffer ---------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7])
def test_the_cache_holds_the_first_s_and_the_last_w_tokens(chunk):
    cache = KVCache(16, window=W, sink_tokens=S)
    keys = _token_keys(23)
    for start in range(0, 23, chunk):
        part = keys[:, :, start : start + chunk]
        cache.update(0, part, part)
        seen = start + part.shape[2]
        held = set(cache.sink_keys[0][0, 0, :, 0].tolist()) if S and seen > W else set()
        held |= set(cache.keys[0][0, 0, :, 0].tolist())
        expected = set(range(min(S, max(0, seen - W)))) | set(
            range(max(0, seen - W), seen)
        )
        assert held == expected, f"after {seen} tokens"
        assert cache.num_tokens() == seen
        assert cache.num_held() == min(seen, W + S)


def test_row_r_lives_in_slot_r_mod_w_and_is_written_in_place():
    cache = KVCache(16, window=W)
    keys = _token_keys(W)
    cache.update(0, keys, keys)
    ring = cache.keys[0]
    step = _token_keys(W + 3)[:, :, W + 2 : W + 3]  # token W + 2 ...
    cache.update(0, keys[:, :, :1] + W, keys[:, :, :1] + W)  # token W
    cache.update(0, keys[:, :, :1] + W + 1, keys[:, :, :1] + W + 1)
    cache.update(0, step, step)
    assert cache.keys[0] is ring  # no new tensor: the ring was written in place
    assert cache.keys[0][0, 0, :, 0].tolist() == [W, W + 1, W + 2, 3]


@pytest.mark.parametrize("chunk", [1, 3, W + 3])
def test_nbytes_is_an_unbounded_caches_until_w_plus_s_tokens_then_constant(chunk):
    bounded = KVCache(64, num_layers=2, window=W, sink_tokens=S)
    unbounded = KVCache(64, num_layers=2)
    # 2 layers, keys and values, b=2, g=3, hd=5, float64: 8 bytes
    per_token = 2 * 2 * 2 * 3 * 5 * 8
    for start in range(0, 30, chunk):
        new = torch.randn(2, 3, chunk, 5, dtype=torch.float64)
        for layer in range(2):
            bounded.update(layer, new, new)
            unbounded.update(layer, new, new)
        seen = start + chunk
        assert unbounded.nbytes() == seen * per_token
        assert bounded.nbytes() == min(seen, W + S) * per_token, f"{seen} tokens"


def test_a_global_layer_keeps_everything_beside_a_local_one():
    cache = KVCache(64, num_layers=2, window=[W, None], sink_tokens=S)
    keys = _token_keys(20)
    for layer in range(2):
        cache.update(layer, keys, keys)
    assert cache.num_held(0) == W + S
    assert cache.num_held(1) == 20
    assert cache.lengths == (20, 20)


# --- the pass without a cache, against a mask written out here --------------


def _reference_logits(model, ids, mask=None):
    """The windowed model by the formula: key j visible to query i when both
    are real, j <= i, and p_i - p_j < W or p_j < S (p: real tokens before)."""
    b, T = ids.shape
    mask = torch.ones(b, T, dtype=torch.long) if mask is None else mask
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    x = model.tok_emb(ids)
    for i_layer, layer in enumerate(model.layers):
        window = model.windows[i_layer]
        hidden = torch.ones(b, T, T, dtype=torch.bool)
        for n in range(b):
            for i in range(T):
                for j in range(T):
                    near = window is None or pos[n, i] - pos[n, j] < window
                    sink = window is not None and pos[n, j] < model.sink_tokens
                    real = bool(mask[n, i]) and bool(mask[n, j])
                    hidden[n, i, j] = not (real and j <= i and (near or sink))
        q = layer.W_query(x).view(b, T, 2, -1).transpose(1, 2)
        k = layer.W_key(x).view(b, T, 2, -1).transpose(1, 2)
        v = layer.W_value(x).view(b, T, 2, -1).transpose(1, 2)
        q, k = layer.rotate(q, pos), layer.rotate(k, pos)
        scores = (q @ k.transpose(2, 3)).masked_fill(hidden[:, None], -math.inf)
        weights = torch.softmax(scores / q.shape[-1] ** 0.5, -1).nan_to_num(0.0)
        x = layer.out_proj((weights @ v).transpose(1, 2).reshape(b, T, -1))
    return model.out_head(x)


def test_the_windowed_model_is_the_formula():
    model = _model().eval()
    ids = _ids(2, 14)
    with torch.no_grad():
        gap = (model(ids) - _reference_logits(model, ids)).abs().max().item()
    assert gap <= TOL


def test_the_window_and_the_sinks_change_the_output():
    # A mask that ignored either would pass the equalities below unnoticed.
    ids = _ids(2, 14)
    with torch.no_grad():
        both = _model()(ids)
        no_sinks = _model(sink_tokens=0)(ids)
        no_window = _model(window=None, sink_tokens=0)(ids)
    assert torch.equal(both[:, : W + S], no_window[:, : W + S])  # nothing left yet
    assert (both - no_sinks)[:, W + 1 :].abs().min() > 0
    assert (both - no_window)[:, W + S :].abs().amax(-1).min() > 1e-6


# --- generation through the ring equals the pass without a cache -------------


def _gap(a, b):
    return (a - b).abs().max().item()


@pytest.mark.parametrize("sink_tokens", [0, S])
def test_cached_generation_equals_the_uncached_one_past_the_wrap_around(sink_tokens):
    model = _model(sink_tokens=sink_tokens).eval()
    prompt = _ids(2, 5)
    plain_ids, plain = generate_greedy(model, prompt, 24)  # 28 > W + S tokens
    cached_ids, cached = generate_greedy_cached(model, prompt, 24)
    assert torch.equal(cached_ids, plain_ids)
    assert _gap(cached, plain) <= TOL
    with torch.no_grad():  # and both are the formula
        reference = _reference_logits(model, plain_ids[:, :-1])[:, 4:]
    assert _gap(plain, reference) <= TOL


def test_left_padded_generation_equals_each_prompt_alone():
    model = _model().eval()
    prompt = _ids(3, 7)
    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [1] * 7, [0, 1, 1, 1, 1, 1, 1]])
    plain_ids, plain = generate_greedy(model, prompt, 20, mask)
    cached_ids, cached = generate_greedy_cached(model, prompt, 20, mask)
    assert torch.equal(cached_ids, plain_ids)
    assert _gap(cached, plain) <= TOL
    for row in range(3):  # each row's sinks are its own first real tokens
        real = mask[row].bool()
        alone_ids, alone = generate_greedy_cached(
            model, prompt[row : row + 1, real], 20
        )
        num_pads = int((~real).sum())
        assert torch.equal(alone_ids[0], cached_ids[row, num_pads:])
        assert _gap(alone[0], cached[row]) <= TOL


@pytest.mark.parametrize("chunk", range(1, W + 4))
@pytest.mark.parametrize("padded", [False, True])
def test_a_prefill_in_chunks_of_any_size_equals_one_pass(chunk, padded):
    model = _model().eval()
    ids = _ids(2, 17)
    mask = None
    if padded:
        mask = torch.ones(2, 17, dtype=torch.long)
        mask[0, :5] = 0  # five pads: more than W, so a whole chunk may be pads
    cache = KVCache(40, num_layers=2, window=W, sink_tokens=S)
    outs = []
    with torch.no_grad():
        for start in range(0, 17, chunk):
            end = min(start + chunk, 17)
            seen = None if mask is None else mask[:, :end]
            outs.append(decode_step(model, ids[:, start:end], cache, seen))
        whole = generate_greedy_logits(model, ids, mask)
    chunked = torch.cat(outs, dim=1)
    if mask is not None:  # a pad's logits mean nothing
        chunked, whole = chunked * mask[..., None], whole * mask[..., None]
    assert _gap(chunked, whole) <= TOL
    assert cache.num_held(0) == W + S


def generate_greedy_logits(model, ids, mask):
    """The logits of every position, from the pass without a cache."""
    from attention.generation import decode_cached

    return decode_cached(model, ids, None, mask)


def test_a_bounded_model_generates_past_its_context_length():
    model = _model(context_length=12).eval()
    prompt = _ids(1, 5)
    ids, logits = generate_greedy_cached(model, prompt, 40)  # 44 tokens > 12
    assert ids.shape == (1, 45)
    longer = _model(context_length=60).eval()  # the same weights, a longer mask
    weights = {k: v for k, v in model.state_dict().items() if not k.endswith("mask")}
    longer.load_state_dict(weights, strict=False)  # not the causal mask's buffer
    assert _gap(generate_greedy(longer, prompt, 40)[1], logits) <= TOL


def test_a_model_with_a_global_layer_stops_at_its_context_length():
    model = _model(window=[W, None], context_length=12).eval()
    with pytest.raises(ValueError) as error:
        generate_greedy_cached(model, _ids(1, 5), 40)
    assert_message_names(error.value, ("max_new_tokens",), ("12",))
    ids, logits = generate_greedy_cached(model, _ids(1, 5), 8)
    assert _gap(generate_greedy(model, _ids(1, 5), 8)[1], logits) <= TOL


def test_a_windowed_token_costs_no_check():
    model = _model().eval()
    prompt = _ids(1, 3)
    few = len(checks_called(lambda: generate_greedy_cached(model, prompt, 4)))
    many = len(checks_called(lambda: generate_greedy_cached(model, prompt, 24)))
    assert many == few


# --- positions counted inside the cache (StreamingLLM) -----------------------


def test_in_cache_positions_change_only_what_follows_an_eviction_past_the_sinks():
    model = _model().eval()
    prompt = _ids(2, 3)
    absolute = generate_greedy_cached(model, prompt, 20)[1]
    cache = KVCache(40, num_layers=2, window=W, sink_tokens=S, positions="in_cache")
    in_cache = generate_greedy_cached(model, prompt, 20, cache=cache)[1]
    # logits[:, t] come from the call that feeds token 2 + t. Before the call
    # that feeds token n, n - W rows have left the window, and the sinks move
    # once more than S have: from n = W + S + 1 on.
    first_moved = W + S + 1 - 2
    assert _gap(in_cache[:, :first_moved], absolute[:, :first_moved]) <= TOL
    assert (in_cache - absolute)[:, first_moved:].abs().amax(-1).min() > 1e-6


def test_without_sinks_positions_in_the_cache_change_nothing():
    # RoPE sees distances only, and the window's distances are the same.
    model = _model(sink_tokens=0).eval()
    prompt = _ids(2, 3)
    absolute = generate_greedy_cached(model, prompt, 20)[1]
    cache = KVCache(40, num_layers=2, window=W, positions="in_cache")
    assert (
        _gap(generate_greedy_cached(model, prompt, 20, cache=cache)[1], absolute) <= TOL
    )


def test_the_sink_shift_puts_the_sinks_right_before_the_window():
    cache = KVCache(40, window=W, sink_tokens=S, positions="in_cache")
    keys = _token_keys(11)
    cache.update(0, keys, keys)  # rows 7 .. 10 in the ring, sinks 0, 1
    assert cache.sink_shift(0).tolist() == [[7 - S], [7 - S]]


# --- bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"window": 0}, ("window", "0")),
        ({"window": 2.5}, ("window", "2.5")),
        ({"window": "4"}, ("window", "'4'")),
        ({"window": [4]}, ("window", "1 entries")),
        ({"window": [4, 0]}, ("window", "0")),
        ({"window": 4, "sink_tokens": -1}, ("sink_tokens", "-1")),
        ({"window": 4, "sink_tokens": 1.0}, ("sink_tokens", "1.0")),
        ({"sink_tokens": 2}, ("sink_tokens", "window")),
        ({"window": 4, "positions": "relative"}, ("positions", "relative")),
    ],
)
def test_a_bad_window_names_what_it_expected(kwargs, names):
    with pytest.raises(ValueError) as error:
        KVCache(8, num_layers=2, **kwargs)
    assert_message_names(error.value, *[(n,) for n in names])


def test_a_window_needs_rotary_or_no_positions():
    with pytest.raises(ValueError) as error:
        TinyAttentionModel(13, 16, 8, 2, "learned", window=4)
    assert_message_names(error.value, ("positions",), ("learned",), ("context_length",))
    assert TinyAttentionModel(13, 16, 8, 2, "none", window=4).windows == (4,)


def test_a_cache_bounded_otherwise_than_the_model_is_refused():
    model = _model().eval()
    for cache in (
        KVCache(40, 2),
        KVCache(40, 2, window=W),
        KVCache(40, 2, window=W + 1, sink_tokens=S),
    ):
        with pytest.raises(ValueError) as error:
            decode_step(model, _ids(1, 3), cache)
        assert_message_names(error.value, ("cache",), ("window",), ("sink_tokens",))
    used = KVCache(40, 2, window=W, sink_tokens=S)
    decode_step(model, _ids(1, 3), used)
    with pytest.raises(ValueError) as error:
        generate_greedy_cached(model, _ids(1, 3), 2, cache=used)
    assert_message_names(error.value, ("cache",), ("empty",))


# --- memory of real configurations --------------------------------------------


def test_the_real_patterns_count_their_local_and_global_layers():
    counts = {}
    for name, config in MODEL_WINDOWS.items():
        windows = layer_windows(
            config["layers"], config["window"], config["local_per_global"]
        )
        counts[name] = (sum(w is not None for w in windows), windows.count(None))
    assert counts == {
        "Mistral 7B": (32, 0),
        "Gemma 2 9B": (21, 21),
        "Gemma 3 12B": (40, 8),
    }


@pytest.mark.parametrize("local_per_global", [None, 1, 5])
def test_the_estimate_is_what_a_tiny_model_with_the_pattern_holds(local_per_global):
    windows = layer_windows(6, 3, local_per_global)
    model = _model(window=windows, sink_tokens=1, num_layers=6).eval()
    cache = KVCache(40, num_layers=6, window=windows, sink_tokens=1)
    ids = _ids(2, 14)
    with torch.no_grad():
        for t in range(14):
            decode_step(model, ids[:, t : t + 1], cache)
            # b=2, 2 key/value heads of 8 features, float64: 8 bytes
            estimate = kv_cache_bytes_by_layer(
                2, t + 1, windows, 2, 8, 8, sink_tokens=1
            )
            assert cache.nbytes() == estimate, f"{t + 1} tokens"
    without = kv_cache_bytes(2, 14, 6, 2, 8, 8)
    assert kv_cache_bytes_by_layer(2, 14, [None] * 6, 2, 8, 8) == without
    assert (cache.nbytes() < without) == (windows.count(None) < 6)


def test_cached_attention_reads_a_bounded_cache_past_the_modules_context():
    from attention import RotaryMultiHeadAttention, cached_attention
    from attention.kv_cache import attend_cached

    torch.manual_seed(0)
    attn = RotaryMultiHeadAttention(8, 8, 6, 0.0, num_heads=2).double().eval()
    x = torch.randn(1, 20, 8, dtype=torch.float64)  # 20 tokens > context_length 6
    cache = KVCache(6, window=W, sink_tokens=S)
    with torch.no_grad():
        steps = torch.cat(
            [cached_attention(attn, x[:, t : t + 3], cache) for t in range(0, 20, 3)], 1
        )
        whole = attend_cached(attn, x, None, window=W, sink_tokens=S)
    assert _gap(steps, whole) <= TOL
    with pytest.raises(ValueError) as error:  # one call must still fit
        cached_attention(attn, x[:, :7], KVCache(6, window=W))
    assert_message_names(error.value, ("context_length",), ("7",))


@pytest.mark.parametrize("chunk", [1, 2, 5, 9])
def test_a_grouped_layer_keeps_its_few_key_value_heads_in_the_ring(chunk):
    from attention import GroupedQueryAttention, cached_attention
    from attention.kv_cache import attend_cached

    torch.manual_seed(0)
    attn = GroupedQueryAttention(8, 8, 40, 0.0, num_heads=4, num_kv_heads=2)
    attn = attn.double().eval()
    x = torch.randn(2, 23, 8, dtype=torch.float64)
    mask = torch.ones(2, 23, dtype=torch.long)
    mask[1, :6] = 0  # a left-padded row
    cache = KVCache(40, window=W, sink_tokens=S)
    with torch.no_grad():
        parts = [
            cached_attention(
                attn, x[:, t : t + chunk], cache, attention_mask=mask[:, : t + chunk]
            )
            for t in range(0, 23, chunk)
        ]
        whole = attend_cached(attn, x, None, 0, mask, None, W, S)
    assert _gap(torch.cat(parts, 1) * mask[..., None], whole * mask[..., None]) <= TOL
    assert cache.keys[0].shape == (2, 2, W, 2)  # 2 key/value heads, not 4
    assert (
        cache.nbytes() == 2 * 2 * 2 * (W + S) * 2 * 8
    )  # k and v, b, g, tokens, hd, float64
