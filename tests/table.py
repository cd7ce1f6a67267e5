"""One table of what the package promises, in the style of PyTorch's ``OpInfo``.

One :class:`OpInfo` record per public callable of ``attention.__all__`` and per
entry of ``attention.VARIANTS`` (read at collection, so an entry registered from
a plugin or a ``conftest.py`` gets one too): how to draw a valid call
(``sample``), what it must return (``reference``, computed apart from the
package), bad calls with the exception and the names their message must carry
(``errors``: names, not wording), and ``dtypes``, ``devices``, tolerances (a
registry entry's come from its :class:`attention.VariantInfo`, which also builds
it). ``tests/test_contract.py`` runs generic tests over it, with ids from its
keys (``test_error_input[sdpa-too-long]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch
from helpers import chapter_state, reference_multihead, reference_rope
from hypothesis import strategies as st
from torch import nn

import attention
import attention as A
from attention import (
    VARIANTS,
    CausalAttention,
    CrossAttention,
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    PaddedMultiHeadAttention,
    RotaryMultiHeadAttention,
    SDPAMultiHeadAttention,
    SelfAttention_v1,
    SelfAttention_v2,
    TinyAttentionModel,
    VariantInfo,
)
from attention.variants import mha_state_dict, variant_info

F32, F64 = torch.float32, torch.float64
#: A wrong Python type: the package raises ``ArgumentTypeError`` (a
#: ``TypeError`` and a ``ValueError``); torch and outside classes raise
#: ``TypeError``; the package before the new checks raised ``ValueError``.
TYPE = (TypeError, ValueError)
Names = tuple[tuple[str, ...], ...]
z = torch.zeros
FLOAT = "float|floating-point|float32"


@dataclass
class Sample:
    """One valid call: ``fn(*args, **kwargs)``; ``given`` is what the reference
    may read besides the arguments (e.g. the scores behind some weights)."""

    fn: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)

    def __call__(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


@dataclass(frozen=True)
class ErrorInput:
    """A bad call, the exception it must raise, what its message must name
    (one spelling of each tuple, as a whole word)."""

    id: str
    call: Callable[[], object]
    names: Names
    error: type[BaseException] | tuple[type[BaseException], ...] = ValueError


@dataclass(frozen=True, repr=False)
class OpInfo:
    """What one public callable or registry entry promises."""

    name: str
    sample: Callable[[Draw], Sample]
    reference: Callable[[Sample], Any]
    errors: tuple[ErrorInput, ...] = ()
    dtypes: tuple[torch.dtype, ...] = (F32, F64)
    devices: tuple[str, ...] = ("cpu", "meta")
    tolerances: dict = field(
        default_factory=lambda: {F32: (1e-5, 1e-4), F64: (1e-9, 1e-7)}
    )

    def __repr__(self) -> str:
        return f"OpInfo({self.name!r})"


class Draw:
    """What a sample function draws from: sizes from hypothesis, tensors from
    a drawn seed, built on the CPU and moved to the device in the dtype."""

    def __init__(self, draw: Callable, device: str, dtype: torch.dtype) -> None:
        self.draw, self.device, self.dtype = draw, device, dtype
        self.gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))

    def int(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def pick(self, values: Sequence) -> Any:
        return self.draw(st.sampled_from(list(values)))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def t(self, *shape: int, scale: float = 1.0) -> torch.Tensor:
        x = torch.randn(*shape, generator=self.gen, dtype=F64) * scale
        return x.to(self.dtype).to(self.device)

    def ids(self, vocab: int, *shape: int) -> torch.Tensor:
        return torch.randint(vocab, shape, generator=self.gen).to(self.device)

    def module(self, make: Callable[[], nn.Module]) -> nn.Module:
        torch.manual_seed(int(torch.randint(2**16, (), generator=self.gen)))
        return make().to(self.dtype).to(self.device).eval()


# --- the pieces references are made of ------------------------------------------


def cpu(x: Any) -> Any:
    return x.detach().cpu() if isinstance(x, torch.Tensor) else x


def softmax_rows(scores: torch.Tensor, hidden: torch.Tensor | None = None):
    """``exp(s - max) / sum`` over the last dimension; hidden or empty rows -> 0."""
    if hidden is not None:
        scores = scores.masked_fill(hidden, -math.inf)
    if scores.shape[-1] == 0:
        return scores
    top = scores.amax(dim=-1, keepdim=True).nan_to_num(neginf=0.0)
    exps = torch.exp(scores - top)
    sums = exps.sum(dim=-1, keepdim=True)
    return torch.where(sums > 0, exps / sums.clamp_min(1e-300), 0.0)


def attend(q, k, v, hidden=None, scale: bool = True) -> torch.Tensor:
    """Attention over the last two dimensions, the formula written out."""
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(k.shape[-1])
    return softmax_rows(scores, hidden) @ v


def future(num_queries: int, num_keys: int) -> torch.Tensor:
    """``True`` where key ``j`` comes after query ``i`` (bottom-right aligned)."""
    offset = num_keys - num_queries
    rows = [[j > i + offset for j in range(num_keys)] for i in range(num_queries)]
    return torch.tensor(rows, dtype=torch.bool).reshape(num_queries, num_keys)


def outside_window(num_queries: int, num_keys: int, window=None, sink_tokens=0):
    """``True`` where query ``i`` (at position ``p = i + Tk - Tq``) may not see
    key ``j``: it sees ``p - window < j <= p``, and ``j < sink_tokens``, ``j <= p``."""
    rows = []
    for i in range(num_queries):
        p = i + num_keys - num_queries
        row = []
        for j in range(num_keys):
            in_window = j <= p and (window is None or j > p - window)
            sink = j < sink_tokens and j <= p
            row.append(not (in_window or sink))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.bool).reshape(num_queries, num_keys)


def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    out = x @ layer.weight.detach().T
    return out if layer.bias is None else out + layer.bias.detach()


def qkv(module: nn.Module, x: torch.Tensor, context: torch.Tensor | None = None):
    context = x if context is None else context
    return (
        linear(module.W_query, x),
        linear(module.W_key, context),
        linear(module.W_value, context),
    )


def reference_logits(
    model: TinyAttentionModel, ids: torch.Tensor, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """``TinyAttentionModel``'s logits, from its weights and the formula, at
    ``positions`` ``(T,)`` (default ``0 .. T - 1``)."""
    if positions is None:
        positions = torch.arange(ids.shape[1])
    x = model.tok_emb.weight.detach()[ids]
    rope = None
    if model.positions == "learned":
        x = x + model.pos_emb.weight.detach()[positions]
    if model.positions == "rope":
        rope = (positions, model.attn.base, model.attn.layout)
    for layer in model.layers:
        x = reference_multihead(chapter_state(layer), x, layer.num_heads, rope=rope)
    return x @ model.out_head.weight.detach().T + model.out_head.bias.detach()


def tiny_model(
    d: Draw, vocab: int = 7, context_length: int = 6, positions: str | None = "learned"
):
    """One or two layers; with ``positions=None``, any kind of positions (drawn)."""
    layers = d.int(1, 2)
    if positions is None:
        positions = d.pick(["learned", "rope", "none"])
    return d.module(
        lambda: TinyAttentionModel(
            vocab, 4, context_length, 2, positions=positions, num_layers=layers
        )
    )


# --- error inputs that many records share -----------------------------------------


def bad(id: str, call: Callable[[], object], names: str, kind=ValueError):
    """An :class:`ErrorInput`; ``names`` lists what the message must name,
    ``"; "`` between names, ``"|"`` between the spellings of one name."""
    spelled = tuple(tuple(name.split("|")) for name in names.split("; "))
    return ErrorInput(id, call, spelled, kind)


def not_tensors(call: Callable[[object], object], name: str) -> tuple:
    """``call(x)`` with a list and with ``None`` where a tensor belongs."""
    return (
        bad(f"{name}-list", lambda: call([[0.0]]), f"{name}; list", TYPE),
        bad(f"{name}-None", lambda: call(None), f"{name}; None|NoneType", TYPE),
    )


def tensor_errors(call, name: str, good: torch.Tensor, mixed: bool = False) -> tuple:
    """``not_tensors``, then integers where ``good`` (float32, on the CPU) goes;
    ``mixed``: also ``good`` in float64 and on ``meta`` beside the others."""
    errors = (
        *not_tensors(call, name),
        bad(f"{name}-int", lambda: call(good.long()), f"{name}; {FLOAT}; int64"),
        bad(f"{name}-64", lambda: call(good.double()), f"{name}; float64; float32"),
        bad(f"{name}-meta", lambda: call(good.to("meta")), f"{name}; meta; cpu"),
    )
    return errors if mixed else errors[:-2]


#: Not a positive integer size; not a probability in [0, 1).
SIZES = [
    (0, ValueError),
    (-1, ValueError),
    (True, TYPE),
    (2.5, TYPE),
    ("3", TYPE),
    (None, TYPE),
]
#: A window is None or an integer of at least 1.
WINDOWS = [(0, ValueError), (-2, ValueError), (2.0, TYPE), (True, TYPE), ("3", TYPE)]

PROBABILITIES = [
    (1.0, ValueError),
    (-0.1, ValueError),
    (math.nan, ValueError),
    (math.inf, ValueError),
    ("0.1", TYPE),
    (None, TYPE),
    (True, TYPE),
]


def bad_values(call: Callable[[object], object], name: str, values=SIZES) -> tuple:
    """``call(value)`` for each bad value; the message names ``name`` and it."""
    return tuple(
        bad(f"{name}-{v!r}", lambda v=v: call(v), f"{name}; {v}", k) for v, k in values
    )


def module_inputs(make: Callable[..., nn.Module], lead: tuple = (2,)) -> tuple:
    """The checks of a module's input ``x`` and its ``d_in`` (``make()`` is
    built with ``d_in = 4``); ``lead`` is ``()`` for a class of one sequence."""
    return (
        *not_tensors(lambda x: make()(x), "x"),
        bad("x-rank", lambda: make()(z(*lead, 1, 3, 4)), "x; dimensions|dim|3-D|2"),
        bad("x-width", lambda: make()(z(*lead, 3, 5)), "d_in; 4; 5"),
        bad("x-int", lambda: make()(z(*lead, 3, 4).long()), f"x; {FLOAT}; int64"),
        bad("x-float64", lambda: make()(z(*lead, 3, 4).double()), "x; float64"),
        bad("x-device", lambda: make().to("meta")(z(*lead, 3, 4)), "x; meta; cpu"),
        *bad_values(lambda v: make(d_in=v), "d_in"),
    )


def batch_inputs(make: Callable[..., nn.Module], heads: int = 2) -> tuple:
    """``module_inputs`` and what every causal class adds: a context length
    (6), a dropout, a bias flag; ``heads``: 0 for none, 1 if they do not
    split ``d_out``, 2 if they do."""
    more = (
        *module_inputs(make),
        bad("too-long", lambda: make()(z(2, 7, 4)), "context_length; 6; 7"),
        *bad_values(lambda v: make(dropout=v), "dropout", PROBABILITIES),
        *bad_values(lambda v: make(context_length=v), "context_length"),
        bad("qkv_bias-1", lambda: make(qkv_bias=1), "qkv_bias; 1", TYPE),
    )
    if heads:
        more += bad_values(lambda v: make(num_heads=v), "num_heads")
    if heads == 2:
        split = lambda: make(d_out=6, num_heads=4)  # noqa: E731
        more += (bad("indivisible", split, "d_out; num_heads; 6; 4"),)
    return more


def built(cls: type, **defaults: object) -> Callable[..., nn.Module]:
    """``make(**overrides)``: ``cls`` with small valid keyword arguments."""
    return lambda **overrides: cls(**{**defaults, **overrides})


MHA_ARGS = dict(d_in=4, d_out=4, context_length=6, dropout=0.0, num_heads=2)


# --- the records of the public callables -----------------------------------------


def _dot_scores(d: Draw) -> Sample:
    T, k = d.int(1, 5), d.int(1, 5)
    return Sample(attention.dot_scores, (d.t(k), d.t(T, k)))


def _dot_scores_ref(s: Sample) -> torch.Tensor:
    query, inputs = (cpu(a).tolist() for a in s.args)
    rows = [sum(a * b for a, b in zip(row, query, strict=True)) for row in inputs]
    return torch.tensor(rows, dtype=F64)


def _weighted_sum(d: Draw) -> Sample:
    T, k = d.int(1, 5), d.int(1, 5)
    return Sample(attention.weighted_sum, (d.t(T).softmax(0), d.t(T, k)))


def _weighted_sum_ref(s: Sample) -> torch.Tensor:
    weights, inputs = (cpu(a).double() for a in s.args)
    return sum(w * row for w, row in zip(weights, inputs, strict=True))


def _simple_ref(s: Sample):
    x = cpu(s.args[0]).double()
    weights = softmax_rows(x @ x.T)
    return weights, attend(x, x, x, scale=False)


def _mask_ref(s: Sample) -> torch.Tensor:
    scores = cpu(s.args[0])  # (..., T, T)
    return scores.masked_fill(future(*scores.shape[-2:]), -math.inf)


def _renormalize(d: Draw) -> Sample:
    T = d.int(1, 5)
    scores = d.t(T, T, scale=d.pick([0.1, 3.0, 20.0]))  # gaps far below ~104
    return Sample(
        attention.renormalize_masked, (scores.softmax(-1),), given={"scores": scores}
    )


def _v1(d: Draw) -> Sample:
    d_in, d_out, T = d.int(1, 5), d.int(1, 5), d.int(1, 5)
    return Sample(d.module(lambda: SelfAttention_v1(d_in, d_out)), (d.t(T, d_in),))


def _v1_ref(s: Sample) -> torch.Tensor:
    sa, x = s.fn, cpu(s.args[0])
    q, k, v = (x @ w.detach().cpu() for w in (sa.W_query, sa.W_key, sa.W_value))
    return attend(q, k, v)


def _v2(d: Draw) -> Sample:
    d_in, d_out, T, bias = d.int(1, 5), d.int(1, 5), d.int(1, 5), d.flag()
    return Sample(
        d.module(lambda: SelfAttention_v2(d_in, d_out, qkv_bias=bias)), (d.t(T, d_in),)
    )


def _copy_v2_to_v1(d: Draw) -> Sample:
    d_in, d_out, T = d.int(1, 5), d.int(1, 5), d.int(1, 5)
    v2 = d.module(lambda: SelfAttention_v2(d_in, d_out))
    v1 = d.module(lambda: SelfAttention_v1(d_in, d_out))

    def copy_then_call(v2, v1, x):
        attention.copy_weights_v2_to_v1(v2, v1)
        return v1(x)

    return Sample(copy_then_call, (v2, v1, d.t(T, d_in)))


def _causal(d: Draw) -> Sample:
    b, T, d_out = d.int(0, 2), d.int(0, 6), d.int(1, 5)
    ca = d.module(lambda: CausalAttention(4, d_out, 6, 0.0, qkv_bias=d.flag()))
    return Sample(ca, (d.t(b, T, 4),))


def _causal_ref(s: Sample) -> torch.Tensor:
    """CausalAttention's formula; the wrapper's: its heads' side by side."""
    x, T = cpu(s.args[0]), s.args[0].shape[1]
    heads = getattr(s.fn, "heads", [s.fn])
    return torch.cat([attend(*qkv(h, x), future(T, T)) for h in heads], dim=-1)


def _wrapper(d: Draw) -> Sample:
    T, heads = d.int(1, 6), d.int(1, 3)
    w = d.module(
        lambda: MultiHeadAttentionWrapper(4, 2, 6, 0.0, heads, qkv_bias=d.flag())
    )
    return Sample(w, (d.t(2, T, 4),))


def _cross(d: Draw) -> Sample:
    b, T_q, T_kv = d.int(1, 2), d.int(1, 5), d.int(1, 5)
    d_ctx = d.pick([None, 1, 2, 3, 5])  # None: the default, d_in (4)
    cross = d.module(lambda: CrossAttention(4, 3, qkv_bias=d.flag(), d_context=d_ctx))
    return Sample(cross, (d.t(b, T_q, 4), d.t(b, T_kv, d_ctx or 4)))


def _gqa(d: Draw) -> Sample:
    heads = d.pick([1, 2, 4])
    kv = d.pick([h for h in (1, 2, 4) if heads % h == 0])
    make = lambda: GroupedQueryAttention(4, 4, 6, 0.0, heads, kv, qkv_bias=d.flag())  # noqa: E731
    return Sample(d.module(make), (d.t(d.int(0, 2), d.int(0, 6), 4),))


def _chapter_ref(attn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What ``MultiHeadAttention`` or ``GroupedQueryAttention`` ``attn`` gives."""
    kv = getattr(attn, "num_kv_heads", None)
    return reference_multihead(chapter_state(attn), cpu(x), attn.num_heads, kv)


def _mean_pool(d: Draw) -> Sample:
    heads = d.pick([1, 2, 4])
    kv = d.pick([g for g in (1, 2, 4) if heads % g == 0])
    mha = d.module(lambda: MultiHeadAttention(4, 4, 6, 0.0, heads, qkv_bias=d.flag()))

    def pool_then_call(mha, num_kv_heads, x):
        return attention.mean_pool_kv_heads(mha, num_kv_heads)(x)

    return Sample(pool_then_call, (mha, kv, d.t(2, d.int(0, 6), 4)))


def _mean_pool_ref(s: Sample) -> torch.Tensor:
    mha, kv, x = s.args
    state = chapter_state(mha)
    hd, r = mha.head_dim, mha.num_heads // kv
    for name in [n for n in state if n.startswith(("W_key", "W_value"))]:
        heads = state[name].split(hd)  # one slice of rows per head
        state[name] = torch.cat(
            [sum(heads[k * r : k * r + r]) / r for k in range(kv)]
        )  # key/value head k: the mean of heads k * r .. k * r + r - 1
    return reference_multihead(state, cpu(x), mha.num_heads, kv)


def _padded(d: Draw) -> Sample:
    lengths = d.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    side = d.pick(["left", "right"])
    module = d.module(
        lambda: PaddedMultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias=d.flag())
    )
    x, mask = attention.pad_sequences([d.t(n, 3) for n in lengths], side=side)
    return Sample(module, (x, mask))


def _padded_ref(s: Sample) -> torch.Tensor:
    x, mask = (cpu(a) for a in s.args)
    hidden = (mask == 0)[:, None, :].expand(-1, x.shape[1], -1)
    return reference_multihead(chapter_state(s.fn), x, 2, hidden=hidden)


def _counted(d: Draw) -> nn.Module:
    cls = d.pick([CausalAttention, MultiHeadAttentionWrapper, *VARIANTS.values()])
    d_in, heads = d.int(1, 5), () if cls is CausalAttention else (2,)
    module = d.module(lambda: cls(d_in, 4, 6, 0.0, *heads, qkv_bias=d.flag()))
    for p in module.parameters():  # a frozen parameter is not counted
        if d.flag():
            p.requires_grad_(False)
    return module


def _trainable(s: Sample) -> int:
    return sum(p.numel() for p in s.args[0].parameters() if p.requires_grad)


def build(name: str, *args) -> nn.Module:
    """The registry entry ``name`` built by its VariantInfo."""
    return variant_info(name).build(VARIANTS[name], *args)


def _copy_weights(d: Draw) -> Sample:
    src_name, dst_name = d.pick(sorted(VARIANTS)), d.pick(sorted(VARIANTS))
    d_in, bias = d.pick([4, 6]), d.flag()
    src, dst = (
        d.module(lambda n=n: build(n, d_in, 4, 6, 0.0, 2, bias))
        for n in (src_name, dst_name)
    )

    def copy_then_call(src, dst, x):
        attention.copy_weights(src, dst)
        return dst(x)

    return Sample(copy_then_call, (src, dst, d.t(2, d.int(0, 6), d_in)))


def _rows(fn: Callable, tiled: bool = False) -> Callable[[Draw], Sample]:
    def sample(d: Draw) -> Sample:
        lead = d.draw(st.lists(st.integers(0, 3), max_size=2))
        scores = d.t(*lead, d.int(1, 9), scale=d.pick([0.1, 10.0, 200.0]))
        return Sample(fn, (scores, d.int(1, 7)) if tiled else (scores,))

    return sample


def _stats_ref(s: Sample):
    scores = cpu(s.args[0]).double()
    top = scores.amax(-1, keepdim=True)
    return top, torch.exp(scores - top).sum(-1, keepdim=True)


def _qkv_sample(fn: Callable) -> Callable[[Draw], Sample]:
    def sample(d: Draw) -> Sample:
        b, Tk, hd, tile = d.int(0, 2), d.int(1, 7), d.int(1, 5), d.int(1, 7)
        causal = fn is A.flash_attention and d.flag()
        Tq = d.int(0, 7)  # causal with Tq != Tk: the triangle aligned bottom-right
        q, k, v = d.t(b, 2, Tq, hd), d.t(b, 2, Tk, hd), d.t(b, 2, Tk, hd)
        if fn is attention.flash_attention:
            kwargs = {"causal": causal, "tile_size": tile}
            kwargs["window"] = d.pick([None, 1, 2, 3, 5]) if causal else None
            kwargs["sinks"] = d.t(2, scale=3.0) if d.flag() else None  # a head each
            return Sample(fn, (q, k, v), kwargs)
        return Sample(fn, (q, k, v, tile))

    return sample


def _flash_ref(s: Sample):
    """Masked softmax; a sink is one more column of scores, dropped after."""
    q, k, v = (cpu(a).double() for a in s.args[:3])
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if s.kwargs.get("causal"):
        hidden = outside_window(q.shape[-2], k.shape[-2], s.kwargs.get("window"))
        scores = scores.masked_fill(hidden, -math.inf)
    sinks = s.kwargs.get("sinks")
    if sinks is None:
        return softmax_rows(scores) @ v, torch.logsumexp(scores, -1)
    column = cpu(sinks).double()[:, None, None].expand(*scores.shape[:-1], 1)
    scores = torch.cat((scores, column), dim=-1)  # (..., h, Tq, Tk + 1)
    weights = softmax_rows(scores)[..., :-1]  # the sink's column has no value
    return weights @ v, torch.logsumexp(scores, -1)


def _backward_sample(fn: Callable) -> Callable[[Draw], Sample]:
    """q, k, v, O, L and dO of a causal (bottom-right) or dense attention."""

    def sample(d: Draw) -> Sample:
        Tq, Tk, hd, tile = d.int(1, 6), d.int(1, 6), d.int(1, 4), d.int(1, 5)
        causal = d.flag()
        if causal and d.flag():  # more queries than keys: query 0 sees no key
            Tq, Tk = max(Tq, Tk) + 1, min(Tq, Tk)
        q, grad_out = d.t(2, Tq, hd), d.t(2, Tq, hd)
        k, v = d.t(2, Tk, hd), d.t(2, Tk, hd)
        hidden = future(Tq, Tk).to(q.device) if causal else None
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        if hidden is not None:
            scores = scores.masked_fill(hidden, -math.inf)
        out, lse = softmax_rows(scores) @ v, torch.logsumexp(scores, dim=-1)
        given = {"causal": causal, "grad_out": grad_out}
        if fn is A.tile_backward:
            delta = (grad_out * out).sum(-1)
            return Sample(fn, (q, k, v, grad_out, lse, delta, hidden), given=given)
        if fn is A.flash_attention_backward:
            args = (q, k, v, out, lse, grad_out, causal, tile)
            return Sample(fn, args, given=given)
        return Sample(fn, (q, k, v, causal, tile), given=given)

    return sample


def _backward_ref(s: Sample):
    """The gradients of the formula, by autograd in float64."""
    q, k, v = (cpu(a).double().requires_grad_() for a in s.args[:3])
    hidden = future(q.shape[-2], k.shape[-2]) if s.given["causal"] else None
    if s.fn == A.FlashAttentionFunction.apply:
        return _flash_ref(Sample(s.fn, (q, k, v), {"causal": s.given["causal"]}))
    with torch.enable_grad():
        out = attend(q, k, v, hidden)
        grad_out = cpu(s.given["grad_out"]).double()
        return torch.autograd.grad(out, (q, k, v), grad_out)


def _softmax_backward(d: Draw) -> Sample:
    scores = d.t(3, d.int(1, 5))
    grad = d.t(*scores.shape)
    return Sample(A.softmax_backward, (torch.softmax(scores, -1), grad))


def _softmax_backward_ref(s: Sample):
    weights, grad = (cpu(a).double() for a in s.args)
    return weights * (grad - (weights * grad).sum(-1, keepdim=True))


def _backward_delta(d: Draw) -> Sample:
    shape = (d.int(0, 2), d.int(1, 4), d.int(1, 4))
    return Sample(A.backward_delta, (d.t(*shape), d.t(*shape)))


def _weights_from_lse(d: Draw) -> Sample:
    b, Tq, Tk, hd = d.int(0, 2), d.int(1, 5), d.int(1, 5), d.int(1, 4)
    q, k = d.t(b, Tq, hd), d.t(b, Tk, hd)
    lse = torch.logsumexp(q @ k.transpose(-2, -1) / math.sqrt(hd), dim=-1)
    return Sample(attention.weights_from_lse, (q, k, lse))


def _pad_sequences(d: Draw) -> Sample:
    lengths = d.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    width = d.pick([(), (2,)])
    kind = d.pick(["float", "long"])
    seqs = [d.t(n, *width) * 10 for n in lengths]
    if kind == "long":
        seqs = [s.long() for s in seqs]
    return Sample(
        attention.pad_sequences,
        (seqs,),
        {"side": d.pick(["left", "right"]), "value": d.int(-3, 3)},
    )


def _pad_sequences_ref(s: Sample):
    seqs, side, value = s.args[0], s.kwargs["side"], s.kwargs["value"]
    T, width = max(len(x) for x in seqs), tuple(seqs[0].shape[1:])
    padded = torch.full((len(seqs), T, *width), value, dtype=seqs[0].dtype)
    mask = torch.zeros(len(seqs), T, dtype=torch.long)
    for row, x in enumerate(seqs):
        start = 0 if side == "right" else T - len(x)
        padded[row, start : start + len(x)] = cpu(x)
        mask[row, start : start + len(x)] = 1
    return padded, mask


def _masks(fn: Callable) -> Callable[[Draw], Sample]:
    def sample(d: Draw) -> Sample:
        dtype = d.pick([torch.int64, torch.bool, F32])
        return Sample(fn, (d.ids(2, d.int(0, 3), d.int(0, 6)).to(dtype),))

    return sample


def _padded_causal_ref(s: Sample) -> torch.Tensor:
    rows = cpu(s.args[0]).tolist()
    T = s.args[0].shape[1]
    return torch.tensor(
        [[[j > i or row[j] == 0 for j in range(T)] for i in range(T)] for row in rows],
        dtype=torch.bool,
    ).reshape(len(rows), T, T)


def _kv_cache(d: Draw) -> Sample:
    chunks = d.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    layers = d.int(1, 3)
    parts = [d.t(2, 3, n, 4) for n in chunks]

    def fill(*parts):
        cache = KVCache(context_length=sum(chunks) + 1, num_layers=layers)
        for part in parts:
            keys, values = cache.update(layers - 1, part, part * 2)
        return keys, values, cache.num_tokens(layers - 1), cache.nbytes()

    return Sample(fill, tuple(parts))


def _kv_cache_ref(s: Sample):
    keys = torch.cat([cpu(p) for p in s.args], dim=2)
    return keys, keys * 2, keys.shape[2], 2 * keys.numel() * keys.element_size()


def _cached(d: Draw) -> Sample:
    # Chunks of any size up to the whole context (6), empty ones included.
    chunks = d.draw(
        st.lists(st.integers(0, 6), min_size=1, max_size=4).filter(
            lambda c: sum(c) <= 6
        )
    )
    gqa = partial(GroupedQueryAttention, 4, 4, 6, 0.0, num_heads=4, num_kv_heads=2)
    mha = partial(MultiHeadAttention, 4, 4, 6, 0.0, num_heads=2)
    attn = d.module(gqa if d.flag() else mha)

    def in_chunks(attn, x):
        cache = KVCache(6)
        parts = x.split(chunks, dim=1)
        return torch.cat([A.cached_attention(attn, p, cache) for p in parts], dim=1)

    return Sample(in_chunks, (attn, d.t(d.int(0, 2), sum(chunks), 4)))


def _decode(d: Draw) -> Sample:
    """A prefill in chunks of any size (a chunk may be all pads), then a step."""
    b, T = d.int(0, 2), d.int(2, 6)
    chunks = d.draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    lengths = [d.int(1, T) for _ in range(b)]
    mask = left_padding(lengths, T).to(d.device) if d.flag() else None

    def in_chunks(model, ids):
        cache = KVCache(model.context_length, len(model.layers))
        outs, start = [], 0
        for n in (*chunks, T):
            end = min(start + n, T)
            if end > start:
                seen = None if mask is None else mask[:, :end]
                outs.append(
                    attention.decode_step(model, ids[:, start:end], cache, seen)
                )
            start = end
        logits = torch.cat(outs, dim=1)  # (b, T, V)
        # A pad's logits mean nothing: compare the real tokens' only.
        return logits if mask is None else logits * mask[..., None]

    return Sample(
        in_chunks, (tiny_model(d, positions=None), d.ids(7, b, T)), given={"mask": mask}
    )


def left_padding(lengths: Sequence[int], num_tokens: int) -> torch.Tensor:
    """An attention mask: ``num_tokens - n`` zeros, then ``n`` ones, per row."""
    rows = [[0] * (num_tokens - n) + [1] * n for n in lengths]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), num_tokens)


def _generate(fn: Callable) -> Callable[[Draw], Sample]:
    def sample(d: Draw) -> Sample:
        b, P = d.int(0, 3), d.int(1, 4)
        args = (tiny_model(d, positions=None), d.ids(7, b, P), d.int(1, 3))
        if d.flag():  # a left-padded batch of prompts of 1 .. P tokens
            lengths = [d.int(1, P) for _ in range(b)]
            args += (left_padding(lengths, P).to(d.device),)
        return Sample(fn, args)

    return sample


def _generate_alone(model: TinyAttentionModel, ids: torch.Tensor, n: int):
    """Greedy generation of one row, by the formula: ``(T + n,)``, ``(n, V)``."""
    logits = []
    for _ in range(n):
        last = reference_logits(model, ids[None])[0, -1]  # (V,)
        logits.append(last)
        ids = torch.cat((ids, last.argmax(-1, keepdim=True)))
    return ids, torch.stack(logits)


def _generate_ref(s: Sample):
    """Each row generated on its own, its pads put back in front."""
    model, ids, n, *mask = s.args
    model, ids = model.cpu(), cpu(ids)
    mask = cpu(mask[0]) if mask else torch.ones_like(ids)
    rows, logits = [], []
    for row, real in zip(ids, mask.bool(), strict=True):
        alone, row_logits = _generate_alone(model, row[real], n)
        rows.append(torch.cat((row[~real], alone)))
        logits.append(row_logits)
    V = model.out_head.out_features
    if not rows:
        return ids.new_zeros(0, ids.shape[1] + n), torch.zeros(0, n, V)
    return torch.stack(rows), torch.stack(logits)


def _order_blind_ref(s: Sample) -> float:
    best = [
        max(row[:i].count(t) for t in set(row[:i])) / i
        for row in cpu(s.args[0]).tolist()
        for i in range(1, s.args[0].shape[1])
    ]
    return sum(best) / len(best)


def _token_accuracy(d: Draw) -> Sample:
    ids, targets = attention.previous_token_data(
        d.int(1, 5), d.int(2, 5), 7, seed=d.int(0, 99)
    )
    targets[:, 1 : 1 + d.int(0, 3)] = -100
    targets[0, -1] = ids[0, -2]  # at least one counted position
    return Sample(attention.token_accuracy, (tiny_model(d), ids, targets))


def _token_accuracy_ref(s: Sample) -> float:
    model, ids, targets = s.args
    predicted = reference_logits(model, ids).argmax(-1)
    counted = targets != -100
    return ((predicted == targets) & counted).sum().item() / counted.sum().item()


def _train(d: Draw) -> Sample:
    model = d.module(lambda: TinyAttentionModel(4, 4, context_length=4, num_heads=2))
    ids, targets = attention.previous_token_data(8, 4, 4, seed=d.int(0, 99))
    steps = d.int(1, 3)

    def train(model, ids, targets):
        kwargs = {"steps": steps, "batch_size": 4, "lr": d.pick([0.01, 0.5, 1.0])}
        losses = attention.train_model(model.train(), ids, targets, **kwargs)
        return len(losses), all(math.isfinite(v) for v in losses)

    return Sample(train, (model, ids, targets), given={"steps": steps})


def _register(d: Draw) -> Sample:
    name = d.draw(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
            lambda n: n not in VARIANTS
        )
    )

    class Joined(MultiHeadAttention):
        pass

    def register_twice(name, cls):
        try:
            first, again = attention.register(name, cls), attention.register(name, cls)
            return first is cls, again is cls, VARIANTS[name] is cls
        finally:
            VARIANTS.pop(name, None)
            attention.variants.VARIANT_INFO.pop(name, None)

    return Sample(register_twice, (name, Joined))


def _variant_info(d: Draw) -> Sample:
    name, bias = d.pick(sorted(VARIANTS)), d.flag()
    info, cls = variant_info(name), VARIANTS[name]
    x = d.t(2, d.int(1, 6), 4)

    def build_and_call(info, x):
        torch.manual_seed(7)
        return info.build(cls, 4, 6, 6, 0.0, 3, bias).to(x.dtype).eval()(x)

    def directly(x):
        torch.manual_seed(7)
        return cls(4, 6, 6, 0.0, 3, bias, **info.kwargs).to(x.dtype).eval()(x)

    return Sample(build_and_call, (info, x), given={"directly": directly})


def _renormalize_ref(s: Sample) -> torch.Tensor:
    scores = cpu(s.given["scores"])
    return softmax_rows(scores, future(*scores.shape))


def _breakdown(d: Draw) -> Sample:
    return Sample(lambda m: sum(A.parameter_breakdown(m).values()), (_counted(d),))


def _softmax_ref(s: Sample) -> torch.Tensor:
    return softmax_rows(cpu(s.args[0]).double())


def _decode_ref(s: Sample) -> torch.Tensor:
    """Each row's real tokens on their own, by the formula; zeros at its pads."""
    model, ids = s.args[0].cpu(), cpu(s.args[1])
    if s.given["mask"] is None:
        return reference_logits(model, ids)
    V, dtype = model.out_head.out_features, model.out_head.weight.dtype
    logits = torch.zeros(*ids.shape, V, dtype=dtype)
    for n, real in enumerate(cpu(s.given["mask"]).bool()):
        logits[n, real] = reference_logits(model, ids[n, real][None])[0]
    return logits


EXAMPLE = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]
MHA = built(MultiHeadAttention, **MHA_ARGS)
MODEL = built(
    TinyAttentionModel, vocab_size=4, d_model=4, context_length=4, num_heads=2
)
IDS = torch.tensor([[1, 2, 3, 0]])
Q = z(1, 2, 3)  # (b, T, hd): queries, keys or values
LSE = z(1, 2)
CLASS = "type|class"


def _with_attn(attn: nn.Module) -> TinyAttentionModel:
    model = MODEL()
    model.layers[0] = attn
    return model


def _train_with(**overrides) -> Callable[[], object]:
    def call():
        ids, targets = A.previous_token_data(4, 4, 4)
        kwargs = {"steps": 1, "batch_size": 2, "lr": 0.5, **overrides}
        return A.train_model(MODEL(), ids, targets, **kwargs)

    return call


def _uneven_cache(model: TinyAttentionModel) -> KVCache:
    """A cache whose first layer alone holds tokens (2 of them)."""
    cache = KVCache(model.context_length, len(model.layers))
    CACHED(model.layers[0], z(1, 2, model.layers[0].d_in), cache)
    return cache


def _generation_errors(name: str) -> tuple[ErrorInput, ...]:
    """A model, token ids and a length that do not fit, for each generator."""
    if name == "decode_step":
        run = lambda model, ids, n: A.decode_step(model, ids, KVCache(6))  # noqa: E731
    else:
        run = getattr(A, name)
    model = lambda: TinyAttentionModel(7, 4, 6, num_heads=2)  # noqa: E731
    ids, ids_ = torch.tensor([[1, 2]]), "token_ids|token ids"
    errors = (
        bad("model-mha", lambda: run(MHA(), ids, 2), "model; MultiHeadAttention", TYPE),
        bad(
            "model-class",
            lambda: run(TinyAttentionModel, ids, 2),
            f"model; {CLASS}",
            TYPE,
        ),
        bad("swapped", lambda: run(ids, model(), 2), "model; Tensor", TYPE),
        bad("ids-float", lambda: run(model(), ids.float(), 2), f"{ids_}; float32"),
        bad("ids-rank", lambda: run(model(), ids[0], 2), f"{ids_}; (b, T)|2; (2,)|1"),
        bad("ids-vocab", lambda: run(model(), ids + 7, 2), f"{ids_}; 7"),
        bad(
            "too-long", lambda: run(model(), z(1, 7).long(), 2), "context_length; 6; 7"
        ),
        bad("ids-meta", lambda: run(model(), ids.to("meta"), 2), f"{ids_}; meta"),
    )
    if name == "decode_step":
        at = lambda p: A.decode_step(model(), ids, KVCache(6), position_ids=p)  # noqa: E731
        errors += (
            bad(
                "positions-negative",
                lambda: at(torch.tensor([-1, 0])),
                "position_ids; -1",
            ),
            bad(
                "positions-float",
                lambda: at(torch.tensor([0.0, 1.0])),
                "position_ids; float32",
            ),
            bad(
                "positions-length",
                lambda: at(torch.tensor([0, 1, 2])),
                "position_ids; (3,)",
            ),
            bad(
                "positions-uint8",
                lambda: at(torch.tensor([0, 1], dtype=torch.uint8)),
                "position_ids; uint8",
            ),
            # decode_step has no x: the message names what it compared with
            bad(
                "positions-meta",
                lambda: at(torch.arange(2, device="meta")),
                "position_ids; meta; token_ids",
            ),
            # a learned table has 6 rows: position 6 has none
            bad(
                "positions-past-table",
                lambda: at(torch.tensor([5, 6])),
                "position_ids; pos_emb; 6",
            ),
        )
    if name == "decode_step":
        small = lambda: TinyAttentionModel(7, 4, 6, num_heads=2, num_layers=2)  # noqa: E731
        errors += (
            bad(
                "mask-float",
                lambda: A.decode_step(model(), ids, KVCache(6), torch.ones(1, 2)),
                "attention_mask; float32; integers",
            ),
            bad(
                "mask-meta",
                lambda: A.decode_step(
                    model(), ids, KVCache(6), torch.ones(1, 2, device="meta").long()
                ),
                "attention_mask; meta; token_ids",
            ),
            # the cache's own context_length, shorter than the model's
            bad(
                "cache-too-long",
                lambda: A.decode_step(model(), z(1, 5).long(), KVCache(4)),
                "cache.context_length; 4; 5",
            ),
            # a cache that another call filled: another batch, or another width
            bad(
                "cache-batch",
                lambda: A.decode_step(
                    model(), torch.tensor([[1], [2]]), _decode_cache(model(), ids)
                ),
                "cache; batch; 2; 1",
            ),
            bad(
                "cache-dtype",
                lambda: A.decode_step(
                    model(), ids, _decode_cache(model().double(), ids)
                ),
                "cache; float64; float32",
            ),
            bad(
                "cache-layers",
                lambda: A.decode_step(small(), ids, KVCache(6)),
                "cache; num_layers; 2; 1",
            ),
            # layer 0 filled by cached_attention alone: layers out of step
            bad(
                "cache-uneven",
                lambda: A.decode_step(small(), ids, _uneven_cache(small())),
                "cache; every layer; (2, 0)",
            ),
        )
    if name != "decode_step":
        right = torch.tensor([[1, 2], [3, 0]]), torch.tensor([[1, 1], [1, 0]])
        errors += (
            *bad_values(lambda n: run(model(), ids, n), "max_new_tokens"),
            # ids hold 2 of the 6 tokens: at most 5 new ones, whatever n is
            bad(
                "n-huge",
                lambda: run(model(), ids, 2**70),
                "max_new_tokens; 5; 1180591620717411303424",
            ),
            bad(
                "n-numpy-float",
                lambda: run(model(), ids, np.float64(2)),
                "max_new_tokens; float64",
                TYPE,
            ),
            bad(
                "mask-float",
                lambda: run(model(), ids, 2, torch.ones(1, 2)),
                "attention_mask; float32; integers",
            ),
            bad(
                "mask-device",
                lambda: run(model(), ids, 2, torch.ones(1, 2, device="meta").long()),
                "attention_mask; meta; cpu",
            ),
            bad("n--1", lambda: run(model(), ids, -1), "max_new_tokens; -1"),
            # the prompt fills the context: no room for a token fed back
            bad(
                "no-room",
                lambda: run(model(), z(1, 6).long(), 2),
                "max_new_tokens; 2; 6",
            ),
            bad(
                "mask-shape",
                lambda: run(model(), ids, 2, torch.ones(1, 3)),
                "attention_mask; (1, 2); (1, 3)",
            ),
            bad(
                "mask-right",
                lambda: run(model(), *right[:1], 2, right[1]),
                "attention_mask; left-padded; [1, 0]",
            ),
            bad(
                "mask-empty-row",
                lambda: run(model(), ids, 2, torch.tensor([[0, 0]])),
                "attention_mask; real token; [0, 0]",
            ),
            bad(
                "mask-values",
                lambda: run(model(), ids, 2, torch.tensor([[2, 1]])),
                "attention_mask; 2",
            ),
        )
    return errors


def _previous_token_data(d: Draw) -> Sample:
    def facts(n, T, vocab, seed):
        """What ``previous_token_data`` promises: ids in the vocabulary, targets
        the previous token, nothing to predict at position 0."""
        ids, targets = A.previous_token_data(n, T, vocab, seed=seed)
        return (
            bool(((ids >= 0) & (ids < vocab)).all()),
            bool((targets[:, 0] == -100).all()),
            torch.equal(targets[:, 1:], ids[:, :-1]),
        )

    return Sample(facts, (d.int(1, 5), d.int(2, 6), d.int(2, 9), d.int(0, 2**16)))


def _order_blind(d: Draw) -> Sample:
    vocab = d.int(2, 5)
    ids, _ = A.previous_token_data(d.int(1, 5), d.int(2, 6), vocab, seed=d.int(0, 99))
    return Sample(A.order_blind_accuracy, (ids, vocab))


def _attention_weights_ref(s: Sample) -> torch.Tensor:
    model, ids = s.args[0].cpu(), cpu(s.args[1])
    x = model.tok_emb.weight.detach()[ids]
    x = x + model.pos_emb.weight.detach()[: ids.shape[1]]
    return reference_multihead(chapter_state(model.attn), x, 2, weights_only=True)


def _lse_weights_ref(s: Sample) -> torch.Tensor:
    q, k = (cpu(a).double() for a in s.args[:2])
    return softmax_rows(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))


def _mass(d: Draw) -> Sample:
    T = d.int(2, 5)
    weights = d.t(d.int(1, 3), d.int(1, 3), T, T).softmax(-1)
    return Sample(A.previous_token_mass, (weights,))


KV_SIZES = ["batch", "tokens", "layers", "kv_heads", "head_dim", "bytes_per_element"]


def _kv_sizes(**bad_one) -> int:
    return A.kv_cache_bytes(**{**dict.fromkeys(KV_SIZES, 1), **bad_one})


PAD = "attention_mask"


def PADDED(mask: object) -> torch.Tensor:
    return PaddedMultiHeadAttention(3, 4, 6, 0.0, 2)(z(2, 3, 3), mask)


# Factories, not shared instances: an error input may move its module with
# .to(), which moves a module in place.
V1 = built(SelfAttention_v1, d_in=3, d_out=2)
V2 = built(SelfAttention_v2, d_in=3, d_out=2)
COPY_V2 = A.copy_weights_v2_to_v1
CACHED = A.cached_attention
TILES = A.attention_over_key_tiles
SDPA = built(SDPAMultiHeadAttention, **MHA_ARGS)
LOAD = A.variants.load_mha_state_dict
CAUSAL = built(CausalAttention, d_in=4, d_out=2, context_length=6, dropout=0.0)
MHA_CLASS = MultiHeadAttention
GQA = built(GroupedQueryAttention, **MHA_ARGS, num_kv_heads=1)
IDS_ = "token_ids|token ids"
CPU_ONLY = ("cpu",)


def _cache_of(attn: nn.Module, x: torch.Tensor, context_length: int = 6) -> KVCache:
    """A cache that ``attn`` filled with ``x``: the cache of another call."""
    cache = KVCache(context_length)
    CACHED(attn, x, cache)
    return cache


def _decode_cache(model: TinyAttentionModel, ids: torch.Tensor) -> KVCache:
    """A cache that ``model`` filled with ``ids`` through ``decode_step``."""
    cache = KVCache(model.context_length, len(model.layers))
    A.decode_step(model, ids, cache)
    return cache


PUBLIC: list[OpInfo] = []


def public(name: str, sample, reference, *errors: ErrorInput, **options) -> None:
    """Add the record of the public callable ``name`` to ``PUBLIC``: how to draw
    a valid call, its reference, then its error inputs; ``options`` are the
    record's ``dtypes``, ``devices`` or ``tolerances``."""
    PUBLIC.append(OpInfo(name, sample, reference, errors, **options))


public(
    "dot_scores",
    _dot_scores,
    _dot_scores_ref,
    *tensor_errors(lambda x: A.dot_scores(x, z(2, 3)), "query", z(3), True),
    bad("width", lambda: A.dot_scores(z(4), z(2, 3)), "query; 4; 3"),
)


public(
    "softmax_naive",
    lambda d: Sample(A.softmax_naive, (d.t(d.int(1, 5)),)),
    lambda s: softmax_rows(cpu(s.args[0])),
    *tensor_errors(A.softmax_naive, "x", z(3)),
    bad("dim-1", lambda: A.softmax_naive(z(3), dim=1), "dim; 1"),
    bad("dim-None", lambda: A.softmax_naive(z(3), dim=None), "dim; None", TYPE),
)


public(
    "weighted_sum",
    _weighted_sum,
    _weighted_sum_ref,
    *tensor_errors(
        lambda p: A.weighted_sum(p, z(2, 3)), "attn_weights", z(2), mixed=True
    ),
    bad("lengths", lambda: A.weighted_sum(z(3), z(2, 3)), "attn_weights; 3; 2"),
)


public(
    "simple_self_attention",
    lambda d: Sample(A.simple_self_attention, (d.t(d.int(1, 5), d.int(1, 5)),)),
    _simple_ref,
    *tensor_errors(A.simple_self_attention, "inputs", z(3, 3)),
    bad("rank", lambda: A.simple_self_attention(z(3)), "inputs; 2; (3,)|1"),
)


public(
    "causal_mask",
    lambda d: Sample(A.causal_mask, (d.int(0, 8),), {"device": d.device}),
    lambda s: future(s.args[0], s.args[0]),
    # 0 tokens are a valid call: an empty mask
    *bad_values(A.causal_mask, "num_tokens", [v for v in SIZES if v[0] != 0]),
    bad("device-str", lambda: A.causal_mask(3, device="nowhere"), "device; nowhere"),
    # a corner a fuzz found (issue 26), as the three records after it
    bad("cuda-without-cuda", lambda: A.causal_mask(3, device="cuda"), "device; cuda"),
    # 2**64 bools: a size torch cannot count (a raw RuntimeError before)
    bad("overflow", lambda: A.causal_mask(2**32), "num_tokens; 4294967296; 2**63"),
    dtypes=(F32,),
)


public(
    "window_mask",
    lambda d: Sample(
        A.window_mask,
        (d.int(0, 4), d.int(4, 9), d.pick([None, 1, 2, 3, 9]), d.int(0, 3)),
        {"device": d.device},
    ),
    lambda s: outside_window(*s.args),
    *bad_values(lambda n: A.window_mask(n, 4), "num_queries", SIZES[1:]),
    bad("more-queries", lambda: A.window_mask(5, 4), "num_keys; 5; 4"),
    *bad_values(lambda w: A.window_mask(2, 4, window=w), "window", WINDOWS),
    *bad_values(
        lambda t: A.window_mask(2, 4, 2, sink_tokens=t), "sink_tokens", SIZES[1:]
    ),
    bad("device-str", lambda: A.window_mask(1, 2, device="nowhere"), "device; nowhere"),
    dtypes=(F32,),
)


public(
    "mask_with_neg_inf",
    lambda d: Sample(A.mask_with_neg_inf, (d.t(2, *[d.int(1, 5)] * 2),)),
    _mask_ref,
    *tensor_errors(A.mask_with_neg_inf, "attn_scores", z(3, 3)),
)


public(
    "renormalize_masked",
    _renormalize,
    _renormalize_ref,
    *tensor_errors(A.renormalize_masked, "attn_weights", z(3, 3)),
    bad("not-square", lambda: A.renormalize_masked(z(3, 2)), "attn_weights; (3, 2)|3"),
)


public(
    "SelfAttention_v1",
    _v1,
    _v1_ref,
    *module_inputs(built(SelfAttention_v1, d_in=4, d_out=2), lead=()),
    *bad_values(lambda v: SelfAttention_v1(4, v), "d_out"),
)


public(
    "SelfAttention_v2",
    _v2,
    lambda s: attend(*qkv(s.fn, cpu(s.args[0]))),
    *module_inputs(built(SelfAttention_v2, d_in=4, d_out=2), lead=()),
    *bad_values(lambda v: SelfAttention_v2(4, v), "d_out"),
    bad(
        "qkv_bias-None",
        lambda: SelfAttention_v2(4, 2, qkv_bias=None),
        "qkv_bias; None",
        TYPE,
    ),
)


public(
    "copy_weights_v2_to_v1",
    _copy_v2_to_v1,
    lambda s: s.args[0](cpu(s.args[2])),
    bad("swapped", lambda: COPY_V2(V1(), V2()), "swapped; SelfAttention_v1"),
    bad("sizes", lambda: COPY_V2(V2(), V1(d_out=4)), "d_out|shape; 2; 4"),
    bad(
        "bias",
        lambda: COPY_V2(V2(qkv_bias=True), V1()),
        "qkv_bias|bias",
    ),
    bad("class", lambda: COPY_V2(SelfAttention_v2, V1()), f"sa_v2; {CLASS}", TYPE),
    bad(
        "from-meta",
        lambda: COPY_V2(V2().to("meta"), V1()),
        "sa_v2; meta",
    ),
    devices=CPU_ONLY,
)


public(
    "CausalAttention",
    _causal,
    _causal_ref,
    *batch_inputs(CAUSAL, heads=0),
)


public(
    "MultiHeadAttentionWrapper",
    _wrapper,
    _causal_ref,
    *batch_inputs(
        built(MultiHeadAttentionWrapper, **{**MHA_ARGS, "d_out": 2}), heads=1
    ),
)


public(
    "CrossAttention",
    _cross,
    lambda s: attend(*qkv(s.fn, *map(cpu, s.args))),
    *not_tensors(lambda x: CrossAttention(4, 2)(x, z(1, 3, 4)), "x"),
    *not_tensors(lambda c: CrossAttention(4, 2)(z(1, 3, 4), c), "context"),
    bad(
        "width",
        lambda: CrossAttention(4, 2, d_context=5)(z(1, 3, 4), z(1, 2, 4)),
        "context; 5; 4",
    ),
    bad(
        "batches",
        lambda: CrossAttention(4, 2)(z(2, 3, 4), z(3, 2, 4)),
        "context|x; 2; 3",
    ),
    # a corner a fuzz found (issue 44): the documented shapes are (b, T, d)
    bad(
        "four-dims",
        lambda: CrossAttention(4, 2)(z(1, 1, 3, 4), z(1, 1, 2, 4)),
        "x; (b, T, d_in)|3-D; (1, 1, 3, 4)",
    ),
    bad(
        "float64",
        lambda: CrossAttention(4, 2)(z(1, 3, 4), z(1, 2, 4).double()),
        "context; float64",
    ),
    *bad_values(lambda v: CrossAttention(v, 2), "d_in"),
    *bad_values(lambda v: CrossAttention(4, 2, d_context=v), "d_context")[:2],
    bad("qkv_bias-2", lambda: CrossAttention(4, 2, qkv_bias=2), "qkv_bias; 2", TYPE),
)


public(
    "GroupedQueryAttention",
    _gqa,
    lambda s: _chapter_ref(s.fn, *s.args),
    *batch_inputs(GQA),
    *bad_values(lambda v: GQA(num_kv_heads=v), "num_kv_heads"),
    bad(
        "context-overflow",
        lambda: GQA(context_length=2**32),
        "context_length; 4294967296; 2**63",
    ),
    bad(
        "kv-split",
        lambda: GroupedQueryAttention(4, 8, 6, 0.0, 4, 3),
        "num_kv_heads; num_heads; 3; 4",
    ),
)


public(
    "mean_pool_kv_heads",
    _mean_pool,
    _mean_pool_ref,
    *bad_values(lambda v: A.mean_pool_kv_heads(MHA(), v), "num_kv_heads"),
    bad(
        "kv-split",
        lambda: A.mean_pool_kv_heads(MHA(), 3),
        "num_kv_heads; num_heads; 3; 2",
    ),
    bad("not-mha", lambda: A.mean_pool_kv_heads(GQA(), 1), "mha", TYPE),
    # a rotary layer is a MultiHeadAttention; its GQA would not rotate
    bad(
        "rotary",
        lambda: A.mean_pool_kv_heads(RotaryMultiHeadAttention(4, 4, 6, 0.0, 2), 2),
        "mha; RoPE; RotaryMultiHeadAttention",
    ),
)


public(
    "PaddedMultiHeadAttention",
    _padded,
    _padded_ref,
    bad("mask-shape", lambda: PADDED(torch.ones(2, 4)), f"{PAD}; (2, 3)|3; (2, 4)|4"),
    bad("mask-rank", lambda: PADDED(torch.ones(2, 3, 1)), f"{PAD}; 2; 3"),
    bad(
        "mask-values", lambda: PADDED(torch.full((2, 3), 2)), f"{PAD}; 0|zeros; 1|ones"
    ),
    bad(
        "mask-nan", lambda: PADDED(torch.full((2, 3), math.nan)), f"{PAD}; 0|zeros; nan"
    ),
    bad(
        "mask-meta",
        lambda: PADDED(torch.ones(2, 3, device="meta")),
        f"{PAD}; meta; cpu",
    ),
    bad("mask-list", lambda: PADDED([[1, 1, 1]] * 2), f"{PAD}; list", TYPE),
)


public(
    "count_parameters",
    lambda d: Sample(A.count_parameters, (_counted(d),)),
    _trainable,
    *not_tensors(A.count_parameters, "module"),
    bad(
        "class",
        lambda: A.count_parameters(MultiHeadAttention),
        f"module; {CLASS}",
        TYPE,
    ),
    bad(
        "state",
        lambda: A.count_parameters({"W_query.weight": z(1)}),
        "module; dict",
        TYPE,
    ),
    dtypes=(F32,),
)


public(
    "parameter_breakdown",
    _breakdown,
    _trainable,
    *not_tensors(A.parameter_breakdown, "module"),
    bad(
        "class",
        lambda: A.parameter_breakdown(MultiHeadAttention),
        f"module; {CLASS}",
        TYPE,
    ),
    dtypes=(F32,),
)


public(
    "copy_weights",
    _copy_weights,
    lambda s: s.args[0](cpu(s.args[2])),
    *not_tensors(lambda src: A.copy_weights(src, MHA()), "src"),
    *not_tensors(lambda dst: A.copy_weights(MHA(), dst), "dst"),
    bad(
        "src-class",
        lambda: A.copy_weights(MultiHeadAttention, MHA()),
        f"src; {CLASS}",
        TYPE,
    ),
    bad("dst-linear", lambda: A.copy_weights(MHA(), nn.Linear(2, 2)), "dst; Linear"),
    bad("dst-size", lambda: A.copy_weights(MHA(), MHA(d_out=8)), "dst; d_out; 4; 8"),
    bad("src-meta", lambda: A.copy_weights(MHA().to("meta"), MHA()), "meta; cpu"),
    bad("state-list", lambda: LOAD(MHA(), [1]), "state; list", TYPE),
    bad("state-values", lambda: LOAD(MHA(), {"a": 1}), "state; tensors|Tensor"),
    devices=CPU_ONLY,
)


public(
    "softmax_three_pass",
    _rows(A.softmax_three_pass),
    _softmax_ref,
    *tensor_errors(A.softmax_three_pass, "attn_scores", z(2, 3)),
    bad("scalar", lambda: A.softmax_three_pass(torch.tensor(1.0)), "attn_scores; ()|0"),
    bad("no-columns", lambda: A.softmax_three_pass(z(3, 0)), "attn_scores; 0|empty"),
)


public(
    "online_softmax",
    _rows(A.online_softmax, True),
    _softmax_ref,
    *tensor_errors(lambda s: A.online_softmax(s, 2), "attn_scores", z(2, 3)),
    *bad_values(lambda v: A.online_softmax(z(2, 3), v), "tile_size"),
)


public(
    "online_softmax_stats",
    _rows(A.online_softmax_stats, True),
    _stats_ref,
    *tensor_errors(lambda s: A.online_softmax_stats(s, 2), "attn_scores", z(2, 3)),
    *bad_values(lambda v: A.online_softmax_stats(z(2, 3), v), "tile_size"),
)


public(
    "attention_over_key_tiles",
    _qkv_sample(TILES),
    _flash_ref,
    *not_tensors(lambda q: TILES(q, Q, Q, 2), "queries"),
    *tensor_errors(lambda k: TILES(Q, k, Q, 2), "keys", Q, True),
    *not_tensors(lambda v: TILES(Q, Q, v, 2), "values"),
    bad("head_dim", lambda: TILES(Q, z(1, 2, 4), Q, 2), "head_dim; 3; 4"),
    bad("batch", lambda: TILES(Q, z(2, 2, 3), z(2, 2, 3), 2), "keys; leading|batch"),
    bad("rank", lambda: TILES(Q, z(3), z(3), 2), "keys; 2"),
    bad("no-keys", lambda: TILES(Q, z(1, 0, 3), z(1, 0, 3), 2), "keys; one|1"),
    *bad_values(lambda v: TILES(Q, Q, Q, v), "tile_size"),
)


#: flash_attention's tensor errors for sinks, but None: no sink is valid.
SINK_ERRORS = [
    error
    for error in tensor_errors(
        lambda s: A.flash_attention(Q, Q, Q, sinks=s), "sinks", z(1), True
    )
    if error.id != "sinks-None"
]


public(
    "flash_attention",
    _qkv_sample(A.flash_attention),
    _flash_ref,
    *not_tensors(lambda q: A.flash_attention(q, Q, Q), "queries"),
    *tensor_errors(lambda v: A.flash_attention(Q, Q, v), "values", Q, True),
    bad("head_dim", lambda: A.flash_attention(Q, z(1, 2, 4), Q), "head_dim; 3; 4"),
    bad(
        "causal-None",
        lambda: A.flash_attention(Q, Q, Q, causal=None),
        "causal; None",
        TYPE,
    ),
    *bad_values(lambda v: A.flash_attention(Q, Q, Q, tile_size=v), "tile_size"),
    *bad_values(
        lambda p: A.flash_attention(Q, Q, Q, dropout_p=p), "dropout_p", PROBABILITIES
    ),
    *bad_values(
        lambda w: A.flash_attention(Q, Q, Q, True, window=w), "window", WINDOWS
    ),
    bad("window-dense", lambda: A.flash_attention(Q, Q, Q, window=2), "window; causal"),
    *SINK_ERRORS,
    bad("sinks-heads", lambda: A.flash_attention(Q, Q, Q, sinks=z(3)), "sinks; (3,)"),
    bad("sinks-no-heads", lambda: A.flash_attention(LSE, LSE, LSE, sinks=z(1)), "h"),
)


public(
    "softmax_backward",
    _softmax_backward,
    _softmax_backward_ref,
    *not_tensors(lambda p: A.softmax_backward(p, LSE), "attn_weights"),
    bad("shape", lambda: A.softmax_backward(LSE, z(1, 3)), "grad_weights; (1, 3)"),
)


public(
    "backward_delta",
    _backward_delta,
    lambda s: torch.einsum("btd,btd->bt", *(cpu(a).double() for a in s.args)),
    *not_tensors(lambda o: A.backward_delta(Q, o), "context_vec"),
    bad("shape", lambda: A.backward_delta(Q, z(1, 3, 3)), "context_vec; (1, 3, 3)"),
)


public(
    "tile_backward",
    _backward_sample(A.tile_backward),
    _backward_ref,
    *not_tensors(lambda g: A.tile_backward(Q, Q, Q, g, LSE, LSE), "grad_out"),
    bad("lse", lambda: A.tile_backward(Q, Q, Q, Q, z(1, 3), LSE), "lse; (1, 3)"),
    bad(
        "future-meta",
        lambda: A.tile_backward(Q, Q, Q, Q, LSE, LSE, future(2, 2).to("meta")),
        "future; meta; cpu",
    ),
    bad(
        "future-float",
        lambda: A.tile_backward(Q, Q, Q, Q, LSE, LSE, future(2, 2).float()),
        "future; bool; float32",
    ),
)


public(
    "flash_attention_backward",
    _backward_sample(A.flash_attention_backward),
    _backward_ref,
    *not_tensors(
        lambda o: A.flash_attention_backward(Q, Q, Q, o, LSE, Q), "context_vec"
    ),
    *bad_values(
        lambda v: A.flash_attention_backward(Q, Q, Q, Q, LSE, Q, False, v), "tile_size"
    ),
)


public(
    "FlashAttentionFunction",
    _backward_sample(A.FlashAttentionFunction.apply),
    _backward_ref,
    *not_tensors(lambda q: A.FlashAttentionFunction.apply(q, Q, Q), "queries"),
)


public(
    "weights_from_lse",
    _weights_from_lse,
    _lse_weights_ref,
    *not_tensors(lambda q: A.weights_from_lse(q, Q, LSE), "queries"),
    *tensor_errors(lambda lse: A.weights_from_lse(Q, Q, lse), "lse", LSE, True),
    bad(
        "lse-shape",
        lambda: A.weights_from_lse(Q, Q, z(1, 3)),
        "lse; (1, 2)|2; (1, 3)|3",
    ),
    bad("head_dim", lambda: A.weights_from_lse(Q, z(1, 2, 4), LSE), "head_dim; 3; 4"),
)


public(
    "pad_sequences",
    _pad_sequences,
    _pad_sequences_ref,
    bad("side", lambda: A.pad_sequences([z(2)], side="middle"), "side; middle"),
    bad("side-None", lambda: A.pad_sequences([z(2)], side=None), "side; None", TYPE),
    bad("empty", lambda: A.pad_sequences([]), "sequences; empty|one|0"),
    bad("tensor", lambda: A.pad_sequences(z(2, 3)), "sequences; Tensor", TYPE),
    bad(
        "None",
        lambda: A.pad_sequences([z(2), None]),
        "sequences[1]|sequences; None|NoneType",
        TYPE,
    ),
    bad(
        "rank0", lambda: A.pad_sequences([torch.tensor(1.0)]), "sequences; 0|dimension"
    ),
    bad("widths", lambda: A.pad_sequences([z(2, 3), z(2, 4)]), "3; 4"),
    bad("device", lambda: A.pad_sequences([z(2), z(2, device="meta")]), "meta; cpu"),
    bad("value", lambda: A.pad_sequences([z(2).long()], value=0.5), "value; 0.5"),
)


public(
    "key_padding_mask",
    _masks(A.key_padding_mask),
    lambda s: cpu(s.args[0]) == 0,
    *not_tensors(A.key_padding_mask, PAD),
    bad("rank", lambda: A.key_padding_mask(torch.ones(3)), f"{PAD}; 2; 1"),
    bad(
        "values",
        lambda: A.key_padding_mask(torch.tensor([[1, 2]])),
        f"{PAD}; 0|zeros; 2",
    ),
    bad("negative", lambda: A.key_padding_mask(-torch.ones(1, 2)), f"{PAD}; 0|zeros"),
    dtypes=(F32,),
)


public(
    "padded_causal_mask",
    _masks(A.padded_causal_mask),
    _padded_causal_ref,
    *not_tensors(A.padded_causal_mask, PAD),
    bad("rank", lambda: A.padded_causal_mask(torch.ones(1, 2, 2)), f"{PAD}; 2; 3"),
    dtypes=(F32,),
)


public(
    "KVCache",
    _kv_cache,
    _kv_cache_ref,
    *bad_values(KVCache, "context_length"),
    *bad_values(lambda v: KVCache(4, num_layers=v), "num_layers")[:3],
    *tensor_errors(lambda k: KVCache(4).update(0, k, k), "keys", z(1, 2, 1, 5)),
    bad(
        "layer", lambda: KVCache(4).update(1, z(1, 2, 1, 5), z(1, 2, 1, 5)), "layer; 1"
    ),
    bad(
        "overflow",
        lambda: KVCache(2).update(0, z(1, 2, 3, 5), z(1, 2, 3, 5)),
        "context_length; 2; 3",
    ),
    bad(
        "keys-rank",
        lambda: KVCache(4).update(0, z(2, 1, 5), z(2, 1, 5)),
        "keys; 4-dimensional|4; (2, 1, 5)",
    ),
    bad(
        "values-shape",
        lambda: KVCache(4).update(0, z(1, 2, 1, 5), z(1, 2, 1, 4)),
        "values; 5; 4",
    ),
    *bad_values(lambda v: KVCache(4, window=v), "window")[:4],
    bad("window-per-layer", lambda: KVCache(4, 2, window=[2]), "window; 2; 1"),
    bad("sinks-no-window", lambda: KVCache(4, sink_tokens=1), "sink_tokens; window"),
    bad(
        "sinks-negative",
        lambda: KVCache(4, window=2, sink_tokens=-1),
        "sink_tokens; -1",
    ),
    bad("positions", lambda: KVCache(4, window=2, positions="rel"), "positions; rel"),
)


public(
    "cached_attention",
    _cached,
    lambda s: _chapter_ref(*s.args),
    bad(
        "attn-sdpa",
        lambda: CACHED(SDPA(), z(1, 2, 4), KVCache(6)),
        "attn; SDPAMultiHeadAttention",
    ),
    bad(
        "attn-class",
        lambda: CACHED(MultiHeadAttention, z(1, 2, 4), KVCache(6)),
        f"attn; {CLASS}",
        TYPE,
    ),
    bad("swapped", lambda: CACHED(z(1, 2, 4), MHA(), KVCache(6)), "attn; Tensor", TYPE),
    bad("cache-dict", lambda: CACHED(MHA(), z(1, 2, 4), {}), "cache; dict", TYPE),
    *tensor_errors(lambda x: CACHED(MHA(), x, KVCache(6)), "x", z(1, 2, 4), True),
    bad("x-width", lambda: CACHED(MHA(), z(1, 2, 5), KVCache(6)), "d_in; 4; 5"),
    bad(
        "too-long",
        lambda: CACHED(MHA(), z(1, 7, 4), KVCache(8)),
        "context_length; 6; 7",
    ),
    # the cache's own context_length, shorter than the module's
    bad(
        "cache-too-long",
        lambda: CACHED(MHA(), z(1, 5, 4), KVCache(4)),
        "cache.context_length; 4; 5",
    ),
    bad(
        "cache-full",
        lambda: CACHED(MHA(), z(1, 1, 4), _cache_of(MHA(), z(1, 4, 4), 4)),
        "cache.context_length; 4; holds",
    ),
    # a cache that another call filled: another batch, heads, dtype, device
    bad(
        "cache-batch",
        lambda: CACHED(MHA(), z(3, 1, 4), _cache_of(MHA(), z(2, 3, 4))),
        "cache; batch; 3; 2",
    ),
    bad(
        "cache-kv-heads",
        lambda: CACHED(GQA(), z(2, 1, 4), _cache_of(MHA(), z(2, 3, 4))),
        "cache; kv_heads; another call",
    ),
    bad(
        "cache-dtype",
        lambda: CACHED(
            MHA(), z(2, 1, 4), _cache_of(MHA().double(), z(2, 3, 4).double())
        ),
        "cache; float64; float32",
    ),
    bad(
        "cache-device",
        lambda: CACHED(
            MHA(), z(2, 1, 4), _cache_of(MHA().to("meta"), z(2, 3, 4).to("meta"))
        ),
        "cache; meta; cpu",
    ),
    bad(
        "cache-layer",
        lambda: CACHED(MHA(), z(1, 1, 4), KVCache(6), layer=1),
        "layer; 1",
    ),
    bad(
        "cache-layer-numpy-float",
        lambda: CACHED(MHA(), z(1, 1, 4), KVCache(6), layer=np.float64(0)),
        "layer; float64",
        TYPE,
    ),
    bad(
        "mask-float",
        lambda: CACHED(MHA(), z(1, 2, 4), KVCache(6), attention_mask=torch.ones(1, 2)),
        "attention_mask; float32; integers",
    ),
    bad(
        "mask-device",
        lambda: CACHED(
            MHA(),
            z(1, 2, 4),
            KVCache(6),
            attention_mask=torch.ones(1, 2, device="meta").long(),
        ),
        "attention_mask; meta; cpu",
    ),
)


public(
    "decode_step",
    _decode,
    _decode_ref,
    *_generation_errors("decode_step"),
)


public(
    "generate_greedy",
    _generate(A.generate_greedy),
    _generate_ref,
    *_generation_errors("generate_greedy"),
)


public(
    "generate_greedy_cached",
    _generate(A.generate_greedy_cached),
    _generate_ref,
    *_generation_errors("generate_greedy_cached"),
)


public(
    "repeat_kv",
    lambda d: Sample(
        A.repeat_kv, (d.t(d.int(0, 2), d.int(1, 5), d.int(0, 4), 3), d.int(1, 5))
    ),
    lambda s: cpu(s.args[0]).repeat_interleave(s.args[1], dim=1),
    *not_tensors(lambda x: A.repeat_kv(x, 2), "x"),
    bad("x-rank", lambda: A.repeat_kv(z(2, 3, 4), 2), "x; 4; 3"),
    *bad_values(lambda v: A.repeat_kv(z(1, 2, 3, 4), v), "repeats"),
    bad(
        "repeats-overflow",
        lambda: A.repeat_kv(z(1, 2, 3, 4), 2**62),
        "repeats; 4611686018427387904",
    ),
    bad(
        "repeats-numpy-float",
        lambda: A.repeat_kv(z(1, 2, 3, 4), np.float64(2)),
        "repeats; float64",
        TYPE,
    ),
    bad(
        "check-str",
        lambda: A.repeat_kv(z(1, 2, 3, 4), 2, check="no"),
        "check; no",
        TYPE,
    ),
)


public(
    "kv_cache_bytes",
    lambda d: Sample(
        A.kv_cache_bytes, (*[d.int(1, 5) for _ in range(5)], d.pick([2, 4, 8]))
    ),
    lambda s: 2 * math.prod(s.args),
    *tuple(
        e
        for name in KV_SIZES
        for e in bad_values(lambda v, name=name: _kv_sizes(**{name: v}), name)[:2]
    ),
    bad(
        "numpy-float", lambda: _kv_sizes(tokens=np.float64(2)), "tokens; float64", TYPE
    ),
    bad("numpy-bool", lambda: _kv_sizes(layers=np.bool_(True)), "layers; bool", TYPE),
    bad("numpy-zero", lambda: _kv_sizes(batch=np.int64(0)), "batch; 0"),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


def _windows_sample(d: Draw) -> Sample:
    return Sample(A.layer_windows, (d.int(1, 9), d.int(1, 5), d.pick([None, 1, 2, 5])))


def _windows_ref(s: Sample) -> list:
    num_layers, window, local = s.args
    if local is None:
        return [window] * num_layers
    # a global layer after every `local` local ones
    return [None if i % (local + 1) == local else window for i in range(num_layers)]


public(
    "layer_windows",
    _windows_sample,
    _windows_ref,
    *bad_values(lambda v: A.layer_windows(v, 4), "num_layers")[:3],
    *bad_values(lambda v: A.layer_windows(4, v), "window")[:3],
    *bad_values(lambda v: A.layer_windows(4, 4, v), "local_per_global")[:3],
    dtypes=(F32,),
    devices=CPU_ONLY,
)


def _by_layer_sample(d: Draw) -> Sample:
    windows = [d.pick([None, 1, 2, 3, 6]) for _ in range(d.int(1, 4))]
    sizes = [d.int(1, 5) for _ in range(4)]
    return Sample(
        A.kv_cache_bytes_by_layer,
        (sizes[0], sizes[1], windows, sizes[2], sizes[3], d.pick([2, 4, 8])),
        {"sink_tokens": d.int(0, 2) if any(windows) else 0},
    )


def _by_layer_ref(s: Sample) -> int:
    batch, tokens, windows, kv_heads, head_dim, nbytes = s.args
    sinks = s.kwargs["sink_tokens"]
    held = sum(tokens if w is None else min(tokens, w + sinks) for w in windows)
    return 2 * batch * held * kv_heads * head_dim * nbytes


def _by_layer(**bad_one) -> int:
    sizes = dict.fromkeys(["batch", "tokens", "kv_heads", "head_dim"], 1)
    args = {**sizes, "windows": [4], "bytes_per_element": 2, **bad_one}
    return A.kv_cache_bytes_by_layer(**args)


public(
    "kv_cache_bytes_by_layer",
    _by_layer_sample,
    _by_layer_ref,
    *bad_values(lambda v: _by_layer(tokens=v), "tokens")[:2],
    *bad_values(lambda v: _by_layer(kv_heads=v), "kv_heads")[:2],
    bad("window-zero", lambda: _by_layer(windows=[4, 0]), "window; 0"),
    bad("window-str", lambda: _by_layer(windows=["4"]), "window; '4'", TYPE),
    bad("windows-int", lambda: _by_layer(windows=4), "windows; 4", TYPE),
    bad("sinks-negative", lambda: _by_layer(sink_tokens=-1), "sink_tokens; -1"),
    bad(
        "sinks-no-window",
        lambda: _by_layer(windows=[None], sink_tokens=1),
        "sink_tokens; window",
    ),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


public(
    "TinyAttentionModel",
    lambda d: Sample(
        tiny_model(d, positions=None), (d.ids(7, d.int(0, 2), d.int(1, 6)),)
    ),
    lambda s: reference_logits(s.fn.cpu(), cpu(s.args[0])),
    *(
        e
        for name in ["vocab_size", "d_model", "context_length", "num_heads"]
        for e in bad_values(lambda v, name=name: MODEL(**{name: v}), name)[:3]
    ),
    bad("ids-float", lambda: MODEL()(z(1, 3)), f"{IDS_}; float32"),
    bad("ids-vocab", lambda: MODEL()(torch.full((1, 3), 4)), f"{IDS_}; 4"),
    bad("too-long", lambda: MODEL()(z(1, 5).long()), "context_length; 4; 5"),
    bad("ids-rank", lambda: MODEL()(z(3).long()), f"{IDS_}; 2; 1"),
    bad("ids-meta", lambda: MODEL()(z(1, 3, device="meta").long()), f"{IDS_}; meta"),
    bad("positions-kind", lambda: MODEL(positions="absolute"), "positions; absolute"),
    bad("positions-bool", lambda: MODEL(positions=True), "positions; True", TYPE),
    bad("window-learned", lambda: MODEL(window=2), "positions; learned; window"),
    bad("window-zero", lambda: MODEL(positions="rope", window=0), "window; 0"),
    bad(
        "window-layers",
        lambda: MODEL(positions="rope", window=[2, None]),
        "window; 1; 2 entries",
    ),
    bad("sinks-alone", lambda: MODEL(positions="rope", sink_tokens=1), "sink_tokens"),
    bad(
        "positions-contradict",
        lambda: MODEL(positions="rope", use_positions=True),
        "positions; rope; use_positions",
    ),
    # "learned" said aloud contradicts use_positions=False as much as "rope"
    bad(
        "positions-contradict-learned",
        lambda: MODEL(positions="learned", use_positions=False),
        "positions; learned; use_positions",
    ),
    bad(
        "use_positions-str",
        lambda: MODEL(use_positions="yes"),
        "use_positions; yes",
        TYPE,
    ),
    # d_model 6 in 2 heads: head_dim 3, no pairs to turn
    bad("rope-odd-head_dim", lambda: MODEL(d_model=6, positions="rope"), "head_dim; 3"),
    bad(
        "rope-layout",
        lambda: MODEL(positions="rope", rope_layout="gptj"),
        "rope_layout; gptj",
    ),
    bad(
        "rope-base", lambda: MODEL(positions="rope", rope_base=-1.0), "rope_base; -1.0"
    ),
    # checked whatever the positions: a wrong argument is wrong before it is used
    bad("rope-layout-learned", lambda: MODEL(rope_layout="gptj"), "rope_layout; gptj"),
    bad(
        "rope-base-none",
        lambda: MODEL(positions="none", rope_base=-5.0),
        "rope_base; -5.0",
    ),
)


public(
    "attention_weights",
    lambda d: Sample(
        A.attention_weights, (tiny_model(d, 5, 5), d.ids(5, 1, d.int(2, 5)))
    ),
    _attention_weights_ref,
    bad(
        "model-sdpa",
        lambda: A.attention_weights(_with_attn(SDPA()), IDS[:, :2]),
        "model.attn; MultiHeadAttention",
    ),
    bad(
        "model-class",
        lambda: A.attention_weights(TinyAttentionModel, IDS),
        f"model; {CLASS}",
        TYPE,
    ),
    bad(
        "ids-float",
        lambda: A.attention_weights(MODEL(), IDS.float()),
        f"{IDS_}; float32",
    ),
)


public(
    "previous_token_mass",
    _mass,
    lambda s: cpu(s.args[0]).diagonal(-1, -2, -1).mean(dim=(0, -1)),
    *tensor_errors(A.previous_token_mass, "attn_weights", z(1, 1, 3, 3)),
    bad(
        "rank",
        lambda: A.previous_token_mass(z(2, 3)),
        "attn_weights; (b, h, T, T)|4; (2, 3)",
    ),
    bad(
        "one-token", lambda: A.previous_token_mass(z(1, 1, 1, 1)), "attn_weights; 2; 1"
    ),
    bad("oblong", lambda: A.previous_token_mass(z(1, 1, 3, 4)), "attn_weights; 3; 4"),
    # a corner a fuzz found (issue 44): a batch of 0, as its siblings refuse it
    bad(
        "no-batch",
        lambda: A.previous_token_mass(z(0, 1, 3, 3)),
        "attn_weights; batch; 0",
    ),
)


public(
    "previous_token_data",
    _previous_token_data,
    lambda s: (True, True, True),
    bad(
        "seed-None",
        lambda: A.previous_token_data(2, 3, 4, seed=None),
        "seed; None",
        TYPE,
    ),
    bad(
        "seed-float",
        lambda: A.previous_token_data(2, 3, 4, seed=1.5),
        "seed; 1.5",
        TYPE,
    ),
    *bad_values(lambda v: A.previous_token_data(v, 3, 4), "num_sequences")[:2],
    *bad_values(lambda v: A.previous_token_data(2, 3, v), "vocab_size")[:2],
    # torch's generators take seeds in [-2**63, 2**64): no raw OverflowError
    bad(
        "seed-huge",
        lambda: A.previous_token_data(2, 3, 4, seed=2**64),
        "seed; 18446744073709551616",
    ),
    bad(
        "seed-numpy-float",
        lambda: A.previous_token_data(2, 3, 4, seed=np.float64(1)),
        "seed; float64",
        TYPE,
    ),
    devices=CPU_ONLY,
)


public(
    "order_blind_accuracy",
    _order_blind,
    _order_blind_ref,
    bad(
        "ids-float", lambda: A.order_blind_accuracy(IDS.float(), 4), f"{IDS_}; float32"
    ),
    bad("ids-vocab", lambda: A.order_blind_accuracy(IDS + 4, 4), f"{IDS_}; 4"),
    bad(
        "ids-None",
        lambda: A.order_blind_accuracy(None, 4),
        "token_ids; None|NoneType",
        TYPE,
    ),
    bad("ids-meta", lambda: A.order_blind_accuracy(IDS.to("meta"), 4), f"{IDS_}; meta"),
    bad("vocab_size-0", lambda: A.order_blind_accuracy(IDS, 0), "vocab_size; 0"),
    bad("none", lambda: A.order_blind_accuracy(IDS[:0], 4), f"{IDS_}; 0"),
    devices=CPU_ONLY,
)


public(
    "token_accuracy",
    _token_accuracy,
    _token_accuracy_ref,
    bad(
        "targets-float",
        lambda: A.token_accuracy(MODEL(), IDS, IDS.float()),
        "targets; float32",
    ),
    bad(
        "targets-shape",
        lambda: A.token_accuracy(MODEL(), IDS, IDS[:, :3]),
        "targets; (1, 4)|4; (1, 3)|3",
    ),
    bad("targets-vocab", lambda: A.token_accuracy(MODEL(), IDS, IDS + 4), "targets; 4"),
    bad(
        "all-ignored",
        lambda: A.token_accuracy(MODEL(), IDS, IDS * 0 - 100),
        "targets; -100",
    ),
    bad(
        "empty",
        lambda: A.token_accuracy(MODEL(), IDS[:0], IDS[:0]),
        "token_ids|targets; 0|empty",
    ),
    bad(
        "meta",
        lambda: A.token_accuracy(MODEL().to("meta"), *[IDS.to("meta")] * 2),
        "meta",
    ),
    bad(
        "model-class",
        lambda: A.token_accuracy(TinyAttentionModel, IDS, IDS),
        f"model; {CLASS}",
        TYPE,
    ),
    devices=CPU_ONLY,
)


public(
    "train_model",
    _train,
    lambda s: (s.given["steps"], True),
    *(
        bad(f"lr-{v!r}", _train_with(lr=v), f"lr; {v}", k)
        for v, k in [
            (0.0, ValueError),
            (-1.0, ValueError),
            (math.inf, ValueError),
            (math.nan, ValueError),
            (True, TYPE),
            ("0.1", TYPE),
        ]
    ),
    bad("steps-0", _train_with(steps=0), "steps; 0"),
    bad("batch_size-0", _train_with(batch_size=0), "batch_size; 0"),
    bad("seed-huge", _train_with(seed=-(2**63) - 1), "seed; -9223372036854775809"),
    bad(
        "targets-vocab",
        lambda: A.train_model(MODEL(), IDS, IDS + 4, steps=1, batch_size=1),
        "targets; [0, 4)|4",
    ),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


public(
    "example_inputs",
    lambda d: Sample(A.example_inputs),
    lambda s: torch.tensor(EXAMPLE),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


public(
    "register",
    _register,
    lambda s: (True, True, True),
    bad("name-empty", lambda: A.register("", MultiHeadAttention), "name; ''"),
    bad(
        "name-words",
        lambda: A.register("two words", MultiHeadAttention),
        "name; two words",
    ),
    bad("name-int", lambda: A.register(3, MultiHeadAttention), "name; 3", TYPE),
    bad(
        "taken",
        lambda: A.register("mha", SDPAMultiHeadAttention),
        "mha; MultiHeadAttention; SDPAMultiHeadAttention",
    ),
    bad(
        "cls-instance", lambda: A.register("mine", nn.Linear(2, 2)), "cls; Linear", TYPE
    ),
    bad(
        "cls-str",
        lambda: A.register("mine", "MultiHeadAttention"),
        "cls; MultiHeadAttention",
        TYPE,
    ),
    bad("info", lambda: A.register("mine", MultiHeadAttention, {}), "info; dict", TYPE),
    # the fields the suite and the benchmark read, checked when they come in
    *(
        bad(
            f"info-{case}",
            lambda field=field, value=value: A.register(
                "mine", MultiHeadAttention, VariantInfo(**{field: value})
            ),
            f"info.{field}; {shown}",
            TYPE,
        )
        for case, field, value, shown in [
            ("dtypes-int", "dtypes", (torch.int64,), "int64"),
            ("dtypes-str", "dtypes", "float32", "float32"),
            ("devices-int", "devices", ("cpu", 3), "3"),
            ("tolerances-float", "tolerances", {F32: 1e-5}, "atol"),
            ("same-count-int", "same_parameter_count", 1, "1"),
            ("kwargs-int-key", "kwargs", {1: 2}, "keyword"),
        ]
    ),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


public(
    "VariantInfo",
    _variant_info,
    lambda s: s.given["directly"](cpu(s.args[1])),
    bad(
        "indivisible",
        lambda: VariantInfo().build(MHA_CLASS, 4, 6, 8, 0.0, 4),
        "d_out; num_heads",
    ),
    bad(
        "cls-name",
        lambda: VariantInfo().build("mha", 4, 6, 8, 0.0, 2),
        "cls; nn.Module; mha",
        TYPE,
    ),
    bad(
        "cls-instance",
        lambda: VariantInfo().build(MHA(), 4, 6, 8, 0.0, 2),
        "cls; MultiHeadAttention",
        TYPE,
    ),
    devices=CPU_ONLY,
)


# --- rotary position embeddings ------------------------------------------------


def _rope_positions(d: Draw, b: int, T: int, high: int = 60) -> torch.Tensor:
    """``(T,)`` or, for a batch, sometimes ``(b, T)`` positions in ``[0, high]``."""
    shape = (b, T) if b and d.flag() else (T,)
    return torch.randint(high + 1, shape, generator=d.gen).to(d.device)


def _apply_rope(d: Draw) -> Sample:
    b, T, hd = d.int(1, 3), d.int(0, 5), 2 * d.int(1, 4)
    lead = (b, d.int(1, 3)) if d.flag() else (b,)
    kwargs = {"base": d.pick([10000.0, 100.0, 500000.0])}
    kwargs["layout"] = d.pick(["half", "interleaved"])
    return Sample(A.apply_rope, (d.t(*lead, T, hd), _rope_positions(d, b, T)), kwargs)


def _apply_rope_ref(s: Sample) -> torch.Tensor:
    x, positions = (cpu(a) for a in s.args)
    return reference_rope(x, positions, s.kwargs["base"], s.kwargs["layout"])


def _rope_angles(d: Draw) -> Sample:
    b, T = d.int(1, 3), d.int(0, 5)
    kwargs = {"base": d.pick([10000.0, 100.0]), "dtype": d.dtype}
    return Sample(A.rope_angles, (_rope_positions(d, b, T), 2 * d.int(1, 4)), kwargs)


def _rope_angles_ref(s: Sample) -> torch.Tensor:
    positions, hd = cpu(s.args[0]), s.args[1]
    base = s.kwargs["base"]
    rows = positions.tolist() if positions.dim() == 2 else [positions.tolist()]
    angles = [
        [[m * base ** (-2 * i / hd) for i in range(hd // 2)] for m in r] for r in rows
    ]
    return torch.tensor(angles, dtype=F64).reshape(*positions.shape, hd // 2)


def _rotary(d: Draw) -> Sample:
    heads, layout = d.pick([1, 2]), d.pick(["half", "interleaved"])
    module = d.module(
        lambda: RotaryMultiHeadAttention(4, 4, 6, 0.0, heads, layout=layout)
    )
    b, T = d.int(0, 2), d.int(1, 6)
    args = (d.t(b, T, 4),)
    if d.flag():  # positions given, past the context length too
        args += (_rope_positions(d, b, T, high=1000),)
    return Sample(module, args)


def _rotary_ref(s: Sample) -> torch.Tensor:
    module, x = s.fn, cpu(s.args[0])
    positions = cpu(s.args[1]) if len(s.args) > 1 else torch.arange(x.shape[1])
    rope = (positions, module.base, module.layout)
    return reference_multihead(chapter_state(module), x, module.num_heads, rope=rope)


def _layout_state(d: Draw) -> Sample:
    """A model of one layout, its weights moved to the other, run again."""
    source = d.pick(["half", "interleaved"])
    target = d.pick(["half", "interleaved"])
    heads, layers = d.pick([1, 2]), d.int(1, 2)
    make = lambda layout: TinyAttentionModel(  # noqa: E731
        7, 8, 6, heads, "rope", num_layers=layers, rope_layout=layout
    )
    model = d.module(lambda: make(source))

    def moved_and_run(model, ids):
        state = A.rope_layout_state_dict(
            model.state_dict(), heads, source=source, target=target
        )
        other = make(target).to(model.out_head.weight.dtype).eval()
        other.load_state_dict(state)
        return other(ids)

    return Sample(moved_and_run, (model, d.ids(7, d.int(0, 2), d.int(1, 6))))


def _accuracy_by_length(d: Draw) -> Sample:
    kwargs = {"train_length": d.int(2, 4), "multiples": (1, d.int(2, 3))}
    kwargs |= {"steps": d.int(1, 2), "d_model": 4, "seed": d.int(0, 9)}

    def facts(**kwargs):
        """The promises: three kinds, a learned table that stops at 1x, every
        accuracy in [0, 1], the same numbers from a second run."""
        table = A.accuracy_by_length(**kwargs)
        learned_past = [table["learned"][m] for m in kwargs["multiples"][1:]]
        values = [v for row in table.values() for v in row.values() if v is not None]
        return (
            sorted(table),
            learned_past == [None] * len(learned_past),
            len(values) == 5 and all(0 <= v <= 1 for v in values),
            A.accuracy_by_length(**kwargs) == table,
        )

    return Sample(facts, kwargs=kwargs)


ROTARY = built(RotaryMultiHeadAttention, **MHA_ARGS)
ROPE_STATE = lambda: TinyAttentionModel(7, 4, 6, 2, "rope").state_dict()  # noqa: E731
POS = "position_ids"


public(
    "apply_rope",
    _apply_rope,
    _apply_rope_ref,
    *tensor_errors(lambda x: A.apply_rope(x, torch.arange(3)), "x", z(3, 4)),
    bad("x-1d", lambda: A.apply_rope(z(4), torch.arange(1)), "x; (4,)"),
    bad(
        "odd-head_dim", lambda: A.apply_rope(z(2, 3, 5), torch.arange(3)), "head_dim; 5"
    ),
    bad(
        "ids-float", lambda: A.apply_rope(z(3, 4), torch.arange(3.0)), f"{POS}; float32"
    ),
    bad("ids-bool", lambda: A.apply_rope(z(3, 4), z(3).bool()), f"{POS}; bool"),
    # uint8 wraps at 256 and an embedding table refuses it: long or int32 only
    bad(
        "ids-uint8",
        lambda: A.apply_rope(z(3, 4), torch.arange(3, dtype=torch.uint8)),
        f"{POS}; uint8",
    ),
    bad(
        "ids-length", lambda: A.apply_rope(z(3, 4), torch.arange(4)), f"{POS}; (4,); 3"
    ),
    bad(
        "ids-rank",
        lambda: A.apply_rope(z(2, 3, 4), z(1, 2, 3).long()),
        f"{POS}; (1, 2, 3)",
    ),
    bad(
        "ids-rows",
        lambda: A.apply_rope(z(2, 3, 4), z(3, 3).long()),
        f"{POS}; (3, 3); 2",
    ),
    # one sequence (T, hd) has no batch to give rows to
    bad("ids-rows-2d", lambda: A.apply_rope(z(3, 4), z(1, 3).long()), f"{POS}; (1, 3)"),
    bad(
        "ids-negative",
        lambda: A.apply_rope(z(3, 4), torch.tensor([-1, 0, 1])),
        f"{POS}; -1",
    ),
    bad(
        "ids-meta",
        lambda: A.apply_rope(z(3, 4), torch.arange(3, device="meta")),
        f"{POS}; meta",
    ),
    bad("ids-list", lambda: A.apply_rope(z(3, 4), [0, 1, 2]), f"{POS}; list", TYPE),
    bad(
        "layout",
        lambda: A.apply_rope(z(3, 4), torch.arange(3), layout="llama"),
        "layout; llama",
    ),
    bad(
        "base-0", lambda: A.apply_rope(z(3, 4), torch.arange(3), base=0.0), "base; 0.0"
    ),
    bad(
        "base-str",
        lambda: A.apply_rope(z(3, 4), torch.arange(3), base="1e4"),
        "base; 1e4",
        TYPE,
    ),
    tolerances={F32: (1e-5, 1e-5), F64: (1e-12, 1e-12)},
)


public(
    "rope_angles",
    _rope_angles,
    _rope_angles_ref,
    bad("head_dim-odd", lambda: A.rope_angles(torch.arange(3), 5), "head_dim; 5"),
    bad("head_dim-0", lambda: A.rope_angles(torch.arange(3), 0), "head_dim; 0"),
    bad(
        "head_dim-bool",
        lambda: A.rope_angles(torch.arange(3), True),
        "head_dim; True",
        TYPE,
    ),
    bad("ids-float", lambda: A.rope_angles(torch.arange(3.0), 4), f"{POS}; float32"),
    bad("ids-negative", lambda: A.rope_angles(torch.tensor([2, -3]), 4), f"{POS}; -3"),
    # (b, T) works too, so the message offers both shapes
    bad(
        "ids-rank",
        lambda: A.rope_angles(z(1, 2, 3).long(), 4),
        f"{POS}; (1, 2, 3); (T,); (b, T)",
    ),
    bad(
        "dtype-int",
        lambda: A.rope_angles(torch.arange(3), 4, dtype=torch.int64),
        "dtype; int64",
        TYPE,
    ),
    tolerances={F32: (1e-5, 1e-5), F64: (1e-12, 1e-12)},
)


public(
    "rope_permutation",
    lambda d: Sample(A.rope_permutation, (2 * d.int(1, 8),)),
    lambda s: torch.tensor([*range(0, s.args[0], 2), *range(1, s.args[0], 2)]),
    *bad_values(A.rope_permutation, "head_dim"),
    bad("odd", lambda: A.rope_permutation(5), "head_dim; 5"),
    # 2**62 int64 indices: a size torch cannot count, not a RuntimeError
    bad("overflow", lambda: A.rope_permutation(2**62), "head_dim; 2**63"),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


public(
    "rope_layout_state_dict",
    _layout_state,
    lambda s: reference_logits(s.args[0].cpu(), cpu(s.args[1])),
    bad(
        "state-list",
        lambda: A.rope_layout_state_dict([], 2, source="half", target="half"),
        "state; list",
        TYPE,
    ),
    bad(
        "state-no-query",
        lambda: A.rope_layout_state_dict({"w": z(2)}, 2, source="half", target="half"),
        "state; W_query",
    ),
    bad(
        "heads",
        lambda: A.rope_layout_state_dict(ROPE_STATE(), 3, source="half", target="half"),
        "num_heads; 3",
    ),
    bad(
        "heads-0",
        lambda: A.rope_layout_state_dict(ROPE_STATE(), 0, source="half", target="half"),
        "num_heads; 0",
    ),
    bad(
        "source",
        lambda: A.rope_layout_state_dict(ROPE_STATE(), 2, source="gptj", target="half"),
        "source; gptj",
    ),
    bad(
        "target",
        lambda: A.rope_layout_state_dict(ROPE_STATE(), 2, source="half", target="neox"),
        "target; neox",
    ),
    devices=CPU_ONLY,
)


public(
    "RotaryMultiHeadAttention",
    _rotary,
    _rotary_ref,
    *module_inputs(ROTARY),
    bad("odd-head_dim", lambda: ROTARY(d_out=6), "head_dim; 3"),
    bad("layout", lambda: ROTARY(layout="pairs"), "layout; pairs"),
    bad("base", lambda: ROTARY(base=math.inf), "base; inf"),
    bad(
        "ids-float", lambda: ROTARY()(z(2, 3, 4), torch.arange(3.0)), f"{POS}; float32"
    ),
    bad("ids-length", lambda: ROTARY()(z(2, 3, 4), torch.arange(2)), f"{POS}; (2,); 3"),
    bad(
        "ids-negative",
        lambda: ROTARY()(z(1, 2, 4), torch.tensor([-2, -1])),
        f"{POS}; -2",
    ),
    tolerances={F32: (1e-5, 1e-5), F64: (1e-10, 1e-10)},
)


public(
    "accuracy_by_length",
    _accuracy_by_length,
    lambda s: (["learned", "none", "rope"], True, True, True),
    bad(
        "train_length-1",
        lambda: A.accuracy_by_length(train_length=1),
        "train_length; 1",
    ),
    bad(
        "multiples-list",
        lambda: A.accuracy_by_length(multiples=[1, 2]),
        "multiples; list",
        TYPE,
    ),
    bad("multiples-0", lambda: A.accuracy_by_length(multiples=(1, 0)), "multiples; 0"),
    bad("steps-0", lambda: A.accuracy_by_length(steps=0), "steps; 0"),
    bad("seed-str", lambda: A.accuracy_by_length(seed="0"), "seed; 0", TYPE),
    bad(
        "seed-huge",
        lambda: A.accuracy_by_length(seed=2**70),
        "seed; 1180591620717411303424",
    ),
    # a seed torch takes, whose derived test seeds (seed + 1 + m) it does not
    bad(
        "seed-derived",
        lambda: A.accuracy_by_length(seed=2**64 - 1),
        "seed; 18446744073709551615",
    ),
    dtypes=(F32,),
    devices=CPU_ONLY,
)


# --- the records of the registry entries ------------------------------------------


#: Built as (4, 6, 8, 0.0, 3): d_in = 4, context_length = 8. What the message
#: must name (a ValueError); a list may get torch's TypeError.
BAD_INPUTS = {
    "one-sequence": (torch.rand(6, 4), "3; 2|(6, 4)"),
    "four-dims": (torch.rand(1, 2, 6, 4), "3; 4|(1, 2, 6, 4)"),
    "width": (torch.rand(2, 6, 5), "d_in|features; 4; 5"),
    "too-long": (torch.rand(2, 9, 4), "context_length|context; 8; 9"),
    "list": ([[[0.0] * 4]], "list", TYPE),
    "token-ids": (z(2, 6, 4).long(), f"{FLOAT}; int64|long"),
    "float64-into-float32": (torch.rand(2, 6, 4, dtype=F64), "float64; float32"),
}
BAD_ARGUMENTS = {
    "indivisible": ((4, 6, 8, 0.0, 4), "d_out; num_heads; 6; 4"),
    "no-heads": ((4, 6, 8, 0.0, 0), "num_heads; 0"),
    "dropout-1": ((4, 6, 8, 1.0, 3), "dropout; 1.0|1"),
    "d_in-0": ((0, 6, 8, 0.0, 3), "d_in; 0"),
    "d_out-0": ((4, 0, 8, 0.0, 3), "d_out; 0"),
    "context-0": ((4, 6, 0, 0.0, 3), "context_length; 0"),
}


def _registry_errors(name: str) -> tuple[ErrorInput, ...]:
    make = partial(build, name)
    inputs = tuple(
        bad(id, lambda x=x: make(4, 6, 8, 0.0, 3)(x), *names_and_kind)
        for id, (x, *names_and_kind) in BAD_INPUTS.items()
    )
    arguments = tuple(
        bad(id, lambda args=args: make(*args), names)
        for id, (args, names) in BAD_ARGUMENTS.items()
    )
    into_float64 = lambda: make(4, 6, 8, 0.0, 3).double()(torch.rand(2, 6, 4))  # noqa: E731
    mixed = bad("float32-into-float64", into_float64, "float32; float64")
    return (*inputs, mixed, *arguments)


def registry_record(name: str) -> OpInfo:
    """The record of ``VARIANTS[name]``, everything read from its VariantInfo."""
    info, cls = variant_info(name), VARIANTS[name]

    def sample(d: Draw) -> Sample:
        heads, bias, d_in = d.pick([1, 2, 4]), d.flag(), d.pick([4, 6])
        module = d.module(lambda: info.build(cls, d_in, 4, 6, 0.0, heads, bias))
        return Sample(
            module, (d.t(d.int(1, 2), d.int(1, 6), d_in),), given={"heads": heads}
        )

    def reference(s: Sample) -> torch.Tensor:
        state = {k: cpu(v) for k, v in mha_state_dict(s.fn).items()}
        return reference_multihead(state, cpu(s.args[0]), s.given["heads"])

    devices = tuple(d for d in info.devices if d != "cuda" or torch.cuda.is_available())
    return OpInfo(
        name,
        sample,
        reference,
        _registry_errors(name),
        tuple(info.dtypes),
        devices,
        dict(info.tolerances),
    )


def causal_builders() -> dict[str, Callable[..., nn.Module]]:
    """Every causal module by its key, built from the chapter's arguments
    ``(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``:
    the registry (by its VariantInfo) and the classes outside it."""
    return {name: partial(build, name) for name in VARIANTS} | {
        "CausalAttention": lambda d_in, d_out, ctx, p, h, bias=False: CausalAttention(
            d_in, d_out, ctx, p, bias
        ),
        "MultiHeadAttentionWrapper": lambda d_in, d_out, ctx, p, h, bias=False: (
            MultiHeadAttentionWrapper(d_in, d_out // h, ctx, p, h, bias)
        ),
        "GroupedQueryAttention": lambda d_in, d_out, ctx, p, h, bias=False: (
            GroupedQueryAttention(d_in, d_out, ctx, p, h, 1, bias)
        ),
    }


def records() -> dict[str, OpInfo]:
    """Every record by its key: the public callables, then the registry."""
    public = {op.name: op for op in PUBLIC}
    return public | {name: registry_record(name) for name in VARIANTS}


def covered_by(name: str) -> str | None:
    """The key of the record that covers the public callable ``name``."""
    if name in {op.name for op in PUBLIC}:
        return name
    obj = getattr(attention, name)
    return next((key for key, cls in VARIANTS.items() if cls is obj), None)
