"""Tests for attention.multihead: multi-head attention (section 3.6)."""

from __future__ import annotations

import math

import pytest
import torch
from dropout_checks import assert_causal_dropout, capture_dropout
from torch import nn

from attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_mask,
    count_parameters,
    parameter_breakdown,
)


def assert_printed(actual: torch.Tensor, printed: list) -> None:
    """Equal to a value the chapter prints with 4 decimals."""
    torch.testing.assert_close(
        actual.detach(), torch.tensor(printed, dtype=actual.dtype), rtol=0, atol=1e-4
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
# Printed in section 3.6.2 (seed 123, d_in=3, d_out=2 in total, 2 heads), per item.
MHA_SEED_123 = [
    [0.3190, 0.4858],
    [0.2943, 0.3897],
    [0.2856, 0.3593],
    [0.2693, 0.3873],
    [0.2639, 0.3928],
    [0.2575, 0.4028],
]
# The batched matrix product of section 3.6.2, (b, h, T, hd) = (1, 2, 3, 4).
A = [
    [
        [
            [0.2745, 0.6584, 0.2775, 0.8573],
            [0.8993, 0.0390, 0.9268, 0.7388],
            [0.7179, 0.7058, 0.9156, 0.4340],
        ],
        [
            [0.0772, 0.3565, 0.1479, 0.5331],
            [0.4066, 0.2318, 0.4545, 0.9737],
            [0.4606, 0.5159, 0.4220, 0.5786],
        ],
    ]
]
A_AT = [
    [
        [[1.3208, 1.1631, 1.2879], [1.1631, 2.2150, 1.8424], [1.2879, 1.8424, 2.0402]],
        [[0.4391, 0.7003, 0.5903], [0.7003, 1.3737, 1.0620], [0.5903, 1.0620, 0.9912]],
    ]
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


def manual_multihead(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """MultiHeadAttention computed one head at a time from row slices of its weights."""
    hd, num_tokens = mha.head_dim, x.shape[1]
    mask = causal_mask(num_tokens)
    heads = []
    for h in range(mha.num_heads):
        rows = slice(h * hd, (h + 1) * hd)

        def project(layer: nn.Linear, rows: slice = rows) -> torch.Tensor:
            bias = None if layer.bias is None else layer.bias[rows]
            # (b, T, d_in) -> (b, T, hd)
            return nn.functional.linear(x, layer.weight[rows], bias)

        q, k, v = project(mha.W_query), project(mha.W_key), project(mha.W_value)
        scores = q @ k.transpose(1, 2)  # (b, T, hd) @ (b, hd, T) -> (b, T, T)
        scores = scores.masked_fill(mask, -torch.inf)
        weights = torch.softmax(scores / hd**0.5, dim=-1)
        heads.append(weights @ v)  # (b, T, T) @ (b, T, hd) -> (b, T, hd)
    return mha.out_proj(torch.cat(heads, dim=-1))  # (b, T, d_out)


# --- parity with the chapter's printouts -------------------------------------


def test_wrapper_seed_123(batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    mha = MultiHeadAttentionWrapper(3, 2, context_length=6, dropout=0.0, num_heads=2)
    out = mha(batch)
    assert out.shape == (2, 6, 4)
    assert_printed(out, [WRAPPER_SEED_123, WRAPPER_SEED_123])


def test_multihead_attention_seed_123(batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
    out = mha(batch)
    assert out.shape == (2, 6, 2)
    assert_printed(out, [MHA_SEED_123, MHA_SEED_123])


def test_batched_matmul_example() -> None:
    a = torch.tensor(A)
    assert a.shape == (1, 2, 3, 4)
    batched = a @ a.transpose(2, 3)
    assert_printed(batched, A_AT)
    for h in range(2):
        head = a[0, h]
        torch.testing.assert_close(batched[0, h], head @ head.T)


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
def test_wrapper_with_one_head_is_causal_attention(qkv_bias: bool) -> None:
    torch.manual_seed(31)
    ca = CausalAttention(4, 3, context_length=8, dropout=0.0, qkv_bias=qkv_bias)
    wrapper = make(MultiHeadAttentionWrapper, 32, 4, 3, 1, qkv_bias=qkv_bias)
    x = torch.randn(2, 7, 4)
    assert not torch.allclose(wrapper(x), ca(x))
    wrapper.heads[0].load_state_dict(ca.state_dict())
    torch.testing.assert_close(wrapper(x), ca(x))


def test_wrapper_concatenates_its_heads_in_order() -> None:
    wrapper = make(MultiHeadAttentionWrapper, 33, 4, 6, 3)
    x = torch.randn(2, 8, 4)
    out = wrapper(x)
    for h, head in enumerate(wrapper.heads):
        torch.testing.assert_close(out[..., 2 * h : 2 * h + 2], head(x))


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize(("d_in", "d_out", "num_heads"), SHAPES)
def test_multihead_equals_head_by_head(
    d_in: int, d_out: int, num_heads: int, qkv_bias: bool
) -> None:
    mha = make(MultiHeadAttention, 34, d_in, d_out, num_heads, qkv_bias=qkv_bias)
    x = torch.randn(3, 8, d_in)
    torch.testing.assert_close(mha(x), manual_multihead(mha, x))


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


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_one_head_without_out_proj_is_causal_attention(qkv_bias: bool) -> None:
    mha = make(MultiHeadAttention, 37, 4, 3, 1, qkv_bias=qkv_bias)
    with torch.no_grad():
        mha.out_proj.weight.copy_(torch.eye(3))
        mha.out_proj.bias.zero_()
    ca = CausalAttention(4, 3, context_length=8, dropout=0.0, qkv_bias=qkv_bias)
    ca.load_state_dict(
        {k: v for k, v in mha.state_dict().items() if not k.startswith("out_proj")}
    )
    x = torch.randn(2, 8, 4)
    torch.testing.assert_close(mha(x), ca(x))


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize(("d_in", "d_out", "num_heads"), SHAPES)
def test_multihead_matches_torch_sdpa(
    d_in: int, d_out: int, num_heads: int, qkv_bias: bool
) -> None:
    mha = make(MultiHeadAttention, 38, d_in, d_out, num_heads, qkv_bias=qkv_bias)
    b, num_tokens, hd = 2, 6, d_out // num_heads
    x = torch.randn(b, num_tokens, d_in)

    def split(t: torch.Tensor) -> torch.Tensor:
        # (b, T, d_out) -> (b, T, h, hd) -> (b, h, T, hd)
        return t.view(b, num_tokens, num_heads, hd).transpose(1, 2)

    q, k, v = (split(layer(x)) for layer in (mha.W_query, mha.W_key, mha.W_value))
    heads = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = mha.out_proj(heads.transpose(1, 2).reshape(b, num_tokens, d_out))
    torch.testing.assert_close(mha(x), expected)


# --- properties of both classes -----------------------------------------------------


@pytest.mark.parametrize("cls", MHA_CLASSES)
@pytest.mark.parametrize(("d_in", "d_out", "num_heads"), SHAPES)
@pytest.mark.parametrize("num_tokens", [1, 5, 8])
def test_output_shape(
    cls: type, d_in: int, d_out: int, num_heads: int, num_tokens: int
) -> None:
    module = make(cls, 40, d_in, d_out, num_heads)
    out = module(torch.randn(3, num_tokens, d_in))
    assert out.shape == (3, num_tokens, d_out)


@pytest.mark.parametrize("cls", MHA_CLASSES)
@pytest.mark.parametrize(("d_in", "d_out", "num_heads"), [(4, 6, 2), (3, 2, 1)])
def test_future_tokens_do_not_change_the_past(
    cls: type, d_in: int, d_out: int, num_heads: int
) -> None:
    module = make(cls, 41, d_in, d_out, num_heads)
    x = torch.randn(2, 8, d_in)
    out = module(x)
    for t in range(8):
        changed = x.clone()
        changed[:, t:] = torch.randn(2, 8 - t, d_in)
        new = module(changed)
        torch.testing.assert_close(new[:, :t], out[:, :t])
        assert not torch.isclose(new[:, t:], out[:, t:]).all(dim=-1).any()


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_batch_items_do_not_interact(cls: type) -> None:
    module = make(cls, 42)
    x = torch.randn(4, 6, 4)
    alone = torch.cat([module(x[i : i + 1]) for i in range(4)])
    torch.testing.assert_close(module(x), alone)


@pytest.mark.parametrize("cls", MHA_CLASSES)
@pytest.mark.parametrize("num_tokens", [1, 3, 8])
def test_shorter_sequences(cls: type, num_tokens: int) -> None:
    module = make(cls, 43, context_length=8)
    x = torch.randn(2, 8, 4)
    torch.testing.assert_close(module(x[:, :num_tokens]), module(x)[:, :num_tokens])


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_eval_mode_is_deterministic_and_equals_no_dropout(cls: type) -> None:
    module = make(cls, 44, dropout=0.5).eval()
    no_dropout = make(cls, 45, dropout=0.0)
    no_dropout.load_state_dict(module.state_dict())
    x = torch.randn(3, 8, 4)
    first = module(x)
    torch.testing.assert_close(module(x), first, rtol=0, atol=0)
    torch.testing.assert_close(first, no_dropout(x))
    torch.testing.assert_close(first, no_dropout.train()(x))


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_train_mode_with_dropout_is_random(cls: type) -> None:
    module = make(cls, 46, dropout=0.5).train()
    x = torch.randn(3, 8, 4)
    assert not torch.allclose(module(x), module(x))
    assert all(m.p == 0.5 for m in module.modules() if isinstance(m, nn.Dropout))


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
def test_dropout_is_unbiased_on_average(cls: type) -> None:
    module = make(cls, 48, 3, 4, 2, context_length=6, dropout=0.5)
    x = torch.randn(6, 3)
    expected = module.eval()(x[None])[0]
    draws = module.train()(x.expand(10_000, 6, 3)).detach()
    error = (draws.mean(dim=0) - expected).abs()
    std_of_mean = draws.std(dim=0) / math.sqrt(draws.shape[0])
    assert (error <= 6 * std_of_mean + 1e-6).all()


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


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_state_dict_round_trip(cls: type) -> None:
    source = make(cls, 50, qkv_bias=True)
    target = make(cls, 51, qkv_bias=True)
    x = torch.randn(2, 8, 4)
    assert not torch.allclose(source(x), target(x))
    target.load_state_dict(source.state_dict())
    torch.testing.assert_close(target(x), source(x), rtol=0, atol=0)


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_float64_and_gradients_reach_every_parameter(cls: type) -> None:
    module = make(cls, 52, qkv_bias=True).double()
    x = torch.randn(2, 8, 4, dtype=torch.float64)
    out = module(x)
    assert out.dtype == torch.float64
    (out * torch.randn_like(out)).sum().backward()
    for name, param in module.named_parameters():
        assert param.grad is not None, name
        assert torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, name


@pytest.mark.parametrize("cls", MHA_CLASSES)
def test_gradcheck_in_eval_mode(cls: type) -> None:
    module = make(cls, 53, 3, 4, 2, context_length=4, dropout=0.3, qkv_bias=True)
    module = module.double().eval()
    names = [name for name, _ in module.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in module.parameters())
    x = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)

    def run(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        state = dict(zip(names, params, strict=True))
        return torch.func.functional_call(module, state, (x,))

    assert torch.autograd.gradcheck(run, (x, *params))


# --- parameter counts (exercise 3.3) ----------------------------------------------


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize(("d_in", "d_out", "num_heads"), SHAPES)
def test_count_parameters_formula(
    d_in: int, d_out: int, num_heads: int, qkv_bias: bool
) -> None:
    mha = make(MultiHeadAttention, 54, d_in, d_out, num_heads, qkv_bias=qkv_bias)
    qkv = 3 * (d_in * d_out + (d_out if qkv_bias else 0))
    assert count_parameters(mha) == qkv + d_out * d_out + d_out
    assert count_parameters(mha) == sum(p.numel() for p in mha.parameters())
    assert sum(parameter_breakdown(mha).values()) == count_parameters(mha)


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
