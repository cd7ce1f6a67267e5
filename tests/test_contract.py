"""The contract of every class in ``attention.VARIANTS``, in the style of
PyTorch's ``OpInfo`` tests: one table, generic tests over it.

The registry is read when pytest collects this file (``pytest_generate_tests``),
so an entry added before collection, from a plugin or a ``conftest.py``, is
tested like the others. Every test id carries the registry name, e.g.
``test_causality[sdpa]``. ``attention.variants.variant_info`` says, per
entry, which dtypes and devices to test, the tolerances, and whether the
parameter count is the chapter's. ``tests/test_contract_catches.py`` checks
that a broken entry fails here and a sound one passes;
``tests/test_outside_variant.py`` that a class written outside the package
passes.

Each entry must (``attention.contract`` says it in code):

- take ``(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``,
  with ``d_out`` the width of the whole output;
- compute causal multi-head attention: equal, in outputs and gradients, to
  ``reference_multihead`` of ``tests/checks.py``, a plain-tensor version
  written apart from the package, given the same weights in the chapter's
  layout (so the chapter's class is not compared with itself);
- be causal, keep batch items apart, be deterministic in eval mode, apply
  unbiased dropout in training only, have correct gradients, survive a
  ``state_dict`` round trip and ``.to(dtype)``, run on the ``meta`` device;
- reject bad input with a ``ValueError`` whose message names the argument,
  what was expected and what came, in the class's own words.
"""

from __future__ import annotations

import copy
import inspect

import pytest
import torch
from checks import (
    assert_batch_independent,
    assert_causal,
    assert_dropout_unbiased,
    assert_eval_is_deterministic,
    assert_gradcheck,
    assert_message_names,
    assert_printed,
    assert_state_dict_round_trip,
    reference_multihead,
)

import attention
from attention import MultiHeadAttention, copy_weights, count_parameters
from attention.contract import AttentionVariant, load_mha_state_dict, mha_state_dict
from attention.variants import variant_info

CHAPTER_ARGS = ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"]


def _devices(name: str) -> list[str]:
    """The entry's devices that this machine has, the CPU left to the others."""
    present = {"meta"} | ({"cuda"} if torch.cuda.is_available() else set())
    return [d for d in variant_info(name).devices if d in present]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    names = list(attention.VARIANTS)
    fixtures = metafunc.fixturenames
    if "variant" not in fixtures:
        return
    for axis, values in (("dtype", _dtypes), ("device", _devices)):
        if axis in fixtures:  # one case per entry and value the entry supports
            pairs = [(n, v) for n in names for v in values(n)]
            ids = [f"{n}-{str(v).removeprefix('torch.')}" for n, v in pairs]
            metafunc.parametrize(("variant", axis), pairs, ids=ids)
            return
    metafunc.parametrize("variant", names, ids=names)


def _dtypes(name: str) -> list[torch.dtype]:
    return list(variant_info(name).dtypes)


@pytest.fixture
def cls(variant: str) -> type[torch.nn.Module]:
    return attention.VARIANTS[variant]


@pytest.fixture
def make(variant: str, cls):
    """``make(*chapter_args, seed=0)``: a seeded module of the entry."""
    info = variant_info(variant)

    def build(*args, seed: int = 0) -> torch.nn.Module:
        torch.manual_seed(seed)
        return info.build(cls, *args)

    return build


# --- signature and layout ----------------------------------------------------------


def test_signature_is_the_chapters(cls, make, variant) -> None:
    params = inspect.signature(cls).parameters
    assert list(params)[:6] == CHAPTER_ARGS
    assert params["qkv_bias"].default is False
    extra = set(list(params)[6:]) - set(variant_info(variant).kwargs)
    assert all(params[n].default is not inspect.Parameter.empty for n in extra), (
        f"parameters after the chapter's six need a default or VariantInfo.kwargs: "
        f"{sorted(extra)}"
    )
    module = make(6, 8, 5, 0.0, 2)
    assert isinstance(module, AttentionVariant)
    sizes = (module.d_in, module.d_out, module.context_length, module.num_heads)
    assert sizes == (6, 8, 5, 2)
    assert module.head_dim == 4


@pytest.mark.parametrize("qkv_bias", [False, True], ids=["no-bias", "bias"])
def test_weight_layout_is_the_chapters(make, variant, qkv_bias: bool) -> None:
    d_in, d_out = 5, 6
    module = make(d_in, d_out, 8, 0.0, 3, qkv_bias)
    state = mha_state_dict(module)
    qkv = ["W_query", "W_key", "W_value"]
    parts = ["weight", "bias"] if qkv_bias else ["weight"]
    names = [f"{n}.{p}" for n in qkv for p in parts] + [
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert list(state) == names  # the chapter's names, in its order
    shapes = {n: (d_out, d_in) if n.endswith("weight") else (d_out,) for n in names}
    shapes["out_proj.weight"] = (d_out, d_out)
    assert {n: tuple(t.shape) for n, t in state.items()} == shapes
    if variant_info(variant).same_parameter_count:
        chapter = (
            3 * d_in * d_out + d_out * d_out + d_out + (3 * d_out if qkv_bias else 0)
        )
        assert count_parameters(module) == chapter


def test_weights_survive_a_round_trip_through_the_chapters_class(make) -> None:
    source, back = (
        make(4, 6, 8, 0.0, 3, True, seed=1),
        make(4, 6, 8, 0.0, 3, True, seed=2),
    )
    middle = MultiHeadAttention(4, 6, 8, 0.0, 3, qkv_bias=True)
    copy_weights(source, middle)
    copy_weights(middle, back)
    for name, tensor in mha_state_dict(source).items():
        assert torch.equal(mha_state_dict(back)[name], tensor), name


def test_load_refuses_a_state_of_another_layout(make) -> None:
    state = mha_state_dict(MultiHeadAttention(4, 6, 8, 0.0, 3, qkv_bias=True))
    with pytest.raises(ValueError) as error:
        load_mha_state_dict(make(4, 6, 8, 0.0, 3), state)
    assert_message_names(error.value, ("W_query.bias",))


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
def test_copy_weights_refuses_another_size(make, dst_args, name: str) -> None:
    with pytest.raises(ValueError, match=rf"same {name}, got .* in src .* in dst"):
        copy_weights(MultiHeadAttention(4, 6, 8, 0.0, 3), make(*dst_args))
    with pytest.raises(ValueError, match=rf"same {name}"):
        copy_weights(make(4, 6, 8, 0.0, 3), MultiHeadAttention(*dst_args))


# --- the function: the plain-tensor reference ---------------------------------------

# (batch, num_tokens, context_length, d_in, d_out, num_heads, qkv_bias)
CASES = [
    pytest.param(2, 6, 6, 3, 2, 2, False, id="book-example"),
    pytest.param(3, 4, 10, 6, 6, 1, False, id="one-head-short"),
    pytest.param(2, 5, 8, 7, 12, 3, True, id="d_in<d_out-bias-short"),
    pytest.param(2, 7, 12, 10, 4, 2, False, id="d_in>d_out-short"),
    pytest.param(1, 9, 9, 8, 16, 4, True, id="many-heads-bias"),
    pytest.param(2, 1, 4, 4, 4, 2, True, id="single-token"),
]


def weight_grads(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The gradients of ``module``'s weights, in the chapter's layout."""
    holder = copy.deepcopy(module)  # each gradient where its weight was ...
    with torch.no_grad():
        for p_holder, p in zip(holder.parameters(), module.parameters(), strict=True):
            p_holder.copy_(p.grad if p.grad is not None else torch.zeros_like(p))
    return mha_state_dict(holder)  # ... read like the weights


@pytest.mark.parametrize(("b", "t", "ctx", "d_in", "d_out", "h", "qkv_bias"), CASES)
def test_same_outputs_and_gradients_as_the_reference(
    make, variant, dtype, b, t, ctx, d_in, d_out, h, qkv_bias
) -> None:
    module = make(d_in, d_out, ctx, 0.0, h, qkv_bias).to(dtype).eval()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(b, t, d_in, generator=gen, dtype=dtype)
    grad_out = torch.randn(b, t, d_out, generator=gen, dtype=dtype)

    x_module = x.clone().requires_grad_(True)
    out = module(x_module)
    out.backward(grad_out)

    state = {
        n: w.clone().requires_grad_(True) for n, w in mha_state_dict(module).items()
    }
    x_ref = x.clone().requires_grad_(True)
    out_ref = reference_multihead(state, x_ref, h)
    out_ref.backward(grad_out)

    atol, rtol = variant_info(variant).tolerances[dtype]
    torch.testing.assert_close(out, out_ref, atol=atol, rtol=rtol)
    torch.testing.assert_close(x_module.grad, x_ref.grad, atol=atol, rtol=rtol)
    grads = weight_grads(module)
    for name, weight in state.items():
        torch.testing.assert_close(
            grads[name], weight.grad, atol=atol, rtol=rtol, msg=name
        )


def test_the_reference_prints_the_chapters_numbers(batch: torch.Tensor) -> None:
    """The reference itself is checked against the book, not against a class."""
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
    out = reference_multihead(mha_state_dict(mha), batch, num_heads=2)
    assert_printed(out[0, :2], [[0.3190, 0.4858], [0.2943, 0.3897]])


def test_the_chapters_numbers(make, batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, context_length=6, dropout=0.0, num_heads=2)
    other = make(3, 2, 6, 0.0, 2)
    copy_weights(mha, other)
    assert_printed(other(batch)[0, :2], [[0.3190, 0.4858], [0.2943, 0.3897]])


# --- properties -----------------------------------------------------------------------


@pytest.mark.parametrize(("d_in", "d_out", "h"), [(6, 6, 3), (5, 8, 2), (8, 4, 1)])
def test_causality(make, d_in: int, d_out: int, h: int) -> None:
    module = make(d_in, d_out, 10, 0.0, h, seed=3).double().eval()
    assert_causal(module, torch.randn(2, 10, d_in, dtype=torch.float64))


def test_batch_independence(make) -> None:
    module = make(4, 6, 8, 0.0, 2, seed=4).double().eval()
    assert_batch_independent(module, torch.randn(4, 7, 4, dtype=torch.float64))


def test_a_shorter_sequence_gives_the_prefix_of_a_longer_one(make) -> None:
    module = make(4, 6, 16, 0.0, 3, seed=5).eval()
    x = torch.randn(1, 16, 4)
    torch.testing.assert_close(module(x[:, :9]), module(x)[:, :9])


def test_eval_is_deterministic_and_equals_no_dropout(make) -> None:
    with_dropout = make(6, 6, 12, 0.5, 2, seed=6)
    without = make(6, 6, 12, 0.0, 2)
    copy_weights(with_dropout, without)
    x = torch.randn(2, 12, 6)
    assert_eval_is_deterministic(with_dropout, x)
    torch.testing.assert_close(with_dropout(x), without.eval()(x))
    torch.testing.assert_close(without.train()(x), without.eval()(x))  # p = 0


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_in_training_only_and_unbiased(make, p: float) -> None:
    module = make(4, 4, 5, p, 2, seed=7)
    assert_dropout_unbiased(module, torch.randn(1, 5, 4))


def test_gradcheck_in_float64(make) -> None:
    module = make(3, 4, 4, 0.3, 2, True, seed=8).double().eval()
    assert_gradcheck(module, torch.randn(2, 4, 3, dtype=torch.float64))


def test_state_dict_round_trip(make) -> None:
    assert_state_dict_round_trip(
        lambda seed: make(4, 6, 8, 0.0, 3, True, seed=seed).eval(), torch.randn(2, 8, 4)
    )


def test_to_dtype_converts_weights_and_output(make) -> None:
    module = make(4, 6, 8, 0.0, 3, seed=9).eval()
    x = torch.randn(2, 8, 4)
    expected = module(x)
    module.to(torch.float64)
    assert all(p.dtype == torch.float64 for p in module.parameters())
    out = module(x.double())
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.float(), expected, atol=1e-5, rtol=1e-5)
    assert module.to(torch.float32)(x).dtype == torch.float32


def test_runs_where_its_input_is(variant, cls, device: str) -> None:
    """Built on ``device`` and fed there, the output stays there (``meta``:
    shapes only, no values), in every dtype of the entry."""
    for dtype in variant_info(variant).dtypes:
        with torch.device(device):
            module = variant_info(variant).build(cls, 4, 6, 8, 0.0, 3).to(dtype)
        x = torch.randn(2, 8, 4, device=device, dtype=dtype)
        out = module(x)
        assert out.device.type == device
        assert (out.shape, out.dtype) == ((2, 8, 6), dtype)


# --- the error contract ---------------------------------------------------------------

# Built as (4, 6, 8, 0.0, 3): d_in = 4, context_length = 8. Each entry: the bad
# input, then what the message must name, one of each tuple's spellings.
BAD_INPUTS = {
    "one-sequence": (lambda: torch.rand(6, 4), [("3",), ("2", "(6, 4)")]),
    "four-dims": (lambda: torch.rand(1, 2, 6, 4), [("3",), ("4", "(1, 2, 6, 4)")]),
    "width": (lambda: torch.rand(2, 6, 5), [("d_in", "features"), ("4",), ("5",)]),
    "too-long": (
        lambda: torch.rand(2, 9, 4),
        [("context_length", "context"), ("8",), ("9",)],
    ),
    "list": (lambda: [[[0.0] * 4]], [("Tensor",), ("list",)]),
    "token-ids": (
        lambda: torch.zeros(2, 6, 4, dtype=torch.long),
        [("float", "floating-point", "float32"), ("int64", "long")],
    ),
    "float64-into-float32": (
        lambda: torch.rand(2, 6, 4, dtype=torch.float64),
        [("float64",), ("float32",)],
    ),
}


@pytest.mark.parametrize("bad", list(BAD_INPUTS))
def test_bad_input_gives_a_value_error_that_names_it(make, bad: str) -> None:
    make_input, names = BAD_INPUTS[bad]
    with pytest.raises(ValueError) as error:
        make(4, 6, 8, 0.0, 3)(make_input())
    assert_message_names(error.value, *names)


def test_float32_into_float64_weights_names_both_dtypes(make) -> None:
    module = make(4, 6, 8, 0.0, 3).double()
    with pytest.raises(ValueError) as error:
        module(torch.rand(2, 6, 4))
    assert_message_names(error.value, ("float32",), ("float64",))


BAD_ARGUMENTS = {
    "indivisible": ((4, 6, 8, 0.0, 4), [("d_out",), ("num_heads",), ("6",), ("4",)]),
    "no-heads": ((4, 6, 8, 0.0, 0), [("num_heads",), ("0",)]),
    "dropout-1": ((4, 6, 8, 1.0, 3), [("dropout",), ("1.0", "1")]),
    "d_in-0": ((0, 6, 8, 0.0, 3), [("d_in",), ("0",)]),
    "d_out-0": ((4, 0, 8, 0.0, 3), [("d_out",), ("0",)]),
    "context-0": ((4, 6, 0, 0.0, 3), [("context_length",), ("0",)]),
}


@pytest.mark.parametrize("bad", list(BAD_ARGUMENTS))
def test_bad_constructor_arguments_give_a_value_error_that_names_them(
    make, bad: str
) -> None:
    args, names = BAD_ARGUMENTS[bad]
    with pytest.raises(ValueError) as error:
        make(*args)
    assert_message_names(error.value, *names)
