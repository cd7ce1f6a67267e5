"""The contract suite catches a broken registry entry and passes a sound one.

Each case runs ``tests/test_contract.py`` in this process (pytest's
``pytester``) with a plugin that adds one entry with ``attention.register``
(one line, as a maintainer would), reads each test's outcome, then takes the
entry out of the registry again. ``tests/outside_variant.py`` is a class
written outside the package, the way a stranger would: public imports only,
its own weight storage, its own error messages (a ``TypeError`` for a
non-tensor, as torch raises), one line to register.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import Phase, settings

import attention
from attention import MultiHeadAttention
from attention.bench import cli
from attention.variants import VARIANT_INFO

# The quick loop leaves this file to `make test` (its site tier): each case runs
# the whole contract suite again, about 25 s in all.
pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]
TESTS = Path(__file__).resolve().parent
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "quick")
# A broken entry fails properties on purpose: no time spent shrinking them.
settings.register_profile(
    "no-shrink", settings.get_profile(PROFILE), phases=[Phase.explicit, Phase.generate]
)

PLUGIN = """
import torch

import attention
from attention import MultiHeadAttention


class NoMaskAttention(MultiHeadAttention):
    '''Forgets the causal mask: every token sees the whole sequence.'''

    def forward(self, x):
        mask = self.mask
        self.mask = torch.zeros_like(mask)
        try:
            return super().forward(x)
        finally:
            self.mask = mask


class PlainSubclass(MultiHeadAttention):
    pass


attention.register({name!r}, {cls})
"""


@pytest.fixture(scope="module", autouse=True)
def _operators_registered_once() -> None:
    """pytester drops the modules an inner run imported; torch.distributed's
    and torch._dynamo's (a ``triu`` on ``meta`` imports it) register operators
    once per process, so they are imported before any run (not at collection:
    the quick loop, which skips this file, would pay 4 s for them)."""
    import torch._dynamo  # noqa: F401
    import torch.distributed.tensor  # noqa: F401


@pytest.fixture
def run_contract(pytester: pytest.Pytester):
    """``run(plugin, name)``: outcome (passed, failed, skipped) per test of
    ``name`` in ``tests/test_contract.py``, with the module ``plugin`` loaded."""
    pytester.syspathinsert(TESTS)
    pytester.syspathinsert()  # the plugin files a test writes
    names = []

    def run(plugin: str, name: str) -> dict[str, str]:
        names.append(name)
        args = ["-p", plugin, "-k", name, "-p", "no:cacheprovider", "-q"]
        recorder = pytester.inline_run(str(TESTS / "test_contract.py"), *args)
        passed, skipped, failed = recorder.listoutcomes()
        # In this order: a test whose call passed and teardown failed, failed.
        kinds = {"passed": passed, "skipped": skipped, "failed": failed}
        return {r.nodeid.split("::")[-1]: k for k, reps in kinds.items() for r in reps}

    settings.load_profile("no-shrink")
    yield run
    settings.load_profile(PROFILE)
    for name in names:  # the registry is this session's too
        attention.VARIANTS.pop(name, None)
        VARIANT_INFO.pop(name, None)


def extra(pytester: pytest.Pytester, name: str, cls: str) -> str:
    pytester.makepyfile(extra_variant=PLUGIN.format(name=name, cls=cls))
    return "extra_variant"


def test_an_entry_that_ignores_the_mask_fails_tests_named_after_it(
    pytester, run_contract
):
    outcomes = run_contract(extra(pytester, "nomask", "NoMaskAttention"), "nomask")
    failed = [test for test, outcome in outcomes.items() if outcome == "failed"]
    assert all("nomask" in test for test in outcomes)
    assert any(test.startswith("test_causality[nomask") for test in failed), failed
    assert len(failed) >= 3, textwrap.shorten(str(outcomes), 400)


@pytest.mark.parametrize(
    ("name", "cls"),
    [("plain", "PlainSubclass"), ("einsum", None)],
    ids=["a-plain-subclass", "the-outside-class"],
)
def test_a_sound_entry_passes_the_whole_contract(pytester, run_contract, name, cls):
    # cls None: tests/outside_variant.py, which registers itself as "einsum"
    plugin = extra(pytester, name, cls) if cls else "outside_variant"
    outcomes = run_contract(plugin, name)
    assert len(outcomes) >= 45, f"the entry was not collected: {outcomes}"
    assert all(name in test for test in outcomes)
    assert set(outcomes.values()) == {"passed"}, {
        test: outcome for test, outcome in outcomes.items() if outcome != "passed"
    }


def test_the_outside_class_uses_only_public_names():
    source = (TESTS / "outside_variant.py").read_text()
    imports = [
        line for line in source.splitlines() if line.startswith(("import", "from"))
    ]
    assert imports == [
        "import math",
        "import torch",
        "from torch import nn",
        "import attention",
    ]
    assert "attention._" not in source and "attention.checks" not in source
    assert source.rstrip().endswith('attention.register("einsum", EinsumAttention)')


def test_the_benchmark_times_and_sizes_the_outside_class(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # the memory child imports it too
    # One round at toy sizes: the plumbing is tested, not the times, so a
    # busy machine must not stop the run from being saved (--allow-noisy).
    argv = ["--quick", "--variant", "outside_variant:EinsumAttention",
            "--variants", "mha", "sdpa", "--tokens", "32", "--d-model", "32",
            "--heads", "2", "--batch", "1", "--repeats", "1", "--warmup", "0",
            "--matmul-size", "64", "--memory-tokens", "16", "32", "--threads", "1",
            "--out", str(tmp_path), "--formats", "", "--allow-noisy"]  # fmt: skip
    try:
        assert cli.main(argv) == 0
    finally:
        attention.VARIANTS.pop("einsum", None)
        VARIANT_INFO.pop("einsum", None)
        torch.set_num_threads(1)
    out, err = capsys.readouterr()
    assert "einsum" in [line.split()[0] for line in out.splitlines() if line.strip()]
    assert "memory einsum" in " ".join(err.split()), err[-1000:]


def test_the_registry_is_a_plain_dict_with_the_chapters_class_first():
    assert type(attention.VARIANTS) is dict
    assert next(iter(attention.VARIANTS.items())) == ("mha", MultiHeadAttention)
