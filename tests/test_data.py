"""Tests for attention.data: the running example of section 3.3.1."""

from __future__ import annotations

import torch

from attention import EXAMPLE_WORDS, example_inputs

# The chapter's embeddings, one row per word of "Your journey starts with one step".
CHAPTER_INPUTS = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]


def test_one_word_per_row() -> None:
    assert EXAMPLE_WORDS == ("Your", "journey", "starts", "with", "one", "step")
    assert len(EXAMPLE_WORDS) == example_inputs().shape[0]


def test_each_call_returns_a_fresh_tensor() -> None:
    first = example_inputs()
    first.mul_(0.0)  # vandalise the first copy in place
    second = example_inputs()
    assert second.data_ptr() != first.data_ptr()
    torch.testing.assert_close(second, torch.tensor(CHAPTER_INPUTS), rtol=0, atol=0)
