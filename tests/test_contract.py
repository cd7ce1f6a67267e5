"""What the package promises, tested generically over one table.

``tests/table.py`` holds a record per public callable and registry entry, read
at collection (``pytest_generate_tests``): an entry registered from a plugin or
a ``conftest.py`` is tested like the others; ids carry the record's key
(``test_error_input[sdpa-too-long]``). ``tests/test_contract_catches.py``
checks that a broken entry fails here and a sound one passes.

Every record: a drawn call equals its reference (its tensor arguments left
alone); outputs stay on each device and dtype (nothing built elsewhere on the
way); each error input raises its type with a message naming what the record
says. Each registry entry also keeps the chapter's constructor and weight
layout, equals the reference in gradients, and (with the other causal classes)
is causal, keeps batch items apart, is deterministic in eval, applies unbiased
dropout in training only, passes gradcheck, and survives a ``state_dict`` round
trip and ``.to(dtype)``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from functools import partial

import pytest
import table
import torch
from helpers import (
    assert_causal,
    assert_dropout_unbiased,
    assert_gradcheck,
    assert_message_names,
    checks_called,
    reference_multihead,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

import attention
from attention import MultiHeadAttention, copy_weights, count_parameters
from attention.contract import AttentionVariant
from attention.variants import load_mha_state_dict, mha_state_dict, variant_info

CHAPTER_ARGS = ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    fixtures = metafunc.fixturenames
    records = table.records()  # read now: a plugin may have registered an entry
    if "op" in fixtures and "device" in fixtures:
        runs = [
            (op, device, dtype)
            for op in records.values()
            for device in op.devices
            for dtype in op.dtypes
        ]
        ids = [
            f"{op.name}-{dev}-{str(dt).removeprefix('torch.')}" for op, dev, dt in runs
        ]
        metafunc.parametrize(("op", "device", "dtype"), runs, ids=ids)
    elif "op" in fixtures and "error" in fixtures:
        pairs = [(op, e) for op in records.values() for e in op.errors]
        metafunc.parametrize(
            ("op", "error"), pairs, ids=[f"{op.name}-{e.id}" for op, e in pairs]
        )
    elif "op" in fixtures:
        metafunc.parametrize("op", list(records.values()), ids=list(records))
    elif "causal" in fixtures:
        metafunc.parametrize("causal", list(table.causal_builders()))
    elif "variant" in fixtures and "dtype" in fixtures:
        pairs = [(n, dt) for n in attention.VARIANTS for dt in variant_info(n).dtypes]
        ids = [f"{n}-{str(dt).removeprefix('torch.')}" for n, dt in pairs]
        metafunc.parametrize(("variant", "dtype"), pairs, ids=ids)
    elif "variant" in fixtures:
        metafunc.parametrize("variant", list(attention.VARIANTS))


# --- every record ---------------------------------------------------------------


def assert_equal_to(
    actual, expected, atol: float, rtol: float, where: str = ""
) -> None:
    """Tensors close (and finite), numbers and flags equal, element by element."""
    if isinstance(actual, tuple | list):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_equal_to(a, e, atol, rtol, f"{where}[{i}]")
    elif isinstance(actual, torch.Tensor):
        actual = actual.detach().cpu()
        if actual.is_floating_point():
            expected = torch.as_tensor(expected).to(actual.dtype)
            torch.testing.assert_close(
                actual, expected, atol=atol, rtol=rtol, msg=where
            )
        else:
            assert torch.equal(actual, torch.as_tensor(expected)), where
    elif isinstance(actual, float):
        assert actual == pytest.approx(expected, rel=rtol, abs=atol), where
    else:
        assert actual == expected, where


@given(data=st.data())
def test_sample_equals_the_reference(op: table.OpInfo, data) -> None:
    dtype = data.draw(st.sampled_from(op.dtypes))
    sample = op.sample(table.Draw(data.draw, "cpu", dtype))
    before = [t.clone() for t in tensors(sample.args)]
    out = sample()
    for arg, was in zip(tensors(sample.args), before, strict=True):
        assert torch.equal(arg, was), f"{op.name} changed an input in place"
    with torch.no_grad():
        expected = op.reference(sample)
    atol, rtol = op.tolerances.get(dtype, (1e-5, 1e-4))
    assert_equal_to(out, expected, atol, rtol)


class OnlyOn(TorchFunctionMode):
    """Record every torch operation that meets a tensor on another device
    (torch lets an operation on ``meta`` take a CPU tensor: the output's
    device alone proves nothing)."""

    def __init__(self, device: str) -> None:
        super().__init__()
        self.device, self.strays = device, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        for tensor in tensors((args, list(kwargs.values()), out)):
            if tensor.device.type != self.device:
                name = getattr(func, "__qualname__", repr(func))
                self.strays.append(f"{name} met a tensor on {tensor.device}")
        return out


def tensors(out: object) -> list[torch.Tensor]:
    """Every tensor in ``out``: a tensor, or tuples and lists of them."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [x for item in out for x in tensors(item)]
    return []


# One example per (op, device, dtype) in the quick loop, two in `make test`.
@settings(max_examples=max(1, settings.default.max_examples // 25))
@given(data=st.data())
def test_outputs_stay_on_the_inputs_device_and_dtype(op, device, dtype, data) -> None:
    sample = op.sample(table.Draw(data.draw, device, dtype))
    with OnlyOn(device) as watch:
        out = sample()
    assert not watch.strays, f"{op.name}: {watch.strays[:3]}"
    for tensor in tensors(out):
        assert tensor.device.type == device, f"{op.name} returned a tensor on the CPU"
        if tensor.is_floating_point():
            assert tensor.dtype == dtype, f"{op.name} returned {tensor.dtype}"


def test_error_input(op: table.OpInfo, error: table.ErrorInput) -> None:
    with pytest.raises(error.error) as raised:
        error.call()
    assert_message_names(raised.value, *error.names)


def test_every_public_callable_has_a_record() -> None:
    public = [n for n in attention.__all__ if callable(getattr(attention, n))]
    missing = [n for n in public if table.covered_by(n) is None]
    assert not missing, f"no record for {missing}"
    stale = [op.name for op in table.PUBLIC if op.name not in public]
    assert not stale, f"records of no public callable: {stale}"
    no_errors = [
        op.name for op in table.PUBLIC
        if inspect.signature(getattr(attention, op.name)).parameters and not op.errors
    ]  # fmt: skip
    assert not no_errors, f"records of callables with arguments, no errors: {no_errors}"


# --- every registry entry -----------------------------------------------------


def seeded(build: Callable[..., torch.nn.Module]):
    """``build(*chapter_args)`` as ``make(*chapter_args, seed=0)``, seeded first."""

    def make(*args, seed: int = 0) -> torch.nn.Module:
        torch.manual_seed(seed)
        return build(*args)

    return make


@pytest.fixture
def make(variant: str):
    """A seeded module of the entry, built by its VariantInfo."""
    return seeded(partial(table.build, variant))


def test_signature_is_the_chapters(make, variant) -> None:
    params = inspect.signature(attention.VARIANTS[variant]).parameters
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
    parts = ["weight", "bias"] if qkv_bias else ["weight"]
    names = [f"{n}.{p}" for n in ("W_query", "W_key", "W_value") for p in parts]
    names += ["out_proj.weight", "out_proj.bias"]
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
    source, back = (make(4, 6, 8, 0.0, 3, True, seed=seed) for seed in (1, 2))
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
    for src, dst in [
        (MultiHeadAttention(4, 6, 8, 0.0, 3), make(*dst_args)),
        (make(4, 6, 8, 0.0, 3), MultiHeadAttention(*dst_args)),
    ]:
        with pytest.raises(ValueError) as error:
            copy_weights(src, dst)
        assert_message_names(error.value, (name,), ("src",), ("dst",))


def test_copy_weights_checks_each_module_once(make) -> None:
    # At the door, once: each module's layout is checked once, the state once.
    src, dst = make(4, 6, 8, 0.0, 3), make(4, 6, 8, 0.0, 3)
    called = checks_called(lambda: copy_weights(src, dst))
    assert called.count("check_variant") == 2  # src, then dst
    state_checks = called.count("check_state")
    if type(dst).__module__.startswith("attention."):
        assert state_checks == 1  # by copy_weights or the class's own loader
    else:  # a class from outside the package checks the state its own way
        assert state_checks <= 1


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
    expected = {name: weight.grad for name, weight in state.items()}
    torch.testing.assert_close(weight_grads(module), expected, atol=atol, rtol=rtol)


# --- every causal module: the registry, CausalAttention, the wrapper, GQA --------


@pytest.fixture
def build(causal: str):
    """A seeded module of ``table.causal_builders``."""
    return seeded(table.causal_builders()[causal])


@pytest.mark.parametrize(("d_in", "d_out", "h"), [(6, 6, 3), (5, 8, 2), (8, 4, 1)])
def test_causality(build, d_in: int, d_out: int, h: int) -> None:
    module = build(d_in, d_out, 10, 0.0, h, seed=3).double().eval()
    assert_causal(module, torch.randn(2, 10, d_in, dtype=torch.float64))


def test_batch_independence(build) -> None:
    module = build(4, 6, 8, 0.0, 2, seed=4).double().eval()
    x = torch.randn(4, 7, 4, dtype=torch.float64)
    alone = torch.cat([module(x[i : i + 1]) for i in range(x.shape[0])])
    torch.testing.assert_close(module(x), alone, msg="batch items interact")


def test_eval_is_deterministic_and_equals_no_dropout(build) -> None:
    with_dropout = build(6, 6, 12, 0.5, 2, seed=6)
    without = build(6, 6, 12, 0.0, 2)
    without.load_state_dict(with_dropout.state_dict())
    x = torch.randn(2, 12, 6)
    with_dropout.eval()  # two calls: bit-identical outputs, whatever the dropout
    torch.testing.assert_close(with_dropout(x), with_dropout(x), rtol=0, atol=0)
    torch.testing.assert_close(with_dropout(x), without.eval()(x))
    torch.testing.assert_close(without.train()(x), without.eval()(x))  # p = 0


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_in_training_only_and_unbiased(build, p: float) -> None:
    module = build(4, 4, 5, p, 2, seed=7)
    assert_dropout_unbiased(module, torch.randn(1, 5, 4))


def test_gradcheck_in_float64(build) -> None:
    module = build(3, 4, 4, 0.3, 2, True, seed=8).double().eval()
    assert_gradcheck(module, torch.randn(2, 4, 3, dtype=torch.float64))


def test_state_dict_round_trip(build) -> None:
    x = torch.randn(2, 8, 4)
    source, target = (build(4, 6, 8, 0.0, 3, True, seed=s).eval() for s in (1, 2))
    assert not torch.allclose(source(x), target(x)), "seeds gave the same weights"
    target.load_state_dict(source.state_dict())
    torch.testing.assert_close(target(x), source(x), rtol=0, atol=0)


def test_to_dtype_converts_weights_and_output(build) -> None:
    module = build(4, 6, 8, 0.0, 3, seed=9).eval()
    x = torch.randn(2, 8, 4)
    expected = module(x)
    module.to(torch.float64)
    assert all(p.dtype == torch.float64 for p in module.parameters())
    out = module(x.double())
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.float(), expected, atol=1e-5, rtol=1e-5)
    assert module.to(torch.float32)(x).dtype == torch.float32


@pytest.mark.parametrize(
    ("spec", "error"),
    [(3, TypeError), ("attention.efficient", ValueError), ("=:", ValueError)],
    ids=["int", "no-class", "empty"],
)
def test_load_variant_names_a_spec_it_cannot_read(spec, error) -> None:
    with pytest.raises(error) as raised:
        attention.variants.load_variant(spec)
    assert_message_names(raised.value, ("spec",), ("module:Class",))
