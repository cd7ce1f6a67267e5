"""Properties of every public callable, checked on inputs that hypothesis generates.

Two kinds, as issue 22 asks:

- valid inputs give finite results, on the input's device and dtype, equal to
  a reference written here independently (loops over queries and keys, no
  call into the package's algorithm);
- bad inputs (wrong types, integer tensors, ``None``, ``inf``, swapped
  arguments, a module and an input on different devices) give the package's
  ``ValueError``, whose message names the argument.

Derandomized, so a run is the same everywhere; few examples per property, so
the whole file stays within seconds.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attention import (
    VARIANTS,
    CausalAttention,
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SDPAMultiHeadAttention,
    SelfAttention_v1,
    SelfAttention_v2,
    TinyAttentionModel,
    attention_weights,
    causal_mask,
    copy_weights,
    copy_weights_v2_to_v1,
    count_parameters,
    dot_scores,
    mask_with_neg_inf,
    order_blind_accuracy,
    parameter_breakdown,
    previous_token_data,
    previous_token_mass,
    renormalize_masked,
    simple_self_attention,
    softmax_naive,
    train_model,
    weighted_sum,
)

PROPERTY = settings(derandomize=True, deadline=None, max_examples=50)
FEW = settings(derandomize=True, deadline=None, max_examples=10)

DTYPES = st.sampled_from([torch.float32, torch.float64])
SEEDS = st.integers(0, 2**16)
SIZES = st.integers(1, 5)
#: Not tensors: what a reader might pass by mistake.
NOT_TENSORS = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=3),
)
#: Integer and boolean dtypes, which the 3.3 and 3.5 functions refuse.
NOT_FLOAT = st.sampled_from([torch.int64, torch.int32, torch.uint8, torch.bool])
#: Not a dropout probability.
BAD_DROPOUT = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.booleans(),
    st.floats(allow_nan=True).filter(lambda p: not 0 <= p < 1),
    st.just(math.inf),
)
#: Not a positive integer size.
BAD_SIZE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(max_value=0),
    st.floats(allow_nan=True),
    st.text(max_size=2),
)
#: Not a learning rate.
BAD_LR = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    st.floats(max_value=0.0),
    st.sampled_from([math.inf, -math.inf, math.nan]),
)

BATCH_CLASSES = [CausalAttention, MultiHeadAttentionWrapper, *VARIANTS.values()]


def randn(seed: int, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def build(cls: type, d_in: int = 4, d_out: int = 4, **overrides) -> nn.Module:
    """``cls`` with small valid arguments (two heads where it has heads)."""
    kwargs: dict = {"d_in": d_in, "d_out": d_out}
    if cls not in (SelfAttention_v1, SelfAttention_v2, CrossAttention):
        kwargs |= {"context_length": 6, "dropout": 0.0}
    if cls is MultiHeadAttentionWrapper or cls in VARIANTS.values():
        kwargs["num_heads"] = 2
    kwargs |= overrides
    return cls(**kwargs)


def reference_attention(q, k, v, causal: bool) -> torch.Tensor:
    """Scaled dot-product attention, one query and one key at a time."""
    out = torch.zeros(q.shape[0], v.shape[1], dtype=q.dtype)
    for i in range(q.shape[0]):
        keys = range(i + 1) if causal else range(k.shape[0])
        scores = torch.stack([q[i] @ k[j] for j in keys]) / math.sqrt(k.shape[1])
        weights = torch.exp(scores - scores.max())
        weights = weights / weights.sum()
        out[i] = sum(w * v[j] for w, j in zip(weights, keys, strict=True))
    return out


def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    out = x @ layer.weight.T
    return out if layer.bias is None else out + layer.bias


def close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert torch.isfinite(actual).all()
    torch.testing.assert_close(actual, expected.to(actual.dtype), atol=1e-5, rtol=1e-4)


def raises(match: str):
    """The package's error: a ``ValueError`` whose message names ``match``."""
    return pytest.raises(ValueError, match=match)


# --- valid inputs: the functions of 3.3 and 3.5 -------------------------------


@PROPERTY
@given(seed=SEEDS, T=SIZES, d=SIZES, dtype=DTYPES)
def test_dot_scores_is_one_dot_product_per_input(seed, T, d, dtype):
    inputs = randn(seed, T, d, dtype=dtype)
    query = randn(seed + 1, d, dtype=dtype)
    scores = dot_scores(query, inputs)
    assert scores.dtype == dtype and scores.device == inputs.device
    close(
        scores,
        torch.tensor(
            [
                sum(a * b for a, b in zip(row, query.tolist(), strict=True))
                for row in inputs.tolist()
            ],
            dtype=dtype,
        ),
    )


@PROPERTY
@given(seed=SEEDS, n=SIZES, dtype=DTYPES)
def test_softmax_naive_is_exp_over_sum(seed, n, dtype):
    x = randn(seed, n, dtype=dtype)
    exps = [math.exp(v) for v in x.tolist()]
    close(softmax_naive(x), torch.tensor([e / sum(exps) for e in exps]))


@PROPERTY
@given(seed=SEEDS, T=SIZES, d=SIZES, dtype=DTYPES)
def test_weighted_sum_mixes_rows(seed, T, d, dtype):
    inputs = randn(seed, T, d, dtype=dtype)
    weights = torch.softmax(randn(seed + 1, T, dtype=dtype), dim=0)
    expected = [
        sum(
            w * row[c] for w, row in zip(weights.tolist(), inputs.tolist(), strict=True)
        )
        for c in range(d)
    ]
    out = weighted_sum(weights, inputs)
    assert out.dtype == dtype
    close(out, torch.tensor(expected))


@PROPERTY
@given(seed=SEEDS, T=SIZES, d=SIZES, dtype=DTYPES)
def test_simple_self_attention_matches_the_loops(seed, T, d, dtype):
    x = randn(seed, T, d, dtype=dtype)
    attn_weights, context_vecs = simple_self_attention(x)
    close(attn_weights.sum(dim=-1), torch.ones(T))
    # unscaled: the 3.3 version has no 1/sqrt(d), so scale q to cancel it
    close(context_vecs, reference_attention(x * math.sqrt(d), x, x, causal=False))


@PROPERTY
@given(T=st.integers(1, 8))
def test_causal_mask_hides_exactly_the_future(T):
    expected = torch.tensor([[j > i for j in range(T)] for i in range(T)])
    assert torch.equal(causal_mask(T), expected)


@PROPERTY
@given(seed=SEEDS, T=SIZES, dtype=DTYPES)
def test_mask_with_neg_inf_replaces_only_the_future(seed, T, dtype):
    scores = randn(seed, 2, T, T, dtype=dtype)
    before = scores.clone()
    masked = mask_with_neg_inf(scores)
    assert torch.equal(scores, before), "the input changed"
    for i in range(T):
        for j in range(T):
            want = -math.inf if j > i else scores[:, i, j]
            assert torch.equal(
                masked[:, i, j], torch.full((2,), want, dtype=dtype) if j > i else want
            )


@PROPERTY
@given(seed=SEEDS, T=SIZES, scale=st.floats(0.1, 20), dtype=DTYPES)
def test_renormalize_masked_equals_masking_first_below_its_limit(seed, T, scale, dtype):
    scores = randn(seed, T, T, dtype=dtype) * scale  # gaps far below ~104
    out = renormalize_masked(torch.softmax(scores, dim=-1))
    expected = torch.zeros(T, T, dtype=dtype)
    for i in range(T):
        row = torch.exp(scores[i, : i + 1] - scores[i, : i + 1].max())
        expected[i, : i + 1] = row / row.sum()
    close(out, expected)


# --- valid inputs: the classes ---------------------------------------------------


@PROPERTY
@given(seed=SEEDS, T=SIZES, d_in=SIZES, d_out=SIZES, dtype=DTYPES)
def test_self_attention_v1_matches_the_reference(seed, T, d_in, d_out, dtype):
    torch.manual_seed(seed)
    sa = SelfAttention_v1(d_in, d_out).to(dtype)
    x = randn(seed, T, d_in, dtype=dtype)
    q, k, v = x @ sa.W_query, x @ sa.W_key, x @ sa.W_value
    with torch.no_grad():
        close(sa(x), reference_attention(q, k, v, causal=False))


@PROPERTY
@given(seed=SEEDS, T=SIZES, d_in=SIZES, d_out=SIZES, bias=st.booleans())
def test_self_attention_v2_matches_the_reference(seed, T, d_in, d_out, bias):
    torch.manual_seed(seed)
    sa = SelfAttention_v2(d_in, d_out, qkv_bias=bias)
    x = randn(seed, T, d_in)
    with torch.no_grad():
        q, k, v = (linear(layer, x) for layer in (sa.W_query, sa.W_key, sa.W_value))
        close(sa(x), reference_attention(q, k, v, causal=False))


@PROPERTY
@given(seed=SEEDS, T=SIZES, d_in=SIZES, d_out=SIZES)
def test_copy_weights_v2_to_v1_makes_them_agree(seed, T, d_in, d_out):
    torch.manual_seed(seed)
    sa_v2, sa_v1 = SelfAttention_v2(d_in, d_out), SelfAttention_v1(d_in, d_out)
    copy_weights_v2_to_v1(sa_v2, sa_v1)
    x = randn(seed, T, d_in)
    with torch.no_grad():
        close(sa_v1(x), sa_v2(x))


@PROPERTY
@given(seed=SEEDS, b=st.integers(0, 2), T=st.integers(0, 6), d_out=SIZES, dtype=DTYPES)
def test_causal_attention_matches_the_reference(seed, b, T, d_out, dtype):
    torch.manual_seed(seed)
    ca = build(CausalAttention, d_out=d_out).to(dtype).eval()
    x = randn(seed, b, T, 4, dtype=dtype)
    with torch.no_grad():
        out = ca(x)
        assert out.shape == (b, T, d_out) and out.dtype == dtype
        for n in range(b):
            q, k, v = (linear(lay, x[n]) for lay in (ca.W_query, ca.W_key, ca.W_value))
            close(out[n], reference_attention(q, k, v, causal=True))


@PROPERTY
@given(seed=SEEDS, T=st.integers(1, 6), heads=st.integers(1, 3))
def test_wrapper_is_its_heads_side_by_side(seed, T, heads):
    torch.manual_seed(seed)
    mha = MultiHeadAttentionWrapper(4, 2, 6, 0.0, num_heads=heads)
    x = randn(seed, 1, T, 4)
    with torch.no_grad():
        parts = []
        for head in mha.heads:
            q, k, v = (
                linear(lay, x[0]) for lay in (head.W_query, head.W_key, head.W_value)
            )
            parts.append(reference_attention(q, k, v, causal=True))
        close(mha(x)[0], torch.cat(parts, dim=-1))


@PROPERTY
@given(seed=SEEDS, T=st.integers(1, 6), heads=st.sampled_from([1, 2, 4]), dtype=DTYPES)
def test_multihead_attention_matches_the_reference(seed, T, heads, dtype):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(4, 4, 6, 0.0, num_heads=heads).to(dtype)
    x = randn(seed, 1, T, 4, dtype=dtype)
    hd = 4 // heads
    with torch.no_grad():
        q, k, v = (linear(lay, x[0]) for lay in (mha.W_query, mha.W_key, mha.W_value))
        parts = [
            reference_attention(
                *(t[:, i * hd : (i + 1) * hd] for t in (q, k, v)), causal=True
            )
            for i in range(heads)
        ]
        close(mha(x)[0], linear(mha.out_proj, torch.cat(parts, dim=-1)))


@PROPERTY
@given(
    seed=SEEDS,
    T=st.integers(0, 6),
    name=st.sampled_from(sorted(VARIANTS)),
    bias=st.booleans(),
    d_in=st.sampled_from([4, 6]),
)
def test_every_variant_computes_the_chapters_function(seed, T, name, bias, d_in):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, 4, 6, 0.0, num_heads=2, qkv_bias=bias)
    other = VARIANTS[name](d_in, 4, 6, 0.0, num_heads=2, qkv_bias=bias)
    copy_weights(mha, other)
    x = randn(seed, 2, T, d_in)
    with torch.no_grad():
        close(other(x), mha(x))


@PROPERTY
@given(seed=SEEDS, cls=st.sampled_from(BATCH_CLASSES), T=st.integers(1, 6))
def test_outputs_stay_on_the_inputs_device(seed, cls, T):
    module = build(cls).to("meta")
    out = module(torch.empty(2, T, 4, device="meta"))
    assert out.device.type == "meta" and out.shape[:2] == (2, T)


@PROPERTY
@given(
    seed=SEEDS,
    cls=st.sampled_from([MultiHeadAttention, CausalAttention, SDPAMultiHeadAttention]),
    T=st.integers(2, 6),
    t=st.integers(0, 5),
)
def test_finite_inputs_keep_causality(seed, cls, T, t):
    t = min(t, T - 1)
    torch.manual_seed(seed)
    module = build(cls).eval()
    x = randn(seed, 1, T, 4)
    changed = x.clone()
    changed[:, t:] = randn(seed + 1, 1, T - t, 4)
    with torch.no_grad():
        torch.testing.assert_close(module(changed)[:, :t], module(x)[:, :t])


@PROPERTY
@given(seed=SEEDS, T_q=SIZES, T_kv=SIZES, d_ctx=SIZES)
def test_cross_attention_matches_the_reference(seed, T_q, T_kv, d_ctx):
    torch.manual_seed(seed)
    cross = CrossAttention(4, 3, d_context=d_ctx)
    x, context = randn(seed, T_q, 4), randn(seed + 1, T_kv, d_ctx)
    with torch.no_grad():
        q = linear(cross.W_query, x)
        k, v = linear(cross.W_key, context), linear(cross.W_value, context)
        close(cross(x, context), reference_attention(q, k, v, causal=False))


@PROPERTY
@given(
    cls=st.sampled_from([*BATCH_CLASSES, SelfAttention_v1, SelfAttention_v2]),
    d_in=SIZES,
    bias=st.booleans(),
)
def test_count_parameters_counts_every_trainable_number(cls, d_in, bias):
    kwargs = {} if cls is SelfAttention_v1 else {"qkv_bias": bias}
    module = build(cls, d_in=d_in, **kwargs)
    trainable = [p for p in module.parameters() if p.requires_grad]
    assert count_parameters(module) == sum(p.numel() for p in trainable)
    assert sum(parameter_breakdown(module).values()) == count_parameters(module)


# --- valid inputs: the trained-attention helpers ------------------------------------


@PROPERTY
@given(n=SIZES, T=st.integers(2, 6), vocab=st.integers(2, 9), seed=SEEDS)
def test_previous_token_data_targets_are_the_previous_tokens(n, T, vocab, seed):
    token_ids, targets = previous_token_data(n, T, vocab, seed=seed)
    assert token_ids.min() >= 0 and token_ids.max() < vocab
    assert (targets[:, 0] == -100).all()
    assert torch.equal(targets[:, 1:], token_ids[:, :-1])


@PROPERTY
@given(seed=SEEDS, n=SIZES, T=st.integers(2, 6), vocab=st.integers(2, 5))
def test_order_blind_accuracy_matches_counting(seed, n, T, vocab):
    token_ids, _ = previous_token_data(n, T, vocab, seed=seed)
    rows = token_ids.tolist()
    best = [
        max(row[:i].count(t) for t in set(row[:i])) / i
        for row in rows
        for i in range(1, T)
    ]
    assert order_blind_accuracy(token_ids, vocab) == pytest.approx(
        sum(best) / len(best)
    )


@PROPERTY
@given(seed=SEEDS, b=SIZES, h=SIZES, T=st.integers(2, 5))
def test_previous_token_mass_averages_the_subdiagonal(seed, b, h, T):
    w = torch.rand(b, h, T, T, generator=torch.Generator().manual_seed(seed))
    expected = [
        sum(w[n, k, i, i - 1].item() for n in range(b) for i in range(1, T))
        / (b * (T - 1))
        for k in range(h)
    ]
    close(previous_token_mass(w), torch.tensor(expected))


@FEW
@given(seed=SEEDS, T=st.integers(2, 5))
def test_attention_weights_are_the_modules_causal_weights(seed, T):
    torch.manual_seed(seed)
    model = TinyAttentionModel(5, 4, context_length=5, num_heads=2).eval()
    ids = torch.randint(5, (1, T), generator=torch.Generator().manual_seed(seed))
    w = attention_weights(model, ids)
    assert w.shape == (1, 2, T, T)
    close(w.sum(dim=-1), torch.ones(1, 2, T))
    assert (w[..., causal_mask(T)] == 0).all()


@FEW
@given(seed=SEEDS, lr=st.floats(0.01, 1.0))
def test_train_model_returns_finite_losses(seed, lr):
    torch.manual_seed(seed)
    model = TinyAttentionModel(4, 4, context_length=4, num_heads=2)
    ids, targets = previous_token_data(8, 4, 4, seed=seed)
    losses = train_model(model, ids, targets, steps=2, batch_size=4, lr=lr, seed=seed)
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)


# --- bad inputs get the package's ValueError ------------------------------------------


FUNCTIONS_OF_ONE = {
    "inputs": simple_self_attention,
    "x": softmax_naive,
    "attn_weights": renormalize_masked,
    "attn_scores": mask_with_neg_inf,
}


@PROPERTY
@given(name=st.sampled_from(sorted(FUNCTIONS_OF_ONE)), dtype=NOT_FLOAT, T=SIZES)
def test_integer_tensors_are_refused_with_a_hint(name, dtype, T):
    with raises(f"{name} must hold floating-point numbers, got dtype {dtype}"):
        FUNCTIONS_OF_ONE[name](torch.ones(T, T, dtype=dtype))


@PROPERTY
@given(name=st.sampled_from(sorted(FUNCTIONS_OF_ONE)), bad=NOT_TENSORS)
def test_non_tensors_are_refused(name, bad):
    with raises(f"{name} must be a torch.Tensor, got"):
        FUNCTIONS_OF_ONE[name](bad)


@PROPERTY
@given(seed=SEEDS, T=SIZES, which=st.sampled_from(["dtype", "device", "int"]))
def test_pairs_of_tensors_must_match(seed, T, which):
    inputs = randn(seed, T, 3)
    other = {
        "dtype": inputs[0].double(),
        "device": inputs[0].to("meta"),
        "int": inputs[0].long(),
    }[which]
    with raises(r"query.*(same dtype|same device|floating-point)"):
        dot_scores(other, inputs)
    weights = (
        torch.softmax(other[:1].expand(T).to(other.dtype), dim=0)
        if which != "int"
        else torch.ones(T, dtype=torch.long)
    )
    with raises(r"attn_weights.*(same dtype|same device|floating-point)"):
        weighted_sum(weights, inputs)


@PROPERTY
@given(cls=st.sampled_from(BATCH_CLASSES), bad=BAD_DROPOUT)
def test_bad_dropout_names_dropout(cls, bad):
    with raises(r"dropout must be (a number )?in \[0, 1\), got"):
        build(cls, dropout=bad)


@PROPERTY
@given(
    cls=st.sampled_from([MultiHeadAttentionWrapper, *VARIANTS.values()]), bad=BAD_SIZE
)
def test_bad_num_heads_names_num_heads(cls, bad):
    with raises("num_heads must be a positive integer, got"):
        build(cls, num_heads=bad)


@PROPERTY
@given(
    cls=st.sampled_from(
        [*BATCH_CLASSES, SelfAttention_v1, SelfAttention_v2, CrossAttention]
    ),
    arg=st.sampled_from(["d_in", "d_out"]),
    bad=BAD_SIZE,
)
def test_bad_sizes_name_the_argument(cls, arg, bad):
    with raises(f"{arg} must be a positive integer, got"):
        build(cls, **{arg: bad})


@PROPERTY
@given(
    cls=st.sampled_from([*BATCH_CLASSES, SelfAttention_v2, CrossAttention]),
    bad=st.one_of(st.none(), st.integers(0, 2), st.text(max_size=2)),
)
def test_qkv_bias_must_be_a_flag(cls, bad):
    with raises("qkv_bias must be True or False, got"):
        build(cls, qkv_bias=bad)


@PROPERTY
@given(
    cls=st.sampled_from(BATCH_CLASSES),
    T=st.integers(1, 6),
    module_on_meta=st.booleans(),
)
def test_module_and_input_on_different_devices(cls, T, module_on_meta):
    module = build(cls)
    x = torch.zeros(1, T, 4)
    if module_on_meta:
        module = module.to("meta")
    else:
        x = x.to("meta")
    with raises("x must be on the module's device"):
        module(x)


@PROPERTY
@given(cls=st.sampled_from([SelfAttention_v1, SelfAttention_v2]), T=SIZES)
def test_sequence_classes_check_the_device_too(cls, T):
    with raises("x must be on the module's device, meta, got x on cpu"):
        build(cls).to("meta")(torch.zeros(T, 4))


@PROPERTY
@given(
    cls=st.sampled_from(BATCH_CLASSES),
    dtype=st.sampled_from([torch.float64, torch.float16, torch.int64]),
    T=st.integers(1, 6),
)
def test_input_dtype_must_match_the_weights(cls, dtype, T):
    with raises(r"x (has dtype|must hold floating-point)"):
        build(cls)(torch.zeros(1, T, 4, dtype=dtype))


@PROPERTY
@given(cls=st.sampled_from(BATCH_CLASSES), extra=st.integers(1, 4))
def test_too_many_tokens_names_context_length(cls, extra):
    with raises(f"x has {6 + extra} tokens but context_length is 6"):
        build(cls)(torch.zeros(1, 6 + extra, 4))


@PROPERTY
@given(d_in=SIZES, d_out=SIZES)
def test_swapped_copy_arguments_are_named(d_in, d_out):
    sa_v1, sa_v2 = SelfAttention_v1(d_in, d_out), SelfAttention_v2(d_in, d_out)
    with raises("the arguments look swapped"):
        copy_weights_v2_to_v1(sa_v1, sa_v2)


@PROPERTY
@given(
    bad=st.one_of(
        NOT_TENSORS,
        st.just(MultiHeadAttention),
        st.just({"W_query.weight": torch.zeros(1)}),
    )
)
def test_count_parameters_wants_a_module(bad):
    with raises("module must be a"):
        count_parameters(bad)


@PROPERTY
@given(
    name=st.sampled_from(sorted(VARIANTS)),
    bad=st.one_of(
        NOT_TENSORS,
        st.dictionaries(st.text(max_size=2), st.integers(), min_size=1, max_size=2),
    ),
)
def test_load_mha_state_dict_wants_a_dict_of_tensors(name, bad):
    with raises("state must be a dict"):
        build(VARIANTS[name]).load_mha_state_dict(bad)


@PROPERTY
@given(bad=BAD_LR)
def test_train_model_refuses_a_bad_lr(bad):
    model = TinyAttentionModel(4, 4, context_length=4, num_heads=2)
    ids, targets = previous_token_data(4, 4, 4)
    with raises(r"lr must be a (finite|positive) number, got"):
        train_model(model, ids, targets, steps=1, batch_size=2, lr=bad)


@PROPERTY
@given(target=st.one_of(st.integers(4, 50), st.integers(-99, -1)))
def test_targets_outside_the_vocabulary_are_named(target):
    model = TinyAttentionModel(4, 4, context_length=4, num_heads=2)
    ids, targets = previous_token_data(4, 4, 4)
    targets[0, 2] = target
    with raises(r"targets must lie in \[0, 4\)"):
        train_model(model, ids, targets, steps=1, batch_size=2)


@PROPERTY
@given(bad=st.one_of(st.none(), st.floats(), st.text(max_size=2), st.booleans()))
def test_seeds_must_be_integers(bad):
    with raises("seed must be an integer, got"):
        previous_token_data(2, 3, 4, seed=bad)


@PROPERTY
@given(
    bad=st.one_of(
        BAD_SIZE,
        st.text(min_size=1, max_size=4).filter(lambda s: s not in ("cpu", "meta")),
    )
)
def test_causal_mask_refuses_bad_sizes_and_devices(bad):
    with raises(
        "(num_tokens must be a positive integer|device must be a torch.device)"
    ):
        if isinstance(bad, str):
            causal_mask(3, device=bad)
        else:
            causal_mask(bad)


@PROPERTY
@given(
    n=SIZES,
    dim=st.one_of(st.integers(1, 5), st.integers(-6, -2), st.none(), st.floats()),
)
def test_softmax_naive_refuses_a_dim_it_lacks(n, dim):
    with raises("dim must"):
        softmax_naive(torch.zeros(n), dim=dim)


def test_attention_weights_needs_the_chapters_attention():
    model = TinyAttentionModel(4, 4, context_length=4, num_heads=2)
    model.attn = SDPAMultiHeadAttention(4, 4, 4, 0.0, num_heads=2)
    with raises("model.attn must be a MultiHeadAttention"):
        attention_weights(model, torch.zeros(1, 3, dtype=torch.long))


@PROPERTY
@given(gap=st.floats(0.0, 1e4), T=st.integers(2, 5))
def test_renormalize_masked_fails_exactly_where_its_docstring_says(gap, T):
    scores = torch.zeros(T, T)
    scores[0, 1] = gap  # query 0: its one allowed score sits `gap` below key 1
    row = renormalize_masked(torch.softmax(scores, dim=-1))[0]
    if gap >= 104:
        assert torch.isnan(row).all()
    elif gap <= 100:
        close(row, torch.eye(T)[0])
