"""The site under a sub-path, as GitHub Pages serves a project site:
``https://<user>.github.io/<repo>/``.

A small server maps ``/attention-book/...`` to ``$BUILDDIR/html`` and answers
404 to every other path, as the host does for whatever lies outside the
project. Chromium opens the front page and deep pages of both editions (a
figure, formulas, the live widgets, the API's source pages), follows the
language switch both ways, searches, and fetches every download the front
pages and a chapter page offer (the wheel, the sdist, the archive of
notebooks, a page's notebook, the PDFs when ``make pdf`` has put them in).
Each fails on a request that leaves the sub-path or fails, on a link or
source on the page that points outside it, and on an error in the console.
``test_the_checks_catch_what_a_sub_path_breaks`` shows they fail on a page
with a root-relative path (``src="/..."``): the bug a sub-path exposes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest
from conftest import EDITION_FOLDERS, assert_none, load_site

pytestmark = pytest.mark.browser

PREFIX = "/attention-book"  # where the repository's name would be
EDITIONS = {
    edition: f"{folder}/" if folder else ""
    for edition, folder in EDITION_FOLDERS.items()
}
# Pages at each depth (3.3 is opened by the tests of figures, widgets and
# downloads).
PAGES = [
    "",  # the front page, as the host shows it: the folder's index.html
    "chapter3/3-5-causal-attention.html",
    "beyond/flash-attention.html",
    "reference/api.html",
    "_modules/attention/causal.html",  # the source behind the API's [source]
]
FIGURES = "chapter3/3-3-self-attention.html"  # figures and formulas
WIDGET_PAGES = [
    "chapter3/3-3-self-attention.html",
    "beyond/attention-that-has-learned.html",
]
SWITCH = "a.language-switch-link"
SEARCH = {"en": "softmax", "zh_CN": "注意力"}
RESULTS = "#search-results ul.search li a"
# The first bytes of each kind of download.
MAGIC = {".whl": "PK", ".zip": "PK", ".gz": "\x1f\x8b", ".pdf": "%PDF", ".ipynb": "{"}
DOWNLOADS = "article a[href], .book-pdf a[href]"

# Every href and src on the page, resolved as the browser does, that stays on
# this host but leaves the sub-path.
OUTSIDE_REFERENCES = """base => {
  const found = [];
  for (const el of document.querySelectorAll("[href], [src]")) {
    for (const name of ["href", "src"]) {
      const value = el.getAttribute(name);
      if (value === null) continue;
      const url = new URL(value, document.baseURI);
      if (url.origin === location.origin && !url.href.startsWith(base)) {
        found.push(`<${el.tagName.toLowerCase()} ${name}="${value}">`);
      }
    }
  }
  return found;
}"""
BROKEN_IMAGES = """() => Array.from(document.images)
  .filter(img => !img.complete || img.naturalWidth === 0)
  .map(img => img.getAttribute("src"))"""
# Status, size and the first bytes (as text, one character per byte) of a URL.
FETCH = """async href => {
  const response = await fetch(href);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return [response.url, response.status, bytes.length,
          String.fromCharCode(...bytes.slice(0, 4))];
}"""


class SubPathHandler(SimpleHTTPRequestHandler):
    """Serves its folder at ``PREFIX/`` and nothing anywhere else."""

    def do_GET(self):
        if self.strip_prefix():
            super().do_GET()

    def do_HEAD(self):
        if self.strip_prefix():
            super().do_HEAD()

    def strip_prefix(self) -> bool:
        """Take PREFIX off the request's path, or answer the request here:
        404 outside the prefix; a folder asked for without its final slash is
        sent on to it within the prefix (the handler's own redirect, made
        after the prefix is gone, would leave it)."""
        path = urlsplit(self.path).path
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            self.send_error(404, f"Not under {PREFIX}/")
            return False
        inside = path.removeprefix(PREFIX)
        folder = Path(self.directory) / unquote(inside).lstrip("/")
        if not inside.endswith("/") and folder.is_dir():
            self.send_response(301)
            self.send_header("Location", f"{PREFIX}{inside}/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        self.path = self.path.removeprefix(PREFIX)
        return True

    def log_message(self, *args):  # keep pytest's output clean
        pass


@contextlib.contextmanager
def serve_under_prefix(folder: Path):
    """The folder served at ``http://127.0.0.1:<port>/attention-book/``."""
    handler = functools.partial(SubPathHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{PREFIX}/"
    finally:
        server.shutdown()
        server.server_close()


class Watch:
    """One tab on the served site, and what it does that a sub-path breaks:
    requests outside ``base`` (aborted), failed requests, error responses,
    console errors. ``open`` returns the problems of one page."""

    def __init__(self, chromium, base: str):
        self.base = base
        self.problems: list[str] = []
        self.context = chromium.new_context(
            viewport={"width": 1280, "height": 900}, reduced_motion="reduce"
        )
        self.context.route("**/*", self._route)
        self.tab = self.context.new_page()
        self.tab.on("console", self._console)
        self.tab.on(
            "pageerror", lambda error: self.problems.append(f"uncaught: {error}")
        )
        self.tab.on("requestfailed", self._failed)
        self.tab.on("response", self._response)

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.base):
            route.continue_()
        else:
            self.problems.append(f"request outside {self.base}: {url}")
            route.abort("blockedbyclient")

    def _console(self, message):
        if message.type == "error":
            self.problems.append(f"console: {message.text} ({message.location})")

    def _failed(self, request):
        if request.url.startswith(self.base):  # the others are noted when aborted
            self.problems.append(f"failed: {request.url} ({request.failure})")

    def _response(self, response):
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def take(self) -> list[str]:
        """The problems seen since the last call."""
        problems, self.problems = self.problems, []
        return problems

    def open(self, rel: str) -> list[str]:
        """Open a page (a path under ``base``); its problems, with the links
        and sources on it that point outside the sub-path, and its images that
        did not load."""
        self.take()
        self.tab.goto(self.base + rel, wait_until="networkidle")
        return self.check()

    def check(self) -> list[str]:
        """The open page's problems so far, and what the page points to."""
        outside = self.tab.evaluate(OUTSIDE_REFERENCES, self.base)
        broken = self.tab.evaluate(BROKEN_IMAGES)
        return (
            self.take()
            + [f"points outside {self.base}: {ref}" for ref in outside]
            + [f"image not loaded: {src}" for src in broken]
        )

    def close(self):
        self.context.close()


@pytest.fixture(scope="module")
def watch(chromium):
    """The whole built site (both editions) under the sub-path, and a tab on it."""
    site = load_site("en")  # fails, naming the folder, when nothing is built
    with serve_under_prefix(site.html) as base:
        watch = Watch(chromium, base)
        yield watch
        watch.close()


def page_id(rel: str) -> str:
    return rel or "front-page"


@pytest.mark.parametrize("rel", PAGES, ids=page_id)
@pytest.mark.parametrize("edition", EDITIONS)
def test_pages_work_under_the_sub_path(watch, edition, rel):
    assert_none(watch.open(EDITIONS[edition] + rel), f"{edition} {rel or 'front page'}")


@pytest.mark.parametrize("edition", EDITIONS)
def test_figures_and_formulas_load_under_the_sub_path(watch, edition):
    """The page's figures are images from the site; its formulas are SVG
    drawn at build time (book/_ext/svgmath.py), each in its ``.math`` box."""
    problems = watch.open(EDITIONS[edition] + FIGURES)
    images = watch.tab.eval_on_selector_all("article img", "els => els.length")
    formulas = watch.tab.eval_on_selector_all(".math", "els => els.length")
    drawn = watch.tab.eval_on_selector_all(".math svg", "els => els.length")
    assert images and formulas, f"{FIGURES} has {images} images, {formulas} formulas"
    assert drawn >= formulas, f"{drawn} of {formulas} formulas drawn"
    assert_none(problems, f"{edition} {FIGURES}")


@pytest.mark.parametrize("rel", WIDGET_PAGES)
@pytest.mark.parametrize("edition", EDITIONS)
def test_live_widgets_run_under_the_sub_path(watch, edition, rel):
    """The widgets load their weights and script from the site and draw."""
    watch.take()
    watch.tab.goto(watch.base + EDITIONS[edition] + rel, wait_until="networkidle")
    watch.tab.wait_for_selector("[data-attention-live].al-ready", timeout=10_000)
    assert_none(watch.check(), f"{edition} {rel}")


@pytest.mark.parametrize("rel", ["", "chapter3/3-5-causal-attention.html"], ids=page_id)
def test_the_language_switch_goes_both_ways_under_the_sub_path(watch, rel):
    """English -> 简体中文 -> English, on the same page, inside the sub-path.
    The front page is opened as the folder the host shows: its links must
    hold from there too."""
    chinese = watch.base + EDITIONS["zh_CN"] + (rel or "index.html")
    english = watch.base + (rel or "index.html")
    problems = watch.open(rel)
    for target in (chinese, english):
        watch.tab.click(SWITCH)
        watch.tab.wait_for_load_state("networkidle")
        assert watch.tab.url == target, f"the switch led to {watch.tab.url}"
        problems += watch.check()
    assert_none(problems, f"the language switch from {rel or 'the front page'}")


@pytest.mark.parametrize("edition", EDITIONS)
def test_search_works_under_the_sub_path(watch, edition):
    """The search page finds pages, its results link inside the sub-path, and
    the first result opens."""
    query = SEARCH[edition]
    problems = watch.open(f"{EDITIONS[edition]}search.html?q={quote(query)}")
    watch.tab.wait_for_selector(RESULTS, timeout=20_000)
    problems += watch.check()  # the summaries are fetched from the result pages
    hrefs = watch.tab.eval_on_selector_all(RESULTS, "els => els.map(e => e.href)")
    outside = [href for href in hrefs if not href.startswith(watch.base)]
    assert hrefs and not outside, f"{query!r}: {len(hrefs)} results, outside: {outside}"
    first = hrefs[0].split("#")[0]
    watch.tab.click(RESULTS)
    watch.tab.wait_for_url(first + "**")
    problems += watch.check()
    assert_none(problems, f"{edition} search for {query!r}")


@pytest.mark.parametrize("edition", EDITIONS)
def test_downloads_work_under_the_sub_path(watch, edition):
    """Every file the front page and a chapter page offer comes from inside
    the sub-path and is what its name says: the wheel, the sdist, the archive
    of notebooks, the page's notebook, and the PDF once ``make pdf`` put it in
    the site (then the front page must offer it)."""
    prefix = EDITIONS[edition]
    problems, fetched = [], {}
    for rel in ("", FIGURES):
        problems += watch.open(prefix + rel)
        hrefs = watch.tab.eval_on_selector_all(
            DOWNLOADS, "els => els.map(e => e.getAttribute('href'))"
        )
        for href in hrefs:
            suffix = next((s for s in MAGIC if href.endswith(s)), None)
            if suffix:
                url, status, size, start = watch.tab.evaluate(FETCH, href)
                fetched[url] = suffix
                if status != 200 or not size or not start.startswith(MAGIC[suffix]):
                    problems.append(f"{href}: HTTP {status}, {size} bytes, {start!r}")
        problems += watch.check()
    # A link to a PDF that is not there (make pdf not run) is a 404 above.
    assert_none(problems, f"{edition} downloads")
    kinds = sorted(set(fetched.values()))
    expected = [".gz", ".ipynb", ".whl", ".zip"]
    pdf = "book.pdf" if edition == "en" else f"book-{edition}.pdf"
    if (load_site(edition).html / pdf).is_file():
        expected.append(".pdf")
    assert sorted(expected) == kinds, (
        f"downloads fetched: {json.dumps(fetched, indent=1)}"
    )


def test_the_checks_catch_what_a_sub_path_breaks(chromium, tmp_path):
    """A page with root-relative paths, served the same way: each breaks."""
    (tmp_path / "logo.png").write_bytes(b"")  # there, but at the host's root
    (tmp_path / "index.html").write_text(
        """<!doctype html><html><head><title>t</title>
        <link rel="stylesheet" href="missing.css"></head><body>
        <img src="/logo.png" alt="logo"><a href="/other.html">other</a>
        <script>console.error("boom")</script></body></html>""",
        "utf-8",
    )
    (tmp_path / "deep").mkdir()
    with serve_under_prefix(tmp_path) as base:
        watch = Watch(chromium, base)
        try:
            problems = "\n".join(watch.open(""))
            watch.tab.goto(base.removesuffix("/") + "/deep", wait_until="load")
            redirected = watch.tab.url
        finally:
            watch.close()
    assert (
        f"request outside {base}: {base.removesuffix(PREFIX + '/')}/logo.png"
        in problems
    )
    assert '<img src="/logo.png">' in problems and '<a href="/other.html">' in problems
    assert f"HTTP 404: {base}missing.css" in problems
    assert "image not loaded: /logo.png" in problems
    assert "console: boom" in problems
    assert redirected == f"{base}deep/"  # a folder's redirect keeps the prefix
