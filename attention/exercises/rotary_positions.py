"""The exercises of the page rotary-positions."""

from __future__ import annotations

import torch

from ..rope import apply_rope, rope_angles
from .grader import Case, Exercise, Mistake, Words


def _angles_cases() -> list[Case]:
    # The first case has several pairs and positions past 1, so that every
    # slip of the exponent or of the positions shows on it.
    return [
        Case(
            "positions 0 to 4, head_dim 8",
            "位置 0 到 4，head_dim 8",
            (torch.arange(5), 8),
        ),
        Case(
            "base 100, head_dim 4",
            "底数 base 为 100，head_dim 4",
            (torch.arange(3), 4),
            {"base": 100.0},
        ),
        Case(
            "one token at position 7, one pair (head_dim 2)",
            "位置 7 上只有一个词元，只有一对（head_dim 2）",
            (torch.tensor([7]), 2),
        ),
        Case(
            "one row of positions per sequence, (b, T)",
            "每个序列一行位置，(b, T)",
            (torch.tensor([[0, 0, 1, 2], [0, 1, 2, 3]]), 6),
        ),
        Case(
            "a position far out, 100,000, in float64",
            "很远的位置 100,000，float64",
            (torch.tensor([99_999, 100_000]), 64),
        ),
        Case(
            "dtype=torch.float32",
            "dtype=torch.float32",
            (torch.arange(4), 8),
            {"dtype": torch.float32},
        ),
    ]


def _inv_freq(head_dim: int, base: float, dtype: torch.dtype, exponent) -> torch.Tensor:
    pair = torch.arange(head_dim // 2, dtype=dtype)
    return base ** exponent(pair, head_dim)


def _angles_with(exponent, shift: int = 0, compute=None):
    """A wrong ``rope_angles``: another exponent, shifted positions, or float32."""

    def angles(position_ids, head_dim, *, base=10000.0, dtype=torch.float64):
        work = dtype if compute is None else compute
        inv_freq = _inv_freq(head_dim, base, work, exponent)
        theta = (position_ids + shift).to(work)[..., None] * inv_freq
        return theta.to(dtype)

    return angles


def _right_exponent(pair, head_dim):
    return -2 * pair / head_dim


def _half_exponent(pair, head_dim):
    return -pair / head_dim


def _positive_exponent(pair, head_dim):
    return 2 * pair / head_dim


def _rope_cases() -> list[Case]:
    gen = torch.Generator().manual_seed(0)

    def features(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    return [
        Case(
            "(b, h, T, hd) = (2, 3, 5, 8), positions 0 to 4",
            "(b, h, T, hd) = (2, 3, 5, 8)，位置 0 到 4",
            (features(2, 3, 5, 8), torch.arange(5)),
        ),
        Case(
            "float64, base 100",
            "float64，底数 base 为 100",
            (features(1, 2, 4, 6, dtype=torch.float64), torch.arange(4)),
            {"base": 100.0},
        ),
        Case(
            "one token at position 9, one pair (head_dim 2)",
            "位置 9 上只有一个词元，只有一对（head_dim 2）",
            (features(1, 1, 1, 2), torch.tensor([9])),
        ),
        Case(
            "positions that do not start at 0: 3 to 6",
            "位置不从 0 开始：3 到 6",
            (features(1, 2, 4, 4), torch.arange(3, 7)),
        ),
        Case(
            "one row of positions per sequence, (b, T), with b = h = 2",
            "每个序列一行位置，(b, T)，且 b = h = 2",
            (features(2, 2, 4, 4), torch.tensor([[0, 0, 1, 2], [0, 1, 2, 3]])),
        ),
    ]


def _rope_with(
    pairs: str = "half",
    sign: int = 1,
    exponent=_right_exponent,
    shift: int = 0,
    over_heads: bool = True,
):
    """A wrong ``apply_rope``: other pairs, the other way round, other angles,
    or per-row angles not given an axis for the heads."""

    def rope(x, position_ids, *, base=10000.0):
        head_dim = x.shape[-1]
        inv_freq = _inv_freq(head_dim, base, torch.float64, exponent)
        theta = (position_ids + shift).double()[..., None] * inv_freq  # (.., T, hd/2)
        if position_ids.dim() == 2 and over_heads:  # (b, T, hd/2) -> (b, 1, T, hd/2)
            theta = theta[:, None]
        cos, sin = theta.cos().to(x.dtype), sign * theta.sin().to(x.dtype)
        if pairs == "half":
            a, b = x[..., : head_dim // 2], x[..., head_dim // 2 :]
            return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
        if pairs == "interleaved":
            a, b = x[..., 0::2], x[..., 1::2]
            turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
            return turned.flatten(-2)
        # "mixed": the half split, with the angles of neighbouring pairs
        # (cos laid out as c0, c0, c1, c1, ...)
        cos = cos.repeat_interleave(2, dim=-1)
        sin = sin.repeat_interleave(2, dim=-1)
        a, b = x[..., : head_dim // 2], x[..., head_dim // 2 :]
        rotated_half = torch.cat((-b, a), dim=-1)
        return x * cos + rotated_half * sin

    return rope


EXERCISES = (
    Exercise(
        name="rope_angles",
        reference=rope_angles,
        cases=_angles_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your frequencies fall half as fast: the exponent is "
                    "-2i / head_dim, with i the pair (0 .. head_dim/2 - 1), not "
                    "-i / head_dim.",
                    zh_CN="你的频率下降得慢了一半：指数应为 -2i / head_dim，"
                    "其中 i 是对的编号（0 .. head_dim/2 - 1），而不是 -i / head_dim。",
                ),
                _angles_with(_half_exponent),
            ),
            Mistake(
                Words(
                    en="your frequencies grow with the pair: the exponent must be "
                    "negative, base ** (-2i / head_dim), so that pair 0 turns "
                    "fastest.",
                    zh_CN="你的频率随对的编号增大：指数必须为负，"
                    "base ** (-2i / head_dim)，这样第 0 对转得最快。",
                ),
                _angles_with(_positive_exponent),
            ),
            Mistake(
                Words(
                    en="your angles belong to the next position: position m "
                    "turns by m times the frequency, and the first token, at "
                    "position 0, does not turn.",
                    zh_CN="你的角度属于下一个位置：位置 m 转过的角度是 m 乘以频率，"
                    "位置 0 上的第一个词元不转。",
                ),
                _angles_with(_right_exponent, shift=1),
            ),
            Mistake(
                Words(
                    en="your angles were computed in float32 and then cast: at "
                    "large positions float32 loses the low bits of m. Compute "
                    "in the dtype asked for (float64 by default).",
                    zh_CN="你的角度先用 float32 计算再转换类型：位置很大时，float32 "
                    "会丢掉 m 的低位。请直接用要求的 dtype 计算（默认 float64）。",
                ),
                _angles_with(_right_exponent, compute=torch.float32),
            ),
        ),
    ),
    Exercise(
        name="apply_rope",
        reference=apply_rope,
        cases=_rope_cases,
        mistakes=(
            Mistake(
                Words(
                    en="you rotated neighbouring features (2i, 2i + 1), the "
                    "interleaved layout. Here pair i is feature i with feature "
                    "i + head_dim/2 (the half layout).",
                    zh_CN="你旋转的是相邻的特征 (2i, 2i + 1)，即交错布局。"
                    "这里第 i 对是特征 i 与特征 i + head_dim/2（对半布局）。",
                ),
                _rope_with(pairs="interleaved"),
            ),
            Mistake(
                Words(
                    en="your cosines follow neighbouring pairs (c0, c0, c1, c1, "
                    "…) while the features are split in halves: with the half "
                    "layout, repeat the angles with `cat((theta, theta), -1)`.",
                    zh_CN="你的余弦按相邻的对排列（c0, c0, c1, c1, …），"
                    "而特征却按前后两半切分：对半布局要用 "
                    "`cat((theta, theta), -1)` 重复角度。",
                ),
                _rope_with(pairs="mixed"),
            ),
            Mistake(
                Words(
                    en="you turned every pair the other way: (a, b) becomes "
                    "(a cos - b sin, a sin + b cos).",
                    zh_CN="你把每一对转向了相反的方向：(a, b) 应变为 "
                    "(a cos - b sin, a sin + b cos)。",
                ),
                _rope_with(sign=-1),
            ),
            Mistake(
                Words(
                    en="your angles use -i / head_dim as the exponent; pair i "
                    "turns by m * base ** (-2i / head_dim).",
                    zh_CN="你的角度用了 -i / head_dim 作为指数；第 i 对应转过 "
                    "m * base ** (-2i / head_dim)。",
                ),
                _rope_with(exponent=_half_exponent),
            ),
            Mistake(
                Words(
                    en="your positions start at 1: the token at position 0 "
                    "must come out unchanged.",
                    zh_CN="你的位置从 1 开始了：位置 0 上的词元应当原样输出。",
                ),
                _rope_with(shift=1),
            ),
            Mistake(
                Words(
                    en="your angles of shape (b, T, hd/2) met x of shape (b, h, T, "
                    "hd) without an axis for the heads, so row n's angles went to "
                    "head n. Make them (b, 1, T, hd/2) first.",
                    zh_CN="你的角度形状为 (b, T, hd/2)，与形状为 (b, h, T, hd) 的 x "
                    "相乘时缺少头这一维，于是第 n 行的角度给了第 n 个头。"
                    "先把它变成 (b, 1, T, hd/2)。",
                ),
                _rope_with(over_heads=False),
            ),
        ),
    ),
)
