"""Let the 简体中文 edition load the English edition's copy of identical assets.

Run by ``make html`` once the zh_CN edition is copied into the site, as
``share_assets.py SITE zh_CN``. Both editions come from one source tree, so
most of ``_static`` and ``_images`` is the same file twice, and ``_sources``
(the pages' Markdown, linked by their download button; search fetches the
pages' HTML, not these) is all of it. For each file of those folders under
``SITE/zh_CN`` that a zh_CN page loads or links (``src``, ``href``) and that
is byte for byte the one at the same path in ``SITE``, those attributes are
pointed one folder up, at the English copy, and the zh_CN copy is deleted. A
file no page links stays: a script may build its path, a reader may
download it. The links stay relative, so the site works from ``file://``,
on a static host and with ``make serve``.

A file stays when a kept file of zh_CN other than a page names it (a
stylesheet's ``url(...)``, a script that builds a path): only the pages are
rewritten.

>>> rewrite('<img src="../_images/a.png"><a href="x.html">', {"_images/a.png"}, 1)
'<img src="../../_images/a.png"><a href="x.html">'
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
    """``html`` of a page ``depth`` folders below the edition, its links to
    ``shared`` files (paths from the edition's root) moved one folder up."""
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
        path.relative_to(root).as_posix()
        for folder in FOLDERS
        for path in (root / folder).rglob("*")
        if path.relative_to(root).as_posix() in linked
        and (site / path.relative_to(root)).is_file()
        and filecmp.cmp(path, site / path.relative_to(root), shallow=False)
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
    saved = 0
    for name in shared:
        saved += (root / name).stat().st_size
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
