"""``package_cache``: no page shows outputs computed by an older package.

jupyter-cache hashes only a notebook's cells, and Sphinx reads again only
changed pages, so an edit of the ``attention`` package would leave old
outputs. Two things prevent it. A page whose code cells import the package
depends on the package's files (``env.note_dependency``), so it is read and
executed again when one changes. And myst-nb's execution cache, one folder
for both editions that the Makefile names (``-D nb_execution_cache_path=``),
belongs to one SHA-256 of the package: when a build starts, another digest
empties it (the setting itself is left as it was given).

One process at a time writes to that cache. The two reading processes of
``-j 2`` both cache notebooks, and jupyter-cache 1.0.1 is not safe for it:
after caching a notebook it lists the records to keep, then all records,
and removes those not kept. A record the other process adds between the two
queries is removed, its files not yet written ("Notebook file does not exist
for cache record"), and the build fails; it failed two clean builds of the
book in one day. jupyter-cache has no setting or hook for it (its parallel
execution is still to come: executablebooks/jupyter-cache#37), so
:func:`setup` wraps that one method in a file lock when Sphinx loads this
extension, not when the module is imported. It is the book's one patch of
another package; ``tests/test_book_ext.py`` has its canary, which fails when
jupyter-cache's truncation changes (then see whether the lock is still
needed).
"""

from __future__ import annotations

import ast
import fcntl
import functools
import hashlib
import shutil
from pathlib import Path

from jupyter_cache import get_cache
from jupyter_cache.cache.main import JupyterCacheBase
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from sphinx.errors import ExtensionError

PACKAGE = "attention"


def package_files(root: Path) -> list[Path]:
    """Every file of the package under ``root``, sorted (code and data)."""
    return sorted(
        p
        for p in (root / PACKAGE).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def package_digest(root: Path) -> str:
    """SHA-256 over the names and bytes of every file of the package."""
    h = hashlib.sha256()
    for path in package_files(root):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@functools.cache
def markdown():
    """The markdown-it parser that myst-parser reads the book's pages with."""
    config = MdParserConfig(
        enable_extensions={"amsmath", "colon_fence", "dollarmath", "deflist"}
    )
    return create_md_parser(config, RendererHTML)


def fences(source: str) -> tuple[tuple[str, str], ...]:
    """``(info, content)`` of each fenced block of a page."""
    return tuple(
        (t.info, t.content) for t in markdown().parse(source) if t.type == "fence"
    )


def imports_package(source: str) -> bool:
    """Whether a page's code cells import the package (read with Python's parser)."""
    for info, content in fences(source):
        if not info.startswith("{code-cell}"):
            continue
        try:
            tree = ast.parse(content)
        except SyntaxError:  # IPython syntax (a magic): such a cell imports nothing
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            if any(m.split(".")[0] == PACKAGE for m in modules):
                return True
    return False


def start_cache(cache: Path, digest: str) -> None:
    """Empty ``cache`` if it holds outputs of another package ``digest``, and
    make its database now, before ``-j 2`` forks two readers that would both
    create its tables."""
    stamp = cache / "package-digest.txt"
    if stamp.is_file() and stamp.read_text() != digest:
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)
    get_cache(str(cache)).list_cache_records()


def _start_cache(app) -> None:
    folder = app.config.nb_execution_cache_path
    if not folder:
        raise ExtensionError(
            "package_cache needs nb_execution_cache_path, one folder for every "
            "edition (the Makefile gives it with -D); it got none"
        )
    start_cache(Path(folder), package_digest(Path(app.config.package_cache_root)))


def one_writer_at_a_time(write):
    """``write`` (``cache_notebook_bundle``) under a lock on the cache's folder."""

    @functools.wraps(write)
    def locked(cache, *args, **kwargs):
        with open(Path(cache.path, "writing.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return write(cache, *args, **kwargs)

    locked.one_writer_at_a_time = True
    return locked


def _depend_on_package(app, docname, source) -> None:
    if imports_package(source[0]):
        for path in package_files(Path(app.config.package_cache_root)):
            app.env.note_dependency(str(path))


def setup(app):
    app.setup_extension("myst_nb")
    app.add_config_value("package_cache_root", str(Path.cwd()), "env", str)
    write = JupyterCacheBase.cache_notebook_bundle
    if not getattr(write, "one_writer_at_a_time", False):  # once a process
        JupyterCacheBase.cache_notebook_bundle = one_writer_at_a_time(write)
    app.connect("builder-inited", _start_cache)
    app.connect("source-read", _depend_on_package)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
