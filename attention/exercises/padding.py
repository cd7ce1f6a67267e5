"""The exercises of the page padding."""

from __future__ import annotations

import torch

from ..padding import padded_causal_mask
from .grader import Case, Exercise, Mistake, Words


def _padded_causal_mask_cases() -> list[Case]:
    # attention_mask: (b, T), 1 for a real token, 0 for padding.
    return [
        Case(
            "two sequences, padded on the right",
            "两条序列，在右侧填充",
            (torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]),),
        ),
        Case(
            "two sequences, padded on the left",
            "两条序列，在左侧填充",
            (torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]]),),
        ),
        Case("one token", "只有一个词元", (torch.tensor([[1]]),)),
        Case(
            "a batch of one, no padding",
            "批大小为 1，没有填充",
            (torch.tensor([[1, 1, 1]]),),
        ),
        Case(
            "a row that is all padding",
            "整行都是填充",
            (torch.tensor([[1, 1, 1], [0, 0, 0]]),),
        ),
        Case(
            "a boolean attention_mask",
            "布尔类型的 attention_mask",
            (torch.tensor([[True, True, False]]),),
        ),
    ]


def _keep_polarity(attention_mask: torch.Tensor) -> torch.Tensor:
    # True where a query *may* look: the opposite of the package's polarity.
    num_tokens = attention_mask.shape[-1]
    allowed = torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()
    return allowed & attention_mask.bool()[:, None, :]


def _padding_only(attention_mask: torch.Tensor) -> torch.Tensor:
    num_tokens = attention_mask.shape[-1]
    return (attention_mask == 0)[:, None, :].expand(-1, num_tokens, -1)


def _queries_hidden(attention_mask: torch.Tensor) -> torch.Tensor:
    # The padding hides the padded *queries* (rows) instead of the keys.
    num_tokens = attention_mask.shape[-1]
    future = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    return future | (attention_mask == 0)[:, :, None]


EXERCISES = (
    Exercise(
        name="padded_causal_mask",
        reference=padded_causal_mask,
        cases=_padded_causal_mask_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your mask marks the positions a query may see. This "
                    "package's masks mark the hidden ones with True: invert it.",
                    zh_CN="你的掩码标出的是查询可以看到的位置。本书的掩码用 True "
                    "标出被遮蔽的位置：把它取反。",
                ),
                _keep_polarity,
            ),
            Mistake(
                Words(
                    en="your mask hides the padding but not the future: combine "
                    "it with the causal mask (`|`).",
                    zh_CN="你的掩码遮住了填充，却没有遮住未来的词元：再用 `|` "
                    "合并因果掩码。",
                ),
                _padding_only,
            ),
            Mistake(
                Words(
                    en="your mask hides padded queries (rows). Padding must hide "
                    "keys (columns): index the mask as [:, None, :].",
                    zh_CN="你的掩码遮住的是填充位置的查询（行）。填充应当遮住键"
                    "（列）：按 [:, None, :] 的方式扩展掩码。",
                ),
                _queries_hidden,
            ),
        ),
    ),
)
