"""The exercises of the page bounded-context."""

from __future__ import annotations

from .grader import Exercise

EXERCISES: tuple[Exercise, ...] = ()
