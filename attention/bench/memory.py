"""Peak memory of one forward pass as the sequence grows (Linux only).

Measured in a child process: before each call the kernel's peak-RSS counter
is reset (``/proc/self/clear_refs``) and the resident size noted; after it,
the new peak (``VmHWM``) minus that size is the call's footprint. The child
runs with ``MALLOC_MMAP_THRESHOLD_=65536`` so that freed blocks go back to
the operating system and one measurement cannot hide in the previous one's
leftovers. This sees every byte torch allocates, including kernels' scratch
buffers, which ``tracemalloc`` cannot see. The module's own weights and mask
buffer are allocated before the reset and not counted. Batch 1 by default,
so the chapter's class fits in RAM at 8192 tokens.
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


def _memory_child() -> None:
    """Runs in the child process: reads a config on stdin, prints JSON."""
    fields = json.load(sys.stdin)
    config = BenchConfig(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    )
    torch.set_num_threads(config.threads)
    peaks: dict[str, list[int]] = {variant: [] for variant in config.variants}
    small = min(config.memory_tokens)
    for variant in config.variants:  # warm up each kernel once, small
        with torch.inference_mode():
            build(variant, config, small)(
                torch.randn(config.memory_batch, small, config.d_model)
            )
    for tokens in config.memory_tokens:
        for variant in config.variants:
            module = build(variant, config, tokens)
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
    in a child process (Linux only; see ``attention.bench.memory``).

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
        [sys.executable, "-c", CHILD],
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
