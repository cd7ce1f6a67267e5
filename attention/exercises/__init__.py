"""Exercises a reader can check: ``check(name, fn)`` grades a function you wrote.

Every page of the book ends with exercises. Each asks for one function and
names it; after writing it, a reader runs::

    from attention.exercises import check
    check("padding_mask", padding_mask)

``check`` runs the function on the exercise's cases, edges included, beside
the package function it must equal (:data:`EXERCISES` maps each name to
that function). It returns ``True`` when every case agrees. Otherwise it
prints the first case that differs and what differs, and returns ``False``;
it does not raise because of the answer. A function whose body still raises
``NotImplementedError`` (the notebooks' stubs) gets "not yet".

Its messages are in English or in 简体中文: :func:`speak` chooses. Each
page's modules below define that page's exercises; :mod:`.grader` compares.
"""

from __future__ import annotations

from . import (
    another_sentence,
    attention_that_has_learned,
    bounded_context,
    buffers_and_devices,
    chapter3,
    cross_attention,
    efficient_attention,
    flash_attention,
    grouped_query_attention,
    kv_cache,
    padding,
    rotary_positions,
)
from .grader import LANGUAGES, Case, Exercise, Mistake, Words, grade, speak, spoken

#: The modules that define exercises, in the book's order (one per page).
PAGES = (
    chapter3,
    another_sentence,
    attention_that_has_learned,
    cross_attention,
    padding,
    kv_cache,
    bounded_context,
    rotary_positions,
    grouped_query_attention,
    buffers_and_devices,
    efficient_attention,
    flash_attention,
)

#: Every exercise by its name.
BY_NAME: dict[str, Exercise] = {
    exercise.name: exercise for page in PAGES for exercise in page.EXERCISES
}

#: Each exercise's name and the package function its answer must equal.
EXERCISES = {name: exercise.reference for name, exercise in BY_NAME.items()}


def check(name: str, fn: object, language: str | None = None) -> bool:
    """Grade ``fn``, a reader's answer to the exercise ``name``.

    Args:
        name: the exercise's name, a key of :data:`EXERCISES`.
        fn: the reader's function, called as the exercise says.
        language: ``"en"`` or ``"zh_CN"`` for this call; by default the one
            :func:`speak` chose (English until it is called).

    Returns:
        ``True`` if ``fn`` agrees with the package on every case; else
        ``False``, after printing the first case that differs and why.

    Raises:
        ValueError: ``name`` is not an exercise (a mistake in the call, not
            in the answer).
    """
    if name not in BY_NAME:
        known = ", ".join(sorted(BY_NAME))
        raise ValueError(f"name must be one of the exercises ({known}), got {name!r}")
    return grade(BY_NAME[name], fn, language)


__all__ = [
    "EXERCISES",
    "LANGUAGES",
    "Case",
    "Exercise",
    "Mistake",
    "Words",
    "check",
    "speak",
    "spoken",
]
