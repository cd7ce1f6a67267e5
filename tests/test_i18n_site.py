"""Unit tests of book/_ext/i18n_site.py: switch links and notebook text."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import i18n_site  # noqa: E402
from i18n_site import language_links, other_edition_url, translate_markdown  # noqa: E402


def test_doctests():
    result = doctest.testmod(i18n_site)
    assert result.attempted > 0 and result.failed == 0


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


MARKDOWN = """\
(sec-x)=
# A title

A paragraph
on two lines with `code`.

- an item
  that wraps
- another item

$$
x = y
$$

```{admonition} A note
:class: tip

Inside the note.
```

```{code-cell} python
# A comment
```

| a | b |
|---|---|
"""

TABLE = {
    "A title": "标题",
    "A paragraph on two lines with `code`.": "一段带 `code` 的文字。",
    "an item that wraps": "一项",
    "another item": "另一项",
    "x = y": "不应出现",
    "A note": "注释",
    "Inside the note.": "注释里面。",
    "A comment": "不应出现",
    "a": "不应出现",
}


def test_markdown_cells_are_translated_paragraph_by_paragraph():
    out = translate_markdown(MARKDOWN, TABLE.get)
    assert out.splitlines() == [
        "(sec-x)=",
        "# 标题",
        "",
        "一段带 `code` 的文字。",
        "",
        "- 一项",
        "- 另一项",
        "",
        "$$",
        "x = y",
        "$$",
        "",
        "```{admonition} 注释",
        ":class: tip",
        "",
        "注释里面。",
        "```",
        "",
        "```{code-cell} python",
        "# A comment",
        "```",
        "",
        "| a | b |",
        "|---|---|",
    ]


def test_untranslated_markdown_is_unchanged():
    assert translate_markdown(MARKDOWN, lambda message: None) == MARKDOWN
