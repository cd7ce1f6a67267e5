"""The README's map of the repository names every module it has, and every
file or module of the package that the repository's text names is there: the
README, the Makefile, conf.py, the pages, the code, the scripts in tools/,
the templates, the static scripts and styles, and the tests (a comment that
points to a module that has gone sends the next maintainer nowhere). In the
tests, what their comments and docstrings say."""

import ast
import io
import pkgutil
import re
import tokenize
from pathlib import Path

import attention

ROOT = Path(__file__).resolve().parents[1]


def _map() -> str:
    """The code block under "How the repository is laid out"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How the repository is laid out", 1)[1]
    return section.split("```", 2)[1]


def test_every_module_of_the_package_the_extensions_and_tools_is_on_the_map():
    drawn = set(re.findall(r"[\w.-]+/?", _map()))
    missing = [
        f"{folder}/{name}"
        for folder in ("attention", "book/_ext", "tools")
        for module in pkgutil.iter_modules([str(ROOT / folder)])
        if (name := module.name + ("/" if module.ispkg else ".py")) not in drawn
    ]
    assert not missing, f"README.md's map lacks {missing}"


def texts() -> list[Path]:
    """Every file whose text may point to a file or module of the repository."""
    book = ROOT / "book"
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "conf.py"]
    files += [*book.rglob("*.md"), *(book / "_templates").rglob("*.html")]
    files += [*(book / "_static").glob("*.js"), *(book / "_static").glob("*.css")]
    for folder in ("attention", "book/_ext", "book/_kernel", "tools", "tests"):
        files += (ROOT / folder).rglob("*.py")
    return sorted(set(files))


# tests/table.py, attention/_data/bench-gpt2.json, book/_ext/svgmath.py, ...
NAMED = re.compile(
    r"(?<![\w/.-])(?:tests|attention|book|tools)/[\w/.-]*\w"
    r"\.(?:py|md|json|js|css|html|yaml|txt|po)\b"
)
# attention.checks, attention.bench.claim, ...: the name after "attention."
# must be one of the package's modules or one of its exported names.
MODULE = re.compile(r"(?<![\w./-])attention\.([a-z]\w+)")


def test_the_scan_finds_a_path_and_a_module_that_do_not_exist():
    # Written in pieces, so that this file's own text names nothing gone.
    path, module = "book/_ext/" + "notebooks.py", "attention." + "gone_module"
    text = f"See {path}, and {module}.f()."
    assert NAMED.findall(text) == [path]
    assert MODULE.findall(text) == ["gone_module"]
    assert not _exists("gone_module") and _exists("checks") and _exists("bench")


def _exists(name: str) -> bool:
    package = ROOT / "attention"
    return (
        (package / f"{name}.py").is_file()
        or (package / name / "__init__.py").is_file()
        or hasattr(attention, name)
    )


def prose(source: str) -> str:
    """The comments and docstrings of Python ``source``: what a test says to
    its reader (its string literals may name files of a made-up package)."""
    said = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, DOCUMENTED):
            said.append(ast.get_docstring(node) or "")
    return "\n".join(said)


DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def test_prose_is_the_comments_and_docstrings():
    source = '"""See a.py."""\nx = "b.py"  # see c.py\ndef f():\n    """d.py"""\n'
    said = prose(source)
    assert "a.py" in said and "c.py" in said and "d.py" in said
    assert "b.py" not in said  # a string in the code


def test_every_file_and_module_named_in_the_repository_exists():
    gone = []
    for path in texts():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        if where.parts[0] == "tests" and path.suffix == ".py":
            text = prose(text)
        for name in NAMED.findall(text):
            if not (ROOT / name).exists():
                gone.append(f"{where}: {name}")
        for name in MODULE.findall(text):
            if not _exists(name):
                gone.append(f"{where}: attention.{name}")
    assert not gone, f"named, but not in the repository: {gone}"
