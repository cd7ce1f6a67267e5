"""Tests for attention.padding: padded batches give every real token the output
its sequence gives alone, with left and right padding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from checks import (
    assert_padding_changes_no_real_token,
)

from attention import (
    MultiHeadAttention,
    PaddedMultiHeadAttention,
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


# --- bad input ----------------------------------------------------------------------
