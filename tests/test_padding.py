"""Tests for attention.padding beyond its records in ``tests/table.py`` (a
padded batch equals the formula with the pads hidden, left and right): what
happens without the mask, and the gradients."""

from __future__ import annotations

import pytest
import torch

from attention import PaddedMultiHeadAttention, pad_sequences


def _module(qkv_bias=False):
    torch.manual_seed(0)
    return PaddedMultiHeadAttention(3, 4, 8, 0.0, 2, qkv_bias).eval()


def test_left_padding_without_the_mask_changes_every_real_token():
    # Without the mask each real token of a left-padded row attends to its pads.
    module = _module()
    sentences = [torch.randn(n, 3) for n in (6, 3)]
    x, attention_mask = pad_sequences(sentences, side="left", value=1.0)
    out = module(x)  # no attention_mask
    alone = module(sentences[1][None])[0]
    moved = (out[1, 3:] - alone).abs().amax(dim=-1)  # (3,)
    assert (moved > 1e-4).all(), f"left pads went unnoticed: {moved}"


def test_right_padding_needs_no_mask_for_the_real_tokens():
    # Under the causal mask, right pads lie in every real token's future.
    module = _module()
    sentences = [torch.randn(n, 3) for n in (6, 3)]
    x, attention_mask = pad_sequences(sentences, side="right", value=1.0)
    torch.testing.assert_close(module(x)[1, :3], module(sentences[1][None])[0])
    torch.testing.assert_close(module(x)[1, :3], module(x, attention_mask)[1, :3])


@pytest.mark.parametrize("side", ["left", "right"])
def test_gradients_are_finite_and_pads_get_none(side):
    module = _module(qkv_bias=True)
    x, attention_mask = pad_sequences([torch.randn(n, 3) for n in (5, 2)], side=side)
    x.requires_grad_(True)
    out = module(x, attention_mask)
    out[attention_mask.bool()].sum().backward()  # a loss on real tokens only
    for name, p in module.named_parameters():
        assert torch.isfinite(p.grad).all(), name
    assert torch.isfinite(x.grad).all()
    # Nothing a real token computes depends on a pad.
    assert (x.grad[~attention_mask.bool()] == 0).all()


def test_a_trailing_pad_attends_to_every_real_token_and_no_pad():
    # Under the causal and padding masks the last position of a right-padded
    # row is a query over the row's real tokens: a classifier reading it
    # gets gradients for every real token, none for the pads before it.
    module = _module()
    x, attention_mask = pad_sequences(
        [torch.randn(n, 3) for n in (6, 3)], side="right", value=1.0
    )
    x.requires_grad_(True)
    module(x, attention_mask)[1, -1].sum().backward()
    reached = x.grad[1].abs().sum(dim=-1)  # (T,)
    assert (reached[:3] > 0).all(), reached  # the real tokens
    assert (reached[3:5] == 0).all(), reached  # the pads before it
    # Its own query counts: the pad at -1 is reached.
    assert reached[5] > 0
