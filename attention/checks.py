"""Every input check of the companion package, and the policy they follow.

Checks at the door:

- A public function, or a module's ``forward``, validates its arguments once,
  at entry, with one call here (``check_batch(self, x)``). Every validator
  lives in this module, once: there is one ``check_token_ids``.
- Internal calls trust what the door let in: generation checks the prompt
  once, then its loop runs the unchecked steps (``attention.generation``).
- Nothing in a per-token loop reads tensor values to validate them: value
  checks (``min()``, ``max()``, ``all()``) wait for a GPU, so they run once.
- A wrong Python type raises ``ArgumentTypeError``, a ``TypeError`` that is
  also a ``ValueError`` (as numpy's ``AxisError`` is both); a wrong shape,
  dtype, device or value raises ``ValueError``. Every message names the
  argument, what was expected and what came.

Decisions, the same everywhere: integer tensors are refused where attention
needs fractions (the message says ``.float()``), never promoted; a module and
its input share one device; ``True`` is not a size and ``inf`` is not a
learning rate. Shapes are written as layouts, one name per dimension
(``"... Tq head_dim"``): a name used twice is one size, and ``...`` stands for
the leading dimensions that every tensor of the call shares.
"""

from __future__ import annotations

import math
from functools import partial
from itertools import islice
from numbers import Integral, Real
from typing import Protocol

import torch
from torch import nn


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong Python type, such as a list where a tensor goes.

    >>> check_tensor("inputs", [[1.0, 0.0]])
    Traceback (most recent call last):
    ...
    attention.checks.ArgumentTypeError: inputs must be a torch.Tensor, got list; \
wrap it: torch.tensor(inputs)
    """


def _fail(bad: object, name: str, expected: str, got: object, error=ValueError):
    """If ``bad``, raise ``error("NAME must EXPECTED, got GOT")``; got may be lazy."""
    if bad:
        raise error(f"{name} must {expected}, got {got() if callable(got) else got}")


_type = partial(_fail, error=ArgumentTypeError)  # a wrong Python type


def _not(value: object, kind: type) -> bool:
    """Whether ``value`` is not of the number ``kind``; ``True`` is no number."""
    return isinstance(value, bool) or not isinstance(value, kind)


def _got(value: object) -> str:
    """``value`` as a message shows it: its repr, cut, and its type if unclear."""
    text = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    plain = isinstance(value, bool | int | float | str)
    return text if plain else f"{text} ({type(value).__name__})"


def _room(name: str, num_tokens: int, context_length: int, held=0, fed=0) -> None:
    """Raise unless ``num_tokens`` fit after ``held`` cached and ``fed`` fed back."""
    room = context_length - held - fed
    why = f" and the cache holds {held}" * bool(held)
    why += f" and max_new_tokens={fed + 1} feeds {fed} back" * bool(fed)
    if num_tokens > room:
        raise ValueError(
            f"{name} has {num_tokens} tokens but context_length is {context_length}"
            f"{why}; pass at most {room} tokens or build with a larger context_length"
        )


def check_flag(name: str, value: bool) -> None:
    """Raise unless ``value`` is ``True`` or ``False``."""
    _type(not isinstance(value, bool), name, "be True or False", _got(value))


def check_integer(name: str, value: int, smallest=-math.inf, below=math.inf) -> None:
    """Raise unless ``value`` is an integer (not a bool) in ``[smallest, below)``."""
    kind = "be an integer" + f" of at least {smallest}" * (smallest > -math.inf)
    kind = kind if below == math.inf else f"be an integer in [{smallest}, {below})"
    _type(_not(value, Integral), name, kind, _got(value))
    _fail(not smallest <= value < below, name, kind, value)


def check_positive(**sizes: int) -> None:
    """Raise unless every keyword argument is an integer of at least 1."""
    for name, value in sizes.items():
        check_integer(name, value, smallest=1)


def check_number(name: str, value: float, high: float = math.inf) -> None:
    """Raise unless ``value`` is a number in ``(0, inf)`` (``lr``), or ``[0, high)``."""
    bounded = high < math.inf
    kind = f"be a number in [0, {high})" if bounded else "be a positive, finite number"
    _type(_not(value, Real), name, kind, _got(value))
    inside = 0 <= value < high if bounded else 0 < value < high
    _fail(not inside, name, kind, repr(value))


def check_divides(part: tuple[str, int], whole: tuple[str, int]) -> None:
    """Raise unless ``part``, a positive integer, divides ``whole`` (name, value)."""
    (part_name, p), (whole_name, w) = part, whole
    check_integer(part_name, p, smallest=1)
    got = f"{whole_name}={w} and {part_name}={p}"
    _fail(w % p, whole_name, f"be divisible by {part_name}", got)


def check_attention_args(
    d_in, d_out, context_length, dropout, num_heads=1, qkv_bias=False
):
    """Check the constructor arguments every causal attention class shares."""
    check_positive(d_in=d_in, d_out=d_out, context_length=context_length)
    check_number("dropout", dropout, high=1)
    check_divides(("num_heads", num_heads), ("d_out", d_out))
    check_flag("qkv_bias", qkv_bias)


def as_device(device: object) -> torch.device | None:
    """``device`` as a :class:`torch.device` this build of torch can use, or raise."""
    try:  # a device torch cannot use (CUDA in a CPU-only build) raises here
        return None if device is None else torch.empty(0, device=device).device
    except (RuntimeError, TypeError, AssertionError) as exc:
        error = ArgumentTypeError if isinstance(exc, TypeError) else ValueError
        expected = "be a torch.device or a name such as 'cpu' that this torch can use"
        raise error(f"device must {expected}, got {_got(device)}") from exc


def check_tensor(name: str, t: object) -> None:
    """Raise unless ``t`` is a :class:`torch.Tensor`."""
    hint = f"; wrap it: torch.tensor({name})" * isinstance(t, list | tuple)
    got = type(t).__name__ + hint
    _type(not isinstance(t, torch.Tensor), name, "be a torch.Tensor", got)


def check_floats(*named: tuple[str, torch.Tensor]) -> None:
    """Raise unless the ``(name, tensor)`` pairs are float, of one dtype and device."""
    name_a, a = named[0]
    for name, t in named:
        check_tensor(name, t)
        got = f"dtype {t.dtype}; convert it first: {name}.float()"
        _fail(not t.is_floating_point(), name, "hold floating-point numbers", got)
        expected = f"be {a.dtype} on {a.device} like {name_a}"
        got = f"{t.dtype} on {t.device}; convert one of them with .to()"
        _fail((t.dtype, t.device) != (a.dtype, a.device), name, expected, got)


def check_shapes(**named: tuple[torch.Tensor, str] | int) -> None:
    """Raise unless the float tensors share dtype and device and fit their layouts
    (one name per dimension); a keyword with an ``int`` fixes that name's size.

    >>> check_shapes(query=(torch.zeros(3), "d"), inputs=(torch.zeros(6, 4), "T d"))
    Traceback (most recent call last):
    ...
    ValueError: expected 1-D query (d) and 2-D inputs (T, d), one size per name; \
got query (3,) and inputs (6, 4)
    """
    tensors = {n: v for n, v in named.items() if isinstance(v, tuple)}
    sizes = {n: v for n, v in named.items() if isinstance(v, int)}
    check_floats(*((name, t) for name, (t, _) in tensors.items()))
    for t, layout in tensors.values():
        dims = layout.split()
        lead = t.dim() - len(dims) + 1  # how many dimensions "..." stands for
        shape = [t.shape[:lead], *t.shape[lead:]] if dims[0] == "..." else t.shape
        fits = lead >= 0 and len(shape) == len(dims)
        pairs = zip(dims, shape, strict=False)  # of one length if it fits
        if fits and all(sizes.setdefault(d, s) == s for d, s in pairs):
            continue
        expected = " and ".join(
            f"{len(d)}-D " * ("..." not in d) + f"{n} ({', '.join(d)})"
            for n, d in ((n, lay.split()) for n, (_, lay) in tensors.items())
        )
        expected += ", the same leading (batch) dimensions ..." * ("." in expected)
        fixed = "".join(f", {n}={v}" for n, v in named.items() if isinstance(v, int))
        got = " and ".join(f"{n} {tuple(t.shape)}" for n, (t, _) in tensors.items())
        raise ValueError(f"expected {expected}, one size per name{fixed}; got {got}")


def check_dim(name: str, t: torch.Tensor, dim: int) -> None:
    """Raise unless ``dim`` is an integer that indexes a dimension of ``t``."""
    n = max(t.dim(), 1)
    check_integer(f"dim (of {name} {tuple(t.shape)})", dim, smallest=-n, below=n)


def check_values(name: str, t: torch.Tensor, needed_by: str) -> None:
    """Raise if ``t`` is on the ``meta`` device, which holds shapes but no values."""
    expected = f"hold the values {needed_by} reads; build it on a device such as 'cpu'"
    _fail(t.is_meta, name, expected, "a tensor on meta, which holds no values")


def check_batch(module: nn.Module, x: torch.Tensor, ndim: int = 3, held=0) -> None:
    """Raise unless ``module`` accepts ``x`` ``(b, T, d_in)`` after ``held`` cached."""
    weight = [("the module's weights", w) for w in islice(module.parameters(), 1)]
    check_floats(*weight, ("x", x))
    layout = "batch num_tokens d_in".split(" ", 3 - ndim)[-1]
    check_shapes(x=(x, layout), d_in=module.d_in)
    if hasattr(module, "context_length"):
        _room("x", x.shape[-2], module.context_length, held)


def check_cross_input(module: nn.Module, x: torch.Tensor, context: torch.Tensor):
    """Raise unless ``x`` and ``context`` fit :class:`~attention.CrossAttention`."""
    check_shapes(
        weights=(module.W_query.weight, "d_out d_in"),
        x=(x, "... T d_in"),
        context=(context, "... S d_context"),
        d_context=module.d_context,
    )
    _fail(not context.shape[-2], "context", "hold at least one token", "none")


def check_tiled(queries, keys, tile_size=1, causal=False, dropout_p=0.0, **more):
    """The one check of the tiled functions of ``attention.flash``."""
    future = more.pop("future", None)
    layouts = {"lse": "... Tq", "delta": "... Tq", "values": "... Tk head_dim"}
    check_shapes(
        queries=(queries, "... Tq head_dim"),
        keys=(keys, "... Tk head_dim"),
        **{n: (t, layouts.get(n, "... Tq head_dim")) for n, t in more.items()},
    )
    no_key = keys.shape[-2] == 0 < queries.shape[-2]
    got = f"queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
    _fail(not queries.shape[-1] or no_key, "keys", "hold a key and head_dim >= 1", got)
    check_positive(tile_size=tile_size)
    check_flag("causal", causal)
    check_number("dropout_p", dropout_p, high=1)
    if future is not None:
        check_tensor("future", future)
        shape = (queries.shape[-2], keys.shape[-2])
        ok = future.dtype == torch.bool and future.shape == shape
        got = f"{future.dtype} {tuple(future.shape)}"
        _fail(not ok, "future", f"be None or a bool tensor of shape {shape}", got)


def check_kv(keys, values, cached: torch.Tensor | None, limit: int) -> None:
    """Raise unless new ``keys``, ``values`` (b, g, T_new, hd) fit: ``limit`` tokens."""
    layout = "b g T_new head_dim"
    old = {} if cached is None else {"cached_keys": (cached, "b g T_held head_dim")}
    check_shapes(keys=(keys, layout), values=(values, layout), **old)
    _room("keys", keys.shape[2], limit, 0 if cached is None else cached.shape[2])


def check_token_ids(t, vocab_size, context_length=None, device=None, smallest=(0, 0)):
    """Raise unless token ids ``t`` are ``(b, T)`` ints in ``[0, vocab_size)``."""
    check_tensor("token_ids", t)
    ok = t.dim() == 2 and t.dtype in (torch.int64, torch.int32)
    ok = ok and t.shape[0] >= smallest[0] and t.shape[1] >= smallest[1]
    expected = "be integer ids (torch.long) of 2 dimensions (batch, num_tokens)"
    expected += f" of at least {smallest}" * any(smallest)
    _fail(not ok, "token_ids", expected, f"{t.dtype}, {t.dim()}-D {tuple(t.shape)}")
    if context_length is not None:
        _room("token_ids", t.shape[1], context_length)
    expected = f"be on the model's device, {device}"
    _fail(device is not None and t.device != device, "token_ids", expected, t.device)
    if t.is_meta or not t.numel():
        return  # no values to read
    low, high = t.min().item(), t.max().item()
    expected = f"lie in [0, {vocab_size}) (the vocab_size)"
    _fail(low < 0 or high >= vocab_size, "token_ids", expected, f"{low} to {high}")


def check_attention_mask(attention_mask, x=None, held: int | None = None) -> None:
    """Raise unless ``attention_mask`` is ``(b, T)`` 0s and 1s (left-padded if held)."""
    check_tensor(name := "attention_mask", m := attention_mask)
    shape = None if x is None else (x.shape[0], (held or 0) + x.shape[1])
    expected = "have 2 dimensions (batch, num_tokens)" + f" = {shape}" * bool(shape)
    expected += f", the {held} cached tokens included" * bool(held)
    bad = m.dim() != 2 or shape not in (None, tuple(m.shape))
    _fail(bad, name, expected, f"{m.dim()} dimensions {tuple(m.shape)}")
    device = m.device if x is None else x.device
    _fail(m.device != device, name, f"be on {device} like x", m.device)
    if m.is_meta:
        return  # no values to read
    binary = (m == 0) | (m == 1)
    got = lambda: f"also {m[~binary].unique()[:5].tolist()}"  # noqa: E731
    _fail(not binary.all(), name, "hold only 1 (a real token) and 0 (a pad)", got)
    late = held is not None and (m[:, 1:] < m[:, :-1]).any(dim=1)  # a 1 before a 0
    expected = "be left-padded, 0s (pads) then 1s (real tokens), so new tokens follow"
    _fail(held is not None and late.any(), name, expected, lambda: m[late].tolist())


def check_decode(model, ids, cache=None, max_new_tokens=None, attention_mask=None):
    """The one check of generation: a ``Decoder`` model and a prompt that fits."""
    from .contract import Decoder, SeparateProjections
    from .kv_cache import KVCache

    check_module("model", model, Decoder)
    for i, layer in enumerate(model.layers):
        check_module(f"model.layers[{i}]", layer, SeparateProjections)
    held = 0
    if cache is not None:
        check_module("cache", cache, KVCache)
        held, layers = cache.num_tokens(), len(model.layers)
        expected = f"have num_layers={layers}, one per layer of model"
        _fail(cache.num_layers != layers, "cache", expected, cache.num_layers)
    fed = 0 if max_new_tokens is None else max_new_tokens - 1
    if max_new_tokens is not None:
        check_positive(max_new_tokens=max_new_tokens)
    device = next(model.parameters()).device
    check_token_ids(ids, model.vocab_size, device=device, smallest=(0, 1))
    _room("token_ids", ids.shape[1], model.context_length, held, fed)
    if attention_mask is None:
        return
    check_attention_mask(m := attention_mask, ids, held)
    ends = max_new_tokens is None or m.is_meta or m[:, -1].all()
    expected = "end in a real token (1) in every row: generation continues after it"
    _fail(not ends, "attention_mask", expected, lambda: m.tolist())


def check_cached(attn, x, cache, layer: int, attention_mask=None) -> None:
    """The one check of :func:`~attention.cached_attention`: new tokens that fit."""
    from .contract import SeparateProjections
    from .kv_cache import KVCache

    check_module("attn", attn, SeparateProjections)
    check_module("cache", cache, KVCache)
    check_integer("layer", layer, 0, cache.num_layers)
    check_batch(attn, x, held=(held := cache.num_tokens(layer)))
    if attention_mask is not None:
        check_attention_mask(attention_mask, x, held)


def check_training(model, ids, targets, steps=1, batch_size=1, lr=1.0, seed=0):
    """The one check of training and scoring: a model, ``(N, T)`` ids and targets."""
    from .learned import IGNORE_INDEX

    check_module("model", model)
    check_tensor("token_ids", ids)
    check_tensor("targets", targets)
    ok = ids.dim() == 2 and ids.shape == targets.shape and len(targets)
    ok = ok and targets.dtype in (torch.int64, torch.int32)
    got = f"{tuple(ids.shape)} and {targets.dtype} {tuple(targets.shape)}"
    expected = "have one shape (N, T), N >= 1, and targets integer ids"
    _fail(not ok, "token_ids and targets", expected, got)
    check_values("targets", targets, "training and scoring")
    check_positive(steps=steps, batch_size=batch_size)
    expected = f"be at most the number of sequences, {len(ids)}"
    _fail(batch_size > len(ids), "batch_size", expected, batch_size)
    check_number("lr", lr)
    check_integer("seed", seed)
    counted = targets[targets != IGNORE_INDEX]
    vocab_size = getattr(model, "vocab_size", math.inf)
    ok = counted.numel() and 0 <= counted.min() and counted.max() < vocab_size
    expected = f"be in [0, {vocab_size}) or {IGNORE_INDEX} (ignored), not all ignored"
    _fail(not ok, "targets", expected, lambda: _got(targets.unique()[:8].tolist()))


def check_sequences(sequences: object, side: str, value: float) -> None:
    """Raise unless ``sequences`` can be padded on ``side`` with ``value``."""
    check_choice("side", side, ["left", "right"])
    ok = isinstance(sequences, list | tuple) and sequences
    _type(not ok, "sequences", "be a non-empty list of tensors", _got(sequences))
    first = sequences[0]
    for i, seq in enumerate(sequences):
        check_tensor(f"sequences[{i}]", seq)
        ok = seq.dim() and len(seq) and seq.shape[1:] == first.shape[1:]
        ok = ok and (seq.dtype, seq.device) == (first.dtype, first.device)
        expected = "be (T_i, ...), T_i >= 1, like sequences[0] but in T_i"
        got = f"{tuple(seq.shape)} {seq.dtype} on {seq.device}; sequences[0] is "
        got += f"{tuple(first.shape)} {first.dtype} on {first.device}"
        _fail(not ok, f"sequences[{i}]", expected, got)
    _type(_not(value, Real), "value", "be a number", _got(value))
    if not (first.dtype.is_floating_point or first.dtype.is_complex):
        info = torch.iinfo(first.dtype) if first.dtype != torch.bool else None
        low, high = (0, 1) if info is None else (info.min, info.max)
        ok = math.isfinite(value) and value == int(value) and low <= value <= high
        expected = f"be an integer in [{low}, {high}] to pad {first.dtype}"
        _fail(not ok, "value", expected, repr(value))


def check_module(name: str, module: object, kind: type = nn.Module) -> None:
    """Raise unless ``module`` is a ``kind``: an ``nn.Module`` class or a Protocol."""
    if isinstance(module, kind):
        return
    if isinstance(module, type):
        got = f"the class {module.__name__} itself; build one: {module.__name__}(...)"
    elif isinstance(module, dict):
        got = "a dict; pass the module itself, not its state_dict()"
    else:
        names = {*kind.__annotations__, *vars(kind)} if Protocol in kind.__mro__ else ()
        missing = sorted(n for n in names if n[0] != "_" and not hasattr(module, n))
        lacks = f", which lacks {', '.join(missing)}" if missing else ""
        got = type(module).__name__ + lacks
    _type(True, name, f"be a {kind.__name__}", got)


def check_copy(sa_v2: nn.Module, sa_v1: nn.Module) -> None:
    """The one check of :func:`~attention.copy_weights_v2_to_v1`."""
    from .self_attention import SelfAttention_v1, SelfAttention_v2

    swapped = (type(sa_v2), type(sa_v1)) == (SelfAttention_v1, SelfAttention_v2)
    expected = "be (SelfAttention_v2, SelfAttention_v1)"
    _type(swapped, "(sa_v2, sa_v1)", expected, "them swapped")
    check_module("sa_v2", sa_v2, SelfAttention_v2)
    check_module("sa_v1", sa_v1, SelfAttention_v1)
    if sa_v1.W_query.device.type != "meta":  # a meta sa_v1 needs no values
        check_values("sa_v2's weights", sa_v2.W_query.weight, "copy_weights_v2_to_v1")
    got = (sa_v2.d_in, sa_v2.d_out, sa_v2.W_query.bias is not None)
    like = (sa_v1.d_in, sa_v1.d_out, False)  # SelfAttention_v1 has no bias
    _fail(got != like, "sa_v2", f"have (d_in, d_out, qkv_bias) = {like}, as sa_v1", got)


def check_variant(name: str, module: object) -> None:
    """Raise unless ``module`` keeps its weights in the chapter's layout (or says)."""
    from .contract import QKV, TranslatesLayout

    check_module(name, module)
    layers = (*QKV, "out_proj")
    linear = [n for n in layers if isinstance(getattr(module, n, 0), nn.Linear)]
    bad = len(linear) < 4 and not isinstance(module, TranslatesLayout)
    expected = "be a multi-head attention module: W_query, W_key, W_value and out_proj"
    expected += " as nn.Linear layers, or mha_state_dict() and load_mha_state_dict()"
    _fail(bad, name, expected, f"{type(module).__name__} (nn.Linear: {linear})")


def check_state(state: object, own: dict[str, torch.Tensor]) -> None:
    """Raise unless ``state`` has the tensors of ``own`` (an ``mha_state_dict()``)."""
    tensors = isinstance(state, dict) and state.values()
    ok = tensors and all(isinstance(t, torch.Tensor) for t in tensors)
    expected = "be a dict from parameter names to tensors (from mha_state_dict())"
    _type(not ok, "state", expected, _got(state))
    got, shapes = ({n: tuple(t.shape) for n, t in d.items()} for d in (state, own))
    expected = f"hold the module's weights {shapes}; do the modules differ in qkv_bias?"
    _fail(got != shapes, "state", expected, got)
    meta = [n for n, t in own.items() if state[n].is_meta and not t.is_meta]
    to = next(iter(own.values())).device
    _fail(meta, "state", f"hold values to copy to {to}", f"{meta} on meta")


def check_choice(name: str, value: object, choices: list) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    _fail(value not in choices, name, f"be one of {choices}", _got(value))


def check_register(name: str, cls: type, info: object, taken: dict) -> None:
    """The one check of :func:`~attention.register`."""
    from .contract import VariantInfo

    bad_name = not isinstance(name, str) or not name.isidentifier()
    _type(bad_name, "name", "be a short identifier such as 'mine'", _got(name))
    is_module = isinstance(cls, type) and issubclass(cls, nn.Module)
    _type(not is_module, "cls", "be an nn.Module subclass", _got(cls))
    expected = f"be free: {name!r} is taken by {taken.get(name)}"
    _fail(taken.get(name, cls) is not cls, "name", expected, cls.__name__)
    bad_info = not isinstance(info, VariantInfo | None)
    _type(bad_info, "info", "be a VariantInfo", _got(info))


def check_same_sizes(sizes: dict[str, tuple[object, object]]) -> None:
    """Raise unless each ``name: (in src, in dst)`` of ``sizes`` is one value."""
    for name, (a, b) in sizes.items():
        _fail(a != b, "src and dst", f"have the same {name}", f"{a} and {b}")
