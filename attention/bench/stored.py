"""The stored GPT-2-size run that the pages read, and how to describe it.

The full benchmark takes minutes, too long for every build, so one run is
measured on a quiet machine and shipped with the package
(``attention/_data/bench-gpt2.json``). Pages read it through
:func:`stored_run` only (a test swaps it for a doctored copy and checks that
the pages' sentences follow), and print :func:`describe_run` beside it.

Book section: Beyond the chapter, Efficient multi-head attention.
"""

from __future__ import annotations

import json
from importlib.resources import files

from .noise import largest_spread


def stored_run(name: str = "gpt2") -> dict:
    """The stored run ``attention/_data/bench-<name>.json``, as a dict.

    >>> run = stored_run()
    >>> run["config"]["tokens"], run["config"]["d_model"]
    (1024, 768)
    """
    path = files("attention").joinpath(f"_data/bench-{name}.json")
    if not path.is_file():
        raise ValueError(f"no stored run named {name!r}: expected the file {path}")
    return json.loads(path.read_text())


def describe_run(results: dict) -> str:
    """Where and when a run was measured, how busy the machine was, and how
    far its rounds spread: the lines a page prints beside a stored run."""
    meta = results["meta"]
    name, spread = largest_spread(results)
    rounds = len(results["rows"][0]["times_s"])
    lines = [
        f"measured {meta['created_utc']} on {meta['cpu']} "
        f"({meta['cpu_count']} cores, {meta['threads']} torch thread(s)), "
        f"torch {meta['torch']}",
    ]
    before, after = meta.get("load_average_before"), meta.get("load_average_after")
    if before and after:
        lines.append(
            f"load average (1 min): {before[0]:.2f} before the run, "
            f"{after[0]:.2f} after it, which counts the benchmark's own "
            f"{meta['threads']} thread(s)"
        )
    lines.append(
        f"{rounds} rounds per measurement; the largest spread of rounds: "
        f"{spread:.0%} ({name})"
    )
    if meta.get("noisy"):
        reasons = "; ".join(meta["noisy"])
        lines.append(f"A NOISY RUN, saved with --allow-noisy: {reasons}")
    return "\n".join(lines)
