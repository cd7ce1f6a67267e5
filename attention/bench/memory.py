"""Peak memory of one forward pass, or of a training step, as the sequence grows.

Linux only. A training step is one forward pass and one backward pass,
with gradients for the input and every parameter.

Measured in a child process: before each call the kernel's peak-RSS counter
is reset (``/proc/self/clear_refs``) and the resident size noted; after it,
the new peak (``VmHWM``) minus that size is the call's footprint. The child
runs with ``MALLOC_MMAP_THRESHOLD_=65536`` so that freed blocks go back to
the operating system and one measurement cannot hide in the previous one's
leftovers. This sees every byte torch allocates, including kernels' scratch
buffers, which ``tracemalloc`` cannot see. The module's own weights and mask
buffer are allocated before the reset and not counted; their gradients,
made by the backward pass, are. Batch 1 by default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

import torch

from .config import BenchConfig, build

CHILD = "from attention.bench.memory import _memory_child; _memory_child()"


def _rss(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"{key} not in /proc/self/status")


def _peak(module: torch.nn.Module, x: torch.Tensor, backward: bool) -> int:
    """The peak extra bytes of ``module(x)``, and its backward pass if asked."""
    x.requires_grad_(backward)
    with torch.inference_mode(not backward):
        before = _rss("VmRSS")
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset the peak-RSS counter (Linux >= 4.0)
        out = module(x)
        if backward:
            out.sum().backward()  # gradients of x and of every parameter
        return _rss("VmHWM") - before


def _memory_child() -> None:
    """Runs in the child process: reads a config on stdin, prints JSON."""
    fields = json.load(sys.stdin)
    backward = fields.pop("backward")
    config = BenchConfig(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    )
    torch.set_num_threads(config.threads)
    lengths = config.train_memory_tokens if backward else config.memory_tokens
    mode = "fwd+bwd" if backward else "forward"
    peaks: dict[str, list[int]] = {variant: [] for variant in config.variants}
    small = min(lengths)
    for variant in config.variants:  # warm up each kernel once, small
        _peak(build(variant, config, small), torch.randn(1, small, config.d_model),
              backward)  # fmt: skip
    for tokens in lengths:
        for variant in config.variants:
            module = build(variant, config, tokens)
            x = torch.randn(config.memory_batch, tokens, config.d_model)
            peaks[variant].append(_peak(module, x, backward))
            del module, x
            print(
                f"[bench] memory  {variant:>8}  T={tokens:<6} {mode} "
                f"{peaks[variant][-1] / 2**20:10.1f} MiB",
                file=sys.stderr,
                flush=True,
            )
    json.dump(peaks, sys.stdout)


def measure_memory(config: BenchConfig, backward: bool = False) -> dict:
    """Peak extra memory of one forward pass (or training step) per variant.

    Book section: Beyond the chapter, Efficient multi-head attention, and
    FlashAttention from scratch. Runs in a child process (Linux only; see
    ``attention.bench.memory``).

    Args:
        config: uses ``memory_tokens`` (``train_memory_tokens`` with
            ``backward``), ``memory_batch``, ``d_model``, ``heads``,
            ``variants``, ``threads``.
        backward: measure a forward and a backward pass (gradients of the
            input and every parameter) instead of one forward pass in
            inference mode. Default: ``False``.

    Returns:
        ``{"batch": ..., "tokens": [...], "peak_bytes": {variant: [...]}}``.
    """
    if not os.path.exists("/proc/self/clear_refs"):
        raise RuntimeError("the memory measurement needs Linux (/proc/self/clear_refs)")
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    child = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps({**asdict(config), "backward": backward}),
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
        "tokens": list(
            config.train_memory_tokens if backward else config.memory_tokens
        ),
        "peak_bytes": json.loads(child.stdout),
    }
