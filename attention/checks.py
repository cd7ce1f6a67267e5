"""Every input check of the companion package, and the policy they follow.

The policy, "checks at the door":

- A public function, or a module's ``forward``, validates its arguments once,
  at entry, with one call here (``check_batch(self, x)``). Every validator of
  the package lives in this module, once: there is one ``check_token_ids``.
- Internal calls trust what the door let in: generation checks the prompt
  once, then its loop runs the unchecked steps (``attention.generation``).
- Nothing in a per-token loop reads tensor values to validate them. Value
  checks (token ids in the vocabulary, a mask of 0s and 1s) call ``min()``,
  ``max()`` or ``all()``, which on a GPU wait for the device; they run once,
  at entry.
- A wrong Python type (a list for a tensor, a str for a number, a class for a
  module) raises ``ArgumentTypeError``, a ``TypeError`` that is also a
  ``ValueError``, as numpy's ``AxisError`` is both. A wrong shape, dtype,
  device or value raises ``ValueError``. Every message names the argument,
  what was expected and what came.

Decisions, the same everywhere: integer and boolean tensors are refused where
attention needs fractions (the message says ``.float()``), never promoted; a
module and its input must be on one device (torch lets a ``meta`` module take
a CPU input and returns uninitialised memory); ``True`` is not a size and
``inf`` is not a learning rate.

The module is public: a listing copied from the book starts with
``from attention.checks import check_batch`` and runs as shown.
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
    """``value`` as a message shows what came: its repr and, if unclear, its type."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, bool | int | float | str):
        return text
    return f"{text} ({type(value).__name__})"


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


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
    if smallest is not None and value < smallest:
        raise ValueError(f"{name} must be {kind}, got {value}")


def check_positive(**sizes: int) -> None:
    """Raise unless every keyword argument is an integer of at least 1."""
    for name, value in sizes.items():
        check_integer(name, value, smallest=1)


def check_number(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite, positive real number, such as ``lr``.

    >>> check_number("lr", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: lr must be a finite number, got inf
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ArgumentTypeError(f"{name} must be a positive number, got {_got(value)}")
    if not math.isfinite(value) or value <= 0:
        kind = "a positive" if math.isfinite(value) else "a finite"
        raise ValueError(f"{name} must be {kind} number, got {value!r}")


def check_dropout(dropout: float, name: str = "dropout") -> None:
    """Raise unless ``dropout`` is a number in ``[0, 1)``."""
    if isinstance(dropout, bool) or not isinstance(dropout, Real):
        raise ArgumentTypeError(
            f"{name} must be a number in [0, 1), got {_got(dropout)}"
        )
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {dropout!r}")


def check_divides(part: tuple[str, int], whole: tuple[str, int]) -> None:
    """Raise unless ``part``, a positive integer, divides ``whole`` (``(name, value)``).

    >>> check_divides(("num_heads", 4), ("d_out", 6))
    Traceback (most recent call last):
    ...
    ValueError: d_out must be divisible by num_heads, got d_out=6 and num_heads=4 \
(d_out % num_heads = 2)
    """
    (part_name, p), (whole_name, w) = part, whole
    check_integer(part_name, p, smallest=1)
    if w % p:
        raise ValueError(
            f"{whole_name} must be divisible by {part_name}, got {whole_name}={w} "
            f"and {part_name}={p} ({whole_name} % {part_name} = {w % p})"
        )


_ONE_HEAD = object()  # check_attention_args: the class has no num_heads


def check_attention_args(
    d_in: int,
    d_out: int,
    context_length: int,
    dropout: float,
    num_heads: int = _ONE_HEAD,  # type: ignore[assignment]
    qkv_bias: bool = False,
) -> None:
    """Check the constructor arguments every causal attention class shares."""
    check_positive(d_in=d_in, d_out=d_out, context_length=context_length)
    check_dropout(dropout)
    if num_heads is not _ONE_HEAD:
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
            f"device must be one this torch can use, got {str(device)!r}: {exc}"
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


def check_ndim(name: str, t: object, layout: str) -> None:
    """Raise unless ``t`` is a tensor with one dimension per name in ``layout``."""
    check_tensor(name, t)
    if t.dim() != layout.count(",") + 1:
        raise ValueError(f"{name} must have shape {layout}, got {_shape(t)}")


def check_float_tensor(name: str, t: object) -> None:
    """Raise unless ``t`` is a tensor of floating-point numbers (see the policy)."""
    check_tensor(name, t)
    if not t.is_floating_point():
        raise ValueError(
            f"{name} must hold floating-point numbers, got dtype {t.dtype}; "
            f"convert it first: {name}.float()"
        )


def check_square(
    name: str, t: object, ndim: int | None = None, smallest: int = 0
) -> None:
    """Raise unless ``t`` is a float tensor that ends in a ``(T, T)`` matrix.

    With ``ndim``, of that many dimensions; ``T >= smallest``.
    """
    check_float_tensor(name, t)
    if (
        t.dim() < 2
        or t.shape[-1] != t.shape[-2]
        or t.shape[-1] < smallest
        or ndim not in (None, t.dim())
    ):
        rank = "" if ndim is None else f" of {ndim} dimensions"
        raise ValueError(
            f"{name} must end in a square (num_tokens, num_tokens) matrix{rank} "
            f"with num_tokens >= {smallest}, got shape {_shape(t)}"
        )


def check_scores(name: str, t: object) -> None:
    """Raise unless ``t`` is a float tensor ``(..., n)``, ``n >= 1`` scores a row."""
    check_float_tensor(name, t)
    if t.dim() == 0 or t.shape[-1] == 0:
        raise ValueError(
            f"{name} must be (..., n) with at least one score per row, "
            f"got shape {_shape(t)}"
        )


def check_dim(name: str, t: torch.Tensor, dim: int) -> None:
    """Raise unless ``dim`` is an integer that indexes a dimension of ``t``."""
    check_integer("dim", dim)
    n = max(t.dim(), 1)
    if not -n <= dim < n:
        raise ValueError(
            f"dim must index a dimension of {name}, which has {t.dim()} (shape "
            f"{_shape(t)}), so dim in [{-n}, {n}), got {dim}"
        )


def check_pair(*named: tuple[str, torch.Tensor]) -> None:
    """Raise unless the ``(name, tensor)`` pairs are float, of one dtype and device."""
    (name_a, a) = named[0]
    for name, t in named:
        check_float_tensor(name, t)
        if t.dtype != a.dtype or t.device != a.device:
            raise ValueError(
                f"{name_a} and {name} must have the same dtype and device, got "
                f"{a.dtype} on {a.device} and {t.dtype} on {t.device}; convert one, "
                f"e.g. {name}.to({name_a})"
            )


def check_shapes(**named: tuple[torch.Tensor, str]) -> None:
    """Raise unless each float tensor has its layout, one size per letter, one dtype.

    >>> check_shapes(query=(torch.zeros(3), "d"), inputs=(torch.zeros(6, 4), "T d"))
    Traceback (most recent call last):
    ...
    ValueError: expected query of 1 dimensions (d) and inputs of 2 dimensions (T, d), \
one size per letter; got query (3,) and inputs (6, 4)
    """
    check_pair(*((name, t) for name, (t, _) in named.items()))
    sizes: dict[str, int] = {}
    for t, layout in named.values():
        letters = layout.split()
        if t.dim() != len(letters) or any(
            sizes.setdefault(letter, size) != size
            for letter, size in zip(letters, t.shape, strict=True)
        ):
            raise ValueError(
                "expected "
                + " and ".join(
                    f"{n} of {len(lay.split())} dimensions ({', '.join(lay.split())})"
                    for n, (_, lay) in named.items()
                )
                + ", one size per letter; got "
                + " and ".join(f"{n} {_shape(t)}" for n, (t, _) in named.items())
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
    if got != (sa_v1.d_in, sa_v1.d_out, False):
        raise ValueError(
            f"expected sa_v2 with sa_v1's (d_in, d_out) = {(sa_v1.d_in, sa_v1.d_out)} "
            f"and qkv_bias=False (SelfAttention_v1 has no bias), got {got[:2]} and "
            f"qkv_bias={got[2]}"
        )


def check_values(name: str, t: torch.Tensor, needed_by: str) -> None:
    """Raise if ``t`` is on the ``meta`` device, which holds shapes but no values."""
    if t.device.type == "meta":
        raise ValueError(
            f"{name} is on the meta device, which holds shapes but no values, and "
            f"{needed_by} needs its values; build it on a real device, e.g. 'cpu'"
        )


def check_batch(module: nn.Module, x: torch.Tensor, ndim: int = 3) -> None:
    """Raise unless ``module`` accepts ``x``: the one check of a ``forward``.

    ``ndim == 3``: a batch ``(b, T, d_in)``; ``ndim == 2``: one sequence
    ``(T, d_in)``, for the classes of 3.4. ``x`` must hold floating-point
    embeddings with ``module.d_in`` features, at most ``module.context_length``
    tokens if the module has one, in the dtype and on the device of its weights.
    One flat function: a generated token costs one call here per layer.
    """
    layout = "(num_tokens, d_in)" if ndim == 2 else "(batch, num_tokens, d_in)"
    if not isinstance(x, torch.Tensor):
        raise ArgumentTypeError(
            f"x must be a torch.Tensor, got {type(x).__name__}; expected {layout}"
        )
    if x.dim() != ndim:
        raise ValueError(
            f"x must have {ndim} dimensions {layout}, got {x.dim()} dimensions "
            f"with shape {_shape(x)}"
        )
    if x.shape[-1] != module.d_in:
        raise ValueError(
            f"x must have d_in={module.d_in} features in its last dimension "
            f"{layout}, got {x.shape[-1]} (shape {_shape(x)})"
        )
    if not x.is_floating_point():
        raise ValueError(
            f"x must hold floating-point embeddings, got dtype {x.dtype}; token "
            "ids go through an embedding layer (nn.Embedding) first"
        )
    limit = getattr(module, "context_length", None)
    if limit is not None and x.shape[-2] > limit:
        raise ValueError(
            f"x has {x.shape[-2]} tokens but context_length is {limit}; pass at "
            f"most {limit} tokens or build the module with a larger context_length"
        )
    weight = next(iter(module.parameters()), None)  # the weights' dtype and device
    if weight is not None and x.dtype != weight.dtype:
        raise ValueError(
            f"x has dtype {x.dtype} but the module's weights are {weight.dtype}; "
            f"convert one of them, e.g. x.to({weight.dtype}) or module.to({x.dtype})"
        )
    if weight is not None and x.device != weight.device:
        raise ValueError(
            f"x must be on the module's device, {weight.device}, got x on "
            f"{x.device}; move one of them, e.g. x.to('{weight.device}') or "
            f"module.to('{x.device}')"
        )


def check_sequence(module: nn.Module, x: torch.Tensor) -> None:
    """:func:`check_batch` for one sequence ``(T, d_in)``, as 3.4's classes take."""
    check_batch(module, x, ndim=2)


def check_cross_input(
    module: nn.Module, x: torch.Tensor, context: torch.Tensor
) -> None:
    """Raise unless ``x`` and ``context`` fit :class:`~attention.CrossAttention`.

    Both of rank 2 ``(T, width)`` or both of rank 3 ``(b, T, width)``, with
    ``d_in`` and ``d_context`` features, one batch size, a context of at least
    one token, the dtype and device of the module's weights.
    """
    for name, t, width in (
        ("x", x, module.d_in),
        ("context", context, module.d_context),
    ):
        check_tensor(name, t)
        if t.dim() not in (2, 3) or t.dim() != x.dim() or t.shape[-1] != width:
            raise ValueError(
                f"x and context must both be (num_tokens, width) or both (batch, "
                f"num_tokens, width), with {name} of width {width}; got x "
                f"{_shape(x)} and context {_shape(context)}"
            )
    if x.dim() == 3 and x.shape[0] != context.shape[0]:
        raise ValueError(
            f"x and context must have the same batch size, got {x.shape[0]} "
            f"and {context.shape[0]}"
        )
    if context.shape[-2] == 0:
        raise ValueError(
            f"context must hold at least one token to attend to, got shape "
            f"{_shape(context)}"
        )
    weight = next(module.parameters())
    check_pair(("weights", weight), ("x", x), ("context", context))


def check_qkv(queries: torch.Tensor, keys: torch.Tensor, *values: torch.Tensor) -> None:
    """Raise unless ``queries``, ``keys`` (and ``values``) fit together.

    Float tensors of one dtype and device laid out as ``(..., Tq, hd)``,
    ``(..., Tk, hd)`` and ``(..., Tk, hd)`` with the same leading dimensions,
    ``hd >= 1``, and at least one key when there are queries.
    """
    named = [("queries", queries), ("keys", keys)] + [("values", v) for v in values]
    check_pair(*named)
    shapes = ", ".join(f"{name} {_shape(t)}" for name, t in named)
    if any(t.dim() < 2 or t.shape[:-2] != queries.shape[:-2] for _, t in named):
        raise ValueError(
            f"queries, keys and values must be (..., T, hd) with the same leading "
            f"(batch, head) dimensions, got {shapes}"
        )
    if {t.shape[-1] for _, t in named} != {queries.shape[-1]} or not queries.shape[-1]:
        raise ValueError(
            f"queries, keys and values must have the same head_dim >= 1 in their "
            f"last dimension, got {shapes}"
        )
    if any(v.shape[-2] != keys.shape[-2] for v in values):
        raise ValueError(f"values must hold one value per key, got {shapes}")
    if keys.shape[-2] == 0 and queries.shape[-2] > 0:
        raise ValueError(f"keys must hold at least one key to attend to, got {shapes}")


def check_tiled(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    tile_size: int,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> None:
    """The one check of the tiled functions of ``attention.flash``."""
    check_qkv(queries, keys, values)
    check_positive(tile_size=tile_size)
    check_flag("causal", causal)
    check_dropout(dropout_p, name="dropout_p")


def check_lse(queries: torch.Tensor, keys: torch.Tensor, lse: torch.Tensor) -> None:
    """Raise unless ``lse`` holds one number per query ``(..., Tq)`` of ``queries``."""
    check_qkv(queries, keys)
    check_pair(("queries", queries), ("lse", lse))
    if lse.shape != queries.shape[:-1]:
        raise ValueError(
            f"lse must hold one number per query, shape {_shape(queries)[:-1]} "
            f"for queries of shape {_shape(queries)}, got {_shape(lse)}"
        )


def check_kv(
    keys: torch.Tensor,
    values: torch.Tensor,
    cached: torch.Tensor | None,
    context_length: int,
) -> None:
    """Raise unless new ``keys`` and ``values`` ``(b, g, T_new, hd)`` fit the cache."""
    named = [("keys", keys), ("values", values)]
    check_pair(*named, *([] if cached is None else [("the cached keys", cached)]))
    if keys.dim() != 4 or keys.shape != values.shape:
        raise ValueError(
            "keys and values must both be 4-dimensional (b, g, T_new, hd), one "
            "shape, got "
            f"{_shape(keys)} and {_shape(values)}"
        )
    held = 0 if cached is None else cached.shape[2]
    if cached is not None and (keys.shape[:2], keys.shape[3]) != (
        cached.shape[:2],
        cached.shape[3],
    ):
        raise ValueError(
            f"new keys must match the cached (b, g, hd) = {_shape(cached)[:2]} and "
            f"{cached.shape[3]}, got shape {_shape(keys)}"
        )
    if held + keys.shape[2] > context_length:
        raise ValueError(
            f"the cache holds at most context_length={context_length} tokens; "
            f"it has {held} and got {keys.shape[2]} more"
        )


def check_like(*named: tuple[str, torch.Tensor]) -> None:
    """Raise unless each ``(name, tensor)`` has the first one's shape, dtype, device."""
    (first, reference), *others = named
    for name, t in others:
        check_pair((first, reference), (name, t))
        if t.shape != reference.shape:
            raise ValueError(
                f"{name} must have the shape of {first}, {tuple(reference.shape)}, "
                f"got {tuple(t.shape)}"
            )


def check_tile_backward(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    grad_out: torch.Tensor,
    lse: torch.Tensor,
    delta: torch.Tensor,
    future: torch.Tensor | None = None,
) -> None:
    """The one-line check of :func:`~attention.tile_backward`.

    :func:`check_qkv` for the tiles, ``grad_out`` shaped like the queries,
    ``lse`` and ``delta`` one number per query, ``future`` ``None`` or a
    boolean ``(bq, bk)`` tensor.
    """
    check_qkv(queries, keys, values)
    check_like(("queries", queries), ("grad_out", grad_out))
    check_lse(queries, keys, lse)
    check_like(("lse", lse), ("delta", delta))
    if future is None:
        return
    check_tensor("future", future)
    expected = (queries.shape[-2], keys.shape[-2])
    if future.dtype != torch.bool or future.shape != expected:
        raise ValueError(
            f"future must be None or a bool tensor of shape {expected} "
            f"(queries x keys of the tile), got {future.dtype} {tuple(future.shape)}"
        )


def check_flash_backward(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    context_vec: torch.Tensor,
    lse: torch.Tensor,
    grad_out: torch.Tensor,
    tile_size: int,
    causal: bool,
) -> None:
    """The one-line check of :func:`~attention.flash_attention_backward`.

    :func:`check_tiled` for the inputs, ``context_vec`` and ``grad_out``
    shaped like the queries, ``lse`` one number per query.
    """
    check_tiled(queries, keys, values, tile_size, causal)
    like_queries = (("context_vec", context_vec), ("grad_out", grad_out))
    check_like(("queries", queries), *like_queries)
    check_lse(queries, keys, lse)


# --- token ids, targets and masks: value checks, once at entry -----------------------


def check_token_ids(
    token_ids: torch.Tensor,
    vocab_size: int,
    context_length: int | None = None,
    device: torch.device | None = None,
    name: str = "token_ids",
    smallest: tuple[int, int] = (0, 0),
) -> None:
    """Raise unless ``token_ids`` is ``(b, T)`` integer ids in ``[0, vocab_size)``.

    With ``context_length``, at most that many tokens; with ``device``, on it;
    ``(b, T)`` at least ``smallest``. Reads the values (see the policy): call
    it at entry, never per token.
    """
    check_tensor(name, token_ids)
    if (
        token_ids.dim() != 2
        or token_ids.dtype not in (torch.int64, torch.int32)
        or token_ids.shape[0] < smallest[0]
        or token_ids.shape[1] < smallest[1]
    ):
        least = f" with batch >= {smallest[0]} and num_tokens >= {smallest[1]}"
        raise ValueError(
            f"{name} must be integer ids (torch.long) of 2 dimensions (batch, "
            f"num_tokens){least * any(smallest)}, got dtype {token_ids.dtype} and "
            f"{token_ids.dim()} dimensions, shape {_shape(token_ids)}"
        )
    if context_length is not None and token_ids.shape[1] > context_length:
        raise ValueError(
            f"{name} has {token_ids.shape[1]} tokens but context_length is "
            f"{context_length}; pass at most {context_length} tokens"
        )
    if device is not None and token_ids.device != device:
        raise ValueError(
            f"{name} must be on the model's device, {device}, got {token_ids.device}"
        )
    if token_ids.device.type == "meta" or not token_ids.numel():
        return  # no values to read
    low, high = token_ids.min().item(), token_ids.max().item()
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"{name} must lie in [0, {vocab_size}) (the vocab_size), got values "
            f"from {low} to {high}"
        )


def check_decode(
    model: nn.Module,
    token_ids: torch.Tensor,
    cache: object = None,
    max_new_tokens: int | None = None,
    attention_mask: torch.Tensor | None = None,
) -> None:
    """The one check of generation: a :class:`~attention.contract.Decoder`, a prompt.

    ``token_ids`` ``(b, T)`` with ``T >= 1`` must fit the context after the
    tokens ``cache`` holds, with room for the ``max_new_tokens - 1`` that
    greedy generation feeds back. An ``attention_mask`` covers the cached
    tokens and the new ones, left-padded; to generate, every row needs a
    real token.
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
        if cache.num_layers != len(model.layers):
            raise ValueError(
                f"cache must have one layer per attention layer of model, "
                f"{len(model.layers)}, got num_layers={cache.num_layers}"
            )
    more = 0
    if max_new_tokens is not None:
        check_positive(max_new_tokens=max_new_tokens)
        more = max_new_tokens - 1
    device = next(model.parameters()).device
    check_token_ids(token_ids, model.vocab_size, device=device)
    limit, num_tokens = model.context_length, token_ids.shape[1]
    if num_tokens == 0 or held + num_tokens + more > limit:
        raise ValueError(
            f"token_ids must hold 1 to {limit - held - more} tokens: context_length "
            f"is {limit}, the cache holds {held} and max_new_tokens={max_new_tokens} "
            f"feeds back {more}; got {num_tokens}"
        )
    if attention_mask is not None:
        check_running_mask(attention_mask, token_ids, held)
        if (
            max_new_tokens is not None
            and attention_mask.device.type != "meta"
            and not bool(attention_mask[:, -1].all())
        ):
            row = int((attention_mask[:, -1] == 0).nonzero()[0])
            raise ValueError(
                "attention_mask must end in a real token (1) in every row: "
                f"generation continues after it; row {row} is "
                f"{attention_mask[row].tolist()}"
            )


def check_running_mask(
    attention_mask: torch.Tensor, new: torch.Tensor, held: int
) -> None:
    """Raise unless ``attention_mask`` is a left-padded ``(b, held + T_new)`` mask.

    It covers the ``held`` cached tokens and the new ones, ``new`` ``(b, T_new,
    ...)``; in each row the pads (0) come before the real tokens (1), so new
    tokens always follow a row's last real one.
    """
    check_attention_mask(attention_mask)
    b, num_new = new.shape[:2]
    if _shape(attention_mask) != (b, held + num_new):
        raise ValueError(
            f"attention_mask must be (b, cached + new tokens) = "
            f"{(b, held + num_new)}: the cache holds {held} and {num_new} are new; "
            f"got shape {_shape(attention_mask)}"
        )
    if attention_mask.device != new.device:
        raise ValueError(
            f"attention_mask must be on {new.device}, got {attention_mask.device}"
        )
    if attention_mask.device.type == "meta" or held + num_new < 2:
        return
    late_pad = attention_mask[:, 1:] < attention_mask[:, :-1]  # a 1 before a 0
    if bool(late_pad.any()):
        row = int(late_pad.any(dim=1).nonzero()[0])
        raise ValueError(
            "attention_mask must be left-padded: 0s (pads), then 1s (real tokens) "
            f"in each row, so that new tokens follow the real ones; row {row} is "
            f"{attention_mask[row].tolist()}"
        )


def check_cached(
    attn: nn.Module,
    x: torch.Tensor,
    cache: object,
    layer: int,
    attention_mask: torch.Tensor | None = None,
) -> None:
    """The one check of :func:`~attention.cached_attention`: new tokens that fit."""
    from .contract import SeparateProjections
    from .kv_cache import KVCache

    check_module("attn", attn, SeparateProjections)
    check_module("cache", cache, KVCache)
    check_index("layer", layer, cache.num_layers)
    check_batch(attn, x)
    held = cache.num_tokens(layer)
    if x.shape[1] > attn.context_length - held:
        raise ValueError(
            f"context_length is {attn.context_length} and the cache holds {held} "
            f"tokens, so at most {attn.context_length - held} new tokens fit; "
            f"got {x.shape[1]}"
        )
    if attention_mask is not None:
        check_running_mask(attention_mask, x, held)


def check_training(
    model: nn.Module,
    token_ids: torch.Tensor,
    targets: torch.Tensor,
    ignore_index: int,
    steps: int = 1,
    batch_size: int = 1,
    lr: float = 1.0,
    seed: int = 0,
) -> None:
    """The one check of training and scoring: a model, ``(N, T)`` ids and targets.

    ``targets`` are ids in ``[0, model.vocab_size)`` or ``ignore_index``, with
    at least one that counts; ``batch_size <= N``; ``lr`` finite and positive.
    """
    check_module("model", model)
    check_tensor("token_ids", token_ids)
    check_tensor("targets", targets)
    if token_ids.dim() != 2 or token_ids.shape != targets.shape or not len(targets):
        raise ValueError(
            "token_ids and targets must both have shape (N, T) with N >= 1, got "
            f"{_shape(token_ids)} and {_shape(targets)}"
        )
    if targets.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"targets must hold integer ids, got dtype {targets.dtype}")
    check_values("targets", targets, "training and scoring")
    check_positive(steps=steps, batch_size=batch_size)
    if batch_size > len(token_ids):
        raise ValueError(
            f"batch_size must be at most the number of sequences, {len(token_ids)}, "
            f"got {batch_size}"
        )
    check_number("lr", lr)
    check_integer("seed", seed)
    counted = targets[targets != ignore_index]
    vocab_size = getattr(model, "vocab_size", None)
    if not counted.numel():
        raise ValueError(
            "targets must have at least one position that counts (a target other "
            f"than IGNORE_INDEX={ignore_index}), got none in shape {_shape(targets)}"
        )
    low, high = counted.min().item(), counted.max().item()
    if vocab_size is not None and (low < 0 or high >= vocab_size):
        raise ValueError(
            f"targets must lie in [0, {vocab_size}) (the model's vocab_size) or "
            f"be IGNORE_INDEX ({ignore_index}), got values from {low} to {high}"
        )


def check_sequences(sequences: object, side: str, value: float) -> None:
    """Raise unless ``sequences`` can be padded into a batch on ``side`` with ``value``.

    A non-empty list or tuple of tensors ``(T_i, ...)``, ``T_i >= 1``, with one
    dtype, one device and the same sizes after the first dimension; ``value``
    a number the dtype holds exactly.
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {_got(side)}")
    if not isinstance(sequences, list | tuple) or not sequences:
        raise ArgumentTypeError(
            f"sequences must be a non-empty list of tensors, got {_got(sequences)}"
        )
    for i, seq in enumerate(sequences):
        check_tensor(f"sequences[{i}]", seq)
        first = sequences[0]
        if (
            seq.dim() == 0
            or not len(seq)
            or (seq.shape[1:], seq.dtype, seq.device)
            != (first.shape[1:], first.dtype, first.device)
        ):
            raise ValueError(
                f"sequences must be (T_i, ...) with T_i >= 1 and the sizes after the "
                f"first dimension, dtype and device of sequences[0], "
                f"{_shape(first)[1:]}, {first.dtype}, {first.device}; sequences[{i}] "
                f"has shape {_shape(seq)}, {seq.dtype}, {seq.device}"
            )
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ArgumentTypeError(f"value must be a number, got {_got(value)}")
    dtype = sequences[0].dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        info = torch.iinfo(dtype) if dtype != torch.bool else None
        low, high = (0, 1) if info is None else (info.min, info.max)
        if not (math.isfinite(value) and value == int(value) and low <= value <= high):
            raise ValueError(
                f"value must be an integer in [{low}, {high}] to pad sequences of "
                f"dtype {dtype}, got {value!r}"
            )


def check_attention_mask(
    attention_mask: torch.Tensor, x: torch.Tensor | None = None
) -> None:
    """Raise unless ``attention_mask`` is ``(b, T)`` of 0s and 1s, fitting ``x``."""
    check_tensor("attention_mask", attention_mask)
    expected = "(batch, num_tokens)" if x is None else f"{_shape(x)[:2]} to fit x"
    if attention_mask.dim() != 2 or (
        x is not None and attention_mask.shape != x.shape[:2]
    ):
        raise ValueError(
            f"attention_mask must have 2 dimensions {expected}, got "
            f"{attention_mask.dim()} dimensions with shape {_shape(attention_mask)}"
        )
    if x is not None and attention_mask.device != x.device:
        raise ValueError(
            f"attention_mask must be on x's device, {x.device}, got "
            f"{attention_mask.device}"
        )
    if attention_mask.device.type == "meta":
        return  # no values to read
    is_binary = (attention_mask == 0) | (attention_mask == 1)
    if not bool(is_binary.all()):
        found = attention_mask[~is_binary].unique()[:5].tolist()
        raise ValueError(
            "attention_mask must hold only 1 (a real token) and 0 (padding), "
            f"got also {found}"
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
        name_ = module.__name__
        got = f"the class {name_} itself; build one first: {name_}(...)"
    elif isinstance(module, dict):
        got = "a dict; pass the module itself, not its state_dict()"
    else:
        members = {*getattr(kind, "__annotations__", {}), *vars(kind)}  # a Protocol's
        members = {m for m in members if not m.startswith("_")}
        missing = sorted(m for m in members if not hasattr(module, m))
        got = type(module).__name__ + (
            f", which lacks {', '.join(missing)}" * bool(missing)
        )
    raise ArgumentTypeError(f"{name} must be a {kind.__name__}, got {got}")


def check_argument_order(*expected: tuple[str, object, type]) -> None:
    """Raise unless each ``(name, value, class)`` holds; say so if two are swapped."""
    if all(isinstance(value, cls) for _, value, cls in expected):
        return
    for name, value, _ in expected:
        check_module(name, value)
    names = ", ".join(name for name, _, _ in expected)
    wanted = [cls.__name__ for _, _, cls in expected]
    got = [type(value).__name__ for _, value, _ in expected]
    swapped = "the arguments look swapped: " if sorted(got) == sorted(wanted) else ""
    raise ArgumentTypeError(
        f"{swapped}expected ({names}) to be ({', '.join(wanted)}), "
        f"got ({', '.join(got)}); pass them in that order"
    )


def check_state(name: str, state: object) -> None:
    """Raise unless ``state`` is a dict of tensors, such as ``mha_state_dict()``."""
    if not isinstance(state, dict) or not all(
        isinstance(t, torch.Tensor) for t in state.values()
    ):
        raise ArgumentTypeError(
            f"{name} must be a dict from parameter names to tensors (the output "
            f"of mha_state_dict()), got {_got(state)}"
        )


def check_index(name: str, value: int, size: int) -> None:
    """Raise unless ``value`` is an integer in ``[0, size)``, such as a layer number."""
    check_integer(name, value)
    if not 0 <= value < size:
        raise ValueError(f"{name} must be in [0, {size}), got {value}")
