"""The FLOP model, and the compute bound it gives.

One multiply-add counts as 2 FLOPs. Forward: ``2*b*T*d_in*3*d_out`` for the
query, key and value projections, ``2*b*T*d_out*d_out`` for ``out_proj``
(the wrapper has none), and ``2*b*h*P*hd`` each for the scores and for the
weighted sum of values, where ``P = T*(T+1)/2`` is the number of query-key
pairs a causal model must compute (those on or below the diagonal). Counting
only those is the demanding choice: a dense implementation does twice this
attention work, and pays for it in the ratio. Softmax, masking and scaling
are not counted. Forward plus backward counts three times the forward FLOPs
(every product ``Y = A B`` needs two products of the same size for ``dA``
and ``dB``); recomputation inside a kernel is not counted.

The bound of a variant is its FLOP count divided by the machine's
matrix-multiply throughput, measured by a square ``torch.matmul`` timed in
the same rounds: the time it would take if all its arithmetic ran at matmul
speed and nothing else cost anything.
"""

from __future__ import annotations

from .config import WRAPPER


def flops(variant: str, batch: int, tokens: int, d_model: int, heads: int) -> float:
    """FLOPs of one forward pass of ``variant`` (see the module docstring).

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        variant: a name of :data:`attention.VARIANTS`, or ``"wrapper"``.
        batch, tokens, d_model, heads: the sizes (``d_in = d_out = d_model``).

    Returns:
        The count; multiply by 3 for forward plus backward.

    Example:
        >>> round(flops("sdpa", 8, 1024, 768, 12) / 1e9, 2)  # GPT-2 small
        51.55
        >>> flops("wrapper", 8, 1024, 768, 12) == flops("mha", 8, 1024, 768, 12) - (
        ...     2 * 8 * 1024 * 768 * 768
        ... )
        True
    """
    b, t, d, h = batch, tokens, d_model, heads
    projections = 2 * b * t * d * 3 * d  # W_query, W_key, W_value
    out_proj = 0 if variant == WRAPPER else 2 * b * t * d * d
    causal_pairs = t * (t + 1) / 2  # (query, key) pairs on or below the diagonal
    scores_and_values = 2 * (2 * b * h * causal_pairs * (d // h))
    return projections + out_proj + scores_and_values


def matmul_flops(size: int) -> float:
    """FLOPs of one ``(size, size) @ (size, size)`` product."""
    return 2 * size**3
