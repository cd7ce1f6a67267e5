"""``pysource``: show the real source of a package object on a page.

Usage in MyST: ```` ```{pysource} attention.CausalAttention ```` with the
options ``:diff: attention.SelfAttention_v2`` (highlight every line that
changes what is computed since that object), ``:listing: 3.3`` (the printed
book's "Listing 3.3", with the imports the code needs so that it runs when
pasted) and ``:members:`` (a class's methods to show). The code is read from
the package at build time with :mod:`inspect`, docstrings left out, so the
page can never disagree with the implementation.

The caption is a plain paragraph: Sphinx's own counter (``numfig``, which
sphinx-exercise switches on) would number captioned blocks 1, 2, 3, ...
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import io
import textwrap
import tokenize
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective


def _resolve(dotted: str):
    module_name, _, attr = dotted.rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def source_without_docstrings(
    obj, members: list[str] | None = None
) -> tuple[list[str], int, str]:
    """Return ``(lines, first line number, file)`` of ``obj``, docstrings removed.

    With ``members``, a class keeps only the methods named there: the chapter's
    ``__init__`` and ``forward``, say, without helpers a page does not teach.
    """
    obj = inspect.unwrap(obj)  # a decorator such as @torch.no_grad() hides the file
    lines, start = inspect.getsourcelines(obj)
    text = textwrap.dedent("".join(lines))
    tree = ast.parse(text)
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                drop.update(range(body[0].lineno - 1, body[0].end_lineno))
    cls = tree.body[0]
    if members is not None and isinstance(cls, ast.ClassDef):
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name not in members:
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                drop.update(range(first - 2, node.end_lineno))  # and the blank above
    kept = [line for i, line in enumerate(text.splitlines()) if i not in drop]
    while kept and not kept[-1].strip():
        kept.pop()
    return kept, start, inspect.getsourcefile(obj)


def import_lines(obj, lines: list[str]) -> list[str]:
    r"""The import statements that make ``lines`` (the source of ``obj``) run alone.

    Every global name the code reads is looked up in ``obj``'s module: a
    module becomes ``import torch`` or ``from torch import nn``, anything
    else ``from <its module> import name``, or ``from <package> import
    name`` when the package exports it (``from attention import
    causal_mask``). Builtins need nothing.

    >>> from attention import CausalAttention
    >>> code, _, _ = source_without_docstrings(CausalAttention)
    >>> print(*import_lines(CausalAttention, code), sep="\n")
    import torch
    from torch import nn
    from attention import causal_mask
    from attention.checks import check_attention_args, check_batch
    """
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
    r"""Each line without its comment and surrounding blanks, found by ``tokenize``.

    A ``#`` inside a string is not a comment, apostrophes or not:

    >>> code_without_comments(['s = "it\'s #1"  # a comment', "# only"])
    ['s = "it\'s #1"', '']
    """
    stripped = list(lines)
    source = "\n".join(lines) + "\n"
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            stripped[row - 1] = stripped[row - 1][:col]
    return [line.strip() for line in stripped]


def bookkeeping_lines(lines: list[str]) -> set[int]:
    """0-based lines that compute nothing: headers, checks, stored arguments.

    Three kinds: the header of a class or a function (its name and
    signature), a call of a ``check_*`` function (the package's validation,
    one call per method), and ``self.name = name``, which keeps a
    constructor argument under its own name. A ``:diff:`` never highlights
    them: a reader looks for what changed in the computation. Storing an
    argument under another name (``self.dropout_p = dropout``) is new code.

    >>> sorted(bookkeeping_lines(["def f(self, x, d):", "    check_input(x)",
    ...     "    self.d = d", "    self.h = d // 2", "    self.p = d",
    ...     "    return x"]))
    [0, 1, 2]
    """
    tree = ast.parse(textwrap.dedent("\n".join(lines)))
    found: set[int] = set()
    for node in ast.walk(tree):
        check = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id.startswith("check_")
        )
        store = (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id == "self"
            and isinstance(node.value, ast.Name)
            and node.value.id == node.targets[0].attr
        )
        if check or store:
            found.update(range(node.lineno - 1, node.end_lineno))
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.body:
            found.update(range(node.lineno - 1, node.body[0].lineno - 1))
    return found


def changed_lines(new: list[str], old: list[str]) -> list[int]:
    """1-based numbers of the code lines of ``new`` that change what is computed.

    A line counts when ``old`` does not have it. Comments are ignored on both
    sides (a line whose only change is a new shape comment is not new code,
    and a comment-only line is never marked), and so are the lines that only
    check or store arguments (:func:`bookkeeping_lines`).
    """
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
        name = self.arguments[0]
        members = self.options.get("members")
        members = members.split() if members else None
        try:
            lines, start, path = source_without_docstrings(_resolve(name), members)
        except (ImportError, AttributeError, TypeError, OSError) as exc:
            msg = f"pysource: cannot read the source of {name!r}: {exc}"
            raise self.error(msg) from exc
        self.env.note_dependency(path)
        shown = lines
        if "listing" in self.options:
            # What the code needs to run when pasted: visible, the same code.
            shown = [*import_lines(_resolve(name), lines), "", "", *lines]
        code = "\n".join(shown)
        block = nodes.literal_block(code, code)
        block["language"] = "python"
        block["classes"].append("pysource")
        if "diff" in self.options:
            old_obj = _resolve(self.options["diff"])
            old, _, old_path = source_without_docstrings(old_obj, members)
            self.env.note_dependency(old_path)
            offset = len(shown) - len(lines)  # the import lines come first
            hl_lines = [n + offset for n in changed_lines(lines, old)]
            block["highlight_args"] = {"hl_lines": hl_lines}
        self.set_source_info(block)
        short = name.rpartition(".")[2]
        rel = Path(path).resolve().relative_to(Path(self.config.pysource_root))
        # The caption is parsed by the page's own parser: MyST spells roles
        # {py:obj}`...`, reStructuredText :py:obj:`...`.
        myst = type(self.state).__module__.startswith("myst_parser")
        role = "{py:obj}" if myst else ":py:obj:"
        caption = self.options.get(
            "caption", f"{role}`{short} <{name}>`, from ``{rel.as_posix()}``"
        )
        if "diff" in self.options:
            previous = self.options["diff"].rpartition(".")[2]
            caption += f" (highlighted: new since ``{previous}``)"
        if "listing" in self.options:
            caption = f"**Listing {self.options['listing']}**: {caption}"
        return self._wrap(block, caption)

    def _wrap(self, block: nodes.literal_block, caption: str) -> list[nodes.Node]:
        """The block under a caption that Sphinx's figure counter does not number."""
        parsed, messages = self.state.inline_text(caption, self.lineno)
        title = nodes.paragraph(caption, "", *parsed, classes=["pysource-caption"])
        wrapper = nodes.container(
            "", title, block, classes=["literal-block-wrapper", "pysource-listing"]
        )
        self.set_source_info(title)
        self.set_source_info(wrapper)
        return [wrapper, *messages]


def package_source(app, modname: str):
    """viewcode's source of a module under ``pysource_root``, read as text.

    viewcode would import the module to find its file, on every build, and
    importing ``attention`` imports torch: seconds of a no-op build. This
    handler of viewcode's ``viewcode-find-source`` event reads the file.
    Other modules are left to viewcode (``None``).
    """
    root = Path(app.config.pysource_root)
    path = root.joinpath(*modname.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.is_file():
        return None
    code = path.read_text(encoding="utf-8")
    return code, ModuleAnalyzer.for_string(code, modname, str(path)).find_tags()


def setup(app):
    app.add_config_value("pysource_root", str(Path.cwd()), "env")
    app.add_directive("pysource", PySource)
    app.connect("viewcode-find-source", package_source)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
