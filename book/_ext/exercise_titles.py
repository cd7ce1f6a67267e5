"""``exercise_titles``: an unnumbered exercise reads "Exercise 3.1: <title>".

The chapter's exercises carry the printed book's numbers in their titles
(``{exercise-start} 3.1: Compare ...`` with ``:nonumber:``), and
sphinx-exercise 1.2 always wraps them in parentheses: "Exercise (3.1: ...)".
No option changes that (sphinx-exercise issue 57; ``tests/test_book_ext.py``
fails when it stops): a post-transform drops them. sphinx-exercise keeps the
title's text where Sphinx does not translate it, so a hidden
``subtitle_message`` beside it carries the translation (``i18n_messages``).
"""

from __future__ import annotations

from docutils import nodes
from i18n_messages import add_hidden_node, hidden_message
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import exercise_node, exercise_subtitle

OPEN, CLOSE = " (", ")"


def _unwrap(parent: nodes.Element) -> bool:
    """Turn ``Exercise`` ``" ("`` ... ``")"`` among ``parent``'s children into
    ``Exercise `` ...; return whether it did."""
    children = parent.children
    for i, child in enumerate(children[1:], start=1):
        before = children[i - 1]
        if (
            isinstance(child, nodes.Text)
            and str(child) == OPEN
            and isinstance(before, nodes.Text)  # "Exercise", or its translation
            and isinstance(children[-1], nodes.Text)
            and str(children[-1]) == CLOSE
        ):
            parent.remove(children[-1])
            parent.replace(child, nodes.Text(" "))
            return True
    return False


class UnwrapExerciseSubtitles(SphinxPostTransform):
    default_priority = 22  # after ResolveTitlesInExercises / ...InSolutions
    formats = ("html",)

    def run(self) -> None:
        # exercise_node is the unnumbered kind (``:nonumber:``).
        for exercise in self.document.findall(exercise_node):
            title = exercise.next_node(nodes.title)
            if title is not None:
                _unwrap(title)


class subtitle_message(hidden_message):
    """The text of the exercise title before it."""


class SubtitleMessages(SphinxTransform):
    default_priority = 5  # before Sphinx's Locale transform (20)

    def apply(self, **kwargs) -> None:
        for subtitle in list(self.document.findall(exercise_subtitle)):
            marker = subtitle_message(message=subtitle.astext())
            marker.source, marker.line = subtitle.source, subtitle.line
            title = subtitle.parent  # the exercise's title, inside the exercise
            title.parent.insert(title.parent.index(title) + 1, marker)


class ApplySubtitleTranslations(SphinxTransform):
    default_priority = 21  # right after Locale

    def apply(self, **kwargs) -> None:
        for marker in self.document.findall(subtitle_message):
            if not marker.get("translation"):
                continue
            title = marker.parent[marker.parent.index(marker) - 1]
            for subtitle in title.findall(exercise_subtitle):
                subtitle.children = []
                subtitle += nodes.Text(marker["translation"])


def setup(app):
    add_hidden_node(app, subtitle_message)
    app.add_transform(SubtitleMessages)
    app.add_transform(ApplySubtitleTranslations)
    app.add_post_transform(UnwrapExerciseSubtitles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
