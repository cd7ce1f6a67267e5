"""The chapter's running example (section 3.3.1).

The sentence "Your journey starts with one step" as six tokens, each embedded
as a 3-dimensional vector. Rows are tokens, columns are embedding dimensions.
"""

from __future__ import annotations

import torch

#: The six words of the running example, in order; row ``i`` of
#: :func:`example_inputs` is the embedding of ``EXAMPLE_WORDS[i]``.
EXAMPLE_WORDS: tuple[str, ...] = ("Your", "journey", "starts", "with", "one", "step")

_EMBEDDINGS = (
    (0.43, 0.15, 0.89),  # Your     x^(1)
    (0.55, 0.87, 0.66),  # journey  x^(2)
    (0.57, 0.85, 0.64),  # starts   x^(3)
    (0.22, 0.58, 0.33),  # with     x^(4)
    (0.77, 0.25, 0.10),  # one      x^(5)
    (0.05, 0.80, 0.55),  # step     x^(6)
)


def example_inputs() -> torch.Tensor:
    """Return a fresh copy of the running example's token embeddings.

    Book section: 3.3.1. Each call builds a new tensor, so changing the
    result in place never changes what the next caller gets.

    Shape:
        Output: ``(6, 3)``, that is ``(num_tokens, d_in)``.

    Returns:
        A float32 tensor; row ``i`` embeds ``EXAMPLE_WORDS[i]``.

    Example:
        >>> inputs = example_inputs()
        >>> inputs.shape
        torch.Size([6, 3])
        >>> inputs[1]  # "journey"
        tensor([0.5500, 0.8700, 0.6600])
    """
    return torch.tensor(_EMBEDDINGS, dtype=torch.float32)
