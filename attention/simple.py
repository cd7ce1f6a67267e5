"""Attention without trainable weights (book section 3.3).

Shape legend: ``T`` is ``num_tokens``, ``d`` is the embedding width ``d_in``.

The three steps for one query ``x^(2)``:

1. attention scores: one dot product per input, ``omega_2j = x^(2) . x^(j)``;
2. attention weights: the scores normalised with a softmax, so they sum to 1;
3. context vector: the inputs summed, each scaled by its weight.

:func:`simple_self_attention` does all three for every query at once.
"""

from __future__ import annotations

import torch

from .checks import check_dim, check_floats, check_shapes


def dot_scores(query: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Score one query against every input with a dot product, one at a time.

    Book section: 3.3.1, step 1. The loop is kept on purpose: it is the
    definition. ``inputs @ query`` computes the same in one call.

    Args:
        query: the query vector.
        inputs: the token embeddings, one per row.

    Shape:
        query: ``(d,)``
        inputs: ``(T, d)``
        Output: ``(T,)``

    Returns:
        The unnormalised attention scores ``omega``.

    Example:
        >>> from attention import example_inputs
        >>> inputs = example_inputs()
        >>> dot_scores(inputs[1], inputs)
        tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
    """
    check_shapes(query=(query, "d"), inputs=(inputs, "num_tokens d"))
    scores = inputs.new_empty(inputs.shape[0])  # same dtype and device
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    return scores


def softmax_naive(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """Softmax straight from its formula, ``exp(x) / sum(exp(x))``.

    Book section: 3.3.1, step 2. Correct for small inputs, but ``exp``
    overflows to ``inf`` once an input passes about 88 in float32, and
    ``inf / inf`` is ``nan``. :func:`torch.softmax` subtracts the maximum
    first, so it never overflows.

    Args:
        x: the scores.
        dim: the dimension that should sum to 1. Default: 0.

    Shape:
        Output: same as ``x``.

    Returns:
        Weights that sum to 1 along ``dim`` (or ``nan`` after an overflow).

    Example:
        >>> softmax_naive(torch.tensor([1.0, 2.0, 3.0]))
        tensor([0.0900, 0.2447, 0.6652])
        >>> softmax_naive(torch.tensor([1000.0, 1.0]))  # exp(1000) overflows
        tensor([nan, 0.])
        >>> torch.softmax(torch.tensor([1000.0, 1.0]), dim=0)
        tensor([1., 0.])
    """
    check_floats(("x", x))
    check_dim("x", x, dim)
    exp = torch.exp(x)
    return exp / exp.sum(dim=dim, keepdim=True)


def weighted_sum(attn_weights: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Build one context vector as the inputs weighted by attention, in a loop.

    Book section: 3.3.1, step 3. ``attn_weights @ inputs`` computes the same.

    Args:
        attn_weights: one weight per input, summing to 1.
        inputs: the vectors to mix, one per row.

    Shape:
        attn_weights: ``(T,)``
        inputs: ``(T, d)``
        Output: ``(d,)``

    Returns:
        The context vector ``z``.

    Example:
        >>> from attention import example_inputs
        >>> inputs = example_inputs()
        >>> weights = torch.softmax(dot_scores(inputs[1], inputs), dim=0)
        >>> weighted_sum(weights, inputs)
        tensor([0.4419, 0.6515, 0.5683])
    """
    check_shapes(
        attn_weights=(attn_weights, "num_tokens"), inputs=(inputs, "num_tokens d")
    )
    context_vec = inputs.new_zeros(inputs.shape[1])  # same dtype and device
    for i, x_i in enumerate(inputs):
        context_vec += attn_weights[i] * x_i
    return context_vec


def simple_self_attention(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every query at once, with two matrix products and no trainable weights.

    Book section: 3.3.2.

    Args:
        inputs: the token embeddings, one per row.

    Shape:
        inputs: ``(T, d)``
        Output: ``attn_weights`` ``(T, T)`` and ``context_vecs`` ``(T, d)``

    Returns:
        The pair ``(attn_weights, context_vecs)``. Row ``i`` of
        ``attn_weights`` holds how much query ``i`` attends to each input, and
        row ``i`` of ``context_vecs`` is the context vector ``z^(i+1)``.

    Example:
        >>> from attention import example_inputs
        >>> attn_weights, context_vecs = simple_self_attention(example_inputs())
        >>> attn_weights[0]
        tensor([0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452])
        >>> context_vecs[1]
        tensor([0.4419, 0.6515, 0.5683])
    """
    check_shapes(inputs=(inputs, "num_tokens d_in"))
    attn_scores = inputs @ inputs.T  # (T, d) @ (d, T) -> (T, T)
    attn_weights = torch.softmax(attn_scores, dim=-1)  # each row sums to 1
    context_vecs = attn_weights @ inputs  # (T, T) @ (T, d) -> (T, d)
    return attn_weights, context_vecs
