"""The benchmark's charts (matplotlib is imported only when one is drawn)."""

from __future__ import annotations

from .config import MODES, REFERENCE

MODE_COLOURS = ("#4c72b0", "#dd8452")
MARKERS = "osD^v<>ph*"


def _row(results: dict, variant: str, mode: str) -> dict:
    return next(
        r for r in results["rows"] if r["variant"] == variant and r["mode"] == mode
    )


def plot_times(results: dict, axes=None):
    """Bar charts: speed-up over the chapter's class, and time over the bound.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        results: the output of :func:`~attention.bench.run` (or its JSON file).
        axes: two matplotlib axes to draw on. Default: a new figure with
            the two charts one above the other.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    variants = results["config"]["variants"]
    if axes is None:
        rows = len(variants)
        _, axes = plt.subplots(2, 1, figsize=(6.4, 2 * (0.5 * rows + 0.9)))
    fig = axes[0].figure
    height = 0.38
    for ax, key, title in (
        (axes[0], "speedup_vs_chapter", "speed-up over the chapter (higher is better)"),
        (axes[1], "times_bound", "time / compute bound (lower is better)"),
    ):
        for k, (mode, colour) in enumerate(zip(MODES, MODE_COLOURS, strict=True)):
            values = [_row(results, v, mode)[key] for v in variants]
            ys = [i + (k - 0.5) * height for i in range(len(variants))]
            bars = ax.barh(ys, values, height=height, color=colour, label=mode)
            ax.bar_label(bars, fmt="%.2f", padding=2, fontsize=8)
        ax.axvline(1.0, color="0.3", linewidth=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_yticks(range(len(variants)), variants)
        ax.invert_yaxis()
        ax.margins(x=0.18)
        ax.tick_params(labelsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def plot_memory(results: dict, ax=None):
    """Peak memory of a forward pass against sequence length, log-log.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        results: the output of :func:`~attention.bench.run` (or its JSON
            file), with memory.
        ax: a matplotlib axes to draw on. Default: a new figure.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    memory = results["memory"]
    for i, (variant, peaks) in enumerate(memory["peak_bytes"].items()):
        reference = variant == REFERENCE  # wide and pale: others may cover it
        ax.plot(
            memory["tokens"],
            [p / 2**20 for p in peaks],
            marker=MARKERS[i % len(MARKERS)],
            linewidth=4.5 if reference else 1.5,
            markersize=9 if reference else 5,
            alpha=0.45 if reference else 1.0,
            label=variant,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(memory["tokens"], [str(t) for t in memory["tokens"]])
    ax.set_xlabel("tokens per sequence")
    ax.set_ylabel("peak extra memory (MiB)")
    ax.set_title(f"one forward pass, batch {memory['batch']}", fontsize=10)
    ax.grid(True, which="major", linewidth=0.4)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax.figure
