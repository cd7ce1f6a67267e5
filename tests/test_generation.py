"""Checks at the door (attention/checks.py's policy), measured on generation."""

import pytest
import torch
from helpers import assert_message_names, checks_called

import attention
from attention import TinyAttentionModel, generate_greedy, generate_greedy_cached


@pytest.mark.parametrize("generate", [generate_greedy, generate_greedy_cached])
def test_a_generated_token_costs_no_check(generate):
    torch.manual_seed(0)
    model = TinyAttentionModel(10, 8, context_length=40, num_heads=2).eval()
    prompt = torch.tensor([[3, 1, 4]])
    few = len(checks_called(lambda: generate(model, prompt, 4)))
    many = len(checks_called(lambda: generate(model, prompt, 24)))
    assert few > 0  # the door: the arguments, once
    assert many == few  # 20 more tokens, not one more check


def test_the_count_of_checks_sees_one_check_more():
    # The counter itself: one checked call more is one count more or several.
    x = torch.zeros(1, 2, 3, 4)
    unchecked = len(checks_called(lambda: attention.repeat_kv(x, 2, check=False)))
    checked = len(checks_called(lambda: attention.repeat_kv(x, 2)))
    assert unchecked == 0
    assert checked > unchecked


def test_a_wrong_type_is_a_type_error_and_a_value_error():
    with pytest.raises(TypeError):  # the message: CausalAttention's x-list record
        attention.CausalAttention(3, 2, 6, 0.0)([[0.0, 1.0, 2.0]])
    assert issubclass(attention.checks.ArgumentTypeError, ValueError)


def test_generation_reads_a_model_through_the_decoder_protocol():
    # TinyAttentionModel is a Decoder: the generation records in tests/table.py.
    with pytest.raises(TypeError) as error:
        generate_greedy(torch.nn.Linear(2, 2), torch.tensor([[1]]), 1)
    assert_message_names(error.value, ("model",), ("Linear",), ("embed",))
