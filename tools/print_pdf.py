"""Print the book to PDF: ``print_pdf.py <cjk font> <singlehtml> <pdf> ...``,
one PDF for each pair of a single-page build and the PDF to write. The books
are printed side by side, one Chromium each: Chromium prints a book on one
core, so two books print in about the time of the longer one.

``make pdf`` builds each edition with Sphinx's ``singlehtml`` builder (every
page in reading order, numbered figures, the same execution cache); this
prints it with the tests' Chromium through playwright's ``page.pdf``, every
solution and hidden cell opened (without its toggle's label), every line of
code and output in a box of its own (so that book.css can wrap it and mark
its continuations, instead of cutting it at the margin), headings as
bookmarks, the book's title as the running header. Not LaTeX: xelatex with
xeCJK needs 400-640 MB of TeX, while Chromium is installed and the formulas
are already SVG (``svgmath``).

A script, not a Sphinx extension: no build imports playwright or pikepdf.
The singlehtml build it prints loads ``book/_ext/singlehtml_nodes.py``
(``-t pdf``), so that it writes the html-only nodes too.
"""

from __future__ import annotations

import html
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pikepdf
from fontTools.ttLib import TTCollection, TTFont
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# Opens what a reader would click open; the theme's print style does the rest.
OPEN_EVERYTHING = """() => {
  document.querySelectorAll("details").forEach(d => d.open = true);
  document.querySelectorAll(".toggle-hidden").forEach(
    el => el.classList.remove("toggle-hidden"));
  document.querySelectorAll("button.toggle-button").forEach(b => b.remove());
}"""
# Every line of a code block or output becomes its own element (its text and
# colours unchanged, so is the block's text): in print, book.css wraps a line
# too long for the page and marks each continuation with a hook arrow in a
# hanging indent, which only a per-line box can draw.
SPLIT_LINES = """() => {
  let blocks = 0;
  document.querySelectorAll("pre").forEach(pre => {
    const lines = [[]];
    const walk = (node, chain) => node.childNodes.forEach(child => {
      if (child.nodeType === Node.ELEMENT_NODE) {
        walk(child, [...chain, child]);
      } else if (child.nodeType === Node.TEXT_NODE) {
        child.data.split("\\n").forEach((piece, i) => {
          if (i) lines.push([]);
          if (piece) lines[lines.length - 1].push([piece, chain]);
        });
      }
    });
    walk(pre, []);
    if (lines.length > 1 && !lines[lines.length - 1].length) lines.pop();
    pre.replaceChildren(...lines.map(pieces => {
      const line = document.createElement("span");
      line.className = "print-line";
      for (const [piece, chain] of pieces) {
        let node = document.createTextNode(piece);
        for (const outer of [...chain].reverse()) {
          const copy = outer.cloneNode(false);
          copy.append(node);
          node = copy;
        }
        line.append(node);
      }
      line.append("\\n");
      return line;
    }));
    blocks += 1;
  });
  return blocks;
}"""
MARGINS = {"top": "18mm", "bottom": "16mm", "left": "16mm", "right": "16mm"}
# Every heading of the printed page, as a bookmark's title, in document order
# (Chromium 1xx repeats a wrapped heading's first line in its bookmark).
HEADINGS = """() => Array.from(document.querySelectorAll(
    "h1, h2, h3, h4, h5, h6, [role=heading]"))
  .filter(el => el.getClientRects().length)
  .map(el => {
    const copy = el.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach(a => a.remove());
    return copy.textContent.replace(/\\s+/g, " ").trim();
  })"""
SMALL = "font-size: 8px; width: 100%; margin: 0 14mm; color: #555;"


def print_book(single: Path, pdf: Path, font: Path) -> int:
    """Print ``single/index.html`` to ``pdf``; returns the PDF's size in bytes."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        page.route("**/*", _local_only)
        page.goto((single / "index.html").resolve().as_uri(), wait_until="load")
        page.evaluate(OPEN_EVERYTHING)
        page.evaluate(SPLIT_LINES)
        page.evaluate("document.fonts.ready.then(() => true)")
        page.emulate_media(media="print")
        headings = page.evaluate(HEADINGS)
        title = html.escape(page.title())
        page.pdf(
            path=pdf,
            format="A4",
            margin=MARGINS,
            print_background=True,
            display_header_footer=True,
            header_template=f'<div style="{SMALL} text-align: left">{title}</div>',
            footer_template=f'<div style="{SMALL} text-align: center">'
            '<span class="pageNumber"></span> / <span class="totalPages"></span>'
            "</div>",
            outline=True,
            tagged=True,
        )
    finish(pdf, headings, radical_fixes(font))
    return pdf.stat().st_size


def _outline(items):
    """Bookmarks in document order (each before its children)."""
    for item in items:
        yield item
        yield from _outline(item.children)


RADICALS = range(0x2E80, 0x2FE0)  # CJK Radicals Supplement, Kangxi Radicals
IDEOGRAPHS = range(0x4E00, 0xA000)
BFCHAR = re.compile(rb"<([0-9A-F]+)> <([0-9A-F]{4})>")


def radical_fixes(font: Path) -> dict[int, int]:
    """Radical -> the ideograph drawn by the same glyph of ``font``: Chromium's
    PDF maps a glyph to its lowest code point, so its text (search, copy)
    would say ⼀ (U+2F00) where the page says 一 (U+4E00)."""
    faces = TTCollection(font, lazy=True).fonts if font.suffix == ".ttc" else []
    simplified = [f for f in faces if "SC" in f["name"].getDebugName(1)]
    face = (simplified or faces or [TTFont(font, lazy=True)])[0]  # the zh edition's
    by_glyph: dict[str, list[int]] = {}
    for code, glyph in face.getBestCmap().items():
        by_glyph.setdefault(glyph, []).append(code)
    fixes = {}
    for codes in by_glyph.values():
        ideographs = [c for c in codes if c in IDEOGRAPHS]
        for code in codes:
            if code in RADICALS and ideographs:
                fixes[code] = ideographs[0]
    return fixes


def _fix_text(book: pikepdf.Pdf, fixes: dict[int, int]) -> None:
    def fix(match):
        code = int(match[2], 16)
        return b"<%s> <%04X>" % (match[1], fixes.get(code, code))

    for obj in book.objects:
        if isinstance(obj, pikepdf.Dictionary) and "/ToUnicode" in obj:
            cmap = obj.ToUnicode
            cmap.write(BFCHAR.sub(fix, cmap.read_bytes()))


def finish(pdf: Path, headings: list[str], fixes: dict[int, int]) -> None:
    """Bookmarks titled as the headings; the file compacted: Chromium makes
    bookmarks only with ``tagged=True``, whose structure tree is half the
    file; they need it no more, and qpdf packs the rest (14.6 -> 5 MB)."""
    with pikepdf.open(pdf, allow_overwriting_input=True) as book:
        with book.open_outline() as outline:
            items = list(_outline(outline.root))
            if len(items) != len(headings):
                raise SystemExit(
                    f"{pdf}: {len(items)} bookmarks for {len(headings)} headings"
                )
            for item, heading in zip(items, headings, strict=True):
                item.title = heading
        _fix_text(book, fixes)
        for key in ("/StructTreeRoot", "/MarkInfo"):
            if key in book.Root:
                del book.Root[key]
        book.remove_unreferenced_resources()
        book.save(pdf, object_stream_mode=pikepdf.ObjectStreamMode.generate)


def _local_only(route):
    """The book prints from its own files: anything else is refused."""
    if route.request.url.startswith("file://"):
        route.continue_()
    else:
        route.abort("blockedbyclient")


def main(font: Path, books: list[tuple[Path, Path]]) -> None:
    with ThreadPoolExecutor(min(len(books), os.cpu_count() or 1)) as pool:
        printing = [pool.submit(print_book, single, pdf, font) for single, pdf in books]
        for (_, pdf), done in zip(books, printing, strict=True):
            print(f"{pdf}: {done.result() / 1e6:.1f} MB")


if __name__ == "__main__":
    font, *paths = map(Path, sys.argv[1:])
    if not paths or len(paths) % 2:
        raise SystemExit(__doc__.splitlines()[0])
    main(font, list(zip(paths[::2], paths[1::2], strict=True)))
