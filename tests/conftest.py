"""Fixtures shared by the unit tests of the ``attention`` package."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import torch

# A registry entry from outside the package: importing it (as --doctest-modules
# would) registers it for the whole session. tests/test_contract_catches.py
# loads it for one inner run, then takes it out of the registry.
collect_ignore = ["outside_variant.py"]


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not hasattr(
        config, "workerinput"
    ):
        return  # xdist's controller runs no test: it need not import torch (3 s)
    import torch
    from hypothesis import settings

    # The tests use tiny tensors, where extra threads only cost
    # synchronisation; on a shared 2-core machine one thread runs the suite
    # several times faster.
    torch.set_num_threads(1)
    # Hypothesis: derandomized, so a run is the same everywhere. The quick
    # loop (`make unit`) draws a few examples per property; `make test` sets
    # HYPOTHESIS_PROFILE=full for the full count.
    for profile, examples in {"quick": 6, "full": 50}.items():
        settings.register_profile(
            profile, derandomize=True, deadline=None, max_examples=examples
        )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@pytest.fixture
def inputs() -> torch.Tensor:
    """The chapter's six 3-dimensional token embeddings, ``(6, 3)``."""
    from attention import example_inputs

    return example_inputs()
