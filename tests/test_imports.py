"""The package's import graph, read from its source with ``ast``.

Three promises: no import cycle among the modules of ``attention``; no import
of a package module hidden inside a function, unless ``LAZY`` says why and
the reason is not a cycle; and the README's map lists the modules from the
ground up, so that every module imports only modules listed above it (an
arrow to a module listed further down "runs back up").

A cycle hides easily: a module that imports its importer inside a function
runs, and linters see nothing. Here every import counts, wherever it sits.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attention"

#: Function-local imports of package modules that are allowed, with the reason.
#: A reason must not be a cycle: test_no_cycle would fail on one anyway.
LAZY = {
    ("attention.live", "attention.plotting"): (
        "heatmap_colours reads heatmap's colour map beside `import matplotlib`, "
        "an optional dependency that only this function of live.py needs; not "
        "a cycle (plotting imports nothing from the package)"
    ),
}


@dataclass(frozen=True)
class Arrow:
    """``importer`` imports ``imported`` at ``line``; ``local`` inside a function."""

    importer: str
    imported: str
    line: int
    local: bool

    def __str__(self) -> str:
        where = "inside a function" if self.local else "at the top"
        path = self.importer.replace(".", "/")
        return f"{path}.py:{self.line} imports {self.imported} {where}"


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name; a package is its __init__."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module name that ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    # A module's own package is its name without the last part; a package's
    # __init__ is its own package.
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(node: ast.AST, importer: str, is_package: bool, known: set[str]):
    """The package modules one import statement loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    source = _resolve(node, importer, is_package)
    targets = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in known:  # from . import plotting
            targets.append(submodule)
        elif source in known:  # from .checks import check_batch
            targets.append(source)
    return sorted(set(targets))


def _statements(tree: ast.Module):
    """Every import statement with whether it sits inside a function."""
    found = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, local))
            inside = local or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            visit(child, inside)

    visit(tree, False)
    return found


def arrows(package: Path = PACKAGE) -> list[Arrow]:
    """Every import of a package module by a package module, the package's own
    face (``attention/__init__.py``, which re-exports everything) left out."""
    names = module_names(package)
    known = set(names) - {package.name}
    found = []
    for importer, path in names.items():
        if importer == package.name:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node, local in _statements(tree):
            for target in _targets(node, importer, is_package, known):
                if target != importer:
                    found.append(Arrow(importer, target, node.lineno, local))
    return found


def cycles(edges: list[Arrow]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for arrow in edges:
        graph.setdefault(arrow.importer, set()).add(arrow.imported)
        graph.setdefault(arrow.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return components


def map_order() -> list[str]:
    """The package's entries on the README's map, from the top of the page down:
    ``attention.checks``, ``attention.bench`` (a folder is one entry)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How the repository is laid out", 1)[1]
    drawing = section.split("```", 2)[1]
    block = drawing.split("\nattention/", 1)[1]
    order = []
    for line in block.splitlines()[1:]:
        if line and not line.startswith(" "):
            break  # the next top-level folder: the package's block has ended
        entry = re.match(r"  (\w+)(\.py|/)\s", line)
        if entry:
            order.append(f"attention.{entry.group(1)}")
    return order


def _entry(module: str) -> str:
    """The map's entry of a module: a module of ``attention.bench`` is ``bench/``."""
    return ".".join(module.split(".")[:2])


def back_up(edges: list[Arrow], order: list[str]) -> list[Arrow]:
    """The arrows to a module listed below their importer on the map."""
    place = {name: i for i, name in enumerate(order)}
    return [
        arrow
        for arrow in edges
        if _entry(arrow.importer) != _entry(arrow.imported)
        and place.get(_entry(arrow.imported), -1) > place.get(_entry(arrow.importer))
    ]


def test_no_cycle():
    found = cycles(arrows())
    named = [" <-> ".join(component) for component in found]
    assert not found, f"import cycles among attention's modules: {named}"


def test_no_function_local_import_without_a_reason():
    hidden = [
        str(arrow)
        for arrow in arrows()
        if arrow.local and (arrow.importer, arrow.imported) not in LAZY
    ]
    assert not hidden, (
        "package modules imported inside functions (import them at the top of "
        f"the file, or add them to LAZY with the reason): {hidden}"
    )


def test_every_lazy_import_listed_is_still_there():
    lazy = {(a.importer, a.imported) for a in arrows() if a.local}
    assert set(LAZY) <= lazy, f"LAZY lists imports that are gone: {set(LAZY) - lazy}"


def test_the_readme_map_lists_each_module_above_its_importers():
    order = map_order()
    missing = sorted({_entry(name) for name in module_names()} - {"attention", *order})
    assert not missing, f"modules missing from the README's map: {missing}"
    wrong = [str(arrow) for arrow in back_up(arrows(), order)]
    assert not wrong, (
        "README.md's map lists the package from the ground up; these imports "
        f"run back up (the imported module is listed below its importer): {wrong}"
    )


def test_the_graph_reader_sees_a_cycle_hidden_in_a_function(tmp_path):
    # The reader itself, on a small package whose cycle only a function shows.
    package = tmp_path / "attention"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import f\n")
    (package / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text("def g():\n    from .a import f\n    return f\n")
    edges = arrows(package)
    assert cycles(edges) == [["attention.a", "attention.b"]]
    assert [str(a) for a in edges if a.local] == [
        "attention/b.py:2 imports attention.a inside a function"
    ]
