"""The graders of ``attention.exercises``: they accept right answers, refuse
the mistakes readers make with words that point at each, and never raise
because of an answer.

The answers live in ``tests/answers/``, one module per page.
"""

from __future__ import annotations

import importlib
import pkgutil
import string

import answers
import pytest
import torch

from attention import exercises
from attention.exercises import EXERCISES, Words, check, grader, speak

PAGE_ANSWERS = [
    importlib.import_module(f"answers.{info.name}")
    for info in pkgutil.iter_modules(answers.__path__)
]
ALL = {a.name: a for page in PAGE_ANSWERS for a in page.ANSWERS}
RIGHT = [(name, fn) for name, a in ALL.items() for fn in (EXERCISES[name], *a.right)]
WRONG = [(name, mistake) for name, a in ALL.items() for mistake in a.wrong]


def graded(name, fn, capsys, language="en"):
    """``check``'s verdict and what it printed."""
    verdict = check(name, fn, language=language)
    return verdict, capsys.readouterr().out


def test_every_exercise_has_answers_right_and_wrong():
    assert set(ALL) == set(EXERCISES), "every exercise needs tests/answers"
    for name, a in ALL.items():
        assert len(a.right) >= 1, f"{name}: another correct way of writing it"
        assert len(a.wrong) >= 3, f"{name}: at least three real mistakes"


def test_every_page_has_at_least_two_exercises():
    for page in exercises.PAGES:
        if page is exercises.chapter3:
            continue  # the chapter's own three, 3.1 to 3.3
        assert len(page.EXERCISES) >= 2, page.__name__


@pytest.mark.parametrize(("name", "fn"), RIGHT, ids=lambda v: getattr(v, "__name__", v))
def test_right_answers_pass_silently(name, fn, capsys):
    for language in ("en", "zh_CN"):
        assert graded(name, fn, capsys, language) == (True, "")


@pytest.mark.parametrize(("name", "mistake"), WRONG)
def test_mistakes_are_refused_with_words_that_point_at_them(name, mistake, capsys):
    wrong = ALL[name].wrong[mistake]
    verdict, said = graded(name, wrong.fn, capsys)
    assert verdict is False
    assert wrong.en in said, f"{mistake}: the message should say {wrong.en!r}"
    verdict, said = graded(name, wrong.fn, capsys, "zh_CN")
    assert verdict is False
    assert "用例" in said  # the case is named, in Chinese
    if wrong.zh_CN is not None:
        assert wrong.zh_CN in said, f"{mistake}: 应当提到 {wrong.zh_CN!r}"


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_a_stub_is_not_yet_not_an_error(name, capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError

    assert graded(name, stub, capsys) == (
        False,
        f"Not yet: {name} still raises NotImplementedError. Write its body, "
        "then run this cell again.\n",
    )
    verdict, said = graded(name, stub, capsys, "zh_CN")
    assert not verdict and said.startswith("还没有完成")


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_an_answer_that_raises_is_reported_not_raised(name, capsys):
    def broken(*args, **kwargs):
        raise KeyError("oops")

    verdict, said = graded(name, broken, capsys)
    assert not verdict and "your function raised KeyError: 'oops'" in said


def test_a_non_function_and_an_unknown_name(capsys):
    assert graded("padded_causal_mask", 3, capsys) == (
        False,
        "Expected a function to check, got int.\n",
    )
    with pytest.raises(
        ValueError, match="name must be one of the exercises .* got 'nope'"
    ):
        check("nope", print)


def test_speak_chooses_the_language_of_later_checks(capsys):
    def stub(attention_mask):
        raise NotImplementedError

    try:
        speak("zh_CN")
        assert graded("padded_causal_mask", stub, capsys, None)[1].startswith("还没有")
    finally:
        speak("en")
    assert graded("padded_causal_mask", stub, capsys, None)[1].startswith("Not yet")


def _all_words():
    found = [v for v in vars(grader).values() if isinstance(v, Words)]
    for exercise in exercises.BY_NAME.values():
        found.extend(m.words for m in exercise.mistakes)
    return found


def _fields(template):
    return sorted(f for _, f, _, _ in string.Formatter().parse(template) if f)


def test_every_message_has_both_languages_with_the_same_fields():
    for words in _all_words():
        assert words.en and words.zh_CN, words
        assert _fields(words.en) == _fields(words.zh_CN), words


def test_every_case_is_named_in_both_languages():
    for exercise in exercises.BY_NAME.values():
        cases = exercise.cases()
        assert len(cases) >= 3, exercise.name
        for case in cases:
            assert case.en and case.zh_CN, (exercise.name, case)


@pytest.mark.parametrize(
    ("expected", "got", "says"),
    [
        (
            torch.zeros(2, 3),
            torch.zeros(3, 2),
            "expected shape (2, 3), got (3, 2). The same sizes",
        ),
        (torch.zeros(2, 3), torch.zeros(2, 4), "expected shape (2, 3), got (2, 4).\n"),
        (
            torch.zeros(2),
            torch.zeros(2, dtype=torch.float64),
            "expected dtype torch.float32",
        ),
        (
            torch.zeros(2),
            torch.tensor([0.0, float("nan")]),
            "NaN at [1] where a number",
        ),
        (
            torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
            torch.tensor([[1.0, 3.0], [2.0, 4.0]]),
            "transposed",
        ),
        (torch.tensor([True, False]), torch.tensor([False, True]), "opposite"),
        (torch.zeros(2), None, "returned None"),
        (torch.zeros(2), [0.0, 0.0], "expected a tensor, got a list"),
        (
            (torch.zeros(1), torch.zeros(1)),
            (torch.zeros(1),),
            "expected 2 results, got 1",
        ),
        (
            torch.tensor([[0.0, 0.0], [0.5, 0.5]]),
            torch.tensor([[0.0, 0.0], [0.5, 0.25]]),
            "at [1], expected [0.5, 0.5], got [0.5, 0.25] (largest difference 0.25)",
        ),
        (torch.tensor([1.0]), torch.tensor([1.0 + 1e-7]), None),  # float32 rounding
        (
            torch.tensor([1.0], dtype=torch.float64),
            torch.tensor([1.0 + 1e-7], dtype=torch.float64),
            "at [0]",
        ),
    ],
)
def test_describe_names_what_differs(expected, got, says):
    found = grader.describe(expected, got, "en")
    if says is None:
        assert found is None
    else:
        assert says.rstrip("\n") in found
        if says.endswith("\n"):
            assert found.endswith(says.rstrip("\n"))  # and no more: no false hint


def test_an_answer_that_changes_its_input_in_place_is_refused(capsys):
    def in_place(attention_mask):
        from attention import padded_causal_mask

        result = padded_causal_mask(attention_mask)
        attention_mask.zero_()
        return result

    verdict, said = graded("padded_causal_mask", in_place, capsys)
    assert not verdict and "changed its argument 0 in place" in said
