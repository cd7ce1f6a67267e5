"""Interleaved timing, and the statistics of the report.

Each variant's forward pass (under ``torch.inference_mode``) and forward
plus backward pass (gradients of the input and of every weight) are timed.
All variants run in eval mode with ``dropout=0.0``, in float32. The
measurements are interleaved: every *round* times each task once, in an
order that rotates from round to round, so a burst of load from another
process hits all variants alike. The report gives medians over rounds.
A square ``torch.matmul`` is one of the tasks of every round: its median
speed is the machine's matrix-multiply throughput under the same conditions.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import torch
from torch import nn

from .bound import flops, matmul_flops
from .config import REFERENCE, BenchConfig, build

Task = Callable[[], object]
MATMUL = ("matmul", "-")


def _tasks(config: BenchConfig) -> dict[tuple[str, str], Task]:
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

    tasks: dict[tuple[str, str], Task] = {MATMUL: matmul}
    for variant in config.variants:
        module = build(variant, config, config.tokens)

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


def interleaved(
    tasks: dict[tuple[str, str], Task], warmup: int, repeats: int, progress: bool
) -> dict[tuple[str, str], list[float]]:
    """Seconds per task and round; the order rotates from round to round."""
    keys = list(tasks)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
    for r in range(warmup + repeats):
        shift = r % len(keys)
        for key in keys[shift:] + keys[:shift]:
            start = time.perf_counter()
            tasks[key]()
            seconds = time.perf_counter() - start
            if r >= warmup:
                times[key].append(seconds)
            if progress:
                tag = "warm-up" if r < warmup else f"round {r - warmup + 1}"
                print(
                    f"[bench] {tag}/{repeats}  {key[0]:>8} {key[1]:<16} "
                    f"{seconds * 1e3:9.1f} ms",
                    file=sys.stderr,
                    flush=True,
                )
    return times


def summarize(times: dict[tuple[str, str], list[float]], config: BenchConfig) -> dict:
    """Medians, FLOPs, bounds and ratios from the raw times of one run."""
    mm = times.pop(MATMUL)
    mm_median = statistics.median(mm)
    throughput = matmul_flops(config.matmul_size) / mm_median  # FLOP/s
    medians = {key: statistics.median(ts) for key, ts in times.items()}
    sizes = (config.batch, config.tokens, config.d_model, config.heads)
    rows = []
    for (variant, mode), ts in times.items():
        work = flops(variant, *sizes) * (3 if mode == "forward+backward" else 1)
        bound = work / throughput
        median = medians[(variant, mode)]
        reference = medians.get((REFERENCE, mode))
        rows.append(
            {
                "variant": variant,
                "mode": mode,
                "times_s": ts,
                "median_s": median,
                "flops": work,
                "bound_s": bound,
                "times_bound": median / bound,
                "speedup_vs_chapter": reference / median if reference else None,
            }
        )
    matmul = {
        "size": config.matmul_size,
        "times_s": mm,
        "median_s": mm_median,
        "flops_per_s": throughput,
    }
    return {"matmul": matmul, "rows": rows}


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
        times = interleaved(_tasks(config), config.warmup, config.repeats, progress)
    finally:
        torch.set_num_threads(threads_before)
    return summarize(times, config)
