"""A reader with only the built site runs every notebook it offers.

A fresh virtual environment (no repository, no build packages, no myst-nb)
gets the CPU ``torch`` from this machine's disk (the wheel's requirement alone
would fetch a CUDA build), then exactly the notes' command, ``pip install
"attention-<version>-py3-none-any.whl[notebooks]"``, with the site's wheel
alone in the folder. Every English download runs there with nbclient; every
other edition's download must run the same tokens (comments aside) with the
same metadata, so running it too would prove nothing more. The wheel itself
must hold the whole package: the unit tests' editable install reads
``attention/`` in place and would hide a module or data file it leaves out.
The source archive (sdist) the front page offers runs its own tests where it
is unpacked: the modules and fixtures they import are in it (MANIFEST.in).
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
import tarfile
import time
import tomllib
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest
from conftest import (
    EDITION_FOLDERS,
    ROOT,
    VERSION,
    WHEEL,
    assert_none,
    build_dir,
    cores_per_worker,
    load_site,
)
from i18n_code import code_tokens
from notebook_i18n import speak_edition
from packaging.requirements import Requirement

pytestmark = [pytest.mark.site, pytest.mark.slow]

KERNEL = "attention-reader"
# The CPU build on this machine's disk; pip checks it against the wheel's range.
TORCH = "torch==2.13.0"
CELL_TIMEOUT = 600  # seconds; the slowest cell of the book takes under a minute
WORKERS = cores_per_worker()  # notebooks run at a time: one per core it may use
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks
ARCHIVE = f"attention-book-code-{VERSION}.zip"
SDIST = f"attention-{VERSION}.tar.gz"


def offered_files(edition: str, suffix: str) -> dict[str, Path]:
    """``{"3-5-causal-attention.ipynb": <file>}`` for the edition's download links."""
    return {
        Path(link["href"].split("#", 1)[0]).name: page.resolve(link["href"])
        for page in load_site(edition).pages
        if not page.rel.startswith("_modules/")
        for link in page.soup.select(f"a[href$='{suffix}']")
    }


def executed_notebooks(*editions: str) -> list[str]:
    """``en/3-5-causal-attention.ipynb`` for each notebook myst-nb executed for
    the editions: the names their pages must offer, found without parsing a
    page. With no build, one name that fails (a failure, never a skip)."""
    folders = {
        e: build_dir() / EDITION_FOLDERS[e] / "jupyter_execute" for e in editions
    }
    names = [f"{e}/{p.name}" for e, f in folders.items() for p in f.rglob("*.ipynb")]
    return sorted(names) or ["<no notebooks found>"]


@functools.cache
def downloads() -> dict[str, Path]:
    """``{"en/3-5-causal-attention.ipynb": <file>}``: every edition's downloads,
    read from the built pages once, when a test first asks."""
    return {
        f"{edition}/{name}": path
        for edition in EDITION_FOLDERS
        for name, path in offered_files(edition, ".ipynb").items()
    }


RUN = executed_notebooks("en")  # they run in the reader's kernel
# The other editions' downloads, each proven to run the English code.
TRANSLATED = executed_notebooks(*(e for e in EDITION_FOLDERS if e != "en"))
# One of them runs too: its exercise graders must answer in its language. The
# padding page's is one of the quickest (under 2 s of cells).
SPOKEN = [name for name in TRANSLATED if name.endswith("/padding.ipynb")]
# What a grader prints for a stub, in each edition (attention.exercises).
NOT_YET = {"en": "Not yet: ", "zh_CN": "还没有完成："}


def _notebook(name: str) -> nbformat.NotebookNode:
    if name not in downloads():
        pytest.fail(
            f"{name} is not offered for download in {build_dir() / 'html'}: run "
            "`make html` first (or set BUILDDIR).",
            pytrace=False,
        )
    return nbformat.read(downloads()[name], as_version=4)


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
    """Every page with code cells was executed, and only those pages offer a
    notebook: their own (test_site_browser.py opens each), under a note with
    the install command and links to the wheel and the archive."""
    executed = {p.docname.rsplit("/", 1)[-1]: p for p in site.pages if p.is_notebook}
    not_run = [p.docname for p in site.book_pages if p.has_cells and not p.is_notebook]
    assert executed and not not_run, f"not executed in {site.notebooks}: {not_run}"
    offered = {n.split("/", 1)[1] for n in downloads() if n.startswith(site.edition)}
    assert offered == {f"{name}.ipynb" for name in executed}
    install = f'pip install "{WHEEL}[notebooks]"'

    def note_problems(name, page):
        link = page.article.select_one("a.download[href$='.ipynb']")
        if link is None or Path(link["href"]).name != f"{name}.ipynb":
            yield f"{page.rel}: its link does not serve {name}.ipynb"
            return
        note = link.find_parent("div", class_="nb-download-tip")
        if note is None or install not in note.get_text():
            yield f"{page.rel}: the download note lacks {install}"
            return
        for suffix in (".whl", ".zip"):
            found = [a for a in note.select("a") if a["href"].endswith(suffix)]
            if len(found) != 1 or not page.resolve(found[0]["href"]).is_file():
                yield f"{page.rel}: the note's {suffix} link is broken"

    problems = (p for name, page in executed.items() for p in note_problems(name, page))
    assert_none(problems, "notebook downloads and their notes")


@pytest.fixture(scope="module")
def wheel() -> Path:
    """The wheel the English pages offer (``make html`` built it)."""
    if WHEEL not in (wheels := offered_files("en", ".whl")):
        pytest.fail(f"No {WHEEL} offered in {build_dir() / 'html'}: run `make html`.")
    return wheels[WHEEL]


def test_the_wheel_holds_every_module_and_data_file_of_the_package(wheel):
    package = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "attention").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
        if path.suffix not in {".pyc", ".pyo"}
    }
    assert "attention/bench/__init__.py" in package  # the subpackage exists
    assert any(name.startswith("attention/_data/") for name in package)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not package - names, f"missing from {wheel.name}: {package - names}"
    info = f"{WHEEL.split('-py3')[0]}.dist-info/"
    strays = [n for n in names if not n.startswith(("attention/", info))]
    assert not strays, f"{wheel.name} ships files outside the package: {strays}"
    (metadata,) = [n for n in names if n.endswith("/METADATA")]
    metadata = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: notebooks" in metadata
    assert "Requires-Dist: torch" in metadata


def test_the_archive_holds_every_download_and_the_one_wheel(site):
    """The front page's archive: the same bytes as the page downloads and as
    the one wheel the pages offer, this version's."""
    archives, wheels = (offered_files(site.edition, s) for s in (".zip", ".whl"))
    assert list(archives) == [ARCHIVE], archives
    assert list(wheels) == [WHEEL], wheels
    with zipfile.ZipFile(archives[ARCHIVE]) as archive:
        names = archive.namelist()
        assert WHEEL in names
        assert archive.read(WHEEL) == wheels[WHEEL].read_bytes()
        notebooks = {Path(n).name: n for n in names if n.endswith(".ipynb")}
        offered = offered_files(site.edition, ".ipynb")
        assert set(notebooks) == set(offered)
        for name, path in offered.items():
            assert archive.read(notebooks[name]) == path.read_bytes(), name


@pytest.mark.parametrize("name", TRANSLATED)
def test_translated_download_runs_the_english_code(name):
    """Same cells, same tokens, same outputs, same metadata: what the English
    run proves holds for this download (a translated string or a broken comment
    fails)."""
    translated = _notebook(name)
    english = _notebook("en/" + name.split("/", 1)[1])
    edition = name.split("/", 1)[0]
    nbformat.validate(translated)
    assert translated.metadata == english.metadata, name
    kinds = [[c.cell_type for c in nb.cells] for nb in (translated, english)]
    assert kinds[0] == kinds[1], name
    for i, (ours, theirs) in enumerate(
        zip(translated.cells, english.cells, strict=True)
    ):
        if ours.cell_type == "code":
            # The one change: the exercise graders speak the edition's language.
            theirs_here = speak_edition(theirs.source, edition)
            assert code_tokens(ours.source) == code_tokens(theirs_here), (
                f"{name}, cell {i}: runs other code than the English one:\n"
                f"{ours.source}\n--- English:\n{theirs.source}"
            )
            assert ours.outputs == theirs.outputs, f"{name}, cell {i}: other outputs"


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
def reader(tmp_path_factory, wheel):
    """A fresh environment made as the notes say, from the site's wheel alone."""
    home = tmp_path_factory.mktemp("reader")
    downloads = home / "downloads"  # what the reader saved: the wheel, nothing else
    downloads.mkdir()
    shutil.copy(wheel, downloads / WHEEL)
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


def run_notebook(
    path: Path, jupyter_path: Path, workdir: Path
) -> tuple[str, float, list[tuple[bool, str]]]:
    """Run one notebook in the reader's kernel; ``("", seconds, verdicts)``
    when it passes. ``verdicts``: for each cell that calls an exercise's
    grader, whether the cell is a folded solution, and what it printed and
    returned.

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
        return ANSI.sub("", str(error)) or type(error).__name__, 0.0, []
    ran = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    if not ran or not all(c.execution_count for c in ran):
        return "cells were not run", 0.0, []
    return (
        "",
        time.perf_counter() - start,
        [_verdict(c) for c in ran if calls_grader(c)],
    )


def calls_grader(cell) -> bool:
    """A cell that calls an exercise's grader, ``check("name", fn)``."""
    return re.search(r"^check\(", cell.source, re.MULTILINE) is not None


def _verdict(cell) -> tuple[bool, str]:
    folded = cell.metadata.get("jupyter", {}).get("source_hidden", False)
    said = []
    for output in cell.outputs:
        if output.output_type == "stream":
            said.append(output.text)
        elif "text/plain" in output.get("data", {}):
            said.append(output.data["text/plain"])
    return folded, "".join(said)


@pytest.fixture(scope="module")
def runs(reader, tmp_path_factory):
    """Every English download, ``WORKERS`` at a time: name -> (failure, s)."""
    work = tmp_path_factory.mktemp("runs")
    names = [name for name in RUN + SPOKEN if name in downloads()]
    start = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        outcomes = pool.map(
            run_notebook,
            [downloads()[name] for name in names],
            [reader["jupyter_path"]] * len(names),
            [work / name.replace("/", "-") for name in names],
        )
        results = dict(zip(names, outcomes, strict=True))
    print(
        f"{len(results)} downloads in {time.perf_counter() - start:.1f} s, "
        f"{WORKERS} at a time"
    )
    return results


@pytest.mark.parametrize("name", RUN)
def test_download_runs_in_a_fresh_environment(name, runs):
    if name not in runs:
        _notebook(name)  # fails with the reason: no build
    failure, seconds, _ = runs[name]
    if failure:
        pytest.fail(
            f"{name} fails in a fresh environment with only "
            f'`pip install "{WHEEL}[notebooks]"`:\n{failure}',
            pytrace=False,
        )
    print(f"{name}: {seconds:.1f} s")


@pytest.mark.parametrize("name", RUN + SPOKEN)
def test_exercises_say_not_yet_then_the_solution_passes(name, runs):
    """Run top to bottom, as a reader runs it before writing anything: each
    grader after an unfilled stub says "not yet" (and returns False), in the
    notebook's language, and each grader in a folded solution returns True."""
    if name not in runs:
        _notebook(name)  # fails with the reason: no build
    failure, _, verdicts = runs[name]
    assert not failure, f"{name} did not run: see test_download_runs..."
    graded_exercise = any(calls_grader(c) for c in _notebook(name).cells)
    assert bool(verdicts) == graded_exercise, name
    edition = name.split("/", 1)[0]
    for folded, said in verdicts:
        if folded:  # the cell may print more first; check's verdict comes last
            last = said.strip().splitlines()[-1] if said.strip() else ""
            assert last == "True", f"{name}: a solution fails:\n{said}"
            assert "Not yet" not in said and "Wrong in" not in said, said
        else:
            assert said.startswith(NOT_YET[edition]), f"{name}: a stub says:\n{said}"
            assert said.rstrip().endswith("False"), said


@pytest.fixture(scope="module")
def unpacked_sdist(tmp_path_factory) -> Path:
    """The source archive the English front page offers, unpacked."""
    sdists = offered_files("en", ".tar.gz")
    if SDIST not in sdists:
        pytest.fail(f"No {SDIST} offered in {build_dir() / 'html'}: run `make html`.")
    where = tmp_path_factory.mktemp("sdist")
    with tarfile.open(sdists[SDIST]) as archive:
        archive.extractall(where, filter="data")
    return where / SDIST.removesuffix(".tar.gz")


def _local_imports(path: Path) -> set[str]:
    """The modules a test file imports that are files (or packages) of tests/."""
    tree = ast.parse(path.read_text("utf-8"))
    names = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    names |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
    }
    tests = ROOT / "tests"
    return {
        n
        for n in names
        if (tests / f"{n}.py").is_file() or (tests / n / "__init__.py").is_file()
    }


def test_the_source_archive_holds_what_its_tests_import(unpacked_sdist):
    """Every shipped test's own helper modules, conftest.py and the class
    test_contract_catches.py loads by path are in the archive."""
    tests = unpacked_sdist / "tests"
    shipped = sorted(tests.glob("test_*.py"))
    assert len(shipped) >= 10, f"the archive ships {len(shipped)} test files"
    needed = {"conftest", "outside_variant"}
    needed |= {name for test in shipped for name in _local_imports(test)}
    # What the pages send readers to, and the exercises' answers.
    assert {"table", "helpers", "answers"} <= needed, needed
    missing = sorted(
        n
        for n in needed
        if not ((tests / f"{n}.py").is_file() or (tests / n / "__init__.py").is_file())
    )
    assert not missing, f"{SDIST} lacks tests/{missing} that its tests import"


def test_the_source_archive_runs_its_tests(unpacked_sdist):
    """The shipped tests pass in the unpacked folder, on its own ``attention``
    (not the repository's editable install), with this environment's pytest."""
    env = {**os.environ, "PYTHONPATH": str(unpacked_sdist), "OMP_NUM_THREADS": "1"}
    env.pop("HYPOTHESIS_PROFILE", None)  # the quick profile: a few examples
    probe = [sys.executable, "-c", "import attention; print(attention.__file__)"]
    found = subprocess.run(
        probe, cwd=unpacked_sdist, env=env, capture_output=True, text=True, check=True
    )
    assert Path(found.stdout.strip()).is_relative_to(unpacked_sdist), found.stdout
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-n", str(WORKERS), "--dist", "worksteal", "attention", "tests"]
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=unpacked_sdist, env=env, capture_output=True, text=True
    )
    summary = done.stdout.strip().splitlines()[-1:] or [done.stderr[-500:]]
    print(f"{SDIST}'s tests: {summary[0]} ({time.perf_counter() - start:.0f} s)")
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert " passed" in summary[0] and "error" not in summary[0], summary
