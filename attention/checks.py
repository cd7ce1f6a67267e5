"""Input checks shared by every module of the companion package.

Each check raises ``ValueError`` with a message that names the
argument, says what was expected and what came, so a reader never meets a
cryptic error from deep inside torch. Every method of the package makes one
call here (``check_batch(self, x)``), so the chapter's algorithm stays
readable next to it.

The module is public: a listing copied from the book starts with
``from attention.checks import check_batch`` and runs as shown.

Decisions, the same everywhere:

- Integer or boolean tensors are refused, not promoted: attention needs
  ``softmax``, ``-inf`` and fractions, none of which an integer holds. The
  message says to call ``.float()``. Token ids go through ``nn.Embedding``.
- A module and its input must be on the same device. Torch itself lets a
  ``meta`` module take a CPU input and returns uninitialised memory.
- Hyperparameters must be numbers of the right kind: ``True`` is not a
  learning rate, ``None`` is not a dropout, ``inf`` is not a step size.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import torch
from torch import nn


def _got(value: object) -> str:
    """``value`` as a message shows what came: its repr and, if unclear, its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(value, bool | int | float | str):
        return text
    return f"{text} ({type(value).__name__})"


def check_dropout(dropout: float, name: str = "dropout") -> None:
    """Raise unless ``dropout`` is a number in ``[0, 1)``.

    ``name`` is the argument's name in the message, e.g. ``"dropout_p"``.

    >>> check_dropout("0.1")
    Traceback (most recent call last):
    ...
    ValueError: dropout must be a number in [0, 1), got '0.1' (a str)
    """
    if isinstance(dropout, bool) or not isinstance(dropout, Real):
        raise ValueError(
            f"{name} must be a number in [0, 1), got {dropout!r} "
            f"(a {type(dropout).__name__})"
        )
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {dropout!r}")


def check_number(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite, positive real number.

    ``True`` is refused although Python counts it as 1.

    >>> check_number("lr", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: lr must be a finite number, got inf
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a positive number, got {_got(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def check_integer(name: str, value: int) -> None:
    """Raise unless ``value`` is an integer (not a bool), such as a seed."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {_got(value)}")


def check_flag(name: str, value: bool) -> None:
    """Raise unless ``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {_got(value)}")


def check_positive(**sizes: int) -> None:
    """Raise unless every keyword argument is an integer of at least 1.

    >>> check_positive(d_in=3, d_out=0)
    Traceback (most recent call last):
    ...
    ValueError: d_out must be a positive integer, got 0
    """
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {_got(value)}")


def check_heads(d_out: int, num_heads: int) -> None:
    """Raise unless ``num_heads >= 1`` and it divides ``d_out``."""
    check_positive(num_heads=num_heads)
    if d_out % num_heads != 0:
        raise ValueError(
            f"d_out must be divisible by num_heads, got d_out={d_out} and "
            f"num_heads={num_heads} (d_out % num_heads = {d_out % num_heads})"
        )


class _NotGiven:
    """The default of an argument that was not passed (shown as such in the docs)."""

    def __repr__(self) -> str:
        return "<not given>"


_ONE_HEAD = _NotGiven()  # check_attention_args: the class has no num_heads


def check_attention_args(
    d_in: int,
    d_out: int,
    context_length: int,
    dropout: float,
    num_heads: int = _ONE_HEAD,  # type: ignore[assignment]
    qkv_bias: bool = False,
) -> None:
    """Check the constructor arguments every causal attention class shares.

    ``num_heads`` is checked (an integer of at least 1 that divides
    ``d_out``) whenever it is passed, ``None`` included.
    """
    check_positive(d_in=d_in, d_out=d_out, context_length=context_length)
    check_dropout(dropout)
    if num_heads is not _ONE_HEAD:
        check_heads(d_out, num_heads)
    check_flag("qkv_bias", qkv_bias)


def first_weight(module: nn.Module) -> torch.Tensor | None:
    """``module``'s first floating-point parameter, if it has one."""
    for param in module.parameters():
        if param.is_floating_point():
            return param
    return None


def check_device(name: str, t: torch.Tensor, weight: torch.Tensor | None) -> None:
    """Raise unless ``t`` is on the device of the module's ``weight``.

    Torch refuses most mixes itself, but not a module on ``meta`` with a CPU
    input: that returns uninitialised memory. So the package checks first.
    """
    if weight is not None and t.device != weight.device:
        raise ValueError(
            f"{name} must be on the module's device, {weight.device}, got {name} on "
            f"{t.device}; move one of them, e.g. {name}.to('{weight.device}') "
            f"or module.to('{t.device}')"
        )


def check_sequence(module: nn.Module, x: torch.Tensor) -> None:
    """Raise unless ``x`` is one sequence ``(T, module.d_in)`` that ``module`` takes.

    The one-line check of the 3.4 classes, which take a single sequence: two
    dimensions, ``d_in`` features, the dtype and device of the weights.
    """
    weight = first_weight(module)
    dtype = None if weight is None else weight.dtype
    check_input(x, ndim=2, d_in=module.d_in, dtype=dtype)
    check_device("x", x, weight)


def check_batch(module: nn.Module, x: torch.Tensor) -> None:
    """Raise unless ``x`` is a batch ``(b, T, module.d_in)`` that ``module`` accepts.

    The one-line check of every causal class: three dimensions, ``d_in``
    features, at most ``module.context_length`` tokens, and the dtype and
    device of the module's weights.
    """
    weight = first_weight(module)
    check_input(
        x,
        ndim=3,
        d_in=module.d_in,
        context_length=module.context_length,
        dtype=None if weight is None else weight.dtype,
    )
    check_device("x", x, weight)


def _check_dtype(name: str, t: torch.Tensor, dtype: torch.dtype | None) -> None:
    """Raise unless ``t`` holds floating-point numbers, of ``dtype`` if given."""
    if not t.is_floating_point():
        raise ValueError(
            f"{name} must hold floating-point embeddings, got dtype {t.dtype}; "
            "token ids go through an embedding layer (nn.Embedding) first"
        )
    if dtype is not None and t.dtype != dtype:
        raise ValueError(
            f"{name} has dtype {t.dtype} but the module's weights are {dtype}; "
            f"convert one of them, e.g. {name}.to({dtype}) or module.to({t.dtype})"
        )


def check_input(
    x: torch.Tensor,
    *,
    ndim: int,
    d_in: int,
    context_length: int | None = None,
    dtype: torch.dtype | None = None,
    name: str = "x",
) -> None:
    """Raise unless ``x`` has rank ``ndim``, last size ``d_in`` and few enough tokens.

    For ``ndim == 2`` the expected shape is ``(num_tokens, d_in)``; for
    ``ndim == 3`` it is ``(batch, num_tokens, d_in)``. ``x`` must hold
    floating-point embeddings, of the module's ``dtype`` when one is given.
    """
    layout = "(num_tokens, d_in)" if ndim == 2 else "(batch, num_tokens, d_in)"
    check_tensor(name, x)
    if x.dim() != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions {layout}, "
            f"got {x.dim()} dimensions with shape {tuple(x.shape)}"
        )
    if x.shape[-1] != d_in:
        raise ValueError(
            f"{name} must have d_in={d_in} features in its last dimension {layout}, "
            f"got {x.shape[-1]} (shape {tuple(x.shape)})"
        )
    _check_dtype(name, x, dtype)
    num_tokens = x.shape[-2]
    if context_length is not None and num_tokens > context_length:
        raise ValueError(
            f"{name} has {num_tokens} tokens but context_length is {context_length}; "
            f"pass at most {context_length} tokens or build the module with a "
            f"larger context_length"
        )


def check_query_context(
    x: torch.Tensor,
    context: torch.Tensor,
    d_in: int,
    d_context: int,
    dtype: torch.dtype | None = None,
) -> None:
    """Raise unless ``x`` and ``context`` fit a cross-attention module.

    Both must be tensors of the same rank, 2 ``(num_tokens, width)`` or 3
    ``(batch, num_tokens, width)``, with ``d_in`` and ``d_context`` features
    respectively, the same batch size, and at least one context token. Both
    must hold floating-point embeddings, of the module's ``dtype`` when one
    is given.
    """
    check_tensor("x", x)
    check_tensor("context", context)
    if x.dim() not in (2, 3):
        raise ValueError(
            "x must have 2 dimensions (num_tokens, d_in) or 3 dimensions "
            f"(batch, num_tokens, d_in), got {x.dim()} with shape {tuple(x.shape)}"
        )
    if context.dim() != x.dim():
        raise ValueError(
            f"context must have as many dimensions as x ({x.dim()}), got "
            f"{context.dim()}: x has shape {tuple(x.shape)}, context "
            f"{tuple(context.shape)}"
        )
    if x.shape[-1] != d_in:
        raise ValueError(
            f"x must have d_in={d_in} features in its last dimension, "
            f"got {x.shape[-1]} (shape {tuple(x.shape)})"
        )
    if context.shape[-1] != d_context:
        raise ValueError(
            f"context must have d_context={d_context} features in its last "
            f"dimension, got {context.shape[-1]} (shape {tuple(context.shape)})"
        )
    if x.dim() == 3 and x.shape[0] != context.shape[0]:
        raise ValueError(
            f"x and context must have the same batch size, got {x.shape[0]} "
            f"and {context.shape[0]}"
        )
    if context.shape[-2] == 0:
        raise ValueError(
            "context must hold at least one token to attend to, got shape "
            f"{tuple(context.shape)}"
        )
    _check_dtype("x", x, dtype)
    _check_dtype("context", context, dtype)


def check_cross_input(
    module: nn.Module, x: torch.Tensor, context: torch.Tensor
) -> None:
    """The one-line check of :class:`~attention.CrossAttention`'s ``forward``."""
    weight = first_weight(module)
    dtype = None if weight is None else weight.dtype
    check_query_context(x, context, module.d_in, module.d_context, dtype)
    check_device("x", x, weight)
    check_device("context", context, weight)


# --- the functions of 3.3 and 3.5, which take plain tensors -------------------


def check_tensor(name: str, t: object) -> None:
    """Raise unless ``t`` is a :class:`torch.Tensor`.

    >>> check_tensor("inputs", [[1.0, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: inputs must be a torch.Tensor, got list; wrap it: torch.tensor(inputs)
    """
    if not isinstance(t, torch.Tensor):
        hint = ""
        if isinstance(t, list | tuple):
            hint = f"; wrap it: torch.tensor({name})"
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}{hint}")


def check_float_tensor(name: str, t: object) -> None:
    """Raise unless ``t`` is a tensor of floating-point numbers.

    Integers are refused, not promoted (see the module's docstring).

    >>> check_float_tensor("x", torch.tensor([[1, 0], [0, 1]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: x must hold floating-point numbers, got dtype torch.int64; ...
    """
    check_tensor(name, t)
    if not t.is_floating_point():
        raise ValueError(
            f"{name} must hold floating-point numbers, got dtype {t.dtype}; "
            f"convert it first: {name}.float()"
        )


def check_square(name: str, t: object) -> None:
    """Raise unless ``t`` is a float tensor that ends in a ``(T, T)`` matrix."""
    check_float_tensor(name, t)
    if t.dim() < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError(
            f"{name} must end in a square (num_tokens, num_tokens) matrix, "
            f"got shape {tuple(t.shape)}"
        )


def check_pair(
    first: tuple[str, torch.Tensor], second: tuple[str, torch.Tensor]
) -> None:
    """Raise unless two float tensors share one dtype and one device.

    ``first`` and ``second`` are ``(name, tensor)`` pairs.
    """
    (name_a, a), (name_b, b) = first, second
    check_float_tensor(name_a, a)
    check_float_tensor(name_b, b)
    if a.dtype != b.dtype:
        raise ValueError(
            f"{name_a} and {name_b} must have the same dtype, got {a.dtype} and "
            f"{b.dtype}; convert one, e.g. {name_a}.to({b.dtype})"
        )
    if a.device != b.device:
        raise ValueError(
            f"{name_a} and {name_b} must be on the same device, got {a.device} and "
            f"{b.device}; move one, e.g. {name_a}.to('{b.device}')"
        )


def check_scores(name: str, t: object) -> None:
    """Raise unless ``t`` is a float tensor ``(..., n)`` with rows of ``n >= 1`` scores.

    >>> check_scores("attn_scores", torch.zeros(3, 0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: attn_scores must be (..., n) with at least one score per row, ...
    """
    check_float_tensor(name, t)
    if t.dim() == 0 or t.shape[-1] == 0:
        raise ValueError(
            f"{name} must be (..., n) with at least one score per row, "
            f"got shape {tuple(t.shape)}"
        )


def check_qkv(queries: torch.Tensor, keys: torch.Tensor, *values: torch.Tensor) -> None:
    """Raise unless ``queries``, ``keys`` (and the ``values``, if passed) fit together.

    Expected: float tensors of one dtype and one device, laid out as
    ``(..., Tq, hd)``, ``(..., Tk, hd)`` and ``(..., Tk, hd)`` with the same
    leading dimensions, ``hd >= 1``, and at least one key when there are
    queries. :func:`~attention.weights_from_lse` passes no values.
    """
    named = [("queries", queries), ("keys", keys)] + [("values", v) for v in values]
    for name, t in named[1:]:
        check_pair(("queries", queries), (name, t))
    for name, t in named:
        if t.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., T, hd), got shape "
                f"{tuple(t.shape)}"
            )
    shapes = ", ".join(f"{name} {tuple(t.shape)}" for name, t in named)
    if any(t.shape[:-2] != queries.shape[:-2] for _, t in named):
        raise ValueError(
            f"queries, keys and values must share their leading (batch, head) "
            f"dimensions (..., T, hd), got {shapes}"
        )
    head_dims = {t.shape[-1] for _, t in named}
    if head_dims != {queries.shape[-1]} or queries.shape[-1] == 0:
        raise ValueError(
            f"queries, keys and values must have the same head_dim >= 1 in their "
            f"last dimension, got {shapes}"
        )
    if any(v.shape[-2] != keys.shape[-2] for v in values):
        raise ValueError(f"values must hold one value per key, got {shapes}")
    if keys.shape[-2] == 0 and queries.shape[-2] > 0:
        raise ValueError(
            f"keys must hold at least one key for the queries to attend to, "
            f"got {shapes}"
        )


def check_tiled(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    tile_size: int,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> None:
    """The one-line check of the tiled attention functions of ``attention.flash``.

    :func:`check_qkv` for the tensors, then ``tile_size`` a positive integer,
    ``causal`` a flag and ``dropout_p`` a probability in ``[0, 1)``.
    """
    check_qkv(queries, keys, values)
    check_positive(tile_size=tile_size)
    check_flag("causal", causal)
    check_dropout(dropout_p, name="dropout_p")


def check_lse(queries: torch.Tensor, keys: torch.Tensor, lse: torch.Tensor) -> None:
    """Raise unless ``lse`` holds one number per query ``(..., bq)`` of ``queries``.

    ``queries`` and ``keys`` must fit as in :func:`check_qkv`.
    """
    check_qkv(queries, keys)
    check_pair(("queries", queries), ("lse", lse))
    if lse.shape != queries.shape[:-1]:
        raise ValueError(
            f"lse must hold one number per query, shape {tuple(queries.shape[:-1])} "
            f"for queries of shape {tuple(queries.shape)}, got {tuple(lse.shape)}"
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


def check_values(name: str, t: torch.Tensor, needed_by: str) -> None:
    """Raise if ``t`` is on the ``meta`` device, which holds shapes but no values.

    For the functions that return numbers read from their input, such as an
    accuracy.
    """
    if t.device.type == "meta":
        raise ValueError(
            f"{name} is on the meta device, which holds shapes but no values, and "
            f"{needed_by} needs its values; build it on a real device, e.g. 'cpu'"
        )


def check_dim(name: str, t: torch.Tensor, dim: int) -> None:
    """Raise unless ``dim`` is an integer that indexes a dimension of ``t``."""
    check_integer("dim", dim)
    if not -max(t.dim(), 1) <= dim < max(t.dim(), 1):
        raise ValueError(
            f"dim must index a dimension of {name}, which has {t.dim()} "
            f"(shape {tuple(t.shape)}), so dim in [{-max(t.dim(), 1)}, "
            f"{max(t.dim(), 1)}), got {dim}"
        )


def as_device(device: object) -> torch.device | None:
    """``device`` as a :class:`torch.device`, or raise naming what came."""
    if device is None:
        return None
    try:
        return torch.device(device)  # type: ignore[arg-type]
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device must be a torch.device or a name such as 'cpu', got {_got(device)}"
        ) from exc


# --- modules passed as arguments -------------------------------------------------


def check_module(name: str, module: object) -> None:
    """Raise unless ``module`` is an ``nn.Module`` instance.

    Names the two usual slips: a class passed without ``()``, and a
    ``state_dict()`` passed instead of the module.
    """
    if isinstance(module, nn.Module):
        return
    if isinstance(module, type):
        raise ValueError(
            f"{name} must be a module (an instance), got the class "
            f"{module.__name__} itself; build one first: {module.__name__}(...)"
        )
    hint = ""
    if isinstance(module, dict):
        hint = "; pass the module itself, not its state_dict()"
    raise ValueError(
        f"{name} must be a torch.nn.Module, got {type(module).__name__}{hint}"
    )


def check_argument_order(*expected: tuple[str, object, type]) -> None:
    """Raise unless each argument is an instance of its class; say if swapped.

    ``expected`` holds ``(name, value, class)`` triples in the function's
    argument order.
    """
    for name, value, _ in expected:
        check_module(name, value)
    names = ", ".join(name for name, _, _ in expected)
    got = ", ".join(type(value).__name__ for _, value, _ in expected)
    wanted = ", ".join(cls.__name__ for _, _, cls in expected)
    classes = [cls for _, _, cls in expected]
    if all(isinstance(v, cls) for (_, v, cls) in expected):
        return
    if sorted(type(v).__name__ for _, v, _ in expected) == sorted(
        cls.__name__ for cls in classes
    ):
        raise ValueError(
            f"the arguments look swapped: expected ({names}) to be ({wanted}), "
            f"got ({got}); call it with ({names}) in that order"
        )
    raise ValueError(f"expected ({names}) to be ({wanted}), got ({got})")


def check_state(name: str, state: object) -> None:
    """Raise unless ``state`` is a dict of tensors, such as ``mha_state_dict()``."""
    if not isinstance(state, dict) or not all(
        isinstance(t, torch.Tensor) for t in state.values()
    ):
        raise ValueError(
            f"{name} must be a dict from parameter names to tensors (the output "
            f"of mha_state_dict()), got {_got(state)}"
        )
