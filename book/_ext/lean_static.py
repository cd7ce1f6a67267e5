"""``lean_static``: the theme's static files, cut to what the pages use.

Sphinx copies a theme's whole ``static`` folder. When the build finishes,
this deletes what no page loads (pydata-sphinx-theme 0.20's source maps,
3.5 MB an edition, and Font Awesome's all-in-one script, 1.56 MB, which
``book/_templates/layout.html`` no longer links), subsets the icon font
(``fa-solid-900.woff2``, 115 KB) to the ``fa-*`` icons that the pages and
the theme's scripts name (about 2 KB, with fontTools), and drops the other
1,900 icons' rules (65 KB) from the theme's stylesheet.
"""

from __future__ import annotations

import re
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

UNUSED = ("*.map", "scripts/fontawesome.js", "scripts/fontawesome.js.LICENSE.txt")
ICON_FONT = "vendor/fontawesome/webfonts/fa-solid-900.woff2"
THEME_CSS = "styles/pydata-sphinx-theme.css"
ICON_CLASS = re.compile(r"\bfa-([a-z0-9-]+)")
# Font Awesome's rules: `.fa-bars,.fa-navicon{--fa:"\f0c9"}`
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+,?)+)\{--fa:"\\([0-9a-f]+)"\}')


def codepoints(css: str, names: set[str]) -> set[int]:
    """The code points of the icons called ``names`` in Font Awesome's CSS."""
    found = set()
    for selectors, code in ICON_RULE.findall(css):
        if names & _names(selectors):
            found.add(int(code, 16))
    return found


def _names(selectors: str) -> set[str]:
    return {s.removeprefix(".fa-") for s in selectors.split(",")}


def drop_icons(css: str, names: set[str]) -> str:
    """Font Awesome's CSS without the rules of icons not called ``names``."""
    return ICON_RULE.sub(lambda m: m[0] if names & _names(m[1]) else "", css)


def lean(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    static = out / "_static"
    for pattern in UNUSED:
        for path in static.rglob(pattern):
            path.unlink()
    font, css = static / ICON_FONT, static / THEME_CSS
    if not (font.is_file() and css.is_file()):
        return
    texts = [p.read_text("utf-8") for p in out.rglob("*.html")]
    texts += [p.read_text("utf-8") for p in static.rglob("*.js")]
    names = {name for text in texts for name in ICON_CLASS.findall(text)}
    icons = TTFont(font)
    options = subset.Options(flavor="woff2", layout_features=[])
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints(css.read_text("utf-8"), names))
    subsetter.subset(icons)
    icons.save(font)
    css.write_text(drop_icons(css.read_text("utf-8"), names), "utf-8")


def setup(app):
    app.connect("build-finished", lean)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
