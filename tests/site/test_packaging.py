"""The wheel readers download holds the whole package.

The site offers the wheel that ``make html`` builds into ``$BUILDDIR/dist``,
and every notebook imports from it; an editable install (what the unit tests
use) reads ``attention/`` in place and would hide a subpackage or data file
that the wheel leaves out. So these tests open that wheel and compare its
file list with the package's files on disk.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, build_dir

pytestmark = pytest.mark.site


def package_files(root: Path) -> set[str]:
    """Every file of ``attention/`` a wheel must ship, as wheel paths."""
    return {
        path.relative_to(root).as_posix()
        for path in (root / "attention").rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix not in {".pyc", ".pyo"}
    }


@pytest.fixture(scope="module")
def wheel() -> Path:
    """The wheel ``make html`` built (a missing one fails: run ``make html``)."""
    wheels = sorted((build_dir() / "dist").glob("attention-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {build_dir() / 'dist'}: {wheels}"
    return wheels[0]


def test_the_wheel_holds_every_module_and_data_file_of_the_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    expected = package_files(ROOT)
    assert "attention/bench/__init__.py" in expected  # the subpackage exists
    assert any(name.startswith("attention/_data/") for name in expected)
    missing = expected - set(names)
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
