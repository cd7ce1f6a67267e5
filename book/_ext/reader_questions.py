"""``reader-questions``: the page "Questions readers ask", from one data file.

``book/_data/questions.yaml`` lists real questions from public threads, each
with the page and the anchor (a MyST target, ``(q-...)=``) where the book
answers it. The directive groups them by page, in the book's reading order,
and links each question to its answer with a ``std:ref`` cross-reference:
a question whose anchor does not exist is an unresolved reference, which
``-n -W`` turns into a failed build.

Each edition shows its own words: ``question`` in English, ``question_zh``
in the 简体中文 edition. The generated paragraphs are marked not
translatable, so they stay out of the gettext catalogs (the data file is
its own translation, and a page link shows the page's translated title).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

DATA = "_data/questions.yaml"  # relative to the book's source folder
FIELDS = ("question", "question_zh", "source", "page", "anchor")
#: The link to each question's thread, in each edition's words.
THREAD = {"en": "thread", "zh_CN": "讨论"}


def load_questions(path: Path) -> list[dict[str, str]]:
    """The entries of the data file, each checked to have every field."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    for number, entry in enumerate(entries, 1):
        missing = [f for f in FIELDS if not str(entry.get(f) or "").strip()]
        if missing:
            raise ExtensionError(
                f"{path}: entry {number} ({entry.get('question')!r}) lacks {missing}"
            )
    return entries


class ReaderQuestions(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        path = Path(self.env.srcdir) / DATA
        self.env.note_dependency(str(path))
        zh = (self.config.language or "en").startswith("zh")
        by_page: dict[str, list[dict[str, str]]] = {}
        for entry in load_questions(path):
            by_page.setdefault(entry["page"], []).append(entry)

        result: list[nodes.Node] = []
        for page, entries in by_page.items():
            heading = nodes.paragraph(classes=["reader-questions-page"])
            heading["translatable"] = False
            heading += _doc_link(page)
            questions = nodes.bullet_list(classes=["reader-questions"])
            for entry in entries:
                text = entry["question_zh"] if zh else entry["question"]
                item = nodes.paragraph()
                item["translatable"] = False
                item += _ref(entry["anchor"], text)
                item += nodes.Text(" (" if not zh else "（")
                thread = THREAD["zh_CN" if zh else "en"]
                item += nodes.reference("", thread, refuri=entry["source"])
                item += nodes.Text(")" if not zh else "）")
                questions += nodes.list_item("", item)
            result += [heading, questions]
        return result


def _doc_link(docname: str) -> addnodes.pending_xref:
    """A link to a page, titled with the page's (translated) title."""
    xref = addnodes.pending_xref(
        "", refdomain="std", reftype="doc", reftarget="/" + docname, refexplicit=False
    )
    xref += nodes.inline("", docname)
    return xref


def _ref(anchor: str, text: str) -> addnodes.pending_xref:
    """A link to an anchor of the book, with the question as its text."""
    xref = addnodes.pending_xref(
        "", refdomain="std", reftype="ref", reftarget=anchor, refexplicit=True
    )
    xref += nodes.inline("", text)
    return xref


def setup(app):
    app.add_directive("reader-questions", ReaderQuestions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
