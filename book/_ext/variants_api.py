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


class AutoVariants(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        package = importlib.import_module("attention")
        classes = package.VARIANTS
        variants = {name: _public_name(package, cls) for name, cls in classes.items()}
        rows = [
            f"   * - ``{name!r}``\n     - :class:`~{path}`"
            for name, path in variants.items()
        ]
        lines = [
            ".. list-table:: ``attention.VARIANTS``: the registry, in order",
            "   :header-rows: 1",
            "",
            "   * - name",
            "     - class",
            *rows,
            "",
        ]
        for name, path in variants.items():
            lines += [f".. autoclass:: {path}", ""]
            if hasattr(classes[name], "mha_state_dict"):  # its own layout
                lines += [
                    "   .. automethod:: mha_state_dict",
                    "   .. automethod:: load_mha_state_dict",
                    "",
                ]
        return self.parse_text_to_nodes("\n".join(lines))


def _public_name(package, cls: type) -> str:
    """``attention.Name`` when the package exports the class, else its full path."""
    if getattr(package, cls.__name__, None) is cls:
        return f"{package.__name__}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def setup(app):
    app.add_directive("autovariants", AutoVariants)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
