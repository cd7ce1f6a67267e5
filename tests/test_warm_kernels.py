"""``book/_kernel/warm.py``: under it, each notebook's kernel is forked from
the warm process, fresh, in the notebook's folder; without it, an ordinary
kernel starts. A command run by a real kernel manager (nbclient's), as the
build does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # 15 s: the site tier
WARM = Path(__file__).resolve().parents[1] / "book" / "_kernel" / "warm.py"

# Runs under warm.py: executes a notebook `runs` times, prints what each
# kernel saw. With "warm", it first waits until the warm process listens (it
# does once it has imported torch); with "early", it asks for its first kernel
# at once, while the warm process still imports; with "alone", the warm
# process is hidden from the kernels.
SCRIPT = """
import json, os, sys, time, nbformat
from nbclient import NotebookClient
folder, runs, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socket = os.environ["ATTENTION_WARM_KERNELS"]
while how == "warm" and not os.path.exists(socket):
    time.sleep(0.05)
if how == "early":
    assert not os.path.exists(socket), "the warm process listened already"
if how == "alone":
    del os.environ["ATTENTION_WARM_KERNELS"]
spec = {"name": "python3", "display_name": "Python 3", "language": "python"}
code = "import os, sys, torch\\n"
code += "print(os.getppid(), os.getcwd(), torch.randn(2).tolist(), sys.path, sep='|')"
nb = nbformat.v4.new_notebook(metadata={"kernelspec": spec})
nb.cells = [nbformat.v4.new_code_cell(code)]
seen = []
for _ in range(runs):
    NotebookClient(nb, resources={"metadata": {"path": folder}}).execute()
    seen.append(nb.cells[0].outputs[0]["text"].strip().split("|"))
print(json.dumps({"warm": os.getppid(), "client": os.getpid(), "kernels": seen}))
sys.exit(3)
"""


def _run(folder: Path, runs: int, how: str) -> dict:
    command = [sys.executable, "-c", SCRIPT, str(folder), str(runs), how]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # as the Makefile runs it
    out = subprocess.run(
        [sys.executable, WARM, *command], capture_output=True, text=True, env=env
    )
    assert out.returncode == 3, out.stderr  # the command's exit status, passed on
    seen = json.loads(out.stdout.splitlines()[-1])
    for _, cwd, _, path in seen["kernels"]:  # in the notebook's folder, as usual
        assert cwd == str(folder) and str(WARM.parent) not in path
    return seen


def test_kernels_are_forked_fresh_in_the_notebooks_folder(tmp_path):
    seen = _run(tmp_path, 2, "warm")
    (parent, _, drawn, _), (parent_2, _, drawn_2, _) = seen["kernels"]
    assert int(parent) == int(parent_2) == seen["warm"]  # forked by warm.py
    assert drawn != drawn_2  # each with a random seed of its own
    # A forked kernel keeps the command line of the process it was forked from.
    left = subprocess.run(["pgrep", "-f", f"{WARM} .*{tmp_path}"], capture_output=True)
    assert not left.stdout, "a kernel outlived the command"


def test_without_the_warm_process_a_kernel_starts_as_usual(tmp_path):
    seen = _run(tmp_path, 1, "alone")
    ((parent, _, _, _),) = seen["kernels"]
    assert int(parent) == seen["client"]  # the launcher became ipykernel_launcher


def test_a_kernel_asked_for_during_the_imports_starts_at_once(tmp_path):
    """Its launcher does not wait for the warm process to listen (the port
    race CI found: see warm.py's docstring) but starts an ordinary kernel."""
    seen = _run(tmp_path, 1, "early")
    ((parent, _, _, _),) = seen["kernels"]
    assert int(parent) == seen["client"]  # the launcher became ipykernel_launcher
