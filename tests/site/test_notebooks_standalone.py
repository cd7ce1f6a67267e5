"""Every notebook the site offers for download runs on its own.

A reader who downloads a page's notebook has the book's repository and
``pip install -e ".[notebooks]"``, nothing else: not the build's virtual
environment, not myst-nb, not the repository as the working directory. These
tests do exactly that, once per run:

- collect the notebooks the built pages link to (``a.download`` links ending
  in ``.ipynb``, resolved to files under ``$BUILDDIR/html/_downloads``);
- make a new virtual environment in a temporary folder (no system or build
  packages visible), install ``torch==2.13.0`` in it first (the CPU wheel on
  this machine's disk: an unpinned torch would fetch a CUDA build of several
  GB), then ``pip install -e "<repo>[notebooks]"`` and nothing else, so the
  extra alone must bring the kernel and every import;
- register that environment's kernel under a temporary Jupyter path and run
  each notebook with nbclient in it, from a temporary working directory
  outside the repository.

The environment is made without pip of its own (``venv --without-pip``; the
test's pip installs into it with ``--python``) and without compiling bytecode:
both save minutes and neither changes what the notebooks can import. pip's
cache is reused between runs. ``NOTEBOOK_ENV_LOG`` names a file to which the
setup's timings are appended (the test prints them too, see ``-s``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from conftest import ROOT, build_dir
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError
from packaging.requirements import Requirement

pytestmark = [pytest.mark.site, pytest.mark.slow]

KERNEL = "attention-notebooks"
# The CPU build on this machine's disk; pip checks it against the extra's range.
TORCH = "torch==2.13.0"
CELL_TIMEOUT = 600  # seconds; the slowest cell of the book takes under a minute
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks


def offered_notebooks(html: Path) -> dict[str, Path]:
    """``{"3-5-causal-attention.ipynb": <file>}`` for each download link."""
    found: dict[str, Path] = {}
    for page in sorted(html.rglob("*.html")):
        if page.relative_to(html).parts[0] in {"_static", "_modules"}:
            continue
        soup = BeautifulSoup(page.read_text("utf-8"), "html.parser")
        for link in soup.select("a.download[href$='.ipynb']"):
            href = link["href"].split("#", 1)[0]
            found[Path(href).name] = (page.parent / href).resolve()
    return found


NOTEBOOKS = offered_notebooks(build_dir() / "html")
# With no build there is nothing to parametrize over; one case that fails
# says so (a missing build is a failure, never a skip).
NAMES = sorted(NOTEBOOKS) or ["<no notebooks found>"]


def notebook(name: str) -> nbformat.NotebookNode:
    if name not in NOTEBOOKS:
        pytest.fail(
            f"No notebook downloads in {build_dir() / 'html'}: run `make html` "
            "first (or set BUILDDIR).",
            pytrace=False,
        )
    path = NOTEBOOKS[name]
    assert path.is_file(), f"{name}: the page links to {path}, which is missing"
    return nbformat.read(path, as_version=4)


def imported_modules(source: str) -> set[str]:
    """Top-level names of the modules a code cell imports (magics allowed)."""
    tree = ast.parse(TransformerManager().transform_cell(source))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_imported_modules_are_found():
    """The import finder itself: aliases, submodules, magics, strings."""
    cell = (
        "%matplotlib inline\nimport torch.nn as nn, json\n"
        "from myst_nb import glue\nprint('import os')\n"
    )
    assert imported_modules(cell) == {"torch", "json", "myst_nb"}


def test_pins_satisfy_the_notebooks_extra():
    """requirements.txt's versions are ones the extra accepts (the build's
    environment is what the pages were executed with)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    extra = project["project"]["optional-dependencies"]["notebooks"]
    lines = (ROOT / "requirements.txt").read_text("utf-8").splitlines()
    pins = dict(
        line.lower().split("==") for line in lines if "==" in line and line[0] != "#"
    )
    for requirement in map(Requirement, extra + project["project"]["dependencies"]):
        pinned = pins.get(requirement.name.lower())
        assert pinned, f"{requirement.name} is not pinned in requirements.txt"
        assert requirement.specifier.contains(pinned), f"{requirement} vs {pinned}"


def test_the_site_offers_notebooks(site):
    """Every executed page links its notebook (so the cases below are all)."""
    executed = {p.docname.rsplit("/", 1)[-1] for p in site.pages if p.is_notebook}
    assert executed, "no page was executed by myst-nb"
    assert {f"{name}.ipynb" for name in executed} == set(NOTEBOOKS)


@pytest.mark.parametrize("name", NAMES)
def test_download_does_not_import_myst_nb(name):
    cells = [c for c in notebook(name).cells if c.cell_type == "code"]
    bad = [c.source for c in cells if "myst_nb" in imported_modules(c.source)]
    assert not bad, f"{name} imports myst_nb, which a reader does not have:\n" + (
        "\n---\n".join(bad)
    )


def _run(command: list[str], log: list[str]) -> None:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    log.append(f"{seconds:6.1f} s  {' '.join(map(str, command))}")
    if done.returncode:
        pytest.fail(
            f"{' '.join(map(str, command))} failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def reader_kernel(tmp_path_factory):
    """A fresh environment with only ``.[notebooks]``; its kernel's folder."""
    if not NOTEBOOKS:
        pytest.fail("No notebook downloads in the build: run `make html` first.")
    home = tmp_path_factory.mktemp("reader")
    venv = home / "venv"
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python]
    pip += ["--disable-pip-version-check", "install", "-q", "--no-compile"]
    log: list[str] = []
    start = time.perf_counter()
    _run([sys.executable, "-m", "venv", "--without-pip", venv], log)
    _run([*pip, TORCH], log)
    _run([*pip, "-e", f"{ROOT}[notebooks]"], log)
    kernels = home / "jupyter"
    _run(
        [python, "-m", "ipykernel", "install", "--prefix", kernels, "--name", KERNEL],
        log,
    )
    log.append(f"{time.perf_counter() - start:6.1f} s  in all")
    report = "\n".join(["fresh notebook environment:", *log])
    print(report)
    if os.environ.get("NOTEBOOK_ENV_LOG"):
        with open(os.environ["NOTEBOOK_ENV_LOG"], "a") as out:
            out.write(report + "\n")
    return {"python": python, "jupyter_path": kernels / "share" / "jupyter"}


def test_reader_environment_is_separate(reader_kernel):
    """The kernel's Python sees neither the build's packages nor the checkout."""
    probe = (
        "import importlib.util as u, os, sys, attention;"
        "print(sys.prefix == sys.base_prefix, u.find_spec('myst_nb') is None,"
        " u.find_spec('sphinx') is None, os.path.dirname(attention.__file__))"
    )
    done = subprocess.run(
        [reader_kernel["python"], "-c", probe],
        capture_output=True,
        text=True,
        cwd=reader_kernel["python"].parents[2],
        check=True,
    )
    in_base, no_myst, no_sphinx, package = done.stdout.split()
    assert (in_base, no_myst, no_sphinx) == ("False", "True", "True")
    assert Path(package) == ROOT / "attention"  # the editable install
    spec = reader_kernel["jupyter_path"] / "kernels" / KERNEL / "kernel.json"
    argv = json.loads(spec.read_text("utf-8"))["argv"]
    assert Path(argv[0]) == reader_kernel["python"], "the kernel is another Python"


@pytest.mark.parametrize("name", NAMES)
def test_download_runs_in_a_fresh_environment(
    name, reader_kernel, tmp_path, monkeypatch
):
    nb = notebook(name)
    # jupyter_client finds kernels through JUPYTER_PATH; only ours is named so.
    monkeypatch.setenv("JUPYTER_PATH", str(reader_kernel["jupyter_path"]))
    workdir = tmp_path / "reader"
    workdir.mkdir()
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(workdir)}},
    )
    start = time.perf_counter()
    failure = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as error:
        failure = ANSI.sub("", str(error))
    if failure:  # outside the except block: no chained traceback above it
        pytest.fail(
            f"{name} fails in a fresh environment with only "
            f'`pip install -e ".[notebooks]"`:\n{failure}',
            pytrace=False,
        )
    print(f"{name}: {time.perf_counter() - start:.1f} s")
    ran = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert ran and all(c.execution_count for c in ran), f"{name}: cells not run"
