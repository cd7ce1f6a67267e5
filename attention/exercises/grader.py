"""The grader: run a reader's function beside the package's, and say what differs.

An :class:`Exercise` names the package function the reader's answer must
equal (its ``reference``) and the :class:`Case` inputs to try, edges
included. :func:`grade` runs both on each case, on copies of the inputs,
and stops at the first case where the answer differs. It then says, in the
reader's language, what differs: an error, ``None``, the type, the shape,
the dtype, NaN, a flipped mask, or the first row whose values differ. An
exercise may also list :class:`Mistake` s: wrong functions written the way
readers write them. When the answer's result equals a mistake's, the grader
names that mistake.

Every message exists in each of :data:`LANGUAGES`; :func:`speak` chooses
one for the whole session (a downloaded notebook's first exercise cell
calls it with its edition's language).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

#: The languages the grader speaks: the book's editions.
LANGUAGES = ("en", "zh_CN")

_SESSION = {"language": "en"}


def speak(language: str) -> None:
    """Choose the language of every message the grader prints from now on.

    Args:
        language: one of :data:`LANGUAGES`: ``"en"`` or ``"zh_CN"``.

    >>> speak("zh_CN"); speak("en")
    >>> speak("fr")
    Traceback (most recent call last):
    ...
    ValueError: language must be one of ('en', 'zh_CN'), got 'fr'
    """
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    _SESSION["language"] = language


def spoken() -> str:
    """The language :func:`speak` chose last (``"en"`` until it is called)."""
    return _SESSION["language"]


@dataclass(frozen=True)
class Words:
    """One message in every language, with ``{name}`` fields to fill."""

    en: str
    zh_CN: str

    def say(self, language: str, **fields: object) -> str:
        return getattr(self, language).format(**fields)


@dataclass(frozen=True)
class Case:
    """One input of an exercise: what it tests, in each language, and the arguments.

    The grader deep-copies ``args`` and ``kwargs`` for each call, so an
    answer that changes its inputs in place changes neither the reference's
    inputs nor the next case's (and is told so).
    """

    en: str
    zh_CN: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def label(self, language: str) -> str:
        return getattr(self, language)


@dataclass(frozen=True)
class Mistake:
    """A wrong answer readers write, and what to tell a reader who wrote it.

    ``wrong`` takes the exercise's arguments, as the reader's function does.
    """

    words: Words
    wrong: Callable


def _call(fn: Callable, case: Case) -> object:
    return fn(*case.args, **case.kwargs)


def _fresh(case: Case) -> Case:
    """A copy of ``case`` whose arguments no earlier call has touched."""
    return Case(
        case.en, case.zh_CN, copy.deepcopy(case.args), copy.deepcopy(case.kwargs)
    )


@dataclass(frozen=True)
class Exercise:
    """An exercise the grader checks.

    Attributes:
        name: the key readers pass to :func:`attention.exercises.check`.
        reference: the package function the answer must equal.
        cases: builds the cases (called at each check, so tensors are fresh
            and seeded; keep the whole run under a second).
        mistakes: wrong answers to recognise, in the order to try them.
        run: how to call a function on a case and get what is compared;
            by default ``fn(*args, **kwargs)``. An exercise whose answer
            changes a module in place returns the module's output here.
    """

    name: str
    reference: Callable
    cases: Callable[[], Sequence[Case]]
    mistakes: Sequence[Mistake] = ()
    run: Callable[[Callable, Case], object] = _call


NOT_YET = Words(
    en="Not yet: {name} still raises NotImplementedError. Write its body, "
    "then run this cell again.",
    zh_CN="还没有完成：{name} 仍然抛出 NotImplementedError。"
    "写好函数体后，再运行这个单元格。",
)
NOT_CALLABLE = Words(
    en="Expected a function to check, got {kind}.",
    zh_CN="这里需要传入一个待检查的函数，收到的却是 {kind}。",
)
IN_CASE = Words(
    en="Wrong in the case {case}: ",
    zh_CN="用例“{case}”出错：",
)
RAISED = Words(
    en="your function raised {error}.",
    zh_CN="你的函数抛出了 {error}。",
)
RETURNED_NONE = Words(
    en="your function returned None where a {kind} was expected. Does it end "
    "with `return`? Methods such as `masked_fill` return a new tensor: assign "
    "their result.",
    zh_CN="你的函数返回了 None，而这里应当返回 {kind}。函数结尾有 `return` 吗？"
    "`masked_fill` 等方法返回新的张量：要把结果赋给变量。",
)
WRONG_TYPE = Words(
    en="expected a {expected}, got a {got}.",
    zh_CN="应当得到 {expected}，得到的却是 {got}。",
)
WRONG_LENGTH = Words(
    en="expected {expected} results, got {got}.",
    zh_CN="应当返回 {expected} 个结果，实际返回了 {got} 个。",
)
IN_ITEM = Words(
    en="in result {index}: ",
    zh_CN="第 {index} 个结果：",
)
WRONG_SHAPE = Words(
    en="expected shape {expected}, got {got}.",
    zh_CN="形状应为 {expected}，实际为 {got}。",
)
PERMUTED = Words(
    en=" The same sizes in another order: a transpose or view of the wrong dimensions?",
    zh_CN="尺寸相同但顺序不同：是否转置或 view 了错误的维度？",
)
WRONG_DTYPE = Words(
    en="expected dtype {expected}, got {got}.",
    zh_CN="数据类型应为 {expected}，实际为 {got}。",
)
FLIPPED = Words(
    en="every entry is the opposite of the expected one. In this package "
    "`True` marks a position that is hidden.",
    zh_CN="每个元素都与预期相反。在本书的包中，`True` 表示该位置被遮蔽。",
)
NAN = Words(
    en="NaN at {index} where a number was expected ({expected}).",
    zh_CN="在 {index} 处得到 NaN，而应当是一个数（{expected}）。",
)
TRANSPOSED = Words(
    en="your result is the expected one transposed: rows and columns are swapped.",
    zh_CN="你的结果恰好是预期结果的转置：行与列互换了。",
)
ROW_DIFFERS = Words(
    en="at {index}, expected {expected}, got {got} (largest difference {diff}).",
    zh_CN="在 {index} 处，应为 {expected}，实际为 {got}（最大差值 {diff}）。",
)
ROW_DIFFERS_EXACTLY = Words(
    en="at {index}, expected {expected}, got {got}.",
    zh_CN="在 {index} 处，应为 {expected}，实际为 {got}。",
)
VALUE_DIFFERS = Words(
    en="expected {expected}, got {got}.",
    zh_CN="应为 {expected}，实际为 {got}。",
)
CHANGED_INPUT = Words(
    en="your function changed its argument {index} in place. Build a new "
    "tensor instead (`masked_fill`, not `masked_fill_`).",
    zh_CN="你的函数原地修改了第 {index} 个参数。请构造新的张量（用 `masked_fill`，"
    "而不是 `masked_fill_`）。",
)


def _tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing results of ``dtype``."""
    if dtype == torch.float64:
        return 1e-10, 1e-10
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    return 1e-5, 1e-6


def _kind(value: object) -> str:
    return type(value).__name__


def _numbers(values: torch.Tensor, most: int = 6) -> str:
    """A short picture of a row: ``[0.25, 0.75]`` or its first ``most`` entries."""
    flat = values.reshape(-1).tolist()
    shown = ", ".join(_number(v) for v in flat[:most])
    more = ", …" if len(flat) > most else ""
    return f"[{shown}{more}]"


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _index(position: Sequence[int]) -> str:
    return "[" + ", ".join(str(i) for i in position) + "]"


def describe(expected: object, got: object, language: str) -> str | None:
    """What differs between ``got`` and ``expected``, or ``None`` if they agree.

    Tensors agree when they have the same shape and dtype and their values
    are close for that dtype (NaN where ``expected`` has NaN); tuples and
    lists item by item; anything else by ``==``.

    >>> describe(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]), "en") is None
    True
    >>> describe(torch.tensor([3, 4]), torch.tensor([3, 5]), "en")
    'at [1], expected [3, 4], got [3, 5].'
    """
    if isinstance(expected, torch.Tensor):
        return _describe_tensor(expected, got, language)
    if isinstance(expected, (tuple, list)):
        if got is None:
            return RETURNED_NONE.say(language, kind=_kind(expected))
        if not isinstance(got, (tuple, list)):
            return WRONG_TYPE.say(language, expected=_kind(expected), got=_kind(got))
        if len(got) != len(expected):
            return WRONG_LENGTH.say(language, expected=len(expected), got=len(got))
        for index, (want, have) in enumerate(zip(expected, got, strict=True)):
            found = describe(want, have, language)
            if found is not None:
                return IN_ITEM.say(language, index=index) + found
        return None
    if got is None and expected is not None:
        return RETURNED_NONE.say(language, kind=_kind(expected))
    if isinstance(expected, float) and isinstance(got, (int, float)):
        if math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return VALUE_DIFFERS.say(language, expected=_number(expected), got=_number(got))
    if got != expected:
        return VALUE_DIFFERS.say(language, expected=expected, got=got)
    return None


def _describe_tensor(expected: torch.Tensor, got: object, language: str) -> str | None:
    if got is None:
        return RETURNED_NONE.say(language, kind="tensor")
    if not isinstance(got, torch.Tensor):
        return WRONG_TYPE.say(language, expected="tensor", got=_kind(got))
    if got.shape != expected.shape:
        text = WRONG_SHAPE.say(
            language, expected=tuple(expected.shape), got=tuple(got.shape)
        )
        if sorted(got.shape) == sorted(expected.shape):
            text += PERMUTED.say(language)
        return text
    if got.dtype != expected.dtype:
        return WRONG_DTYPE.say(language, expected=expected.dtype, got=got.dtype)
    got = got.detach().cpu()
    expected = expected.detach().cpu()
    if _same(got, expected):
        return None
    if expected.dtype == torch.bool and expected.numel() > 0:
        if torch.equal(got, ~expected):
            return FLIPPED.say(language)
    if expected.is_floating_point():
        surprise = torch.isnan(got) & ~torch.isnan(expected)
        if surprise.any():
            position = [int(i) for i in surprise.nonzero()[0]]
            want = expected[tuple(position)].item()
            return NAN.say(language, index=_index(position), expected=_number(want))
    if expected.dim() >= 2 and expected.shape[-1] == expected.shape[-2]:
        if _same(got, expected.transpose(-2, -1)):
            return TRANSPOSED.say(language)
    return _first_difference(expected, got, language)


def _same(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal, or close for a floating dtype (NaN where ``expected`` has NaN)."""
    if not expected.is_floating_point():
        return torch.equal(got, expected)
    rtol, atol = _tolerance(expected.dtype)
    return torch.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def _first_difference(expected: torch.Tensor, got: torch.Tensor, language: str) -> str:
    """The first row (all indices but the last) where ``got`` differs."""
    if expected.is_floating_point():
        rtol, atol = _tolerance(expected.dtype)
        close = torch.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = got == expected
    position = [int(i) for i in (~close).nonzero()[0]]
    if expected.dim() == 0:
        return VALUE_DIFFERS.say(
            language, expected=_number(expected.item()), got=_number(got.item())
        )
    row = tuple(position[:-1])  # the row holding the first difference
    want, have = expected[row], got[row]
    index = _index(position[:-1]) if row else _index(position)
    if not expected.is_floating_point():
        return ROW_DIFFERS_EXACTLY.say(
            language, index=index, expected=_numbers(want), got=_numbers(have)
        )
    diff = (have - want).abs().nan_to_num(nan=math.inf).max().item()
    return ROW_DIFFERS.say(
        language,
        index=index,
        expected=_numbers(want),
        got=_numbers(have),
        diff=_number(diff),
    )


def _changed_argument(before: tuple, after: tuple) -> int | None:
    """The index of the first tensor argument an answer changed in place."""
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        if isinstance(old, torch.Tensor) and not torch.equal(old, new):
            return index
    return None


def grade(exercise: Exercise, answer: object, language: str | None = None) -> bool:
    """Run ``answer`` on every case of ``exercise``; print why it is wrong, if it is.

    Returns ``True`` when every case agrees with the reference, and prints
    nothing then. Otherwise it prints what differs in the first case that
    differs and returns ``False``. It never raises because of the answer.
    """
    language = spoken() if language is None else language
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    if not callable(answer):
        print(NOT_CALLABLE.say(language, kind=_kind(answer)))
        return False
    for case in exercise.cases():
        expected = exercise.run(exercise.reference, _fresh(case))
        probe = _fresh(case)
        try:
            got = exercise.run(answer, probe)
        except NotImplementedError:
            print(NOT_YET.say(language, name=exercise.name))
            return False
        except Exception as error:  # the reader's error: reported, not raised
            found = RAISED.say(language, error=f"{type(error).__name__}: {error}")
        else:
            found = describe(expected, got, language)
            if found is not None:  # a known mistake's words say more, if it is one
                found = _mistake(exercise, case, expected, got, language) or found
            changed = _changed_argument(case.args, probe.args)
            if found is None and changed is not None:
                found = CHANGED_INPUT.say(language, index=changed)
        if found is not None:
            print(IN_CASE.say(language, case=case.label(language)) + found)
            return False
    return True


def _mistake(
    exercise: Exercise, case: Case, expected: object, got: object, language: str
) -> str | None:
    """The words of the first known mistake whose result ``got`` equals."""
    for mistake in exercise.mistakes:
        try:
            wrong = exercise.run(mistake.wrong, _fresh(case))
        except Exception:  # a mistake that cannot run on this case: not this one
            continue
        if describe(expected, wrong, "en") is None:
            continue  # the mistake does not show on this case
        if describe(wrong, got, "en") is None:
            return mistake.words.say(language)
    return None
