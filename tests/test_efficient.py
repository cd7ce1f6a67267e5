"""Tests for attention.efficient: the fast variants of MultiHeadAttention.

Every variant gets the chapter's weights with copy_weights() and must then
compute the same outputs and the same gradients (of the input and of every
weight, mapped back to the chapter's layout). No timing is tested here:
speed is measured by ``python -m attention.bench``.
"""

from __future__ import annotations

import copy

import pytest
import torch

from attention import (
    FusedQKVMultiHeadAttention,
    MultiHeadAttention,
    SDPAMultiHeadAttention,
    TorchMultiHeadAttention,
    copy_weights,
    count_parameters,
    example_inputs,
    mha_state_dict,
)

VARIANTS = [FusedQKVMultiHeadAttention, SDPAMultiHeadAttention, TorchMultiHeadAttention]
ALL_CLASSES = [MultiHeadAttention, *VARIANTS]

# (batch, num_tokens, context_length, d_in, d_out, num_heads, qkv_bias)
SHAPES = [
    pytest.param(2, 6, 6, 3, 2, 2, False, id="book-example"),
    pytest.param(3, 4, 10, 6, 6, 1, False, id="one-head-short-sequence"),
    pytest.param(2, 5, 8, 7, 12, 3, True, id="d_in<d_out-bias-short"),
    pytest.param(2, 7, 12, 10, 4, 2, False, id="d_in>d_out-short"),
    pytest.param(1, 9, 9, 8, 16, 4, True, id="many-heads-bias"),
    pytest.param(2, 1, 4, 4, 4, 2, True, id="single-token"),
]
TOLERANCES = {
    torch.float64: {"atol": 1e-10, "rtol": 1e-10},
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
}


def _pair(cls, d_in, d_out, context_length, num_heads, qkv_bias, dtype, seed=0):
    """A MultiHeadAttention and a `cls` with the same weights, in eval mode."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, d_out, context_length, 0.0, num_heads, qkv_bias)
    variant = cls(d_in, d_out, context_length, 0.0, num_heads, qkv_bias)
    mha, variant = mha.to(dtype).eval(), variant.to(dtype).eval()
    copy_weights(mha, variant)
    return mha, variant


def _grads_in_mha_layout(module):
    """The gradients of `module`'s weights, in MultiHeadAttention's layout."""
    holder = copy.deepcopy(module)
    with torch.no_grad():
        for p_holder, p in zip(holder.parameters(), module.parameters(), strict=True):
            if p.grad is not None:
                p_holder.copy_(p.grad)
    return mha_state_dict(holder)


def _forward_backward(module, x, grad_out):
    x = x.clone().requires_grad_(True)
    module.zero_grad(set_to_none=True)
    out = module(x)
    out.backward(grad_out)
    return out.detach(), x.grad, _grads_in_mha_layout(module)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize(("b", "t", "ctx", "d_in", "d_out", "h", "qkv_bias"), SHAPES)
@pytest.mark.parametrize("cls", VARIANTS, ids=lambda c: c.__name__)
def test_matches_multihead_attention_forward_and_backward(
    cls, b, t, ctx, d_in, d_out, h, qkv_bias, dtype
):
    mha, variant = _pair(cls, d_in, d_out, ctx, h, qkv_bias, dtype)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(b, t, d_in, generator=g, dtype=dtype)
    grad_out = torch.randn(b, t, d_out, generator=g, dtype=dtype)

    out_ref, dx_ref, grads_ref = _forward_backward(mha, x, grad_out)
    out, dx, grads = _forward_backward(variant, x, grad_out)

    tol = TOLERANCES[dtype]
    torch.testing.assert_close(out, out_ref, **tol)
    torch.testing.assert_close(dx, dx_ref, **tol)
    assert grads.keys() == grads_ref.keys()
    for name, grad_ref in grads_ref.items():
        torch.testing.assert_close(grads[name], grad_ref, **tol, msg=name)


@pytest.mark.parametrize("cls", VARIANTS, ids=lambda c: c.__name__)
def test_every_trainable_weight_gets_a_gradient_and_frozen_ones_stay_frozen(cls):
    _, variant = _pair(cls, 5, 6, 8, 2, False, torch.float64)
    variant(torch.randn(2, 8, 5, dtype=torch.float64)).sum().backward()
    for name, p in variant.named_parameters():
        if p.requires_grad:
            assert p.grad is not None, name
        else:
            assert p.grad is None, name


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("d_in", "d_out", "num_heads"), [(6, 6, 3), (5, 8, 2), (8, 4, 1)]
)
def test_future_tokens_do_not_change_past_outputs(cls, d_in, d_out, num_heads):
    torch.manual_seed(3)
    module = cls(d_in, d_out, 10, 0.0, num_heads).double().eval()
    x = torch.randn(2, 10, d_in, dtype=torch.float64)
    changed = x.clone()
    changed[:, 6:] = torch.randn(2, 4, d_in, dtype=torch.float64)
    torch.testing.assert_close(module(changed)[:, :6], module(x)[:, :6])
    assert not torch.allclose(module(changed)[:, 6:], module(x)[:, 6:])


@pytest.mark.parametrize("cls", VARIANTS, ids=lambda c: c.__name__)
def test_eval_is_deterministic_and_dropout_acts_only_in_training(cls):
    torch.manual_seed(4)
    module = cls(6, 6, 12, 0.5, 2)
    x = torch.randn(2, 12, 6)
    module.eval()
    first, second = module(x), module(x)
    assert torch.equal(first, second)
    module.train()
    assert not torch.allclose(module(x), first)


@pytest.mark.parametrize("cls", VARIANTS, ids=lambda c: c.__name__)
def test_a_shorter_sequence_gives_the_prefix_of_a_longer_one(cls):
    torch.manual_seed(5)
    module = cls(4, 6, 16, 0.0, 3).eval()
    x = torch.randn(1, 16, 4)
    torch.testing.assert_close(module(x[:, :9]), module(x)[:, :9])


@pytest.mark.parametrize("cls", [FusedQKVMultiHeadAttention, SDPAMultiHeadAttention])
def test_same_seed_draws_the_chapter_weights(cls):
    torch.manual_seed(123)
    mha = MultiHeadAttention(5, 6, 7, 0.0, 3)
    torch.manual_seed(123)
    variant = cls(5, 6, 7, 0.0, 3)
    for name, weight in mha_state_dict(mha).items():
        assert torch.equal(mha_state_dict(variant)[name], weight), name


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("d_in", [6, 4])
def test_weights_survive_a_round_trip_through_every_variant(d_in, qkv_bias):
    torch.manual_seed(6)
    modules = [cls(d_in, 6, 8, 0.0, 3, qkv_bias) for cls in ALL_CLASSES]
    original = {n: t.clone() for n, t in mha_state_dict(modules[0]).items()}
    for src, dst in zip(modules, modules[1:] + modules[:1], strict=True):
        copy_weights(src, dst)
    back = mha_state_dict(modules[0])
    assert back.keys() == original.keys()
    for name, tensor in original.items():
        assert torch.equal(back[name], tensor), name


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("d_in", [768, 300])
def test_all_variants_count_the_same_trainable_parameters(d_in, qkv_bias):
    counts = {
        cls.__name__: count_parameters(cls(d_in, 768, 16, 0.0, 12, qkv_bias))
        for cls in ALL_CLASSES
    }
    assert len(set(counts.values())) == 1, counts


def test_fused_weight_is_the_three_matrices_stacked():
    torch.manual_seed(7)
    mha, fused = _pair(FusedQKVMultiHeadAttention, 3, 4, 6, 2, True, torch.float32)
    expected = torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight])
    assert torch.equal(fused.qkv.weight, expected)
    expected_bias = torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias])
    assert torch.equal(fused.qkv.bias, expected_bias)


def test_book_example_gives_the_chapter_numbers_in_every_variant():
    batch = torch.stack((example_inputs(), example_inputs()))
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
    expected = torch.tensor([[0.3190, 0.4858], [0.2943, 0.3897]])
    for cls in VARIANTS:
        variant = cls(3, 2, context_length=6, dropout=0.0, num_heads=2)
        copy_weights(mha, variant)
        torch.testing.assert_close(variant(batch)[0, :2], expected, atol=1e-4, rtol=0)


def test_forgetting_to_move_the_heads_mixes_them_up():
    """The pitfall: unbinding q/k/v from (b, T, 3, h, hd) and multiplying right away."""
    torch.manual_seed(8)
    fused = FusedQKVMultiHeadAttention(8, 8, 5, 0.0, 2).eval()
    x = torch.randn(1, 5, 8)
    q, k, _ = fused.qkv(x).view(1, 5, 3, 2, 4).unbind(2)  # 3 x (b, T, h, hd)
    wrong = q @ k.transpose(-2, -1)  # (b, T, h, hd) @ (b, T, hd, h) -> (b, T, h, h)
    right = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-2, -1)
    assert wrong.shape == (1, 5, 2, 2)  # heads x heads, per token: meaningless
    assert right.shape == (1, 2, 5, 5)  # tokens x tokens, per head


@pytest.mark.parametrize("cls", VARIANTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (torch.rand(6, 4), "3 dimensions"),
        (torch.rand(2, 6, 5), "d_in=4"),
        (torch.rand(2, 9, 4), "context_length is 8"),
        ([[0.0] * 4], "torch.Tensor"),
    ],
)
def test_bad_input_raises_value_error(cls, bad, match):
    module = cls(4, 6, 8, 0.0, 3)
    with pytest.raises(ValueError, match=match):
        module(bad)


@pytest.mark.parametrize("cls", VARIANTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((4, 6, 8, 0.0, 4), "divisible by num_heads"),
        ((4, 6, 8, 0.0, 0), "num_heads"),
        ((4, 6, 8, 1.0, 3), "dropout"),
        ((0, 6, 8, 0.0, 3), "d_in"),
        ((4, 6, 0, 0.0, 3), "context_length"),
    ],
)
def test_bad_constructor_arguments_raise_value_error(cls, args, match):
    with pytest.raises(ValueError, match=match):
        cls(*args)


@pytest.mark.parametrize(
    ("dst_args", "match"),
    [
        ((5, 6, 8, 0.0, 3), "d_in"),
        ((4, 8, 8, 0.0, 2), "d_out"),
        ((4, 6, 8, 0.0, 2), "num_heads"),
        ((4, 6, 8, 0.0, 3, True), "qkv_bias"),
    ],
)
@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_copy_weights_refuses_modules_of_another_size(cls, dst_args, match):
    src = MultiHeadAttention(4, 6, 8, 0.0, 3)
    with pytest.raises(ValueError, match=match):
        copy_weights(src, cls(*dst_args))


def test_copy_weights_refuses_other_modules():
    with pytest.raises(ValueError, match="MultiHeadAttention"):
        copy_weights(torch.nn.Linear(4, 6), SDPAMultiHeadAttention(4, 6, 8, 0.0, 3))
