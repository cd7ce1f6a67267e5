"""The exercises of the page kv-cache."""

from __future__ import annotations

from .grader import Exercise

EXERCISES: tuple[Exercise, ...] = ()
