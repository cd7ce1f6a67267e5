"""Time and size every multi-head attention variant, side by side, in one run.

Run ``python -m attention.bench`` (or ``make bench``); ``--help`` lists the
flags, ``--quick`` runs small sizes in a few seconds. A benchmark, not a
test: nothing here passes or fails.

What it measures, and how:

- **Time.** Each variant's forward pass (under ``torch.inference_mode``)
  and forward plus backward pass (gradients of the input and of every
  weight). All variants run in eval mode with ``dropout=0.0``, in float32.
  The measurements are interleaved: every *round* times each task once, in
  an order that rotates from round to round, so a burst of load from another
  process hits all variants alike. The report gives medians over rounds.
- **A compute bound.** A large square ``torch.matmul`` is one of the tasks in
  every round; its median speed is the machine's matrix-multiply throughput
  *under the same conditions*. A variant's bound is its FLOP count divided by
  that throughput: the time it would take if all its arithmetic ran at
  matmul speed and nothing else cost anything.
- **FLOP model.** One multiply-add counts as 2 FLOPs. Forward:
  ``2*b*T*d_in*3*d_out`` for the query, key and value projections,
  ``2*b*T*d_out*d_out`` for ``out_proj`` (the wrapper has none), and
  ``2*b*h*P*hd`` each for the scores and for the weighted sum of values,
  where ``P = T*(T+1)/2`` is the number of query-key pairs a causal model
  must compute (those on or below the diagonal). Counting only those is the
  demanding choice: a dense implementation does twice this attention work,
  and pays for it in the ratio. Softmax, masking and scaling are not counted.
  Forward plus backward counts three times the forward FLOPs (every product
  ``Y = A B`` needs two products of the same size for ``dA`` and ``dB``);
  recomputation inside a kernel is not counted.
- **Memory.** The peak resident memory that one forward pass adds to the
  process, for ``T`` growing (batch 1 by default, so the chapter's class
  fits in RAM at 8192 tokens). Measured in a child process on Linux: before
  each call the kernel's peak-RSS counter is reset (``/proc/self/clear_refs``)
  and the resident size noted; after it, the new peak (``VmHWM``) minus that
  size is the call's footprint. The child runs with
  ``MALLOC_MMAP_THRESHOLD_=65536`` so that freed blocks go back to the
  operating system and one measurement cannot hide in the previous one's
  leftovers. This sees every byte torch allocates, including kernels'
  scratch buffers, which ``tracemalloc`` cannot see. The module's own
  weights and mask buffer are allocated before the reset and not counted.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import torch
from torch import nn

from .efficient import (
    FusedQKVMultiHeadAttention,
    SDPAMultiHeadAttention,
    TorchMultiHeadAttention,
)
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper

#: Every variant the benchmark compares, as key -> (short label for tables
#: and plots, class). Every class takes the chapter's (d_in, d_out,
#: context_length, dropout, num_heads); the wrapper's d_out is the width of
#: one head, so it gets d_model // heads.
VARIANTS: dict[str, tuple[str, type[nn.Module]]] = {
    "mha": ("MHA (chapter)", MultiHeadAttention),
    "wrapper": ("wrapper (chapter)", MultiHeadAttentionWrapper),
    "fused": ("fused QKV", FusedQKVMultiHeadAttention),
    "sdpa": ("SDPA", SDPAMultiHeadAttention),
    "torch": ("nn.MultiheadAttention", TorchMultiHeadAttention),
}
REFERENCE = "mha"
MODES = ("forward", "forward+backward")


@dataclass(frozen=True)
class BenchConfig:
    """Sizes and repetitions of one benchmark run.

    The defaults are GPT-2 (small) sizes: a batch of 8 sequences of 1024
    tokens, 768 features, 12 heads.
    """

    batch: int = 8
    tokens: int = 1024
    d_model: int = 768
    heads: int = 12
    repeats: int = 5
    warmup: int = 1
    matmul_size: int = 2048
    memory_tokens: tuple[int, ...] = (1024, 2048, 4096, 8192)
    memory_batch: int = 1
    variants: tuple[str, ...] = tuple(VARIANTS)
    threads: int = field(default_factory=torch.get_num_threads)
    seed: int = 0

    @classmethod
    def quick(cls, **overrides) -> BenchConfig:
        """Small sizes that run in seconds (for the book page, or a smoke test)."""
        small = dict(
            batch=2,
            tokens=256,
            d_model=256,
            heads=4,
            repeats=5,
            matmul_size=512,
            memory_tokens=(256, 512, 1024),
        )
        return cls(**{**small, **overrides})


def flops(variant: str, batch: int, tokens: int, d_model: int, heads: int) -> float:
    """FLOPs of one forward pass of ``variant`` (see the module docstring).

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        variant: a key of :data:`VARIANTS`.
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
    out_proj = 0 if variant == "wrapper" else 2 * b * t * d * d
    causal_pairs = t * (t + 1) / 2  # (query, key) pairs on or below the diagonal
    scores_and_values = 2 * (2 * b * h * causal_pairs * (d // h))
    return projections + out_proj + scores_and_values


def _build(variant: str, config: BenchConfig, context_length: int) -> nn.Module:
    torch.manual_seed(config.seed)
    cls = VARIANTS[variant][1]
    d_out = config.d_model // config.heads if variant == "wrapper" else config.d_model
    module = cls(config.d_model, d_out, context_length, 0.0, config.heads)
    return module.eval()


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _tasks(config: BenchConfig) -> dict[tuple[str, str], Callable[[], object]]:
    """Every (variant, mode) to time, plus the matmul probe, as closures."""
    gen = torch.Generator().manual_seed(config.seed)
    shape = (config.batch, config.tokens, config.d_model)
    x = torch.randn(shape, generator=gen)
    grad_out = torch.randn(shape, generator=gen)
    n = config.matmul_size
    a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)

    def matmul() -> torch.Tensor:
        with torch.inference_mode():
            return a @ b

    tasks: dict[tuple[str, str], Callable[[], object]] = {("matmul", "-"): matmul}
    for variant in config.variants:
        module = _build(variant, config, config.tokens)

        def forward(module: nn.Module = module) -> torch.Tensor:
            with torch.inference_mode():
                return module(x)

        def forward_backward(module: nn.Module = module) -> None:
            module.zero_grad(set_to_none=True)
            x_grad = x.detach().requires_grad_(True)
            module(x_grad).backward(grad_out)

        tasks[(variant, "forward")] = forward
        tasks[(variant, "forward+backward")] = forward_backward
    return tasks


def time_variants(config: BenchConfig, progress: bool = True) -> dict:
    """Time every variant's forward and forward+backward pass, interleaved.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        config: sizes and repetitions.
        progress: print one line per measurement to stderr.

    Returns:
        ``{"matmul": {...}, "rows": [...]}``: the matmul probe's times and
        throughput, and per (variant, mode) the times in seconds, their
        median, the FLOP count, the compute bound and the two ratios.
    """
    threads_before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _time_variants(config, progress)
    finally:
        torch.set_num_threads(threads_before)


def _time_variants(config: BenchConfig, progress: bool) -> dict:
    tasks = _tasks(config)
    keys = list(tasks)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
    rounds = config.warmup + config.repeats
    for r in range(rounds):
        warm = r < config.warmup
        shift = r % len(keys)  # rotate the order from round to round
        for key in keys[shift:] + keys[:shift]:
            seconds = _timed(tasks[key])
            if not warm:
                times[key].append(seconds)
            if progress:
                tag = "warm-up" if warm else f"round {r - config.warmup + 1}"
                print(
                    f"[bench] {tag}/{config.repeats}  {key[0]:>8} {key[1]:<16} "
                    f"{seconds * 1e3:9.1f} ms",
                    file=sys.stderr,
                    flush=True,
                )
    mm = times.pop(("matmul", "-"))
    mm_median = statistics.median(mm)
    throughput = 2 * config.matmul_size**3 / mm_median  # FLOP/s
    medians = {key: statistics.median(ts) for key, ts in times.items()}
    rows = []
    for (variant, mode), ts in times.items():
        work = flops(variant, config.batch, config.tokens, config.d_model, config.heads)
        work *= 3 if mode == "forward+backward" else 1
        bound = work / throughput
        reference = medians.get((REFERENCE, mode))
        rows.append(
            {
                "variant": variant,
                "label": VARIANTS[variant][0],
                "mode": mode,
                "times_s": ts,
                "median_s": medians[(variant, mode)],
                "flops": work,
                "bound_s": bound,
                "times_bound": medians[(variant, mode)] / bound,
                "speedup_vs_chapter": (
                    reference / medians[(variant, mode)] if reference else None
                ),
            }
        )
    return {
        "matmul": {
            "size": config.matmul_size,
            "times_s": mm,
            "median_s": mm_median,
            "flops_per_s": throughput,
        },
        "rows": rows,
    }


def _rss(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"{key} not in /proc/self/status")


def _memory_child() -> None:
    """Runs in the child process: reads a config on stdin, prints JSON."""
    config = BenchConfig(**{k: tuple(v) if isinstance(v, list) else v
                            for k, v in json.load(sys.stdin).items()})  # fmt: skip
    torch.set_num_threads(config.threads)
    peaks: dict[str, list[int]] = {variant: [] for variant in config.variants}
    for variant in config.variants:  # warm up each kernel once, small
        small = min(config.memory_tokens)
        with torch.inference_mode():
            _build(variant, config, small)(
                torch.randn(config.memory_batch, small, config.d_model)
            )
    for tokens in config.memory_tokens:
        for variant in config.variants:
            module = _build(variant, config, tokens)
            x = torch.randn(config.memory_batch, tokens, config.d_model)
            with torch.inference_mode():
                before = _rss("VmRSS")
                with open("/proc/self/clear_refs", "w") as clear:
                    clear.write("5")  # reset the peak-RSS counter (Linux >= 4.0)
                out = module(x)
                peaks[variant].append(_rss("VmHWM") - before)
            del module, x, out
            print(
                f"[bench] memory  {variant:>8}  T={tokens:<6} "
                f"{peaks[variant][-1] / 2**20:10.1f} MiB",
                file=sys.stderr,
                flush=True,
            )
    json.dump(peaks, sys.stdout)


def measure_memory(config: BenchConfig) -> dict:
    """Peak extra memory of one forward pass per variant as ``T`` grows.

    Book section: Beyond the chapter, Efficient multi-head attention. Runs
    in a child process (Linux only; see the module docstring).

    Args:
        config: uses ``memory_tokens``, ``memory_batch``, ``d_model``,
            ``heads``, ``variants``, ``threads``.

    Returns:
        ``{"batch": ..., "tokens": [...], "peak_bytes": {variant: [...]}}``.
    """
    if not os.path.exists("/proc/self/clear_refs"):
        raise RuntimeError("the memory measurement needs Linux (/proc/self/clear_refs)")
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    child = subprocess.run(
        [sys.executable, "-c", "from attention.bench import _memory_child as m; m()"],
        input=json.dumps(asdict(config)),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    sys.stderr.write(child.stderr)
    if child.returncode != 0:
        raise RuntimeError(f"the memory child failed with code {child.returncode}")
    return {
        "batch": config.memory_batch,
        "tokens": list(config.memory_tokens),
        "peak_bytes": json.loads(child.stdout),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run(config: BenchConfig, memory: bool = True, progress: bool = True) -> dict:
    """Run the whole benchmark and return its results as a JSON-ready dict.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        config: sizes and repetitions.
        memory: also measure peak memory as the sequence grows.
        progress: report progress on stderr.

    Returns:
        ``{"meta", "config", "matmul", "rows", "memory"}``; see
        :func:`time_variants` and :func:`measure_memory`.
    """
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    results = {
        "meta": {
            "created_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cpu": _cpu_name(),
            "cpu_count": os.cpu_count(),
            "threads": config.threads,
            "load_average_before": load_before,
        },
        "config": asdict(config),
    }
    results.update(time_variants(config, progress=progress))
    results["memory"] = measure_memory(config) if memory else None
    if hasattr(os, "getloadavg"):
        results["meta"]["load_average_after"] = os.getloadavg()
    return results


def _row(results: dict, variant: str, mode: str) -> dict | None:
    for row in results["rows"]:
        if row["variant"] == variant and row["mode"] == mode:
            return row
    return None


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}"


def format_report(results: dict) -> str:
    """The tables the command prints, as one string (lines of at most 72 columns).

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        results: the output of :func:`run` (or the JSON file it wrote).

    Returns:
        A header, the timing table, the ceiling lines and, if measured, the
        memory table.
    """
    c, meta, mm = results["config"], results["meta"], results["matmul"]
    n = mm["size"]
    lines = [
        f"batch {c['batch']} x {c['tokens']} tokens, width {c['d_model']}, "
        f"{c['heads']} heads, float32, threads: {meta['threads']}",
        f"median of {c['repeats']} interleaved rounds; matmul probe "
        f"({n}^3): {mm['flops_per_s'] / 1e9:.1f} GFLOP/s",
        "speed-up: the chapter's time / this time",
        "bound: this time / (FLOPs / matmul throughput)",
        "",
        f"{'':<21} {'forward':>8} {'speed-up':>8} {'bound':>6}"
        f"  {'fwd+bwd':>8} {'speed-up':>8} {'bound':>6}",
    ]
    for variant in c["variants"]:
        cells = [f"{VARIANTS[variant][0]:<21}"]
        for mode in MODES:
            row = _row(results, variant, mode)
            cells.append(
                f"{_ms(row['median_s']):>5} ms {row['speedup_vs_chapter']:>7.2f}x"
                f" {row['times_bound']:>5.2f}x"
            )
        lines.append(" ".join(cells[:2]) + "  " + cells[2])
    lines.append("")
    for mode in MODES:
        chapter = _row(results, REFERENCE, mode)
        best = min(
            (_row(results, v, mode) for v in c["variants"] if v != "wrapper"),
            key=lambda row: row["bound_s"],
        )
        label = "forward" if mode == "forward" else "fwd+bwd"
        lines.append(
            f"ceiling {label}: all FLOPs at matmul speed, "
            f"{_ms(best['bound_s'])} ms = "
            f"{chapter['median_s'] / best['bound_s']:.2f}x the chapter"
        )
    memory = results.get("memory")
    if memory:
        mib = {v: [b / 2**20 for b in bs] for v, bs in memory["peak_bytes"].items()}
        lines += [
            "",
            f"peak extra memory of one forward pass, batch {memory['batch']}, MiB",
            f"{'tokens':>7} " + " ".join(f"{v:>9}" for v in mib),
        ]
        for i, tokens in enumerate(memory["tokens"]):
            lines.append(f"{tokens:>7} " + " ".join(f"{mib[v][i]:>9.1f}" for v in mib))
        if REFERENCE in mib:
            ratios = [mib[REFERENCE][-1] / max(mib[v][-1], 1e-9) for v in mib]
            lines.append(f"{'mha / x':>7} " + " ".join(f"{r:>8.1f}x" for r in ratios))
    return "\n".join(lines)


def plot_times(results: dict, axes=None):
    """Bar charts: speed-up over the chapter's class, and time over the bound.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        results: the output of :func:`run` (or its JSON file).
        axes: two matplotlib axes to draw on. Default: a new figure with
            the two charts one above the other.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    if axes is None:
        rows = len(results["config"]["variants"])
        fig, axes = plt.subplots(2, 1, figsize=(6.4, 2 * (0.5 * rows + 0.9)))
    fig = axes[0].figure
    variants = results["config"]["variants"]
    labels = [VARIANTS[v][0] for v in variants]
    height = 0.38
    for ax, key, title in (
        (axes[0], "speedup_vs_chapter", "speed-up over the chapter (higher is better)"),
        (axes[1], "times_bound", "time / compute bound (lower is better)"),
    ):
        for k, (mode, colour) in enumerate(
            zip(MODES, ("#4c72b0", "#dd8452"), strict=True)
        ):
            values = [_row(results, v, mode)[key] for v in variants]
            ys = [i + (k - 0.5) * height for i in range(len(variants))]
            bars = ax.barh(ys, values, height=height, color=colour, label=mode)
            ax.bar_label(bars, fmt="%.2f", padding=2, fontsize=8)
        ax.axvline(1.0, color="0.3", linewidth=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_yticks(range(len(variants)), labels)
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
        results: the output of :func:`run` (or its JSON file), with memory.
        ax: a matplotlib axes to draw on. Default: a new figure.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    memory = results["memory"]
    markers = dict(zip(VARIANTS, "osD^v", strict=True))
    for variant, peaks in memory["peak_bytes"].items():
        reference = variant == REFERENCE  # wide and pale: others may cover it
        ax.plot(
            memory["tokens"],
            [p / 2**20 for p in peaks],
            marker=markers[variant],
            linewidth=4.5 if reference else 1.5,
            markersize=9 if reference else 5,
            alpha=0.45 if reference else 1.0,
            label=VARIANTS[variant][0],
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


def save(
    results: dict, out_dir: Path, stem: str, formats: tuple[str, ...]
) -> list[Path]:
    """Write ``<stem>.json``, ``<stem>.csv`` and the plots into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / f"{stem}.json", out_dir / f"{stem}.csv"]
    written[0].write_text(json.dumps(results, indent=1) + "\n")
    with written[1].open("w", newline="") as f:
        fields = ["variant", "mode", "median_s", "speedup_vs_chapter", "times_bound",
                  "flops", "bound_s"]  # fmt: skip
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results["rows"])
    if formats:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figures = {"times": plot_times(results)}
        if results.get("memory"):
            figures["memory"] = plot_memory(results)
        for name, fig in figures.items():
            for fmt in formats:
                path = out_dir / f"{stem}-{name}.{fmt}"
                fig.savefig(path, dpi=150 if fmt == "png" else "figure")
                written.append(path)
            plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention.bench",
        description="Time and size the multi-head attention variants side by side.",
    )
    default = BenchConfig()
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds")
    parser.add_argument("--batch", type=int, help=f"default {default.batch}")
    parser.add_argument("--tokens", type=int, help=f"default {default.tokens}")
    parser.add_argument("--d-model", type=int, help=f"default {default.d_model}")
    parser.add_argument("--heads", type=int, help=f"default {default.heads}")
    parser.add_argument("--repeats", type=int, help="timed rounds (default 5)")
    parser.add_argument("--warmup", type=int, help="untimed rounds (default 1)")
    parser.add_argument("--matmul-size", type=int, help="side of the matmul probe")
    parser.add_argument("--memory-tokens", type=int, nargs="+", help="lengths")
    parser.add_argument("--memory-batch", type=int, help="default 1")
    parser.add_argument("--no-memory", action="store_true", help="skip memory")
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), help="default: all"
    )
    parser.add_argument("--threads", type=int, help="torch intra-op threads")
    parser.add_argument(
        "--out", type=Path, default=Path("_build/bench"), help="output directory"
    )
    parser.add_argument("--stem", default="bench", help="file name stem")
    parser.add_argument(
        "--formats", default="png,svg", help="plot formats, comma-separated, or ''"
    )
    args = parser.parse_args(argv)
    overrides = {
        key: value
        for key, value in {
            "batch": args.batch,
            "tokens": args.tokens,
            "d_model": args.d_model,
            "heads": args.heads,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "matmul_size": args.matmul_size,
            "memory_tokens": tuple(args.memory_tokens) if args.memory_tokens else None,
            "memory_batch": args.memory_batch,
            "variants": tuple(args.variants) if args.variants else None,
            "threads": args.threads,
        }.items()
        if value is not None
    }
    config = (
        BenchConfig.quick(**overrides) if args.quick else replace(default, **overrides)
    )
    if REFERENCE not in config.variants:
        parser.error(f"the variants must include {REFERENCE!r}, the reference")
    results = run(config, memory=not args.no_memory)
    results["meta"]["command"] = "python -m attention.bench " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    print(format_report(results))
    formats = tuple(f for f in args.formats.split(",") if f)
    for path in save(results, args.out, args.stem, formats):
        print(f"[bench] wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
