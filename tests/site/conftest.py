"""Fixtures for the checks of the built site (``make site``).

The tests read ``$BUILDDIR/html`` (default ``_build``, from the repository's
root), the output of ``make html``; a missing build fails, never skips. The
``site`` fixture runs each test on both editions (English at ``html``, 简体中文
at ``html/zh_CN``; ids end in ``[en]`` or ``[zh_CN]``); ``english`` is the
English edition alone, for tests that compare the two. Shared here: the
problem list every check ends with, the headless Chromium the browser tests
drive, and the wheel the pages offer.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
WHEEL = f"attention-{VERSION}-py3-none-any.whl"
CJK = re.compile(r"[\u4e00-\u9fff]")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--no-default-browser-check",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
]

# Pages Sphinx generates on its own; they are not pages of the book.
GENERATED = {"genindex.html", "search.html", "py-modindex.html"}
# Every edition the tests check: its name, and its folder inside the site.
EDITION_FOLDERS = {"en": "", "zh_CN": "zh_CN"}


def source_pages() -> set[str]:
    """Every page written in ``book/`` (not in a ``_*`` folder), as its path in
    the site: ``chapter3/3-5-causal-attention.html``. Read from the sources, so
    a test can hold the built site and the browser's visits against it."""
    book = ROOT / "book"
    sources = [p.relative_to(book).with_suffix("") for p in book.rglob("*.md")]
    return {
        f"{s.as_posix()}.html"
        for s in sources
        if not any(part.startswith("_") for part in s.parts)
    }


def cores_per_worker() -> int:
    """The cores this test process may keep busy: all of them, or its share
    when pytest-xdist runs the tier on several workers (``make site`` runs two,
    each taking a whole test file). The fixtures that start heavy processes of
    their own (the browser visit, the reader's notebooks, the source archive's
    tests) start this many at a time, so the tier never runs more of them than
    the machine has cores: the downloaded pages' live timing claims fail on an
    overloaded machine (seen with four notebook kernels and browsers on two)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


def build_dir() -> Path:
    """``$BUILDDIR`` as an absolute path (the tests may run from anywhere)."""
    path = Path(os.environ.get("BUILDDIR", "_build"))
    return path if path.is_absolute() else ROOT / path


class Page:
    """One built HTML file, parsed once and shared by every test."""

    def __init__(self, path: Path, site: Path, notebooks: Path):
        self.path = path
        self.site = site
        self.notebooks = notebooks  # where myst-nb saved the executed pages

    def __repr__(self) -> str:
        return f"Page({self.rel!r})"

    @property
    def rel(self) -> str:
        """Path inside the site, with ``/``: ``chapter3/3-3-self-attention.html``."""
        return self.path.relative_to(self.site).as_posix()

    @property
    def docname(self) -> str:
        return self.rel.removesuffix(".html")

    @property
    def is_book_page(self) -> bool:
        """A page written in ``book/`` (not an index, search or ``_modules`` page)."""
        return self.rel not in GENERATED and not self.rel.startswith("_")

    @functools.cached_property
    def soup(self) -> BeautifulSoup:
        return BeautifulSoup(self.path.read_text("utf-8"), "html.parser")

    @functools.cached_property
    def article(self):
        """The page's own content, without the theme's navigation."""
        return self.soup.select_one("article.bd-article") or self.soup

    @functools.cached_property
    def has_cells(self) -> bool:
        return self.article.select_one("div.cell") is not None

    @property
    def is_notebook(self) -> bool:
        """Whether myst-nb executed the page: ``jupyter_execute/<page>.ipynb`` is
        in the build (the source may have changed since the build read it)."""
        return (self.notebooks / f"{self.docname}.ipynb").is_file()

    def resolve(self, url: str) -> Path:
        """The file a relative URL on this page points to."""
        url = url.split("#", 1)[0].split("?", 1)[0]
        return (self.path.parent / url).resolve()


class Site:
    """One edition of the built site and its parsed pages; its notebooks are in
    ``$BUILDDIR/jupyter_execute`` (English) or ``$BUILDDIR/<lang>/...``."""

    def __init__(self, html: Path, edition: str, build: Path):
        self.html = html
        self.edition = edition
        self.build = build
        folder = self.build if edition == "en" else self.build / edition
        self.notebooks = folder / "jupyter_execute"
        # Other editions' folders (zh_CN/, book/_ext/site_language.py): not pages.
        skip = {"_static", *EDITION_FOLDERS.values()}
        self.pages = [
            Page(p, html, self.notebooks)
            for p in sorted(html.rglob("*.html"))
            if p.relative_to(html).parts[0] not in skip
        ]

    def page(self, rel: str) -> Page:
        for page in self.pages:
            if page.rel == rel:
                return page
        raise AssertionError(f"{rel} is not in the built site {self.html}")

    @property
    def book_pages(self) -> list[Page]:
        return [p for p in self.pages if p.is_book_page]


@functools.cache
def load_site(edition: str) -> Site:
    """One edition, parsed once a session (every fixture and table shares it)."""
    html = build_dir() / "html" / EDITION_FOLDERS[edition]
    if not (html / "index.html").is_file():
        pytest.fail(
            f"No built site at {html} (index.html is missing). Run `make html` "
            "first, or set BUILDDIR to the build folder that holds html/.",
            pytrace=False,
        )
    return Site(html, edition, build_dir())


@pytest.fixture(scope="session", params=list(EDITION_FOLDERS))
def site(request) -> Site:
    return load_site(request.param)


@pytest.fixture(scope="session")
def english() -> Site:
    return load_site("en")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """``make unit`` ignores this folder, so a test here without a tier's mark
    (``compare_builds``' doctests) runs as ``site``."""
    tiers = {"site", "browser", "slow"}
    for item in items:
        here = item.path.is_relative_to(HERE)
        if here and not tiers & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.site)


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium, a module's (the visit of the site runs its own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


def text_without(element, selector: str, separator: str = "") -> str:
    """An element's text without what the selector finds in it (pages are
    shared by every test: the cut is made in a copy)."""
    element = copy.copy(element)
    for tag in element.select(selector):
        tag.decompose()
    return element.get_text(separator)


def assert_none(problems: Iterable[str], what: str) -> None:
    """Fail with every problem a check found, under one line saying what they are."""
    problems = list(problems)
    assert not problems, f"{what}:\n" + "\n".join(problems)
