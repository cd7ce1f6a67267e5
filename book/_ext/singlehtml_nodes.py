"""``singlehtml_nodes``: the PDF's single-page build writes html-only nodes too.

Loaded only by the build that ``make pdf`` prints (``sphinx-build -t pdf``,
see ``conf.py``), never by the site's. Sphinx hands a builder the node
handlers registered under its name, and those registered under its format
(``html``) only when there are none under its name. sphinx-exercise
registers its nodes for ``singlehtml`` by name, so every node that
myst-nb, sphinx-design and the book register for ``html`` alone (a hidden
cell, a hidden message) has no handler in the singlehtml build, which
stops. Upstream: sphinx-doc/sphinx#14587 (a fix that merges the two is
proposed in pull request 14601; the older request is #9160).

Sphinx has no public call that lists the handlers registered for a format,
and ``app.add_node`` needs each node's class, which only the extension that
made it has. So this is the book's one use of Sphinx's component registry
(``app.registry.translation_handlers``): the singlehtml builder gets each
html handler it lacks. ``tests/test_book_ext.py`` has its canary: it fails
once Sphinx merges the handlers itself (then delete this file and its line
in ``conf.py``), or when the registry changes shape.
"""

from __future__ import annotations


def html_handlers_for_singlehtml(app) -> None:
    """Give the singlehtml builder every html node handler it lacks."""
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for name, visitors in handlers.get("html", {}).items():
        single.setdefault(name, visitors)


def setup(app):
    app.connect("builder-inited", html_handlers_for_singlehtml)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
