"""``balanced_read``: the pages to read, ordered so that the processes share the work.

With ``-j 2`` Sphinx cuts the list of pages into consecutive chunks and reads
each chunk in a process of its own, two at a time (:func:`chunk_sizes`).
Sorted by name, the heaviest notebooks (``beyond/``) fell into the first
chunk, and one process worked long after the other had finished.

This handler of Sphinx's ``env-before-read-docs`` event (which may reorder
the list in place) estimates each page's cost from its source and deals the
pages out so that the chunks read at the same time cost about the same. It
changes the order only, and does nothing in a serial build.
"""

from __future__ import annotations

import heapq
import math

from package_cache import markdown

# Rough costs in seconds on the 2-core machine; only their ratios matter.
KERNEL_SECONDS = 4.0  # start a kernel, import torch and matplotlib, shut it down
CELL_SECONDS = 0.1
AUTODOC_SECONDS = 2.0  # autodoc imports the package, and with it torch
PAGE_SECONDS = 0.3


def estimated_cost(source: str) -> float:
    """Seconds that reading a page with this source costs, roughly.

    >>> estimated_cost("```{code-cell} python\\nx = 1\\n```\\n")
    4.1
    """
    fences = [t for t in markdown().parse(source) if t.type == "fence"]
    cells = sum(t.info.startswith("{code-cell}") for t in fences)
    if cells:
        return KERNEL_SECONDS + CELL_SECONDS * cells
    if any(_is_autodoc(t.info, t.content) for t in fences):
        return AUTODOC_SECONDS
    return PAGE_SECONDS


def _is_autodoc(info: str, content: str) -> bool:
    """``{autoclass}``-like fences, or reStructuredText ``.. auto*::`` inside one."""
    if info.startswith("{auto"):
        return True
    return info.startswith("{eval-rst}") and any(
        line.strip().startswith(".. auto") for line in content.splitlines()
    )


def chunk_sizes(count: int, nproc: int, maxbatch: int = 10) -> list[int]:
    """The sizes of the chunks Sphinx 9 cuts ``count`` pages into for ``nproc``.

    Sphinx's rule (``sphinx.util.parallel``), written out here rather than
    imported from Sphinx's internals: ``count // nproc`` pages a chunk, or
    ``sqrt(count / nproc * maxbatch)`` once that reaches ``maxbatch``, and
    the rest in a last chunk. ``tests/test_book_ext.py`` compares it
    with the installed Sphinx.

    >>> chunk_sizes(17, 2)
    [8, 8, 1]
    """
    size = count // nproc
    if size >= maxbatch:
        size = int(math.sqrt(count / nproc * maxbatch))
    size = max(size, 1)
    full, rest = divmod(count, size)
    return [size] * full + ([rest] if rest else [])


def balanced_order(costs: dict[str, float], nproc: int) -> list[str]:
    """The pages in an order whose chunks (as Sphinx cuts them) cost alike.

    The first ``nproc`` chunks start together; each page, the most costly
    first, joins the cheapest of them that still has room. The chunks that
    start later, when a process is free, get the cheapest pages.

    >>> balanced_order({"a": 9, "b": 5, "c": 8, "d": 4.5, "e": 0.3}, 2)
    ['a', 'd', 'c', 'b', 'e']
    """
    names = sorted(costs, key=lambda name: (-costs[name], name))
    sizes = chunk_sizes(len(names), nproc)
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


def _balance(app, env, docnames: list[str]) -> None:
    if app.parallel <= 1 or len(docnames) <= app.parallel:
        return
    costs = {
        name: estimated_cost(env.doc2path(name).read_text(encoding="utf-8"))
        for name in docnames
    }
    docnames[:] = balanced_order(costs, app.parallel)


def setup(app):
    app.connect("env-before-read-docs", _balance)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
