"""Time and size every multi-head attention variant, side by side, in one run.

Run ``python -m attention.bench`` (or ``make bench``); ``--help`` lists the
flags, ``--quick`` runs small sizes in a few seconds. A benchmark, not a
test: nothing here passes or fails.

What it compares: every class of :data:`attention.VARIANTS` (the registry),
plus the chapter's :class:`~attention.MultiHeadAttentionWrapper` as
``"wrapper"`` (its ``d_out`` is one head's width, so it gets
``d_model // heads``). The wrapper is not in the registry: it is not
interchangeable with ``MultiHeadAttention``, but section 3.6.2's efficiency
claim is about it.

One module per job:

- ``attention.bench.config``: the sizes of a run, and building the modules;
- ``attention.bench.bound``: the FLOP model and the compute bound;
- ``attention.bench.timing``: interleaved timing and its statistics;
- ``attention.bench.memory``: peak memory of a forward pass, in a child
  process;
- ``attention.bench.split``: projections and attention core timed apart,
  each against its bound;
- ``attention.bench.table``: the printed report;
- ``attention.bench.plots``: the bar and line charts;
- ``attention.bench.rounds``: round times, their spread, comparisons
  that respect it, and ``claim`` for sentences bound to numbers;
- ``attention.bench.noise``: whether a run is quiet and steady enough to
  save;
- ``attention.bench.stored``: the stored GPT-2-size run the pages read;
- ``attention.bench.runner``: one whole run, with the machine's details;
- ``attention.bench.cli``: the command line, and writing JSON, CSV and
  plots.
"""

from __future__ import annotations

from .bound import flops
from .config import MODES, REFERENCE, WRAPPER, BenchConfig, build
from .memory import measure_memory
from .noise import MAX_SPREAD, largest_spread, noise_reasons, spreads
from .plots import plot_memory, plot_times
from .rounds import ClaimError, Comparison, Timing, claim, compare, time_rounds
from .runner import run
from .split import format_split, time_split
from .stored import describe_run, stored_run
from .table import format_report
from .timing import time_variants

__all__ = [
    "MAX_SPREAD",
    "MODES",
    "REFERENCE",
    "WRAPPER",
    "BenchConfig",
    "ClaimError",
    "Comparison",
    "Timing",
    "claim",
    "compare",
    "describe_run",
    "largest_spread",
    "noise_reasons",
    "spreads",
    "stored_run",
    "time_rounds",
    "build",
    "flops",
    "format_report",
    "format_split",
    "measure_memory",
    "plot_memory",
    "plot_times",
    "run",
    "time_split",
    "time_variants",
]
