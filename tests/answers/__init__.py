"""Answers to every exercise, right and wrong, that the grader must tell apart.

One module per page, as in ``attention/exercises``. Each defines
``ANSWERS``: for each exercise, other correct ways of writing it (the
reference is always tried too), and wrong answers written the way readers
write them, each named after the mistake and paired with the words the
grader's message must contain to point at it. ``tests/test_exercises.py``
runs them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Wrong:
    """A wrong answer, and the words that show the message points at its mistake.

    ``en`` (and ``zh_CN``, when given) must appear in the grader's message
    in that language.
    """

    fn: Callable
    en: str
    zh_CN: str | None = None


@dataclass(frozen=True)
class Answers:
    """What a grader must accept and refuse for the exercise ``name``."""

    name: str
    right: tuple[Callable, ...]
    wrong: dict[str, Wrong] = field(default_factory=dict)
