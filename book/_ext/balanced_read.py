"""``balanced_read``: the pages to read, ordered so that the processes share the work.

With ``-j 2`` Sphinx cuts the list of pages into consecutive chunks
(``sphinx.util.parallel.make_chunks``) and reads them in two processes at a
time. Sorted by name, the heaviest notebooks (``beyond/``) fell into one
chunk, and one process worked long after the other. At
``env-before-read-docs`` this estimates each page's cost from its source (and
whether its notebook is in the execution cache, and in a translated edition
how many messages its catalog holds) and reorders the list so that the
chunks read together cost about the same.
"""

from __future__ import annotations

import heapq
from pathlib import Path

from jupyter_cache import get_cache
from package_cache import fences
from sphinx.util.i18n import CatalogRepository
from sphinx.util.parallel import make_chunks

# Rough costs in seconds on the 2-core machine, fitted to the execution times
# that jupyter-cache records; only their ratios matter.
KERNEL_SECONDS = 1.0  # fork a kernel (book/_kernel/warm.py), shut it down
CELL_SECONDS = 0.05
MATPLOTLIB_SECONDS = 1.2  # a page that draws figures
TIMED_SECONDS = 1.2  # a cell tagged nondeterministic times something
AUTODOC_SECONDS = 3.0  # autodoc imports the package (and torch), translated
READ_SECONDS_PER_KB = 0.025  # parse a page's source
# Locale parses each translation (twice, most of them): the API page's 544
# messages cost the Chinese edition more than its autodoc.
MESSAGE_SECONDS = 0.012


def estimated_cost(source: str, executes: bool = True, messages: int = 0) -> float:
    """Seconds that reading a page with this source costs, roughly;
    ``executes``: whether its notebook runs (it is not in the execution cache);
    ``messages``: how many its catalog translates.

    >>> estimated_cost("```{code-cell} python\\nx = 1\\n```\\n")
    1.05
    >>> estimated_cost("```{eval-rst}\\n.. autofunction:: f\\n```\\n", executes=False)
    3.0
    """
    blocks = fences(source)
    cost = READ_SECONDS_PER_KB * len(source.encode()) / 1000
    cost += MESSAGE_SECONDS * messages
    cells = sum(info.startswith("{code-cell}") for info, _ in blocks)
    if cells and executes:
        cost += KERNEL_SECONDS + CELL_SECONDS * cells
        cost += MATPLOTLIB_SECONDS * ("matplotlib" in source)
        cost += TIMED_SECONDS * source.count("nondeterministic")
    elif any(  # {autoclass}-like fences, or reStructuredText's .. auto*:: in one
        info.startswith("{auto")
        or (info.startswith("{eval-rst}") and "\n.. auto" in "\n" + content)
        for info, content in blocks
    ):
        cost += AUTODOC_SECONDS
    return round(cost, 2)


def balanced_order(costs: dict[str, float], nproc: int) -> list[str]:
    """The pages in an order whose chunks (as Sphinx cuts them) cost alike.

    The first ``nproc`` chunks start together; each page, the most costly
    first, joins the cheapest of them that still has room. The chunks that
    start later, when a process is free, get the cheapest pages.

    >>> balanced_order({"a": 9, "b": 5, "c": 8, "d": 4.5, "e": 0.3}, 2)
    ['a', 'd', 'c', 'b', 'e']
    """
    names = sorted(costs, key=lambda name: (-costs[name], name))
    sizes = [len(chunk) for chunk in make_chunks(names, nproc)]
    first, later = sizes[:nproc], sizes[nproc:]
    cut = len(names) - sum(later)
    chunks: list[list[str]] = [[] for _ in first]
    loads = [(0.0, index) for index in range(len(first))]  # a heap
    for name in names[:cut]:
        load, index = heapq.heappop(loads)
        chunks[index].append(name)
        if len(chunks[index]) < first[index]:
            heapq.heappush(loads, (load + costs[name], index))
    return [name for chunk in chunks for name in chunk] + names[cut:]


def catalog_messages(app) -> dict[str, int]:
    """How many messages each page's catalog in the build's language holds
    (Sphinx finds the catalogs: one per page, as gettext_compact is False)."""
    config = app.config
    found = CatalogRepository(
        app.srcdir, config.locale_dirs, config.language, config.source_encoding
    )
    return {
        c.domain: Path(c.po_path).read_text("utf-8").count("\nmsgid ")
        for c in found.catalogs
    }


def _balance(app, env, docnames: list[str]) -> None:
    if app.parallel <= 1 or len(docnames) <= app.parallel:
        return
    # A page with a record in the execution cache is taken to be cached (the
    # Chinese edition executes nothing); a changed one is only misjudged.
    cache = get_cache(app.config.nb_execution_cache_path)
    cached = {record.uri for record in cache.list_cache_records()}
    paths = {name: env.doc2path(name) for name in docnames}
    messages = catalog_messages(app)
    costs = {
        name: estimated_cost(
            path.read_text("utf-8"), str(path) not in cached, messages.get(name, 0)
        )
        for name, path in paths.items()
    }
    docnames[:] = balanced_order(costs, app.parallel)


def setup(app):
    app.connect("env-before-read-docs", _balance)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
