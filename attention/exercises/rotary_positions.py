"""The exercises of the page rotary-positions."""

from __future__ import annotations

from .grader import Exercise

EXERCISES: tuple[Exercise, ...] = ()
