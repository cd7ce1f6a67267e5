"""Where the time goes: projections and attention core, each against its bound.

Shape legend: ``b`` batch size, ``T`` tokens, ``d`` ``d_model``, ``h`` heads,
``hd`` ``d // h``.

The fastest variant, ``SDPAMultiHeadAttention``, does two kinds of work:
the projections (the fused ``qkv`` layer and ``out_proj``, plain matrix
products) and the attention core (one ``F.scaled_dot_product_attention``
call). This module times them apart, forward only, in interleaved rounds
(``attention.bench.timing.interleaved``) with the same square-matmul
probe as the benchmark, and divides each by its own compute bound
(``attention.bench.bound``): FLOPs over the matmul rate. The core is
timed twice, with ``is_causal=True`` (bound: the query-key pairs on or below
the diagonal) and without a mask (bound: every pair), and, if asked, once
more as the tiled Python loop :func:`attention.flash_attention`.

:func:`profile_step` goes one level further, into a training step: the
time of every matrix product and attention kernel, forward and backward,
as ``torch.profiler`` records them; :func:`attention_kernels` names the
kernels that SDPA chose for a call.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import profile

from ..flash import flash_attention
from .bound import flops, matmul_flops
from .config import BenchConfig, build
from .rounds import Timing
from .timing import interleaved


def _flop_counts(config: BenchConfig) -> dict[str, float]:
    """FLOPs of each timed piece, in the model of ``attention.bench.bound``."""
    b, t, d, h = config.batch, config.tokens, config.d_model, config.heads
    projections = 2 * b * t * d * 3 * d + 2 * b * t * d * d  # qkv and out_proj
    causal_core = flops("sdpa", b, t, d, h) - projections  # pairs on or below
    return {
        "projections": projections,
        "core causal": causal_core,
        "core dense": 2 * (2 * b * h * t * t * (d // h)),  # every pair
        "core tiled": causal_core,
        "sdpa (whole)": flops("sdpa", b, t, d, h),
    }


def time_split(
    config: BenchConfig, tiled: bool = False, progress: bool = False
) -> dict:
    """Time the projections and the attention core of the SDPA variant apart.

    Book section: Beyond the chapter, FlashAttention from scratch.

    Args:
        config: sizes, repeats, warm-up, threads and the matmul probe's size
            (``variants`` is not used).
        tiled: also time :func:`attention.flash_attention` (causal) as a core.
        progress: print one line per measurement to stderr.

    Returns:
        ``{"matmul": {"flops_per_s": ...}, "rows": [...]}`` with, per piece
        (``"projections"``, ``"core causal"``, ``"core dense"``, optionally
        ``"core tiled"``, and ``"sdpa (whole)"``), its median time, FLOPs,
        bound and ``times_bound``.

    Example:
        >>> small = BenchConfig.quick(batch=1, tokens=64, d_model=64, repeats=1)
        >>> [row["piece"] for row in time_split(small)["rows"]]
        ['projections', 'core causal', 'core dense', 'sdpa (whole)']
    """
    gen = torch.Generator().manual_seed(config.seed)
    b, t, d, h = config.batch, config.tokens, config.d_model, config.heads
    module = build("sdpa", config, t)
    x = torch.randn(b, t, d, generator=gen)
    n = config.matmul_size
    a, c = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
    with torch.inference_mode():
        # (b, T, d) -> (b, T, 3, h, hd) -> 3 x (b, h, T, hd), strided views
        qkv = module.qkv(x).view(b, t, 3, h, d // h)
        q, k, v = (part.transpose(1, 2) for part in qkv.unbind(2))
        context = torch.randn(b, t, d, generator=gen)  # what out_proj reads

    def projections() -> object:
        module.qkv(x)  # (b, T, d) -> (b, T, 3 * d)
        return module.out_proj(context)  # (b, T, d) -> (b, T, d)

    tasks = {
        "matmul": lambda: a @ c,
        "projections": projections,
        "core causal": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "core dense": lambda: F.scaled_dot_product_attention(q, k, v),
    }
    if tiled:
        tasks["core tiled"] = lambda: flash_attention(q, k, v, causal=True)
    tasks["sdpa (whole)"] = lambda: module(x)

    def inference(task):
        def run() -> object:
            with torch.inference_mode():
                return task()

        return run

    threads_before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        times = interleaved(
            {(name, "forward"): inference(fn) for name, fn in tasks.items()},
            config.warmup,
            config.repeats,
            progress,
        )
    finally:
        torch.set_num_threads(threads_before)
    rate = matmul_flops(n) / statistics.median(times.pop(("matmul", "forward")))
    work = _flop_counts(config)
    rows = []
    for (name, _), ts in times.items():
        median = statistics.median(ts)
        bound = work[name] / rate
        rows.append(
            {
                "piece": name,
                "median_s": median,
                "flops": work[name],
                "bound_s": bound,
                "times_bound": median / bound,
            }
        )
    return {"matmul": {"size": n, "flops_per_s": rate}, "rows": rows}


def format_split(results: dict) -> str:
    """The split as a small table, one line per piece, and the two main shares.

    Book section: Beyond the chapter, FlashAttention from scratch.

    Args:
        results: the output of :func:`time_split`.

    Returns:
        The matmul rate, then per piece its time, bound and ratio, then the
        shares of the projections and of the causal core in their sum (the
        pieces are timed apart, so the whole pass may differ from the sum).

    Example:
        >>> rows = [
        ...     {"piece": "projections", "median_s": 0.3, "bound_s": 0.25},
        ...     {"piece": "core causal", "median_s": 0.1, "bound_s": 0.05},
        ...     {"piece": "sdpa (whole)", "median_s": 0.42, "bound_s": 0.3},
        ... ]
        >>> for row in rows:
        ...     row["times_bound"] = row["median_s"] / row["bound_s"]
        >>> print(format_split({"matmul": {"flops_per_s": 5e10}, "rows": rows}))
        matmul rate: 50.0 GFLOP/s
        piece             time ms   bound ms  time/bound
        projections         300.0      250.0       1.20x
        core causal         100.0       50.0       2.00x
        sdpa (whole)        420.0      300.0       1.40x
        projections + causal core: projections 75%, core 25%
    """
    rows = {row["piece"]: row for row in results["rows"]}
    lines = [
        f"matmul rate: {results['matmul']['flops_per_s'] / 1e9:.1f} GFLOP/s",
        f"{'piece':<15} {'time ms':>9} {'bound ms':>10} {'time/bound':>11}",
    ]
    for name, row in rows.items():
        lines.append(
            f"{name:<15} {row['median_s'] * 1e3:9.1f} {row['bound_s'] * 1e3:10.1f} "
            f"{row['times_bound']:10.2f}x"
        )
    proj, core = rows["projections"]["median_s"], rows["core causal"]["median_s"]
    lines.append(
        f"projections + causal core: projections {proj / (proj + core):.0%}, "
        f"core {core / (proj + core):.0%}"
    )
    return "\n".join(lines)


def rounds_side_by_side(
    calls: dict[str, Callable[[], object]], repeats: int = 7, warmup: int = 1
) -> dict[str, Timing]:
    """Time several calls in the same rounds, in an order that rotates.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Each round times every call once, so a burst of load from another
    process slows all of them alike, and round ``i`` of one call can be
    compared with round ``i`` of another (a *paired* comparison, which a
    busy machine disturbs much less than a comparison of whole timings).

    Args:
        calls: what to time, by name, each called without arguments.
        repeats: timed rounds (at least 2: one round has no spread).
        warmup: untimed rounds first.

    Returns:
        ``{name: Timing}``, the rounds in the order they were run.

    Example:
        >>> t = rounds_side_by_side({"a": lambda: None, "b": lambda: None}, 3)
        >>> sorted(t), len(t["a"].rounds)
        (['a', 'b'], 3)
    """
    if repeats < 2:
        raise ValueError(f"repeats must be at least 2 to show a spread, got {repeats}")
    times = interleaved(
        {(name, "-"): call for name, call in calls.items()}, warmup, repeats, False
    )
    return {name: Timing(tuple(times[(name, "-")])) for name in calls}


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null: the profiler's C++ side prints a
    start and a stop line there, with a time stamp, on every run."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _profiled(fn: Callable[[], object]) -> list:
    """The profiler's events of one call of ``fn``."""
    with _quiet_stderr(), profile(record_shapes=True) as prof:
        fn()
    return list(prof.events())


def attention_kernels(fn: Callable[[], object]) -> list[str]:
    """The attention kernels one call of ``fn`` runs, as the profiler names them.

    Book section: Beyond the chapter, Efficient multi-head attention.

    ``F.scaled_dot_product_attention`` does not say which implementation it
    chose; the profiler records the op it dispatched to (on the CPU,
    ``aten::_scaled_dot_product_flash_attention_for_cpu`` or
    ``aten::_scaled_dot_product_attention_math``).

    Example:
        >>> import torch.nn.functional as F
        >>> q = k = v = torch.randn(1, 2, 8, 4)
        >>> attention_kernels(lambda: F.scaled_dot_product_attention(q, k, v))
        ['aten::_scaled_dot_product_flash_attention_for_cpu']
    """
    names = {event.name for event in _profiled(fn)}
    return sorted(
        name
        for name in names
        if name.startswith("aten::_scaled_dot_product")
        and not name.endswith("_backward")
    )


_PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm")


def _label(event) -> str:
    """A matrix product named by its operand shapes; any other op by its name."""
    if event.name in _PRODUCTS:
        shapes = [s for s in event.input_shapes if len(s) >= 2][:2]
        return f"{event.name[6:]} " + " @ ".join("x".join(map(str, s)) for s in shapes)
    return event.name.removeprefix("aten::")


def profile_step(
    module: nn.Module, x: torch.Tensor, steps: int = 3, warmup: int = 1
) -> dict[str, list[float]]:
    """Time every matrix product and attention kernel of a training step.

    Book section: Beyond the chapter, Efficient multi-head attention.

    One step is ``module(x)``, then ``backward`` of a fixed random gradient,
    with ``x`` requiring a gradient (as it does inside a model). Each step
    runs under ``torch.profiler``; the profiler's own cost lands on every op
    alike, a few microseconds per call.

    Args:
        module: the attention module (in the mode it should run in).
        x: its input, ``(b, T, d_in)``.
        steps: profiled steps; each op gets one time per step.
        warmup: unprofiled steps first (allocation, one-time costs).

    Returns:
        ``{label: [seconds per step]}``: matrix products labelled by their
        operand shapes (``"mm 1024x768 @ 768x2304"``), attention kernels by
        their op name; an op that runs more than once with the same label in
        a step gets the sum.

    Example:
        >>> from attention import SDPAMultiHeadAttention
        >>> m = SDPAMultiHeadAttention(8, 8, 4, 0.0, num_heads=2)
        >>> times = profile_step(m, torch.randn(1, 4, 8), steps=2)
        >>> sorted(k for k in times if "flash" in k)  # doctest: +NORMALIZE_WHITESPACE
        ['_scaled_dot_product_flash_attention_for_cpu',
         '_scaled_dot_product_flash_attention_for_cpu_backward']
        >>> all(len(t) == 2 for t in times.values())
        True
    """
    gen = torch.Generator().manual_seed(0)
    grad_out = torch.randn(module(x).shape, generator=gen)

    def step() -> None:
        module.zero_grad(set_to_none=True)
        module(x.detach().requires_grad_(True)).backward(grad_out)

    for _ in range(warmup):
        step()
    times: dict[str, list[float]] = {}
    for n in range(steps):
        this_step: dict[str, float] = {}
        for event in _profiled(step):
            if event.name in _PRODUCTS or event.name.startswith(
                "aten::_scaled_dot_product"
            ):
                label = _label(event)
                seconds = event.self_cpu_time_total / 1e6
                this_step[label] = this_step.get(label, 0.0) + seconds
        for label, seconds in this_step.items():
            times.setdefault(label, [0.0] * n).append(seconds)
    return times
