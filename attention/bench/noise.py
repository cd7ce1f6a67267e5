"""Whether a run can be trusted: a quiet machine, and rounds that agree.

A run is *noisy* when the machine was busy (its one-minute load average,
less the benchmark's own threads, above half the cores) or when the rounds
of any measurement spread by more than :data:`MAX_SPREAD` of their median.
``python -m attention.bench`` refuses to save a noisy run unless told
``--allow-noisy``; then the run records why (``meta["noisy"]``) and every
page that reads it says so.

Book section: Beyond the chapter, Efficient multi-head attention.
"""

from __future__ import annotations

from .rounds import Timing

#: The largest spread of rounds (range over median) a saved run may have.
MAX_SPREAD = 0.15


def spreads(results: dict) -> dict[str, float]:
    """The spread of every measurement's rounds, by ``"variant mode"``."""
    found = {"matmul probe": Timing(tuple(results["matmul"]["times_s"])).spread}
    for row in results["rows"]:
        found[f"{row['variant']} {row['mode']}"] = Timing(tuple(row["times_s"])).spread
    return found


def largest_spread(results: dict) -> tuple[str, float]:
    """The measurement whose rounds spread most, and its spread."""
    return max(spreads(results).items(), key=lambda item: item[1])


def noise_reasons(results: dict, max_spread: float = MAX_SPREAD) -> list[str]:
    """Why a run cannot be trusted; an empty list for a quiet, steady run.

    >>> run = {"meta": {"cpu_count": 2, "threads": 1,
    ...                 "load_average_before": [0.2], "load_average_after": [1.1]},
    ...        "matmul": {"times_s": [1.0, 1.01]},
    ...        "rows": [{"variant": "mha", "mode": "forward",
    ...                  "times_s": [1.0, 1.3, 1.1]}]}
    >>> noise_reasons(run)
    ['the rounds of mha forward spread by 27% of their median (at most 15%)']
    """
    meta = results["meta"]
    cores, threads = meta.get("cpu_count") or 1, meta.get("threads") or 1
    reasons = []
    before = meta.get("load_average_before")
    if before and before[0] > cores / 2:
        reasons.append(
            f"the load average before the run was {before[0]:.2f} on {cores} cores "
            f"(at most {cores / 2:g})"
        )
    after = meta.get("load_average_after")
    if after and after[0] - threads > cores / 2:
        reasons.append(
            f"the load average after the run was {after[0]:.2f} on {cores} cores, "
            f"{after[0] - threads:.2f} beside the benchmark's own {threads} "
            f"thread(s) (at most {cores / 2:g})"
        )
    for name, spread in spreads(results).items():
        if spread > max_spread:
            reasons.append(
                f"the rounds of {name} spread by {spread:.0%} of their median "
                f"(at most {max_spread:.0%})"
            )
    return reasons
