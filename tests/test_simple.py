"""Tests for attention.simple: attention without trainable weights (section 3.3)."""

from __future__ import annotations

import pytest
import torch
from checks import assert_printed

from attention import dot_scores, simple_self_attention, softmax_naive, weighted_sum

# Printed in section 3.3.1 for the query x^(2) ("journey").
SCORES_2 = [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]
NAIVE_WEIGHTS_2 = [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]
SOFTMAX_WEIGHTS_2 = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]
CONTEXT_VEC_2 = [0.4419, 0.6515, 0.5683]

# Printed in section 3.3.2 for every query at once.
ALL_SCORES = [
    [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
    [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
    [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
    [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
    [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
]
ALL_WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]
ALL_CONTEXT_VECS = [
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
]


# --- parity with the chapter's printouts -------------------------------------


def test_scores_for_query_2(inputs: torch.Tensor) -> None:
    scores = dot_scores(inputs[1], inputs)
    assert_printed(scores, SCORES_2)
    # The first score is the elementwise product summed, as the chapter shows.
    assert scores[0] == pytest.approx((inputs[0] * inputs[1]).sum().item())


def test_naive_normalisation_for_query_2(inputs: torch.Tensor) -> None:
    scores = dot_scores(inputs[1], inputs)
    weights = scores / scores.sum()
    assert_printed(weights, NAIVE_WEIGHTS_2)
    assert weights.sum().item() == pytest.approx(1.0, abs=1e-6)


def test_softmax_weights_for_query_2(inputs: torch.Tensor) -> None:
    scores = dot_scores(inputs[1], inputs)
    naive = softmax_naive(scores)
    assert_printed(naive, SOFTMAX_WEIGHTS_2)
    assert_printed(torch.softmax(scores, dim=0), SOFTMAX_WEIGHTS_2)
    torch.testing.assert_close(naive, torch.softmax(scores, dim=0))
    assert naive.sum().item() == pytest.approx(1.0, abs=1e-6)


def test_context_vector_2(inputs: torch.Tensor) -> None:
    weights = torch.softmax(dot_scores(inputs[1], inputs), dim=0)
    assert_printed(weighted_sum(weights, inputs), CONTEXT_VEC_2)


def test_all_scores_loop_and_matmul(inputs: torch.Tensor) -> None:
    looped = torch.stack([dot_scores(x_i, inputs) for x_i in inputs])
    assert_printed(looped, ALL_SCORES)
    assert_printed(inputs @ inputs.T, ALL_SCORES)


def test_all_weights_and_context_vectors(inputs: torch.Tensor) -> None:
    attn_weights, context_vecs = simple_self_attention(inputs)
    assert attn_weights.shape == (6, 6)
    assert context_vecs.shape == (6, 3)
    assert_printed(attn_weights, ALL_WEIGHTS)
    assert_printed(context_vecs, ALL_CONTEXT_VECS)
    torch.testing.assert_close(attn_weights.sum(dim=-1), torch.ones(6))
    # Row 2 is the z^(2) computed one step at a time.
    assert_printed(context_vecs[1], CONTEXT_VEC_2)


# --- softmax_naive ---------------------------------------------------------------


def test_softmax_naive_along_a_chosen_dim() -> None:
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    for dim in (0, 1, -1):
        torch.testing.assert_close(softmax_naive(x, dim=dim), torch.softmax(x, dim=dim))


def test_softmax_naive_overflows_where_torch_softmax_does_not() -> None:
    x = torch.tensor([1000.0, 1.0])
    assert torch.isnan(softmax_naive(x)[0])
    torch.testing.assert_close(torch.softmax(x, dim=0), torch.tensor([1.0, 0.0]))
