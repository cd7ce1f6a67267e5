"""The exercises of the page buffers-and-devices."""

from __future__ import annotations

from .grader import Exercise

EXERCISES: tuple[Exercise, ...] = ()
