"""One whole benchmark run: timing, memory, and the machine it ran on."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime

import torch

from .config import BenchConfig
from .memory import measure_memory
from .timing import time_variants


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total() -> int | None:
    """The machine's RAM in bytes (Linux), or ``None`` where it is not known."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
    return None


def run(config: BenchConfig, memory: bool = True, progress: bool = True) -> dict:
    """Run the whole benchmark and return its results as a JSON-ready dict.

    Book section: Beyond the chapter, Efficient multi-head attention.

    Args:
        config: sizes and repetitions.
        memory: also measure peak memory as the sequence grows.
        progress: report progress on stderr.

    Returns:
        ``{"meta", "config", "matmul", "rows", "memory", "memory_train"}``;
        see :func:`time_variants` and :func:`measure_memory` (``memory``:
        one forward pass, ``memory_train``: forward and backward).
    """
    getloadavg = getattr(os, "getloadavg", None)
    results = {
        "meta": {
            "created_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cpu": _cpu_name(),
            "cpu_count": os.cpu_count(),
            "memory_total_bytes": _memory_total(),
            "threads": config.threads,
            "load_average_before": getloadavg() if getloadavg else None,
        },
        "config": asdict(config),
    }
    results.update(time_variants(config, progress=progress))
    results["memory"] = measure_memory(config) if memory else None
    results["memory_train"] = measure_memory(config, backward=True) if memory else None
    if getloadavg:
        results["meta"]["load_average_after"] = getloadavg()
    return results
