"""The README's map of the repository names every module it has."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _map() -> str:
    """The code block under "How the repository is laid out"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How the repository is laid out", 1)[1]
    return section.split("```", 2)[1]


def _modules(folder: str) -> list[str]:
    here = ROOT / folder
    files = [p.name for p in here.glob("*.py") if p.name != "__init__.py"]
    packages = [f"{p.name}/" for p in here.iterdir() if (p / "__init__.py").exists()]
    return sorted(files + packages)


def test_every_module_of_the_package_and_the_extensions_is_on_the_map():
    drawn = set(re.findall(r"[\w.-]+/?", _map()))
    missing = [
        f"{folder}/{name}"
        for folder in ("attention", "book/_ext")
        for name in _modules(folder)
        if name not in drawn
    ]
    assert not missing, f"README.md's map lacks {missing}"
