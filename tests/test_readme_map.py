"""The README's map of the repository names every module it has, and every
file that the README, the Makefile, the pages and the code name is there (a
page that says which test checks it must not name a test that has gone)."""

import pkgutil
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _map() -> str:
    """The code block under "How the repository is laid out"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How the repository is laid out", 1)[1]
    return section.split("```", 2)[1]


def test_every_module_of_the_package_and_the_extensions_is_on_the_map():
    drawn = set(re.findall(r"[\w.-]+/?", _map()))
    missing = [
        f"{folder}/{name}"
        for folder in ("attention", "book/_ext")
        for module in pkgutil.iter_modules([str(ROOT / folder)])
        if (name := module.name + ("/" if module.ispkg else ".py")) not in drawn
    ]
    assert not missing, f"README.md's map lacks {missing}"


# tests/table.py, attention/_data/bench-gpt2.json, book/_ext/svgmath.py, ...
NAMED = re.compile(
    r"(?<![\w/.-])(?:tests|attention|book)/[\w/.-]*\w\.(?:py|md|json|js)\b"
)


def test_every_file_named_in_the_readme_the_pages_or_the_code_exists():
    texts = [ROOT / "README.md", ROOT / "Makefile", *(ROOT / "book").rglob("*.md")]
    texts += [*(ROOT / "attention").rglob("*.py"), *(ROOT / "book/_ext").glob("*.py")]
    gone = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in texts
        for name in NAMED.findall(path.read_text(encoding="utf-8"))
        if not (ROOT / name).exists()
    ]
    assert not gone, f"files named but not in the repository: {gone}"
