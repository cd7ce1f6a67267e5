"""What is particular to each efficient variant (attention.efficient).

What every variant shares, the same function as ``MultiHeadAttention``,
causality, dropout, gradients, errors, lives in ``tests/test_contract.py``,
which runs over the registry; that the same seed draws the chapter's weights,
in the classes' doctests (``MultiHeadAttention``'s numbers). No timing is
tested anywhere: speed is measured by ``python -m attention.bench``.
"""

from __future__ import annotations

import pytest
import torch

from attention import (
    FusedQKVMultiHeadAttention,
    MultiHeadAttention,
    SDPAMultiHeadAttention,
    TorchMultiHeadAttention,
    copy_weights,
)

FUSED = [FusedQKVMultiHeadAttention, SDPAMultiHeadAttention]


@pytest.mark.parametrize("cls", FUSED, ids=lambda c: c.__name__)
def test_fused_weight_is_query_key_value_stacked_in_that_order(cls) -> None:
    torch.manual_seed(7)
    mha = MultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias=True)
    fused = cls(3, 4, 6, 0.0, 2, qkv_bias=True)
    copy_weights(mha, fused)
    weights = [mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]
    assert torch.equal(fused.qkv.weight, torch.cat(weights))
    biases = [mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]
    assert torch.equal(fused.qkv.bias, torch.cat(biases))


@pytest.mark.parametrize("d_in", [6, 4], ids=["d_in==d_out", "d_in!=d_out"])
def test_torch_adapter_freezes_what_the_chapter_does_not_have(d_in: int) -> None:
    adapter = TorchMultiHeadAttention(d_in, 6, 8, 0.0, 3)
    attn = adapter.attn
    # qkv_bias=False: nn.MultiheadAttention's input bias is zero and frozen.
    assert torch.equal(attn.in_proj_bias, torch.zeros(18))
    assert not attn.in_proj_bias.requires_grad
    adapter(torch.randn(2, 8, d_in)).sum().backward()
    for name, param in adapter.named_parameters():
        assert (param.grad is not None) == param.requires_grad, name
    assert torch.equal(attn.in_proj_bias, torch.zeros(18))
