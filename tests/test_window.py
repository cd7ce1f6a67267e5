"""Bounded context in the tiles (attention.window, attention.flash): a sliding
window and learned sinks through ``flash_attention`` and its backward, against
the formula written out here, in float64.

The formula: scores ``q k^T / sqrt(hd)``; ``-inf`` where query ``i`` (at
position ``p = i + Tk - Tq``) may not see key ``j``, that is unless
``p - W < j <= p``; a sink is one more column of scores, holding ``s`` of the
row's head, dropped after the softmax (it has no value).
"""

from __future__ import annotations

import math

import pytest
import torch

from attention import FlashAttentionFunction, flash_attention, window_mask
from attention.flash import computed_tiles

F64 = {"atol": 1e-12, "rtol": 0}
GRAD = {"atol": 1e-10, "rtol": 0}
HEADS = 3


def qkv(num_queries: int, num_keys: int, hd: int = 4, seed: int = 0):
    """Seeded float64 ``(b=2, h=3, T, hd)`` queries, keys and values."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(2, HEADS, num_queries, hd, generator=gen, dtype=torch.float64)
    k = torch.randn(2, HEADS, num_keys, hd, generator=gen, dtype=torch.float64)
    v = torch.randn(2, HEADS, num_keys, hd, generator=gen, dtype=torch.float64)
    return q, k, v


def sink_logits(seed: int = 1) -> torch.Tensor:
    """One sink per head, large enough to take a visible share of each row."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(HEADS, generator=gen, dtype=torch.float64) * 2.0


def hidden_by_formula(num_queries: int, num_keys: int, window: int | None):
    """``True`` where query ``i`` may not see key ``j``, written out pair by pair."""
    hidden = torch.ones(num_queries, num_keys, dtype=torch.bool)
    for i in range(num_queries):
        p = i + num_keys - num_queries  # the query's position
        for j in range(num_keys):
            if j <= p and (window is None or p - window < j):
                hidden[i, j] = False
    return hidden


def formula(q, k, v, window=None, sinks=None):
    """``(context_vec, lse)``: the masked softmax, the sink as an extra column."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (b, h, Tq, Tk)
    hidden = hidden_by_formula(q.shape[-2], k.shape[-2], window)
    scores = scores.masked_fill(hidden, -math.inf)
    if sinks is not None:
        column = sinks.view(HEADS, 1, 1).expand(*scores.shape[:-1], 1)
        scores = torch.cat((scores, column), dim=-1)  # (b, h, Tq, Tk + 1)
    weights = torch.softmax(scores, dim=-1)
    if sinks is not None:
        weights = weights[..., :-1]  # the sink takes its share, returns nothing
    return weights @ v, torch.logsumexp(scores, dim=-1)


def flash(q, k, v, window, sinks, tile_size):
    return flash_attention(q, k, v, True, tile_size, window=window, sinks=sinks)


def assert_matches_formula(attend, num_queries, num_keys, window, with_sinks, tile):
    """``attend`` (flash_attention's arguments) equals the formula to 1e-12."""
    q, k, v = qkv(num_queries, num_keys)
    sinks = sink_logits() if with_sinks else None
    out, lse = attend(q, k, v, window, sinks, tile)
    expected, expected_lse = formula(q, k, v, window, sinks)
    torch.testing.assert_close(out, expected, **F64)
    torch.testing.assert_close(lse, expected_lse, **F64)


# 13 keys: tiles of 3, 4 and 5 divide nothing; 64 is one tile for everything.
SHAPES = [(13, 13), (5, 13), (1, 13)]
SHAPE_IDS = ["Tq=Tk", "Tq<Tk", "decode"]


@pytest.mark.parametrize("with_sinks", [False, True], ids=["no-sink", "sinks"])
@pytest.mark.parametrize("window", [None, 1, 3, 4, 12, 13, 40])
@pytest.mark.parametrize("tile", [3, 4, 5, 64])
@pytest.mark.parametrize(("num_queries", "num_keys"), SHAPES, ids=SHAPE_IDS)
def test_forward_equals_the_formula(num_queries, num_keys, tile, window, with_sinks):
    assert_matches_formula(flash, num_queries, num_keys, window, with_sinks, tile)


@pytest.mark.parametrize("tile", [2, 5])
def test_a_query_that_sees_no_key_gets_the_sinks_lse(tile: int) -> None:
    # More queries than keys: the first two see no key. With a sink, the sink
    # is all they see: an output of 0 and lse = s, not -inf.
    q, k, v = qkv(7, 5)
    sinks = sink_logits()
    out, lse = flash_attention(q, k, v, True, tile, window=2, sinks=sinks)
    assert torch.equal(out[..., :2, :], torch.zeros_like(out[..., :2, :]))
    assert torch.equal(lse[..., :2], sinks.view(HEADS, 1).expand(2, HEADS, 2))
    expected, expected_lse = formula(q, k, v, 2, sinks)
    torch.testing.assert_close(out[..., 2:, :], expected[..., 2:, :], **F64)
    torch.testing.assert_close(lse[..., 2:], expected_lse[..., 2:], **F64)


# --- the mutants the tests above must catch ---------------------------------------


def window_one_too_wide(q, k, v, window, sinks, tile_size):
    """The commonest bug: ``p - W <= j`` (W + 1 keys) for ``p - W < j``."""
    wider = None if window is None else window + 1
    return flash(q, k, v, wider, sinks, tile_size)


def sink_forgotten(q, k, v, window, sinks, tile_size):
    """A sink that never joins the sum: the running sum starts at 0."""
    return flash(q, k, v, window, None, tile_size)


def window_top_left(q, k, v, window, sinks, tile_size):
    """Aligned top-left (query i at position i, as ``is_causal=True`` does):
    with fewer queries than keys, only the first ``Tq`` keys are reached."""
    first = slice(0, q.shape[-2])  # the keys a top-left triangle reaches
    return flash(q, k[..., first, :], v[..., first, :], window, sinks, tile_size)


@pytest.mark.parametrize(
    ("mutant", "num_queries", "window", "with_sinks"),
    [
        (window_one_too_wide, 13, 3, False),
        (window_one_too_wide, 5, 4, True),
        (sink_forgotten, 13, 3, True),
        (window_top_left, 5, 3, False),
    ],
    ids=["window+1", "window+1-chunk", "sink-forgotten", "top-left"],
)
def test_the_formula_catches_a_mutant(mutant, num_queries, window, with_sinks):
    with pytest.raises(AssertionError):
        assert_matches_formula(mutant, num_queries, 13, window, with_sinks, 4)


def test_window_mask_is_the_formulas_mask() -> None:
    # The package's one definition against the pair-by-pair one above.
    for num_queries, num_keys in [(13, 13), (5, 13), (0, 4)]:
        for window in [None, 1, 2, 5, 13, 20]:
            expected = hidden_by_formula(num_queries, num_keys, window)
            assert torch.equal(window_mask(num_queries, num_keys, window), expected)


# --- skipped tiles -------------------------------------------------------------------


@pytest.mark.parametrize("window", [None, 1, 3, 4, 6, 9])
@pytest.mark.parametrize("tile", [2, 3, 4])
@pytest.mark.parametrize(("num_queries", "num_keys"), [(12, 12), (5, 12), (14, 12)])
def test_computed_tiles_are_exactly_those_with_a_visible_pair(
    num_queries, num_keys, tile, window
) -> None:
    hidden = hidden_by_formula(num_queries, num_keys, window)
    needed = {}
    for i in range(num_queries):
        for j in range(num_keys):
            pair = (i // tile, j // tile)
            needed.setdefault(pair, [False, False])  # [visible, hidden] seen
            needed[pair][int(hidden[i, j])] = True
    visible = {pair: kinds[1] for pair, kinds in needed.items() if kinds[0]}
    pairs = computed_tiles(num_queries, num_keys, tile, causal=True, window=window)
    got = {(p.query_tile, p.key_tile): p.masked for p in pairs}
    assert got == visible  # each computed pair masked iff it holds a hidden pair
    assert len(pairs) == len(got)  # and none twice


@pytest.mark.parametrize("window", [2, 5])
@pytest.mark.parametrize("q_tile", [0, 1, 2, 3])
def test_key_tiles_outside_the_window_are_never_computed(q_tile, window) -> None:
    # NaN in every key and value of the key tiles this query tile skips. A
    # masked weight is 0, and 0 * NaN is NaN: only a tile never computed
    # leaves the outputs finite and equal.
    tile, t = 3, 12
    q, k, v = qkv(t, t)
    pairs = computed_tiles(t, t, tile, causal=True, window=window)
    kept = [p.key_tile for p in pairs if p.query_tile == q_tile]
    skipped = [j for j in range(t) if j // tile not in kept]
    assert skipped  # the future, or keys too old for the window, or both
    k_nan, v_nan = (x.index_fill(-2, torch.tensor(skipped), torch.nan) for x in (k, v))
    rows = slice(q_tile * tile, (q_tile + 1) * tile)
    out, lse = flash_attention(q, k_nan, v_nan, True, tile, window=window)
    expected, expected_lse = formula(q, k, v, window)
    torch.testing.assert_close(out[..., rows, :], expected[..., rows, :], **F64)
    torch.testing.assert_close(lse[..., rows], expected_lse[..., rows], **F64)


def test_the_window_skips_most_tiles_of_a_long_sequence() -> None:
    # 64 tiles a side, a window of 2 tiles: each query tile computes 2 or 3.
    pairs = computed_tiles(1024, 1024, 16, causal=True, window=32)
    causal = computed_tiles(1024, 1024, 16, causal=True)
    assert len(causal) == 64 * 65 // 2
    assert len(pairs) == 1 + 2 + 3 * 62


# --- the backward pass ---------------------------------------------------------------


@pytest.mark.parametrize("with_sinks", [False, True], ids=["no-sink", "sinks"])
@pytest.mark.parametrize("window", [None, 1, 3, 5, 40])
@pytest.mark.parametrize("tile", [3, 4])
@pytest.mark.parametrize(("num_queries", "num_keys"), SHAPES[:2], ids=SHAPE_IDS[:2])
def test_gradients_equal_autograds_through_the_formula(
    num_queries, num_keys, tile, window, with_sinks
) -> None:
    q, k, v = (t.requires_grad_() for t in qkv(num_queries, num_keys))
    sinks = sink_logits().requires_grad_() if with_sinks else None
    inputs = (q, k, v) if sinks is None else (q, k, v, sinks)
    gen = torch.Generator().manual_seed(2)
    grad_out = torch.randn(q.shape, generator=gen, dtype=torch.float64)
    out, _ = FlashAttentionFunction.apply(q, k, v, True, tile, window, sinks)
    grads = torch.autograd.grad(out, inputs, grad_out)
    expected, _ = formula(q, k, v, window, sinks)
    expected_grads = torch.autograd.grad(expected, inputs, grad_out)
    for name, got, want in zip(
        "q k v sinks".split(), grads, expected_grads, strict=False
    ):
        torch.testing.assert_close(got, want, **GRAD, msg=lambda m, n=name: f"{n}: {m}")


def test_gradcheck_with_a_window_and_sinks() -> None:
    q, k, v = (t.requires_grad_() for t in qkv(4, 6, hd=2))
    sinks = sink_logits().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda q, k, v, s: FlashAttentionFunction.apply(q, k, v, True, 3, 2, s)[0],
        (q, k, v, sinks),
    )


def test_sinks_without_a_gradient_get_none() -> None:
    q, k, v = (t.requires_grad_() for t in qkv(4, 6))
    out, _ = FlashAttentionFunction.apply(q, k, v, True, 3, None, sink_logits())
    (grad_q,) = torch.autograd.grad(out.sum(), (q,))
    assert torch.isfinite(grad_q).all()


# --- a sink, three ways -------------------------------------------------------------


def last_place(t: torch.Tensor) -> torch.Tensor:
    """One unit in the last place of ``t``'s largest magnitude."""
    largest = t.abs().amax()
    return torch.nextafter(largest, torch.tensor(math.inf, dtype=t.dtype)) - largest


def test_the_three_forms_of_a_sink() -> None:
    # 1. an extra column of the scores; 2. the output without the sink,
    # scaled by sigmoid(lse - s); 3. the running maximum started at s with
    # sum 1 (flash_attention). Equal in exact arithmetic. In float64 each
    # rounds in its own order (the division before or after the product with
    # V; exp(s - m) added first or last to the sum; sigmoid as 1 / (1 + e^-x)),
    # so they are not all equal bit for bit: they differ by at most one unit
    # in the last place of the largest output, and a third or more of the
    # entries are equal to the bit.
    q, k, v = qkv(13, 13)
    sinks = sink_logits()
    column, column_lse = formula(q, k, v, 3, sinks)
    plain, plain_lse = formula(q, k, v, 3)
    s = sinks.view(HEADS, 1)  # (h, 1), against lse (b, h, Tq)
    scaled = plain * torch.sigmoid(plain_lse - s)[..., None]
    for tile in (1, 4, 64):
        running, running_lse = flash_attention(q, k, v, True, tile, 0.0, 3, sinks)
        assert (running - column).abs().max() <= last_place(column)
        assert (running_lse - column_lse).abs().max() <= last_place(column_lse)
        assert (running == column).double().mean() > 0.3
    assert (scaled - column).abs().max() <= last_place(column)
    assert (scaled == column).double().mean() > 0.3
    # lse with the sink is logaddexp(lse without it, s)
    with_sink = torch.logaddexp(plain_lse, s)
    assert (with_sink - column_lse).abs().max() <= last_place(column_lse)
