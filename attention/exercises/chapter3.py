"""The exercises of chapter 3: 3.1 to 3.3."""

from __future__ import annotations

from .grader import Exercise

EXERCISES: tuple[Exercise, ...] = ()
