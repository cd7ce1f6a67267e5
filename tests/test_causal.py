"""Tests for attention.causal: masks, dropout and CausalAttention (section 3.5).

The chapter's printed matrices are in ``tests/test_chapter_numbers.py`` and the
classes' doctests; what every causal module promises, in ``tests/test_contract.py``.
"""

from __future__ import annotations

import pytest
import torch
from helpers import assert_causal_dropout, capture_dropout

from attention import (
    CausalAttention,
    MultiHeadAttention,
    causal_mask,
    padded_causal_mask,
)


@pytest.mark.parametrize("p", [0.1, 0.5])
@pytest.mark.parametrize("cls", [CausalAttention, MultiHeadAttention])
def test_dropout_acts_on_the_attention_weights(cls: type, p: float) -> None:
    torch.manual_seed(17)
    heads = () if cls is CausalAttention else (2,)
    module = cls(4, 4, 32, p, *heads).train()
    seen = capture_dropout(module)
    x = torch.randn(64, 32, 4)
    out = module(x)
    weights, dropped = seen["input"], seen["output"]
    assert weights.shape == (64, *heads, 32, 32)  # (b, [h,] T, T)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(weights.shape[:-1]))
    if cls is CausalAttention:  # the output is built from the dropped-out weights
        torch.testing.assert_close(out, dropped @ module.W_value(x))
    assert_causal_dropout(weights, dropped, p)


def test_a_mask_for_no_tokens_is_empty_and_a_negative_count_is_refused():
    # padded_causal_mask builds its triangle with causal_mask, for 0 tokens too.
    assert causal_mask(0).shape == (0, 0)
    assert padded_causal_mask(torch.ones(2, 0)).shape == (2, 0, 0)
    with pytest.raises(ValueError, match="num_tokens"):
        causal_mask(-1)
