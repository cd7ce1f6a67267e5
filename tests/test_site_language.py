"""Unit tests of book/_ext/site_language.py: the switch, and the search fix."""

from __future__ import annotations

from pathlib import Path

from site_language import _chinese_search, language_links, other_edition_url
from sphinx.search import IndexBuilder
from sphinx.search.zh import SearchChinese


def test_switch_urls_round_trip():
    for page in ["index", "chapter3/3-5-causal-attention", "_modules/attention/x"]:
        there = other_edition_url(page, "en", "zh_CN", ".html")
        back = other_edition_url(page, "zh_CN", "en", ".html")
        # Resolve both against the page's folder: they land on the same page.
        here_en = Path("/site", page).parent
        here_zh = Path("/site/zh_CN", page).parent
        assert (here_en / there).resolve() == Path("/site/zh_CN", page + ".html")
        assert (here_zh / back).resolve() == Path("/site", page + ".html")


def test_switch_marks_the_current_edition():
    links = language_links("chapter3/summary", "zh_CN", ".html")
    assert [(e["language"], e["current"]) for e in links] == [
        ("en", False),
        ("zh_CN", True),
    ]
    assert links[0]["url"] == "../../chapter3/summary.html"
    assert links[0]["lang_tag"] == "en" and links[1]["lang_tag"] == "zh-CN"
    # English build: language "en" (or unset) is the root edition.
    assert [e["current"] for e in language_links("index", None, ".html")] == [
        True,
        False,
    ]


def _stemmer_line(language_class) -> str:
    """The last line of the ``language_data.js`` that Sphinx writes for a language."""
    builder = object.__new__(IndexBuilder)  # only its stemmer code is asked for
    builder.lang = language_class({})
    return builder.get_js_stemmer_code().splitlines()[-1]


def test_the_chinese_search_names_its_stemmer_that_exists():
    assert _stemmer_line(_chinese_search()) == "window.Stemmer = EnglishStemmer;"


def test_upstream_still_needs_the_chinese_search_fix():
    """Fails once Sphinx has fixed sphinx-doc/sphinx#14229 (pull request 14416).

    Then ``site_language._chinese_search`` is not needed: delete it, and this.
    """
    assert _stemmer_line(SearchChinese) == "window.Stemmer = ChineseStemmer;"
