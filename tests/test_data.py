"""Tests for attention.data: the running example of section 3.3.1."""

from __future__ import annotations

import torch
from table import EXAMPLE  # the chapter's embeddings, one row per word

from attention import EXAMPLE_WORDS, example_inputs


def test_one_word_per_row() -> None:
    assert EXAMPLE_WORDS == ("Your", "journey", "starts", "with", "one", "step")
    assert len(EXAMPLE_WORDS) == example_inputs().shape[0]


def test_each_call_returns_a_fresh_tensor() -> None:
    first = example_inputs()
    first.mul_(0.0)  # vandalise the first copy in place
    second = example_inputs()
    assert second.data_ptr() != first.data_ptr()
    torch.testing.assert_close(second, torch.tensor(EXAMPLE), rtol=0, atol=0)
