"""``site_language``: the book's editions side by side in one site.

The English edition is the site's root, every other edition a folder named
after its language (``zh_CN/``) with the same page paths. Each page's
template gets ``language_links`` for ``book/_templates/language-switch.html``:
a relative link to the same page in each edition, so the switch works
offline and under any URL prefix. It also names the Chinese search's
stemmer right (:func:`_chinese_search`), and lets the book's own catalog
speak for sphinx-book-theme (:func:`_book_catalogs`). Each edition's
settings are plain configuration (``-D`` on its Makefile line).
"""

from __future__ import annotations

from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALES = Path(__file__).resolve().parents[1] / "locales"
#: sphinx-book-theme's message catalog (its download menu, "By" in the footer).
THEME_CATALOG = "booktheme"
EXERCISE_CATALOG = "exercise"

# The first is the site's root; each label is the language's name for itself.
EDITIONS = {"en": "English", "zh_CN": "简体中文"}
LANG_TAGS = {"en": "en", "zh_CN": "zh-CN"}
ROOT_LANGUAGE = "en"


def other_edition_url(pagename: str, here: str, there: str, suffix: str) -> str:
    """Relative URL from ``pagename`` of edition ``here`` to it in ``there``."""
    up = pagename.count("/") + (here != ROOT_LANGUAGE)
    prefix = "" if there == ROOT_LANGUAGE else f"{there}/"
    return "../" * up + prefix + pagename + suffix


def language_links(pagename: str, language: str, suffix: str) -> list[dict]:
    """The switch's entries: one per edition, the current one without a link."""
    here = language if language in EDITIONS else ROOT_LANGUAGE
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


def _chinese_search():
    """Sphinx 9.0's Chinese search, with its JavaScript stemmer named right.

    ``SearchChinese`` ships the English stemmer, but Sphinx names the class
    after ``language_name`` (``window.Stemmer = ChineseStemmer``, which does
    not exist): the search page stops with a ReferenceError. Sphinx issue
    14229, fixed by pull request 14416 (after 9.0.4); ``tests/test_book_ext.py``
    fails once the installed Sphinx has the fix: then delete this function.
    """
    from sphinx.search.zh import SearchChinese

    class SearchChineseEnglishStemmer(SearchChinese):
        language_name = "English"  # only used to name the JS stemmer class

    return SearchChineseEnglishStemmer


def _add_catalog(app, catalog: str) -> None:
    """Register ``book/locales/<lang>/LC_MESSAGES/<catalog>.po`` for ``catalog``.

    gettext asks the catalog registered first and falls back to later ones
    (``app.add_message_catalog``). The ``.mo`` file is compiled here, because
    Sphinx compiles catalogs only when the build starts, after this.
    """
    language = app.config.language
    po = LOCALES / str(language) / "LC_MESSAGES" / f"{catalog}.po"
    if not po.is_file():
        return
    mo = po.with_suffix(".mo")
    if not mo.is_file() or mo.stat().st_mtime < po.stat().st_mtime:
        with po.open("rb") as source, mo.open("wb") as target:
            write_mo(target, read_po(source, locale=language))
    app.add_message_catalog(catalog, str(LOCALES))


def _book_catalogs(app) -> None:
    """The book's words for two extensions' own, in ``book/locales``.

    - ``booktheme.po``, registered *before* sphinx-book-theme's: its zh_CN
      catalog writes Taiwanese usage (its print button says 列印成 PDF, which
      also reads like the book's real PDF). The theme registers its own when
      it is loaded, after conf.py's extensions: the book's words win, the
      theme's fill in the rest.
    - ``exercise.po``, registered *after* sphinx-exercise's (conf.py loads
      it first): its zh_CN catalog has no "Solution", the title of every
      solution, so the book's fills that gap and changes nothing else.
    """
    _add_catalog(app, THEME_CATALOG)
    _add_catalog(app, EXERCISE_CATALOG)


def _page_context(app, pagename, templatename, context, doctree) -> None:
    suffix = context.get("file_suffix", ".html")
    context["language_links"] = language_links(pagename, app.config.language, suffix)


def setup(app):
    # Sphinx finds a zh_CN build's search language under "zh".
    app.add_search_language(_chinese_search())
    _book_catalogs(app)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
