"""The site checks' own detectors catch what they are meant to catch (no
build needed; they run in the site tier, as conftest.py marks them)."""

from __future__ import annotations

from bs4 import BeautifulSoup
from test_site_content import number_pattern
from test_site_offline import external_assets, external_css_urls

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


def test_numbers_match_whole_printed_values_only():
    pattern = number_pattern("0.4483")
    assert pattern.search("tensor([0.5517, 0.4483, 0.0000])")
    assert not pattern.search("0.44830 -0.4483 10.4483")
    assert number_pattern("-0.0739").search("tensor([[-0.0739,  0.0713]])")
