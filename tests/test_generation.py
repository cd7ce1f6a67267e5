"""Checks at the door (attention/checks.py's policy), measured on generation."""

import sys

import pytest
import torch
from checks import assert_message_names

import attention
from attention import TinyAttentionModel, generate_greedy, generate_greedy_cached


def _checks_called(run) -> int:
    """How many calls ``run()`` makes into attention/checks.py."""
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.endswith("checks.py"):
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return len(calls)


@pytest.mark.parametrize("generate", [generate_greedy, generate_greedy_cached])
def test_a_generated_token_costs_at_most_three_checks(generate):
    torch.manual_seed(0)
    model = TinyAttentionModel(10, 8, context_length=40, num_heads=2).eval()
    prompt = torch.tensor([[3, 1, 4]])
    few = _checks_called(lambda: generate(model, prompt, 4))
    many = _checks_called(lambda: generate(model, prompt, 24))
    assert (many - few) / 20 <= 3
    assert few <= 30  # the door itself: one pass over the arguments


def test_a_wrong_type_is_a_type_error_and_a_value_error():
    with pytest.raises(TypeError):  # the message: CausalAttention's x-list record
        attention.CausalAttention(3, 2, 6, 0.0)([[0.0, 1.0, 2.0]])
    assert issubclass(attention.checks.ArgumentTypeError, ValueError)


def test_generation_reads_a_model_through_the_decoder_protocol():
    # TinyAttentionModel is a Decoder: the generation records in tests/table.py.
    with pytest.raises(TypeError) as error:
        generate_greedy(torch.nn.Linear(2, 2), torch.tensor([[1]]), 1)
    assert_message_names(error.value, ("model",), ("Linear",), ("embed",))
