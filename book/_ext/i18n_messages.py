"""``i18n_messages``: text Sphinx would not carry into the catalogs, carried.

A :class:`hidden_message` node holds a message beside the node whose text
Sphinx does not translate: the gettext builder extracts it, Sphinx's
``Locale`` transform hands it its translation, and a later transform of the
extension that placed it (``i18n_code``, ``exercise_titles``) writes the
translation where it belongs. No builder writes the node out.

This module's own transforms: the alt texts of images that cells print
(:class:`alt_message`), and display math, which is the same formula in
every language and so no message.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform


class hidden_message(nodes.Element, addnodes.translatable):
    """A message Sphinx translates but no builder writes out.

    ``message`` is the English text; after Sphinx's ``Locale`` transform,
    ``translation`` holds the catalog's text, for a later transform to put
    where Sphinx would not have translated it (register with
    :func:`add_hidden_node`).
    """

    def preserve_original_messages(self) -> None:
        self.setdefault("original_message", self["message"])

    def apply_translated_message(self, original: str, translated: str) -> None:
        self["translation"] = translated

    def extract_original_messages(self) -> list[str]:
        return [self["original_message"]]


class alt_message(nodes.Element, addnodes.translatable):
    """The alt text of an image a cell printed; never written out.

    Sphinx extracts an image's alt text itself, and ``Locale`` translates it
    in place, but the gettext builder reads the doctree after myst-nb's
    post-transform has copied the output images, and a copy has lost the id
    the builder needs: without this node, the alt texts of cell outputs never
    reach the catalogs. Placed in the cell, beside its outputs, it survives.
    """

    def preserve_original_messages(self) -> None:
        pass

    def apply_translated_message(self, original: str, translated: str) -> None:
        pass  # the image itself is translated by ``Locale``

    def extract_original_messages(self) -> list[str]:
        return [self["message"]]


def _skip(self, node) -> None:
    raise nodes.SkipNode


def add_hidden_node(app, node: type[nodes.Element]) -> None:
    """Register a node class that every builder skips."""
    visitors = (_skip, None)
    app.add_node(
        node, html=visitors, latex=visitors, text=visitors, man=visitors,
        texinfo=visitors,
    )  # fmt: skip


class NotMessages(SphinxTransform):
    """Display math is the same formula in every language: not a message."""

    default_priority = 5

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(nodes.math_block):
            node["translatable"] = False


class OutputAltMessages(SphinxTransform):
    """One ``alt_message`` per alt text of an image in a cell's output."""

    default_priority = 5

    def apply(self, **kwargs) -> None:
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


def setup(app):
    for node in (hidden_message, alt_message):
        add_hidden_node(app, node)
    app.add_transform(NotMessages)
    app.add_transform(OutputAltMessages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
