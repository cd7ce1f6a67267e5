"""Tests for attention.multihead: multi-head attention (section 3.6)."""

from __future__ import annotations

import pytest
import torch
from checks import (
    assert_causal_dropout,
    assert_printed,
    capture_dropout,
)
from torch import nn

from attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_mask,
    count_parameters,
    parameter_breakdown,
)

# Printed in section 3.6.1 (seed 123, d_in=3, d_out=2 per head, 2 heads), per item.
WRAPPER_SEED_123 = [
    [-0.4519, 0.2216, 0.4772, 0.1063],
    [-0.5874, 0.0058, 0.5891, 0.3257],
    [-0.6300, -0.0632, 0.6202, 0.3860],
    [-0.5675, -0.0843, 0.5478, 0.3589],
    [-0.5526, -0.0981, 0.5321, 0.3428],
    [-0.5299, -0.1081, 0.5077, 0.3493],
]
MHA_CLASSES = [MultiHeadAttentionWrapper, MultiHeadAttention]
# (d_in, total output width, num_heads): one head, several, d_in != d_out.
SHAPES = [(3, 2, 1), (3, 2, 2), (4, 8, 4), (5, 6, 3), (8, 8, 8), (2, 12, 3)]


def make(
    cls: type,
    seed: int,
    d_in: int = 4,
    width: int = 6,
    num_heads: int = 2,
    context_length: int = 8,
    dropout: float = 0.0,
    qkv_bias: bool = False,
) -> nn.Module:
    """Build either class so that its output is ``width`` features wide."""
    torch.manual_seed(seed)
    d_out = width // num_heads if cls is MultiHeadAttentionWrapper else width
    return cls(d_in, d_out, context_length, dropout, num_heads, qkv_bias)


# --- parity with the chapter's printouts -------------------------------------


def test_wrapper_seed_123(batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    mha = MultiHeadAttentionWrapper(3, 2, context_length=6, dropout=0.0, num_heads=2)
    out = mha(batch)
    assert out.shape == (2, 6, 4)
    assert_printed(out, [WRAPPER_SEED_123, WRAPPER_SEED_123])


def test_gpt2_sized_parameter_count() -> None:
    gpt2 = MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)
    assert count_parameters(gpt2) == 2_360_064
    assert parameter_breakdown(gpt2) == {
        "W_query.weight": 768 * 768,
        "W_key.weight": 768 * 768,
        "W_value.weight": 768 * 768,
        "out_proj.weight": 768 * 768,
        "out_proj.bias": 768,
    }


# --- equivalences -----------------------------------------------------------------


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize(("d_in", "d_out", "num_heads"), SHAPES)
def test_multihead_equals_wrapper_of_weight_slices(
    d_in: int, d_out: int, num_heads: int, qkv_bias: bool
) -> None:
    # Give each wrapper head the rows of W_query, W_key and W_value that belong
    # to one head of MultiHeadAttention; then out_proj is the only difference.
    mha = make(MultiHeadAttention, 35, d_in, d_out, num_heads, qkv_bias=qkv_bias)
    wrapper = make(
        MultiHeadAttentionWrapper, 36, d_in, d_out, num_heads, qkv_bias=qkv_bias
    )
    hd = mha.head_dim
    state = mha.state_dict()
    for h, head in enumerate(wrapper.heads):
        head_state = {
            name: state[name][h * hd : (h + 1) * hd]
            for name in head.state_dict()
            if name != "mask"
        }
        missing, unexpected = head.load_state_dict(head_state, strict=False)
        assert missing == ["mask"] and unexpected == []
    x = torch.randn(2, 8, d_in)
    torch.testing.assert_close(mha(x), mha.out_proj(wrapper(x)))


# --- properties of the wrapper (MultiHeadAttention's are in test_contract.py) ---


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_multihead_dropout_acts_on_the_attention_weights(p: float) -> None:
    mha = make(MultiHeadAttention, 47, 4, 8, 2, context_length=32, dropout=p).train()
    seen = capture_dropout(mha)
    mha(torch.randn(32, 32, 4))
    weights, dropped = seen["input"], seen["output"]
    assert weights.shape == (32, 2, 32, 32)  # (b, h, T, T)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(32, 2, 32))
    assert_causal_dropout(weights, dropped, p)


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_masks_are_buffers_that_follow_to(cls: type) -> None:
    module = make(cls, 49, context_length=5)
    masks = {name: buf for name, buf in module.named_buffers() if "mask" in name}
    assert len(masks) == (2 if cls is MultiHeadAttentionWrapper else 1)
    assert set(masks) <= set(module.state_dict())
    for mask in masks.values():
        torch.testing.assert_close(mask, causal_mask(5), rtol=0, atol=0)
    assert all("mask" not in name for name in parameter_breakdown(module))
    # A mask kept as a plain attribute would stay on the CPU here.
    module.to("meta")
    assert all(buf.device.type == "meta" for _, buf in module.named_buffers())
    out = module(torch.empty(2, 5, 4, device="meta"))
    assert out.shape == (2, 5, 6) and out.device.type == "meta"


# --- parameter counts (exercise 3.3) ----------------------------------------------


def test_wrapper_counts_every_head() -> None:
    wrapper = make(MultiHeadAttentionWrapper, 55, 4, 6, 3, qkv_bias=True)
    one_head = CausalAttention(4, 2, context_length=8, dropout=0.0, qkv_bias=True)
    assert count_parameters(one_head) == 3 * (4 * 2 + 2)
    assert count_parameters(wrapper) == 3 * count_parameters(one_head)
    assert list(parameter_breakdown(wrapper))[:2] == [
        "heads.0.W_query.weight",
        "heads.0.W_query.bias",
    ]


def test_frozen_parameters_are_not_counted() -> None:
    mha = make(MultiHeadAttention, 56, 4, 6, 2)
    before = count_parameters(mha)
    mha.out_proj.requires_grad_(False)
    assert count_parameters(mha) == before - (6 * 6 + 6)
    assert "out_proj.weight" not in parameter_breakdown(mha)
