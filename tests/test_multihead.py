"""Tests for attention.multihead: multi-head attention (section 3.6).

Each class equals its formula in the records of ``tests/table.py`` (the
wrapper: its heads side by side; ``MultiHeadAttention``: the suite's reference),
so the two agree when the wrapper's heads get slices of the projections; the
chapter's printed outputs are in ``tests/test_chapter_numbers.py`` and the
doctests; what every causal module promises, in ``tests/test_contract.py``.
``MultiHeadAttention``'s parameter count is the doctests' (GPT-2 size) and the
contract's formula; that frozen parameters are not counted, the records'.
"""

from __future__ import annotations

import pytest
import torch

from attention import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_mask,
    count_parameters,
    parameter_breakdown,
)

D, HEAD_DIM, CONTEXT = 768, 64, 1024  # GPT-2 size, 12 heads


@pytest.mark.parametrize("cls", [MultiHeadAttentionWrapper, MultiHeadAttention])
def test_masks_are_buffers(cls: type) -> None:
    module = cls(4, 3 if cls is MultiHeadAttentionWrapper else 6, 5, 0.0, 2)
    masks = {name: buf for name, buf in module.named_buffers() if "mask" in name}
    assert len(masks) == (2 if cls is MultiHeadAttentionWrapper else 1)
    assert set(masks) <= set(module.state_dict())
    for mask in masks.values():
        torch.testing.assert_close(mask, causal_mask(5), rtol=0, atol=0)
    assert all("mask" not in name for name in parameter_breakdown(module))


# --- parameter counts (exercise 3.3) ----------------------------------------------


def test_the_wrappers_parameter_counts_at_gpt2_size() -> None:
    # The wrapper's d_out is one head's width, and each head has its own weights.
    one, twelve = (
        MultiHeadAttentionWrapper(D, HEAD_DIM, CONTEXT, 0.0, h, qkv_bias=True)
        for h in (1, 12)
    )
    assert count_parameters(one) == 3 * (D * HEAD_DIM + HEAD_DIM)
    assert count_parameters(twelve) == 12 * count_parameters(one)
    assert list(parameter_breakdown(twelve))[:2] == [
        "heads.0.W_query.weight",
        "heads.0.W_query.bias",
    ]
