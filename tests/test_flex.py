"""FlexAttention as a second reference (attention.flex): each mask of the book,
written as a ``mask_mod``, gives the package's mask exactly, and FlexAttention
run eagerly with it gives the package's attention, in float64 on the CPU."""

from __future__ import annotations

import math

import pytest
import torch

from attention import (
    causal_mask,
    flash_attention,
    key_padding_mask,
    padded_causal_mask,
    window_mask,
)
from attention.flex import (
    causal_mask_mod,
    flex_mask,
    flex_reference,
    padded_causal_mask_mod,
    padding_mask_mod,
    window_mask_mod,
)

# Two rows, left and right padding, 7 tokens.
ATTENTION_MASK = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]])
T = ATTENTION_MASK.shape[1]


def qkv(num_queries: int, num_keys: int, batch: int = 2):
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(batch, 3, num_queries, 4, generator=gen, dtype=torch.float64)
    k = torch.randn(batch, 3, num_keys, 4, generator=gen, dtype=torch.float64)
    v = torch.randn(batch, 3, num_keys, 4, generator=gen, dtype=torch.float64)
    return q, k, v


# (name, mask_mod, the package's mask (b or 1, Tq, Tk), Tq, Tk)
MASKS = [
    ("causal", causal_mask_mod(T, T), causal_mask(T)[None], T, T),
    ("causal-Tq<Tk", causal_mask_mod(3, T), window_mask(3, T)[None], 3, T),
    (
        "padding",
        padding_mask_mod(ATTENTION_MASK),
        key_padding_mask(ATTENTION_MASK)[:, None, :].expand(2, T, T),
        T,
        T,
    ),
    (
        "causal-padding",
        padded_causal_mask_mod(ATTENTION_MASK),
        padded_causal_mask(ATTENTION_MASK),
        T,
        T,
    ),
    ("window", window_mask_mod(T, T, 3), window_mask(T, T, 3)[None], T, T),
    ("window-Tq<Tk", window_mask_mod(2, T, 3), window_mask(2, T, 3)[None], 2, T),
    (
        "window-sinks",
        window_mask_mod(T, T, 2, sink_tokens=2),
        window_mask(T, T, 2, sink_tokens=2)[None],
        T,
        T,
    ),
    ("no-window", window_mask_mod(T, T, None), causal_mask(T)[None], T, T),
]


@pytest.mark.parametrize(
    ("name", "mask_mod", "hidden", "tq", "tk"), MASKS, ids=[m[0] for m in MASKS]
)
def test_each_mask_mod_is_the_packages_mask(name, mask_mod, hidden, tq, tk) -> None:
    got = flex_mask(mask_mod, 2, tq, tk)[:, 0]  # (b, Tq, Tk)
    assert torch.equal(got, hidden.expand_as(got))


def masked_attention(q, k, v, hidden):
    """The formula with the package's mask (True = hidden), rows that see no
    key left at 0, as FlexAttention leaves them."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(hidden[:, None], -math.inf)  # (b, h, Tq, Tk)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, torch.logsumexp(scores, dim=-1)


@pytest.mark.parametrize(
    ("name", "mask_mod", "hidden", "tq", "tk"), MASKS, ids=[m[0] for m in MASKS]
)
def test_flex_attention_equals_the_packages_attention(name, mask_mod, hidden, tq, tk):
    q, k, v = qkv(tq, tk)
    out, lse = flex_reference(q, k, v, mask_mod)
    expected, expected_lse = masked_attention(q, k, v, hidden.expand(2, tq, tk))
    seen = expected_lse > -math.inf  # rows that see a key
    torch.testing.assert_close(out, expected, atol=1e-15, rtol=0)
    torch.testing.assert_close(lse[seen], expected_lse[seen], atol=1e-15, rtol=0)


@pytest.mark.parametrize("window", [None, 1, 3])
@pytest.mark.parametrize("tq", [T, 3])
def test_flex_attention_equals_the_tiles(window, tq) -> None:
    q, k, v = qkv(tq, T)
    out, lse = flex_reference(q, k, v, window_mask_mod(tq, T, window))
    tiled, tiled_lse = flash_attention(q, k, v, True, 3, window=window)
    torch.testing.assert_close(out, tiled, atol=1e-15, rtol=0)
    torch.testing.assert_close(lse, tiled_lse, atol=1e-15, rtol=0)


def test_a_wrong_window_mask_mod_is_caught() -> None:
    # The attention-gym rule (q - kv <= W) passed off as the package's window.
    def one_too_wide(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (q_idx - kv_idx <= 3)

    assert not torch.equal(flex_mask(one_too_wide, 1, T, T)[0, 0], window_mask(T, T, 3))


def test_the_measured_limits_say_no_backward_on_the_cpu() -> None:
    from attention.flex import flex_cpu_limits

    limits = flex_cpu_limits(num_tokens=64, rounds=1)
    assert "backward" in limits["backward_error"] and "CPU" in limits["backward_error"]
    assert limits["flex_seconds"] > 0 and limits["sdpa_seconds"] > 0
    assert "compile_seconds" not in limits  # compiling takes minutes: only on request


def test_the_stored_compiled_run_is_whole_and_was_measured_quietly() -> None:
    """The run the bounded-context page reads (``python -m attention.flex``):
    every timing with its rounds, from an empty compiler cache, on a machine
    that had at most half its cores busy when it started."""
    from attention.flex import stored_flex_run

    run = stored_flex_run()
    for key in ("flex", "sdpa", "compiled"):
        assert len(run[f"{key}_rounds_s"]) == run["rounds"] >= 5, key
        assert min(run[f"{key}_rounds_s"]) > 0, key
    assert run["compile_seconds"] > max(run["compiled_rounds_s"])
    assert run["backward_error"].startswith("NotImplementedError")
    meta = run["meta"]
    assert meta["torch"].startswith("2.13.0") and meta["threads"] == 1
    assert meta["load_average_before"][0] <= meta["cpu_count"] / 2
    assert "empty" in meta["compiler_cache"]
