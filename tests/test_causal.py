"""Tests for attention.causal: masks, dropout and CausalAttention (section 3.5)."""

from __future__ import annotations

import math

import pytest
import torch
from checks import (
    assert_causal_dropout,
    assert_printed,
    capture_dropout,
)

from attention import (
    CausalAttention,
    SelfAttention_v2,
    causal_mask,
    mask_with_neg_inf,
    renormalize_masked,
)

INF = -math.inf

# Printed in section 3.5.1, from the query and key weights of SelfAttention_v2
# built with seed 789.
WEIGHTS = [
    [0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],
    [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],
    [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],
    [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],
    [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
]
MASKED_SIMPLE = [
    [0.1921, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.2041, 0.1659, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.2036, 0.1659, 0.1662, 0.0000, 0.0000, 0.0000],
    [0.1869, 0.1667, 0.1668, 0.1571, 0.0000, 0.0000],
    [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.0000],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
]
RENORMALIZED = [
    [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
    [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
    [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
]
MASKED_SCORES = [
    [0.2899, INF, INF, INF, INF, INF],
    [0.4656, 0.1723, INF, INF, INF, INF],
    [0.4594, 0.1703, 0.1731, INF, INF, INF],
    [0.2642, 0.1024, 0.1036, 0.0186, INF, INF],
    [0.2183, 0.0874, 0.0882, 0.0177, 0.0786, INF],
    [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078],
]
# Printed in section 3.5.3 (seed 123, d_in=3, d_out=2, dropout=0.0), per batch item.
CAUSAL_SEED_123 = [
    [-0.4519, 0.2216],
    [-0.5874, 0.0058],
    [-0.6300, -0.0632],
    [-0.5675, -0.0843],
    [-0.5526, -0.0981],
    [-0.5299, -0.1081],
]


@pytest.fixture
def scores_of_sa_v2(inputs: torch.Tensor) -> torch.Tensor:
    """The unscaled scores of section 3.5.1, ``(6, 6)``."""
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    with torch.no_grad():
        return sa_v2.W_query(inputs) @ sa_v2.W_key(inputs).T


def random_module(
    seed: int, d_in: int = 4, d_out: int = 3, context_length: int = 8, **kwargs
) -> CausalAttention:
    torch.manual_seed(seed)
    kwargs.setdefault("dropout", 0.0)
    return CausalAttention(d_in, d_out, context_length, **kwargs)


# --- masks: polarity and the chapter's 3.5.1 numbers ----------------------------


def test_section_3_5_1_weights(scores_of_sa_v2: torch.Tensor) -> None:
    weights = torch.softmax(scores_of_sa_v2 / 2**0.5, dim=-1)
    assert_printed(weights, WEIGHTS)
    assert_printed(weights.masked_fill(causal_mask(6), 0.0), MASKED_SIMPLE)
    assert_printed(weights * torch.tril(torch.ones(6, 6)), MASKED_SIMPLE)
    assert_printed(renormalize_masked(weights), RENORMALIZED)


def test_section_3_5_1_neg_inf(scores_of_sa_v2: torch.Tensor) -> None:
    masked = mask_with_neg_inf(scores_of_sa_v2)
    assert_printed(masked, MASKED_SCORES)
    assert_printed(torch.softmax(masked / 2**0.5, dim=-1), RENORMALIZED)


def test_mask_with_neg_inf_leaves_its_input_alone() -> None:
    scores = torch.ones(4, 4)
    masked = mask_with_neg_inf(scores)
    torch.testing.assert_close(scores, torch.ones(4, 4))
    assert torch.isneginf(masked[causal_mask(4)]).all()
    assert (masked[~causal_mask(4)] == 1).all()


# --- CausalAttention: the chapter's numbers and equivalences ----------------------


def test_causal_attention_seed_123(batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, context_length=6, dropout=0.0)
    out = ca(batch)
    assert out.shape == (2, 6, 2)
    assert_printed(out, [CAUSAL_SEED_123, CAUSAL_SEED_123])


def test_causal_attention_weights_are_the_chapters(batch: torch.Tensor) -> None:
    # With sa_v2's weights (seed 789), the weights that reach dropout are the
    # renormalised matrix of section 3.5.1.
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    ca = CausalAttention(3, 2, context_length=6, dropout=0.5).eval()
    missing, unexpected = ca.load_state_dict(sa_v2.state_dict(), strict=False)
    assert missing == ["mask"] and unexpected == []
    seen = capture_dropout(ca)
    ca(batch)
    assert_printed(seen["input"], [RENORMALIZED, RENORMALIZED])


# --- dropout ------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_acts_on_the_attention_weights(p: float) -> None:
    ca = random_module(17, context_length=32, dropout=p).train()
    seen = capture_dropout(ca)
    x = torch.randn(64, 32, 4)
    out = ca(x)
    weights, dropped = seen["input"], seen["output"]
    # The output is built from the dropped-out weights.
    torch.testing.assert_close(out, dropped @ ca.W_value(x))
    assert_causal_dropout(weights, dropped, p)
