"""The exercises of the page grouped-query-attention."""

from __future__ import annotations

from .grader import Exercise

EXERCISES: tuple[Exercise, ...] = ()
