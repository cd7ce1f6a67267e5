"""``pysource``: show the real source of a package object on a page.

Usage in MyST::

    ```{pysource} attention.CausalAttention
    :diff: attention.SelfAttention_v2
    :listing: 3.3
    ```

The code is read from the package at build time with :mod:`inspect`, so the
page can never disagree with the implementation. Docstrings are left out
(the API reference shows them). With ``:diff:``, every line that is not in
the other object's source is highlighted, so a reader sees what changed
since the previous variant without anyone keeping line numbers by hand.

``:listing:`` gives the printed book's listing number ("Listing 3.3"). Code
shown without it carries no number: Sphinx's own counter (``numfig``, which
sphinx-exercise switches on) would number every captioned block 1, 2, 3 ...,
a second numbering that matches nothing in the printed book. So the caption
is a plain paragraph, which Sphinx does not count.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import re
import textwrap
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def _resolve(dotted: str):
    module_name, _, attr = dotted.rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def source_without_docstrings(obj) -> tuple[list[str], int, str]:
    """Return ``(lines, first line number, file)`` of ``obj``, docstrings removed."""
    obj = inspect.unwrap(obj)  # a decorator such as @torch.no_grad() hides the file
    lines, start = inspect.getsourcelines(obj)
    text = textwrap.dedent("".join(lines))
    drop: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                drop.update(range(body[0].lineno - 1, body[0].end_lineno))
    kept = [line for i, line in enumerate(text.splitlines()) if i not in drop]
    return kept, start, inspect.getsourcefile(obj)


def _code_only(line: str) -> str:
    """The line without its comment and surrounding blanks (``#`` in strings aside)."""
    return _COMMENT.sub("", line).strip()


_COMMENT = re.compile(r"\s*#[^\"']*$")


def changed_lines(new: list[str], old: list[str]) -> list[int]:
    """1-based numbers of the code lines of ``new`` that ``old`` does not have.

    Comments are ignored on both sides: a line whose only change is a new
    shape comment is not new code, and a comment-only line is never marked.
    """
    matcher = difflib.SequenceMatcher(
        a=[_code_only(line) for line in old], b=[_code_only(line) for line in new]
    )
    changed = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed.extend(j + 1 for j in range(j1, j2) if _code_only(new[j]))
    return changed


class PySource(SphinxDirective):
    required_arguments = 1
    option_spec = {
        "diff": directives.unchanged_required,
        "caption": directives.unchanged,
        "listing": directives.unchanged_required,
    }

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            lines, start, path = source_without_docstrings(_resolve(name))
        except (ImportError, AttributeError, TypeError, OSError) as exc:
            msg = f"pysource: cannot read the source of {name!r}: {exc}"
            raise self.error(msg) from exc
        self.env.note_dependency(path)
        code = "\n".join(lines)
        block = nodes.literal_block(code, code)
        block["language"] = "python"
        block["classes"].append("pysource")
        if "diff" in self.options:
            old, _, old_path = source_without_docstrings(_resolve(self.options["diff"]))
            self.env.note_dependency(old_path)
            block["highlight_args"] = {"hl_lines": changed_lines(lines, old)}
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
        title = nodes.paragraph("", "", *parsed, classes=["pysource-caption"])
        wrapper = nodes.container(
            "", title, block, classes=["literal-block-wrapper", "pysource-listing"]
        )
        self.set_source_info(title)
        self.set_source_info(wrapper)
        return [wrapper, *messages]


def setup(app):
    app.add_config_value("pysource_root", str(Path.cwd()), "env")
    app.add_directive("pysource", PySource)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
