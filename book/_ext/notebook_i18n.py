"""``notebook_i18n``: the notebook download of a translated page, translated.

Sphinx translates a page's doctree, but the download is the page's source as
myst-nb saved it. ``downloads`` hands it to :func:`translate_notebook` with
the page's catalog: markdown cells get the translations of their prose,
piece by piece as Sphinx extracted them, code cells those of their comments
(``i18n_code``).
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable
from pathlib import Path

import i18n_code
from package_cache import markdown

# Directives whose body is code, not prose: nothing in it is translated.
CODE_DIRECTIVES = {
    "code-cell", "code-block", "code", "sourcecode", "math", "raw", "pysource",
    "toctree", "eval-rst", "literalinclude", "csv-table",
}  # fmt: skip


def _message(text: str) -> str:
    """A text as Sphinx extracts it as a message: lines joined, ends stripped."""
    return " ".join(text.splitlines()).strip()


def translate_markdown(text: str, translate: Callable[[str], str | None]) -> str:
    """A MyST markdown text with each translated piece of prose replaced.

    The pieces are markdown-it's inline tokens (headings, paragraphs, list
    items, table cells, definition terms), whose ``map`` gives their lines,
    and the titles and bodies of prose directives; code and math stay.
    """
    lines = text.splitlines(keepends=True)
    # Later line ranges first, so that earlier ranges keep their numbers.
    for first, last, new in sorted(_replacements(lines, translate), reverse=True):
        lines[first:last] = new
    return "".join(lines)


def _replacements(lines: list[str], translate) -> list[tuple[int, int, list[str]]]:
    """``(first, last, new lines)`` for each translated piece of ``lines``."""
    found = []
    for token in markdown().parse("".join(lines)):
        if token.map is None:
            continue
        first, last = token.map
        if token.type == "inline":
            new = _translate_inline(lines, first, last, token.content, translate)
            if new is not None:
                found.append((first, last, new))
        elif token.type in ("fence", "colon_fence") and token.info.startswith("{"):
            name, _, title = token.info[1:].partition("}")
            if name in CODE_DIRECTIVES:
                continue
            new = _translate_directive(lines, first, last, title.strip(), translate)
            found.extend(new)
    return found


def _translate_inline(lines, first, last, content, translate) -> list[str] | None:
    if not _message(content):  # an empty table cell: no message (gettext's
        return None  # "" is the catalog's header)
    translated = translate(_message(content))
    if not translated:
        return None
    translated = " ".join(translated.splitlines())
    head = content.splitlines()[0]
    line = lines[first]
    at = line.find(head)
    if at < 0:
        return None
    if last - first == 1:  # one line: a heading, a short paragraph, a table cell
        return [line[:at] + line[at:].replace(content, translated, 1)]
    end = "\n" if lines[last - 1].endswith("\n") else ""
    return [line[:at] + translated + end]


def _translate_directive(lines, first, last, title, translate):
    """The title and the prose body of a directive fenced on lines first..last."""
    found = []
    if title and translate(title):
        found.append(
            (first, first + 1, [lines[first].replace(title, translate(title))])
        )
    closed = last - first >= 2 and lines[last - 1].strip().startswith(("`", ":"))
    start = first + 1 + _options_length(lines[first + 1 : last])
    body = lines[start : last - 1 if closed else last]
    indent = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
    inner = [b[indent:] if b.strip() else b for b in body]
    for a, b, new in _replacements(inner, translate):
        found.append((start + a, start + b, [" " * indent + n for n in new]))
    return found


def _options_length(body: list[str]) -> int:
    """How many lines at the top of a directive's body are its options
    (``:name: value`` lines, or a YAML block between ``---``)."""
    if body and body[0].strip() == "---":
        ends = [i for i, line in enumerate(body[1:], 1) if line.strip() == "---"]
        return ends[0] + 1 if ends else 0
    count = 0
    while count < len(body) and re.match(r"\s*:[\w-]+:", body[count]):
        count += 1
    return count


# The call that chooses the exercise grader's language (attention.exercises),
# as the pages write it: English, the language of the pages' source.
SPEAK_ENGLISH = re.compile(r"""\bspeak\((["'])en\1\)""")


def speak_edition(source: str, language: str) -> str:
    """A code cell's ``speak("en")`` made ``speak("<language>")``: in a
    translated edition's notebook, the graders answer in its language.

    >>> speak_edition('speak("en")  # the grader', "zh_CN")
    'speak("zh_CN")  # the grader'
    """
    return SPEAK_ENGLISH.sub(f'speak("{language}")', source)


def translate_notebook(
    notebook, translate: Callable[[str], str | None], language: str = "en"
):
    """The notebook with its markdown cells and code comments translated (a
    comment whose translation would change the code stays), and its
    graders speaking ``language`` (:func:`speak_edition`)."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, translate)
        elif cell.cell_type == "code":
            new, _ = i18n_code.translate_code(cell.source, translate)
            if i18n_code.same_code(cell.source, new):
                cell.source = new
            cell.source = speak_edition(cell.source, language)
    return notebook


def page_catalog(app, docname: str) -> Callable[[str], str | None]:
    """A lookup in the page's compiled catalog (one per page: gettext_compact
    is False) for this build's language; ``None`` when it has no translation."""
    catalog = gettext.NullTranslations()
    for folder in app.config.locale_dirs:
        path, languages = Path(app.srcdir, folder), [app.config.language]
        catalog.add_fallback(
            gettext.translation(docname, path, languages, fallback=True)
        )

    def translate(message: str) -> str | None:
        found = catalog.gettext(message)
        return found if found != message else None

    return translate
