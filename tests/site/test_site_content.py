"""What the built pages must contain: the chapter's sections, its numbers as
the cells printed them, its exercises with their solutions, a full API
reference, and no tracebacks.

The expectations come first, in tables; the tests below only read them.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import (
    EDITION_FOLDERS,
    assert_none,
    load_site,
    source_pages,
    text_without,
)

pytestmark = pytest.mark.site

CH = "chapter3/"

# Every section of the chapter, by the page that holds it.
SECTIONS = {
    "3-1-long-sequences": ["3.1"],
    "3-2-attention-mechanisms": ["3.2"],
    "3-3-self-attention": ["3.3", "3.3.1", "3.3.2"],
    "3-4-trainable-weights": ["3.4", "3.4.1", "3.4.2"],
    "3-5-causal-attention": ["3.5", "3.5.1", "3.5.2", "3.5.3"],
    "3-6-multi-head-attention": ["3.6", "3.6.1", "3.6.2"],
    "summary": ["Summary"],
}

# The chapter's numbers, as a cell on the page must print them (any of the
# spellings). Seeded results only: dropout masks differ between platforms.
KEY_NUMBERS = [
    (("0.9544",), CH + "3-3-self-attention", "score of 'journey' against 'Your'"),
    (("1.4950",), CH + "3-3-self-attention", "score of 'journey' against itself"),
    (("0.4419",), CH + "3-3-self-attention", "context vector of 'journey', 1st"),
    (("0.6515",), CH + "3-3-self-attention", "context vector of 'journey', 2nd"),
    (("0.5683",), CH + "3-3-self-attention", "context vector of 'journey', 3rd"),
    (("0.2098",), CH + "3-3-self-attention", "first weight of the full matrix"),
    (("1.8524",), CH + "3-4-trainable-weights", "trainable score omega_22"),
    (("0.3061",), CH + "3-4-trainable-weights", "trainable context z(2), 1st"),
    (("0.8210",), CH + "3-4-trainable-weights", "trainable context z(2), 2nd"),
    (("0.2996",), CH + "3-4-trainable-weights", "SelfAttention_v1 output"),
    (("-0.0739",), CH + "3-4-trainable-weights", "SelfAttention_v2 output"),
    (("0.5517",), CH + "3-5-causal-attention", "masked, renormalized row 2"),
    (("0.4483",), CH + "3-5-causal-attention", "masked, renormalized row 2"),
    (("-0.4519",), CH + "3-5-causal-attention", "CausalAttention output, 1st"),
    (("0.2216",), CH + "3-5-causal-attention", "CausalAttention output, 2nd"),
    (("0.4772",), CH + "3-6-multi-head-attention", "wrapper output, 2nd head"),
    (("0.3190",), CH + "3-6-multi-head-attention", "MultiHeadAttention output"),
    (("0.4858",), CH + "3-6-multi-head-attention", "MultiHeadAttention output"),
    (("1.3208",), CH + "3-6-multi-head-attention", "batched matmul a @ a.T"),
    (("2360064", "2,360,064"), CH + "3-6-multi-head-attention", "GPT-2 size MHA"),
]

# The chapter's exercises (3.1 in 3.4.2; 3.2 and 3.3 in 3.6): this many per
# page, each with a solution.
EXERCISES = {
    CH + "3-4-trainable-weights": 1,
    CH + "3-6-multi-head-attention": 2,
}

# The tag of a cell that shows an error on purpose (the package's ValueError
# for a bad input, say); myst-nb lets such a cell raise and puts the tag on
# its HTML as a class.
EXPECTED_ERROR = "raises-exception"
ERROR = f"div.cell.tag_{EXPECTED_ERROR}"


def number_pattern(*spellings: str) -> re.Pattern:
    """A printed number, not part of a longer one (nor its negative)."""
    either = "|".join(map(re.escape, spellings))
    return re.compile(rf"(?<![\d.\-])(?:{either})(?![\d])")


def test_numbers_match_whole_printed_values_only():
    pattern = number_pattern("0.4483")
    assert pattern.search("tensor([0.5517, 0.4483, 0.0000])")
    assert not pattern.search("0.44830 -0.4483 10.4483")
    assert number_pattern("-0.0739").search("tensor([[-0.0739,  0.0713]])")


BOTH, ZH = tuple(EDITION_FOLDERS), ("zh_CN",)
P35, P36 = CH + "3-5-causal-attention", CH + "3-6-multi-head-attention"
ZH_COMMENT = r"inputs = example_inputs\(\)  # \(6, 3\)：六个词元，d_in = 3\n"
ZH_ALT = ".cell_output img[alt^='一个 6×6 的网格']"  # alt texts are messages too
# What a page must show: (what, editions, page, selector, pattern): the text
# of something the selector finds in the page's article holds the pattern.
SHOWN = [
    *(
        (n, BOTH, CH + page, "h1, h2, h3, h4, h5, h6", rf"^{start}(?![.\d])")
        for page, numbers in SECTIONS.items()
        for n in numbers
        for start in [re.escape(n) if n != "Summary" else "(Summary|本章小结|小结)"]
    ),
    *(
        (m, BOTH, page, "div.cell_output", number_pattern(*v).pattern)
        for v, page, m in KEY_NUMBERS
    ),
    ("error: input too long", BOTH, P35, ERROR, "tokens but context_length is"),
    ("error: heads", BOTH, P36, ERROR, "d_out must be divisible by num_heads"),
    ("comment translated, code not", ZH, P35, "div.cell_input pre", ZH_COMMENT),
    ("alt text translated", ZH, P35, ZH_ALT, ""),
]


@pytest.mark.parametrize(
    ("edition", "docname", "selector", "pattern"),
    [(e, *row[2:]) for row in SHOWN for e in row[1]],
    ids=[f"{e}-{row[0]}" for row in SHOWN for e in row[1]],
)
def test_page_shows(edition, docname, selector, pattern):
    article = load_site(edition).page(docname + ".html").article
    texts = [el.get_text() for el in article.select(selector)]
    assert any(re.search(pattern, text) for text in texts), (
        f"nothing {selector!r} finds on {docname} holds {pattern!r}: {texts[:12]}"
    )


def test_every_source_page_is_built(site):
    """Every page in ``book/`` (not in ``_*`` folders) has its HTML."""
    missing = sorted(source_pages() - {p.rel for p in site.pages})
    assert not missing, f"pages in book/ without HTML (stale build?): {missing}"


def test_every_exercise_has_a_solution(site):
    """Each solution follows its exercise (exercise_style in conf.py): the next
    box after an exercise is its solution. That it is collapsed and opens on a
    click is test_site_browser.py's ``solutions``."""

    def missing(page):
        boxes = page.article.select("div.exercise, div.solution")
        for here, after in zip(boxes, [*boxes[1:], None][: len(boxes)], strict=True):
            if "exercise" in here["class"] and (
                after is None or "solution" not in after["class"]
            ):
                yield f"{page.docname}: exercise {here.get('id')} has no solution"

    assert_none((m for page in site.book_pages for m in missing(page)), "exercises")


def test_no_page_shows_a_traceback(site):
    """Errors appear only where a page shows one on purpose, and only as ValueError.

    Any other cell that raises, and any traceback, is a bug in the page.
    """
    problems = []
    for page in site.pages:
        # Not errors: the package's source (viewcode's pages) and the doctests of
        # its docstrings on the API page, which show a refusal on purpose and
        # which `make unit` runs, so their tracebacks are the real ones.
        if page.docname.startswith("_modules/"):
            continue
        text = page.article.get_text()
        for doctest in page.article.select("div.doctest"):
            text = text.replace(doctest.get_text(), "")
        if "Traceback (most recent call last)" in text:
            problems.append(f"{page.docname}: 'Traceback (most recent call last)'")
        for block in page.article.select("div.output.traceback, div.output.error"):
            cell = block.find_parent("div", class_="cell")
            tagged = cell and f"tag_{EXPECTED_ERROR}" in cell["class"]
            if not tagged or "ValueError" not in block.get_text():
                problems.append(f"{page.docname}: error {block.get_text()[:80]!r}")
    for notebook in sorted((site.html / "_downloads").rglob("*.ipynb")):
        for cell in json.loads(notebook.read_text("utf-8"))["cells"]:
            tagged = EXPECTED_ERROR in cell.get("metadata", {}).get("tags", [])
            problems += [
                f"{notebook.name}: {output['ename']}: {output['evalue']}"
                for output in cell.get("outputs", [])
                if output["output_type"] == "error"
                and not (tagged and output["ename"] == "ValueError")
            ]
    assert_none(
        problems,
        f"errors shown, and not as a ValueError in a cell tagged {EXPECTED_ERROR!r}",
    )


# "Exercise 3.1: <title>", as in the printed book, in each edition.
EXERCISE_TITLE = {"en": r"^Exercise 3\.[1-3]: \S", "zh_CN": r"^练习 3\.[1-3]：\S"}


def test_chapter_exercises_read_exercise_number_colon(site):
    select = "div.exercise p.admonition-title"
    titles = {
        d: [t.get_text().strip() for t in site.page(f"{d}.html").article.select(select)]
        for d in EXERCISES
    }
    assert {d: len(t) for d, t in titles.items()} == EXERCISES, titles
    form = EXERCISE_TITLE[site.edition]
    wrong = [t for page in titles.values() for t in page if not re.match(form, t)]
    assert not wrong, wrong


def test_api_page_documents_every_public_name(site):
    import attention

    page = site.page("reference/api.html")
    documented = {dt.get("id") for dt in page.article.select("dt[id]")}
    missing = [n for n in attention.__all__ if f"attention.{n}" not in documented]
    assert not missing, f"in attention.__all__ but not on the API page: {missing}"


@pytest.mark.parametrize("page", ["reference/api.html", "reference/internals.html"])
def test_api_pages_show_no_literal_markup(site, page):
    """Docstrings render: no reST ``double backticks`` or ``:role:`` left as
    text (napoleon misreads a badly indented ``Shape:`` line, for example)."""
    text = text_without(site.page(page).article, "pre, script", " ")
    leaks = re.findall(r".{0,40}(?:``|:(?:class|func|meth|data|mod):`).{0,40}", text)
    assert not leaks, f"{len(leaks)} literal markup on {page}: {leaks[:5]}"


def test_every_image_says_what_it_shows(site):
    """Alt text on every image of the book's pages, and never a file name.

    (Sphinx's own index pages use a decorative "-" icon; they are not checked.)
    """
    looks_like_a_file = re.compile(r"(^|/)[\w.-]+\.(png|svg|jpe?g|gif)$|_images/")
    problems = [
        f"{page.docname}: {img.get('src')} alt={alt!r}"
        for page in site.book_pages
        for img in page.article.select("img")
        if len(alt := (img.get("alt") or "").strip()) < 10
        or looks_like_a_file.search(alt)
    ]
    assert_none(problems, "images without a real alt text")
