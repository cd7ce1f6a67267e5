"""The exercises of the page padding."""

from __future__ import annotations

import torch

from ..padding import pad_sequences, padded_causal_mask
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
            "批次大小为 1，没有填充",
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


def _pad_sequences_cases() -> list[Case]:
    # sequences: each (T_i,) token ids or (T_i, d_in) embeddings
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        short, long = torch.randn(2, 3), torch.randn(4, 3)  # (T_i, d_in)
        short64 = torch.randn(1, 2, dtype=torch.float64)
        long64 = torch.randn(3, 2, dtype=torch.float64)
    return [
        Case(
            "token ids, padded on the right",
            "词元 ID，在右侧填充",
            ([torch.tensor([5, 6, 7]), torch.tensor([8])],),
        ),
        Case(
            "token ids, padded on the left",
            "词元 ID，在左侧填充",
            ([torch.tensor([5, 6, 7]), torch.tensor([8]), torch.tensor([9, 4])],),
            {"side": "left"},
        ),
        Case(
            "the end-of-text token 50256 as the pad, and a sentence that ends with it",
            "用文本结束词元 50256 作填充，且有一个句子以它结尾",
            ([torch.tensor([11, 50256]), torch.tensor([12, 13, 14])],),
            {"side": "left", "value": 50256},
        ),
        Case(
            "a batch of one, one token",
            "批次大小为 1，只有一个词元",
            ([torch.tensor([3])],),
            {"side": "left"},
        ),
        Case(
            "float32 embeddings (T_i, 3), padded on the left",
            "float32 嵌入 (T_i, 3)，在左侧填充",
            ([short, long],),
            {"side": "left"},
        ),
        Case(
            "float64 embeddings (T_i, 2), padded on the right with -1.5",
            "float64 嵌入 (T_i, 2)，在右侧用 -1.5 填充",
            ([short64, long64],),
            {"value": -1.5},
        ),
        Case(
            "sequences of one length: nothing to pad",
            "序列一样长：无需填充",
            ([torch.tensor([1, 2]), torch.tensor([3, 4])],),
            {"side": "left"},
        ),
    ]


def _lengths_mask(sequences, num_tokens, side):
    # (b, T): 1 for a real token, 0 for a pad
    mask = torch.zeros(len(sequences), num_tokens, dtype=torch.long)
    for i, seq in enumerate(sequences):
        if side == "right":
            mask[i, : len(seq)] = 1
        else:
            mask[i, num_tokens - len(seq) :] = 1
    return mask


def _right_only(sequences, side="right", value=0):
    padded = torch.nn.utils.rnn.pad_sequence(
        list(sequences), batch_first=True, padding_value=value
    )
    return padded, _lengths_mask(sequences, padded.shape[1], "right")


def _reversed_tokens(sequences, side="right", value=0):
    padded, mask = _right_only(sequences, value=value)
    if side == "left":
        return padded.flip(1), mask.flip(1)  # (b, T): each row read backwards
    return padded, mask


def _batch_flipped(sequences, side="right", value=0):
    if side == "right":
        return _right_only(sequences, value=value)
    reversed_each = [seq.flip(0) for seq in sequences]
    padded, mask = _right_only(reversed_each, value=value)
    return padded.flip(0), mask.flip(0)  # the rows flipped, not the tokens


def _ones_for_pads(sequences, side="right", value=0):
    padded, mask = pad_sequences(sequences, side, value)
    return padded, 1 - mask


def _mask_from_values(sequences, side="right", value=0):
    padded, _ = pad_sequences(sequences, side, value)
    if padded.dim() > 2:  # embeddings: a pad is a row of pad values
        return padded, (padded != value).any(dim=-1).long()
    return padded, (padded != value).long()


def _value_ignored(sequences, side="right", value=0):
    return pad_sequences(sequences, side)


_PAD_MISTAKES = (
    Mistake(
        Words(
            en="your left padding holds each sentence's tokens in reverse order. "
            "Flipping the padded batch reverses the tokens too: flip each "
            "sequence before padding as well, or copy each sequence into the "
            "last T_i positions of its row.",
            zh_CN="你的左填充把每个句子的词元顺序弄反了。翻转填充后的批次也会翻转"
            "词元：填充前也要翻转每条序列，或者把每条序列复制到它那一行的最后 "
            "T_i 个位置。",
        ),
        _reversed_tokens,
    ),
    Mistake(
        Words(
            en="your batch is flipped along dimension 0, the sequences, instead "
            "of dimension 1, the tokens.",
            zh_CN="你的批次沿第 0 维（序列）翻转了，应当沿第 1 维（词元）翻转。",
        ),
        _batch_flipped,
    ),
    Mistake(
        Words(
            en='your padding is on the right although side="left". Left padding '
            "puts the pads before each sequence, so that every row's last real "
            "token sits in the last column.",
            zh_CN='side="left"，你的填充却在右侧。左填充把填充放在每条序列之前，'
            "使每一行最后一个真实词元都落在最后一列。",
        ),
        _right_only,
    ),
    Mistake(
        Words(
            en="your attention_mask marks the pads with 1. It holds 1 for a real "
            "token and 0 for a pad, as tokenizers return it: invert it.",
            zh_CN="你的 attention_mask 用 1 标出了填充。它应当和分词器返回的一样："
            "真实词元为 1，填充为 0。把它取反。",
        ),
        _ones_for_pads,
    ),
    Mistake(
        Words(
            en="your attention_mask compares the tokens with the pad value, so a "
            "real token equal to it (the end-of-text token used as the pad) "
            "counts as padding. Build the mask from each sequence's length.",
            zh_CN="你的 attention_mask 是把词元和填充值比较得到的，于是与填充值相等"
            "的真实词元（用作填充的文本结束词元）也被当成了填充。应当根据每条"
            "序列的长度构造掩码。",
        ),
        _mask_from_values,
    ),
    Mistake(
        Words(
            en="your padded positions hold 0 instead of value: fill them with the "
            "value argument.",
            zh_CN="你填充的位置是 0，而不是 value：要用参数 value 来填充。",
        ),
        _value_ignored,
    ),
)

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
    Exercise(
        name="pad_sequences",
        reference=pad_sequences,
        cases=_pad_sequences_cases,
        mistakes=_PAD_MISTAKES,
    ),
)
