"""book/_ext/balanced_read.py: the -j 2 reading processes share the work."""

from pathlib import Path
from types import SimpleNamespace

import balanced_read

ROOT = Path(__file__).resolve().parents[1]


# -- book/_ext/balanced_read.py: -j 2 processes share the reading --------------
def test_a_notebook_costs_more_than_autodoc_and_autodoc_more_than_prose():
    cost = balanced_read.estimated_cost
    notebook = "# A page\n\n```{code-cell} python\nprint(1)\n```\n"
    autodoc = "# API\n\n```{eval-rst}\n.. autoclass:: attention.CausalAttention\n```\n"
    prose = "# Prose\n\nNo code, only `inline code`.\n"
    assert cost(notebook) > cost(autodoc) > cost(prose) > 0
    assert cost(notebook + notebook) > cost(notebook)  # more cells, more work


def test_the_book_is_dealt_into_chunks_of_about_equal_cost():
    # How Sphinx cuts the list: the test checks against Sphinx's real rule, so
    # that it fails if a new Sphinx cuts it in a way the order no longer suits.
    from sphinx.util.parallel import make_chunks

    pages = sorted((ROOT / "book").glob("[!_]*/**/*.md")) + [ROOT / "book/index.md"]
    costs = {
        page.relative_to(ROOT / "book").with_suffix("").as_posix(): (
            balanced_read.estimated_cost(page.read_text("utf-8"))
        )
        for page in pages
    }
    order = balanced_read.balanced_order(costs, 2)
    assert sorted(order) == sorted(costs)  # every page once: reordered only
    chunks = make_chunks(order, 2)
    first, second = (sum(costs[name] for name in chunk) for chunk in chunks[:2])
    # Sorted by name, the first half cost more: 39 against 32 by this estimate
    # (and 55 s against 30 s measured, as the beyond/ pages do more per cell).
    assert max(first, second) / min(first, second) < 1.15, chunks
    later = [costs[name] for chunk in chunks[2:] for name in chunk]
    assert all(cost <= min(costs.values()) for cost in later), chunks


def test_the_chunks_are_cut_as_the_installed_sphinx_cuts_them():
    from sphinx.util.parallel import make_chunks

    for nproc in (2, 3, 4):
        for count in range(1, 80):
            names = [str(i) for i in range(count)]
            expected = [len(chunk) for chunk in make_chunks(names, nproc)]
            assert balanced_read.chunk_sizes(count, nproc) == expected, (count, nproc)


def test_balancing_keeps_the_order_of_sphinx_when_there_is_nothing_to_share():
    app = SimpleNamespace(parallel=1)
    docnames = ["b", "a"]
    balanced_read._balance(app, env=None, docnames=docnames)
    assert docnames == ["b", "a"]
