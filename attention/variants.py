"""The registry of multi-head attention variants, and moving weights between them.

:data:`VARIANTS` lists every class that can stand in for the chapter's
:class:`~attention.MultiHeadAttention`: the same constructor ``(d_in, d_out,
context_length, dropout, num_heads, qkv_bias=False)``, the same meaning of
``d_out`` (the width of the whole output), and the same function given the
same weights. :mod:`attention.contract` writes that contract in code. The
tests (``tests/test_contract.py``), the benchmark (``python -m
attention.bench``) and the API reference all read the registry: a new
variant is its class plus one line, from inside the package or outside it::

    attention.register("mine", MyAttention)

:data:`VARIANT_INFO` holds what the tests need to know of each entry
(:class:`~attention.VariantInfo`); an entry added to
:data:`VARIANTS` directly gets the defaults.

Weights move through the chapter's layout: :func:`mha_state_dict` reads any
variant's weights by the chapter's names, :func:`load_mha_state_dict` writes
them into any variant, and :func:`copy_weights` does both.

Example:
    >>> from attention import SDPAMultiHeadAttention
    >>> mha = MultiHeadAttention(4, 6, context_length=5, dropout=0.0, num_heads=3)
    >>> sdpa = SDPAMultiHeadAttention(4, 6, 5, dropout=0.0, num_heads=3)
    >>> list(mha_state_dict(mha)) == list(mha_state_dict(sdpa))
    True
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

from ._layout import QKV, layout_names
from .checks import (
    check_choice,
    check_register,
    check_same_sizes,
    check_state,
    check_variant,
    check_variant_spec,
)
from .contract import TranslatesLayout, VariantInfo
from .efficient import (
    FusedQKVMultiHeadAttention,
    SDPAMultiHeadAttention,
    TorchMultiHeadAttention,
)
from .flash import FlashMultiHeadAttention
from .multihead import MultiHeadAttention
from .padding import PaddedMultiHeadAttention

#: Short name -> class, the chapter's ``MultiHeadAttention`` first.
VARIANTS: dict[str, type[nn.Module]] = {
    "mha": MultiHeadAttention,
    "fused": FusedQKVMultiHeadAttention,
    "sdpa": SDPAMultiHeadAttention,
    "torch": TorchMultiHeadAttention,
    "flash": FlashMultiHeadAttention,
    "padded": PaddedMultiHeadAttention,
}

#: Short name -> what the contract suite and the benchmark need to know;
#: a name missing here gets ``VariantInfo()``'s defaults.
VARIANT_INFO: dict[str, VariantInfo] = {}

_SIZES = ("d_in", "d_out", "num_heads")


def register(
    name: str, cls: type[nn.Module], info: VariantInfo | None = None
) -> type[nn.Module]:
    """Add ``cls`` to :data:`VARIANTS` under ``name``: the one line a variant needs.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        name: the short name the tests, the benchmark and the reports use.
        cls: a class that keeps :class:`~attention.contract.AttentionVariant`'s
            contract.
        info: what the contract suite needs to know of it; default
            ``VariantInfo()``.

    Returns:
        ``cls``, so that ``register`` can also decorate a class.

    Example:
        >>> class Mine(MultiHeadAttention):
        ...     pass
        >>> _ = register("mine", Mine)
        >>> VARIANTS["mine"] is Mine, variant_info("mine") == VariantInfo()
        (True, True)
        >>> del VARIANTS["mine"]
    """
    check_register(name, cls, info, VARIANTS)
    VARIANTS[name] = cls
    VARIANT_INFO[name] = info or VariantInfo()
    return cls


def variant_info(name: str) -> VariantInfo:
    """What ``VARIANT_INFO`` says of the entry ``name``, or the defaults.

    >>> variant_info("sdpa").dtypes
    (torch.float32, torch.float64)
    """
    check_choice("name", name, list(VARIANTS))
    return VARIANT_INFO.get(name, VariantInfo())


def load_variant(spec: str) -> str:
    """Import and register a variant given as ``module:Class`` or ``name=module:Class``.

    Book section: Beyond the chapter, Efficient multi-head attention. What
    ``python -m attention.bench --variant`` calls: ``module`` must be
    importable (on ``sys.path``). Without ``name=``, the name is the class
    name in lower case. A module that registers the class itself (with
    :func:`attention.register`) keeps its own name.

    Returns:
        The class's name in :data:`attention.VARIANTS`.

    Example:
        >>> load_variant("attention.efficient:SDPAMultiHeadAttention")
        'sdpa'
    """
    check_variant_spec(spec)
    name, _, target = spec.rpartition("=")
    module_name, _, class_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot load the variant {spec!r}: {error}") from error
    for known, registered in VARIANTS.items():
        if registered is cls and (not name or name == known):
            return known
    register(name or class_name.lower(), cls)
    return name or class_name.lower()


def mha_state_dict(module: nn.Module) -> dict[str, torch.Tensor]:
    """The weights of any variant, by the chapter's names.

    Book section: Beyond the chapter, Efficient multi-head attention. A class
    with its own ``mha_state_dict()`` (:class:`~attention.contract.TranslatesLayout`)
    answers itself; a class in the chapter's layout is read directly.

    Args:
        module: a registry variant.

    Shape:
        W_query.weight: ``(d_out, d_in)``, likewise ``W_key`` and ``W_value``
        out_proj.weight: ``(d_out, d_out)``
        biases: ``(d_out,)``

    Returns:
        A dict from names (query, key, value, then ``out_proj``; the query,
        key and value biases only with ``qkv_bias=True``) to detached views of
        the weights, not copies.

    Example:
        >>> mha = MultiHeadAttention(4, 6, 5, 0.0, num_heads=3)
        >>> {name: tuple(t.shape) for name, t in mha_state_dict(mha).items()}
        {'W_query.weight': (6, 4), 'W_key.weight': (6, 4), 'W_value.weight': (6, 4),
         'out_proj.weight': (6, 6), 'out_proj.bias': (6,)}
    """
    check_variant("module", module)
    return layout_state(module)


def layout_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """What :func:`mha_state_dict` returns, read without checking ``module``.

    For a caller that has checked ``module`` with
    :func:`attention.checks.check_variant` already, as :func:`copy_weights`
    does for both of its modules.
    """
    if isinstance(module, TranslatesLayout):
        return module.mha_state_dict()
    layers = {name: getattr(module, name) for name in (*QKV, "out_proj")}
    state = {}
    for name, layer in layers.items():
        state[f"{name}.weight"] = layer.weight.detach()
        if layer.bias is not None:
            state[f"{name}.bias"] = layer.bias.detach()
    names = layout_names(qkv_bias=layers["W_query"].bias is not None)
    return {name: state[name] for name in names if name in state}


def load_mha_state_dict(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Copy weights given by the chapter's names into any variant, in place.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        module: the registry variant to write into.
        state: the output of :func:`mha_state_dict` for a module of the same
            size.

    Example:
        >>> a = MultiHeadAttention(4, 6, 5, 0.0, num_heads=3)
        >>> b = MultiHeadAttention(4, 6, 5, 0.0, num_heads=3)
        >>> load_mha_state_dict(b, mha_state_dict(a))
        >>> torch.equal(b.W_key.weight, a.W_key.weight)
        True
    """
    check_variant("module", module)
    if isinstance(module, TranslatesLayout):
        module.load_mha_state_dict(state)  # the class checks state itself
        return
    own = layout_state(module)
    check_state(state, own)
    _write(own, state)


def _write(own: dict[str, torch.Tensor], state: dict[str, torch.Tensor]) -> None:
    """Copy ``state`` into ``own``, views of a module's parameters."""
    with torch.no_grad():
        for name, weight in own.items():
            weight.copy_(state[name])  # a view: writes into the parameter


def copy_weights(src: nn.Module, dst: nn.Module) -> None:
    """Copy the weights of one multi-head attention module into another.

    Book section: Beyond the chapter, Efficient multi-head attention. Works
    between any two classes of :data:`VARIANTS`, in either direction: the
    weights pass through the chapter's layout (``W_query``, ``W_key``,
    ``W_value``, ``out_proj``). Afterwards both modules compute the same
    function.

    Args:
        src: the module to read from.
        dst: the module to write into, changed in place. Must have the same
            ``d_in``, ``d_out``, ``num_heads`` and ``qkv_bias`` as ``src``;
            ``context_length`` and ``dropout`` may differ.

    Returns:
        ``None``.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(4, 6, context_length=5, dropout=0.0, num_heads=3)
        >>> sdpa = SDPAMultiHeadAttention(
        ...     4, 6, context_length=5, dropout=0.0, num_heads=3
        ... )
        >>> copy_weights(mha, sdpa)
        >>> x = torch.rand(2, 5, 4)
        >>> torch.allclose(sdpa(x), mha(x), atol=1e-6)
        True
    """
    # Each module is checked once, here; what follows reads them unchecked.
    check_variant("src", src)  # a class without (), a state_dict(), a Linear
    check_variant("dst", dst)
    state = layout_state(src)
    target = layout_state(dst)
    sizes = {
        name: (getattr(src, name, None), getattr(dst, name, None)) for name in _SIZES
    }
    sizes["qkv_bias"] = ("W_query.bias" in state, "W_query.bias" in target)
    check_same_sizes(sizes)
    if isinstance(dst, TranslatesLayout):
        dst.load_mha_state_dict(state)  # the class checks state itself
    else:
        check_state(state, target)
        _write(target, state)
