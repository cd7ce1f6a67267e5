"""Input checks shared by every module.

Each check raises :class:`ValueError` with a message that says what was
expected and what came, so a reader never meets a cryptic error from deep
inside torch.
"""

from __future__ import annotations

import torch
from torch import nn


def check_dropout(dropout: float) -> None:
    """Raise if ``dropout`` is not a probability in ``[0, 1)``."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")


def check_positive(**sizes: int) -> None:
    """Raise unless every keyword argument is an integer of at least 1.

    >>> check_positive(d_in=3, d_out=0)
    Traceback (most recent call last):
    ...
    ValueError: d_out must be a positive integer, got 0
    """
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_heads(d_out: int, num_heads: int) -> None:
    """Raise unless ``num_heads >= 1`` and it divides ``d_out``."""
    check_positive(num_heads=num_heads)
    if d_out % num_heads != 0:
        raise ValueError(
            f"d_out must be divisible by num_heads, got d_out={d_out} and "
            f"num_heads={num_heads} (d_out % num_heads = {d_out % num_heads})"
        )


def check_attention_args(
    d_in: int,
    d_out: int,
    context_length: int,
    dropout: float,
    num_heads: int | None = None,
) -> None:
    """Check the constructor arguments every causal attention class shares.

    ``num_heads`` is checked (at least 1, divides ``d_out``) when given.
    """
    check_positive(d_in=d_in, d_out=d_out, context_length=context_length)
    check_dropout(dropout)
    if num_heads is not None:
        check_heads(d_out, num_heads)


def weight_dtype(module: nn.Module) -> torch.dtype | None:
    """The dtype of ``module``'s first floating-point parameter, if it has one."""
    for param in module.parameters():
        if param.is_floating_point():
            return param.dtype
    return None


def check_sequence(module: nn.Module, x: torch.Tensor) -> None:
    """Raise unless ``x`` is one sequence ``(T, module.d_in)`` of the weights' dtype.

    The one-line check of the 3.4 classes, which take a single sequence.
    """
    check_input(x, ndim=2, d_in=module.d_in, dtype=weight_dtype(module))


def check_batch(module: nn.Module, x: torch.Tensor) -> None:
    """Raise unless ``x`` is a batch ``(b, T, module.d_in)`` that ``module`` accepts.

    The one-line check of every causal class: three dimensions, ``d_in``
    features, at most ``module.context_length`` tokens, and the dtype of the
    module's weights.
    """
    check_input(
        x,
        ndim=3,
        d_in=module.d_in,
        context_length=module.context_length,
        dtype=weight_dtype(module),
    )


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
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
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
    for name, t in (("x", x), ("context", context)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
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
