"""The matrices the chapter prints (sections 3.3 to 3.6), computed by the package
from its running example: one row of ``PRINTED`` per printout, one test.

A printout that a docstring's example already shows in full (``dot_scores``,
``weighted_sum``, ``SelfAttention_v1`` and ``_v2``, ``CausalAttention``,
``MultiHeadAttention``) is checked by that doctest, not again here.
"""

from __future__ import annotations

import math

import pytest
import torch
from helpers import assert_printed, capture_dropout

from attention import (
    CausalAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v2,
    causal_mask,
    dot_scores,
    mask_with_neg_inf,
    renormalize_masked,
    simple_self_attention,
    softmax_naive,
)

INF = -math.inf

# Section 3.3.2: every query at once.
SCORES = [
    [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
    [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
    [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
    [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
    [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
]
WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]
CONTEXT_VECS = [
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
]
# Section 3.5.1, from the query and key weights of SelfAttention_v2 (seed 789);
# the chapter's simple mask prints the lower triangle of these same digits.
CAUSAL_WEIGHTS = [
    [0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],
    [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],
    [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],
    [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],
    [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],
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
# Section 3.6.1 (seed 123, d_out=2 per head, 2 heads), per batch item; its
# first head is section 3.5.3's CausalAttention.
WRAPPER = [
    [-0.4519, 0.2216, 0.4772, 0.1063],
    [-0.5874, 0.0058, 0.5891, 0.3257],
    [-0.6300, -0.0632, 0.6202, 0.3860],
    [-0.5675, -0.0843, 0.5478, 0.3589],
    [-0.5526, -0.0981, 0.5321, 0.3428],
    [-0.5299, -0.1081, 0.5077, 0.3493],
]


def scores_789(x: torch.Tensor) -> torch.Tensor:
    """The unscaled scores of section 3.5.1, ``(6, 6)``."""
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    return sa_v2.W_query(x) @ sa_v2.W_key(x).T


def weights_789(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores_789(x) / 2**0.5, dim=-1)


def causal_weights_789(x: torch.Tensor) -> torch.Tensor:
    """What reaches dropout in a CausalAttention given sa_v2's weights (seed 789)."""
    torch.manual_seed(789)
    state = SelfAttention_v2(3, 2).state_dict()
    ca = CausalAttention(3, 2, context_length=6, dropout=0.5).eval()
    ca.load_state_dict(state, strict=False)  # all but its mask
    seen = capture_dropout(ca)
    ca(torch.stack((x, x)))
    return seen["input"]


def wrapper_123(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(123)
    return MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)(torch.stack((x, x)))


# id: (what the package computes from the running example x, what is printed)
PRINTED = {
    "3.3.2-scores-loop": (
        lambda x: torch.stack([dot_scores(x_i, x) for x_i in x]),
        SCORES,
    ),
    "3.3.2-weights": (lambda x: simple_self_attention(x)[0], WEIGHTS),
    "3.3.2-context-vecs": (lambda x: simple_self_attention(x)[1], CONTEXT_VECS),
    "3.3.1-softmax_naive-dim-1": (lambda x: softmax_naive(x @ x.T, dim=-1), WEIGHTS),
    "3.3.1-softmax_naive-dim1": (lambda x: softmax_naive(x @ x.T, dim=1), WEIGHTS),
    # The scores are symmetric: along dim 0 the same weights, transposed.
    "3.3.1-softmax_naive-dim0": (
        lambda x: softmax_naive(x @ x.T, dim=0).T,
        WEIGHTS,
    ),
    "3.5.1-simple-mask": (
        lambda x: weights_789(x).masked_fill(causal_mask(6), 0.0),
        torch.tensor(CAUSAL_WEIGHTS).tril().tolist(),
    ),
    "3.5.1-weights": (weights_789, CAUSAL_WEIGHTS),
    "3.5.1-renormalized": (
        lambda x: renormalize_masked(weights_789(x)),
        RENORMALIZED,
    ),
    "3.5.1-neg-inf": (lambda x: mask_with_neg_inf(scores_789(x)), MASKED_SCORES),
    "3.5.1-neg-inf-softmax": (
        lambda x: torch.softmax(mask_with_neg_inf(scores_789(x)) / 2**0.5, dim=-1),
        RENORMALIZED,
    ),
    "3.5.3-weights-into-dropout": (causal_weights_789, [RENORMALIZED] * 2),
    "3.6.1-wrapper": (wrapper_123, [WRAPPER] * 2),
}


@pytest.mark.parametrize("printout", PRINTED)
def test_the_package_computes_the_printout(printout: str, inputs) -> None:
    compute, printed = PRINTED[printout]
    with torch.no_grad():
        assert_printed(compute(inputs), printed)
