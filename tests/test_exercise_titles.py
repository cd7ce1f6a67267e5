"""Why book/_ext/exercise_titles.py exists: sphinx-exercise adds parentheses."""

import inspect

from sphinx_exercise.post_transforms import ResolveTitlesInExercises


def test_sphinx_exercise_still_puts_the_title_in_parentheses():
    """Fails once sphinx-exercise writes the title another way (its issue 57).

    Then check whether a documented option gives "Exercise 3.1: ...", and
    delete ``UnwrapExerciseSubtitles`` if it does.
    """
    source = inspect.getsource(ResolveTitlesInExercises.resolve_title)
    assert 'Text(" (")' in source and 'Text(")")' in source
