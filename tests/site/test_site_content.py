"""What the built pages must contain: the chapter's sections, its numbers as
the cells printed them, collapsed solutions, notebooks to download, a full
API reference, and no tracebacks.

The expectations come first, in tables; the tests below only read them.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[2]
CH = "chapter3/"

# Every section of the chapter, on the page that holds it.
SECTIONS = [
    ("3.1", CH + "3-1-long-sequences"),
    ("3.2", CH + "3-2-attention-mechanisms"),
    ("3.3", CH + "3-3-self-attention"),
    ("3.3.1", CH + "3-3-self-attention"),
    ("3.3.2", CH + "3-3-self-attention"),
    ("3.4", CH + "3-4-trainable-weights"),
    ("3.4.1", CH + "3-4-trainable-weights"),
    ("3.4.2", CH + "3-4-trainable-weights"),
    ("3.5", CH + "3-5-causal-attention"),
    ("3.5.1", CH + "3-5-causal-attention"),
    ("3.5.2", CH + "3-5-causal-attention"),
    ("3.5.3", CH + "3-5-causal-attention"),
    ("3.6", CH + "3-6-multi-head-attention"),
    ("3.6.1", CH + "3-6-multi-head-attention"),
    ("3.6.2", CH + "3-6-multi-head-attention"),
    ("Summary", CH + "summary"),
]

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

# The chapter's exercises (3.1 in 3.4.2; 3.2 and 3.3 in 3.6): at least this
# many per page, each with a solution.
EXERCISES = {
    CH + "3-4-trainable-weights": 1,
    CH + "3-6-multi-head-attention": 2,
}


def number_pattern(value: str) -> re.Pattern:
    """A printed number, not part of a longer one (nor its negative)."""
    return re.compile(rf"(?<![\d.\-]){re.escape(value)}(?![\d])")


def heading_text(heading) -> str:
    """A heading's words, without the ``#`` permalink."""
    words = [s for s in heading.strings if not s.find_parent("a", class_="headerlink")]
    return "".join(words).strip()


def cell_outputs(page) -> str:
    return "\n".join(o.get_text() for o in page.article.select("div.cell_output"))


def source_pages() -> dict[str, Path]:
    """``{docname: source}`` of every page in ``book/`` (not in ``_*`` folders)."""
    book = ROOT / "book"
    sources = {p.relative_to(book): p for p in sorted(book.rglob("*.md"))}
    return {
        rel.with_suffix("").as_posix(): path
        for rel, path in sources.items()
        if not any(part.startswith("_") for part in rel.parts)
    }


def test_every_source_page_is_built(site):
    built = {p.docname for p in site.pages}
    missing = sorted(set(source_pages()) - built)
    assert not missing, f"pages in book/ without HTML (stale build?): {missing}"


@pytest.mark.parametrize(("number", "docname"), SECTIONS, ids=[s for s, _ in SECTIONS])
def test_section_heading(site, number, docname):
    page = site.page(docname + ".html")
    headings = [heading_text(h) for h in page.article.find_all(re.compile("^h[1-6]$"))]
    start = re.escape(number) if number != "Summary" else "(Summary|本章小结|小结)"
    pattern = re.compile(rf"^{start}(?![.\d])", re.IGNORECASE)
    assert any(pattern.match(h) for h in headings), (
        f"no heading '{number} ...' on {docname}; its headings: {headings}"
    )


def test_key_numbers_in_cell_outputs(site):
    outputs = {}
    missing = []
    for values, docname, meaning in KEY_NUMBERS:
        if docname not in outputs:
            outputs[docname] = cell_outputs(site.page(docname + ".html"))
        if not any(number_pattern(v).search(outputs[docname]) for v in values):
            elsewhere = [
                p.docname
                for p in site.book_pages
                if any(number_pattern(v).search(cell_outputs(p)) for v in values)
            ]
            missing.append(
                f"{' or '.join(values)} ({meaning}) on {docname}"
                + (f", found only on {elsewhere}" if elsewhere else "")
            )
    assert not missing, "numbers no cell printed:\n" + "\n".join(missing)


@pytest.mark.parametrize(("docname", "count"), EXERCISES.items())
def test_chapter_exercises(site, docname, count):
    page = site.page(docname + ".html")
    exercises = page.article.select("div.exercise")
    assert len(exercises) >= count, f"{len(exercises)} exercises, expected {count}+"


def test_every_exercise_has_a_collapsed_solution(site):
    problems = []
    for page in site.book_pages:
        solutions = page.article.select("div.solution")
        # Each solution follows its exercise (exercise_style in conf.py): the
        # next exercise or solution after an exercise is its solution.
        boxes = page.article.select("div.exercise, div.solution")
        for here, after in zip(boxes, [*boxes[1:], None][: len(boxes)], strict=True):
            if "exercise" in here.get("class", []) and (
                after is None or "solution" not in after.get("class", [])
            ):
                problems.append(
                    f"{page.docname}: exercise {here.get('id')} has no solution"
                )
        for solution in solutions:
            classes = set(solution.get("class", []))
            if not {"admonition", "dropdown"} <= classes or "toggle-shown" in classes:
                problems.append(
                    f"{page.docname}: solution {solution.get('id')} is open"
                )
        if solutions:
            scripts = [s.get("src", "") for s in page.soup.find_all("script")]
            selector = [
                s.get_text()
                for s in page.soup.find_all("script")
                if "togglebuttonSelector" in s.get_text()
            ]
            if not any("togglebutton.js" in s for s in scripts):
                problems.append(f"{page.docname}: togglebutton.js is not loaded")
            if not any(".admonition.dropdown" in s for s in selector):
                problems.append(
                    f"{page.docname}: togglebutton does not collapse dropdowns"
                )
    assert not problems, "\n".join(problems)


# The tag of a cell that shows an error on purpose (the package's ValueError
# for a bad input, say); myst-nb lets such a cell raise and puts the tag on
# its HTML as a class.
EXPECTED_ERROR = "raises-exception"


def test_no_page_shows_a_traceback(site):
    """Errors appear only where a page shows one on purpose, and only as ValueError.

    Any other cell that raises, and any traceback, is a bug in the page.
    """
    problems = []
    for page in site.pages:
        if "Traceback (most recent call last)" in page.article.get_text():
            problems.append(f"{page.docname}: 'Traceback (most recent call last)'")
        for block in page.article.select("div.output.traceback, div.output.error"):
            cell = block.find_parent("div", class_="cell")
            shown = block.get_text()
            if cell and f"tag_{EXPECTED_ERROR}" in cell.get("class", []):
                if "ValueError" not in shown:
                    problems.append(f"{page.docname}: not a ValueError {shown[:80]!r}")
                continue
            problems.append(f"{page.docname}: error output {shown[:80]!r}")
    for notebook in sorted((site.html / "_downloads").rglob("*.ipynb")):
        for cell in json.loads(notebook.read_text("utf-8"))["cells"]:
            expected = EXPECTED_ERROR in cell.get("metadata", {}).get("tags", [])
            for output in cell.get("outputs", []):
                if output["output_type"] != "error":
                    continue
                if not expected or output["ename"] != "ValueError":
                    problems.append(
                        f"{notebook.name}: {output['ename']}: {output['evalue']}"
                    )
    assert not problems, (
        "pages show errors (a cell that shows an error on purpose is tagged "
        f"{EXPECTED_ERROR!r} and raises a ValueError):\n" + "\n".join(problems)
    )


def test_pages_show_the_packages_errors_where_readers_meet_them(site):
    """3.5 shows the too-long input, 3.6 the heads that don't divide d_out."""
    expected = {
        CH + "3-5-causal-attention": "tokens but context_length is",
        CH + "3-6-multi-head-attention": "d_out must be divisible by num_heads",
    }
    for docname, message in expected.items():
        page = site.page(docname + ".html")
        shown = [
            block.get_text()
            for block in page.article.select(f"div.cell.tag_{EXPECTED_ERROR}")
        ]
        assert any(message in text for text in shown), (docname, shown)


# "Exercise 3.1: <title>", as in the printed book, in each edition.
EXERCISE_TITLE = {"en": r"^Exercise 3\.[1-3]: \S", "zh_CN": r"^练习 3\.[1-3]：\S"}


def test_exercise_titles_read_exercise_number_colon(site):
    titles = []
    for docname in EXERCISES:
        page = site.page(docname + ".html")
        titles += [
            t.get_text().strip()
            for t in page.article.select("div.exercise p.admonition-title")
        ]
    assert len(titles) == sum(EXERCISES.values())
    form = EXERCISE_TITLE[site.edition]
    wrong = [t for t in titles if not re.match(form, t)]
    assert not wrong, wrong


VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
WHEEL = f"attention-{VERSION}-py3-none-any.whl"
INSTALL = f'pip install "{WHEEL}[notebooks]"'


def test_executed_pages_offer_their_notebook(site):
    executed = {p.docname for p in site.book_pages if p.is_notebook}
    with_cells = {p.docname for p in site.book_pages if p.has_cells}
    assert with_cells <= executed, (
        "pages with code cells but no executed notebook in "
        f"{site.notebooks}: {sorted(with_cells - executed)}"
    )
    problems = []
    for docname in sorted(executed):
        page = site.page(docname + ".html")
        links = page.article.select("a.download[href$='.ipynb']")
        if len(links) != 1:
            problems.append(f"{docname}: {len(links)} notebook download links")
            continue
        note = links[0].find_parent("div", class_="nb-download-tip")
        if note is None or INSTALL not in note.get_text():
            problems.append(f"{docname}: the download note lacks {INSTALL}")
        else:
            for suffix in (".whl", ".zip"):
                found = [a for a in note.select("a") if a["href"].endswith(suffix)]
                if len(found) != 1 or not page.resolve(found[0]["href"]).is_file():
                    problems.append(f"{docname}: the note's {suffix} link is broken")
        target = page.resolve(links[0]["href"])
        name = docname.rsplit("/", 1)[-1] + ".ipynb"
        if target.name != name:
            problems.append(f"{docname}: the link serves {target.name}, not {name}")
        elif not target.is_file():
            problems.append(f"{docname}: {links[0]['href']} is not in the build")
        else:
            notebook = json.loads(target.read_text("utf-8"))
            code = [c for c in notebook.get("cells", []) if c["cell_type"] == "code"]
            if notebook.get("nbformat") != 4 or not any(c.get("outputs") for c in code):
                problems.append(f"{docname}: {target.name} is not an executed notebook")
    assert not problems, "\n".join(problems)


def test_api_page_documents_every_public_name(site):
    import attention

    page = site.page("reference/api.html")
    documented = {dt.get("id") for dt in page.article.select("dt[id]")}
    missing = [n for n in attention.__all__ if f"attention.{n}" not in documented]
    assert not missing, f"in attention.__all__ but not on the API page: {missing}"


def test_api_page_shows_no_literal_markup(site):
    """Docstrings render: no reST ``double backticks`` or ``:role:`` left as
    text (napoleon misreads a badly indented ``Shape:`` line, for example)."""
    article = site.page("reference/api.html").article
    for tag in article.select("pre, script"):
        tag.decompose()
    text = article.get_text(" ")
    leaks = re.findall(r".{0,40}(?:``|:(?:class|func|meth|data|mod):`).{0,40}", text)
    assert not leaks, f"{len(leaks)} literal markup on the API page: {leaks[:5]}"


def test_every_image_says_what_it_shows(site):
    """Alt text on every image of the book's pages, and never a file name.

    (Sphinx's own index pages use a decorative "-" icon; they are not checked.)
    """
    looks_like_a_file = re.compile(r"(^|/)[\w.-]+\.(png|svg|jpe?g|gif)$|_images/")
    problems = []
    for page in site.book_pages:
        for img in page.article.select("img"):
            alt = (img.get("alt") or "").strip()
            if len(alt) < 10 or looks_like_a_file.search(alt):
                problems.append(f"{page.docname}: {img.get('src')} alt={alt!r}")
    assert not problems, "\n".join(problems)
