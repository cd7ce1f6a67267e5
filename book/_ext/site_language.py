"""``site_language``: the book's editions side by side in one site.

The English edition is the root of the site (``_build/html/``), every other
edition a folder named after its language (``_build/html/zh_CN/``) with the
same page paths. This extension gives each page's template
``language_links``, read by ``book/_templates/language-switch.html`` (placed
in the article header by ``conf.py``): a relative link to the same page in
each other edition, so the switch works offline and under any URL prefix.
It also names the Chinese search's stemmer right (:func:`_chinese_search`).

An edition's settings (title, toggle texts, search box) are plain
configuration: ``-D`` options on the Makefile's line for that edition.
"""

from __future__ import annotations

# The editions: the first is the site's root, the others live in a folder of
# their language's name. The label is the language's own name for itself.
EDITIONS = {"en": "English", "zh_CN": "简体中文"}
LANG_TAGS = {"en": "en", "zh_CN": "zh-CN"}
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


# -- Chinese search ------------------------------------------------------------------
def _chinese_search():
    """Sphinx 9.0's Chinese search, with its JavaScript stemmer named right.

    ``SearchChinese`` stems Latin words with the English Snowball stemmer and
    ships ``english-stemmer.js``, but Sphinx names the class it hands to the
    search page after ``language_name``: ``window.Stemmer = ChineseStemmer``,
    which does not exist. The search page then stops at "正在搜索中" with a
    ReferenceError. The stemmer is the English one, so name it so.

    Upstream: sphinx-doc/sphinx issue 14229, fixed by pull request 14416
    (after 9.0.4). ``tests/test_book_ext.py`` fails once the installed
    Sphinx has the fix: then delete this function.
    """
    from sphinx.search.zh import SearchChinese

    class SearchChineseEnglishStemmer(SearchChinese):
        language_name = "English"  # only used to name the JS stemmer class

    return SearchChineseEnglishStemmer


# -- Sphinx hooks ------------------------------------------------------------------
def _page_context(app, pagename, templatename, context, doctree) -> None:
    suffix = context.get("file_suffix", ".html")
    context["language_links"] = language_links(pagename, app.config.language, suffix)


def setup(app):
    # Sphinx finds a ``zh_CN`` build's search language under ``zh``; the
    # English edition never asks for it.
    app.add_search_language(_chinese_search())
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
