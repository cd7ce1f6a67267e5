"""``i18n_messages``: text Sphinx would not carry into the catalogs, carried.

A :class:`hidden_message` holds a message beside a node whose text Sphinx
does not translate: the gettext builder extracts it, ``Locale`` hands it its
translation, and a later transform of the extension that placed it
(``i18n_code``, ``exercise_titles``) writes it where it belongs. No builder
writes the node out. Here too: the alt texts of images that cells print
(:class:`alt_message`), and display math, which is no message.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform


class hidden_message(nodes.Element, addnodes.translatable):
    """A message (``message``) whose ``translation`` Sphinx's ``Locale`` sets."""

    def preserve_original_messages(self) -> None:
        self.setdefault("original_message", self["message"])

    def apply_translated_message(self, original: str, translated: str) -> None:
        self["translation"] = translated

    def extract_original_messages(self) -> list[str]:
        return [self["original_message"]]


class alt_message(hidden_message):
    """The alt text of an image a cell printed, for the catalogs only.

    ``Locale`` translates the image itself, but the gettext builder reads the
    doctree after myst-nb's post-transform copied the output images, losing
    the id it needs: without this node their alt texts never reach a catalog.
    """


def _skip(self, node) -> None:
    raise nodes.SkipNode


def add_hidden_node(app, node: type[nodes.Element]) -> None:
    """Register a node class that every builder skips."""
    visitors = (_skip, None)
    app.add_node(
        node, html=visitors, latex=visitors, text=visitors, man=visitors,
        texinfo=visitors,
    )  # fmt: skip


class CellMessages(SphinxTransform):
    """Display math, the same in every language, is no message; the alt text of
    an image in a cell's output is one (an ``alt_message`` in the cell)."""

    default_priority = 5

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(nodes.math_block):
            node["translatable"] = False
        for output in self.document.findall(nodes.container):
            if "cell_output" not in output["classes"] or output.parent is None:
                continue
            seen = set()
            for image in output.findall(nodes.image):
                alt = image.get("alt", "").strip()
                if alt and alt not in seen:
                    seen.add(alt)
                    marker = alt_message(message=alt)
                    marker.source, marker.line = image.source, image.line
                    output.parent.append(marker)


def _own_nodes(app, doctree: nodes.document) -> None:
    """Point translated nodes at their page, not at the scratch document.

    ``Locale`` parses each translation into a document of its own that shares
    the page's settings, and the nodes it moves into the page keep a
    reference to it. Pickled with the page, that document took the build
    environment along in its settings: 600 kB in every translated doctree.
    A node's ``document`` is its own reference, else its parent's; nodes
    come parents first, so a moved node is pointed at the page before its
    children are asked.
    """
    for node in doctree.findall():
        if node.document is not doctree:
            node.document = doctree


def setup(app):
    for node in (hidden_message, alt_message):
        add_hidden_node(app, node)
    app.add_transform(CellMessages)
    app.connect("doctree-read", _own_nodes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
