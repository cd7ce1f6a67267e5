"""``i18n_code``: translated code comments, identical code.

Each comment of a shown Python block (a cell, a ``pysource`` listing, a
fenced block; never an output) is a message of the page's catalog, found
with :mod:`tokenize`; the code is never one. A run of full-line comments at
one column is one message, so the translator sees a sentence; shapes
(``# (6, 3)``) and pragmas (``# noqa``) are none. After Sphinx's ``Locale``
transform the block is rewritten with the translations, unless the code
without comments would change: then it stays English and the build warns.
Tests: ``tests/test_i18n_code.py``.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from docutils import nodes
from i18n_messages import add_hidden_node, hidden_message
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

PYTHON_LANGUAGES = {"python", "python3", "py", "ipython", "ipython3", "default"}
PRAGMAS = ("noqa", "type:", "fmt:", "pragma:", "ruff:", "isort:")


@dataclass(frozen=True)
class Comment:
    """A trailing comment or a run of full-line comments: 1-based lines
    ``first`` to ``last``, the ``#`` at ``col``, ``marker`` such as ``"# "``."""

    first: int
    last: int
    col: int
    marker: str
    text: str
    trailing: bool


_MARKER = re.compile(r"(#+ ?)(.*)")  # "# ", then the text
_SHAPE = re.compile(r"\([^()]*\)")  # "(b, T, d_out)": the same in any language
_WORD = re.compile(r"[^\W\d_]{3,}")


def _is_message(text: str) -> bool:
    """Whether a comment has words to translate: not a pragma, not only shapes."""
    lowered = text.lower()
    if any(lowered.startswith(p) or f" {p}" in lowered for p in PRAGMAS):
        return False
    return _WORD.search(_SHAPE.sub("", text)) is not None


def code_tokens(code: str) -> list[tuple[int, str]]:
    """The tokens of ``code`` that are code: no comments, no layout-only lines."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return [(t.type, t.string) for t in tokens if t.type not in skip]


def find_comments(code: str) -> list[Comment]:
    """The comments of ``code`` that are messages."""
    lines = code.splitlines()
    found: list[Comment] = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        marker, text = _MARKER.match(tok.string).groups()
        text = text.rstrip()
        trailing = bool(lines[row - 1][:col].strip())
        prev = found[-1] if found else None
        if (
            prev is not None
            and not trailing
            and not prev.trailing
            and prev.last == row - 1
            and prev.col == col
            and text
            and _is_message(prev.text)
        ):
            found[-1] = Comment(
                prev.first, row, col, prev.marker, prev.text + "\n" + text, False
            )
            continue
        found.append(Comment(row, row, col, marker, text, trailing))
    return [c for c in found if _is_message(c.text)]


def translate_code(
    code: str, translate: Callable[[str], str | None]
) -> tuple[str, dict[int, int]]:
    """``code`` with each comment replaced by ``translate(message)`` (``None``:
    kept), and a map from old to new 1-based line numbers."""
    old_lines = code.splitlines(keepends=True)
    by_first = {c.first: c for c in find_comments(code)}
    out: list[str] = []
    line_map: dict[int, int] = {}
    row = 1
    while row <= len(old_lines):
        comment = by_first.get(row)
        translated = translate(comment.text) if comment else None
        if not comment or not translated or translated == comment.text:
            line_map[row] = len(out) + 1
            out.append(old_lines[row - 1])
            row += 1
            continue
        end = "\n" if old_lines[comment.last - 1].endswith("\n") else ""
        if comment.trailing:
            line = old_lines[row - 1]
            flat = " ".join(part.strip() for part in translated.splitlines())
            line_map[row] = len(out) + 1
            out.append(line[: comment.col] + comment.marker + flat + end)
        else:
            indent = old_lines[row - 1][: comment.col]
            new = [
                (indent + comment.marker + part).rstrip()
                for part in translated.splitlines()
            ]
            for old in range(comment.first, comment.last + 1):
                line_map[old] = len(out) + 1 + min(old - comment.first, len(new) - 1)
            out.extend(line + "\n" for line in new[:-1])
            out.append(new[-1] + end)
        row = comment.last + 1
    return "".join(out), line_map


def same_code(old: str, new: str) -> bool:
    """Whether ``old`` and ``new`` are the same code once comments are removed."""
    try:
        return code_tokens(old) == code_tokens(new)
    except (tokenize.TokenError, SyntaxError):
        return False


class comment_message(hidden_message):
    """One comment of the code block before it."""


def _in_output(node: nodes.Node) -> bool:
    """Inside a cell's output, or a docstring of the API reference."""
    while (node := node.parent) is not None:
        if isinstance(node, addnodes.desc) or "cell_output" in node.get("classes", []):
            return True
    return False


def shown_code_blocks(document: nodes.Node) -> Iterator[nodes.literal_block]:
    """The Python code blocks a reader sees, outputs and docstrings aside."""
    for node in document.findall(nodes.literal_block):
        language = node.get("language", "").lower()
        if language in PYTHON_LANGUAGES and not _in_output(node):
            yield node


class CommentMessages(SphinxTransform):
    """One ``comment_message`` node per comment, right after its code block."""

    default_priority = 5  # before PreserveTranslatableMessages (10) and Locale (20)

    def apply(self, **kwargs) -> None:
        for number, block in enumerate(shown_code_blocks(self.document)):
            code = block.astext()
            try:
                comments = find_comments(code)
            except (tokenize.TokenError, SyntaxError) as exc:
                logger.warning(
                    "i18n_code: cannot tokenize this code block, its comments "
                    "stay in English: %s",
                    exc,
                    location=block,
                    type="i18n_code",
                )
                continue
            markers = []
            for comment in comments:
                marker = comment_message(message=comment.text, block=number)
                marker.source = block.source
                marker.line = (block.line or 1) + comment.first - 1
                markers.append(marker)
            block.parent.insert(block.parent.index(block) + 1, markers)


class ApplyCommentTranslations(SphinxTransform):
    """Rewrite each code block with the comments' translations."""

    default_priority = 21  # right after Locale (20)

    def apply(self, **kwargs) -> None:
        translations: dict[int, dict[str, str]] = {}
        for marker in self.document.findall(comment_message):
            if marker.get("translation"):
                block = translations.setdefault(marker["block"], {})
                block[marker["message"]] = marker["translation"]
        if not translations:
            return
        for number, block in enumerate(shown_code_blocks(self.document)):
            if number in translations:
                self._rewrite(block, translations[number])

    def _rewrite(self, block: nodes.literal_block, table: dict[str, str]) -> None:
        old = block.astext()
        new, line_map = translate_code(old, table.get)
        if not same_code(old, new):
            logger.warning(
                "i18n_code: a translated comment would change the code; the "
                "block keeps its English comments",
                location=block,
                type="i18n_code",
            )
            return
        block.rawsource = new
        block.children = []
        block += nodes.Text(new)
        args = block.get("highlight_args", {})
        if args.get("hl_lines"):
            args["hl_lines"] = sorted({line_map[n] for n in args["hl_lines"]})


def setup(app):
    app.setup_extension("i18n_messages")
    add_hidden_node(app, comment_message)
    app.add_transform(CommentMessages)
    app.add_transform(ApplyCommentTranslations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
