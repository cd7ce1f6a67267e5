"""``pysource``: the real source of a package object on a page.

```` ```{pysource} attention.CausalAttention ```` reads the code with
:mod:`inspect` at build time, docstrings left out, so the page cannot
disagree with the package. Options: ``:diff: <object>`` highlights the lines
that compute something new since that object, ``:listing: 3.3`` adds the
printed book's number and the imports the code needs to run when pasted,
``:members:`` names a class's methods to show. The caption is a plain
paragraph: ``numfig`` (which sphinx-exercise switches on) would number it.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import io
import pkgutil
import re
import textwrap
import tokenize
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

CHECK = re.compile(r"check_\w*")  # the package's validators
SELF_STORE = re.compile(r"self\.(\w+) = \1")  # an argument kept under its name


def source_without_docstrings(obj, members: list[str] | None = None):
    """``(lines, file)`` of ``obj``, docstrings removed; with ``members``, a
    class keeps only the methods named there."""
    obj = inspect.unwrap(obj)  # a decorator such as @torch.no_grad() hides the file
    text = textwrap.dedent(inspect.getsource(obj))
    tree = ast.parse(text)
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if ast.get_docstring(node, clean=False) is not None:
                drop.update(range(node.body[0].lineno - 1, node.body[0].end_lineno))
    cls = tree.body[0]
    if members is not None and isinstance(cls, ast.ClassDef):
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name not in members:
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                drop.update(range(first - 2, node.end_lineno))  # and the blank above
    kept = [line for i, line in enumerate(text.splitlines()) if i not in drop]
    while kept and not kept[-1].strip():
        kept.pop()
    return kept, inspect.getsourcefile(obj)


def import_lines(obj, lines: list[str]) -> list[str]:
    """The imports that make ``lines`` (the source of ``obj``) run alone: each
    global name it reads, from its package when the package exports it."""
    namespace = vars(inspect.getmodule(inspect.unwrap(obj)))
    tree = ast.parse(textwrap.dedent("\n".join(lines)))
    used = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    plain, from_module, names = [], [], {}
    for name in sorted(used & namespace.keys()):
        value = namespace[name]
        if inspect.ismodule(value):
            parent, _, leaf = value.__name__.rpartition(".")
            if not parent and leaf == name:
                plain.append(f"import {name}")
            elif leaf == name:
                from_module.append(f"from {parent} import {name}")
            else:
                plain.append(f"import {value.__name__} as {name}")
        elif getattr(value, "__module__", None) and name != getattr(
            obj, "__name__", ""
        ):
            module = value.__module__
            package = importlib.import_module(module.partition(".")[0])
            if getattr(package, name, None) is value:
                module = package.__name__  # the public name
            names.setdefault(module, []).append(name)
    froms = [f"from {m} import {', '.join(n)}" for m, n in sorted(names.items())]
    return plain + from_module + froms


def code_without_comments(lines: list[str]) -> list[str]:
    """Each line without its comment (found by ``tokenize``) and outer blanks."""
    stripped = list(lines)
    source = "\n".join(lines) + "\n"
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            stripped[row - 1] = stripped[row - 1][:col]
    return [line.strip() for line in stripped]


def bookkeeping_lines(lines: list[str]) -> set[int]:
    """0-based lines a ``:diff:`` never highlights, as they compute nothing: a
    header (name and signature), a ``check_*`` call (its result kept or not:
    ``ids = check_ids(ids)`` returns what it checked), ``self.name = name``."""
    tree = ast.parse(textwrap.dedent("\n".join(lines)))
    found: set[int] = set()
    for node in ast.walk(tree):
        call = node.value if isinstance(node, ast.Expr | ast.Assign) else None
        is_check = isinstance(call, ast.Call) and CHECK.fullmatch(
            ast.unparse(call.func)
        )
        is_store = isinstance(node, ast.Assign) and SELF_STORE.fullmatch(
            ast.unparse(node)
        )
        if is_check or is_store:
            found.update(range(node.lineno - 1, node.end_lineno))
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.body:
            found.update(range(node.lineno - 1, node.body[0].lineno - 1))
    return found


def changed_lines(new: list[str], old: list[str]) -> list[int]:
    """1-based numbers of the lines of ``new`` that ``old`` lacks, comments and
    :func:`bookkeeping_lines` aside: what changes the computation."""
    new_code, old_code = code_without_comments(new), code_without_comments(old)
    skip = bookkeeping_lines(new)
    matcher = difflib.SequenceMatcher(a=old_code, b=new_code, autojunk=False)
    changed = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed.extend(
                j + 1 for j in range(j1, j2) if new_code[j] and j not in skip
            )
    return changed


class PySource(SphinxDirective):
    required_arguments = 1
    option_spec = {
        "diff": directives.unchanged_required,
        "caption": directives.unchanged,
        "listing": directives.unchanged_required,
        "members": directives.unchanged_required,
    }

    def run(self) -> list[nodes.Node]:
        name, options = self.arguments[0], self.options
        members = options["members"].split() if "members" in options else None
        try:
            obj = pkgutil.resolve_name(name)
            lines, path = source_without_docstrings(obj, members)
        except (ImportError, AttributeError, TypeError, ValueError, OSError) as exc:
            msg = f"pysource: cannot read the source of {name!r}: {exc}"
            raise self.error(msg) from exc
        self.env.note_dependency(path)
        shown = lines
        if "listing" in options:  # what the code needs to run when pasted
            shown = [*import_lines(obj, lines), "", "", *lines]
        code = "\n".join(shown)
        block = nodes.literal_block(code, code, language="python", classes=["pysource"])
        rel = Path(path).resolve().relative_to(Path(self.config.pysource_root))
        short = name.rpartition(".")[2]
        caption = options.get(
            "caption", f"{{py:obj}}`{short} <{name}>`, from ``{rel.as_posix()}``"
        )
        if "diff" in options:
            old, old_path = source_without_docstrings(
                pkgutil.resolve_name(options["diff"]), members
            )
            self.env.note_dependency(old_path)
            offset = len(shown) - len(lines)  # the import lines come first
            block["highlight_args"] = {
                "hl_lines": [n + offset for n in changed_lines(lines, old)]
            }
            previous = options["diff"].rpartition(".")[2]
            caption += f" (highlighted: new since ``{previous}``)"
        if "listing" in options:
            caption = f"**Listing {options['listing']}**: {caption}"
        parsed, messages = self.state.inline_text(caption, self.lineno)
        title = nodes.paragraph(caption, "", *parsed, classes=["pysource-caption"])
        wrapper = nodes.container(
            "", title, block, classes=["literal-block-wrapper", "pysource-listing"]
        )
        for node in (block, title, wrapper):
            self.set_source_info(node)
        return [wrapper, *messages]


def package_source(app, modname: str):
    """viewcode's source of a module under ``pysource_root``, read as text:
    viewcode would import it, and with it torch, on every build (seconds)."""
    root = Path(app.config.pysource_root)
    path = root.joinpath(*modname.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.is_file():
        return None
    analyzer = ModuleAnalyzer.for_file(str(path), modname)  # cached by Sphinx
    return analyzer.code, analyzer.find_tags()


def setup(app):
    app.add_config_value("pysource_root", str(Path.cwd()), "env")
    app.add_directive("pysource", PySource)
    app.connect("viewcode-find-source", package_source)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
