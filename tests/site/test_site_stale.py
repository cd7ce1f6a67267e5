"""Outputs never go stale, and two clean builds print the same outputs.

A page that imports ``attention`` depends on the package's files, and myst-nb's
cache is kept per package digest: a package change re-reads and re-runs exactly
those pages, a prose edit re-reads its page from the cache, and the 简体中文
edition, built after each English build, shows the same outputs and executes
nothing. Proven on a copy of the project (real conf.py, package, extensions)
with the reduced book of ``tests/roots/stale-book``, built several times with
the Makefile's options; Sphinx's log says what was read and executed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from compare_builds import compare
from conftest import ROOT, build_dir

pytestmark = pytest.mark.slow

PYTHON = ROOT / ".venv" / "bin" / "python"
# The Makefile's commands: sphinx-build -b html -c . -d <doctrees> -n -W
# --keep-going -j 2 with one execution cache for both editions, for English
# (under book/_kernel/warm.py) and then for the Chinese edition, with one
# torch thread per kernel. (The Makefile names the cache with an absolute
# path; here every command runs in the project's folder.)
OPTIONS = ["-n", "-W", "--keep-going", "-j", "2"]
OPTIONS += ["-D", "nb_execution_cache_path=_build/jupyter_cache"]
SPHINX = ["-m", "sphinx", "-b", "html", "-c", ".", "-d", "_build/doctrees"]
SPHINX += [*OPTIONS, "book", "_build/html"]
SPHINX_ZH = ["-m", "sphinx", "-b", "html", "-c", ".", "-d", "_build/doctrees-zh_CN"]
SPHINX_ZH += ["-D", "language=zh_CN", *OPTIONS, "book", "_build/zh_CN/html"]
# Prose pages, so that each reading process of a clean build gets a range of
# pages, as in the real book; the later steps then show that the dependencies
# each process noted reached the main one.
PROSE_PAGES = [f"prose-{i}" for i in range(1, 5)]

# The reduced book (tests/roots/stale-book): a page that imports the package
# (a seeded cell, a tagged timing), one that does not (a print cut by a pause,
# a slow print, a Matplotlib SVG), and the index; plus the prose pages.
STALE_BOOK = ROOT / "tests" / "roots" / "stale-book"
# Appended to the copy's attention/data.py; the test edits the returned word.
PROBE = '\n\ndef stale_probe() -> str:\n    return "{}"\n'

_ENVIRONMENT = re.compile(
    r"updating environment: (?:\[.*?\] )?(\d+) added, (\d+) changed"
)
_READING = re.compile(r"^reading sources\.\.\. \[\s*\d+%\] (\S+)", re.MULTILINE)
# In a parallel read, a line per process: "reading sources... [ 33%] a .. c".
_READ_IN_PARALLEL = re.compile(
    r"^reading sources\.\.\. \[\s*\d+%\] \S+ \.\. \S+$", re.MULTILINE
)
_EXECUTING = re.compile(r"^(\S+)\.md: Executing notebook", re.MULTILINE)


class Build:
    """What one sphinx-build run did, from its log, and the HTML it left."""

    def __init__(self, project: Path, log: str, edition: str = "en"):
        self.log = log
        counts = _ENVIRONMENT.search(log)
        assert counts, f"no 'updating environment' line in the log:\n{log}"
        self.added, self.changed = int(counts.group(1)), int(counts.group(2))
        self.read = set(_READING.findall(log))
        book = (project / "book").as_posix() + "/"
        self.executed = {p.removeprefix(book) for p in _EXECUTING.findall(log)}
        build = project / "_build" / ("" if edition == "en" else edition)
        self.outputs = build / "jupyter_execute"
        html = build / "html"
        self.html = {p.stem: p.read_text("utf-8") for p in html.glob("*.html")}
        self.zh: Build | None = None  # the Chinese build that followed


def make_project(folder: Path) -> Path:
    """A copy of the project with the reduced book, the probe saying "alpha"."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "attention", folder / "attention", ignore=ignore)
    for part in ("_ext", "_kernel", "_static", "_templates"):  # no pages
        shutil.copytree(ROOT / "book" / part, folder / "book" / part, ignore=ignore)
    for name in ("conf.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, folder / name)
    # The wheel and sdist the pages offer: make html built them before Sphinx.
    shutil.copytree(build_dir() / "dist", folder / "_build" / "dist")
    shutil.copytree(STALE_BOOK, folder / "book", dirs_exist_ok=True)
    for name in PROSE_PAGES:
        (folder / "book" / f"{name}.md").write_text(f"# {name}\n\nNo code here.\n")
    set_probe(folder, "alpha")
    return folder


def set_probe(project: Path, word: str) -> None:
    data = project / "attention" / "data.py"
    original = (ROOT / "attention" / "data.py").read_text("utf-8")
    data.write_text(original + PROBE.format(word), "utf-8")


def sphinx(project: Path, command: list[str] = SPHINX) -> subprocess.Popen:
    """Start one of the Makefile's sphinx-build commands in ``project``."""
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    # The English build runs under warm.py, which forks its kernels.
    warm = ["book/_kernel/warm.py", str(python)] if command is SPHINX else []
    env = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    env["OMP_NUM_THREADS"] = "1"
    # The kernel must import the copy's package, not the editable install.
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(project), env.get("PYTHONPATH")])
    )
    return subprocess.Popen(
        [str(python), *warm, *command],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(project: Path, process: subprocess.Popen, edition: str = "en") -> Build:
    log, _ = process.communicate(timeout=300)
    assert process.returncode == 0, f"sphinx-build failed in {project}:\n{log}"
    return Build(project, log, edition)


def build(project: Path) -> Build:
    """The English build, then the Chinese one (kept as ``.zh``), as make does."""
    english = finish(project, sphinx(project))
    english.zh = finish(project, sphinx(project, SPHINX_ZH), "zh_CN")
    return english


def build_step_by_step(project: Path, snapshot: Path) -> dict[str, Build]:
    """Build, rebuild, change the package, revert it, edit a page: log each."""
    steps = {"clean": build(project)}
    # Keep the clean build's notebooks: the next steps execute some again.
    steps["clean"].outputs = Path(shutil.copytree(steps["clean"].outputs, snapshot))
    steps["unchanged"] = build(project)
    set_probe(project, "beta")
    steps["package changed"] = build(project)
    set_probe(project, "alpha")
    steps["package reverted"] = build(project)
    page = project / "book" / "no-package.md"
    page.write_text(page.read_text("utf-8").replace("6 * 7", "6 * 8"))
    steps["page edited"] = build(project)
    prose = project / "book" / "uses-package.md"
    text = prose.read_text("utf-8").replace("A seeded cell:", "A seeded cell, as ever:")
    prose.write_text(text)
    steps["prose edited"] = build(project)
    return steps


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Build]:
    project = make_project(tmp_path_factory.mktemp("book"))
    twin = make_project(tmp_path_factory.mktemp("twin"))
    twin_build = sphinx(twin)  # a second clean English build, beside the steps
    try:
        snapshot = tmp_path_factory.mktemp("clean") / "jupyter_execute"
        steps = build_step_by_step(project, snapshot)
    except BaseException:
        twin_build.kill()
        raise
    steps["twin"] = finish(twin, twin_build)
    return steps


U, N = "uses-package", "no-package"
# Each step of build_step_by_step: the pages its English build reads (the clean
# build reads every page, in two processes) and executes, the probe's word it
# shows and the answer no-package prints.
STEPS = {
    "clean": (None, {U, N}, "alpha", 42),
    "unchanged": (set(), set(), "alpha", 42),
    "package changed": ({U}, {U}, "beta", 42),
    "package reverted": ({U}, {U}, "alpha", 42),
    "page edited": ({N}, {N}, "alpha", 48),
    "prose edited": ({U}, set(), "alpha", 48),
}


@pytest.mark.parametrize("step", STEPS)
def test_each_step_reads_and_executes_only_what_changed(builds, step):
    """The Chinese build after it re-reads the same pages, executes nothing and
    shows the same outputs: a package change reaches it."""
    read, executed, word, answer = STEPS[step]
    english, chinese = builds[step], builds[step].zh
    assert read is None or english.read == read, english.log
    assert english.executed == executed, english.log
    assert chinese.executed == set(), chinese.log
    assert chinese.read == english.read, chinese.log
    other = "beta" if word == "alpha" else "alpha"
    for html in (english.html, chinese.html):
        assert f"probe says {word}" in html[U], step
        assert f"probe says {other}" not in html[U], step
        assert f"the answer is {answer}" in html[N], step


def test_clean_build_reads_every_page_in_two_processes(builds):
    clean = builds["clean"]
    assert (clean.added, clean.changed) == (3 + len(PROSE_PAGES), 0), clean.log
    assert _READ_IN_PARALLEL.search(clean.log), clean.log


def test_rebuild_without_changes_executes_nothing(builds):
    unchanged = builds["unchanged"]
    assert (unchanged.added, unchanged.changed) == (0, 0), unchanged.log
    assert "Executing notebook" not in unchanged.log


def test_package_change_leaves_the_other_page_as_it_was(builds):
    no_package = builds["package changed"].html[N]
    assert no_package == builds["unchanged"].html[N]


def test_editing_prose_uses_the_cached_notebook(builds):
    edited = builds["prose edited"]
    assert "Using cached notebook" in edited.log
    assert "as ever" in edited.html[U]


def test_prints_are_neither_cut_nor_repeated(builds):
    """A slow print stays on one line, and the download has it once.

    myst-nb merges the streams (``nb_merge_streams``) and
    ``drop_merged_streams`` in book/_ext/downloads.py keeps them once.
    """
    for name in ("clean", "twin"):
        notebook = json.loads((builds[name].outputs / "no-package.ipynb").read_text())
        printed = "".join(
            "".join(output.get("text", ""))
            for cell in notebook["cells"]
            for output in cell.get("outputs", [])
        )
        assert printed.count("after the pause") == 1, printed
        assert "one line, and slow\n" in printed, printed
        assert "one line, and slow" in builds[name].html["no-package"]


def test_two_clean_builds_execute_to_the_same_outputs(builds):
    first, second = builds["clean"].outputs, builds["twin"].outputs
    assert compare(first, second) == []
    # The comparison does look at outputs: without the tag, the timing differs.
    differences = compare(first, second, ignore_tags=())
    assert len(differences) == 1, differences
    assert "uses-package.ipynb, code cell 3" in differences[0]
