"""The built site loads nothing from the network.

Every asset a page pulls in (scripts, stylesheets, preloads, icons, images,
frames, fonts, CSS imports) must come from the site itself. Links a reader
clicks (``<a href="https://...">``) are navigation, not assets, and are
allowed. The browser test (``test_site_browser.py``) checks the same promise
at run time, with the network blocked. Math is drawn at build time, so it is
checked here too.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from conftest import assert_none, text_without

pytestmark = pytest.mark.site

# ``<link rel=...>`` values that name a page instead of fetching anything.
NAVIGATION_RELS = {
    "alternate",
    "author",
    "bookmark",
    "canonical",
    "help",
    "home",
    "index",
    "license",
    "next",
    "prev",
    "search",
}
# Element -> attributes whose URL the browser fetches on its own.
ASSET_ATTRIBUTES = {
    "script": ["src"],
    "img": ["src", "srcset"],
    "source": ["src", "srcset"],
    "iframe": ["src"],
    "embed": ["src"],
    "object": ["data"],
    "video": ["src", "poster"],
    "audio": ["src"],
    "track": ["src"],
    "input": ["src"],
    "image": ["href", "xlink:href"],  # <image> inside an inline SVG
    "use": ["href", "xlink:href"],
}
# A URL that leaves the site: any scheme but data:/blob:, or protocol-relative.
EXTERNAL = re.compile(r"^\s*(?://|(?!data:|blob:)[a-z][a-z0-9+.-]*:)", re.IGNORECASE)
CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)""", re.IGNORECASE | re.DOTALL)
CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]?([^'");\s]+)""", re.IGNORECASE)
CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
# Namespace names in inline SVG/JS look like URLs but are never fetched.
NAMESPACE = re.compile(r"https?://www\.w3\.org/[\w/.-]*")
ANY_URL = re.compile(r"""https?://[\w.-]+[^\s'"<>)]*""", re.IGNORECASE)
# Raw TeX that the build should have drawn (book/_ext/svgmath.py), outside code.
RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\frac|\\sum|\\mathrm|\\text\{")


def external_css_urls(css: str) -> list[str]:
    """External URLs that a piece of CSS would fetch (comments don't count)."""
    css = CSS_COMMENT.sub("", css)
    urls = [m.group(2) for m in CSS_URL.finditer(css)]
    urls += [m.group(1) for m in CSS_IMPORT.finditer(css)]
    return list(dict.fromkeys(u for u in urls if EXTERNAL.match(u)))


def external_assets(soup) -> list[str]:
    """``<tag attr="url">`` descriptions of every external asset in a page."""
    found = []
    for link in soup.find_all("link", href=True):
        rels = set(link.get("rel") or [])
        if rels and rels <= NAVIGATION_RELS:
            continue
        if EXTERNAL.match(link["href"]):
            found.append(f'<link rel="{" ".join(rels)}" href="{link["href"]}">')
    for tag, attributes in ASSET_ATTRIBUTES.items():
        for element in soup.find_all(tag):
            for attribute in attributes:
                value = element.get(attribute, "")
                urls = [part.split()[0] for part in value.split(",") if part.strip()]
                if attribute != "srcset":
                    urls = [value]
                for url in urls:
                    if EXTERNAL.match(url):
                        found.append(f'<{tag} {attribute}="{url}">')
    for style in soup.find_all("style"):
        found += [f"<style> {u}" for u in external_css_urls(style.get_text())]
    for element in soup.find_all(style=True):
        found += [f"style= {u}" for u in external_css_urls(element["style"])]
    for script in soup.find_all("script", src=False):
        text = NAMESPACE.sub("", script.get_text())
        found += [f"inline <script> {u}" for u in ANY_URL.findall(text)]
    return found


# The detectors catch what they are meant to catch.
OFFLINE_PAGE = """<html><head>
<link rel="stylesheet" href="https://cdn.example/theme.css">
<link rel="icon" href="//cdn.example/icon.png">
<link rel="preload" as="font" href="_static/fonts/local.woff2">
<link rel="next" href="https://example.org/next.html">
<script src="https://cdn.example/mathjax/tex-chtml.js"></script>
<script>window.MathJax = {loader: {paths: {mathjax: "https://cdn.example/mj"}}}</script>
<script src="_static/local.js"></script>
<style>@import url(https://fonts.example/css?family=Serif);</style>
</head><body>
<a href="https://example.org/">a link to read, not an asset</a>
<img src="HTTP://img.example/a.png"><img src="data:image/png;base64,AAAA">
<img srcset="_images/a.png 1x, https://img.example/b.png 2x">
<div style="background: url('https://img.example/bg.png')"></div>
<svg><image href="https://img.example/c.png"/></svg>
<iframe src="https://video.example/embed"></iframe>
<img src="../_images/local.png">
</body></html>"""


def test_external_assets_are_found_and_links_are_not():
    found = external_assets(BeautifulSoup(OFFLINE_PAGE, "html.parser"))
    assert found == [
        '<link rel="stylesheet" href="https://cdn.example/theme.css">',
        '<link rel="icon" href="//cdn.example/icon.png">',
        '<script src="https://cdn.example/mathjax/tex-chtml.js">',
        '<img src="HTTP://img.example/a.png">',
        '<img srcset="https://img.example/b.png">',
        '<iframe src="https://video.example/embed">',
        '<image href="https://img.example/c.png">',
        "<style> https://fonts.example/css?family=Serif",
        "style= https://img.example/bg.png",
        "inline <script> https://cdn.example/mj",
    ]


def test_css_urls_skip_comments_and_data():
    css = """a { background: url('https://x.example/a.png') }
    /* url(https://in.a.comment/) */ b { x: url(data:image/svg+xml;utf8,<svg
    xmlns='http://www.w3.org/2000/svg'/>) } @import "https://fonts.example/css";"""
    assert external_css_urls(css) == [
        "https://x.example/a.png",
        "https://fonts.example/css",
    ]


def test_pages_load_no_external_assets(site):
    found = (
        f"{p.rel}: {asset}" for p in site.pages for asset in external_assets(p.soup)
    )
    assert_none(found, "pages that would fetch from the network")


def test_stylesheets_and_svgs_fetch_nothing_external(site):
    found = []
    for path in [*site.html.rglob("*.css"), *site.html.rglob("*.svg")]:
        text = path.read_text("utf-8", errors="replace")
        urls = external_css_urls(text)
        if path.suffix == ".svg":
            hrefs = re.findall(r"""(?:xlink:)?href\s*=\s*["']([^"']+)""", text)
            urls += [u for u in hrefs if EXTERNAL.match(u)]
        found += [f"{path.relative_to(site.html)}: {url}" for url in urls]
    assert_none(found, "stylesheets or images that fetch from the network")


def test_math_is_drawn_when_the_site_is_built(site):
    """Every formula is an SVG in the page (book/_ext/svgmath.py), named by its
    TeX for screen readers; no TeX is left in the text outside code, and no
    page loads a script to typeset math."""
    math_pages = [p for p in site.pages if p.article.select_one(".math")]
    assert any(p.rel.startswith("chapter3/") for p in math_pages), (
        "no chapter page has a formula (and svgmath goes untested)"
    )
    wrong = {}
    for page in site.pages:
        undrawn = [
            m.get_text()[:60]
            for m in page.article.select(".math")
            if not m.select_one("svg[role=img][aria-label]")
        ]
        scripts = [s["src"] for s in page.soup.find_all("script", src=True)]
        text = text_without(page.article, "pre, code, script, style, svg, .highlight")
        raw = sorted(set(RAW_TEX.findall(text)))
        wrong[page.rel] = undrawn + [s for s in scripts if "mathjax" in s.lower()] + raw
    wrong = {page: found for page, found in wrong.items() if found}
    assert not wrong, f"formulas not drawn, or math scripts: {wrong}"
