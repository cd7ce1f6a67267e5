"""The report the command prints: every line at most 72 columns wide.

Numbers are written to a fixed width whatever their size (:func:`ratio`,
:func:`milliseconds`), and the name column is as wide as the longest name,
so no value, however large, and no registry name, however long (up to 20
characters), can push a line past the limit.
"""

from __future__ import annotations

from .config import MODES, REFERENCE, WRAPPER

WIDTH = 72


def ratio(x: float) -> str:
    """A ratio in at most 6 characters, 3 significant digits, ending in ``x``.

    >>> [ratio(v) for v in (0.0123, 1.5, 12.34, 123.4, 1234.5, 2e6)]
    ['0.01x', '1.50x', '12.3x', '123x', '1e+03x', '2e+06x']
    """
    if x < 10:
        return f"{x:.2f}x"
    if x < 100:
        return f"{x:.1f}x"
    if x < 999.5:
        return f"{x:.0f}x"
    return f"{x:.0e}x"


def milliseconds(seconds: float) -> str:
    """A time in ms in at most 5 characters.

    >>> [milliseconds(s) for s in (0.00012, 0.0123, 1.234, 123.4)]
    ['0.1', '12.3', '1234', '1e+05']
    """
    ms = seconds * 1e3
    if ms < 99.95:
        return f"{ms:.1f}"
    if ms < 99999.5:
        return f"{ms:.0f}"
    return f"{ms:.0e}"


def _row(results: dict, variant: str, mode: str) -> dict:
    for row in results["rows"]:
        if row["variant"] == variant and row["mode"] == mode:
            return row
    raise KeyError((variant, mode))


def _timing_lines(results: dict) -> list[str]:
    variants = results["config"]["variants"]
    name = max(len(v) for v in variants)
    head = f"{'':<{name}}"
    for mode in ("forward", "fwd+bwd"):
        head += f" {mode:>8} {'speed-up':>8} {'bound':>6}"
    lines = [head]
    for variant in variants:
        cells = f"{variant:<{name}}"
        for mode in MODES:
            row = _row(results, variant, mode)
            cells += f" {milliseconds(row['median_s']):>5} ms"
            cells += f" {ratio(row['speedup_vs_chapter']):>8}"
            cells += f" {ratio(row['times_bound']):>6}"
        lines.append(cells)
    return lines


def _ceiling_lines(results: dict) -> list[str]:
    lines = []
    for mode, label in zip(MODES, ("forward", "fwd+bwd"), strict=True):
        chapter = _row(results, REFERENCE, mode)
        best = min(
            (_row(results, v, mode) for v in results["config"]["variants"]),
            key=lambda row: row["bound_s"] if row["variant"] != WRAPPER else 1e300,
        )
        lines.append(
            f"ceiling {label}: {milliseconds(best['bound_s'])} ms at matmul speed; "
            f"chapter / ceiling {ratio(chapter['median_s'] / best['bound_s'])}"
        )
    return lines


def _memory_lines(memory: dict, what: str = "one forward pass") -> list[str]:
    mib = {v: [b / 2**20 for b in bs] for v, bs in memory["peak_bytes"].items()}
    name = max(len(v) for v in mib)
    lines = [
        f"peak extra memory of {what}, batch {memory['batch']}, MiB",
        f"{'tokens':<{name}}"
        + "".join(f" {t:>8}" for t in memory["tokens"])
        + (f" {REFERENCE + '/x':>8}" if REFERENCE in mib else ""),
    ]
    for variant, peaks in mib.items():
        line = f"{variant:<{name}}" + "".join(f" {_mib(p):>8}" for p in peaks)
        if REFERENCE in mib:
            share = ratio(mib[REFERENCE][-1] / peaks[-1]) if peaks[-1] > 0 else "-"
            line += f" {share:>8}"
        lines.append(line)
    return lines


def _mib(value: float) -> str:
    return f"{value:.1f}" if value < 99999.5 else f"{value:.1e}"


def format_report(results: dict) -> str:
    """The tables the command prints, as one string (lines of at most 72 columns).

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        results: the output of :func:`~attention.bench.run` (or the JSON file
            it wrote).

    Returns:
        A header, the timing table, the ceiling lines and, if measured, the
        memory table.
    """
    c, meta, mm = results["config"], results["meta"], results["matmul"]
    lines = [
        f"batch {c['batch']} x {c['tokens']} tokens, width {c['d_model']}, "
        f"{c['heads']} heads, float32, threads: {meta['threads']}",
        f"median of {c['repeats']} interleaved rounds; matmul probe "
        f"({mm['size']}^3): {mm['flops_per_s'] / 1e9:.1f} GFLOP/s",
        "speed-up: the chapter's time / this time",
        "bound: this time / (FLOPs / matmul throughput)",
        "",
        *_timing_lines(results),
        "",
        *_ceiling_lines(results),
    ]
    if results.get("memory"):
        lines += ["", *_memory_lines(results["memory"])]
    if results.get("memory_train"):
        lines += ["", *_memory_lines(results["memory_train"], "forward+backward")]
    return "\n".join(lines)
