"""The contract of every class in ``attention.VARIANTS``, in the style of
PyTorch's ``OpInfo`` tests: one table, generic tests over it.

The registry is read when pytest collects this file (``pytest_generate_tests``),
so an entry added before collection, from a plugin or a ``conftest.py``, is
tested like the others. Every test id carries the registry name, e.g.
``test_causality[sdpa]``. ``tests/test_contract_catches.py`` checks that a
broken entry fails here and a sound one passes.

Each entry must:

- take ``(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``,
  with ``d_out`` the width of the whole output;
- compute what ``MultiHeadAttention`` computes given the same weights, which
  travel through ``mha_state_dict()`` / ``load_mha_state_dict()``;
- be causal, keep batch items apart, be deterministic in eval mode, apply
  unbiased dropout in training only, have correct gradients, survive a
  ``state_dict`` round trip and ``.to(dtype)``;
- reject every bad input ``MultiHeadAttention`` rejects with a ``ValueError``
  that names what was expected and what came.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from checks import (
    assert_batch_independent,
    assert_causal,
    assert_dropout_unbiased,
    assert_eval_is_deterministic,
    assert_gradcheck,
    assert_printed,
    assert_state_dict_round_trip,
)

import attention
from attention import MultiHeadAttention, copy_weights, count_parameters


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "variant" in metafunc.fixturenames:
        names = list(attention.VARIANTS)
        metafunc.parametrize("variant", names, ids=names)


@pytest.fixture
def cls(variant: str) -> type[torch.nn.Module]:
    return attention.VARIANTS[variant]


def make_pair(cls, d_in, d_out, context_length, num_heads, qkv_bias=False, seed=0):
    """A ``MultiHeadAttention`` and a ``cls`` with the same weights, in eval mode."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, d_out, context_length, 0.0, num_heads, qkv_bias)
    other = cls(d_in, d_out, context_length, 0.0, num_heads, qkv_bias)
    copy_weights(mha, other)
    return mha.eval(), other.eval()


# --- signature and layout ----------------------------------------------------------


def test_signature_is_the_chapters(cls) -> None:
    params = inspect.signature(cls).parameters
    assert list(params) == [
        "d_in",
        "d_out",
        "context_length",
        "dropout",
        "num_heads",
        "qkv_bias",
    ]
    assert params["qkv_bias"].default is False
    module = cls(6, 8, 5, 0.0, 2)
    sizes = (module.d_in, module.d_out, module.context_length, module.num_heads)
    assert sizes == (6, 8, 5, 2)
    assert module.head_dim == 4


@pytest.mark.parametrize("qkv_bias", [False, True], ids=["no-bias", "bias"])
def test_weight_layout_is_the_chapters(cls, qkv_bias: bool) -> None:
    mha = MultiHeadAttention(5, 6, 8, 0.0, 3, qkv_bias)
    state = cls(5, 6, 8, 0.0, 3, qkv_bias).mha_state_dict()
    expected = mha.mha_state_dict()
    assert list(state) == list(expected)  # names, in the same order
    assert {n: t.shape for n, t in state.items()} == {
        n: t.shape for n, t in expected.items()
    }
    assert count_parameters(cls(5, 6, 8, 0.0, 3, qkv_bias)) == count_parameters(mha)


def test_weights_survive_a_round_trip(cls) -> None:
    mha, other = make_pair(cls, 4, 6, 8, 3, qkv_bias=True)
    back = MultiHeadAttention(4, 6, 8, 0.0, 3, qkv_bias=True)
    copy_weights(other, back)
    for name, tensor in mha.mha_state_dict().items():
        assert torch.equal(back.mha_state_dict()[name], tensor), name


def test_load_refuses_a_state_of_another_layout(cls) -> None:
    module = cls(4, 6, 8, 0.0, 3)
    state = MultiHeadAttention(4, 6, 8, 0.0, 3, qkv_bias=True).mha_state_dict()
    with pytest.raises(
        ValueError, match=r"expected the weights .* got .*W_query\.bias"
    ):
        module.load_mha_state_dict(state)


@pytest.mark.parametrize(
    ("dst_args", "name"),
    [
        ((5, 6, 8, 0.0, 3), "d_in"),
        ((4, 8, 8, 0.0, 2), "d_out"),
        ((4, 6, 8, 0.0, 2), "num_heads"),
        ((4, 6, 8, 0.0, 3, True), "qkv_bias"),
    ],
    ids=["d_in", "d_out", "num_heads", "qkv_bias"],
)
def test_copy_weights_refuses_another_size(cls, dst_args, name: str) -> None:
    with pytest.raises(ValueError, match=rf"same {name}, got .* in src .* in dst"):
        copy_weights(MultiHeadAttention(4, 6, 8, 0.0, 3), cls(*dst_args))
    with pytest.raises(ValueError, match=rf"same {name}"):
        copy_weights(cls(4, 6, 8, 0.0, 3), MultiHeadAttention(*dst_args))


# --- the same function as MultiHeadAttention ----------------------------------------

# (batch, num_tokens, context_length, d_in, d_out, num_heads, qkv_bias)
CASES = [
    pytest.param(2, 6, 6, 3, 2, 2, False, id="book-example"),
    pytest.param(3, 4, 10, 6, 6, 1, False, id="one-head-short"),
    pytest.param(2, 5, 8, 7, 12, 3, True, id="d_in<d_out-bias-short"),
    pytest.param(2, 7, 12, 10, 4, 2, False, id="d_in>d_out-short"),
    pytest.param(1, 9, 9, 8, 16, 4, True, id="many-heads-bias"),
    pytest.param(2, 1, 4, 4, 4, 2, True, id="single-token"),
]
TOLERANCES = {
    torch.float64: {"atol": 1e-10, "rtol": 1e-10},
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
}


def _forward_backward(module, x, grad_out):
    x = x.clone().requires_grad_(True)
    module.zero_grad(set_to_none=True)
    out = module(x)
    out.backward(grad_out)
    grads = {  # every weight's gradient, read through the chapter's layout
        name: p.grad if p.grad is not None else torch.zeros_like(p)
        for name, p in module.named_parameters()
    }
    holder = type(module)(
        module.d_in, module.d_out, module.context_length, 0.0, module.num_heads,
        "W_query.bias" in module.mha_state_dict(),
    ).to(x.dtype)  # fmt: skip
    holder.load_state_dict({**module.state_dict(), **grads})
    return out.detach(), x.grad, holder.mha_state_dict()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize(("b", "t", "ctx", "d_in", "d_out", "h", "qkv_bias"), CASES)
def test_same_outputs_and_gradients_as_multihead_attention(
    cls, b, t, ctx, d_in, d_out, h, qkv_bias, dtype
) -> None:
    mha, other = make_pair(cls, d_in, d_out, ctx, h, qkv_bias)
    mha, other = mha.to(dtype), other.to(dtype)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(b, t, d_in, generator=gen, dtype=dtype)
    grad_out = torch.randn(b, t, d_out, generator=gen, dtype=dtype)
    out_ref, dx_ref, grads_ref = _forward_backward(mha, x, grad_out)
    out, dx, grads = _forward_backward(other, x, grad_out)
    tol = TOLERANCES[dtype]
    torch.testing.assert_close(out, out_ref, **tol)
    torch.testing.assert_close(dx, dx_ref, **tol)
    for name, grad_ref in grads_ref.items():
        torch.testing.assert_close(grads[name], grad_ref, **tol, msg=name)


def test_the_chapters_numbers(cls, batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
    other = cls(3, 2, context_length=6, dropout=0.0, num_heads=2)
    copy_weights(mha, other)
    assert_printed(other(batch)[0, :2], [[0.3190, 0.4858], [0.2943, 0.3897]])


# --- properties -----------------------------------------------------------------------


@pytest.mark.parametrize(("d_in", "d_out", "h"), [(6, 6, 3), (5, 8, 2), (8, 4, 1)])
def test_causality(cls, d_in: int, d_out: int, h: int) -> None:
    torch.manual_seed(3)
    module = cls(d_in, d_out, 10, 0.0, h).double().eval()
    assert_causal(module, torch.randn(2, 10, d_in, dtype=torch.float64))


def test_batch_independence(cls) -> None:
    torch.manual_seed(4)
    module = cls(4, 6, 8, 0.0, 2).double().eval()
    assert_batch_independent(module, torch.randn(4, 7, 4, dtype=torch.float64))


def test_a_shorter_sequence_gives_the_prefix_of_a_longer_one(cls) -> None:
    torch.manual_seed(5)
    module = cls(4, 6, 16, 0.0, 3).eval()
    x = torch.randn(1, 16, 4)
    torch.testing.assert_close(module(x[:, :9]), module(x)[:, :9])


def test_eval_is_deterministic_and_equals_no_dropout(cls) -> None:
    torch.manual_seed(6)
    with_dropout = cls(6, 6, 12, 0.5, 2)
    without = cls(6, 6, 12, 0.0, 2)
    copy_weights(with_dropout, without)
    x = torch.randn(2, 12, 6)
    assert_eval_is_deterministic(with_dropout, x)
    torch.testing.assert_close(with_dropout(x), without.eval()(x))
    torch.testing.assert_close(without.train()(x), without.eval()(x))  # p = 0


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_in_training_only_and_unbiased(cls, p: float) -> None:
    torch.manual_seed(7)
    module = cls(4, 4, 5, p, 2)
    assert_dropout_unbiased(module, torch.randn(1, 5, 4))


def test_gradcheck_in_float64(cls) -> None:
    torch.manual_seed(8)
    module = cls(3, 4, 4, 0.3, 2, qkv_bias=True).double().eval()
    assert_gradcheck(module, torch.randn(2, 4, 3, dtype=torch.float64))


def test_state_dict_round_trip(cls) -> None:
    def make(seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return cls(4, 6, 8, 0.0, 3, qkv_bias=True).eval()

    assert_state_dict_round_trip(make, torch.randn(2, 8, 4))


def test_to_dtype_converts_weights_and_output(cls) -> None:
    torch.manual_seed(9)
    module = cls(4, 6, 8, 0.0, 3).eval()
    x = torch.randn(2, 8, 4)
    expected = module(x)
    module.to(torch.float64)
    assert all(p.dtype == torch.float64 for p in module.parameters())
    out = module(x.double())
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.float(), expected, atol=1e-5, rtol=1e-5)
    assert module.to(torch.float32)(x).dtype == torch.float32


# --- the error contract ---------------------------------------------------------------

# Built as cls(4, 6, 8, 0.0, 3): d_in = 4, context_length = 8.
BAD_INPUTS = {
    "one-sequence": (lambda: torch.rand(6, 4), r"3 dimensions .* got 2 dimensions"),
    "four-dims": (lambda: torch.rand(1, 2, 6, 4), r"3 dimensions .* got 4 dimensions"),
    "width": (lambda: torch.rand(2, 6, 5), r"d_in=4 .* got 5"),
    "too-long": (lambda: torch.rand(2, 9, 4), r"9 tokens but context_length is 8"),
    "list": (lambda: [[[0.0] * 4]], r"torch\.Tensor, got list"),
    "token-ids": (
        lambda: torch.zeros(2, 6, 4, dtype=torch.long),
        r"floating-point .* got dtype torch\.int64",
    ),
    "float64-into-float32": (
        lambda: torch.rand(2, 6, 4, dtype=torch.float64),
        r"dtype torch\.float64 but the module's weights are torch\.float32",
    ),
}


@pytest.mark.parametrize("bad", list(BAD_INPUTS))
def test_bad_input_gives_a_value_error(cls, bad: str) -> None:
    make_input, message = BAD_INPUTS[bad]
    with pytest.raises(ValueError, match=message):  # the chapter's class ...
        MultiHeadAttention(4, 6, 8, 0.0, 3)(make_input())
    with pytest.raises(ValueError, match=message):  # ... and every variant
        cls(4, 6, 8, 0.0, 3)(make_input())


def test_float32_into_float64_weights_names_both_dtypes(cls) -> None:
    module = cls(4, 6, 8, 0.0, 3).double()
    message = r"dtype torch\.float32 but the module's weights are torch\.float64"
    with pytest.raises(ValueError, match=message):
        module(torch.rand(2, 6, 4))


BAD_ARGUMENTS = {
    "indivisible": ((4, 6, 8, 0.0, 4), r"divisible by num_heads, got d_out=6 .*=4"),
    "no-heads": ((4, 6, 8, 0.0, 0), r"num_heads must be a positive integer, got 0"),
    "dropout-1": ((4, 6, 8, 1.0, 3), r"dropout must be in \[0, 1\), got 1\.0"),
    "d_in-0": ((0, 6, 8, 0.0, 3), r"d_in must be a positive integer, got 0"),
    "d_out-0": ((4, 0, 8, 0.0, 3), r"d_out must be a positive integer, got 0"),
    "context-0": ((4, 6, 0, 0.0, 3), r"context_length must be a positive .* got 0"),
}


@pytest.mark.parametrize("bad", list(BAD_ARGUMENTS))
def test_bad_constructor_arguments_give_a_value_error(cls, bad: str) -> None:
    args, message = BAD_ARGUMENTS[bad]
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(*args)
    with pytest.raises(ValueError, match=message):
        cls(*args)
