"""Every input check of the companion package, and the policy they follow.

Checks at the door:

- A public function, or a module's ``forward``, validates its arguments once,
  at entry, with one call here (``check_batch(self, x)``). Every validator
  lives in this module, once: there is one ``check_token_ids``.
- Internal calls trust what the door let in: generation checks the prompt
  once, then its loop runs the unchecked steps (``attention.generation``).
  A loop skips a check only through a public, documented way, never a
  private twin: the loop's body has a public name (``KVCache.append``,
  ``TinyAttentionModel.logits``, ``attention.flash.tile_pair_gradients``),
  or the function says so (``repeat_kv(x, repeats, check=False)``).
- Nothing in a per-token loop reads tensor values to validate them: value
  checks (``min()``, ``max()``, ``all()``) wait for a GPU, so they run once.
- A wrong Python type raises ``ArgumentTypeError``, a ``TypeError`` that is
  also a ``ValueError`` (as numpy's ``AxisError`` is both); a wrong shape,
  dtype, device or value raises ``ValueError``. Every message names the
  argument, what was expected and what came.
- This module imports nothing from the package but its floor (the Protocols
  of ``attention.contract`` and the names of ``attention._layout``): a check
  of one class's arguments is given that class (``cache_type=KVCache``).

Decisions, the same everywhere: integer tensors are refused where attention
needs fractions (the message says ``.float()``), never promoted; a module and
its input share one device; ``True`` is not a size and ``inf`` is not a
learning rate. Shapes are written as layouts, one name per dimension
(``"... Tq head_dim"``): a name used twice is one size, and ``...`` stands for
the leading dimensions that every tensor of the call shares.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Protocol

import torch
from torch import nn

from ._layout import POSITION_KINDS, QKV, ROPE_LAYOUTS
from .contract import Decoder, SeparateProjections, TranslatesLayout, VariantInfo


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong Python type, such as a list where a tensor goes.

    >>> check_tensor("inputs", [[1.0, 0.0]])
    Traceback (most recent call last):
    ...
    attention.checks.ArgumentTypeError: inputs must be a torch.Tensor, got list; \
wrap it: torch.tensor(inputs)
    """


def _must(name: str, expected: str, got: object) -> str:
    """The message of every refusal: ``"NAME must EXPECTED, got GOT"``."""
    return f"{name} must {expected}, got {got}"


def _not_a_number(value: object, kind: type) -> bool:
    """Whether ``value`` is not of the number ``kind``; ``True`` is no number."""
    return isinstance(value, bool) or not isinstance(value, kind)


def _got(value: object) -> str:
    """``value`` as a message shows it: its repr, cut, and its type if unclear."""
    text = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    plain = isinstance(value, bool | int | float | str)
    return text if plain else f"{text} ({type(value).__name__})"


def _room(
    name: str,
    num_tokens: int,
    context_length: int,
    held=0,
    fed=0,
    limit="context_length",
) -> None:
    """Raise unless ``num_tokens`` fit after ``held`` cached and ``fed`` fed back;
    ``limit`` names the ``context_length`` (``"cache.context_length"``)."""
    room = context_length - held - fed
    if num_tokens <= room:
        return
    held_words = f" and the cache holds {held}" if held else ""
    most = context_length - held - num_tokens + 1  # new tokens that fit, if any
    if room < 1 <= most:  # no prompt could fit: max_new_tokens is what is wrong
        expected = f"be at most {most}: {name} has {num_tokens} tokens{held_words}"
        expected += f" and {limit} is {context_length}"
        raise ValueError(_must("max_new_tokens", expected, fed + 1))
    why = held_words
    if room < 1:  # the tokens alone do not fit: say so, whatever is fed back
        room = context_length - held
    elif fed:
        why += f" and max_new_tokens={fed + 1} feeds {fed} back"
    raise ValueError(
        f"{name} has {num_tokens} tokens but {limit} is {context_length}"
        f"{why}; pass at most {room} tokens or build with a larger {limit}"
    )


def check_flag(name: str, value: bool) -> None:
    """Raise unless ``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(_must(name, "be True or False", _got(value)))


def check_integer(name: str, value: int, smallest=-math.inf, below=math.inf) -> None:
    """Raise unless ``value`` is an integer (not a bool) in ``[smallest, below)``."""
    if below < math.inf:
        kind = f"be an integer in [{smallest}, {below})"
    elif smallest > -math.inf:
        kind = f"be an integer of at least {smallest}"
    else:
        kind = "be an integer"
    if _not_a_number(value, Integral):
        raise ArgumentTypeError(_must(name, kind, _got(value)))
    if not smallest <= value < below:
        raise ValueError(_must(name, kind, value))


def check_seed(seed: int, derived: int = 0) -> None:
    """Raise unless ``seed`` is an integer that torch's generators take, and so
    is ``seed + derived``, the largest seed a function derives from it."""
    check_integer("seed", seed, smallest=-(2**63), below=2**64 - derived)


def check_storage(name: str, value: object, nbytes: int) -> None:
    """Raise unless a tensor of ``nbytes`` bytes, which ``name=value`` asks
    for, has a size torch can count (below ``2**63`` bytes)."""
    if nbytes >= 2**63:
        expected = "leave the tensor it makes below 2**63 bytes, the most torch counts"
        raise ValueError(_must(name, expected, f"{value} ({nbytes} bytes)"))


def check_positive(**sizes: int) -> None:
    """Raise unless every keyword argument is an integer of at least 1."""
    for name, value in sizes.items():
        check_integer(name, value, smallest=1)


def check_number(name: str, value: float, high: float = math.inf) -> None:
    """Raise unless ``value`` is a number in ``(0, inf)`` (``lr``), or ``[0, high)``."""
    bounded = high < math.inf
    if bounded:
        kind = f"be a number in [0, {high})"
    else:
        kind = "be a positive, finite number"
    if _not_a_number(value, Real):
        raise ArgumentTypeError(_must(name, kind, _got(value)))
    if bounded:
        inside = 0 <= value < high  # dropout may be 0
    else:
        inside = 0 < value < high  # a learning rate may not
    if not inside:  # nan is inside no interval
        raise ValueError(_must(name, kind, repr(value)))


def check_divides(part: tuple[str, int], whole: tuple[str, int]) -> None:
    """Raise unless ``part``, a positive integer, divides ``whole`` (name, value)."""
    (part_name, p), (whole_name, w) = part, whole
    check_integer(part_name, p, smallest=1)
    if w % p:
        got = f"{whole_name}={w} and {part_name}={p}"
        raise ValueError(_must(whole_name, f"be divisible by {part_name}", got))


def check_attention_args(
    d_in, d_out, context_length, dropout, num_heads=1, qkv_bias=False
):
    """Check the constructor arguments every causal attention class shares."""
    check_positive(d_in=d_in, d_out=d_out, context_length=context_length)
    # the causal mask: context_length x context_length bools, a byte each
    check_storage("context_length", context_length, context_length**2)
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
    if isinstance(t, torch.Tensor):
        return
    got = type(t).__name__
    if isinstance(t, list | tuple):
        got += f"; wrap it: torch.tensor({name})"
    raise ArgumentTypeError(_must(name, "be a torch.Tensor", got))


def check_floats(*named: tuple[str, torch.Tensor]) -> None:
    """Raise unless the ``(name, tensor)`` pairs are float, of one dtype and device."""
    name_a, a = named[0]
    for name, t in named:
        check_tensor(name, t)
        if not t.is_floating_point():
            got = f"dtype {t.dtype}; convert it first: {name}.float()"
            raise ValueError(_must(name, "hold floating-point numbers", got))
        if (t.dtype, t.device) != (a.dtype, a.device):
            expected = f"be {a.dtype} on {a.device} like {name_a}"
            got = f"{t.dtype} on {t.device}; convert one of them with .to()"
            raise ValueError(_must(name, expected, got))


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
        raise ValueError(_layouts_message(named))


def _layouts_message(named: dict[str, tuple[torch.Tensor, str] | int]) -> str:
    """What :func:`check_shapes` says: every layout expected, every shape got."""
    tensors = {n: v for n, v in named.items() if isinstance(v, tuple)}
    layouts = []
    for name, (_, layout) in tensors.items():
        dims = layout.split()
        described = f"{name} ({', '.join(dims)})"
        if "..." not in dims:
            described = f"{len(dims)}-D {described}"
        layouts.append(described)
    expected = " and ".join(layouts)
    if "..." in expected:
        expected += ", the same leading (batch) dimensions ..."
    fixed = "".join(f", {n}={v}" for n, v in named.items() if isinstance(v, int))
    got = " and ".join(f"{n} {tuple(t.shape)}" for n, (t, _) in tensors.items())
    return f"expected {expected}, one size per name{fixed}; got {got}"


def check_dim(name: str, t: torch.Tensor, dim: int) -> None:
    """Raise unless ``dim`` is an integer that indexes a dimension of ``t``."""
    n = max(t.dim(), 1)
    check_integer(f"dim (of {name} {tuple(t.shape)})", dim, smallest=-n, below=n)


def check_values(name: str, t: torch.Tensor, needed_by: str) -> None:
    """Raise if ``t`` is on the ``meta`` device, which holds shapes but no values."""
    if t.is_meta:
        expected = (
            f"hold the values {needed_by} reads; build it on a device such as 'cpu'"
        )
        got = "a tensor on meta, which holds no values"
        raise ValueError(_must(name, expected, got))


def check_batch(module: nn.Module, x: torch.Tensor, ndim: int = 3, held=0) -> None:
    """Raise unless ``module`` accepts ``x`` ``(b, T, d_in)`` after ``held`` cached."""
    first_weight = next(module.parameters(), None)
    if first_weight is None:
        check_floats(("x", x))
    else:
        check_floats(("the module's weights", first_weight), ("x", x))
    if ndim == 3:
        layout = "batch num_tokens d_in"
    else:  # one sequence, as the classes of section 3.4 take it
        layout = "num_tokens d_in"
    check_shapes(x=(x, layout), d_in=module.d_in)
    if hasattr(module, "context_length"):
        _room("x", x.shape[-2], module.context_length, held)


def check_cross_input(module: nn.Module, x: torch.Tensor, context: torch.Tensor):
    """Raise unless ``x`` and ``context`` fit :class:`~attention.CrossAttention`:
    both ``(T, d)``, or both ``(b, T, d)`` with one ``b``."""
    check_tensor("x", x)
    if x.dim() == 2:
        x_layout, context_layout = "T d_in", "S d_context"
    else:  # batched, or a rank the message will refuse
        x_layout, context_layout = "b T d_in", "b S d_context"
    check_shapes(
        weights=(module.W_query.weight, "d_out d_in"),
        x=(x, x_layout),
        context=(context, context_layout),
        d_context=module.d_context,
    )
    if context.shape[-2] == 0:
        raise ValueError(_must("context", "hold at least one token", "none"))


def check_tiled(queries, keys, tile_size=1, causal=False, dropout_p=0.0, **more):
    """The one check of the tiled functions of ``attention.flash``."""
    future = more.pop("future", None)
    window = more.pop("window", None)
    sinks = more.pop("sinks", None)
    layouts = {"lse": "... Tq", "delta": "... Tq", "values": "... Tk head_dim"}
    others = {}
    for name, t in more.items():
        others[name] = (t, layouts.get(name, "... Tq head_dim"))
    check_shapes(
        queries=(queries, "... Tq head_dim"),
        keys=(keys, "... Tk head_dim"),
        **others,
    )
    no_key = keys.shape[-2] == 0 < queries.shape[-2]
    if queries.shape[-1] == 0 or no_key:
        got = f"queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
        raise ValueError(_must("keys", "hold a key and head_dim >= 1", got))
    check_positive(tile_size=tile_size)
    check_flag("causal", causal)
    check_number("dropout_p", dropout_p, high=1)
    if future is not None:
        check_tensor("future", future)
        shape = (queries.shape[-2], keys.shape[-2])
        if future.dtype != torch.bool or future.shape != shape:
            expected = f"be None or a bool tensor of shape {shape}"
            got = f"{future.dtype} {tuple(future.shape)}"
            raise ValueError(_must("future", expected, got))
        if future.device != queries.device:
            expected = f"be on {queries.device} like queries"
            raise ValueError(_must("future", expected, future.device))
    check_window(window, causal)
    if sinks is not None:  # one logit per head: queries (..., h, Tq, head_dim)
        check_shapes(queries=(queries, "... h Tq head_dim"), sinks=(sinks, "h"))


def check_window(window: object, causal: bool) -> None:
    """Raise unless ``window`` is ``None``, or an integer of at least 1 with
    ``causal=True``: a window here is the last ``window`` keys of the past."""
    if window is None:
        return
    check_integer("window", window, smallest=1)
    if causal is not True:
        expected = "be None when causal=False: it counts keys back from the query"
        raise ValueError(_must("window", expected, f"{window}; pass causal=True"))


def check_kv(
    keys, values, cached: torch.Tensor | None, limit: int, held: int | None = None
) -> None:
    """Raise unless new ``keys``, ``values`` (b, g, T_new, hd) fit: ``limit``
    tokens after ``held`` (default: the rows of ``cached``; 0 for a window)."""
    layout = "b g T_new head_dim"
    tensors = {"keys": (keys, layout), "values": (values, layout)}
    if cached is not None:
        tensors["cached_keys"] = (cached, "b g T_held head_dim")
    if held is None:
        held = 0 if cached is None else cached.shape[2]
    check_shapes(**tensors)
    _room("keys", keys.shape[2], limit, held)


def check_window_layers(window, sink_tokens, num_layers: int) -> tuple:
    """Raise unless ``window`` is ``None``, an integer >= 1 or one such entry (or
    ``None``) per layer, and ``sink_tokens`` an integer >= 0 that has a window
    to outlive; return the window of every layer, a tuple."""
    check_integer("sink_tokens", sink_tokens, smallest=0)
    expected = (
        f"be None, an integer of at least 1, or a list of {num_layers} entries"
        " (one per layer, each None or an integer of at least 1)"
    )
    if window is None or isinstance(window, Integral):
        windows = (window,) * num_layers
    elif isinstance(window, list | tuple):
        windows = tuple(window)
        if len(windows) != num_layers:
            raise ValueError(_must("window", expected, f"{len(windows)} entries"))
    else:
        raise ArgumentTypeError(_must("window", expected, _got(window)))
    for entry in windows:
        if entry is not None:
            check_integer("each entry of window", entry, smallest=1)
    if sink_tokens and all(entry is None for entry in windows):
        expected = "be 0 without a window: sinks are what a window keeps besides itself"
        raise ValueError(_must("sink_tokens", expected, sink_tokens))
    return tuple(None if entry is None else int(entry) for entry in windows)


def check_window_list(windows: object) -> None:
    """Raise unless ``windows`` is a list or tuple, one window per layer."""
    if not isinstance(windows, list | tuple) or not windows:
        expected = "be a non-empty list with one window (or None) per layer"
        raise ArgumentTypeError(_must("windows", expected, _got(windows)))


def check_window_positions(windows: tuple, positions: str) -> None:
    """Raise unless a model with a window has positions that a window lets
    run on: rotary ones or none, not a learned table."""
    if positions == "learned" and any(w is not None for w in windows):
        expected = (
            "be 'rope' or 'none' with a window: a learned table ends at"
            " context_length, which a bounded cache would let generation pass"
        )
        raise ValueError(_must("positions", expected, "'learned'"))


def check_cache_bounds(positions: object, kinds: list) -> None:
    """Raise unless ``positions`` names where a bounded cache puts its sinks."""
    check_choice("positions", positions, kinds)


def check_token_ids(t, vocab_size, context_length=None, device=None, smallest=(0, 0)):
    """Raise unless token ids ``t`` are ``(b, T)`` ints in ``[0, vocab_size)``."""
    check_tensor("token_ids", t)
    ok = t.dim() == 2 and t.dtype in (torch.int64, torch.int32)
    if ok:
        ok = t.shape[0] >= smallest[0] and t.shape[1] >= smallest[1]
    if not ok:
        expected = "be integer ids (torch.long) of 2 dimensions (batch, num_tokens)"
        if any(smallest):
            expected += f" of at least {smallest}"
        got = f"{t.dtype}, {t.dim()}-D {tuple(t.shape)}"
        raise ValueError(_must("token_ids", expected, got))
    if context_length is not None:
        _room("token_ids", t.shape[1], context_length)
    if device is not None and t.device != device:
        expected = f"be on the model's device, {device}"
        raise ValueError(_must("token_ids", expected, t.device))
    if t.is_meta or not t.numel():
        return  # no values to read
    low, high = t.min().item(), t.max().item()
    if low < 0 or high >= vocab_size:
        expected = f"lie in [0, {vocab_size}) (the vocab_size)"
        raise ValueError(_must("token_ids", expected, f"{low} to {high}"))


def check_attention_mask(
    attention_mask, x=None, held: int | None = None, counts: bool = False, like="x"
) -> None:
    """Raise unless ``attention_mask`` is ``(b, T)`` 0s and 1s (left-padded if held).

    ``like`` names ``x`` in the messages (``"token_ids"`` for generation)."""
    # counts: positions are counted from the mask (generation, the KV cache),
    # so it must hold integers or bools; a float mask will do where it only masks.
    name, mask = "attention_mask", attention_mask
    check_tensor(name, mask)
    expected = "have 2 dimensions (batch, num_tokens)"
    shape = None
    if x is not None:
        shape = (x.shape[0], (held or 0) + x.shape[1])
        expected += f" = {shape}"
    if held:
        expected += f", the {held} cached tokens included"
    if mask.dim() != 2 or shape not in (None, tuple(mask.shape)):
        got = f"{mask.dim()} dimensions {tuple(mask.shape)}"
        raise ValueError(_must(name, expected, got))
    device = mask.device if x is None else x.device
    if mask.device != device:
        raise ValueError(_must(name, f"be on {device} like {like}", mask.device))
    if counts and (mask.dtype.is_floating_point or mask.dtype.is_complex):
        expected = "hold integers or bools (positions are counted from it)"
        got = f"{mask.dtype}; convert it first: {name}.long()"
        raise ValueError(_must(name, expected, got))
    if mask.is_meta:
        return  # no values to read
    binary = (mask == 0) | (mask == 1)
    if not binary.all():
        expected = "hold only 1 (a real token) and 0 (a pad)"
        got = f"also {mask[~binary].unique()[:5].tolist()}"
        raise ValueError(_must(name, expected, got))
    if held is None:
        return  # any padding will do
    late = (mask[:, 1:] < mask[:, :-1]).any(dim=1)  # a row with a 1 before a 0
    if late.any():
        expected = (
            "be left-padded, 0s (pads) then 1s (real tokens), so new tokens follow"
        )
        raise ValueError(_must(name, expected, mask[late].tolist()))


def _check_cache_fits(cache, layer: int, attn, batch: int, where: str) -> None:
    """Raise unless what ``cache`` holds for ``layer`` came from a call like this
    one: ``batch`` rows, ``attn``'s key/value heads, head size, dtype, device."""
    cached = cache.keys[layer]
    if cached is None:
        return  # nothing held yet: any first call fits
    weight = attn.W_key.weight
    kv_heads = getattr(attn, "num_kv_heads", attn.num_heads)
    now = (batch, kv_heads, attn.head_dim, weight.dtype, weight.device)
    held = (*cached.shape[:2], cached.shape[3], cached.dtype, cached.device)
    if now != held:
        names = "(batch, kv_heads, head_dim, dtype, device)"
        expected = f"hold keys of {names} = {_tuple(now)} for {where}"
        got = f"{_tuple(held)}: a cache from another call; start a new KVCache"
        raise ValueError(_must(f"cache (layer {layer})", expected, got))


def _tuple(values: tuple) -> str:
    """``(2, 2, 3, torch.float32, cpu)``: a tuple as a message shows it."""
    return "(" + ", ".join(str(v) for v in values) + ")"


def check_generate(
    model,
    ids,
    max_new_tokens,
    attention_mask=None,
    *,
    cache_type,
    cached=False,
    cache=None,
):
    """The one check of the generation loops: ``max_new_tokens``, then
    :func:`check_decode`. ``cached``: the loop keeps a cache, ``cache`` if
    given, which must then be empty and bounded as the model is."""
    check_positive(max_new_tokens=max_new_tokens)
    if cache is not None:
        check_module("cache", cache, cache_type)
        if any(cache.lengths):
            expected = "be empty: generation starts with the prefill"
            raise ValueError(_must("cache", expected, f"lengths {cache.lengths}"))
    check_decode(
        model,
        ids,
        cache,
        max_new_tokens,
        attention_mask,
        cache_type=cache_type,
        cached=cached,
    )


def _windows_of(model) -> tuple[tuple, int]:
    """A model's window per layer and sink tokens, ``(None, ...), 0`` if none."""
    windows = getattr(model, "windows", None) or (None,) * len(model.layers)
    return tuple(windows), getattr(model, "sink_tokens", 0)


def _unbounded_positions(model, windows: tuple) -> bool:
    """Whether a cache with these windows lets ``model`` generate without an
    end: every layer windowed, and no learned position table to run out."""
    windowed = all(w is not None for w in windows)
    return windowed and getattr(model, "pos_emb", None) is None


def check_decode(
    model,
    ids,
    cache=None,
    max_new_tokens=None,
    attention_mask=None,
    *,
    position_ids=None,
    cache_type: type,
    cached: bool = False,
):
    """The one check of generation: a ``Decoder`` model and a prompt that fits.

    ``cache``, if any, must be a ``cache_type`` (generation passes
    :class:`~attention.KVCache`), bounded as the model is; ``position_ids``,
    if any, one per new token, within the model's ``context_length``.
    ``cached``: the loop keeps a cache. A cache whose every layer has a
    window lets a model without a position table go past its
    ``context_length``: then only the new tokens of one call must fit.
    """
    check_module("model", model, Decoder)
    for i, layer in enumerate(model.layers):
        check_module(f"model.layers[{i}]", layer, SeparateProjections)
    windows, sink_tokens = _windows_of(model)
    held = 0
    if cache is not None:
        check_module("cache", cache, cache_type)
        held, layers = cache.num_tokens(), len(model.layers)
        if cache.num_layers != layers:
            expected = f"have num_layers={layers}, one per layer of model"
            raise ValueError(_must("cache", expected, cache.num_layers))
        if len(set(cache.lengths)) > 1:
            expected = "hold as many tokens in every layer (a decode_step cache)"
            raise ValueError(_must("cache", expected, cache.lengths))
        bounds = (tuple(cache.windows), cache.sink_tokens)
        if bounds != (windows, sink_tokens):
            expected = (
                f"have the model's window={list(windows)}, sink_tokens={sink_tokens}"
            )
            got = f"window={list(cache.windows)}, sink_tokens={cache.sink_tokens}"
            raise ValueError(_must("cache", expected, got))
    fed = 0
    if max_new_tokens is not None:
        check_positive(max_new_tokens=max_new_tokens)
        fed = max_new_tokens - 1  # the last new token is never fed back
    device = next(model.parameters()).device
    check_token_ids(ids, model.vocab_size, device=device, smallest=(0, 1))
    counted_held, counted_fed = held, fed
    if (cached or cache is not None) and _unbounded_positions(model, windows):
        counted_held, counted_fed = 0, 0  # a bounded cache: one call must fit
    _room("token_ids", ids.shape[1], model.context_length, counted_held, counted_fed)
    if cache is not None:
        limit = "cache.context_length"
        _room(
            "token_ids",
            ids.shape[1],
            cache.context_length,
            counted_held,
            counted_fed,
            limit,
        )
        for i, layer in enumerate(model.layers):
            _check_cache_fits(cache, i, layer, ids.shape[0], f"model.layers[{i}]")
    if position_ids is not None:
        check_position_ids(
            position_ids, ids.shape[1], ids.shape[0], ids.device, like="token_ids"
        )
        table = getattr(model, "pos_emb", None)  # learned positions: a table
        if table is not None and position_ids.numel() and not position_ids.is_meta:
            high = position_ids.max().item()
            if high >= table.num_embeddings:
                expected = f"be below the {table.num_embeddings} rows of model.pos_emb"
                raise ValueError(_must("position_ids", expected, high))
    if attention_mask is None:
        return
    check_attention_mask(attention_mask, ids, held, counts=True, like="token_ids")
    if max_new_tokens is None or attention_mask.is_meta:
        return  # nothing is generated after the mask's last column
    if not attention_mask[:, -1].all():
        expected = "end in a real token (1) in every row: generation continues after it"
        raise ValueError(_must("attention_mask", expected, attention_mask.tolist()))


def check_cached(attn, x, cache, layer: int, attention_mask=None, *, cache_type: type):
    """The one check of :func:`~attention.cached_attention`: new tokens that fit
    in ``cache``, a ``cache_type`` (:class:`~attention.KVCache`)."""
    check_module("attn", attn, SeparateProjections)
    check_module("cache", cache, cache_type)
    check_integer("layer", layer, 0, cache.num_layers)
    held = cache.num_tokens(layer)
    counted = 0 if cache.windows[layer] is not None else held  # a window: one call
    check_batch(attn, x, held=counted)
    _room("x", x.shape[-2], cache.context_length, counted, limit="cache.context_length")
    _check_cache_fits(cache, layer, attn, x.shape[0], "attn")
    if attention_mask is not None:
        check_attention_mask(attention_mask, x, held, counts=True)


def check_training(
    model,
    ids,
    targets,
    steps=1,
    batch_size=1,
    lr=1.0,
    seed=0,
    *,
    model_type: type,
    ignore_index: int,
):
    """The one check of training and scoring: a ``model_type`` model, ``(N, T)``
    token ids it accepts, and targets in its vocabulary or ``ignore_index``."""
    check_module("model", model, model_type)
    check_tensor("token_ids", ids)
    check_tensor("targets", targets)
    ok = ids.dim() == 2 and ids.shape == targets.shape and len(targets) > 0
    ok = ok and targets.dtype in (torch.int64, torch.int32)
    if not ok:
        expected = "have one shape (N, T), N >= 1, and targets integer ids"
        got = f"{tuple(ids.shape)} and {targets.dtype} {tuple(targets.shape)}"
        raise ValueError(_must("token_ids and targets", expected, got))
    device = next(model.parameters()).device
    check_token_ids(ids, model.vocab_size, model.context_length, device)
    check_values("targets", targets, "training and scoring")
    check_positive(steps=steps, batch_size=batch_size)
    if batch_size > len(ids):
        expected = f"be at most the number of sequences, {len(ids)}"
        raise ValueError(_must("batch_size", expected, batch_size))
    check_number("lr", lr)
    check_seed(seed)
    counted = targets[targets != ignore_index]
    vocab_size = model.vocab_size
    ok = counted.numel() > 0
    ok = ok and 0 <= counted.min() and counted.max() < vocab_size
    if not ok:
        expected = (
            f"be in [0, {vocab_size}) or {ignore_index} (ignored), not all ignored"
        )
        got = _got(targets.unique()[:8].tolist())
        raise ValueError(_must("targets", expected, got))


def check_sequences(sequences: object, side: str, value: float) -> None:
    """Raise unless ``sequences`` can be padded on ``side`` with ``value``."""
    check_choice("side", side, ["left", "right"])
    if not isinstance(sequences, list | tuple) or not sequences:
        expected = "be a non-empty list of tensors"
        raise ArgumentTypeError(_must("sequences", expected, _got(sequences)))
    first = sequences[0]
    for i, seq in enumerate(sequences):
        check_tensor(f"sequences[{i}]", seq)
        ok = seq.dim() > 0 and len(seq) > 0 and seq.shape[1:] == first.shape[1:]
        ok = ok and (seq.dtype, seq.device) == (first.dtype, first.device)
        if not ok:
            expected = "be (T_i, ...), T_i >= 1, like sequences[0] but in T_i"
            got = f"{tuple(seq.shape)} {seq.dtype} on {seq.device}; sequences[0] is "
            got += f"{tuple(first.shape)} {first.dtype} on {first.device}"
            raise ValueError(_must(f"sequences[{i}]", expected, got))
    if _not_a_number(value, Real):
        raise ArgumentTypeError(_must("value", "be a number", _got(value)))
    if first.dtype.is_floating_point or first.dtype.is_complex:
        return  # any number pads a float tensor
    if first.dtype == torch.bool:
        low, high = 0, 1
    else:
        info = torch.iinfo(first.dtype)
        low, high = info.min, info.max
    if not (math.isfinite(value) and value == int(value) and low <= value <= high):
        expected = f"be an integer in [{low}, {high}] to pad {first.dtype}"
        raise ValueError(_must("value", expected, repr(value)))


def check_module(name: str, module: object, kind: type = nn.Module) -> None:
    """Raise unless ``module`` is a ``kind``: an ``nn.Module`` class or a Protocol."""
    if isinstance(module, kind):
        return
    if isinstance(module, type):
        got = f"the class {module.__name__} itself; build one: {module.__name__}(...)"
    elif isinstance(module, dict):
        got = "a dict; pass the module itself, not its state_dict()"
    else:
        got = type(module).__name__
        if Protocol in kind.__mro__:
            names = {*kind.__annotations__, *vars(kind)}
            missing = sorted(n for n in names if n[0] != "_" and not hasattr(module, n))
            if missing:
                got += f", which lacks {', '.join(missing)}"
    raise ArgumentTypeError(_must(name, f"be a {kind.__name__}", got))


def check_copy(sa_v2: nn.Module, sa_v1: nn.Module, v2_type: type, v1_type: type):
    """The one check of :func:`~attention.copy_weights_v2_to_v1`, given the two
    classes (``SelfAttention_v2``, ``SelfAttention_v1``)."""
    if (type(sa_v2), type(sa_v1)) == (v1_type, v2_type):
        expected = f"be ({v2_type.__name__}, {v1_type.__name__})"
        raise ArgumentTypeError(_must("(sa_v2, sa_v1)", expected, "them swapped"))
    check_module("sa_v2", sa_v2, v2_type)
    check_module("sa_v1", sa_v1, v1_type)
    if sa_v1.W_query.device.type != "meta":  # a meta sa_v1 needs no values
        check_values("sa_v2's weights", sa_v2.W_query.weight, "copy_weights_v2_to_v1")
    got = (sa_v2.d_in, sa_v2.d_out, sa_v2.W_query.bias is not None)
    like = (sa_v1.d_in, sa_v1.d_out, False)  # SelfAttention_v1 has no bias
    if got != like:
        expected = f"have (d_in, d_out, qkv_bias) = {like}, as sa_v1"
        raise ValueError(_must("sa_v2", expected, got))


def check_variant(name: str, module: object) -> None:
    """Raise unless ``module`` keeps its weights in the chapter's layout (or says)."""
    check_module(name, module)
    if isinstance(module, TranslatesLayout):
        return  # it translates its own layout
    layers = (*QKV, "out_proj")
    linear = [n for n in layers if isinstance(getattr(module, n, None), nn.Linear)]
    if len(linear) < len(layers):
        expected = "be a multi-head attention module: W_query, W_key, W_value and"
        expected += " out_proj as nn.Linear layers, or mha_state_dict() and"
        expected += " load_mha_state_dict()"
        got = f"{type(module).__name__} (nn.Linear: {linear})"
        raise ValueError(_must(name, expected, got))


def check_state(state: object, own: dict[str, torch.Tensor]) -> None:
    """Raise unless ``state`` has the tensors of ``own`` (an ``mha_state_dict()``)."""
    tensors = isinstance(state, dict) and state.values()
    if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors):
        expected = "be a dict from parameter names to tensors (from mha_state_dict())"
        raise ArgumentTypeError(_must("state", expected, _got(state)))
    got = {n: tuple(t.shape) for n, t in state.items()}
    shapes = {n: tuple(t.shape) for n, t in own.items()}
    if got != shapes:
        expected = (
            f"hold the module's weights {shapes}; do the modules differ in qkv_bias?"
        )
        raise ValueError(_must("state", expected, got))
    meta = [n for n, t in own.items() if state[n].is_meta and not t.is_meta]
    if meta:
        to = next(iter(own.values())).device
        raise ValueError(
            _must("state", f"hold values to copy to {to}", f"{meta} on meta")
        )


def check_unrotated(name: str, module: nn.Module, why: str) -> None:
    """Raise if ``module`` rotates its queries and keys (has ``rotate``, as a
    :class:`~attention.RotaryMultiHeadAttention` does): ``why`` says what
    would silently drop the rotation."""
    if getattr(module, "rotate", None) is not None:
        expected = f"be a layer without RoPE ({why})"
        raise ValueError(_must(name, expected, type(module).__name__))


def check_choice(name: str, value: object, choices: list) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(_must(name, f"be one of {choices}", _got(value)))


def check_register(name: str, cls: type, info: object, taken: dict) -> None:
    """The one check of :func:`~attention.register`."""
    if not isinstance(name, str) or not name.isidentifier():
        expected = "be a short identifier such as 'mine'"
        raise ArgumentTypeError(_must("name", expected, _got(name)))
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ArgumentTypeError(_must("cls", "be an nn.Module subclass", _got(cls)))
    if taken.get(name, cls) is not cls:
        expected = f"be free: {name!r} is taken by {taken.get(name)}"
        raise ValueError(_must("name", expected, cls.__name__))
    if not isinstance(info, VariantInfo | None):
        raise ArgumentTypeError(_must("info", "be a VariantInfo", _got(info)))
    if info is not None:
        check_variant_info(info)


def check_variant_info(info: VariantInfo) -> None:
    """Raise unless the fields of ``info`` are what the suite and the benchmark read."""
    dtypes = info.dtypes
    floats = isinstance(dtypes, tuple) and len(dtypes) > 0
    floats = floats and all(isinstance(d, torch.dtype) for d in dtypes)
    if not (floats and all(d.is_floating_point for d in dtypes)):
        expected = "be a tuple of floating-point torch.dtypes"
        raise ArgumentTypeError(_must("info.dtypes", expected, _got(dtypes)))
    devices = info.devices
    names = isinstance(devices, tuple) and len(devices) > 0
    if not (names and all(isinstance(d, str) for d in devices)):
        expected = "be a tuple of device types such as 'cpu'"
        raise ArgumentTypeError(_must("info.devices", expected, _got(devices)))
    tolerances = info.tolerances
    pairs = isinstance(tolerances, Mapping) and all(
        isinstance(t, tuple) and len(t) == 2 for t in tolerances.values()
    )
    if not pairs:
        expected = "be a mapping from dtype to (atol, rtol)"
        raise ArgumentTypeError(_must("info.tolerances", expected, _got(tolerances)))
    check_flag("info.same_parameter_count", info.same_parameter_count)
    kwargs = info.kwargs
    if not (isinstance(kwargs, Mapping) and all(isinstance(k, str) for k in kwargs)):
        expected = "be a mapping from keyword names to values"
        raise ArgumentTypeError(_must("info.kwargs", expected, _got(kwargs)))


def check_variant_spec(spec: object) -> None:
    """Raise unless ``spec`` reads ``module:Class`` or ``name=module:Class``."""
    expected = "be 'module:Class' or 'name=module:Class'"
    if not isinstance(spec, str):
        raise ArgumentTypeError(_must("spec", expected, _got(spec)))
    target = spec.rpartition("=")[2]
    module_name, colon, class_name = target.partition(":")
    if not (colon and module_name and class_name):
        raise ValueError(_must("spec", expected, repr(spec)))


def check_same_sizes(sizes: dict[str, tuple[object, object]]) -> None:
    """Raise unless each ``name: (in src, in dst)`` of ``sizes`` is one value."""
    for name, (a, b) in sizes.items():
        if a != b:
            raise ValueError(
                _must("src and dst", f"have the same {name}", f"{a} and {b}")
            )


def check_even(name: str, value: int, why: str) -> None:
    """Raise unless ``value`` is an even integer of at least 2 (``why`` says why)."""
    check_integer(name, value, smallest=2)
    if value % 2:
        raise ValueError(_must(name, f"be even ({why})", value))


def check_position_ids(
    position_ids, num_tokens=None, rows=None, device=None, like="x"
) -> None:
    """Raise unless ``position_ids`` are ``(T,)`` or ``(b, T)`` integers >= 0.

    ``num_tokens`` fixes ``T``; ``rows`` is the batch size a ``(b, T)`` tensor
    must have (``None``: one row for every sequence only); ``device`` is the
    device of the tensor that ``like`` names in the messages.
    """
    name = "position_ids"
    check_tensor(name, position_ids)
    dtype = position_ids.dtype
    if dtype not in (torch.int64, torch.int32):  # what an embedding table takes
        got = f"{dtype}; convert them first: {name}.long()"
        raise ValueError(_must(name, "be integer positions (torch.long)", got))
    shape = tuple(position_ids.shape)
    expected = "have the shape (T,)"
    if rows is not None:
        expected += f" or (b, T) with b = {rows}"
    if num_tokens is not None:
        expected += f", T = {num_tokens} tokens"
    ok = position_ids.dim() == 1 or (rows is not None and position_ids.dim() == 2)
    ok = ok and (num_tokens is None or shape[-1] == num_tokens)
    ok = ok and (position_ids.dim() == 1 or shape[0] == rows)
    if not ok:
        raise ValueError(_must(name, expected, shape))
    if device is not None and position_ids.device != device:
        expected = f"be on {device} like {like}"
        raise ValueError(_must(name, expected, position_ids.device))
    if position_ids.is_meta or not position_ids.numel():
        return  # no values to read
    low = position_ids.min().item()
    if low < 0:
        expected = "be at least 0 (a position counts the tokens before it)"
        raise ValueError(_must(name, expected, f"{low}"))


def check_rotary_batch(module: nn.Module, x, position_ids) -> torch.Tensor:
    """The one check of a rotary layer's ``forward``: ``x`` as :func:`check_batch`
    wants it, and its ``position_ids``; returns them, ``0 .. T - 1`` if ``None``."""
    check_batch(module, x)
    if position_ids is None:
        return torch.arange(x.shape[1], device=x.device)
    check_position_ids(position_ids, x.shape[1], x.shape[0], x.device)
    return position_ids


def check_rope(x, position_ids, base, layout) -> None:
    """The one check of :func:`~attention.apply_rope`: ``x`` ``(..., T, head_dim)``
    with an even ``head_dim``, and its ``position_ids``."""
    check_floats(("x", x))
    if x.dim() < 2:
        expected = "have at least 2 dimensions (..., T, head_dim)"
        raise ValueError(_must("x", expected, tuple(x.shape)))
    check_even("head_dim", x.shape[-1], "RoPE turns pairs of features")
    rows = x.shape[0] if x.dim() >= 3 else None  # a batch: a row of positions each
    check_position_ids(position_ids, x.shape[-2], rows, x.device)
    check_number("base", base)
    check_choice("layout", layout, list(ROPE_LAYOUTS))


def check_rope_options(base: object, layout: object) -> None:
    """Raise unless a model's ``rope_base`` and ``rope_layout`` are valid,
    whatever its kind of positions: a wrong one is wrong before it is used."""
    check_number("rope_base", base)
    check_choice("rope_layout", layout, list(ROPE_LAYOUTS))


def check_rope_angles(position_ids, head_dim, base, dtype) -> None:
    """The one check of :func:`~attention.rope_angles`."""
    check_even("head_dim", head_dim, "RoPE turns pairs of features")
    check_tensor("position_ids", position_ids)
    if position_ids.dim() not in (1, 2):
        expected = "have the shape (T,) or (b, T)"
        raise ValueError(_must("position_ids", expected, tuple(position_ids.shape)))
    rows = position_ids.shape[0] if position_ids.dim() == 2 else None
    check_position_ids(position_ids, rows=rows)
    check_number("base", base)
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        expected = "be a floating-point torch.dtype such as torch.float64"
        raise ArgumentTypeError(_must("dtype", expected, _got(dtype)))
    nbytes = position_ids.numel() * (head_dim // 2) * dtype.itemsize
    check_storage("head_dim", head_dim, nbytes)


def check_state_layout(state: object, num_heads: int) -> list[str]:
    """Raise unless ``state`` has query and key rows to reorder per head;
    return their names (``...W_query.weight``, ``...W_key.bias``, ...)."""
    if not isinstance(state, dict) or not all(
        isinstance(t, torch.Tensor) for t in state.values()
    ):
        expected = "be a dict from parameter names to tensors (a state_dict())"
        raise ArgumentTypeError(_must("state", expected, _got(state)))
    check_integer("num_heads", num_heads, smallest=1)
    ends = tuple(f"{name}.{part}" for name in QKV[:2] for part in ("weight", "bias"))
    names = [n for n in state if n.endswith(ends)]
    if not names:
        expected = "hold W_query and W_key weights (a RoPE model's state_dict())"
        raise ValueError(_must("state", expected, _got(sorted(state)[:4])))
    for name in names:
        rows = state[name].shape[0] if state[name].dim() else 0
        if rows % num_heads or (rows // num_heads) % 2:
            expected = f"have num_heads={num_heads} heads of an even head_dim"
            raise ValueError(_must(f"state[{name!r}]", expected, f"{rows} rows"))
    return names


def check_positions(positions: object, use_positions: object = None) -> str:
    """The kind of positions of a ``TinyAttentionModel``, from ``positions`` or
    its older spelling ``use_positions`` (``True`` learned, ``False`` none);
    neither given (both ``None``): ``"learned"``."""
    kinds = list(POSITION_KINDS)
    if use_positions is not None:
        check_flag("use_positions", use_positions)
        spelled = "learned" if use_positions else "none"
        if positions not in (None, spelled):
            got = f"positions={positions!r} and use_positions={use_positions}"
            raise ValueError(_must("positions", "not contradict use_positions", got))
        return spelled
    if positions is None:
        return "learned"
    if isinstance(positions, bool):
        expected = f"be one of {kinds} (use_positions={positions} is the old spelling)"
        raise ArgumentTypeError(_must("positions", expected, positions))
    check_choice("positions", positions, kinds)
    return positions


def check_multiples(multiples: object) -> None:
    """Raise unless ``multiples`` is a non-empty tuple of integers >= 1."""
    if not isinstance(multiples, tuple) or not multiples:
        expected = "be a non-empty tuple of integers such as (1, 2, 4)"
        raise ArgumentTypeError(_must("multiples", expected, _got(multiples)))
    for m in multiples:
        check_integer("each of multiples", m, smallest=1)
