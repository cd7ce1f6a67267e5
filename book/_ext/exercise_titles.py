"""``exercise_titles``: an unnumbered exercise reads "Exercise 3.1: <title>".

The chapter's exercises carry the printed book's numbers in their titles::

    ```{exercise-start} 3.1: Compare SelfAttention_v1 and SelfAttention_v2
    :label: ex-3-1
    :nonumber:
    ```

sphinx-exercise (1.2) has no option for the title's form: it always puts the
argument in parentheses, so the box reads "Exercise (3.1: Compare ...)" and
its solution "Solution to Exercise (3.1: Compare ...)". This post-transform
runs after sphinx-exercise has resolved both titles (its priorities 20 and
21) and drops the parentheses, so the two read "Exercise 3.1: Compare ..."
and "Solution to Exercise 3.1: Compare ...". Numbered exercises, whose
number Sphinx adds while writing HTML, are left alone.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import exercise_node, solution_node

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
            and isinstance(before, nodes.Text)
            and str(before).endswith("Exercise")
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
            _unwrap(exercise.children[0])
        for solution in self.document.findall(solution_node):
            for ref in solution.children[0].findall(nodes.reference):
                _unwrap(ref)


def setup(app):
    app.add_post_transform(UnwrapExerciseSubtitles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
