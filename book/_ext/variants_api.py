"""``autovariants``: the API reference's entries for ``attention.VARIANTS``.

``.. autovariants::`` (in an ``{eval-rst}`` block) writes a table of the
registry's names, then an ``autoclass`` per entry in registry order, with
its two weight-layout methods when it keeps its own layout. A class added
to the registry is documented without editing the page, and the page is
read again whenever the package changes (``package_cache``).
"""

from __future__ import annotations

import importlib

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

LAYOUT_METHODS = ("mha_state_dict", "load_mha_state_dict")


class AutoVariants(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        package = importlib.import_module("attention")
        table = [
            ".. list-table:: ``attention.VARIANTS``: the registry, in order",
            "   :header-rows: 1",
            "",
            "   * - name",
            "     - class",
        ]
        entries = []
        for name, cls in package.VARIANTS.items():
            path = _public_name(package, cls)
            table += [f"   * - ``{name!r}``", f"     - :class:`~{path}`"]
            entries += [f".. autoclass:: {path}", ""]
            if hasattr(cls, "mha_state_dict"):  # its own weight layout
                entries += [f"   .. automethod:: {m}" for m in LAYOUT_METHODS] + [""]
        return self.parse_text_to_nodes("\n".join([*table, "", *entries]))


def _public_name(package, cls: type) -> str:
    """``attention.Name`` when the package exports the class, else its full path."""
    if getattr(package, cls.__name__, None) is cls:
        return f"{package.__name__}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def setup(app):
    app.add_directive("autovariants", AutoVariants)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
