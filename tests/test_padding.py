"""Tests for attention.padding: padded batches give every real token the output
its sequence gives alone, with left and right padding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from checks import (
    assert_batch_independent,
    assert_causal,
    assert_eval_is_deterministic,
    assert_padding_changes_no_real_token,
)

from attention import (
    MultiHeadAttention,
    PaddedMultiHeadAttention,
    causal_mask,
    copy_weights,
    key_padding_mask,
    pad_sequences,
    padded_causal_mask,
)

LENGTHS = [(6, 3, 1, 5), (4, 4), (1, 2), (7,)]


def _sentences(lengths, d_in, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d_in, generator=gen) for n in lengths]


def _module(d_in=3, d_out=4, context_length=8, num_heads=2, qkv_bias=False, seed=0):
    torch.manual_seed(seed)
    return PaddedMultiHeadAttention(
        d_in, d_out, context_length, 0.0, num_heads, qkv_bias
    ).eval()


# --- the central property ----------------------------------------------------------


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("lengths", LENGTHS, ids=str)
@pytest.mark.parametrize(
    ("d_in", "d_out", "num_heads", "qkv_bias"),
    [(3, 4, 2, False), (5, 6, 3, True), (4, 4, 1, False)],
)
def test_every_real_token_gets_the_output_of_its_sentence_alone(
    side, lengths, d_in, d_out, num_heads, qkv_bias
):
    module = _module(d_in, d_out, 8, num_heads, qkv_bias)
    assert_padding_changes_no_real_token(module, _sentences(lengths, d_in), side)


def test_the_check_catches_a_module_that_ignores_the_mask():
    class IgnoresTheMask(MultiHeadAttention):
        def forward(self, x, attention_mask=None):
            return super().forward(x)

    torch.manual_seed(0)
    broken = IgnoresTheMask(3, 4, 8, 0.0, 2).eval()
    sentences = _sentences((5, 2), 3)
    with pytest.raises(AssertionError, match="left padding changed a real token"):
        assert_padding_changes_no_real_token(broken, sentences, "left")
    # Right pads lie in the future: the causal mask alone hides them.
    assert_padding_changes_no_real_token(broken, sentences, "right")


@pytest.mark.parametrize("side", ["left", "right"])
def test_the_pad_values_do_not_matter(side):
    module = _module()
    sentences = _sentences((5, 2, 3), 3)
    x_zero, attention_mask = pad_sequences(sentences, side=side, value=0.0)
    x_big, _ = pad_sequences(sentences, side=side, value=1e4)
    real = attention_mask.bool()
    torch.testing.assert_close(
        module(x_zero, attention_mask)[real], module(x_big, attention_mask)[real]
    )


def test_left_padding_without_the_mask_changes_every_real_token():
    # The property above needs the padding mask: without it, each real token
    # of a left-padded sequence also attends to the pads before it.
    module = _module()
    sentences = _sentences((6, 3), 3)
    x, attention_mask = pad_sequences(sentences, side="left", value=1.0)
    out = module(x)  # no attention_mask
    alone = module(sentences[1][None])[0]
    moved = (out[1, 3:] - alone).abs().amax(dim=-1)  # (3,)
    assert (moved > 1e-4).all(), f"left pads went unnoticed: {moved}"


def test_right_padding_needs_no_mask_for_the_real_tokens():
    # Under the causal mask, right pads lie in every real token's future.
    module = _module()
    sentences = _sentences((6, 3), 3)
    x, attention_mask = pad_sequences(sentences, side="right", value=1.0)
    torch.testing.assert_close(module(x)[1, :3], module(sentences[1][None])[0])
    torch.testing.assert_close(module(x)[1, :3], module(x, attention_mask)[1, :3])


# --- without padding it is MultiHeadAttention --------------------------------------


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_without_a_mask_it_is_multi_head_attention_exactly(qkv_bias):
    torch.manual_seed(3)
    mha = MultiHeadAttention(5, 6, 7, 0.0, 3, qkv_bias)
    torch.manual_seed(3)
    padded = PaddedMultiHeadAttention(5, 6, 7, 0.0, 3, qkv_bias)
    x = torch.randn(2, 7, 5)
    assert torch.equal(padded(x), mha(x))
    ones = torch.ones(2, 7, dtype=torch.long)
    assert torch.equal(padded(x, ones), mha(x))


def test_weights_travel_with_copy_weights():
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 6, 5, 0.0, 2, qkv_bias=True)
    padded = PaddedMultiHeadAttention(4, 6, 5, 0.0, 2, qkv_bias=True)
    copy_weights(mha, padded)
    x = torch.randn(3, 5, 4)
    torch.testing.assert_close(padded(x), mha(x), rtol=0, atol=0)


def test_keeps_the_chapters_promises_without_a_mask():
    module = _module(d_in=3, d_out=4, context_length=6)
    x = torch.randn(3, 6, 3, generator=torch.Generator().manual_seed(1))
    assert_causal(module, x)
    assert_batch_independent(module, x)
    assert_eval_is_deterministic(module, x)


# --- rows with nothing to see, gradients, the fused kernel -------------------------


def test_a_query_that_sees_no_key_gets_zero_weights_not_nan():
    module = _module(d_in=3, d_out=4, num_heads=2)
    x, attention_mask = pad_sequences(_sentences((4, 1), 3), side="left")
    seen = {}
    module.dropout.register_forward_hook(lambda m, a, out: seen.update(w=out))
    out = module(x, attention_mask)
    weights = seen["w"]  # (2, 2, 4, 4)
    assert not torch.isnan(weights).any()
    # Sequence 1: three left pads, then one token. Pad queries 0..2 see no key.
    assert (weights[1, :, :3] == 0).all()
    torch.testing.assert_close(weights[1, :, 3:].sum(dim=-1), torch.ones(2, 1))
    torch.testing.assert_close(out[1, :3], module.out_proj.bias.expand(3, 4))


@pytest.mark.parametrize("side", ["left", "right"])
def test_gradients_are_finite_and_pads_get_none(side):
    module = _module(qkv_bias=True)
    x, attention_mask = pad_sequences(_sentences((5, 2), 3), side=side)
    x.requires_grad_(True)
    out = module(x, attention_mask)
    out[attention_mask.bool()].sum().backward()  # a loss on real tokens only
    for name, p in module.named_parameters():
        assert torch.isfinite(p.grad).all(), name
    assert torch.isfinite(x.grad).all()
    # Nothing a real token computes depends on a pad.
    assert (x.grad[~attention_mask.bool()] == 0).all()


def test_matches_sdpa_with_the_flipped_mask_on_real_tokens():
    module = _module(d_in=3, d_out=6, num_heads=3)
    x, attention_mask = pad_sequences(_sentences((6, 2, 4), 3), side="left")
    b, T, _ = x.shape

    def heads(t):  # (b, T, d_out) -> (b, h, T, hd)
        return t.view(b, T, 3, 2).transpose(1, 2)

    q, k, v = (
        heads(layer(x)) for layer in (module.W_query, module.W_key, module.W_value)
    )
    # SDPA's boolean mask means "may attend": the complement of ours.
    allowed = ~padded_causal_mask(attention_mask)[:, None]  # (b, 1, T, T)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    expected = module.out_proj(fused.transpose(1, 2).reshape(b, T, 6))
    real = attention_mask.bool()
    torch.testing.assert_close(module(x, attention_mask)[real], expected[real])


# --- the masks -----------------------------------------------------------------------


def test_padded_causal_mask_is_the_causal_mask_or_the_padding():
    attention_mask = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1], [1, 1, 0, 0]])
    mask = padded_causal_mask(attention_mask)
    assert mask.shape == (3, 4, 4) and mask.dtype == torch.bool
    for n in range(3):
        for i in range(4):
            for j in range(4):
                hidden = j > i or attention_mask[n, j] == 0
                assert mask[n, i, j] == hidden, (n, i, j)
    # All ones: only the causal triangle is left.
    assert torch.equal(mask[0], causal_mask(4))
    # In the "may attend" polarity, the two masks combine with &.
    allowed = (
        torch.tril(torch.ones(4, 4, dtype=torch.bool))
        & attention_mask.bool()[:, None, :]
    )
    assert torch.equal(~mask, allowed)


@pytest.mark.parametrize("dtype", [torch.long, torch.bool, torch.float32])
def test_key_padding_mask_accepts_the_usual_dtypes(dtype):
    attention_mask = torch.tensor([[1, 0, 1]]).to(dtype)
    assert torch.equal(
        key_padding_mask(attention_mask), torch.tensor([[0, 1, 0]]).bool()
    )


@pytest.mark.parametrize("side", ["left", "right"])
def test_pad_sequences_agrees_with_torch_pad_sequence(side):
    ids = [torch.tensor([3, 1, 4]), torch.tensor([1]), torch.tensor([5, 9])]
    padded, attention_mask = pad_sequences(ids, side=side, value=-1)
    expected = torch.nn.utils.rnn.pad_sequence(
        ids, batch_first=True, padding_value=-1, padding_side=side
    )
    assert torch.equal(padded, expected)
    assert attention_mask.dtype == torch.long
    assert torch.equal(attention_mask.bool(), expected != -1)
    embeddings, mask_2 = pad_sequences(_sentences((2, 4), 3), side=side)
    assert embeddings.shape == (2, 4, 3) and torch.equal(
        mask_2.sum(dim=1), torch.tensor([2, 4])
    )


# --- bad input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attention_mask", "message"),
    [
        (
            [[1, 1, 1, 0]],
            "attention_mask must be a torch.Tensor, got list",
        ),
        (torch.ones(2, 4, 1), "shape (2, 4) to fit x, got (2, 4, 1)"),
        (torch.ones(2, 3), "shape (2, 4) to fit x, got (2, 3)"),
        (torch.ones(3, 4), "shape (2, 4) to fit x, got (3, 4)"),
        (torch.tensor([[1, 1, 2, 0], [1, 1, 1, 1]]), "only 1 (a real token) and 0"),
    ],
)
def test_a_bad_attention_mask_is_refused_with_what_was_expected(
    attention_mask, message
):
    module = _module()
    with pytest.raises(ValueError) as err:
        module(torch.randn(2, 4, 3), attention_mask)
    assert message in str(err.value)


def test_the_input_is_checked_as_in_multi_head_attention():
    module = _module(context_length=4)
    with pytest.raises(ValueError, match="5 tokens but context_length is 4"):
        module(torch.randn(1, 5, 3), torch.ones(1, 5))
    with pytest.raises(ValueError, match="d_in=3"):
        module(torch.randn(1, 4, 2), torch.ones(1, 4))


@pytest.mark.parametrize(
    ("sequences", "side", "message"),
    [
        ([], "right", "non-empty list of tensors"),
        (torch.ones(2, 3), "right", "(Tensor)"),
        ([torch.ones(2)], "middle", "'left' or 'right', got 'middle'"),
        ([torch.ones(2), torch.ones(0)], "left", "T_i >= 1"),
        (
            [torch.ones(2, 3), torch.ones(2, 4)],
            "right",
            "sequences[1] has shape (2, 4)",
        ),
        ([torch.ones(2), torch.ones(2, dtype=torch.long)], "right", "torch.int64"),
        (
            [torch.ones(2), [1.0]],
            "right",
            "sequences[1] must be a torch.Tensor, got list",
        ),
    ],
)
def test_pad_sequences_refuses_bad_input(sequences, side, message):
    with pytest.raises(ValueError) as err:
        pad_sequences(sequences, side=side)
    assert message in str(err.value)
