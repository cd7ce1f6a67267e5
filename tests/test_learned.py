"""Tests for attention.learned: the tiny model trained on "copy the previous token".

The trained models use the exact configuration of the book page
(book/beyond/attention-that-has-learned.md), trained once per module.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import checks_called

import attention
from attention import (
    MultiHeadAttention,
    TinyAttentionModel,
    attention_weights,
    order_blind_accuracy,
    previous_token_data,
    previous_token_mass,
    token_accuracy,
    train_model,
)

# The page's configuration.
VOCAB_SIZE, D_MODEL, CONTEXT_LENGTH, NUM_HEADS = 16, 32, 12, 2
TRAIN_ARGS = dict(steps=150, batch_size=64, lr=0.5, seed=0)


@pytest.fixture(scope="module")
def data():
    train = previous_token_data(2000, CONTEXT_LENGTH, VOCAB_SIZE, seed=0)
    test = previous_token_data(2000, CONTEXT_LENGTH, VOCAB_SIZE, seed=1)
    return train, test


def _trained(data, use_positions):
    (token_ids, targets), _ = data
    torch.manual_seed(123)
    model = TinyAttentionModel(
        VOCAB_SIZE, D_MODEL, CONTEXT_LENGTH, NUM_HEADS, use_positions=use_positions
    )
    return model, train_model(model, token_ids, targets, **TRAIN_ARGS)


@pytest.fixture(scope="module")
def trained(data):
    return _trained(data, use_positions=True)


@pytest.fixture(scope="module")
def trained_no_pos(data):
    return _trained(data, use_positions=False)


# --- the model ----------------------------------------------------------------


def test_model_uses_the_packages_multihead_attention():
    model = TinyAttentionModel(10, 8, context_length=6, num_heads=2)
    assert type(model.attn) is MultiHeadAttention
    assert model.attn.num_heads == 2 and model.attn.dropout.p == 0.0
    assert TinyAttentionModel(10, 8, 6, 2, use_positions=False).pos_emb is None


def test_the_hook_is_removed_after_a_call_that_passes_or_fails():
    model = TinyAttentionModel(10, 8, context_length=6, num_heads=2)
    attention_weights(model, torch.zeros(1, 6, dtype=torch.long))
    assert not model.attn.dropout._forward_hooks
    with pytest.raises(ValueError):
        attention_weights(model, torch.zeros(1, 7, dtype=torch.long))  # too long
    assert not model.attn.dropout._forward_hooks


# --- training, with the page's numbers ------------------------------------------


def test_training_drives_the_loss_down(trained):
    model, losses = trained
    assert losses[0] > 2.6  # about ln 16 = 2.77: no knowledge yet
    assert losses[-1] < 0.01
    assert not model.training


def test_training_is_deterministic(data):
    (token_ids, targets), _ = data
    runs = []
    for _ in range(2):
        torch.manual_seed(7)
        model = TinyAttentionModel(VOCAB_SIZE, 16, CONTEXT_LENGTH, NUM_HEADS)
        runs.append(train_model(model, token_ids, targets, steps=5, batch_size=8))
    assert runs[0] == runs[1]


def test_a_head_learns_to_look_at_the_previous_token(trained, data):
    model, _ = trained
    _, (test_ids, test_targets) = data
    mass = previous_token_mass(attention_weights(model, test_ids))
    assert mass.max() > 0.9
    assert token_accuracy(model, test_ids, test_targets) > 0.99


def test_untrained_heads_do_not_look_at_the_previous_token(data):
    _, (test_ids, _) = data
    torch.manual_seed(123)
    model = TinyAttentionModel(VOCAB_SIZE, D_MODEL, CONTEXT_LENGTH, NUM_HEADS)
    assert previous_token_mass(attention_weights(model, test_ids)).max() < 0.4


def test_without_positions_the_model_stays_order_blind(trained_no_pos, data):
    model, losses = trained_no_pos
    _, (test_ids, test_targets) = data
    accuracy = token_accuracy(model, test_ids, test_targets)
    ceiling = order_blind_accuracy(test_ids, VOCAB_SIZE)
    # No order-blind model can beat the ceiling (up to sampling noise) ...
    assert accuracy < ceiling + 0.02
    assert accuracy < 0.45 and losses[-1] > 1.4
    # ... and attention to key i - 1 stays near what uniform rows give (0.19).
    assert previous_token_mass(attention_weights(model, test_ids)).max() < 0.3


# --- permutations ---------------------------------------------------------------


@pytest.mark.parametrize("i", range(1, CONTEXT_LENGTH))
def test_without_positions_output_i_ignores_the_order_before_i(trained_no_pos, i):
    model, _ = trained_no_pos
    g = torch.Generator().manual_seed(i)
    x = torch.randint(VOCAB_SIZE, (4, CONTEXT_LENGTH), generator=g)
    shuffled = x.clone()
    shuffled[:, :i] = x[:, torch.randperm(i, generator=g)]
    with torch.no_grad():
        torch.testing.assert_close(model(shuffled)[:, i], model(x)[:, i])


def test_with_positions_output_i_follows_the_order_before_i(trained):
    model, _ = trained
    x = torch.arange(CONTEXT_LENGTH).unsqueeze(0)  # all tokens different
    for i in range(2, CONTEXT_LENGTH):
        reversed_x = x.clone()
        reversed_x[0, :i] = x[0, :i].flip(0)
        with torch.no_grad():
            assert model(reversed_x)[0, i].argmax() == 0  # token 0 is now at i - 1
            assert model(x)[0, i].argmax() == i - 1


def test_training_reads_the_token_ids_once_not_at_every_step():
    # check_token_ids reads the ids' values (min, max), which waits for the
    # device: once, before the loop. (Each step's layers still check the
    # shapes of their input, which reads no value.)
    torch.manual_seed(0)
    model = TinyAttentionModel(VOCAB_SIZE, 8, CONTEXT_LENGTH, num_heads=2)
    ids, targets = previous_token_data(8, CONTEXT_LENGTH, VOCAB_SIZE)

    def value_checks(steps):
        called = checks_called(
            lambda: train_model(model, ids, targets, steps=steps, batch_size=4)
        )
        return called.count("check_token_ids")

    assert value_checks(1) == value_checks(6) == 1


def test_forward_called_directly_still_refuses_a_token_id_outside_the_vocabulary():
    model = TinyAttentionModel(VOCAB_SIZE, 8, CONTEXT_LENGTH, num_heads=2)
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.tensor([[1, VOCAB_SIZE]]))
    with pytest.raises(ValueError, match="vocab_size"):
        train_model(
            model,
            torch.tensor([[1, VOCAB_SIZE]]),
            torch.tensor([[1, 2]]),
            steps=1,
            batch_size=1,
        )


def test_previous_token_mass_refuses_an_empty_batch_as_its_siblings_do():
    with pytest.raises(ValueError, match="batch size b of attn_weights"):
        previous_token_mass(torch.zeros(0, 2, 4, 4))
    with pytest.raises(ValueError, match="N >= 1"):
        token_accuracy(
            TinyAttentionModel(4, 4, 4, num_heads=2),
            torch.zeros(0, 3).long(),
            torch.zeros(0, 3).long(),
        )


def test_a_numpy_integer_seed_draws_what_the_int_draws():
    # torch.Generator.manual_seed refuses a NumPy integer: the package converts.
    by_numpy = attention.previous_token_data(3, 4, 5, seed=np.int64(7))
    by_int = attention.previous_token_data(3, 4, 5, seed=7)
    for got, want in zip(by_numpy, by_int, strict=True):
        assert torch.equal(got, want)
