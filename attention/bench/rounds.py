"""Round times, their spread, and sentences bound to them.

A timing is never one number: it is the times of several rounds. Two
timings are told apart only when their rounds do not overlap; inside the
spread, the honest word is "about as fast as". A page that says "faster"
either lets :func:`compare` choose the word, or states its sentence with
:func:`claim`, which fails the build, naming the sentence, when the numbers
stop supporting it.

Book section: Beyond the chapter, Efficient multi-head attention.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


class ClaimError(AssertionError):
    """A sentence on a page that its numbers no longer support."""


def claim(condition: bool, sentence: str) -> None:
    """Fail, naming ``sentence``, unless ``condition`` holds.

    Args:
        condition: what the numbers must satisfy for the sentence to be true.
        sentence: the sentence of the page, as the reader reads it.

    Raises:
        ClaimError: when ``condition`` is false (an ``AssertionError``, so a
            page's cell fails and the build with it).

    >>> claim(2.0 > 1.0, "two is more than one")
    >>> claim(1.0 > 2.0, "one is more than two")
    Traceback (most recent call last):
    ...
    attention.bench.rounds.ClaimError: the page says 'one is more than two', and the numbers no longer support it
    """  # noqa: E501
    if not condition:
        raise ClaimError(
            f"the page says {sentence!r}, and the numbers no longer support it"
        )


@dataclass(frozen=True)
class Timing:
    """The times of the rounds of one measurement, in seconds.

    ``spread`` is the range of the rounds over their median: 0.04 means the
    slowest round took 4% of the median longer than the fastest.

    >>> t = Timing((0.010, 0.012, 0.011))
    >>> t.median, t.low, t.high
    (0.011, 0.01, 0.012)
    >>> round(t.spread, 3)
    0.182
    >>> print(t)
    11.0 ms (rounds spread 18%, 3 rounds)
    """

    rounds: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.rounds) == 0:
            raise ValueError("a timing needs at least one round, got none")
        object.__setattr__(self, "rounds", tuple(float(r) for r in self.rounds))

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)

    @property
    def low(self) -> float:
        return min(self.rounds)

    @property
    def high(self) -> float:
        return max(self.rounds)

    @property
    def spread(self) -> float:
        return (self.high - self.low) / self.median

    def __str__(self) -> str:
        return (
            f"{_seconds(self.median)} (rounds spread {self.spread:.0%}, "
            f"{len(self.rounds)} rounds)"
        )


def _seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def as_timing(rounds: Timing | Sequence[float]) -> Timing:
    """A :class:`Timing`, from itself or from round times in seconds."""
    return rounds if isinstance(rounds, Timing) else Timing(tuple(rounds))


def time_rounds(fn: Callable[[], object], repeats: int = 7, warmup: int = 1) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then time ``repeats`` calls.

    Args:
        fn: what to time, called without arguments.
        repeats: timed rounds (at least 2: one round has no spread).
        warmup: untimed calls first (allocations, caches, lazy set-up).

    Returns:
        the :class:`Timing` of the timed calls.
    """
    if repeats < 2:
        raise ValueError(f"repeats must be at least 2 to show a spread, got {repeats}")
    for _ in range(warmup):
        fn()
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        rounds.append(time.perf_counter() - start)
    return Timing(tuple(rounds))


@dataclass(frozen=True)
class Comparison:
    """Two timings side by side; see :func:`compare`."""

    a: Timing
    b: Timing

    @property
    def ratio(self) -> float:
        """How many times as long ``b`` takes as ``a`` (medians)."""
        return self.b.median / self.a.median

    @property
    def faster(self) -> str | None:
        """``"a"`` or ``"b"`` when every round of it beat every round of the
        other, ``None`` when the rounds overlap."""
        if self.a.high < self.b.low:
            return "a"
        if self.b.high < self.a.low:
            return "b"
        return None

    @property
    def separated(self) -> bool:
        return self.faster is not None

    @property
    def word(self) -> str:
        """How ``a`` compares with ``b``, in words the rounds support."""
        if self.faster == "a":
            return "faster than"
        if self.faster == "b":
            return "slower than"
        return "about as fast as (inside the spread of the rounds)"


def compare(a: Timing | Sequence[float], b: Timing | Sequence[float]) -> Comparison:
    """Compare two timings by their rounds, not only by their medians.

    Args:
        a, b: a :class:`Timing`, or round times in seconds (a stored run's
            ``row["times_s"]``).

    Returns:
        a :class:`Comparison`: ``ratio`` (b's median over a's), ``faster``
        (``"a"``, ``"b"`` or ``None`` when the rounds overlap) and ``word``.

    >>> c = compare([1.0, 1.1, 1.05], [2.0, 2.2, 2.1])
    >>> c.faster, round(c.ratio, 2), c.word
    ('a', 2.0, 'faster than')
    >>> compare([1.0, 1.3], [1.2, 1.25]).word
    'about as fast as (inside the spread of the rounds)'
    """
    return Comparison(as_timing(a), as_timing(b))
