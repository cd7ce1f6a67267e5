"""Figures for the book: labelled heatmaps of attention matrices.

Not part of the chapter's code; the pages use it to draw what a cell just
computed. Needs matplotlib (``pip install attention[plots]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def heatmap(
    matrix: torch.Tensor,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    ax=None,
    fmt: str = "{:.2f}",
    cmap: str = "Blues",
    xlabel: str = "key (attended to)",
    ylabel: str = "query",
):
    """Draw a 2-D tensor as a heatmap with its values written in each cell.

    Book section: used from 3.3 on, for attention scores and weights.

    Args:
        matrix: the values; gradients are ignored. ``-inf`` cells are drawn
            blank and labelled ``-inf``.
        row_labels: a label per row (the queries), e.g. the six words.
        col_labels: a label per column (the keys). Default: ``row_labels``.
        title: the axes' title.
        ax: the matplotlib axes to draw on. Default: a new figure.
        fmt: how to print each value.
        cmap: the matplotlib colour map.
        xlabel: the label under the columns.
        ylabel: the label beside the rows.

    Shape:
        matrix: ``(rows, cols)``.

    Returns:
        The matplotlib axes.

    Example:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> ax = heatmap(torch.eye(2), ["a", "b"], title="identity")
        >>> ax.get_title()
        'identity'
    """
    import matplotlib.pyplot as plt

    values = matrix.detach().to("cpu", torch.float64)
    if values.dim() != 2:
        raise ValueError(f"matrix must be 2-D, got shape {tuple(values.shape)}")
    rows, cols = values.shape
    col_labels = row_labels if col_labels is None else col_labels
    if ax is None:
        _, ax = plt.subplots(figsize=(0.75 * cols + 2.2, 0.6 * rows + 1.2))
    finite = torch.where(torch.isfinite(values), values, torch.nan)
    ax.imshow(finite.numpy(), cmap=cmap)
    # imshow spreads the colour map over [min, max] of the finite cells; use
    # white text on the darker part of that range, black on the lighter part.
    # Decide on the value as printed, so that equal labels get equal colours.
    shown = values[torch.isfinite(values)]
    lo, hi = (shown.min().item(), shown.max().item()) if shown.numel() else (0, 1)
    span = (hi - lo) or 1.0
    for i in range(rows):
        for j in range(cols):
            v = values[i, j].item()
            text = "-inf" if v == float("-inf") else fmt.format(v)
            try:
                printed = float(text)
            except ValueError:  # a format that float() cannot read back
                printed = v
            dark = math.isfinite(printed) and (printed - lo) / span > 0.6
            ax.text(
                j, i, text, ha="center", va="center", fontsize=8,
                color="white" if dark else "black",
            )  # fmt: skip
    ax.set_xticks(range(cols), col_labels if col_labels is not None else range(cols))
    ax.set_yticks(range(rows), row_labels if row_labels is not None else range(rows))
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax
