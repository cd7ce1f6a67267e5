"""Every built page, opened in headless Chromium with the network switched off.

The site is served by a local ``http.server`` (as a reader gets it: Chromium
treats ``file://`` differently, refusing ``fetch()`` of the downloads); every
request to another origin is aborted and recorded. One fixture visits each page
of both editions once (a thread, browser and server per edition), with reduced
motion, and records what happened; each test checks one promise over all pages.

axe-core (the copy inside ``axe-playwright-python``, injected) checks every page
after its solutions are opened: every rule in the light
scheme, then the colour rules (contrast, links told by colour) in the dark one,
with the first link hovered. Violations go to ``$BUILDDIR/axe-<edition>.json``;
serious and critical ones fail. Highlighted code is left to ``CODE_CONTRAST``:
its thousands of tokens come in about ten colour pairs (axe spent 60-75% of a
page's time on them), each checked once with WCAG 2's formula and axe's
thresholds; ``test_code_contrast_check_catches_faint_code`` proves it fails.

The visit also weighs each page (every response until the network is idle,
cache off) against ``PAGE_BUDGET``. ``SCREENSHOTS=1`` saves every page to
``$BUILDDIR/screenshots/<edition>/<page>.png`` (1280 wide) and the chapter's
pages at 390 wide as ``<page>-phone.png``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import nbformat
import pytest
from axe_playwright_python.sync_playwright import Axe
from conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    EDITION_FOLDERS,
    assert_none,
    cores_per_worker,
    load_site,
    source_pages,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
# A first visit must not weigh more (issue 30): every byte the page loads until
# the network is idle, uncompressed (the size http.server sends).
PAGE_BUDGET = 1_200_000
# The theme's icons (<i class="fa-solid fa-bars">) are drawn by its stylesheet
# with the Font Awesome web font (book/_templates/layout.html drops the 1.56 MB
# script): an icon with no glyph, or whose font did not load, is missing.
MISSING_ICONS = """() => document.fonts.ready.then(() => Array.from(
  document.querySelectorAll('.fa-solid, .fa-regular, .fa-brands'))
  .filter(el => el.getClientRects().length)
  .filter(el => {
    const s = getComputedStyle(el, '::before');
    return ['none', 'normal', '""'].includes(s.content)
      || !document.fonts.check(`${s.fontWeight} 16px ${s.fontFamily}`);
  }).map(el => el.className))"""
# The impacts that fail the accessibility test (axe also reports minor and
# moderate ones, which go to axe.json only).
BLOCKING_IMPACTS = ("serious", "critical")
# Both colour schemes the theme offers; "auto" follows the reader's system.
COLOR_SCHEMES = ("light", "dark")
# The rules whose result a colour scheme can change: the others (structure,
# names, ARIA) run once, in the first scheme.
COLOR_RULES = ["color-contrast", "link-in-text-block"]
THEME_IS = "scheme => document.documentElement.dataset.theme === scheme"
# axe-core 4.12.1 fetches a stylesheet's relative @import against the page's
# URL (axe-core issue 5268): the theme's `@import "../basic.css"` becomes a
# request for /basic.css, a 404 in the console. Its CSSOM preload serves only
# the css-orientation-lock rule, and the theme locks no orientation.
AXE_OPTIONS = {"resultTypes": ["violations"], "preload": False}
# Every rule but colour contrast on the whole page; colour contrast outside
# highlighted code (CODE_CONTRAST checks the code).
AXE_ALL_BUT_CONTRAST = {**AXE_OPTIONS, "rules": {"color-contrast": {"enabled": False}}}
AXE_COLOR_OPTIONS = {**AXE_OPTIONS, "runOnly": COLOR_RULES}
HIGHLIGHTED = ".highlight"
OUTSIDE_CODE = {"exclude": [[HIGHLIGHTED]]}
# Every text-bearing element of highlighted code, grouped by what decides its
# contrast: its colour, the background under it, its size and weight. One
# element per group is measured; the groups that fail WCAG AA come back.
CODE_CONTRAST = """selector => {
  const rgba = text => {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [r, g, b, a];
  };
  const over = (top, under) => top.slice(0, 3).map(
    (c, i) => c * top[3] + under[i] * (1 - top[3])).concat([1]);
  const luminance = c => {
    const [r, g, b] = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = el => {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const style = getComputedStyle(node);
      if (style.backgroundImage !== "none" || Number(style.opacity) < 1) return null;
      const colour = rgba(style.backgroundColor);
      if (colour && colour[3] > 0) {
        layers.push(colour);
        if (colour[3] === 1) break;
      }
    }
    let colour = [255, 255, 255, 1];  // the canvas under everything
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const groups = new Map();
  for (const block of document.querySelectorAll(selector)) {
    for (const el of [block, ...block.querySelectorAll("*")]) {
      const own = Array.from(el.childNodes).some(
        n => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
      if (!own || !el.getClientRects().length) continue;
      const style = getComputedStyle(el);
      const bg = background(el);
      const key = [style.color, bg && bg.join(), style.fontSize, style.fontWeight]
        .join("|");
      if (!groups.has(key)) groups.set(key, {el, style, bg, count: 0});
      groups.get(key).count++;
    }
  }
  const failures = [];
  for (const {el, style, bg, count} of groups.values()) {
    const text = el.textContent.trim().slice(0, 30);
    const where = `${el.tagName.toLowerCase()}.${el.className} "${text}"`
      + ` (${count} like it)`;
    if (!bg) {
      failures.push(`${where}: background not judged (image or opacity)`);
      continue;
    }
    const fg = over(rgba(style.color), bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    if (ratio < (large ? 3 : 4.5))
      failures.push(`${where}: ${ratio.toFixed(2)}:1, ${style.color}`
        + ` on rgb(${bg.slice(0, 3)})`);
  }
  return {groups: groups.size, failures};
}"""
FIRST_LINK = "article a.reference"  # the first visible one is hovered
# Colour transitions still running: none, with reduced motion. axe reads the
# colours of the moment, so a test fails if the theme stops honouring it.
RUNNING_TRANSITIONS = """() => document.getAnimations()
  .filter(a => a.playState === "running"
            && a.effect.getComputedTiming().iterations !== Infinity).length"""
SCREENSHOTS = bool(os.environ.get("SCREENSHOTS"))
REST = "() => document.activeElement && document.activeElement.blur()"
FETCH = """async href => {
  const response = await fetch(href);
  return [response.status, await response.text()];
}"""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


# What a visit records as problems, by kind, and what a test failing on it says.
PROMISES = {
    "console": "errors in the browser's console",
    "failed": "requests to the site that failed",
    "external": "requests to other hosts (blocked)",
    "icons": "icons without their glyph",
    "solutions": "solutions that do not toggle",
    "download": "notebook downloads that fail",
    "phone": f"wider than a {PHONE['width']} px phone",
    "axe": "axe runs on a page still changing colour",
    "accessibility": "serious or critical accessibility violations (axe-core)",
    "code contrast": "highlighted code below WCAG AA contrast, or not measured",
}


class Visit:
    """What happened while one page was open."""

    def __init__(self, page):
        self.page = page  # a Page from conftest
        self.problems: dict[str, list[str]] = defaultdict(list)  # kind -> found
        self.axe: list[dict] = []  # axe-core's violations, with their scheme
        self.axe_runs: list[str] = []  # "<scheme>: axe-core <version>", per run
        self.screenshots: list = []
        self.loaded: dict[str, int] = {}  # URL -> bytes, on the first visit
        # Path in the edition -> HTTP status, for each document the browser
        # loaded into a tab while this visit was open: what it really opened.
        self.opened: dict[str, int] = {}

    def note(self, kind: str, *found: str) -> None:
        self.problems[kind] += found


class Browser:
    """Chromium with one tab per viewport; records what the open page does."""

    def __init__(self, playwright, origin: str, prefix: str = ""):
        self.origin = origin  # the whole site: zh_CN pages load English assets
        self.prefix = prefix  # the edition's folder in it, "" or "zh_CN/"
        self.chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        self.tabs = {}
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            context = self.chromium.new_context(
                viewport=viewport, accept_downloads=True, reduced_motion="reduce"
            )
            context.route("**/*", self._route)
            tab = context.new_page()
            tab.on("console", self._console)
            tab.on("pageerror", self._page_error)
            tab.on("requestfailed", self._failed)
            tab.on("response", self._response)
            self.tabs[name] = tab
        self.visit: Visit | None = None
        self.weighing = False  # routing turns off the cache: each visit is a first

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.origin + "/"):
            route.continue_()
        else:
            self.visit.note("external", url)
            route.abort("blockedbyclient")

    def _console(self, message):
        if message.type == "error":
            self.visit.note("console", f"{message.text} ({message.location})")

    def _page_error(self, error):
        self.visit.note("console", f"uncaught: {error}")

    def _failed(self, request):
        if request.url.startswith(self.origin):
            self.visit.note("failed", f"{request.url}: {request.failure}")

    def _response(self, response):
        if response.request.is_navigation_request() and not response.frame.parent_frame:
            path = response.url.split("#", 1)[0].split("?", 1)[0]
            path = path.removeprefix(f"{self.origin}/{self.prefix}")
            self.visit.opened[path] = response.status
        if self.weighing:
            length = response.headers.get("content-length", "0")
            self.visit.loaded[response.url] = int(length)
        if response.status >= 400:
            self.visit.note("failed", f"{response.url}: HTTP {response.status}")

    def open(self, tab: str, visit: Visit):
        self.visit = visit
        page = self.tabs[tab]
        self.weighing = tab == "desktop"  # weighed until the network is idle
        idle = "networkidle" if self.weighing else "load"
        page.goto(f"{self.origin}/{self.prefix}{visit.page.rel}", wait_until=idle)
        self.weighing = False
        if tab == "desktop":
            visit.note("icons", *page.evaluate(MISSING_ICONS))
        return page


def check_solutions(tab, visit: Visit):
    """Each solution is collapsed, opens when its title is clicked."""
    solutions = tab.locator("article .solution")
    for i in range(solutions.count()):
        solution = solutions.nth(i)
        label = solution.locator(".admonition-title").inner_text().strip()
        body = solution.locator(":scope > :not(.admonition-title)").first
        if body.is_visible():
            visit.note("solutions", f"{label!r} is visible before a click")
            continue
        solution.locator(".admonition-title").click()
        try:
            body.wait_for(state="visible", timeout=2000)
        except PlaywrightTimeout:
            visit.note("solutions", f"{label!r} stays hidden after a click")


def check_accessibility(tab, visit: Visit, axe: Axe) -> None:
    """axe-core: every rule in the first scheme, the colour rules in the other;
    the colour rules run with the mouse on the page's first link, so that link
    is measured in its hover colour and every other link in its plain one."""
    link = tab.locator(f"{FIRST_LINK} >> visible=true").first
    for scheme in COLOR_SCHEMES:
        tab.emulate_media(color_scheme=scheme)
        tab.wait_for_function(THEME_IS, arg=scheme, timeout=5000)
        tab.mouse.move(0, 0)
        tab.evaluate(REST)
        violations = []
        if scheme == COLOR_SCHEMES[0]:
            response = axe.run(tab, options=AXE_ALL_BUT_CONTRAST).response
            violations += response["violations"]
        hovered = bool(link.count())
        if hovered:
            link.hover()
        if running := tab.evaluate(RUNNING_TRANSITIONS):
            visit.note("axe", f"{scheme}: {running} transitions still run")
        response = axe.run(tab, OUTSIDE_CODE, AXE_COLOR_OPTIONS).response
        violations += response["violations"]
        engine = response["testEngine"]
        rules = "all rules" if scheme == COLOR_SCHEMES[0] else "colour rules"
        visit.axe_runs.append(
            f"{scheme}: {engine['name']} {engine['version']}, {rules}"
            + (", first link hovered" if hovered else "")
        )
        found = [{"scheme": scheme, **v} for v in violations]
        visit.axe += found
        blocking = (v for v in found if v["impact"] in BLOCKING_IMPACTS)
        visit.note("accessibility", *map(describe_violation, blocking))
        code = tab.evaluate(CODE_CONTRAST, HIGHLIGHTED)
        if not code["groups"] and visit.page.article.select_one(HIGHLIGHTED):
            code["failures"].append("its highlighted code was not measured")
        visit.note("code contrast", *(f"{scheme}: {f}" for f in code["failures"]))
    tab.mouse.move(0, 0)
    tab.emulate_media(color_scheme="light")


def describe_violation(violation: dict) -> str:
    """``rule (impact, scheme): help``, then each offending node."""
    lines = [
        f"{violation['id']} ({violation['impact']}, {violation['scheme']}): "
        f"{violation['help']}"
    ]
    for node in violation["nodes"]:
        target = " ".join(map(str, node["target"]))
        lines.append(f"    {target}: {node['html'][:160]}")
        summary = node.get("failureSummary", "").replace("\n", " ")
        if summary:
            lines.append(f"      {summary[:300]}")
    return "\n".join(lines)


def check_download(tab, visit: Visit, click: bool):
    """The notebook download link serves a valid executed notebook."""
    links = tab.locator("article a.download[href$='.ipynb']")
    if links.count() != 1:
        visit.note("download", f"{links.count()} notebook download links")
        return
    href = links.first.get_attribute("href")
    if click:  # once, the way a reader does it
        with tab.expect_download() as download:
            links.first.click()
        text = download.value.path().read_text("utf-8")
    else:
        status, text = tab.evaluate(FETCH, href)
        if status != 200:
            visit.note("download", f"{href}: HTTP {status}")
            return
    try:
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except (ValueError, nbformat.ValidationError) as error:  # not JSON, not nbformat
        visit.note("download", f"{href}: not a valid notebook ({error})")
        return
    if not any(c.outputs for c in notebook.cells if c.cell_type == "code"):
        visit.note("download", f"{href}: no code cells with outputs")


def screenshot(tab, visit: Visit, path) -> None:
    if SCREENSHOTS:
        tab.screenshot(path=path, full_page=True)
        visit.screenshots.append(path)


def visit_edition(site, origin: str, prefix: str = "") -> list[Visit]:
    """Open every page of one edition; its own playwright, for its own thread."""
    shots = site.build / "screenshots" / site.edition
    if SCREENSHOTS:
        shutil.rmtree(shots, ignore_errors=True)
    pages = [p for p in site.pages if not p.rel.startswith("_modules/")]
    clicked_a_download = False
    result = []
    axe = Axe()  # its axe.min.js is read from the installed package
    with sync_playwright() as playwright:
        browser = Browser(playwright, origin, prefix)
        try:
            for page in pages:
                visit = Visit(page)
                result.append(visit)
                tab = browser.open("desktop", visit)
                screenshot(tab, visit, shots / f"{page.docname}.png")
                check_solutions(tab, visit)
                if page.is_notebook:
                    check_download(tab, visit, click=not clicked_a_download)
                    clicked_a_download = True
                check_accessibility(tab, visit, axe)
                if page.rel.startswith("chapter3/"):
                    tab = browser.open("phone", visit)
                    width = tab.evaluate("document.documentElement.scrollWidth")
                    if width > PHONE["width"]:
                        visit.note("phone", f"{width} px wide")
                    screenshot(tab, visit, shots / f"{page.docname}-phone.png")
        finally:
            browser.chromium.close()
    report = json.dumps({v.page.rel: v.axe for v in result}, indent=1)
    (site.build / f"axe-{site.edition}.json").write_text(report, "utf-8")
    return result


@contextlib.contextmanager
def serve(html):
    """``http://127.0.0.1:<port>`` serving one edition of the built site."""
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def all_visits() -> dict[str, list[Visit]]:
    """Both editions, visited at the same time when this process has two
    cores to itself (conftest.cores_per_worker): edition -> visits. The whole
    site is served, as a host would serve it: the 简体中文 pages load the
    English edition's copy of the assets the two share (tools/share_assets.py)."""
    sites = [load_site(edition) for edition in EDITION_FOLDERS]

    def visit(site):
        folder = EDITION_FOLDERS[site.edition]
        with serve(site.build / "html") as origin:
            return visit_edition(site, origin, f"{folder}/" if folder else "")

    with ThreadPoolExecutor(min(len(sites), cores_per_worker())) as pool:
        return dict(zip(EDITION_FOLDERS, pool.map(visit, sites), strict=True))


@pytest.fixture
def visits(site, all_visits) -> list[Visit]:
    return all_visits[site.edition]


def test_every_page_was_visited(visits):
    """Every page written in book/ was loaded in a tab (HTTP 200): the pages
    come from the sources, the visits from the browser's own responses, so a
    page that the visit leaves out, or a visit that lands elsewhere, fails."""
    opened = {
        path for v in visits for path, status in v.opened.items() if status == 200
    }
    missing = sorted(source_pages() - opened)
    assert not missing, f"pages of the book the browser did not open: {missing}"


@pytest.mark.parametrize("kind", PROMISES)
def test_no_page_shows_problems_of_a_kind(visits, kind):
    problems = (f"{v.page.rel}: {p}" for v in visits for p in v.problems[kind])
    assert_none(problems, PROMISES[kind])


def test_first_visit_is_within_the_page_budget(visits):
    """Every page's first visit, both editions; the heaviest page's five
    heaviest resources are printed (and named when it fails)."""
    weight = {v.page.rel: sum(v.loaded.values()) for v in visits}
    assert all(v.loaded for v in visits), "a visit loaded nothing"
    heaviest = max(visits, key=lambda v: weight[v.page.rel])
    top = sorted(heaviest.loaded.items(), key=lambda item: -item[1])[:5]
    report = f"heaviest: {heaviest.page.rel}, {weight[heaviest.page.rel]:,} bytes\n"
    report += "\n".join(f"  {size:>10,} {url}" for url, size in top)
    print(report)
    over = {rel: w for rel, w in weight.items() if w > PAGE_BUDGET}
    assert not over, f"pages over {PAGE_BUDGET:,} bytes: {over}\n{report}"


def test_axe_checked_every_page_in_both_schemes(visits):
    """A page with no violations passes only if axe really ran on it (and the
    code contrast check is not vacuous: some page has highlighted code)."""
    assert any(v.page.article.select_one(HIGHLIGHTED) for v in visits)
    for visit in visits:
        schemes = [run.split(":")[0] for run in visit.axe_runs]
        assert schemes == list(COLOR_SCHEMES), f"{visit.page.rel}: {visit.axe_runs}"
        assert all("axe-core 4." in run for run in visit.axe_runs), visit.axe_runs
        assert ", all rules" in visit.axe_runs[0], visit.axe_runs
        if visit.page.article.select_one(FIRST_LINK):  # its hover colour measured
            assert all("first link hovered" in r for r in visit.axe_runs), (
                visit.axe_runs
            )


def test_code_contrast_check_catches_faint_code(chromium):
    """The check fails on faint code, names it, and passes on plain code."""
    page = """<html><body>
      <div class="highlight" style="background: #fff"><pre>
        <span class="n">ok</span> <span class="c" style="color: #ccc">faint</span>
        <span style="color: rgba(0, 0, 0, 0.2)">translucent</span>
      </pre></div>
      <div class="highlight" style="background: #fff; opacity: 0.5"><pre>dim</pre></div>
    </body></html>"""
    tab = chromium.new_page()
    tab.set_content(page)
    result = tab.evaluate(CODE_CONTRAST, HIGHLIGHTED)
    failures = "\n".join(result["failures"])
    assert result["groups"] == 4, result
    assert '"faint"' in failures and "1.61:1" in failures, failures
    assert '"translucent"' in failures, failures
    assert '"dim"' in failures and "not judged" in failures, failures
    assert '"ok"' not in failures, failures


def test_screenshots_are_saved_when_asked_for(visits):
    """With SCREENSHOTS set, every page has its pictures; without, none are taken."""
    missing = [s for v in visits for s in v.screenshots if not s.is_file()]
    assert not missing
    pages = [v for v in visits if v.page.is_book_page]
    assert all(bool(v.screenshots) == SCREENSHOTS for v in pages)
