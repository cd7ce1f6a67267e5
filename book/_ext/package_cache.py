"""``package_cache``: no page shows outputs computed by an older package.

jupyter-cache hashes only a notebook's cells, and Sphinx reads again only
changed pages, so an edit of the ``attention`` package would leave old
outputs. So myst-nb's execution cache is one folder beside the doctrees,
shared by both editions, that belongs to one SHA-256 of the package (another
digest empties it); and a page whose code cells import the package depends
on the package's files (``env.note_dependency``), so it is read and executed
again when one changes.

The two reading processes of ``-j 2`` both write to that cache, and
jupyter-cache 1.0.1 is not safe for it: after caching a notebook it lists the
records to keep, then all records, and removes those not kept. A record the
other process adds between the two queries is removed, its files not yet
written ("Notebook file does not exist for cache record"), and the build
fails; it failed two clean builds of the book in one day. So one process at a
time caches a notebook.
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


@functools.lru_cache(maxsize=64)
def fences(source: str) -> tuple[tuple[str, str], ...]:
    """``(info, content)`` of each fenced block of a page, parsed once a
    process: ``balanced_read`` reads every page before ``-j 2`` forks the
    readers, which find them here for :func:`imports_package`."""
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


def _cache_per_package_digest(app, config) -> None:
    """One execution cache, next to the build's doctrees, for one package digest.

    The folder keeps its name (a changed config value would make Sphinx read
    every page again). Its database is made here, before ``-j 2`` forks two
    readers that would both create its tables.
    """
    digest = package_digest(Path(config.package_cache_root))
    cache = Path(app.doctreedir).parent / "jupyter_cache"
    config.nb_execution_cache_path = str(cache)
    stamp = cache / "package-digest.txt"
    if stamp.is_file() and stamp.read_text() != digest:
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)
    get_cache(str(cache)).list_cache_records()


def _one_writer_at_a_time(write):
    """``write`` (``cache_notebook_bundle``) under a lock on the cache's folder."""

    @functools.wraps(write)
    def locked(cache, *args, **kwargs):
        with open(Path(cache.path, "writing.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return write(cache, *args, **kwargs)

    return locked


JupyterCacheBase.cache_notebook_bundle = _one_writer_at_a_time(
    JupyterCacheBase.cache_notebook_bundle
)


def _depend_on_package(app, docname, source) -> None:
    if imports_package(source[0]):
        for path in package_files(Path(app.config.package_cache_root)):
            app.env.note_dependency(str(path))


def setup(app):
    app.setup_extension("myst_nb")
    app.add_config_value("package_cache_root", str(Path.cwd()), "env", str)
    app.connect("config-inited", _cache_per_package_digest)
    app.connect("source-read", _depend_on_package)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
