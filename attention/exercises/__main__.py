"""``python -m attention.exercises``: every exercise, and how long its grader takes.

Grades the package's own function for each exercise (the slowest path: every
case runs, and every known mistake is tried on none) and prints the time,
per page, with the slowest last. A grader should take well under 5 s on 2
cores: a reader runs it after each try.
"""

from __future__ import annotations

import time

from . import PAGES, check


def main() -> None:
    slowest = ("", 0.0)
    for page in PAGES:
        print(page.__name__.rsplit(".", 1)[-1])
        for exercise in page.EXERCISES:
            start = time.perf_counter()
            passed = check(exercise.name, exercise.reference)
            seconds = time.perf_counter() - start
            print(
                f"  {exercise.name:32} {len(exercise.cases()):3} cases"
                f" {seconds * 1000:8.1f} ms  {'ok' if passed else 'FAILS'}"
            )
            if seconds > slowest[1]:
                slowest = (exercise.name, seconds)
    print(f"slowest grader: {slowest[0]}, {slowest[1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
