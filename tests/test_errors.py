"""Bad input raises ValueError saying what was expected and what came.

All the package's error paths in one place, parametrized over every class or
function where a check applies.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
    causal_mask,
    copy_weights_v2_to_v1,
    dot_scores,
    mask_with_neg_inf,
    renormalize_masked,
    simple_self_attention,
    weighted_sum,
)

D_IN, D_OUT, CONTEXT_LENGTH = 3, 4, 6


def build(cls: type, **overrides: object) -> nn.Module:
    """Construct ``cls`` with small valid arguments, some of them overridden."""
    kwargs: dict[str, object] = {"d_in": D_IN, "d_out": D_OUT}
    if cls not in (SelfAttention_v1, SelfAttention_v2):
        kwargs |= {"context_length": CONTEXT_LENGTH, "dropout": 0.1}
    if cls in (MultiHeadAttentionWrapper, MultiHeadAttention):
        kwargs["num_heads"] = 2
    kwargs.update(overrides)
    return cls(**kwargs)


SEQUENCE_CLASSES = [SelfAttention_v1, SelfAttention_v2]  # input (T, d_in)
BATCH_CLASSES = [CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention]
ALL_CLASSES = SEQUENCE_CLASSES + BATCH_CLASSES
HEAD_CLASSES = [MultiHeadAttentionWrapper, MultiHeadAttention]


# --- forward: the input tensor --------------------------------------------------


@pytest.mark.parametrize("cls", SEQUENCE_CLASSES)
@pytest.mark.parametrize("shape", [(D_IN,), (2, 5, D_IN)])
def test_wrong_rank_sequence(cls: type, shape: tuple[int, ...]) -> None:
    expected = rf"2 dimensions \(num_tokens, d_in\), got {len(shape)} dimensions"
    with pytest.raises(ValueError, match=expected):
        build(cls)(torch.randn(shape))


@pytest.mark.parametrize("cls", BATCH_CLASSES)
@pytest.mark.parametrize("shape", [(5, D_IN), (1, 2, 5, D_IN)])
def test_wrong_rank_batch(cls: type, shape: tuple[int, ...]) -> None:
    expected = rf"3 dimensions \(batch, num_tokens, d_in\), got {len(shape)} dim"
    with pytest.raises(ValueError, match=expected):
        build(cls)(torch.randn(shape))


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_wrong_embedding_width(cls: type) -> None:
    shape = (5, D_IN + 1) if cls in SEQUENCE_CLASSES else (2, 5, D_IN + 1)
    expected = rf"d_in={D_IN} features in its last dimension.*, got {D_IN + 1} "
    with pytest.raises(ValueError, match=expected):
        build(cls)(torch.randn(shape))


@pytest.mark.parametrize("cls", BATCH_CLASSES)
def test_more_tokens_than_context_length(cls: type) -> None:
    expected = rf"{CONTEXT_LENGTH + 1} tokens but context_length is {CONTEXT_LENGTH}"
    with pytest.raises(ValueError, match=expected):
        build(cls)(torch.randn(2, CONTEXT_LENGTH + 1, D_IN))


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_input_must_be_a_tensor(cls: type) -> None:
    x = [[0.0] * D_IN] * 2
    if cls in BATCH_CLASSES:
        x = [x]
    with pytest.raises(ValueError, match="x must be a torch.Tensor, got list"):
        build(cls)(x)


# --- constructors -------------------------------------------------------------------


@pytest.mark.parametrize("cls", [MultiHeadAttention])
def test_d_out_not_divisible_by_num_heads(cls: type) -> None:
    expected = r"d_out must be divisible by num_heads, got d_out=5 and num_heads=2"
    with pytest.raises(ValueError, match=expected):
        build(cls, d_out=5, num_heads=2)


@pytest.mark.parametrize("cls", HEAD_CLASSES)
@pytest.mark.parametrize("num_heads", [0, -1])
def test_num_heads_below_one(cls: type, num_heads: int) -> None:
    expected = rf"num_heads must be a positive integer, got {num_heads}"
    with pytest.raises(ValueError, match=expected):
        build(cls, num_heads=num_heads)


@pytest.mark.parametrize("cls", BATCH_CLASSES)
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5])
def test_dropout_outside_zero_one(cls: type, dropout: float) -> None:
    expected = rf"dropout must be in \[0, 1\), got {dropout}"
    with pytest.raises(ValueError, match=expected):
        build(cls, dropout=dropout)


SIZES = [(cls, name) for cls in ALL_CLASSES for name in ("d_in", "d_out")] + [
    (cls, "context_length") for cls in BATCH_CLASSES
]


@pytest.mark.parametrize(("cls", "name"), SIZES)
@pytest.mark.parametrize("value", [0, -2, 2.0])
def test_sizes_must_be_positive_integers(cls: type, name: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"{name} must be a positive integer, got"):
        build(cls, **{name: value})


# --- functions --------------------------------------------------------------------


CALLS: list[tuple[str, Callable[[], object], str]] = [
    (
        "dot_scores, query of rank 2",
        lambda: dot_scores(torch.ones(1, 3), torch.ones(6, 3)),
        r"expected query \(d\) and inputs \(num_tokens, d\).*got query \(1, 3\)",
    ),
    (
        "dot_scores, widths differ",
        lambda: dot_scores(torch.ones(4), torch.ones(6, 3)),
        r"one size per letter; got query \(4,\) and inputs \(6, 3\)",
    ),
    (
        "weighted_sum, one weight too many",
        lambda: weighted_sum(torch.ones(7) / 7, torch.ones(6, 3)),
        r"attn_weights \(num_tokens\) and inputs .*got attn_weights \(7,\)",
    ),
    (
        "weighted_sum, inputs of rank 1",
        lambda: weighted_sum(torch.ones(3) / 3, torch.ones(3)),
        r"inputs \(num_tokens, d\).*and inputs \(3,\)",
    ),
    (
        "simple_self_attention, a batch",
        lambda: simple_self_attention(torch.ones(2, 6, 3)),
        r"inputs \(num_tokens, d_in\).*got inputs \(2, 6, 3\)",
    ),
    (
        "renormalize_masked, not square",
        lambda: renormalize_masked(torch.ones(3, 4)),
        r"attn_weights must end in a square .*got shape \(3, 4\)",
    ),
    (
        "mask_with_neg_inf, a vector",
        lambda: mask_with_neg_inf(torch.ones(3)),
        r"attn_scores must end in a square .*got shape \(3,\)",
    ),
    (
        "causal_mask, no tokens",
        lambda: causal_mask(0),
        r"num_tokens must be a positive integer, got 0",
    ),
]


@pytest.mark.parametrize(
    ("call", "expected"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS]
)
def test_function_errors(call: Callable[[], object], expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        call()


def test_copy_weights_refuses_a_bias() -> None:
    sa_v2 = SelfAttention_v2(3, 2, qkv_bias=True)
    with pytest.raises(ValueError, match="qkv_bias=False .*got .* qkv_bias=True"):
        copy_weights_v2_to_v1(sa_v2, SelfAttention_v1(3, 2))


@pytest.mark.parametrize(("v1_shape", "v2_shape"), [((3, 2), (3, 4)), ((2, 3), (3, 2))])
def test_copy_weights_refuses_a_size_mismatch(
    v1_shape: tuple[int, int], v2_shape: tuple[int, int]
) -> None:
    sa_v1 = SelfAttention_v1(*v1_shape)
    before = sa_v1.W_query.detach().clone()
    expected = (
        rf"sa_v1's \(d_in, d_out\) = \({v1_shape[0]}, {v1_shape[1]}\) .*"
        rf"got \({v2_shape[0]}, {v2_shape[1]}\)"
    )
    with pytest.raises(ValueError, match=expected):
        copy_weights_v2_to_v1(SelfAttention_v2(*v2_shape), sa_v1)
    torch.testing.assert_close(sa_v1.W_query.detach(), before, rtol=0, atol=0)


@pytest.mark.parametrize(
    "module, x",
    [
        (lambda: SelfAttention_v2(3, 2), torch.zeros(6, 3, dtype=torch.float64)),
        (
            lambda: CausalAttention(3, 2, 6, 0.0),
            torch.zeros(1, 6, 3, dtype=torch.float64),
        ),
        (
            lambda: MultiHeadAttention(3, 2, 6, 0.0, num_heads=2),
            torch.zeros(1, 6, 3, dtype=torch.float64),
        ),
    ],
)
def test_dtype_mismatch_names_both_dtypes(module, x):
    with pytest.raises(ValueError, match=r"float64 but the module's weights are "):
        module()(x)


def test_integer_input_is_rejected_with_a_hint():
    with pytest.raises(
        ValueError, match=r"floating-point embeddings, got dtype torch.int64"
    ):
        CausalAttention(3, 2, 6, 0.0)(torch.zeros(1, 6, 3, dtype=torch.long))
