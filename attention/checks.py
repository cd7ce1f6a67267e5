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
from numbers import Integral, Real

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


def _got(value: object) -> str:
    """``value`` as a message shows it: its repr, cut, and its type if unclear."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    plain = isinstance(value, bool | int | float | str)
    return text if plain else f"{text} ({type(value).__name__})"


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _fail(condition: object, message: str, error: type = ValueError) -> None:
    if condition:
        raise error(message)


# --- Python values ---------------------------------------------------------------


def check_flag(name: str, value: bool) -> None:
    """Raise unless ``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {_got(value)}")


def check_integer(name: str, value: int, smallest: int | None = None) -> None:
    """Raise unless ``value`` is an integer (not a bool), ``>= smallest`` if given.

    >>> check_integer("d_out", 0, smallest=1)
    Traceback (most recent call last):
    ...
    ValueError: d_out must be a positive integer, got 0
    """
    kind = {None: "an integer", 1: "a positive integer"}.get(
        smallest, f"an integer of at least {smallest}"
    )
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ArgumentTypeError(f"{name} must be {kind}, got {_got(value)}")
    _fail(
        smallest is not None and value < smallest, f"{name} must be {kind}, got {value}"
    )


def check_positive(**sizes: int) -> None:
    """Raise unless every keyword argument is an integer of at least 1."""
    for name, value in sizes.items():
        check_integer(name, value, smallest=1)


def check_number(name: str, value: float, high: float = math.inf) -> None:
    """Raise unless ``value`` is a positive finite number (``lr``), or with a finite
    ``high`` a number in ``[0, high)`` (a probability such as ``dropout``)."""
    kind = (
        f"a number in [0, {high})" if high < math.inf else "a positive, finite number"
    )
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ArgumentTypeError(f"{name} must be {kind}, got {_got(value)}")
    inside = 0 <= value < high if high < math.inf else 0 < value < high
    _fail(not inside, f"{name} must be {kind}, got {value!r}")


def check_divides(part: tuple[str, int], whole: tuple[str, int]) -> None:
    """Raise unless ``part``, a positive integer, divides ``whole`` (``(name, value)``).

    >>> check_divides(("num_heads", 4), ("d_out", 6))
    Traceback (most recent call last):
    ...
    ValueError: d_out must be divisible by num_heads, got d_out=6 and num_heads=4
    """
    (part_name, p), (whole_name, w) = part, whole
    check_integer(part_name, p, smallest=1)
    message = f"{whole_name} must be divisible by {part_name}, got "
    _fail(w % p, message + f"{whole_name}={w} and {part_name}={p}")


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
    if device is None:
        return None
    try:
        device = torch.device(device)  # type: ignore[arg-type]
    except (RuntimeError, TypeError) as exc:
        raise ArgumentTypeError(
            f"device must be a torch.device or a name such as 'cpu', got {_got(device)}"
        ) from exc
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as exc:  # e.g. CUDA in a CPU-only build
        raise ValueError(
            f"device must be one this torch can use, got {device}"
        ) from exc
    return device


# --- tensors -----------------------------------------------------------------------


def check_tensor(name: str, t: object) -> None:
    """Raise unless ``t`` is a :class:`torch.Tensor`."""
    if not isinstance(t, torch.Tensor):
        hint = f"; wrap it: torch.tensor({name})" if isinstance(t, list | tuple) else ""
        raise ArgumentTypeError(
            f"{name} must be a torch.Tensor, got {type(t).__name__}{hint}"
        )


def check_float_tensor(name: str, t: object) -> None:
    """Raise unless ``t`` is a tensor of floating-point numbers (see the policy)."""
    check_tensor(name, t)
    _fail(
        not t.is_floating_point(),
        f"{name} must hold floating-point numbers, got dtype {t.dtype}; "
        f"convert it first: {name}.float()",
    )


def check_pair(*named: tuple[str, torch.Tensor]) -> None:
    """Raise unless the ``(name, tensor)`` pairs are float, of one dtype and device."""
    name_a, a = named[0]
    for name, t in named:
        check_float_tensor(name, t)
        _fail(
            (t.dtype, t.device) != (a.dtype, a.device),
            f"{name_a} and {name} must have the same dtype and device, got "
            f"{a.dtype} on {a.device} and {t.dtype} on {t.device}; convert one "
            "of them with .to()",
        )


def check_shapes(**named: tuple[torch.Tensor, str] | int) -> None:
    """Raise unless the float tensors share dtype and device and fit their layouts.

    A keyword with an ``int`` fixes the size of that name.

    >>> check_shapes(query=(torch.zeros(3), "d"), inputs=(torch.zeros(6, 4), "T d"))
    Traceback (most recent call last):
    ...
    ValueError: expected query of 1 dimension (d) and inputs of 2 dimensions (T, d), \
one size per name; got query (3,) and inputs (6, 4)
    """
    tensors = {n: v for n, v in named.items() if isinstance(v, tuple)}
    sizes = {n: v for n, v in named.items() if not isinstance(v, tuple)}
    check_pair(*((name, t) for name, (t, _) in tensors.items()))
    for t, layout in tensors.values():
        dims = layout.split()
        lead = t.dim() - len(dims) + 1  # how many dimensions "..." stands for
        shape = (
            list(t.shape) if dims[0] != "..." else [_shape(t)[:lead], *t.shape[lead:]]
        )
        if (
            lead < 0
            or len(shape) != len(dims)
            or any(
                sizes.setdefault(d, s) != s for d, s in zip(dims, shape, strict=True)
            )
        ):
            expected = " and ".join(
                f"{n} of {len(lay.split())} dimension{'s' * (lay.count(' ') > 0)} "
                f"({', '.join(lay.split())})"
                * ("..." not in lay)
                or f"{n} ({', '.join(lay.split())})"
                for n, (_, lay) in tensors.items()
            )
            fixed = "".join(
                f", {n}={v}" for n, v in named.items() if isinstance(v, int)
            )
            leading = ", the same leading (batch) dimensions ..." * ("..." in expected)
            raise ValueError(
                f"expected {expected}, one size per name{leading}{fixed}; got "
                + " and ".join(f"{n} {_shape(t)}" for n, (t, _) in tensors.items())
            )


def check_dim(name: str, t: torch.Tensor, dim: int) -> None:
    """Raise unless ``dim`` is an integer that indexes a dimension of ``t``."""
    check_integer("dim", dim)
    n = max(t.dim(), 1)
    _fail(
        not -n <= dim < n,
        f"dim must be in [{-n}, {n}) for {name} of shape {_shape(t)}, got {dim}",
    )


def check_values(name: str, t: torch.Tensor, needed_by: str) -> None:
    """Raise if ``t`` is on the ``meta`` device, which holds shapes but no values."""
    _fail(
        t.device.type == "meta",
        f"{name} is on the meta device, which holds no values, and {needed_by} "
        "needs them; build it on a real device, e.g. 'cpu'",
    )


def check_batch(module: nn.Module, x: torch.Tensor, ndim: int = 3) -> None:
    """Raise unless ``module`` accepts ``x``: the one check of a ``forward``.

    ``ndim == 3``: a batch ``(b, T, d_in)``; ``ndim == 2``: one sequence
    ``(T, d_in)``, for the classes of 3.4. Floating-point embeddings with
    ``module.d_in`` features, at most ``module.context_length`` tokens if the
    module has one, in the dtype and on the device of its weights.
    """
    layout = "(num_tokens, d_in)" if ndim == 2 else "(batch, num_tokens, d_in)"
    check_tensor("x", x)
    _fail(
        x.dim() != ndim or x.shape[-1] != module.d_in,
        f"x must have {ndim} dimensions {layout} with d_in={module.d_in}, got "
        f"{x.dim()} dimensions, shape {_shape(x)}",
    )
    _fail(
        not x.is_floating_point(),
        f"x must hold floating-point embeddings, got dtype {x.dtype}; token ids "
        "go through an embedding layer (nn.Embedding) first",
    )
    limit = getattr(module, "context_length", None)
    _fail(
        limit is not None and x.shape[-2] > limit,
        f"x has {x.shape[-2]} tokens but context_length is {limit}; pass at most "
        f"{limit} tokens or build the module with a larger context_length",
    )
    weight = next(iter(module.parameters()), None)
    if weight is not None:
        check_pair(("the module's weights", weight), ("x", x))


def check_cross_input(module: nn.Module, x: torch.Tensor, context: torch.Tensor):
    """Raise unless ``x`` ``(..., T, d_in)`` and ``context`` ``(..., S, d_context)``
    fit :class:`~attention.CrossAttention`: one batch, ``S >= 1``."""
    for name, t in (("x", x), ("context", context)):
        check_tensor(name, t)
        _fail(
            t.dim() not in (2, 3), f"{name} must have 2 or 3 dimensions, got {t.dim()}"
        )
    check_shapes(
        weights=(module.W_query.weight, "d_out d_in"),
        x=(x, "... T d_in"),
        context=(context, "... S d_context"),
        d_context=module.d_context,
    )
    _fail(not context.shape[-2], "context must hold at least one token, got none")


def check_qkv(queries: torch.Tensor, keys: torch.Tensor, *values: torch.Tensor):
    """Raise unless ``queries``, ``keys`` (and ``values``) are ``(..., Tq, head_dim)``,
    ``(..., Tk, head_dim)``, with ``head_dim >= 1`` and a key if there are queries."""
    q, k = (queries, "... Tq head_dim"), (keys, "... Tk head_dim")
    check_shapes(queries=q, keys=k, **({"values": (values[0], k[1])} if values else {}))
    _fail(
        not queries.shape[-1] or (keys.shape[-2] == 0 < queries.shape[-2]),
        f"keys must hold at least one key and head_dim >= 1, got queries "
        f"{_shape(queries)} and keys {_shape(keys)}",
    )


def check_tiled(queries, keys, values, tile_size, causal=False, dropout_p=0.0):
    """The one check of the tiled functions of ``attention.flash``."""
    check_qkv(queries, keys, values)
    check_positive(tile_size=tile_size)
    check_flag("causal", causal)
    check_number("dropout_p", dropout_p, high=1)


def check_backward(queries, keys, values=None, future=None, tile_size=1, **per_query):
    """:func:`check_tiled`, then the ``per_query`` tensors: ``lse`` and ``delta``
    ``(..., Tq)``, ``grad_out`` and ``context_vec`` ``(..., Tq, head_dim)``;
    ``future`` ``None`` or a bool ``(Tq, Tk)`` tile mask."""
    if values is None:
        check_qkv(queries, keys)
    else:
        check_tiled(queries, keys, values, tile_size, per_query.pop("causal", False))
    layouts = {"lse": "... Tq", "delta": "... Tq"}
    check_shapes(
        queries=(queries, "... Tq head_dim"),
        **{n: (t, layouts.get(n, "... Tq head_dim")) for n, t in per_query.items()},
    )
    if future is not None:
        check_tensor("future", future)
        expected = (queries.shape[-2], keys.shape[-2])
        _fail(
            future.dtype != torch.bool or future.shape != expected,
            f"future must be None or a bool tensor of shape {expected}, got "
            f"{future.dtype} {_shape(future)}",
        )


def check_kv(keys, values, cached: torch.Tensor | None, context_length: int) -> None:
    """Raise unless new ``keys`` and ``values`` ``(b, g, T_new, hd)`` fit the cache."""
    layout = "b g T_new head_dim"
    old = {} if cached is None else {"cached_keys": (cached, "b g T_held head_dim")}
    check_shapes(keys=(keys, layout), values=(values, layout), **old)
    held = 0 if cached is None else cached.shape[2]
    _fail(
        held + keys.shape[2] > context_length,
        f"the cache holds at most context_length={context_length} tokens; it has "
        f"{held} and got {keys.shape[2]} more",
    )


# --- token ids, targets and masks: value checks, once at entry -----------------------


def check_token_ids(
    token_ids: torch.Tensor,
    vocab_size: int,
    context_length: int | None = None,
    device: torch.device | None = None,
    smallest: tuple[int, int] = (0, 0),
) -> None:
    """Raise unless ``token_ids`` is ``(b, T)`` integer ids in ``[0, vocab_size)``.

    With ``context_length``, at most that many tokens; with ``device``, on it;
    ``(b, T)`` at least ``smallest``. Reads the values: call it at entry.
    """
    check_tensor("token_ids", token_ids)
    _fail(
        token_ids.dim() != 2
        or token_ids.dtype not in (torch.int64, torch.int32)
        or token_ids.shape[0] < smallest[0]
        or token_ids.shape[1] < smallest[1],
        f"token_ids must be integer ids (torch.long) of 2 dimensions (batch, "
        f"num_tokens){f' of at least {smallest}' * any(smallest)}, got dtype "
        f"{token_ids.dtype} and "
        f"{token_ids.dim()} dimensions, shape {_shape(token_ids)}",
    )
    _fail(
        context_length is not None and token_ids.shape[1] > context_length,
        f"token_ids has {token_ids.shape[1]} tokens but context_length is "
        f"{context_length}; pass at most {context_length} tokens",
    )
    _fail(
        device is not None and token_ids.device != device,
        f"token_ids must be on the model's device, {device}, got {token_ids.device}",
    )
    if token_ids.device.type == "meta" or not token_ids.numel():
        return  # no values to read
    low, high = token_ids.min().item(), token_ids.max().item()
    _fail(
        low < 0 or high >= vocab_size,
        f"token_ids must lie in [0, {vocab_size}) (the vocab_size), got values "
        f"from {low} to {high}",
    )


def check_decode(
    model, token_ids, cache=None, max_new_tokens=None, attention_mask=None
):
    """The one check of generation: a :class:`~attention.contract.Decoder`, a prompt.

    ``token_ids`` ``(b, T)``, ``T >= 1``, fits the context after the tokens
    ``cache`` holds, with room for the ``max_new_tokens - 1`` fed back. An
    ``attention_mask`` covers the cached tokens and the new ones, left-padded;
    to generate, every row ends in a real token.
    """
    from .contract import Decoder, SeparateProjections
    from .kv_cache import KVCache

    check_module("model", model, Decoder)
    for i, layer in enumerate(model.layers):
        check_module(f"model.layers[{i}]", layer, SeparateProjections)
    held = 0
    if cache is not None:
        check_module("cache", cache, KVCache)
        held = cache.num_tokens()
        _fail(
            cache.num_layers != len(model.layers),
            f"cache must have num_layers={len(model.layers)}, one per layer of "
            f"model, got num_layers={cache.num_layers}",
        )
    if max_new_tokens is not None:
        check_positive(max_new_tokens=max_new_tokens)
    more = 0 if max_new_tokens is None else max_new_tokens - 1
    check_token_ids(token_ids, model.vocab_size, device=next(model.parameters()).device)
    limit, num_tokens = model.context_length, token_ids.shape[1]
    _fail(
        num_tokens == 0 or held + num_tokens + more > limit,
        f"token_ids must hold 1 to {limit - held - more} tokens: context_length is "
        f"{limit}, the cache holds {held} and max_new_tokens={max_new_tokens} feeds "
        f"back {more}; got {num_tokens}",
    )
    if attention_mask is None:
        return
    check_attention_mask(attention_mask, token_ids, held)
    meta = attention_mask.device.type == "meta"
    if max_new_tokens is not None and not meta and not attention_mask[:, -1].all():
        raise ValueError(
            "attention_mask must end in a real token (1) in every row: generation "
            f"continues after it; got {attention_mask.tolist()}"
        )


def check_cached(attn, x, cache, layer: int, attention_mask=None) -> None:
    """The one check of :func:`~attention.cached_attention`: new tokens that fit."""
    from .contract import SeparateProjections
    from .kv_cache import KVCache

    check_module("attn", attn, SeparateProjections)
    check_module("cache", cache, KVCache)
    check_index("layer", layer, cache.num_layers)
    check_batch(attn, x)
    held, limit = cache.num_tokens(layer), attn.context_length
    _fail(
        x.shape[1] > limit - held,
        f"context_length is {limit} and the cache holds {held} tokens, so at most "
        f"{limit - held} new tokens fit; got {x.shape[1]}",
    )
    if attention_mask is not None:
        check_attention_mask(attention_mask, x, held)


def check_training(
    model, token_ids, targets, ignore_index, steps=1, batch_size=1, lr=1.0, seed=0
):
    """The one check of training and scoring: a model, ``(N, T)`` ids and targets.

    ``targets`` are ids in ``[0, model.vocab_size)`` or ``ignore_index``, with
    at least one that counts; ``batch_size <= N``; ``lr`` finite and positive.
    """
    check_module("model", model)
    check_tensor("token_ids", token_ids)
    check_tensor("targets", targets)
    _fail(
        token_ids.dim() != 2 or token_ids.shape != targets.shape or not len(targets),
        "token_ids and targets must both have shape (N, T) with N >= 1, got "
        f"{_shape(token_ids)} and {_shape(targets)}",
    )
    _fail(
        targets.dtype not in (torch.int64, torch.int32),
        f"targets must hold integer ids, got dtype {targets.dtype}",
    )
    check_values("targets", targets, "training and scoring")
    check_positive(steps=steps, batch_size=batch_size)
    _fail(
        batch_size > len(token_ids),
        f"batch_size must be at most the number of sequences, {len(token_ids)}, "
        f"got {batch_size}",
    )
    check_number("lr", lr)
    check_integer("seed", seed)
    counted = targets[targets != ignore_index]
    vocab_size = getattr(model, "vocab_size", math.inf)
    if not counted.numel() or counted.min() < 0 or counted.max() >= vocab_size:
        raise ValueError(
            f"targets must lie in [0, {vocab_size}) (the model's vocab_size) or be "
            f"IGNORE_INDEX={ignore_index}, with at least one that counts; got "
            f"{_got(targets.unique()[:8].tolist())}"
        )


def check_sequences(sequences: object, side: str, value: float) -> None:
    """Raise unless ``sequences`` can be padded into a batch on ``side`` with ``value``.

    A non-empty list or tuple of tensors ``(T_i, ...)``, ``T_i >= 1``, with one
    dtype, one device and the same sizes after the first dimension; ``value``
    a number the dtype holds exactly.
    """
    check_choice("side", side, ["left", "right"])
    _fail(
        not isinstance(sequences, list | tuple) or not sequences,
        f"sequences must be a non-empty list of tensors, got {_got(sequences)}",
        ArgumentTypeError,
    )
    first = sequences[0]
    for i, seq in enumerate(sequences):
        check_tensor(f"sequences[{i}]", seq)
        _fail(
            seq.dim() == 0
            or not len(seq)
            or (seq.shape[1:], seq.dtype, seq.device)
            != (first.shape[1:], first.dtype, first.device),
            f"sequences must be (T_i, ...) with T_i >= 1 and the sizes after the "
            f"first dimension, dtype and device of sequences[0], {_shape(first)[1:]}, "
            f"{first.dtype}, {first.device}; sequences[{i}] has shape {_shape(seq)}, "
            f"{seq.dtype}, {seq.device}",
        )
    _fail(
        isinstance(value, bool) or not isinstance(value, Real),
        f"value must be a number, got {_got(value)}",
        ArgumentTypeError,
    )
    dtype = first.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        info = torch.iinfo(dtype) if dtype != torch.bool else None
        low, high = (0, 1) if info is None else (info.min, info.max)
        _fail(
            not math.isfinite(value) or value != int(value) or not low <= value <= high,
            f"value must be an integer in [{low}, {high}] to pad sequences of "
            f"dtype {dtype}, got {value!r}",
        )


def check_attention_mask(attention_mask, x=None, held: int | None = None) -> None:
    """Raise unless ``attention_mask`` is ``(b, T)`` of 0s and 1s, fitting ``x``
    ``(b, T, ...)``; with ``held`` cached tokens ``(b, held + T)``, left-padded:
    in each row the pads (0) come before the real tokens (1)."""
    check_tensor("attention_mask", attention_mask)
    shape = None if x is None else (x.shape[0], (held or 0) + x.shape[1])
    expected = f"(batch, num_tokens) = {shape or '(b, T)'}" + (
        f" with the {held} cached tokens" if held else ""
    )
    _fail(
        attention_mask.dim() != 2 or shape not in (None, _shape(attention_mask)),
        f"attention_mask must have 2 dimensions {expected}, got "
        f"{attention_mask.dim()} dimensions with shape {_shape(attention_mask)}",
    )
    if x is not None and attention_mask.device != x.device:
        device = f"{x.device}, got {attention_mask.device}"
        raise ValueError(f"attention_mask must be on x's device, {device}")
    if attention_mask.device.type == "meta":
        return  # no values to read
    is_binary = (attention_mask == 0) | (attention_mask == 1)
    if not is_binary.all():
        raise ValueError(
            "attention_mask must hold only 1 (a real token) and 0 (padding), got "
            f"also {attention_mask[~is_binary].unique()[:5].tolist()}"
        )
    left = held is not None  # the mask of a generation: left-padded
    late_pad = attention_mask[:, 1:] < attention_mask[:, :-1] if left else None
    if late_pad is not None and late_pad.any():  # a 1 before a 0
        row = int(late_pad.any(dim=1).nonzero()[0])
        raise ValueError(
            "attention_mask must be left-padded: 0s (pads), then 1s (real tokens), "
            f"so that new tokens follow the real ones; row {row} is "
            f"{attention_mask[row].tolist()}"
        )


# --- modules and objects passed as arguments -----------------------------------------


def check_module(name: str, module: object, kind: type = nn.Module) -> None:
    """Raise unless ``module`` is a ``kind``: an ``nn.Module`` class, or a Protocol.

    Names the usual slips: a class passed without ``()``, a ``state_dict()``
    passed for the module, and the members a Protocol lacks.
    """
    if isinstance(module, kind):
        return
    if isinstance(module, type):
        got = f"the class {module.__name__} itself; build one: {module.__name__}(...)"
    elif isinstance(module, dict):
        got = "a dict; pass the module itself, not its state_dict()"
    else:
        members = {*getattr(kind, "__annotations__", {}), *vars(kind)}  # a Protocol's
        missing = sorted(m for m in members if m[0] != "_" and not hasattr(module, m))
        got = type(module).__name__ + f", which lacks {', '.join(missing)}" * bool(
            missing
        )
    raise ArgumentTypeError(f"{name} must be a {kind.__name__}, got {got}")


def check_argument_order(*expected: tuple[str, object, type]) -> None:
    """Raise unless each ``(name, value, class)`` holds; say so if two are swapped."""
    if all(isinstance(value, cls) for _, value, cls in expected):
        return
    for name, value, _ in expected:
        check_module(name, value)
    wanted = [cls.__name__ for _, _, cls in expected]
    got = [type(value).__name__ for _, value, _ in expected]
    swapped = "the arguments look swapped: " * (sorted(got) == sorted(wanted))
    raise ArgumentTypeError(
        f"{swapped}expected ({', '.join(n for n, _, _ in expected)}) to be "
        f"({', '.join(wanted)}), got ({', '.join(got)})"
    )


def check_copy(sa_v2: nn.Module, sa_v1: nn.Module) -> None:
    """The one check of :func:`~attention.copy_weights_v2_to_v1`."""
    from .self_attention import SelfAttention_v1, SelfAttention_v2

    check_argument_order(
        ("sa_v2", sa_v2, SelfAttention_v2), ("sa_v1", sa_v1, SelfAttention_v1)
    )
    if sa_v1.W_query.device.type != "meta":  # a meta sa_v1 needs no values
        check_values("sa_v2's weights", sa_v2.W_query.weight, "copy_weights_v2_to_v1")
    got = (sa_v2.d_in, sa_v2.d_out, sa_v2.W_query.bias is not None)
    _fail(
        got != (sa_v1.d_in, sa_v1.d_out, False),
        f"expected sa_v2 with sa_v1's (d_in, d_out) = {(sa_v1.d_in, sa_v1.d_out)} "
        f"and qkv_bias=False (SelfAttention_v1 has no bias), got {got[:2]} and "
        f"qkv_bias={got[2]}",
    )


def check_state(state: object, own: dict[str, torch.Tensor]) -> None:
    """Raise unless ``state`` is a dict of tensors with the names and shapes of
    ``own`` (a module's ``mha_state_dict()``), with values to copy."""
    _fail(
        not isinstance(state, dict)
        or not all(isinstance(t, torch.Tensor) for t in state.values()),
        "state must be a dict from parameter names to tensors (the output of "
        f"mha_state_dict()), got {_got(state)}",
        ArgumentTypeError,
    )
    got, expected = ({n: _shape(t) for n, t in d.items()} for d in (state, own))
    message = f"state must hold the module's weights {expected}, got {got}"
    _fail(got != expected, message + "; do the modules differ in qkv_bias?")
    meta = [n for n, t in own.items() if state[n].is_meta and not t.is_meta]
    to = next(iter(own.values())).device
    _fail(meta, f"state's {meta} are on meta, which holds no values to copy to {to}")


def check_index(name: str, value: int, size: int) -> None:
    """Raise unless ``value`` is an integer in ``[0, size)``, such as a layer number."""
    check_integer(name, value)
    _fail(not 0 <= value < size, f"{name} must be in [0, {size}), got {value}")


def check_choice(name: str, value: object, choices: list) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    _fail(value not in choices, f"{name} must be one of {choices}, got {_got(value)}")


def check_register(name: str, cls: type, info: object, taken: dict) -> None:
    """The one check of :func:`~attention.register`."""
    from .contract import VariantInfo

    bad_name = not isinstance(name, str) or not name.isidentifier()
    message = f"name must be a short identifier such as 'mine', got {_got(name)}"
    _fail(bad_name, message, ArgumentTypeError)
    is_module = isinstance(cls, type) and issubclass(cls, nn.Module)
    message = f"cls must be an nn.Module subclass, got {_got(cls)}"
    _fail(not is_module, message, ArgumentTypeError)
    message = f"the name {name!r} is taken by {taken.get(name)}; choose another for"
    message += f" {getattr(cls, '__name__', cls)}"
    _fail(taken.get(name, cls) is not cls, message)
    message = f"info must be a VariantInfo, got {_got(info)}"
    _fail(not isinstance(info, VariantInfo | None), message, ArgumentTypeError)


def check_same_sizes(sizes: dict[str, tuple[object, object]]) -> None:
    """Raise unless each ``name: (in src, in dst)`` of ``sizes`` is one value."""
    for name, (a, b) in sizes.items():
        _fail(
            a != b,
            f"src and dst must have the same {name}, got {a} in src and {b} in dst",
        )
