"""Let the 简体中文 edition load the English edition's copy of identical assets.

``make html`` runs ``share_assets.py SITE zh_CN`` once the edition is copied
into the site. Both editions come from one source tree, so most of
``_static`` and ``_images`` is there twice, and ``_sources`` (the pages'
Markdown, linked by their download button; search fetches the HTML) is all
of it. A file of those folders under ``zh_CN`` that a zh_CN page loads or
links and that is byte for byte the English one is deleted, and the pages'
links point one folder up, still relative (``file://``, a static host,
``make serve``). A file stays when no page links it (a script may build its
path) or when another kept file (a stylesheet's ``url()``) names it: only
pages are rewritten.
"""

from __future__ import annotations

import filecmp
import posixpath
import re
import sys
from pathlib import Path

FOLDERS = ("_static", "_images", "_sources")
LINK = re.compile(r'\b(src|href)="([^"?#:]+)([?#][^"]*)?"')


def rewrite(html: str, shared: set[str], depth: int) -> str:
    """A page ``depth`` folders deep, its links to ``shared`` files moved up."""
    here = "/".join(["d"] * depth)

    def move(m: re.Match) -> str:
        target = posixpath.normpath(posixpath.join(here, m[2]))
        if target not in shared:
            return m[0]
        return f'{m[1]}="{"../" * (depth + 1)}{target}{m[3] or ""}"'

    return LINK.sub(move, html)


def share(site: Path, edition: str) -> int:
    """Share the identical assets of ``site/edition``; return the bytes saved."""
    root = site / edition
    pages = {page: page.read_text("utf-8") for page in root.rglob("*.html")}
    linked = set()  # what the pages load or link: paths from the edition's root
    for page, html in pages.items():
        here = page.parent.relative_to(root).as_posix()
        for m in LINK.finditer(html):
            linked.add(posixpath.normpath(posixpath.join(here, m[2])))
    shared = {
        path
        for path in linked
        if path.split("/")[0] in FOLDERS
        and (root / path).is_file()
        and (site / path).is_file()
        and filecmp.cmp(root / path, site / path, shallow=False)
    }
    kept_text = [
        path.read_text("utf-8", errors="ignore")
        for folder in FOLDERS
        for path in (root / folder).rglob("*")
        if path.is_file()
        and path.relative_to(root).as_posix() not in shared
        and path.suffix in (".css", ".js", ".json", ".svg")
    ]
    named = {p for p in shared if any(Path(p).name in text for text in kept_text)}
    shared -= named
    for page, html in pages.items():
        depth = len(page.relative_to(root).parts) - 1
        page.write_text(rewrite(html, shared, depth), "utf-8")
    saved = sum((root / name).stat().st_size for name in shared)
    for name in shared:
        (root / name).unlink()
    for folder in FOLDERS:  # and the folders left empty, deepest first
        for path in sorted((root / folder).glob("**/"), reverse=True):
            if not any(path.iterdir()):
                path.rmdir()
    return saved


if __name__ == "__main__":
    site, edition = Path(sys.argv[1]), sys.argv[2]
    saved = share(site, edition)
    print(f"{edition}: {saved / 2**20:.1f} MiB shared with the English edition")
