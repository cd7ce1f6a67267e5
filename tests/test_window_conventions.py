"""What "a window of W" means elsewhere (``attention.window.CONVENTIONS``):
each row's converter gives a ``window`` whose mask is that implementation's
own mask, written out here from the rule its code states (read, not copied;
the file is named in the row's ``source``)."""

from __future__ import annotations

import pytest
import torch

from attention import window_mask
from attention.window import (
    CONVENTIONS,
    from_lookback,
    from_sliding_window,
    from_window_size,
)

WIDTHS = [1, 2, 3, 5, 8]


def visible(num_queries: int, num_keys: int, keeps) -> torch.Tensor:
    """``True`` where ``keeps(q, j)`` holds and ``j <= q``, query ``i`` at
    position ``q = i + Tk - Tq``: a mask in the attend polarity."""
    rows = []
    for i in range(num_queries):
        q = i + num_keys - num_queries
        rows.append([j <= q and keeps(q, j) for j in range(num_keys)])
    return torch.tensor(rows, dtype=torch.bool).reshape(num_queries, num_keys)


def hugging_face(width: int, num_queries: int, num_keys: int) -> torch.Tensor:
    # masking_utils.sliding_window_overlay keeps kv_idx > q_idx - sliding_window,
    # and-ed with causal_mask_function (kv_idx <= q_idx).
    return visible(num_queries, num_keys, lambda q, j: j > q - width)


def flash_attn(width: int, num_queries: int, num_keys: int) -> torch.Tensor:
    # The docstring: query i attends to keys in [i + seqlen_k - seqlen_q -
    # window_size[0], i + seqlen_k - seqlen_q + window_size[1]], inclusive.
    left, right = width, 0
    offset = num_keys - num_queries
    rows = []
    for i in range(num_queries):
        low, high = i + offset - left, i + offset + right
        rows.append([low <= j <= high for j in range(num_keys)])
    return torch.tensor(rows, dtype=torch.bool).reshape(num_queries, num_keys)


def gemma_reference(width: int, num_queries: int, num_keys: int) -> torch.Tensor:
    # triu(ones, -W + 1) * tril(ones, W - 1) on top of the causal mask, on a
    # square prefill.
    ones = torch.ones(num_keys, num_keys)
    band = torch.triu(ones, -width + 1) * torch.tril(ones, width - 1)
    causal = torch.tril(ones)
    return (band * causal).bool()[num_keys - num_queries :]


def mistral_reference(width: int, num_queries: int, num_keys: int) -> torch.Tensor:
    # The prefill mask: tril(ones, diagonal=0), then triu(mask, diagonal=-W).
    mask = torch.tril(torch.ones(num_keys, num_keys), diagonal=0)
    mask = torch.triu(mask, diagonal=-width)
    return mask.bool()[num_keys - num_queries :]


def attention_gym(width: int, num_queries: int, num_keys: int) -> torch.Tensor:
    # generate_sliding_window: q_idx - kv_idx <= window_size, and causal.
    return visible(num_queries, num_keys, lambda q, j: q - j <= width)


#: Each row's own mask and the argument its converter takes, by row name.
OWN_MASKS = {
    "Hugging Face configs (Mistral, Gemma 2 and 3, Qwen2)": (hugging_face, int),
    "flash-attn": (flash_attn, lambda width: (width, 0)),
    "Gemma's reference code (gemma_pytorch)": (gemma_reference, int),
    "Mistral's reference code (prefill mask)": (mistral_reference, int),
    "FlexAttention's examples (attention-gym)": (attention_gym, int),
}


def test_every_row_has_its_own_mask_here() -> None:
    assert sorted(OWN_MASKS) == sorted(row.name for row in CONVENTIONS)
    assert len(CONVENTIONS) >= 4


@pytest.mark.parametrize("row", CONVENTIONS, ids=lambda row: row.parameter)
@pytest.mark.parametrize(("num_queries", "num_keys"), [(9, 9), (3, 9), (1, 9)])
def test_each_convention_converts_to_the_same_mask(row, num_queries, num_keys):
    own_mask, argument = OWN_MASKS[row.name]
    for width in WIDTHS:
        window = row.to_window(argument(width))
        expected = own_mask(width, num_queries, num_keys)
        assert torch.equal(~window_mask(num_queries, num_keys, window), expected), (
            f"{row.name}, W={width} -> window={window}"
        )


def test_two_conventions_differ_by_one_key() -> None:
    # The off-by-one that the table settles: the same number, W + 1 keys.
    same_number = 4
    ours = ~window_mask(6, 6, same_number)
    theirs = mistral_reference(same_number, 6, 6)
    assert (theirs.sum(-1) - ours.sum(-1)).max() == 1
    assert not torch.equal(ours, theirs)


def test_the_converters_refuse_what_is_no_causal_window() -> None:
    with pytest.raises(ValueError, match=r"window_size\[1\]"):
        from_window_size((3, 2))  # keys after the query: not causal
    with pytest.raises(ValueError, match="pair"):
        from_window_size(4)
    with pytest.raises(ValueError, match="lookback"):
        from_lookback(-1)
    with pytest.raises(ValueError, match="sliding_window"):
        from_sliding_window(0)
    assert from_window_size([3, 0]) == 4
