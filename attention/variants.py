"""The registry of multi-head attention variants, and moving weights between them.

:data:`VARIANTS` lists every class that can stand in for the chapter's
:class:`~attention.MultiHeadAttention`: the same constructor ``(d_in, d_out,
context_length, dropout, num_heads, qkv_bias=False)``, the same meaning of
``d_out`` (the width of the whole output), and the same function given the
same weights. The tests (``tests/test_contract.py``), the benchmark
(``python -m attention.bench``) and the API reference all read it: a new
variant is its class plus one line here.

Each class describes its weights in the chapter's layout with
``mha_state_dict()`` and loads them with ``load_mha_state_dict(state)``;
:func:`copy_weights` needs nothing else.
"""

from __future__ import annotations

from torch import nn

from .checks import check_module
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

_SIZES = ("d_in", "d_out", "num_heads")


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
    for module, role in ((src, "src"), (dst, "dst")):
        check_module(role, module)  # a class without (), a state_dict()
        if not all(
            callable(getattr(module, method, None))
            for method in ("mha_state_dict", "load_mha_state_dict")
        ):
            raise ValueError(
                f"{role} must be a multi-head attention module with "
                "mha_state_dict() and load_mha_state_dict() (a class of "
                f"attention.VARIANTS), got {type(module).__name__}"
            )
    state = src.mha_state_dict()
    sizes = {name: (getattr(src, name), getattr(dst, name)) for name in _SIZES}
    sizes["qkv_bias"] = (
        "W_query.bias" in state,
        "W_query.bias" in dst.mha_state_dict(),
    )
    for name, (a, b) in sizes.items():
        if a != b:
            raise ValueError(
                f"src and dst must have the same {name}, got {a} in src "
                f"({type(src).__name__}) and {b} in dst ({type(dst).__name__})"
            )
    dst.load_mha_state_dict(state)
