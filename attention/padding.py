"""Padding: batches of sequences of different lengths (beyond the chapter).

Shape legend: ``b`` batch size, ``T`` ``num_tokens`` (the longest sequence
of the batch, to which the others are padded), ``d_in`` input width, ``h``
``num_heads``, ``hd`` ``head_dim``.

A model's ``attention_mask`` has shape ``(b, T)`` and holds 1 for a real
token and 0 for padding, as tokenizers return it. Every mask *built* here
has this package's polarity, the one of :func:`~attention.causal_mask`:
``True`` marks a position that is *masked out*. So masks combine with ``|``:
a key is hidden from a query when it is in the query's future *or* padding.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .causal import causal_mask
from .checks import check_attention_mask, check_batch, check_sequences
from .multihead import MultiHeadAttention


def pad_sequences(
    sequences: Sequence[torch.Tensor], side: str = "right", value: float = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack sequences of different lengths into one batch, padded to the longest.

    Book section: Beyond the chapter, Padding. Works for token ids
    ``(T_i,)`` and for embeddings ``(T_i, d_in)`` alike.

    Args:
        sequences: one tensor per sequence, each at least one token long;
            all with the same dtype and the same sizes after the first
            dimension.
        side: ``"right"`` puts the padding after each sequence, ``"left"``
            before it.
        value: what the padded positions hold, e.g. a pad token id.
            Default: 0.

    Shape:
        sequences: ``(T_i, ...)`` each
        Output: ``(b, T, ...)`` with ``T`` the longest ``T_i``
        attention_mask: ``(b, T)``

    Returns:
        ``(padded, attention_mask)``: the batch, and a ``torch.long`` mask
        with 1 where a real token sits and 0 where padding does.

    Example:
        >>> ids, attention_mask = pad_sequences(
        ...     [torch.tensor([5, 6, 7]), torch.tensor([8])], side="left"
        ... )
        >>> ids
        tensor([[5, 6, 7],
                [0, 0, 8]])
        >>> attention_mask
        tensor([[1, 1, 1],
                [0, 0, 1]])
    """
    check_sequences(sequences, side, value)
    num_tokens = max(len(seq) for seq in sequences)
    first = sequences[0]
    shape = (len(sequences), num_tokens, *first.shape[1:])  # (b, T, ...)
    padded = first.new_full(shape, value)
    attention_mask = torch.zeros(
        len(sequences), num_tokens, dtype=torch.long, device=first.device
    )
    for i, seq in enumerate(sequences):
        # right: real tokens in [0, T_i); left: in [T - T_i, T)
        start = 0 if side == "right" else num_tokens - len(seq)
        padded[i, start : start + len(seq)] = seq
        attention_mask[i, start : start + len(seq)] = 1
    return padded, attention_mask


def key_padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """The keys no query may attend to: the padded positions.

    Book section: Beyond the chapter, Padding. The same polarity as
    :func:`~attention.causal_mask` and as the ``key_padding_mask`` argument
    of ``torch.nn.MultiheadAttention``: ``True`` = masked out.

    Args:
        attention_mask: 1 (or ``True``) for a real token, 0 for padding.

    Shape:
        attention_mask: ``(b, T)``
        Output: ``(b, T)``, boolean

    Returns:
        ``True`` where ``attention_mask`` is 0.

    Example:
        >>> key_padding_mask(torch.tensor([[1, 1, 0]]))
        tensor([[False, False,  True]])
    """
    check_attention_mask(attention_mask)
    return attention_mask == 0


def padded_causal_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """The mask attention uses for a padded batch: the causal triangle and the padding.

    Book section: Beyond the chapter, Padding. Query ``i`` of sequence
    ``n`` may not see key ``j`` when ``j > i`` (the future) or when key
    ``j`` is padding. With an all-ones ``attention_mask`` this is
    :func:`~attention.causal_mask` for every sequence.

    Args:
        attention_mask: 1 (or ``True``) for a real token, 0 for padding.

    Shape:
        attention_mask: ``(b, T)``
        Output: ``(b, T, T)``, boolean: queries along ``-2``, keys along ``-1``

    Returns:
        ``True`` where attention is forbidden.

    Example:
        >>> padded_causal_mask(torch.tensor([[0, 1, 1]])).int()
        tensor([[[1, 1, 1],
                 [1, 0, 1],
                 [1, 0, 0]]], dtype=torch.int32)
    """
    check_attention_mask(attention_mask)
    padded = attention_mask == 0  # (b, T), True = a padded key
    causal = causal_mask(attention_mask.shape[1], padded.device)  # (T, T)
    # Hide padded keys from every query: (T, T) | (b, 1, T) -> (b, T, T)
    return causal | padded[:, None, :]


class PaddedMultiHeadAttention(MultiHeadAttention):
    """:class:`~attention.MultiHeadAttention` that also hides padded keys.

    Book section: Beyond the chapter, Padding. The constructor, the weights
    and the output without ``attention_mask`` are those of
    :class:`~attention.MultiHeadAttention`. ``forward`` takes an optional
    ``attention_mask``; the padded keys join the causal mask, so every real
    token gets the output its sequence would give on its own, with left or
    right padding. A query that may see no key at all (a left pad at the
    start of a sequence) gets zero attention weights instead of ``nan``;
    its output is ``out_proj``'s bias. Outputs at padded positions carry no
    meaning: ignore them.

    Args:
        d_in: width of each input token embedding.
        d_out: width of the *whole* output; must be divisible by
            ``num_heads``.
        context_length: the longest sequence the module accepts.
        dropout: dropout probability on the attention weights, in ``[0, 1)``.
        num_heads: how many heads, at least 1.
        qkv_bias: add a bias to the query, key and value projections.
            Default: ``False``.

    Shape:
        x: ``(b, T, d_in)`` with ``T <= context_length``
        attention_mask: ``(b, T)``, 1 for a real token, 0 for padding
        Output: ``(b, T, d_out)``

    Returns:
        One context vector per position (from ``forward``).

    Example:
        >>> _ = torch.manual_seed(123)
        >>> mha = PaddedMultiHeadAttention(3, 4, 4, dropout=0.0, num_heads=2)
        >>> sentence = torch.rand(2, 3)  # 2 tokens
        >>> x, attention_mask = pad_sequences([sentence, torch.rand(4, 3)], "left")
        >>> out = mha(x, attention_mask)  # (2, 4, 4)
        >>> alone = mha(sentence[None])  # (1, 2, 4)
        >>> torch.allclose(out[0, 2:], alone[0], atol=1e-6)
        True
    """

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_batch(self, x)
        b, num_tokens, d_in = x.shape
        # True = masked out: the causal triangle, then the padded keys
        hidden = self.mask[:num_tokens, :num_tokens]  # (T, T)
        if attention_mask is not None:
            check_attention_mask(attention_mask, x)
            padded = attention_mask == 0  # (b, T), True = a padded key
            # One mask per sequence: (T, T) | (b, 1, 1, T) -> (b, 1, T, T)
            hidden = hidden | padded[:, None, None, :]

        queries = self.W_query(x)  # (b, T, d_in) -> (b, T, d_out)
        keys = self.W_key(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)

        # (b, T, d_out) -> (b, T, h, hd) -> (b, h, T, hd)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)

        # (b, h, T, hd) @ (b, h, hd, T) -> (b, h, T, T)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(hidden, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        # A row of only -inf is nan after the softmax: give it zero weights.
        nothing_to_see = hidden.all(dim=-1, keepdim=True)  # (..., T, 1)
        attn_weights = attn_weights.masked_fill(nothing_to_see, 0.0)
        attn_weights = self.dropout(attn_weights)

        # (b, h, T, T) @ (b, h, T, hd) -> (b, h, T, hd) -> (b, T, h, hd)
        context_vec = (attn_weights @ values).transpose(1, 2)
        # (b, T, h, hd) -> (b, T, d_out)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)
