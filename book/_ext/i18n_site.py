"""``i18n_site``: the book's editions side by side in one site.

The English edition is the root of the site (``_build/html/``), every other
edition a folder named after its language (``_build/html/zh_CN/``) with the
same page paths. This extension, active in every edition's build:

- adds a language switch above each page (``book/_templates/
  language-switch.html``, placed before the theme's header buttons): a
  relative link to the same page in each other edition, so it works offline
  and under any URL prefix;
- sets, in a translated build, the search language (Chinese: ``zh``, which
  segments words with jieba) and the translated site title;
- gives a translated build its own myst-nb output folder
  (``_build/jupyter_execute-zh_CN``): myst-nb puts it next to the output
  folder, which for ``_build/html/zh_CN`` would be inside the English site;
- writes the translated text into the edition's notebook downloads: the
  markdown cells and the code comments are looked up in the page's catalog
  (the one Sphinx compiled for this build), the outputs stay as executed.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable
from pathlib import Path

import i18n_code
import nbformat
from docutils import nodes
from sphinx.util import logging
from sphinx.util.i18n import docname_to_domain

logger = logging.getLogger(__name__)

TEMPLATES = Path(__file__).resolve().parent.parent / "_templates"
SWITCH_TEMPLATE = "language-switch.html"

# The editions: the first is the site's root, the others live in a folder of
# their language's name. The label is the language's own name for itself.
EDITIONS = {"en": "English", "zh_CN": "简体中文"}
LANG_TAGS = {"en": "en", "zh_CN": "zh-CN"}
SEARCH_LANGUAGES = {"zh_CN": "zh"}
ROOT_LANGUAGE = "en"


def edition_of(language: str | None) -> str:
    return language if language in EDITIONS else ROOT_LANGUAGE


def edition_prefix(language: str) -> str:
    """The edition's folder inside the site: ``""`` or ``"zh_CN/"``."""
    return "" if language == ROOT_LANGUAGE else f"{language}/"


def other_edition_url(pagename: str, here: str, there: str, suffix: str) -> str:
    """Relative URL from ``pagename`` of edition ``here`` to it in ``there``.

    >>> other_edition_url("chapter3/summary", "en", "zh_CN", ".html")
    '../zh_CN/chapter3/summary.html'
    >>> other_edition_url("chapter3/summary", "zh_CN", "en", ".html")
    '../../chapter3/summary.html'
    >>> other_edition_url("index", "zh_CN", "en", ".html")
    '../index.html'
    """
    up_to_site = "../" * pagename.count("/") + "../" * edition_prefix(here).count("/")
    return up_to_site + edition_prefix(there) + pagename + suffix


def language_links(pagename: str, language: str, suffix: str) -> list[dict]:
    """The switch's entries: one per edition, the current one without a link."""
    here = edition_of(language)
    return [
        {
            "language": lang,
            "lang_tag": LANG_TAGS[lang],
            "label": label,
            "current": lang == here,
            "url": other_edition_url(pagename, here, lang, suffix),
        }
        for lang, label in EDITIONS.items()
    ]


# -- Notebook downloads ----------------------------------------------------------
_HEADING = re.compile(r"^(\s*#{1,6}\s+)")


def _clean(text: str) -> str:
    """A message as Sphinx extracts it: lines joined by blanks, ends stripped."""
    return " ".join(text.splitlines()).strip()


def translate_markdown(text: str, translate: Callable[[str], str | None]) -> str:
    """A MyST markdown cell with each translated heading or paragraph replaced.

    Paragraphs are looked up by their text joined into one line, as Sphinx
    extracts them from the page; a paragraph keeps the list marker or
    indentation of its first line. Math, code, directives' options and
    everything not found stay as they are.

    >>> table = {"A heading": "标题", "Some text on two lines.": "两行文字。"}
    >>> print(translate_markdown("# A heading\\n\\nSome text\\non two lines.\\n",
    ...       table.get), end="")
    # 标题
    <BLANKLINE>
    两行文字。
    """
    lines = text.splitlines(keepends=True)
    blocks = _paragraph_blocks(lines)
    for first, last in reversed(blocks):
        chunk = lines[first:last]
        head = chunk[0]
        heading = _HEADING.match(head)
        fence = _FENCE.match(head)
        if fence and fence.group(3):
            title = fence.group(3).strip()
            translated = translate(title)
            if translated:
                lines[first] = head.replace(title, translated, 1)
            continue
        if heading:
            prefix = heading.group(1)
        else:
            stripped = head.lstrip()
            prefix = head[: len(head) - len(stripped)]
            item = re.match(r"(?:[-*+]|\d+[.)])\s+", stripped)
            if item:
                prefix += item.group(0)
        body = [chunk[0][len(prefix) :]] + [line.strip() for line in chunk[1:]]
        translated = translate(_clean("\n".join(b.strip() for b in body)))
        if translated:
            end = "\n" if chunk[-1].endswith("\n") else ""
            lines[first:last] = [prefix + " ".join(translated.splitlines()) + end]
    return "".join(lines)


# Directives whose body is not prose: their lines stay as they are.
CODE_DIRECTIVES = {
    "code-cell", "code-block", "code", "sourcecode", "math", "raw", "pysource",
    "toctree", "eval-rst", "literalinclude", "csv-table",
}  # fmt: skip
_FENCE = re.compile(r"^\s*(`{3,}|:{3,})\s*(?:\{([\w:-]+)\}\s*(.*))?")


def _paragraph_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """``(first, last)`` line ranges of headings, paragraphs and directive titles.

    Fenced code, math (``$$``), targets (``(label)=``), options (``:name:``)
    and tables are never inside a block. A prose directive's body (an
    admonition, an exercise) is read like the cell itself.
    """
    blocks: list[tuple[int, int]] = []
    code_fence = None
    start = None

    def close(i):
        nonlocal start
        if start is not None:
            blocks.append((start, i))
        start = None

    for i, line in enumerate(lines):
        s = line.strip()
        if code_fence:
            if s and s == code_fence[0] * len(s) and len(s) >= len(code_fence):
                code_fence = None
            continue
        fence = _FENCE.match(line)
        if fence or s.startswith("$$"):
            close(i)
            if s.startswith("$$"):
                if not (s.endswith("$$") and len(s) > 2):
                    code_fence = "$$"
            elif fence.group(2) is None or fence.group(2) in CODE_DIRECTIVES:
                if s != fence.group(1):  # an opener, not a prose fence's end
                    code_fence = fence.group(1)
            elif fence.group(3):
                blocks.append((i, i + 1))  # the directive's title
            continue
        if (
            not s
            or s.startswith(("|", "<", "---", ":"))
            or (s.startswith("(") and s.endswith(")="))
        ):
            close(i)
            continue
        if _HEADING.match(line) or re.match(r"(?:[-*+]|\d+[.)])\s+", s):
            close(i)
            start = i
            if _HEADING.match(line):
                close(i + 1)
            continue
        if start is None:
            start = i
    close(len(lines))
    return blocks


def _catalog(app, docname: str) -> Callable[[str], str | None]:
    domain = docname_to_domain(docname, app.config.gettext_compact)
    lookups = []
    for folder in app.config.locale_dirs:
        localedir = Path(app.srcdir, folder)
        try:
            tr = gettext.translation(domain, localedir, [app.config.language])
        except OSError:
            continue
        lookups.append(tr)

    def translate(message: str) -> str | None:
        for tr in lookups:
            found = tr.gettext(message)
            if found != message:
                return found
        return None

    return translate


def _translate_notebook(app, doctree) -> None:
    if edition_of(app.config.language) == ROOT_LANGUAGE:
        return
    config = getattr(app.env, "mystnb_config", None)
    docname = app.env.docname
    path = Path(config.output_folder, f"{docname}.ipynb") if config else None
    if path is None or not path.is_file():
        return
    translate = _catalog(app, docname)
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, translate)
        elif cell.cell_type == "code":
            new, _ = i18n_code.translate_code(cell.source, translate)
            if i18n_code.same_code(cell.source, new):
                cell.source = new
    path.write_text(nbformat.writes(notebook), encoding="utf-8")


# -- Text the build adds in code ------------------------------------------------------
# Nodes made by Python code after Sphinx translated the page (conf.py's
# download note) are in no page's catalog. Their text is looked up in one
# shared catalog, book/locales/<language>/LC_MESSAGES/_site.po, one message
# per text node (the spaces around it kept).
SITE_CATALOG = "_site"
SITE_CLASSES = ("nb-download-tip",)


def site_catalog(srcdir, locale_dirs, language: str) -> dict[str, str]:
    """The translated, not fuzzy, messages of ``_site.po``."""
    from babel.messages.pofile import read_po

    table: dict[str, str] = {}
    for folder in locale_dirs:
        path = Path(srcdir, folder, language, "LC_MESSAGES", f"{SITE_CATALOG}.po")
        if path.is_file():
            with path.open("rb") as f:
                for message in read_po(f):
                    if message.id and message.string and not message.fuzzy:
                        table[message.id] = message.string
    return table


def translate_text(text: str, table: dict[str, str]) -> str:
    """``text`` translated as one message, its surrounding blanks kept.

    >>> translate_text("Download ", {"Download": "下载"})
    '下载 '
    >>> translate_text("Keep", {})
    'Keep'
    """
    core = text.strip()
    if core not in table:
        return text
    start = text.index(core)
    return text[:start] + table[core] + text[start + len(core) :]


def _translate_site_text(app, doctree) -> None:
    if edition_of(app.config.language) == ROOT_LANGUAGE:
        return
    table = site_catalog(app.srcdir, app.config.locale_dirs, app.config.language)
    for node in doctree.findall(nodes.Element):
        if not set(SITE_CLASSES) & set(node.get("classes", [])):
            continue
        for text in list(node.findall(nodes.Text)):
            if isinstance(text.parent, nodes.FixedTextElement):
                continue  # code and commands stay as they are
            new = translate_text(str(text), table)
            if new != str(text):
                text.parent.replace(text, nodes.Text(new))


# -- Chinese search ------------------------------------------------------------------
def _chinese_search():
    """Sphinx 9.0's Chinese search, with its JavaScript stemmer named right.

    ``SearchChinese`` stems Latin words with the English Snowball stemmer and
    ships ``english-stemmer.js``, but Sphinx names the class it hands to the
    search page after ``language_name``: ``window.Stemmer = ChineseStemmer``,
    which does not exist. The search page then stops at "正在搜索中" with a
    ReferenceError. The stemmer is the English one, so name it so.
    """
    from sphinx.search.zh import SearchChinese

    class SearchChineseEnglishStemmer(SearchChinese):
        language_name = "English"  # only used to name the JS stemmer class

    return SearchChineseEnglishStemmer


# -- Sphinx hooks ------------------------------------------------------------------
def _configure(app, config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.append(str(TEMPLATES))
    options = config.html_theme_options
    header = options.setdefault("article_header_end", ["article-header-buttons.html"])
    if SWITCH_TEMPLATE not in header:
        header.insert(0, SWITCH_TEMPLATE)
    language = edition_of(config.language)
    if language in SEARCH_LANGUAGES:
        config.html_search_language = SEARCH_LANGUAGES[language]
    if config.html_search_language == "zh":
        app.add_search_language(_chinese_search())
        # The book's terms as whole words, so that a search for 注意力权重 finds
        # it: the search page looks a query up as one word, unsegmented.
        terms = Path(app.srcdir, "locales", language, "search-terms.txt")
        config.html_search_options = {"dict": str(terms), **config.html_search_options}
    titles = config.i18n_html_title
    if language in titles:
        config.html_title = titles[language]


def _own_output_folder(app) -> None:
    """A translated build keeps its executed notebooks out of the English site."""
    language = edition_of(app.config.language)
    config = getattr(app.env, "mystnb_config", None)
    if language == ROOT_LANGUAGE or config is None:
        return
    folder = Path(app.doctreedir).parent / f"jupyter_execute-{language}"
    app.env.mystnb_config = config.copy(output_folder=str(folder.resolve()))


def _page_context(app, pagename, templatename, context, doctree) -> None:
    suffix = context.get("file_suffix", ".html")
    context["language_links"] = language_links(pagename, app.config.language, suffix)


def setup(app):
    app.setup_extension("i18n_code")
    app.add_config_value("i18n_html_title", {}, "html", dict)
    app.add_css_file("i18n.css")  # book/_static/i18n.css
    app.connect("config-inited", _configure)
    app.connect("builder-inited", _own_output_folder, priority=900)  # after myst-nb
    app.connect("html-page-context", _page_context)
    # After conf.py's download note (400), before the collectors (500).
    app.connect("doctree-read", _translate_site_text, priority=450)
    # After nb_streams (500) has cleaned the saved notebook.
    app.connect("doctree-read", _translate_notebook, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
