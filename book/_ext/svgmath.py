"""``svgmath``: every formula drawn as SVG when the page is written.

MathJax would typeset in the browser: 1.16 MB of script and web fonts on
every page with a formula, a 24 MB folder per edition. This is a math
renderer of Sphinx's own kind (``app.add_html_math_renderer``, chosen with
``html_math_renderer``): ziamath (pure Python, its own STIX Two Math font)
turns each formula into an inline ``<svg>`` of glyph outlines, seen before
any script runs and printed as drawn (the book's PDF). Each glyph
(``<symbol>``, named by ziamath after glyph and size) is written once per
page and ``<use>``d after: that halves a page's math. Sized in ``em`` and
filled with ``currentColor``, a formula follows the text's size and colour
scheme; its baseline sits on the text's; its TeX is its accessible name.
Drawings are kept in ``_build/svgmath`` (named by formula, ziamath's version
and this file): both editions and the PDFs draw each formula once.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import ziafont
import ziamath
from docutils import nodes
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

SIZE = 16.0  # px: the size formulas are drawn at
# STIX Two's x-height is about 10% below the theme's sans-serif text: one em of
# the text holds 1.1 em of the formula's drawing, as MathJax matches them.
EM = SIZE / 1.1
NAMESPACE = "http://www.w3.org/2000/svg"
ET.register_namespace("", NAMESPACE)
ziamath.config.precision = ziafont.config.precision = 2  # 0.01 px is enough
SYMBOL = re.compile(r'<symbol id="([^"]+)".*?</symbol>', re.DOTALL)
_ids = itertools.count()
_symbols: dict[str, str] = {}  # every glyph drawn by this process: id -> symbol
_KEY = f"{ziamath.__version__} {ziafont.__version__}\n{Path(__file__).read_text()}"
_stored: Path | None = None  # the folder of drawings, set when a build starts


@functools.cache
def _drawing(tex: str, inline: bool) -> str:
    if _stored is None:
        return _draw(tex, inline)
    key = hashlib.sha256(f"{_KEY}\n{inline}\n{tex}".encode()).hexdigest()
    path = _stored / f"{key}.svg"
    if path.is_file():
        return path.read_text()
    svg = _draw(tex, inline)
    part = path.with_suffix(f".{os.getpid()}")  # two writers: whole files only
    part.write_text(svg)
    part.replace(path)
    return svg


def _draw(tex: str, inline: bool) -> str:
    math = ziamath.Latex(tex, size=SIZE, color="currentColor", inline=inline)
    svg = math.svgxml()
    width, height = float(svg.get("width")), float(svg.get("height"))
    top = float(svg.get("viewBox").split()[1])  # the baseline is at y = 0
    svg.set("width", f"{width / EM:.3f}em")
    svg.set("height", f"{height / EM:.3f}em")
    svg.set("style", f"vertical-align: {-(top + height) / EM:.3f}em")
    svg.set("role", "img")
    svg.set("aria-label", tex)
    # Fewer bytes, the same drawing: the colour is set once on the <svg> and
    # inherited by every glyph, and path data drops the spaces its grammar
    # does not need ("M 1.4 -7.8 L" -> "M1.4-7.8L"). A page with many formulas
    # (FlashAttention) is about a tenth lighter.
    svg.set("fill", "currentColor")
    for element in svg.iter():
        if element is not svg and element.get("fill") == "currentColor":
            del element.attrib["fill"]
        if element.get("d"):
            element.set("d", compact_path(element.get("d")))
    # Inline in HTML, the parser puts <svg> in the SVG namespace by itself; the
    # one font's glyph ids ("STIXTwoMathRegular_3303") shorten to "g3303".
    text = ET.tostring(svg, encoding="unicode").replace(f' xmlns="{NAMESPACE}"', "")
    return text.replace("STIXTwoMathRegular_", "g")


def compact_path(d: str) -> str:
    """SVG path data without the spaces next to commands and before a minus.

    >>> compact_path("M 1.42 -7.88 L 1.42 -7.88 Q 6.41 -7.88 7.28 -7.03 Z ")
    'M1.42-7.88L1.42-7.88Q6.41-7.88 7.28-7.03Z'
    """
    d = re.sub(r"\s*([A-Za-z])\s*", r"\1", d)
    return re.sub(r"\s+(?=-)", "", d).strip()


def formula_svg(tex: str, inline: bool, written: set[str] | None = None) -> str:
    """The formula as one ``<svg>``, without the glyphs already ``written`` on
    the page (new ones are added); should a glyph's drawing ever differ
    between formulas, this formula gets ids of its own instead."""
    svg = _drawing(tex.strip(), inline)
    found = {m.group(1): m.group(0) for m in SYMBOL.finditer(svg)}
    if written is None or any(_symbols.setdefault(i, s) != s for i, s in found.items()):
        tag = f"m{next(_ids)}-"
        return re.sub(r'(id="|href="#)', rf"\g<1>{tag}", svg)
    svg = SYMBOL.sub(lambda m: "" if m.group(1) in written else m.group(0), svg)
    written.update(found)
    return svg


def _page_glyphs(translator) -> set[str]:
    """The glyphs already written on the page this translator writes."""
    return translator.__dict__.setdefault("svgmath_glyphs", set())


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(formula_svg(node.astext(), True, _page_glyphs(self)) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    # Formulas separated by a blank line are one aligned block, as in MathJax.
    parts = [p.strip() for p in node.astext().split("\n\n") if p.strip()]
    tex = parts[0] if len(parts) == 1 else r"\begin{aligned}" + r"\\".join(parts)
    if len(parts) > 1:
        tex += r"\end{aligned}"
    self.body.append(formula_svg(tex, False, _page_glyphs(self)) + "</div>\n")
    raise nodes.SkipNode


def _store_drawings(app) -> None:
    global _stored
    _stored = Path(app.doctreedir).parent / "svgmath"
    _stored.mkdir(parents=True, exist_ok=True)


def setup(app):
    app.connect("builder-inited", _store_drawings)
    app.add_html_math_renderer("svgmath", (visit_math, None), (visit_displaymath, None))
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
