"""What a class must do to stand in for the chapter's ``MultiHeadAttention``.

Book section: Beyond the chapter, Efficient multi-head attention. The
contract, written in code:

- :class:`AttentionVariant`: the attributes and the call every entry of
  :data:`attention.VARIANTS` has. Its constructor takes ``(d_in, d_out,
  context_length, dropout, num_heads, qkv_bias=False)``, with ``d_out`` the
  width of the whole output, plus any keyword arguments its
  :class:`~attention.VariantInfo` names.
- The weights, in the chapter's layout: a class that stores ``W_query``,
  ``W_key``, ``W_value`` and ``out_proj`` as ``nn.Linear`` layers, as
  ``MultiHeadAttention`` does, needs nothing more. A class that stores them
  another way (:class:`TranslatesLayout`) translates with two methods,
  ``mha_state_dict()`` and ``load_mha_state_dict(state)``.
  :func:`attention.variants.mha_state_dict` and
  :func:`attention.variants.load_mha_state_dict` read and write either kind.
- :class:`SeparateProjections` and :class:`Decoder`: what a KV cache and
  generation read of a layer and of a model.
- :class:`~attention.VariantInfo`: what the contract suite (``tests/test_contract.py``)
  and the benchmark need to know about an entry: its dtypes and devices, its
  tolerances, and whether its parameter count is the chapter's.

Bad input is part of the contract too: a ``ValueError`` whose message names
the argument, what was expected and what came. The wording is the class's
own.

This module is a floor of the package, with ``_layout``: it imports nothing
from the package, so that ``attention.checks`` can check arguments against
these Protocols without an import cycle.

Example:
    >>> from attention import MultiHeadAttention, SDPAMultiHeadAttention
    >>> mha = MultiHeadAttention(4, 6, context_length=5, dropout=0.0, num_heads=3)
    >>> isinstance(mha, AttentionVariant), isinstance(mha, TranslatesLayout)
    (True, False)
    >>> sdpa = SDPAMultiHeadAttention(4, 6, 5, dropout=0.0, num_heads=3)
    >>> isinstance(sdpa, TranslatesLayout)
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

import torch
from torch import nn


@runtime_checkable
class AttentionVariant(Protocol):
    """A module that can stand in for ``MultiHeadAttention``.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Attributes:
        d_in: width of each input token embedding.
        d_out: width of the whole output (all heads together).
        context_length: the longest sequence the module accepts.
        num_heads: how many heads.
        head_dim: ``d_out // num_heads``.

    Shape:
        x: ``(b, T, d_in)`` with ``T <= context_length``
        Output: ``(b, T, d_out)``
    """

    d_in: int
    d_out: int
    context_length: int
    num_heads: int
    head_dim: int

    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...


@runtime_checkable
class TranslatesLayout(Protocol):
    """A variant that stores its weights in its own layout and translates.

    Book section: Beyond the chapter, Efficient multi-head attention.
    ``mha_state_dict()`` returns the weights by the chapter's names
    (``W_query.weight`` ..., ``out_proj.bias``, the query, key and value
    biases only with ``qkv_bias=True``), each ``(d_out, d_in)``,
    ``(d_out, d_out)`` or ``(d_out,)``; ``load_mha_state_dict(state)``
    copies such a dict in.
    """

    def mha_state_dict(self) -> dict[str, torch.Tensor]: ...

    def load_mha_state_dict(self, state: dict[str, torch.Tensor]) -> None: ...


@runtime_checkable
class SeparateProjections(Protocol):
    """An attention layer in the chapter's layout, as a KV cache reads it.

    Book section: Beyond the chapter, Generation with a KV cache.
    :class:`~attention.MultiHeadAttention` and
    :class:`~attention.GroupedQueryAttention` are such layers: the cache
    calls their projections one by one and slices their causal ``mask``.
    A grouped layer also has ``num_kv_heads`` (``num_heads`` when absent); a
    rotary layer (:class:`~attention.RotaryMultiHeadAttention`) also has
    ``rotate(t, position_ids)``, which the cache calls on the new queries
    and keys.
    """

    d_in: int
    d_out: int
    context_length: int
    num_heads: int
    head_dim: int
    W_query: nn.Module
    W_key: nn.Module
    W_value: nn.Module
    out_proj: nn.Module
    dropout: nn.Module
    mask: torch.Tensor


@runtime_checkable
class Decoder(Protocol):
    """A model that generation drives: token ids in, logits out, step by step.

    Book section: Beyond the chapter, Generation with a KV cache.
    :class:`~attention.TinyAttentionModel` is one. Generation reads a model
    through these members only: ``embed`` turns token ids into embeddings at
    the given positions, each of ``layers`` (a :class:`SeparateProjections`
    layer) mixes them in turn, ``out_head`` scores the vocabulary. ``embed``
    trusts its input: the checks run once, at the door (``attention.checks``).

    Shape:
        embed: ``(b, T)`` ids and ``(b, T)`` or ``(T,)`` positions ``-> (b, T, d)``
        each layer: ``(b, T, d) -> (b, T, d)``
        out_head: ``(b, T, d) -> (b, T, vocab_size)``
    """

    vocab_size: int
    context_length: int
    layers: Sequence[nn.Module]
    out_head: nn.Module

    def embed(
        self, token_ids: torch.Tensor, position_ids: torch.Tensor | None = None
    ) -> torch.Tensor: ...


def _tolerances() -> Mapping[torch.dtype, tuple[float, float]]:
    return MappingProxyType(
        {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10)}
    )


@dataclass(frozen=True)
class VariantInfo:
    """What the contract suite and the benchmark need to know of one entry.

    Book section: Beyond the chapter, Efficient multi-head attention. Like a
    row of PyTorch's ``OpInfo`` tables: the defaults fit a class that
    computes the chapter's function in float32 and float64, anywhere.

    Attributes:
        dtypes: the floating-point dtypes the class computes in.
        devices: the device types it runs on, where present (``"meta"``
            computes shapes only; ``"cuda"`` is tested when a GPU is there).
        tolerances: ``dtype -> (atol, rtol)`` against the plain-tensor
            reference of the contract suite.
        same_parameter_count: the class has exactly
            ``MultiHeadAttention``'s parameters (``False`` for a class that
            adds some of its own).
        kwargs: extra keyword arguments its constructor needs, passed after
            the chapter's six.
    """

    dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.float64)
    devices: tuple[str, ...] = ("cpu", "meta", "cuda")
    tolerances: Mapping[torch.dtype, tuple[float, float]] = field(
        default_factory=_tolerances
    )
    same_parameter_count: bool = True
    kwargs: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))

    def build(
        self,
        cls: type[nn.Module],
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> nn.Module:
        """``cls`` with the chapter's six arguments and this entry's ``kwargs``.

        >>> from attention import MultiHeadAttention
        >>> VariantInfo().build(MultiHeadAttention, 4, 6, 5, 0.0, 3).head_dim
        2
        """
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            # attention.checks imports this module, so the floor words its own
            # refusal, in the package's words; the sizes are the class's to check.
            got = f"{cls!r} ({type(cls).__name__})"
            raise TypeError(f"cls must be an nn.Module subclass, got {got}")
        args = (d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        return cls(*args, **self.kwargs)
