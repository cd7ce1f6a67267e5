"""The two editions of the built site: English at ``$BUILDDIR/html``, 简体中文
at ``$BUILDDIR/html/zh_CN``, from one source and one execution.

- the same pages, each with ``<html lang>`` right and a language switch that
  leads to the same page in the other edition (so each page is in both);
- every shown code block is the English one once comments are removed (with
  :mod:`tokenize`), every output is the English one, character for character;
- the translated comments, front page and notebook downloads are Chinese;
- Chinese search finds 注意力权重 and 因果 (in Chromium, network off).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest
from conftest import CJK, ROOT, Site, assert_none, build_dir, load_site, text_without
from i18n_code import code_tokens
from test_notebooks_standalone import downloads

pytestmark = pytest.mark.site

ZH = "zh_CN"
# Code blocks a reader sees (cell sources, listings, fenced code), outputs aside.
CODE = "div[class*='highlight-'] pre:not(.cell_output pre)"


@pytest.fixture(scope="session")
def zh() -> Site:
    return load_site(ZH)


def _python(pre) -> bool:
    div = pre.find_parent("div", class_=re.compile("^highlight-"))
    classes = " ".join(div["class"]) if div else ""
    return bool(re.search(r"highlight-(i?python3?|py|default)\b", classes))


def test_the_catalogs_hold_every_message_of_the_english_pages(tmp_path):
    """No English edit is left out of the catalogs (`make update-po` forgotten).

    The gettext builder reads the pages as they are now, through the build's
    execution cache (it executes nothing); every message it finds must be in
    its page's catalog, translated and not fuzzy, or the Chinese edition
    would show it in English.
    """
    from sphinx_intl.catalog import load_po

    python = ROOT / ".venv" / "bin" / "python"
    command = [
        str(python if python.exists() else sys.executable), "-m", "sphinx",
        "-b", "gettext", "-c", ".", "-q",
        # the build's execution cache, named as the Makefile names it
        "-D", f"nb_execution_cache_path={build_dir().resolve() / 'jupyter_cache'}",
        "-d", str(build_dir() / "doctrees-gettext-check"),
        "book", str(tmp_path / "gettext"),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    catalogs = ROOT / "book" / "locales" / ZH / "LC_MESSAGES"
    left = []
    for pot in sorted((tmp_path / "gettext").rglob("*.pot")):
        page = pot.relative_to(tmp_path / "gettext").with_suffix(".po")
        po = catalogs / page
        translated = {}
        if po.is_file():
            translated = {m.id: m.string for m in load_po(po) if m.id and not m.fuzzy}
        for message in load_po(pot):
            if message.id and not translated.get(message.id):
                left.append(f"{page}: {' '.join(str(message.id).split())[:90]}")
    assert not left, (
        "messages of the English pages that the Chinese edition shows in "
        "English (run `make update-po`, then translate):\n" + "\n".join(left[:40])
    )


def test_html_lang_and_a_language_switch_to_the_same_page(english, zh):
    """Every page of each edition, so also: both editions have the same pages.
    Neither site holds myst-nb's output folder."""
    problems = []
    for edition, other, lang in ((english, zh, "en"), (zh, english, "zh-CN")):
        if (edition.html / "jupyter_execute").exists():
            problems.append(f"{edition.html}: myst-nb's output folder is in it")
        for page in edition.pages:
            if page.soup.html.get("lang") != lang:
                problems.append(f"{page.path}: lang={page.soup.html.get('lang')!r}")
            links = page.soup.select("nav.language-switch a[hreflang]")
            if len(links) != 1:
                problems.append(f"{page.path}: {len(links)} switch links")
                continue
            href = links[0]["href"]
            target = page.resolve(href)
            if target != (other.html / page.rel).resolve() or not target.is_file():
                problems.append(f"{page.path}: switch goes to {href} ({target})")
            if href.startswith(("/", "http:", "https:", "file:")):
                problems.append(f"{page.path}: switch link is not relative: {href}")
    assert_none(problems, "<html lang>, language switches or stray folders")


def _outputs(page) -> list[tuple[str, list[str]]]:
    """Each cell output: its text and its images' files, figure captions aside
    (a caption is prose, so it is translated)."""
    return [
        (text_without(out, "figcaption"), [Path(i["src"]).name for i in out("img")])
        for out in page.article.select(".cell_output")
    ]


def test_code_and_outputs_are_identical_once_comments_are_removed(english, zh):
    problems, translated_blocks = [], 0
    for en in english.pages:
        cn = zh.page(en.rel)
        a, b = _outputs(en), _outputs(cn)
        if len(a) != len(b):
            problems.append(f"{en.rel}: {len(a)} vs {len(b)} outputs")
        problems += [
            f"{en.rel}: output {i} differs"
            for i, (x, y) in enumerate(zip(a, b, strict=False))
            if x != y
        ]
        en_code, zh_code = en.article.select(CODE), cn.article.select(CODE)
        if len(en_code) != len(zh_code):
            problems.append(f"{en.rel}: {len(en_code)} vs {len(zh_code)} code blocks")
            continue
        for i, (a, b) in enumerate(zip(en_code, zh_code, strict=True)):
            a_text, b_text = a.get_text(), b.get_text()
            if not _python(a):
                if a_text != b_text:
                    problems.append(f"{en.rel}: non-Python block {i} differs")
                continue
            try:
                same = code_tokens(a_text) == code_tokens(b_text)
            except (tokenize.TokenError, SyntaxError) as exc:
                problems.append(f"{en.rel}: block {i} does not tokenize: {exc}")
                continue
            if not same:
                problems.append(f"{en.rel}: code block {i} differs beyond comments")
            translated_blocks += a_text != b_text
    assert_none(problems, "the Chinese edition shows other code or outputs")
    assert translated_blocks, "no code block has a translated comment: not applied"


def test_front_page_is_chinese(zh):
    article = zh.page("index.html").article
    texts = [el.get_text(" ", strip=True) for el in article.select("h1, p")]
    english = [t for t in texts if t and not CJK.search(t)]
    assert texts and not english, f"untranslated on the front page: {english}"
    captions = [c.get_text() for c in zh.page("index.html").soup.select(".caption")]
    assert captions and all(CJK.search(c) for c in captions), captions


def test_download_notes_are_chinese(zh):
    """The note book/_ext/downloads.py adds under each page title (``notebooks.po``)."""
    notes = [
        (page.rel, " ".join(text_without(note, "pre, code", " ").split()))
        for page in zh.pages
        for note in page.article.select(".nb-download-tip")
    ]
    english = [
        f"{rel}: {text[:80]}"
        for rel, text in notes
        if re.search(r"[A-Za-z]{4,}", text.replace("Jupyter", ""))
    ]
    assert_none(english, "English left in the download notes")


def test_notebook_downloads_carry_the_chinese_text():
    """Their code and outputs are the English ones: test_notebooks_standalone.py."""
    cells = downloads()[f"{ZH}/3-5-causal-attention.ipynb"].read_text("utf-8")
    cells = nbformat.reads(cells, as_version=4).cells
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert "# 3.5 用因果注意力遮住后面的词" in markdown
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    assert "# (6, 3)：六个词元，d_in = 3" in code


def test_chinese_search_index_is_segmented(zh):
    text = (zh.html / "searchindex.js").read_text("utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    terms = set(index["terms"]) | set(index["titleterms"])
    # jieba cut the Chinese text into words, not into single characters
    assert {"注意力", "因果"} <= terms, sorted(t for t in terms if CJK.search(t))[:40]


# -- Search in the browser ---------------------------------------------------------
@pytest.fixture(scope="module")
def browser_tab(english, chromium):
    from test_site_browser import serve

    with serve(english.html) as origin:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        context.route(
            lambda url: not url.startswith(origin + "/"),
            lambda route: route.abort("blockedbyclient"),
        )
        yield origin, context.new_page()
        context.close()


def _search(browser_tab, query: str, shot: Path) -> list[str]:
    origin, tab = browser_tab
    tab.goto(f"{origin}/{ZH}/search.html?q={quote(query)}", wait_until="load")
    # Sphinx lists the results one at a time, 5 ms apart, and writes its
    # summary ("found N pages") only after the last: wait for the summary, or
    # a late result (the front page ranks low) is not there yet.
    tab.wait_for_function(
        "document.querySelector('#search-results p.search-summary')"
        "?.innerText.length > 0",
        timeout=20_000,
    )
    shot.parent.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(shot))
    hrefs = tab.eval_on_selector_all(
        "#search-results ul.search li a", "els => els.map(e => e.href)"
    )
    prefix = f"{origin}/{ZH}/"
    return sorted({h.split("#")[0].split("?")[0].removeprefix(prefix) for h in hrefs})


@pytest.mark.browser
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("注意力权重", "chapter3/3-5-causal-attention.html"),
        ("因果", "chapter3/3-5-causal-attention.html"),
        ("因果", "index.html"),
    ],
)
def test_chinese_search_finds_the_pages(zh, browser_tab, query, expected):
    shot = zh.html.parents[1] / "screenshots" / f"zh-search-{query}.png"
    found = _search(browser_tab, query, shot)
    assert expected in found, f"searching {query!r} found {found}"
    # and every result holds the query's words
    for rel in found:
        text = zh.page(rel).soup.get_text()
        assert all(word in text for word in query.split()), (rel, query)


def _prose(article) -> list[str]:
    """The article's paragraphs, code and math each shown as one ``X``, as a
    browser lays them out (a line break inside a paragraph is a space)."""
    article = copy.copy(article)
    for tag in article.select(".cell_output, script, style, pre"):
        tag.decompose()
    for tag in article.select("code, .math"):
        tag.replace_with("X")
    blocks = article.select("p, li > p, h1, h2, h3, h4, th, td, dt, figcaption")
    return [" ".join(block.get_text("").split()) for block in blocks]


def test_no_space_between_two_chinese_characters(zh):
    """Chinese has no spaces between words; a space between two Chinese
    characters is a slip, most often around a cross-reference whose text is
    Chinese (write 见{doc}`第 3.5 节 <…>`，not 见 {doc}`…` ，)."""
    gaps = re.compile(
        r"[\u4e00-\u9fff\uff0c\u3002\uff1a\uff1b\uff08\uff09] +[\u4e00-\u9fff]"
    )
    problems = [
        f"{page.rel}: …{text[max(0, m.start() - 12) : m.end() + 12]}…"
        for page in zh.pages
        if page.is_book_page
        for text in _prose(page.article)
        for m in gaps.finditer(text)
    ]
    assert_none(problems[:30], f"{len(problems)} spaces between Chinese characters")


def test_code_cell_toggles_are_chinese(zh):
    """myst-nb's toggle texts, set by -D on the Makefile's zh line."""
    toggles = [
        (page.rel, p.get_text(strip=True))
        for page in zh.pages
        for p in page.article.select("details.hide summary, .toggle-details__summary")
    ]
    assert toggles, "no toggles found: the selector is stale"
    english = [(rel, text) for rel, text in toggles if re.search(r"[A-Za-z]", text)]
    assert not english, (
        f"{len(english)} of {len(toggles)} toggles in English: {english[:5]}"
    )


def test_a_folded_solutions_hint_is_chinese(zh):
    """sphinx-togglebutton writes its hint ("Click to show") into each page's
    script, from -D togglebutton_hint on the Makefile's zh line."""
    page = zh.page("beyond/padding.html")
    hints = dict(re.findall(r"(toggleHint\w+) = '([^']*)'", page.soup.decode()))
    assert hints == {"toggleHintShow": "点击显示", "toggleHintHide": "点击隐藏"}


# Labels only a screen reader reads, written in English into the themes' and
# myst-nb's HTML with no translation or option to change them, and the
# switch's own bilingual name. Everything else a theme labels is Chinese.
ENGLISH_LABELS_LEFT = {
    "Main": "sphinx-book-theme's sidebar <nav>, hard-coded in sbt-sidebar-nav.html",
    "Page": "sphinx-book-theme's print-only contents <nav>, hard-coded in layout.html",
    "Toggle hidden content": "myst-nb's <summary>, hard-coded in its HTML visitor",
    "Language / 语言": "the language switch names itself in both languages",
}


def test_theme_labels_are_chinese(zh):
    """Tooltips, placeholders, labels and the colour menu of every zh page:
    the themes' words come from book/locales/zh_CN/LC_MESSAGES/sphinx.po,
    the two sidebar buttons from book/_templates, the search box's from the
    Makefile (``-D html_theme_options.search_bar_text``). API titles
    (``attention.…``) are names, and a formula's label is its TeX."""
    english = set()
    for page in zh.pages:
        for tag in page.soup.select("[title], [aria-label], [placeholder]"):
            if tag.find_parent(class_="math"):  # svgmath: the label is the TeX
                continue
            for attribute in ("title", "aria-label", "placeholder"):
                value = tag.get(attribute, "")
                if (
                    re.search(r"[A-Za-z]{3}", value)
                    and not CJK.search(value)
                    and not value.startswith("attention.")
                    and value not in ENGLISH_LABELS_LEFT
                ):
                    english.add((attribute, value))
        for item in page.soup.select(".theme-change-button"):
            if re.search(r"[A-Za-z]", item.get_text(strip=True)):
                english.add(("colour menu", item.get_text(strip=True)))
    assert not english, f"theme labels in English on zh pages: {sorted(english)}"
    assert "搜索本书…" in zh.pages[0].soup.decode(), "the search box's placeholder"


def test_footer_and_print_button_read_as_the_editions_chinese(zh):
    """The footer's names and punctuation come from the Makefile's -D author
    and -D copyright and from sphinx.po; the print button's tooltip from the
    book's booktheme.po, read before sphinx-book-theme's Taiwanese catalog."""
    page = zh.page("index.html")
    footer = page.soup.select_one(".bd-footer-content").get_text(" ", strip=True)
    assert "作者：本书作者" in footer, footer
    assert "版权所有 © 2026，本书作者。" in footer, footer
    assert not re.search(r"[A-Za-z]{3}", footer), footer
    tooltips = {tag["title"] for tag in page.soup.select("[title]")}
    assert "打印本页为 PDF" in tooltips
    assert "列印成 PDF" not in tooltips


def test_exercise_and_solution_titles_are_chinese(zh):
    """sphinx-exercise's zh_CN catalog has "Exercise" (练习) but no
    "Solution": book/locales/zh_CN/LC_MESSAGES/exercise.po fills it."""
    titles = [
        (page.rel, title.get_text(" ", strip=True))
        for page in zh.pages
        for title in page.article.select(
            ".exercise .admonition-title, .solution .admonition-title"
        )
    ]
    assert len(titles) >= 6, f"too few exercise titles found: {titles}"
    english = [
        (rel, text) for rel, text in titles if re.match(r"(Exercise|Solution)", text)
    ]
    assert not english, f"English exercise titles on zh pages: {english[:5]}"
    assert any(text.startswith("解答") for _, text in titles)
