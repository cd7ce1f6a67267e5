"""The wheel readers download holds the whole package.

The site offers the wheel, and every notebook imports from it; an editable
install (what the other tests use) reads ``attention/`` in place and would
hide a subpackage or data file that the wheel leaves out. So this test builds
the wheel the way ``make html`` does and compares its file list with the
package's files on disk. The wheel is built from the sdist, so a file the
sdist leaves out is missing from the wheel too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def package_files(root: Path) -> set[str]:
    """Every file of ``attention/`` a wheel must ship, as wheel paths."""
    return {
        path.relative_to(root).as_posix()
        for path in (root / "attention").rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix not in {".pyc", ".pyo"}
    }


def missing_from(wheel_names: list[str], expected: set[str]) -> set[str]:
    """The expected files that the wheel's list leaves out.

    >>> sorted(missing_from(["attention/a.py"], {"attention/a.py", "attention/b/c.py"}))
    ['attention/b/c.py']
    """
    return expected - set(wheel_names)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources that ``pyproject.toml`` uses.

    A copy, because setuptools reads what an earlier build left in the
    checkout (``attention.egg-info/SOURCES.txt`` lists every file it saw),
    and that list can fill the gaps a broken package discovery leaves.
    """
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "attention",
        source / "attention",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    out = tmp_path_factory.mktemp("dist")
    # As `make html` builds it: the sdist first, then the wheel from the
    # unpacked sdist.
    command = [
        sys.executable, "-m", "build", "--no-isolation",
        "--outdir", str(out), str(source),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=source)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (built,) = out.glob("attention-*.whl")
    return built


def test_the_wheel_holds_every_module_and_data_file_of_the_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    expected = package_files(ROOT)
    assert "attention/bench/__init__.py" in expected  # the subpackage exists
    assert any(name.startswith("attention/_data/") for name in expected)
    missing = missing_from(names, expected)
    assert not missing, f"files of attention/ missing from {wheel.name}: {missing}"


def test_the_wheel_holds_nothing_but_the_package_and_its_metadata(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    strays = [
        name
        for name in names
        if not name.startswith("attention/")
        and not name.startswith(wheel.name.split("-py3")[0] + ".dist-info/")
    ]
    assert not strays, f"{wheel.name} ships files outside the package: {strays}"


def test_the_wheel_declares_the_notebooks_extra(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith("/METADATA")]
        text = archive.read(metadata).decode()
    assert "Provides-Extra: notebooks" in text
    assert "Requires-Dist: torch" in text
