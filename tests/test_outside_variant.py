"""A class from outside the package joins the registry and passes the contract.

``tests/outside_variant.py`` is written the way a stranger would: public
imports only, its own weight storage, its own error messages, and one line
to register. Each test runs in a child process, so the entry never leaks into
this session's registry.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(TESTS)}


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


def test_the_outside_class_passes_the_whole_contract(tmp_path):
    report = tmp_path / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", str(TESTS / "test_contract.py"),
         "-p", "outside_variant", "-k", "einsum", "-q", "-p", "no:cacheprovider",
         f"--junitxml={report}"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = [
            child.tag for child in case if child.tag not in ("system-out", "system-err")
        ]
        outcomes[case.get("name")] = kinds[0] if kinds else "passed"
    assert len(outcomes) >= 45, f"the outside entry was not collected: {outcomes}"
    assert all("einsum" in test for test in outcomes)
    assert set(outcomes.values()) == {"passed"}, {
        test: outcome for test, outcome in outcomes.items() if outcome != "passed"
    }


def test_the_benchmark_times_and_sizes_the_outside_class(tmp_path):
    command = [
        sys.executable, "-m", "attention.bench", "--quick",
        "--variant", "outside_variant:EinsumAttention",
        "--variants", "mha", "sdpa",
        "--tokens", "32", "--d-model", "32", "--heads", "2", "--batch", "1",
        "--repeats", "1", "--warmup", "0", "--matmul-size", "64",
        "--memory-tokens", "16", "32", "--threads", "1",
        "--out", str(tmp_path), "--formats", "",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=child_env(), capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert "einsum" in rows, done.stdout
    assert "memory einsum" in " ".join(done.stderr.split()), done.stderr[-1000:]
