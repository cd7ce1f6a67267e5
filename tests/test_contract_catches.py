"""The contract suite catches a broken registry entry and passes a sound one.

Each case runs ``tests/test_contract.py`` in a child pytest with a plugin that
adds one entry with ``attention.register`` (one line, as a maintainer would),
then reads the child's JUnit report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import attention
from attention import MultiHeadAttention

ROOT = Path(__file__).resolve().parents[1]

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


def run_contract(tmp_path: Path, name: str, cls: str) -> dict[str, str]:
    """Test outcome (passed, failed, error, skipped) per test id of ``name``."""
    (tmp_path / "extra_variant.py").write_text(PLUGIN.format(name=name, cls=cls))
    report = tmp_path / "report.xml"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'tests'}"}
    subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "tests" / "test_contract.py"),
         "-p", "extra_variant", "-k", name, "-q", "-p", "no:cacheprovider",
         f"--junitxml={report}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag != "system-out"]
        outcomes[case.get("name")] = kinds[0] if kinds else "passed"
    return outcomes


def test_an_entry_that_ignores_the_mask_fails_tests_named_after_it(tmp_path):
    outcomes = run_contract(tmp_path, "nomask", "NoMaskAttention")
    failed = [test for test, outcome in outcomes.items() if outcome == "failure"]
    assert all("nomask" in test for test in outcomes)
    assert any(test.startswith("test_causality[nomask") for test in failed), failed
    assert len(failed) >= 3, textwrap.shorten(str(outcomes), 400)


def test_a_plain_subclass_passes_every_test(tmp_path):
    outcomes = run_contract(tmp_path, "plain", "PlainSubclass")
    assert len(outcomes) >= 45, "the plugin's entry was not collected"
    assert set(outcomes.values()) == {"passed"}, {
        test: outcome for test, outcome in outcomes.items() if outcome != "passed"
    }


def test_the_registry_is_a_plain_dict_with_the_chapters_class_first():
    assert type(attention.VARIANTS) is dict
    assert next(iter(attention.VARIANTS.items())) == ("mha", MultiHeadAttention)
