"""What positions buy: three kinds of positions, scored past their training length.

Book section: Beyond the chapter, Rotary position embeddings.

Shape legend: ``N`` sequences, ``T`` tokens per sequence.

Three :class:`~attention.TinyAttentionModel` that differ only in their
positions (learned, rotary, none) train on the book's task, "copy the
previous token", with sequences of ``train_length`` tokens. Then each is
scored on fresh sequences of 1x, 2x and 4x that length. The task needs the
order of tokens and nothing else: the right attention looks one step back,
wherever the query is, so a relative position is all a model needs.

A learned table has one row per position it was built for: the model built
for ``train_length`` tokens refuses a longer sequence with a ``ValueError``
(its ``context_length``), so its longer cells are ``None``.
"""

from __future__ import annotations

import torch

from ._layout import POSITION_KINDS
from .checks import check_integer, check_multiples, check_positive, check_seed
from .learned import (
    TinyAttentionModel,
    previous_token_data,
    token_accuracy,
    train_model,
)


def accuracy_by_length(
    *,
    train_length: int = 8,
    multiples: tuple[int, ...] = (1, 2, 4),
    steps: int = 300,
    vocab_size: int = 16,
    d_model: int = 32,
    num_heads: int = 2,
    seed: int = 0,
) -> dict[str, dict[int, float | None]]:
    """Train learned, rotary and position-free models; score them at longer lengths.

    Book section: Beyond the chapter, Rotary position embeddings. Each model
    starts from ``torch.manual_seed(seed)``, trains for ``steps`` steps of
    64 sequences (plain gradient descent, :func:`~attention.train_model`)
    on 2,000 sequences of ``train_length`` tokens, then is scored
    (:func:`~attention.token_accuracy`) on 500 new sequences of
    ``m * train_length`` tokens for each ``m`` of ``multiples``. The rotary
    and position-free models are built with room for the longest; the
    learned one with a table of ``train_length`` rows, the positions it
    trains. Deterministic: every draw is seeded.

    Args:
        train_length: tokens per training sequence, at least 2.
        multiples: the lengths to score, as multiples of ``train_length``.
            Default: ``(1, 2, 4)``.
        steps: training steps per model. Default: ``300``.
        vocab_size: token ids in ``[0, vocab_size)``. Default: ``16``.
        d_model: width of each model. Default: ``32``.
        num_heads: heads of its one attention layer. Default: ``2``.
        seed: the seed of the weights, data and batches; the test data of
            multiple ``m`` uses ``seed + 1 + m``, so every such seed must be
            one torch takes (below ``2**64``). Default: ``0``.

    Returns:
        ``{kind: {multiple: accuracy}}`` for the kinds ``"learned"``,
        ``"rope"`` and ``"none"``; ``None`` where the model cannot run (the
        learned table past ``train_length``).

    Example:
        >>> table = accuracy_by_length(train_length=4, multiples=(1, 2), steps=5)
        >>> sorted(table), table["learned"][2]
        (['learned', 'none', 'rope'], None)
    """
    check_integer("train_length", train_length, smallest=2)
    check_multiples(multiples)
    check_positive(
        steps=steps, vocab_size=vocab_size, d_model=d_model, num_heads=num_heads
    )
    check_seed(seed, derived=1 + max(multiples))  # the test data's seed + 1 + m
    seed = int(seed)  # a NumPy integer: seed + 1 + m stays a Python int
    multiples = tuple(int(m) for m in multiples)
    longest = max(multiples) * train_length
    ids, targets = previous_token_data(2000, train_length, vocab_size, seed=seed)
    tests = {
        m: previous_token_data(500, m * train_length, vocab_size, seed=seed + 1 + m)
        for m in multiples
    }
    table: dict[str, dict[int, float | None]] = {}
    for kind in POSITION_KINDS:
        context_length = train_length if kind == "learned" else longest
        torch.manual_seed(seed)
        model = TinyAttentionModel(
            vocab_size, d_model, context_length, num_heads, positions=kind
        )
        train_model(model, ids, targets, steps=steps, batch_size=64, seed=seed)
        table[kind] = {}
        for m, (test_ids, test_targets) in tests.items():
            if test_ids.shape[1] > model.context_length:  # the table ends here
                table[kind][m] = None
            else:
                table[kind][m] = token_accuracy(model, test_ids, test_targets)
    return table
