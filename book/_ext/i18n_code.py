"""``i18n_code``: translated code comments, identical code.

Every comment of every shown Python code block (a cell's source, a
``pysource`` listing, a fenced ``python`` block) is a message of its own in
the page's catalog; the code around it never is, and outputs are never
messages. :class:`CommentMessages` (before Sphinx's ``Locale`` transform)
finds the comments with :mod:`tokenize` and puts one hidden
:class:`comment_message` per comment after the block;
:class:`ApplyCommentTranslations` (after ``Locale``) rewrites the block with
the translations, unless the new code, tokenized again without comments,
differs from the old: then the block keeps its English comments and the
build warns.

Consecutive full-line comments at the same column form one message, so a
translator sees a sentence and decides where its lines break. A comment with
no letters (``# (6, 3)``) or a tool pragma (``# noqa``) is not a message.
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
    """One message: a trailing comment, or a run of full-line comments.

    ``first`` and ``last`` are 1-based line numbers, ``col`` the column of
    the ``#``, ``marker`` the hashes and the blank after them (``"# "``).
    """

    first: int
    last: int
    col: int
    marker: str
    text: str
    trailing: bool


def _split_marker(token: str) -> tuple[str, str]:
    hashes = len(token) - len(token.lstrip("#"))
    rest = token[hashes:]
    blank = " " if rest.startswith(" ") else ""
    return token[:hashes] + blank, rest[len(blank) :].rstrip()


_SHAPE = re.compile(r"\([^()]*\)")  # "(b, T, d_out)": the same in any language
_WORD = re.compile(r"[^\W\d_]{3,}")


def _is_message(text: str) -> bool:
    """Whether a comment has words to translate: not a pragma, not only shapes.

    >>> [_is_message(t) for t in ["(b, T, d_in) -> (b, T, d_out)", "2 x (6, 3)",
    ...  "noqa: E501", "(6, 3): six tokens", "6 tokens"]]
    [False, False, False, True, True]
    """
    lowered = text.lower()
    if any(lowered.startswith(p) or f" {p}" in lowered for p in PRAGMAS):
        return False
    return _WORD.search(_SHAPE.sub("", text)) is not None


def code_tokens(code: str) -> list[tuple[int, str]]:
    """The tokens of ``code`` that are code: no comments, no layout-only lines.

    Raises :class:`tokenize.TokenError` or :class:`SyntaxError` for code that
    cannot be tokenized.

    >>> code_tokens("x = 1  # one\\n") == code_tokens("x = 1  # 一\\n")
    True
    >>> code_tokens("x = 1\\n") == code_tokens("x = 2\\n")
    False
    """
    kept = []
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type not in skip:
            kept.append((tok.type, tok.string))
    return kept


def find_comments(code: str) -> list[Comment]:
    """The comments of ``code`` that are messages, found with :mod:`tokenize`.

    >>> [c.text for c in find_comments("# Two lines\\n# of comment.\\nx = 1  # one\\n")]
    ['Two lines\\nof comment.', 'one']
    >>> find_comments("s = '# not a comment'  # (6, 3)\\n")
    []
    """
    lines = code.splitlines()
    found: list[Comment] = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        marker, text = _split_marker(tok.string)
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
    """``code`` with each comment replaced by ``translate(message)``.

    ``translate`` returns the translation or ``None`` (the comment stays).
    Returns the new code and a map from old to new 1-based line numbers (a
    translation may have more or fewer lines than the English comment).

    >>> new, lines = translate_code("# Hello\\nx = 1  # one\\n", {"Hello": "你好",
    ...     "one": "一"}.get)
    >>> print(new, end="")
    # 你好
    x = 1  # 一
    """
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
    parent = node.parent
    while parent is not None:
        if isinstance(parent, addnodes.desc):  # docstrings of the API reference
            return True
        if isinstance(parent, nodes.container) and "cell_output" in parent["classes"]:
            return True
        parent = parent.parent
    return False


def shown_code_blocks(document: nodes.Node) -> Iterator[nodes.literal_block]:
    """The Python code blocks a reader sees, outputs and docstrings aside."""
    for node in document.findall(nodes.literal_block):
        if node.get("language", "").lower() in PYTHON_LANGUAGES and not _in_output(
            node
        ):
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
