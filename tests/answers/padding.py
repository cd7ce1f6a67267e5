"""Answers to the exercises of the padding page."""

from __future__ import annotations

import torch

from . import Answers, Wrong


def mask_from_positions(attention_mask):
    # Compare positions instead of building a triangle.
    positions = torch.arange(attention_mask.shape[-1])
    future = positions[None, :] > positions[:, None]  # (T, T)
    padding = attention_mask == 0  # (b, T)
    return future[None, :, :] | padding[:, None, :]


def mask_from_loop(attention_mask):
    # One sequence at a time, one query at a time.
    batch, num_tokens = attention_mask.shape
    mask = torch.zeros(batch, num_tokens, num_tokens, dtype=torch.bool)
    for n in range(batch):
        for i in range(num_tokens):
            for j in range(num_tokens):
                mask[n, i, j] = bool(j > i or attention_mask[n, j] == 0)
    return mask


def true_means_keep(attention_mask):
    num_tokens = attention_mask.shape[-1]
    keep = torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
    return keep[None] & attention_mask.bool()[:, None, :]


def no_causal_part(attention_mask):
    num_tokens = attention_mask.shape[-1]
    padding = (attention_mask == 0)[:, None, :]
    return padding.expand(-1, num_tokens, -1)


def padding_hides_rows(attention_mask):
    num_tokens = attention_mask.shape[-1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return future[None] | (attention_mask == 0)[:, :, None]


def and_instead_of_or(attention_mask):
    num_tokens = attention_mask.shape[-1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
    return future[None] & (attention_mask == 0)[:, None, :]


# -- pad_sequences: the flips come from the threads on left padding with
# torch's pad_sequence, which long padded on the right only (pytorch issue
# 10536; hiyouga/LlamaFactory issue 127; torchtune pull request 1523, a flip of
# the wrong dimension), the pad-equals-eos mask from transformers issue 35352.


def pad_with_torch(sequences, side="right", value=0):
    padded = torch.nn.utils.rnn.pad_sequence(
        sequences, batch_first=True, padding_value=value, padding_side=side
    )
    lengths = torch.tensor([len(seq) for seq in sequences])  # (b,)
    positions = torch.arange(padded.shape[1])  # (T,)
    if side == "right":
        mask = positions[None, :] < lengths[:, None]
    else:
        mask = positions[None, :] >= padded.shape[1] - lengths[:, None]
    return padded, mask.long()


def pad_one_at_a_time(sequences, side="right", value=0):
    longest = max(len(seq) for seq in sequences)
    rows, masks = [], []
    for seq in sequences:
        missing = longest - len(seq)
        pad = seq.new_full((missing, *seq.shape[1:]), value)
        real = torch.ones(len(seq), dtype=torch.long)
        none = torch.zeros(missing, dtype=torch.long)
        if side == "right":
            rows.append(torch.cat([seq, pad]))
            masks.append(torch.cat([real, none]))
        else:
            rows.append(torch.cat([pad, seq]))
            masks.append(torch.cat([none, real]))
    return torch.stack(rows), torch.stack(masks)


def flip_the_padded_batch(sequences, side="right", value=0):
    padded = torch.nn.utils.rnn.pad_sequence(
        sequences, batch_first=True, padding_value=value
    )
    mask = torch.nn.utils.rnn.pad_sequence(
        [torch.ones(len(seq), dtype=torch.long) for seq in sequences],
        batch_first=True,
    )
    if side == "left":
        padded, mask = padded.flip(dims=[1]), mask.flip(dims=[1])
    return padded, mask


def flip_dimension_0(sequences, side="right", value=0):
    if side == "left":
        sequences = [seq.flip(dims=[0]) for seq in sequences]
    padded = torch.nn.utils.rnn.pad_sequence(
        sequences, batch_first=True, padding_value=value
    )
    mask = torch.nn.utils.rnn.pad_sequence(
        [torch.ones(len(seq), dtype=torch.long) for seq in sequences],
        batch_first=True,
    )
    if side == "left":
        padded, mask = padded.flip(dims=[0]), mask.flip(dims=[0])
    return padded, mask


def pads_on_the_right_always(sequences, side="right", value=0):
    padded = torch.nn.utils.rnn.pad_sequence(
        sequences, batch_first=True, padding_value=value
    )
    lengths = torch.tensor([len(seq) for seq in sequences])
    mask = torch.arange(padded.shape[1])[None, :] < lengths[:, None]
    return padded, mask.long()


def mask_of_the_pads(sequences, side="right", value=0):
    padded, real = pad_one_at_a_time(sequences, side, value)
    return padded, (real == 0).long()  # 1 = a pad, as key_padding_mask has it


def mask_by_comparing_with_the_pad(sequences, side="right", value=0):
    padded, _ = pad_one_at_a_time(sequences, side, value)
    if padded.dim() == 2:
        return padded, (padded != value).long()
    return padded, (padded != value).all(dim=-1).long()


def boolean_mask(sequences, side="right", value=0):
    padded, mask = pad_one_at_a_time(sequences, side, value)
    return padded, mask.bool()


def zeros_whatever_the_value(sequences, side="right", value=0):
    return pad_one_at_a_time(sequences, side)


ANSWERS = [
    Answers(
        "padded_causal_mask",
        right=(mask_from_positions, mask_from_loop),
        wrong={
            "a padding mask built with True meaning keep": Wrong(
                true_means_keep, "True", "True"
            ),
            "the causal part forgotten": Wrong(no_causal_part, "future", "未来"),
            "padding applied to the queries' rows": Wrong(
                padding_hides_rows, "keys (columns)", "键"
            ),
            "the masks combined with & instead of |": Wrong(
                and_instead_of_or, "expected [False, True, True, True]"
            ),
        },
    ),
    Answers(
        "pad_sequences",
        right=(pad_with_torch, pad_one_at_a_time),
        wrong={
            "the padded batch flipped, the sequences not": Wrong(
                flip_the_padded_batch, "reverse order", "顺序弄反"
            ),
            "the flip on dimension 0, the batch": Wrong(
                flip_dimension_0, "dimension 0", "第 0 维"
            ),
            "torch's pad_sequence, right padding only": Wrong(
                pads_on_the_right_always, 'side="left"', 'side="left"'
            ),
            "an attention_mask with 1 for the pads": Wrong(
                mask_of_the_pads, "marks the pads with 1", "取反"
            ),
            "the mask from comparing tokens with the pad id": Wrong(
                mask_by_comparing_with_the_pad, "each sequence's length", "长度"
            ),
            "a boolean attention_mask": Wrong(
                boolean_mask, "expected dtype torch.int64, got torch.bool"
            ),
            "the value argument ignored": Wrong(
                zeros_whatever_the_value, "value argument", "value"
            ),
        },
    ),
]
