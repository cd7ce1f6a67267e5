"""A reader with only the built site runs every notebook it offers.

A fresh virtual environment (no repository, no build packages, no myst-nb)
gets the CPU ``torch`` from this machine's disk (the wheel's requirement alone
would fetch a CUDA build), then exactly the notes' command, ``pip install
"attention-<version>-py3-none-any.whl[notebooks]"``, with the site's wheel
alone in the folder. Every English download runs there with nbclient; every
other edition's download must run the same tokens (comments aside) with the
same metadata, so running it too would prove nothing more.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from conftest import EDITION_FOLDERS, ROOT, build_dir
from i18n_code import code_tokens
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement

pytestmark = [pytest.mark.site, pytest.mark.slow]

KERNEL = "attention-reader"
# The CPU build on this machine's disk; pip checks it against the wheel's range.
TORCH = "torch==2.13.0"
CELL_TIMEOUT = 600  # seconds; the slowest cell of the book takes under a minute
WORKERS = 2  # notebooks run at a time: one per core
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
WHEEL = f"attention-{VERSION}-py3-none-any.whl"
ARCHIVE = f"attention-book-code-{VERSION}.zip"


def offered_files(html: Path, suffix: str) -> dict[str, Path]:
    """``{"3-5-causal-attention.ipynb": <file>}`` for the edition's download links.

    The edition's own pages only: another edition's folder is not searched.
    """
    found: dict[str, Path] = {}
    for page in sorted(html.rglob("*.html")):
        top = page.relative_to(html).parts[0]
        if top in {"_static", "_modules"} or top in EDITION_FOLDERS.values():
            continue
        soup = BeautifulSoup(page.read_text("utf-8"), "html.parser")
        for link in soup.select(f"a[href$='{suffix}']"):
            href = link["href"].split("#", 1)[0]
            found[Path(href).name] = (page.parent / href).resolve()
    return found


def edition_html(edition: str) -> Path:
    return build_dir() / "html" / EDITION_FOLDERS[edition]


def executed_notebooks(edition: str) -> list[str]:
    """``en/3-5-causal-attention.ipynb`` for each notebook myst-nb executed for
    the edition: the names its pages must offer, found without parsing a page."""
    folder = build_dir() if edition == "en" else build_dir() / edition
    names = (p.name for p in (folder / "jupyter_execute").rglob("*.ipynb"))
    return sorted(f"{edition}/{name}" for name in names)


@functools.cache
def downloads() -> dict[str, Path]:
    """``{"en/3-5-causal-attention.ipynb": <file>}``: every edition's downloads,
    read from the built pages once, when a test first asks."""
    return {
        f"{edition}/{name}": path
        for edition in EDITION_FOLDERS
        for name, path in offered_files(edition_html(edition), ".ipynb").items()
    }


# With no build there is nothing to parametrize over; one case that fails
# says so (a missing build is a failure, never a skip).
RUN = executed_notebooks("en") or [
    "<no notebooks found>"
]  # they run in the reader's kernel
# The other editions' downloads, each proven to run the English code.
TRANSLATED = [
    name
    for edition in EDITION_FOLDERS
    if edition != "en"
    for name in executed_notebooks(edition)
] or ["<no notebooks found>"]


def _notebook(name: str) -> nbformat.NotebookNode:
    if name not in downloads():
        pytest.fail(
            f"{name} is not offered for download in {build_dir() / 'html'}: run "
            "`make html` first (or set BUILDDIR).",
            pytrace=False,
        )
    return nbformat.read(downloads()[name], as_version=4)


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


def test_every_executed_page_offers_its_notebook_in_both_editions(site):
    executed = {p.docname.rsplit("/", 1)[-1] for p in site.pages if p.is_notebook}
    assert executed, "no page was executed by myst-nb"
    offered = {n.split("/", 1)[1] for n in downloads() if n.startswith(site.edition)}
    assert offered == {f"{name}.ipynb" for name in executed}


def test_the_notes_offer_one_wheel_of_this_version(site):
    wheels = offered_files(site.html, ".whl")
    assert list(wheels) == [WHEEL], wheels
    assert wheels[WHEEL].is_file()


def test_the_archive_holds_every_download_and_the_wheel(site):
    """The front page's archive: the same bytes as the page downloads."""
    archives = offered_files(site.html, ".zip")
    assert list(archives) == [ARCHIVE], archives
    with zipfile.ZipFile(archives[ARCHIVE]) as archive:
        names = archive.namelist()
        assert WHEEL in names
        wheel = offered_files(site.html, ".whl")[WHEEL]
        assert archive.read(WHEEL) == wheel.read_bytes()
        notebooks = {Path(n).name: n for n in names if n.endswith(".ipynb")}
        prefix = f"{site.edition}/"
        offered = {
            n[len(prefix) :]: p for n, p in downloads().items() if n.startswith(prefix)
        }
        assert set(notebooks) == set(offered)
        for name, path in offered.items():
            assert archive.read(notebooks[name]) == path.read_bytes(), name


@pytest.mark.parametrize("name", RUN + TRANSLATED)
def test_download_does_not_import_myst_nb(name):
    cells = [c for c in _notebook(name).cells if c.cell_type == "code"]
    bad = [c.source for c in cells if "myst_nb" in imported_modules(c.source)]
    assert not bad, f"{name} imports myst_nb, which a reader does not have:\n" + (
        "\n---\n".join(bad)
    )


@pytest.mark.parametrize("name", TRANSLATED)
def test_translated_download_runs_the_english_code(name):
    """Same cells, same tokens, same metadata: what the English run proves
    holds for this download (a translated string or a broken comment fails)."""
    translated = _notebook(name)
    english = _notebook("en/" + name.split("/", 1)[1])
    nbformat.validate(translated)
    assert translated.metadata == english.metadata, name

    def code(notebook):
        return [c.source for c in notebook.cells if c.cell_type == "code"]

    assert len(code(translated)) == len(code(english)), name
    for i, (ours, theirs) in enumerate(
        zip(code(translated), code(english), strict=True)
    ):
        assert code_tokens(ours) == code_tokens(theirs), (
            f"{name}, code cell {i}: runs other code than the English one:\n"
            f"{ours}\n--- English:\n{theirs}"
        )


def _run(command: list, log: list[str], cwd: Path) -> None:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - start
    log.append(f"{seconds:6.1f} s  {' '.join(map(str, command))}")
    if done.returncode:
        pytest.fail(
            f"{' '.join(map(str, command))} failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """A fresh environment made as the notes say, from the site's wheel alone."""
    wheels = offered_files(edition_html("en"), ".whl")
    if WHEEL not in wheels:
        pytest.fail(f"No {WHEEL} offered in {build_dir() / 'html'}: run `make html`.")
    home = tmp_path_factory.mktemp("reader")
    downloads = home / "downloads"  # what the reader saved: the wheel, nothing else
    downloads.mkdir()
    shutil.copy(wheels[WHEEL], downloads / WHEEL)
    venv = home / "venv"
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python]
    pip += ["--disable-pip-version-check", "install", "-q", "--no-compile"]
    log: list[str] = []
    start = time.perf_counter()
    _run([sys.executable, "-m", "venv", "--without-pip", venv], log, home)
    _run([*pip, TORCH], log, home)
    _run([*pip, f"{WHEEL}[notebooks]"], log, downloads)  # the notes' command
    kernels = home / "jupyter"
    command = [python, "-m", "ipykernel", "install", "--prefix", kernels]
    _run([*command, "--name", KERNEL], log, home)
    log.append(f"{time.perf_counter() - start:6.1f} s  in all")
    print("\n".join(["fresh reader environment:", *log]))
    return {"python": python, "jupyter_path": kernels / "share" / "jupyter"}


def test_the_reader_environment_has_the_wheel_not_the_repository(reader):
    probe = (
        "import importlib.util as u, sys, attention, attention.bench;"
        "print(sys.prefix == sys.base_prefix, u.find_spec('myst_nb') is None,"
        " u.find_spec('sphinx') is None, attention.__file__)"
    )
    done = subprocess.run(
        [reader["python"], "-c", probe],
        capture_output=True,
        text=True,
        cwd=reader["python"].parents[2],
        check=True,
    )
    in_base, no_myst, no_sphinx, package = done.stdout.split()
    assert (in_base, no_myst, no_sphinx) == ("False", "True", "True")
    assert "site-packages" in Path(package).parts, package
    assert ROOT not in Path(package).parents, "the repository's package was imported"
    spec = reader["jupyter_path"] / "kernels" / KERNEL / "kernel.json"
    argv = json.loads(spec.read_text("utf-8"))["argv"]
    assert Path(argv[0]) == reader["python"], "the kernel is another Python"


def run_notebook(path: Path, jupyter_path: Path, workdir: Path) -> tuple[str, float]:
    """Run one notebook in the reader's kernel; ``("", seconds)`` when it passes.

    Called in a worker process: the environment variable is the process's own.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    os.environ["JUPYTER_PATH"] = str(jupyter_path)
    workdir.mkdir(parents=True)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(workdir)}},
    )
    start = time.perf_counter()
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as error:
        return ANSI.sub("", str(error)) or type(error).__name__, 0.0
    ran = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    if not ran or not all(c.execution_count for c in ran):
        return "cells were not run", 0.0
    return "", time.perf_counter() - start


@pytest.fixture(scope="module")
def runs(reader, tmp_path_factory):
    """Every English download, run two at a time: name -> (failure, s)."""
    work = tmp_path_factory.mktemp("runs")
    start = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        futures = {
            name: pool.submit(
                run_notebook,
                downloads()[name],
                reader["jupyter_path"],
                work / name.replace("/", "-"),
            )
            for name in RUN
            if name in downloads()
        }
        results = {name: future.result() for name, future in futures.items()}
    print(
        f"{len(results)} downloads in {time.perf_counter() - start:.1f} s, "
        f"{WORKERS} at a time"
    )
    return results


@pytest.mark.parametrize("name", RUN)
def test_download_runs_in_a_fresh_environment(name, runs):
    if name not in runs:
        _notebook(name)  # fails with the reason: no build
    failure, seconds = runs[name]
    if failure:
        pytest.fail(
            f"{name} fails in a fresh environment with only "
            f'`pip install "{WHEEL}[notebooks]"`:\n{failure}',
            pytrace=False,
        )
    print(f"{name}: {seconds:.1f} s")
