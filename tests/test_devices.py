"""Every public function and class keeps its input's device and dtype.

Issue 17, item 5. Each entry of ``RUNS`` prepares one public callable and
its arguments, tensors and modules on a device in a dtype. The test calls
it and checks that every tensor that comes back is on that device and that
every floating-point one has that dtype. It runs on ``meta`` (in float32 and
float64), on the CPU in float64, and on CUDA when a GPU is present.

Torch lets an operation on a ``meta`` tensor take a CPU tensor too (the
result is ``meta``), so an output on the right device does not prove that
nothing was built on the CPU on the way. So the call runs under
:class:`OnlyOn`, a ``TorchFunctionMode`` that sees every torch operation and
records any tensor, argument or result, on another device: a function that
builds ``torch.arange(n)`` without ``device=`` fails here.

The registry classes (:data:`attention.VARIANTS`) called as plain modules are
run on ``meta`` by ``tests/test_contract.py``; here
``PaddedMultiHeadAttention`` runs with its ``attention_mask``. ``EXCLUDED``
names every other public callable left out, with the reason; the last test
fails when ``attention.__all__`` gains a callable that is in neither table.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch.overrides import TorchFunctionMode

import attention
from attention import (
    CausalAttention,
    CrossAttention,
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    PaddedMultiHeadAttention,
    SelfAttention_v1,
    SelfAttention_v2,
    TinyAttentionModel,
    attention_over_key_tiles,
    attention_weights,
    cached_attention,
    copy_weights,
    copy_weights_v2_to_v1,
    count_parameters,
    decode_step,
    dot_scores,
    flash_attention,
    generate_greedy,
    generate_greedy_cached,
    key_padding_mask,
    mask_with_neg_inf,
    online_softmax,
    online_softmax_stats,
    pad_sequences,
    padded_causal_mask,
    parameter_breakdown,
    previous_token_mass,
    renormalize_masked,
    repeat_kv,
    simple_self_attention,
    softmax_naive,
    softmax_three_pass,
    weighted_sum,
    weights_from_lse,
)

#: (device, dtype) -> (the callable, its arguments), built outside the call.
Run = Callable[[torch.device, torch.dtype], tuple[Callable, tuple]]


def t(device, dtype, *shape: int) -> torch.Tensor:
    """A tensor of ``shape`` on ``device`` in ``dtype`` (values where they exist)."""
    return torch.rand(*shape, dtype=dtype).to(device)


def ids(device, *shape: int) -> torch.Tensor:
    return torch.ones(*shape, dtype=torch.long).to(device)


def on(module: torch.nn.Module, device, dtype) -> torch.nn.Module:
    return module.to(dtype).to(device).eval()


def model(device, dtype) -> TinyAttentionModel:
    return on(TinyAttentionModel(5, 4, context_length=6, num_heads=2), device, dtype)


def _cached(attn, x):
    """Two calls, a prefill and one more token; the outputs and the cache."""
    cache = KVCache(6)
    first = cached_attention(attn, x[:, :3], cache)
    second = cached_attention(attn, x[:, 3:], cache)
    return first, second, cache.keys[0], cache.values[0]


def mha(d, dt, cls=MultiHeadAttention):
    return on(cls(3, 4, 6, 0.0, num_heads=2), d, dt)


RUNS: dict[str, Run] = {
    # 3.3 and 3.5: functions of plain tensors
    "dot_scores": lambda d, dt: (dot_scores, (t(d, dt, 3), t(d, dt, 4, 3))),
    "softmax_naive": lambda d, dt: (softmax_naive, (t(d, dt, 4),)),
    "weighted_sum": lambda d, dt: (weighted_sum, (t(d, dt, 4), t(d, dt, 4, 3))),
    "simple_self_attention": lambda d, dt: (simple_self_attention, (t(d, dt, 4, 3),)),
    "mask_with_neg_inf": lambda d, dt: (mask_with_neg_inf, (t(d, dt, 4, 4),)),
    "renormalize_masked": lambda d, dt: (renormalize_masked, (t(d, dt, 4, 4),)),
    # the chapter's classes, and the others outside the registry
    "SelfAttention_v1": lambda d, dt: (
        on(SelfAttention_v1(3, 2), d, dt),
        (t(d, dt, 4, 3),),
    ),
    "SelfAttention_v2": lambda d, dt: (
        on(SelfAttention_v2(3, 2), d, dt),
        (t(d, dt, 4, 3),),
    ),
    "CausalAttention": lambda d, dt: (
        on(CausalAttention(3, 2, 6, 0.0), d, dt),
        (t(d, dt, 2, 4, 3),),
    ),
    "MultiHeadAttentionWrapper": lambda d, dt: (
        on(MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2), d, dt),
        (t(d, dt, 2, 4, 3),),
    ),
    "CrossAttention": lambda d, dt: (
        on(CrossAttention(3, 2, d_context=5), d, dt),
        (t(d, dt, 2, 4, 3), t(d, dt, 2, 7, 5)),
    ),
    "GroupedQueryAttention": lambda d, dt: (
        on(GroupedQueryAttention(4, 4, 6, 0.0, num_heads=2, num_kv_heads=1), d, dt),
        (t(d, dt, 2, 4, 4),),
    ),
    "PaddedMultiHeadAttention": lambda d, dt: (
        mha(d, dt, PaddedMultiHeadAttention),
        (t(d, dt, 2, 4, 3), ids(d, 2, 4)),
    ),
    "copy_weights": lambda d, dt: (
        copy_weights,
        (mha(d, dt), mha(d, dt, PaddedMultiHeadAttention)),
    ),
    "copy_weights_v2_to_v1": lambda d, dt: (
        copy_weights_v2_to_v1,
        (on(SelfAttention_v2(3, 2), d, dt), on(SelfAttention_v1(3, 2), d, dt)),
    ),
    "count_parameters": lambda d, dt: (count_parameters, (mha(d, dt),)),
    "parameter_breakdown": lambda d, dt: (parameter_breakdown, (mha(d, dt),)),
    # FlashAttention from scratch
    "softmax_three_pass": lambda d, dt: (softmax_three_pass, (t(d, dt, 2, 5),)),
    "online_softmax": lambda d, dt: (online_softmax, (t(d, dt, 2, 5), 2)),
    "online_softmax_stats": lambda d, dt: (online_softmax_stats, (t(d, dt, 2, 5), 2)),
    "attention_over_key_tiles": lambda d, dt: (
        attention_over_key_tiles,
        (t(d, dt, 2, 3, 4), t(d, dt, 2, 5, 4), t(d, dt, 2, 5, 4), 2),
    ),
    "flash_attention": lambda d, dt: (
        lambda q, k, v: flash_attention(q, k, v, causal=True, tile_size=2),
        (t(d, dt, 2, 5, 4), t(d, dt, 2, 5, 4), t(d, dt, 2, 5, 4)),
    ),
    "weights_from_lse": lambda d, dt: (
        weights_from_lse,
        (t(d, dt, 2, 3, 4), t(d, dt, 2, 5, 4), t(d, dt, 2, 3)),
    ),
    # padding
    "pad_sequences": lambda d, dt: (
        pad_sequences,
        ([t(d, dt, 2, 3), t(d, dt, 4, 3)], "left"),
    ),
    "key_padding_mask": lambda d, dt: (key_padding_mask, (ids(d, 2, 4),)),
    "padded_causal_mask": lambda d, dt: (padded_causal_mask, (ids(d, 2, 4),)),
    # KV cache and GQA
    "KVCache": lambda d, dt: (
        KVCache(6).update,
        (0, t(d, dt, 1, 2, 3, 4), t(d, dt, 1, 2, 3, 4)),
    ),
    "cached_attention": lambda d, dt: (
        lambda x, *modules: [_cached(attn, x) for attn in modules],
        (
            t(d, dt, 1, 4, 4),
            on(MultiHeadAttention(4, 4, 6, 0.0, 2), d, dt),
            on(GroupedQueryAttention(4, 4, 6, 0.0, 2, 1), d, dt),
        ),
    ),
    "decode_step": lambda d, dt: (
        decode_step,
        (model(d, dt), ids(d, 2, 3), KVCache(6)),
    ),
    "generate_greedy": lambda d, dt: (generate_greedy, (model(d, dt), ids(d, 2, 3), 2)),
    "generate_greedy_cached": lambda d, dt: (
        generate_greedy_cached,
        (model(d, dt), ids(d, 2, 3), 2),
    ),
    "repeat_kv": lambda d, dt: (repeat_kv, (t(d, dt, 1, 2, 3, 4), 3)),
    # the trained-attention helpers that need no values
    "TinyAttentionModel": lambda d, dt: (model(d, dt), (ids(d, 2, 4),)),
    "attention_weights": lambda d, dt: (
        attention_weights,
        (model(d, dt), ids(d, 2, 4)),
    ),
    "previous_token_mass": lambda d, dt: (previous_token_mass, (t(d, dt, 2, 2, 4, 4),)),
}


class OnlyOn(TorchFunctionMode):
    """Record every torch operation that meets a tensor on another device."""

    def __init__(self, device: str) -> None:
        super().__init__()
        self.device = device
        self.strays: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        for tensor in _tensors((args, list(kwargs.values()), out)):
            if tensor.device.type != self.device:
                name = getattr(func, "__qualname__", repr(func))
                self.strays.append(f"{name} met a tensor on {tensor.device}")
        return out


#: Public callables not in RUNS, and why.
EXCLUDED = {
    "MultiHeadAttention": "registry class: tests/test_contract.py runs it on meta",
    "FusedQKVMultiHeadAttention": "registry class: tests/test_contract.py",
    "SDPAMultiHeadAttention": "registry class: tests/test_contract.py",
    "TorchMultiHeadAttention": "registry class: tests/test_contract.py",
    "FlashMultiHeadAttention": "registry class: tests/test_contract.py",
    "causal_mask": "takes no tensor: builds on its device= argument "
    "(tests/test_causal.py::test_causal_mask_on_a_device)",
    "example_inputs": "takes no argument: the book's numbers, on the CPU",
    "previous_token_data": "takes no tensor: draws token ids on the CPU from a seed",
    "kv_cache_bytes": "takes integers, returns an int",
    "register": "takes a name and a class, returns the class",
    "train_model": "a training loop: needs values (random batches, loss.item())",
    "token_accuracy": "returns a Python float: needs values (.item())",
    "order_blind_accuracy": "returns a Python float: needs values (.item())",
}


def _devices() -> list[tuple[str, torch.dtype]]:
    runs = [("meta", torch.float32), ("meta", torch.float64), ("cpu", torch.float64)]
    if torch.cuda.is_available():
        runs += [("cuda", torch.float32)]
    return runs


def _tensors(out: object) -> list[torch.Tensor]:
    """Every tensor in ``out``: a tensor, or tuples and lists of them."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [x for item in out for x in _tensors(item)]
    return []


@pytest.mark.parametrize(("device", "dtype"), _devices(), ids=str)
@pytest.mark.parametrize("name", sorted(RUNS))
def test_outputs_stay_on_the_inputs_device_and_dtype(name, device, dtype):
    torch.manual_seed(0)
    function, args = RUNS[name](torch.device(device), dtype)
    with OnlyOn(device) as watch:
        out = function(*args)
    assert not watch.strays, f"{name}: {watch.strays[:3]}"
    tensors = _tensors(out)
    if name in ("copy_weights", "copy_weights_v2_to_v1"):
        assert out is None  # they work in place; running on meta is the check
    elif name in ("count_parameters", "parameter_breakdown"):
        assert out  # counts of a meta module's parameters, from their shapes
    else:
        assert tensors, f"{name} returned no tensor"
    for tensor in tensors:
        assert tensor.device.type == device, f"{name} returned a tensor on the CPU"
        if tensor.is_floating_point():
            assert tensor.dtype == dtype, f"{name} returned {tensor.dtype}"


def test_every_public_callable_is_run_or_excluded_with_a_reason():
    public = {n for n in attention.__all__ if callable(getattr(attention, n))}
    assert not set(RUNS) & set(EXCLUDED)
    assert public == set(RUNS) | set(EXCLUDED), (
        f"neither run nor excluded: {sorted(public - set(RUNS) - set(EXCLUDED))}; "
        f"stale: {sorted(set(RUNS) | set(EXCLUDED) - public)}"
    )
    assert all(EXCLUDED.values())
