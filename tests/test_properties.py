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

import inspect
import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch import nn

import attention
from attention import (
    VARIANTS,
    CausalAttention,
    CrossAttention,
    FlashMultiHeadAttention,
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    PaddedMultiHeadAttention,
    SDPAMultiHeadAttention,
    SelfAttention_v1,
    SelfAttention_v2,
    TinyAttentionModel,
    attention_over_key_tiles,
    attention_weights,
    cached_attention,
    causal_mask,
    copy_weights,
    copy_weights_v2_to_v1,
    count_parameters,
    decode_step,
    dot_scores,
    example_inputs,
    flash_attention,
    generate_greedy,
    generate_greedy_cached,
    key_padding_mask,
    kv_cache_bytes,
    mask_with_neg_inf,
    online_softmax,
    online_softmax_stats,
    order_blind_accuracy,
    pad_sequences,
    padded_causal_mask,
    parameter_breakdown,
    previous_token_data,
    previous_token_mass,
    renormalize_masked,
    repeat_kv,
    simple_self_attention,
    softmax_naive,
    softmax_three_pass,
    token_accuracy,
    train_model,
    weighted_sum,
    weights_from_lse,
)
from attention.contract import load_mha_state_dict, mha_state_dict

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

BATCH_CLASSES = [
    CausalAttention,
    MultiHeadAttentionWrapper,
    *VARIANTS.values(),
    GroupedQueryAttention,
]


def randn(seed: int, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def build(cls: type, d_in: int = 4, d_out: int = 4, **overrides) -> nn.Module:
    """``cls`` with small valid arguments (two heads where it has heads)."""
    kwargs: dict = {"d_in": d_in, "d_out": d_out}
    if cls not in (SelfAttention_v1, SelfAttention_v2, CrossAttention):
        kwargs |= {"context_length": 6, "dropout": 0.0}
    if cls in (MultiHeadAttentionWrapper, GroupedQueryAttention, *VARIANTS.values()):
        kwargs["num_heads"] = 2
    if cls is GroupedQueryAttention:
        kwargs["num_kv_heads"] = 1
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


def softmax_rows(scores: torch.Tensor, hidden: torch.Tensor | None = None):
    """``exp(s - max) / sum`` over the last dimension, written out; hidden -> 0.

    A row whose every position is hidden gets zero weights.
    """
    if hidden is not None:
        scores = scores.masked_fill(hidden, -math.inf)
    if scores.shape[-1] == 0:
        return scores
    top = scores.amax(dim=-1, keepdim=True).nan_to_num(neginf=0.0)
    exps = torch.exp(scores - top)
    sums = exps.sum(dim=-1, keepdim=True)
    return torch.where(sums > 0, exps / sums.clamp_min(1e-300), 0.0)


def scaled_attention(q, k, v, hidden=None) -> torch.Tensor:
    """Attention over the last two dimensions, the formula written out."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    return softmax_rows(scores, hidden) @ v


def future(num_queries: int, num_keys: int) -> torch.Tensor:
    """``True`` where key ``j`` comes after query ``i`` (bottom-right aligned)."""
    offset = num_keys - num_queries
    rows = [[j > i + offset for j in range(num_keys)] for i in range(num_queries)]
    return torch.tensor(rows, dtype=torch.bool).reshape(num_queries, num_keys)


def reference_mha(state, x, num_heads, num_kv_heads=None, hidden=None):
    """Causal multi-head attention from weights in the chapter's layout.

    ``state`` maps ``W_query.weight`` etc. to tensors; key/value head ``g``
    serves query heads ``g * r .. g * r + r - 1``. ``hidden`` (b, T, T) adds
    masked pairs to the causal ones.
    """

    def project(name):
        out = x @ state[f"{name}.weight"].T
        bias = state.get(f"{name}.bias")
        return out if bias is None else out + bias

    b, T, _ = x.shape
    q, k, v = project("W_query"), project("W_key"), project("W_value")
    hd = q.shape[-1] // num_heads
    group = num_heads // (num_kv_heads or num_heads)
    mask = future(T, T).expand(b, T, T)
    if hidden is not None:
        mask = mask | hidden
    heads = []
    for i in range(num_heads):
        kv = slice((i // group) * hd, (i // group + 1) * hd)
        qi = q[..., i * hd : (i + 1) * hd]
        heads.append(scaled_attention(qi, k[..., kv], v[..., kv], mask))
    merged = torch.cat(heads, dim=-1) if heads else q
    return merged @ state["out_proj.weight"].T + state["out_proj.bias"]


def chapter_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """The weights of a module with W_query, W_key, W_value and out_proj."""
    names = ("W_query", "W_key", "W_value", "out_proj")
    state = {}
    for name in names:
        layer = getattr(module, name)
        state[f"{name}.weight"] = layer.weight.detach()
        if layer.bias is not None:
            state[f"{name}.bias"] = layer.bias.detach()
    return state


def reference_logits(model: TinyAttentionModel, ids: torch.Tensor) -> torch.Tensor:
    """``TinyAttentionModel``'s logits, from its weights and the formula."""
    x = model.tok_emb.weight[ids]
    if model.pos_emb is not None:
        x = x + model.pos_emb.weight[: ids.shape[1]]
    context = reference_mha(chapter_state(model.attn), x, model.attn.num_heads)
    return context @ model.out_head.weight.T + model.out_head.bias


def tiny_model(seed: int, vocab: int = 7, context_length: int = 6, dtype=None):
    torch.manual_seed(seed)
    model = TinyAttentionModel(vocab, 4, context_length, num_heads=2).eval()
    return model if dtype is None else model.to(dtype)


def token_ids(seed: int, b: int, T: int, vocab: int = 7) -> torch.Tensor:
    return torch.randint(vocab, (b, T), generator=torch.Generator().manual_seed(seed))


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
    cls=st.sampled_from(
        [MultiHeadAttentionWrapper, GroupedQueryAttention, *VARIANTS.values()]
    ),
    bad=BAD_SIZE,
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
    with raises("module must be a"):
        parameter_breakdown(bad)


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
        load_mha_state_dict(build(VARIANTS[name]), bad)


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


@PROPERTY
@given(name=st.sampled_from(["fused", "sdpa", "torch", "flash"]), T=st.integers(1, 4))
def test_attention_weights_needs_the_chapters_attention(name, T):
    model = TinyAttentionModel(4, 4, context_length=4, num_heads=2)
    model.attn = VARIANTS[name](4, 4, 4, 0.0, num_heads=2)
    with raises("model.attn must be a MultiHeadAttention"):
        attention_weights(model, torch.zeros(1, T, dtype=torch.long))


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


# --- valid inputs: FlashAttention from scratch (attention/flash.py) ---------------

TILES = st.integers(1, 7)


@PROPERTY
@given(
    seed=SEEDS,
    lead=st.lists(st.integers(0, 3), max_size=2),
    n=st.integers(1, 9),
    tile=TILES,
    spread=st.floats(0.1, 200.0),
    dtype=DTYPES,
)
def test_softmaxes_are_exp_over_sum_row_by_row(seed, lead, n, tile, spread, dtype):
    scores = randn(seed, *lead, n, dtype=dtype) * spread
    rows = scores.reshape(-1, n).tolist()
    sums = [sum(math.exp(s - max(r)) for s in r) for r in rows]
    weights = [
        [math.exp(s - max(r)) / total for s in r]
        for r, total in zip(rows, sums, strict=True)
    ]
    expected = torch.tensor(weights, dtype=torch.float64).reshape(scores.shape)
    for out in (softmax_three_pass(scores), online_softmax(scores, tile)):
        assert out.dtype == dtype and out.device == scores.device
        close(out, expected)
    m, ell = online_softmax_stats(scores, tile)
    assert m.shape == ell.shape == (*lead, 1) and ell.dtype == dtype
    close(m.flatten(), torch.tensor([max(r) for r in rows], dtype=torch.float64))
    close(ell.flatten(), torch.tensor(sums, dtype=torch.float64))


@PROPERTY
@given(
    seed=SEEDS,
    b=st.integers(0, 2),
    Tq=st.integers(0, 7),
    Tk=st.integers(1, 7),
    hd=SIZES,
    tile=TILES,
    dtype=DTYPES,
)
def test_key_tiles_and_flash_equal_the_formula(seed, b, Tq, Tk, hd, tile, dtype):
    q = randn(seed, b, 2, Tq, hd, dtype=dtype)
    k = randn(seed + 1, b, 2, Tk, hd, dtype=dtype)
    v = randn(seed + 2, b, 2, Tk, hd, dtype=dtype)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
    expected_lse = torch.log(torch.exp(scores.double()).sum(-1))
    for out, lse in (
        attention_over_key_tiles(q, k, v, tile),
        flash_attention(q, k, v, tile_size=tile),
    ):
        assert out.dtype == lse.dtype == dtype and out.device == q.device
        close(out, scaled_attention(q, k, v))
        close(lse, expected_lse)
    # causal: as many queries as keys
    q = q[..., :Tk, :] if Tq >= Tk else randn(seed, b, 2, Tk, hd, dtype=dtype)
    out, lse = flash_attention(q, k, v, causal=True, tile_size=tile)
    close(out, scaled_attention(q, k, v, future(Tk, Tk)))
    weights = softmax_rows(q @ k.transpose(-2, -1) / math.sqrt(hd), future(Tk, Tk))
    # weights_from_lse recomputes every weight the mask allows
    recomputed = weights_from_lse(q, k, lse).masked_fill(future(Tk, Tk), 0.0)
    close(recomputed, weights)


@FEW
@given(seed=SEEDS, Tk=st.integers(1, 6), hd=SIZES, p=st.floats(0.1, 0.9))
def test_flash_dropout_keeps_the_expected_output(seed, Tk, hd, p):
    """Dropout zeroes weights, and scales the rest by 1/(1-p): a mean is kept."""
    q, k, v = (randn(seed + i, 1, Tk, hd) for i in range(3))
    torch.manual_seed(seed)
    out, lse = flash_attention(q, k, v, dropout_p=p, tile_size=2)
    assert torch.isfinite(out).all()
    close(lse, torch.log(torch.exp(q @ k.transpose(-2, -1) / math.sqrt(hd)).sum(-1)))


# --- valid inputs: every multi-head class against the formula ------------------------

MULTI_HEAD = [*VARIANTS.values(), GroupedQueryAttention]


@PROPERTY
@given(
    seed=SEEDS,
    cls=st.sampled_from(MULTI_HEAD),
    b=st.integers(0, 2),
    T=st.integers(0, 6),
    heads=st.sampled_from([1, 2, 4]),
    bias=st.booleans(),
    d_in=st.sampled_from([4, 6]),
    dtype=DTYPES,
)
def test_multi_head_classes_equal_the_formula(
    seed, cls, b, T, heads, bias, d_in, dtype
):
    torch.manual_seed(seed)
    kwargs = (
        {"num_kv_heads": max(1, heads // 2)} if cls is GroupedQueryAttention else {}
    )
    module = cls(d_in, 4, 6, 0.0, num_heads=heads, qkv_bias=bias, **kwargs)
    module = module.to(dtype).eval()
    if isinstance(module, FlashMultiHeadAttention):
        module.tile_size = 1 + seed % 4
    state = (
        chapter_state(module)
        if cls is GroupedQueryAttention
        else mha_state_dict(module)
    )
    x = randn(seed, b, T, d_in, dtype=dtype)
    with torch.no_grad():
        out = module(x)
        assert out.shape == (b, T, 4) and out.dtype == dtype
        close(out, reference_mha(state, x, heads, kwargs.get("num_kv_heads")))


@PROPERTY
@given(
    seed=SEEDS,
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    side=st.sampled_from(["left", "right"]),
    dtype=DTYPES,
)
def test_padded_attention_hides_the_padding(seed, lengths, side, dtype):
    torch.manual_seed(seed)
    module = PaddedMultiHeadAttention(3, 4, 6, 0.0, num_heads=2).to(dtype).eval()
    sequences = [randn(seed + i, n, 3, dtype=dtype) for i, n in enumerate(lengths)]
    x, attention_mask = pad_sequences(sequences, side=side)
    pad = attention_mask == 0
    with torch.no_grad():
        out = module(x, attention_mask)
        hidden = pad[:, None, :].expand(-1, x.shape[1], -1)
        close(out, reference_mha(mha_state_dict(module), x, 2, hidden=hidden))


# --- the registry: register -----------------------------------------------------


@PROPERTY
@given(name=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), bias=st.booleans())
def test_register_adds_a_working_entry_in_one_line(name, bias):
    assume(name not in VARIANTS)

    class Joined(MultiHeadAttention):
        pass

    try:
        assert attention.register(name, Joined) is Joined
        assert VARIANTS[name] is Joined
        assert attention.register(name, Joined) is Joined  # again: no change
        torch.manual_seed(0)
        module = Joined(3, 4, 6, 0.0, 2, qkv_bias=bias).eval()
        x = randn(1, 2, 5, 3)
        with torch.no_grad():
            close(module(x), reference_mha(mha_state_dict(module), x, 2))
    finally:
        VARIANTS.pop(name, None)


@PROPERTY
@given(
    name=st.one_of(
        st.sampled_from(["", "two words", "1st", "mha"]), NOT_TENSORS, st.integers()
    ),
    cls=st.sampled_from([None, "MultiHeadAttention", 3, torch.nn.Linear(2, 2)]),
)
def test_register_refuses_bad_names_taken_names_and_non_classes(name, cls):
    before = dict(VARIANTS)
    with raises("name must be|cls must be|is taken by"):
        attention.register(name, cls)
    with raises("is taken by"):
        attention.register("mha", SDPAMultiHeadAttention)
    assert VARIANTS == before


# --- valid inputs: padding helpers ------------------------------------------------


@PROPERTY
@given(
    seed=SEEDS,
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    width=st.sampled_from([(), (2,)]),
    side=st.sampled_from(["left", "right"]),
    value=st.integers(-3, 3),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int64]),
)
def test_pad_sequences_places_every_token(seed, lengths, width, side, value, dtype):
    sequences = [
        (randn(seed + i, n, *width) * 10).to(dtype) for i, n in enumerate(lengths)
    ]
    padded, attention_mask = pad_sequences(sequences, side=side, value=value)
    T = max(lengths)
    assert padded.dtype == dtype and padded.shape == (len(lengths), T, *width)
    for row, seq in enumerate(sequences):
        start = 0 if side == "right" else T - len(seq)
        for t in range(T):
            real = start <= t < start + len(seq)
            assert attention_mask[row, t].item() == int(real)
            want = seq[t - start] if real else torch.full(width, value, dtype=dtype)
            assert torch.equal(padded[row, t], want)


@PROPERTY
@given(
    seed=SEEDS,
    b=st.integers(0, 3),
    T=st.integers(0, 6),
    dtype=st.sampled_from([torch.int64, torch.bool, torch.float32]),
)
def test_padding_masks_hide_pads_and_the_future(seed, b, T, dtype):
    attention_mask = torch.randint(
        2, (b, T), generator=torch.Generator().manual_seed(seed)
    ).to(dtype)
    values = attention_mask.tolist()
    keys = key_padding_mask(attention_mask)
    assert keys.tolist() == [[v == 0 for v in row] for row in values]
    both = padded_causal_mask(attention_mask)
    assert both.shape == (b, T, T)
    expected = [
        [[j > i or row[j] == 0 for j in range(T)] for i in range(T)] for row in values
    ]
    assert both.tolist() == expected


# --- valid inputs: KV cache and generation (attention/kv_cache.py) ----------------


@PROPERTY
@given(
    seed=SEEDS,
    chunks=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    layers=st.integers(1, 3),
    dtype=DTYPES,
)
def test_the_cache_concatenates_what_it_gets(seed, chunks, layers, dtype):
    cache = KVCache(context_length=sum(chunks) + 1, num_layers=layers)
    layer = seed % layers
    parts = [randn(seed + i, 2, 3, n, 4, dtype=dtype) for i, n in enumerate(chunks)]
    for part in parts:
        keys, values = cache.update(layer, part, part * 2)
    assert cache.num_tokens(layer) == sum(chunks)
    assert torch.equal(keys, torch.cat(parts, dim=2))
    assert torch.equal(values, torch.cat(parts, dim=2) * 2)
    assert cache.nbytes() == 2 * keys.numel() * keys.element_size()


@PROPERTY
@given(
    b=SIZES,
    tokens=SIZES,
    layers=SIZES,
    kv_heads=SIZES,
    head_dim=SIZES,
    dtype=st.sampled_from([torch.float16, torch.float32, torch.float64]),
)
def test_kv_cache_bytes_is_what_a_full_cache_holds(
    b, tokens, layers, kv_heads, head_dim, dtype
):
    cache = KVCache(tokens, num_layers=layers)
    for layer in range(layers):
        t = torch.zeros(b, kv_heads, tokens, head_dim, dtype=dtype)
        cache.update(layer, t, t)
    size = torch.empty(0, dtype=dtype).element_size()
    assert kv_cache_bytes(b, tokens, layers, kv_heads, head_dim, size) == cache.nbytes()


@PROPERTY
@given(
    seed=SEEDS,
    chunks=st.lists(st.integers(0, 3), min_size=1, max_size=4).filter(
        lambda c: sum(c) <= 6
    ),
    gqa=st.booleans(),
    b=st.integers(0, 2),
    dtype=DTYPES,
)
def test_cached_attention_in_chunks_equals_the_formula(seed, chunks, gqa, b, dtype):
    torch.manual_seed(seed)
    if gqa:
        attn = GroupedQueryAttention(4, 4, 6, 0.0, num_heads=4, num_kv_heads=2)
    else:
        attn = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    attn = attn.to(dtype).eval()
    x = randn(seed, b, sum(chunks), 4, dtype=dtype)
    cache, outs, start = KVCache(6), [], 0
    with torch.no_grad():
        for n in chunks:
            outs.append(cached_attention(attn, x[:, start : start + n], cache))
            start += n
    out = torch.cat(outs, dim=1)
    assert out.dtype == dtype
    expected = reference_mha(chapter_state(attn), x, attn.num_heads, 2 if gqa else None)
    close(out, expected)


@PROPERTY
@given(seed=SEEDS, b=st.integers(0, 2), P=st.integers(1, 5), dtype=DTYPES)
def test_decode_step_gives_the_logits_of_the_new_tokens(seed, b, P, dtype):
    model = tiny_model(seed, dtype=dtype)
    ids = token_ids(seed, b, P + 1)
    cache = KVCache(model.context_length)
    with torch.no_grad():
        close(model(ids), reference_logits(model, ids))  # the model itself
        first = decode_step(model, ids[:, :P], cache)
        last = decode_step(model, ids[:, P:], cache)
        assert last.dtype == dtype
        close(torch.cat((first, last), dim=1), reference_logits(model, ids))


@FEW
@given(seed=SEEDS, b=st.integers(0, 2), P=st.integers(1, 4), n=st.integers(1, 3))
def test_both_generators_pick_the_reference_argmax(seed, b, P, n):
    model = tiny_model(seed, dtype=torch.float64)
    prompt = token_ids(seed, b, P)
    expected, expected_logits = prompt, []
    with torch.no_grad():
        for _ in range(n):
            logits = reference_logits(model, expected)[:, -1]
            expected_logits.append(logits)
            expected = torch.cat((expected, logits.argmax(-1, keepdim=True)), dim=1)
        for generate in (generate_greedy, generate_greedy_cached):
            ids, logits = generate(model, prompt, n)
            assert torch.equal(ids, expected)
            close(logits, torch.stack(expected_logits, dim=1))


# --- valid inputs: GQA, the running example, token accuracy ---------------------------


@PROPERTY
@given(
    seed=SEEDS, b=st.integers(0, 2), g=SIZES, r=SIZES, T=st.integers(0, 4), dtype=DTYPES
)
def test_repeat_kv_puts_each_head_next_to_itself(seed, b, g, r, T, dtype):
    x = randn(seed, b, g, T, 3, dtype=dtype)
    out = repeat_kv(x, r)
    assert out.shape == (b, g * r, T, 3) and out.dtype == dtype
    for head in range(g * r):
        assert torch.equal(out[:, head], x[:, head // r])


def test_example_inputs_are_the_chapters_numbers_and_fresh():
    first = example_inputs()
    assert first.dtype == torch.float32 and first.shape == (6, 3)
    assert first[0].tolist() == pytest.approx([0.43, 0.15, 0.89])
    assert first[5].tolist() == pytest.approx([0.05, 0.80, 0.55])
    first.zero_()
    assert example_inputs()[1].tolist() == pytest.approx([0.55, 0.87, 0.66])


@PROPERTY
@given(seed=SEEDS, b=SIZES, T=st.integers(2, 5), ignored=st.integers(0, 3))
def test_token_accuracy_counts_the_right_argmaxes(seed, b, T, ignored):
    model = tiny_model(seed)
    ids, targets = previous_token_data(b, T, 7, seed=seed)
    targets[:, 1 : 1 + ignored] = -100
    targets[0, -1] = ids[0, -2]  # at least one counted position
    with torch.no_grad():
        predicted = reference_logits(model, ids).argmax(-1).tolist()
    pairs = [
        (p == t)
        for p_row, t_row in zip(predicted, targets.tolist(), strict=True)
        for p, t in zip(p_row, t_row, strict=True)
        if t != -100
    ]
    assert token_accuracy(model, ids, targets) == pytest.approx(sum(pairs) / len(pairs))


# --- bad inputs of the later pages get the package's ValueError ----------------------


SOFTMAXES = {
    "softmax_three_pass": lambda s, tile: softmax_three_pass(s),
    "online_softmax": online_softmax,
    "online_softmax_stats": online_softmax_stats,
}


@PROPERTY
@given(
    name=st.sampled_from(sorted(SOFTMAXES)),
    bad=st.one_of(
        NOT_TENSORS,
        NOT_FLOAT.map(lambda dtype: torch.ones(2, 3, dtype=dtype)),
        st.sampled_from([torch.tensor(1.0), torch.zeros(3, 0)]),
    ),
)
def test_softmaxes_refuse_what_is_not_rows_of_float_scores(name, bad):
    with raises("attn_scores must"):
        SOFTMAXES[name](bad, 2)


@PROPERTY
@given(name=st.sampled_from(["online_softmax", "online_softmax_stats"]), bad=BAD_SIZE)
def test_online_softmaxes_refuse_a_bad_tile_size(name, bad):
    with raises("tile_size must be a positive integer, got"):
        SOFTMAXES[name](torch.zeros(2, 3), bad)


def _qkv_mistake(which: str, q: torch.Tensor) -> tuple[torch.Tensor, str]:
    """A keys tensor that does not fit ``q``, and what the message names."""
    b, T, hd = q.shape
    return {
        "dtype": (q.double(), "same dtype"),
        "device": (q.to("meta"), "same device"),
        "int": (q.long(), "keys must hold floating-point"),
        "head_dim": (torch.zeros(b, T, hd + 1), "same head_dim"),
        "batch": (torch.zeros(b + 1, T, hd), "leading"),
        "rank": (torch.zeros(hd), "at least 2 dimensions"),
        "no keys": (torch.zeros(b, 0, hd), "at least one key"),
    }[which]


QKV_MISTAKES = st.sampled_from(
    ["dtype", "device", "int", "head_dim", "batch", "rank", "no keys"]
)
TILED = {
    "attention_over_key_tiles": lambda q, k, v: attention_over_key_tiles(q, k, v, 2),
    "flash_attention": lambda q, k, v: flash_attention(q, k, v, tile_size=2),
    "weights_from_lse": lambda q, k, v: weights_from_lse(q, k, q[..., 0]),
}


@PROPERTY
@given(
    name=st.sampled_from(sorted(TILED)),
    which=QKV_MISTAKES,
    T=st.integers(1, 4),
    hd=SIZES,
)
def test_tiled_attention_refuses_keys_that_do_not_fit(name, which, T, hd):
    q = torch.zeros(2, T, hd)
    keys, message = _qkv_mistake(which, q)
    if name == "weights_from_lse" and which == "no keys":
        message = "."  # no keys: an empty tile of weights, a valid answer
        assert weights_from_lse(q, keys, q[..., 0]).shape == (2, T, 0)
        return
    with raises(message):
        TILED[name](q, keys, keys if which != "head_dim" else q)


@PROPERTY
@given(
    name=st.sampled_from(sorted(TILED)),
    slot=st.sampled_from([0, 1, 2]),
    bad=NOT_TENSORS,
)
def test_tiled_attention_refuses_non_tensors(name, slot, bad):
    args = [torch.zeros(1, 2, 3) for _ in range(3)]
    if name == "weights_from_lse":
        args[2] = torch.zeros(1, 2)  # lse
        args[slot] = bad
        with raises("(queries|keys|lse) must be a torch.Tensor"):
            weights_from_lse(*args)
        return
    args[slot] = bad
    with raises("(queries|keys|values) must be a torch.Tensor"):
        TILED[name](*args)


@PROPERTY
@given(
    arg=st.sampled_from(["tile_size", "dropout_p", "causal"]),
    bad=st.one_of(st.none(), st.text(max_size=2), st.floats(allow_nan=True)),
)
def test_flash_attention_refuses_bad_hyperparameters(arg, bad):
    q = torch.zeros(1, 3, 2)
    if arg == "dropout_p" and isinstance(bad, float) and 0 <= bad < 1:
        bad = 1.0
    if arg == "tile_size" and isinstance(bad, float) and bad.is_integer() and bad > 0:
        bad = -bad
    with raises(f"{arg} must be"):
        flash_attention(q, q, q, **{arg: bad})


@PROPERTY
@given(which=st.sampled_from(["shape", "dtype", "device", "int"]), T=st.integers(1, 4))
def test_weights_from_lse_wants_one_lse_per_query(which, T):
    q = torch.zeros(2, T, 3)
    lse = {
        "shape": torch.zeros(2, T + 1),
        "dtype": torch.zeros(2, T, dtype=torch.float64),
        "device": torch.zeros(2, T, device="meta"),
        "int": torch.zeros(2, T, dtype=torch.long),
    }[which]
    with raises("lse (must|and)|queries and lse"):
        weights_from_lse(q, q, lse)


@PROPERTY
@given(
    bad=st.one_of(BAD_SIZE, st.sampled_from([3, 5, 8])),
    heads=st.sampled_from([2, 4]),
)
def test_num_kv_heads_must_divide_num_heads(bad, heads):
    with raises("num_kv_heads must (be a positive integer|divide num_heads)"):
        GroupedQueryAttention(4, 4, 6, 0.0, num_heads=heads, num_kv_heads=bad)


@PROPERTY
@given(
    which=st.sampled_from(["shape", "rank", "values", "device", "type", "nan"]),
    T=st.integers(1, 4),
)
def test_padded_attention_refuses_a_bad_attention_mask(which, T):
    module = PaddedMultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    x = torch.zeros(2, T, 3)
    attention_mask = {
        "shape": torch.ones(2, T + 1),
        "rank": torch.ones(2, T, 1),
        "values": torch.full((2, T), 2),
        "device": torch.ones(2, T, device="meta"),
        "type": [[1] * T] * 2,
        "nan": torch.full((2, T), math.nan),
    }[which]
    with raises("attention_mask must"):
        module(x, attention_mask)


@PROPERTY
@given(
    fn=st.sampled_from([key_padding_mask, padded_causal_mask]),
    bad=st.one_of(
        NOT_TENSORS,
        st.sampled_from(
            [
                torch.ones(3),
                torch.ones(1, 2, 2),
                torch.tensor([[1, 2]]),
                -torch.ones(1, 2),
            ]
        ),
    ),
)
def test_padding_masks_refuse_what_is_not_ones_and_zeros(fn, bad):
    with raises("attention_mask must"):
        fn(bad)


@PROPERTY
@given(
    case=st.sampled_from(
        ["side", "empty", "tensor", "none", "rank0", "widths", "device", "value"]
    ),
    side=st.one_of(st.none(), st.integers(), st.text(max_size=5)),
)
def test_pad_sequences_refuses_bad_input(case, side):
    good = [torch.ones(2), torch.ones(1)]
    kwargs = {
        "side": {
            "sequences": good,
            "side": side if side not in ("left", "right") else 0,
        },
        "empty": {"sequences": []},
        "tensor": {"sequences": torch.ones(2, 3)},
        "none": {"sequences": [torch.ones(2), None]},
        "rank0": {"sequences": [torch.tensor(1.0)]},
        "widths": {"sequences": [torch.ones(2, 3), torch.ones(2, 4)]},
        "device": {"sequences": [torch.ones(2), torch.ones(2, device="meta")]},
        "value": {
            "sequences": [torch.ones(2).long(), torch.ones(1).long()],
            "value": 0.5,
        },
    }[case]
    with raises(r"(side|sequences(\[\d\])?|every sequence|value) must"):
        pad_sequences(**kwargs)


@PROPERTY
@given(
    arg=st.sampled_from(["context_length", "num_layers"]),
    bad=BAD_SIZE,
)
def test_kv_cache_refuses_bad_sizes(arg, bad):
    with raises(f"{arg} must be a positive integer"):
        KVCache(**{"context_length": 4, "num_layers": 1, arg: bad})


@PROPERTY
@given(
    which=st.sampled_from(
        ["int", "dtype", "device", "rank", "heads", "overflow", "layer", "none"]
    )
)
def test_the_cache_refuses_keys_that_do_not_fit(which):
    cache = KVCache(4, num_layers=2)
    old = torch.zeros(1, 2, 3, 5)
    cache.update(0, old, old)
    layer, keys = 0, old[:, :, :1]
    if which == "int":
        keys = keys.long()
    elif which == "dtype":
        keys = keys.double()
    elif which == "device":
        keys = keys.to("meta")
    elif which == "rank":
        keys = keys[0]
    elif which == "heads":
        keys = torch.zeros(1, 3, 1, 5)
    elif which == "overflow":
        keys = torch.zeros(1, 2, 2, 5)
    elif which == "layer":
        layer = 2
    else:
        keys = None
    with raises("(keys|layer|cache holds|cached)"):
        cache.update(layer, keys, keys)


@PROPERTY
@given(
    arg=st.sampled_from(
        ["batch", "tokens", "layers", "kv_heads", "head_dim", "bytes_per_element"]
    ),
    bad=BAD_SIZE,
)
def test_kv_cache_bytes_refuses_bad_sizes(arg, bad):
    sizes = dict.fromkeys(
        ["batch", "tokens", "layers", "kv_heads", "head_dim", "bytes_per_element"], 1
    )
    with raises(f"{arg} must be a positive integer"):
        kv_cache_bytes(**{**sizes, arg: bad})


@PROPERTY
@given(
    which=st.sampled_from(
        ["attn", "class", "tensor_attn", "cache", "int", "dtype", "device", "width"]
    ),
    T=st.integers(1, 3),
)
def test_cached_attention_refuses_what_does_not_fit(which, T):
    attn = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    x, cache = torch.zeros(1, T, 4), KVCache(6)
    if which == "attn":
        attn = SDPAMultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    elif which == "class":
        attn = MultiHeadAttention
    elif which == "tensor_attn":
        attn, x = x, attn
    elif which == "cache":
        cache = {}
    elif which == "int":
        x = x.long()
    elif which == "dtype":
        x = x.double()
    elif which == "device":
        x = x.to("meta")
    else:
        x = torch.zeros(1, T, 5)
    with raises("(attn|cache|x) (must|has)"):
        cached_attention(attn, x, cache)


GENERATORS = {
    "decode_step": lambda model, ids, n: decode_step(model, ids, KVCache(6)),
    "generate_greedy": generate_greedy,
    "generate_greedy_cached": generate_greedy_cached,
}


@PROPERTY
@given(
    name=st.sampled_from(sorted(GENERATORS)),
    which=st.sampled_from(
        ["model", "class", "swapped", "float", "rank", "vocab", "long", "device", "n"]
    ),
)
def test_generation_refuses_bad_models_ids_and_lengths(name, which):
    model, ids, n = tiny_model(0), torch.tensor([[1, 2]]), 2
    if which == "model":
        model = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    elif which == "class":
        model = TinyAttentionModel
    elif which == "swapped":
        model, ids = ids, model
    elif which == "float":
        ids = ids.float()
    elif which == "rank":
        ids = ids[0]
    elif which == "vocab":
        ids = ids + 7
    elif which == "long":
        ids = torch.zeros(1, 7, dtype=torch.long)
    elif which == "device":
        ids = ids.to("meta")
    elif name != "decode_step":
        n = -1
    else:
        return  # decode_step has no max_new_tokens
    with raises("(model|token_ids|token ids|context_length|max_new_tokens)"):
        GENERATORS[name](model, ids, n)


@PROPERTY
@given(
    bad_x=st.one_of(NOT_TENSORS, st.just(torch.zeros(2, 3, 4))),
    repeats=st.one_of(st.just(2), BAD_SIZE),
)
def test_repeat_kv_refuses_bad_input(bad_x, repeats):
    with raises("(x must be a 4-dimensional|repeats must be)"):
        repeat_kv(bad_x, repeats)


@PROPERTY
@given(
    which=st.sampled_from(
        [
            "float",
            "shape",
            "none",
            "targets",
            "ids",
            "ignored",
            "empty",
            "model",
            "meta",
        ]
    )
)
def test_token_accuracy_refuses_bad_input(which):
    model = tiny_model(0)
    ids, targets = previous_token_data(2, 4, 7)
    if which == "float":
        targets = targets.float()
    elif which == "shape":
        targets = targets[:, :3]
    elif which == "none":
        ids = None
    elif which == "targets":
        targets = targets + 7
    elif which == "ids":
        ids = ids + 7
    elif which == "ignored":
        targets = torch.full_like(targets, -100)
    elif which == "empty":
        ids, targets = ids[:0], targets[:0]
    elif which == "meta":  # shapes without values: no accuracy to count
        model, ids, targets = model.to("meta"), ids.to("meta"), targets.to("meta")
    else:
        model = TinyAttentionModel
    with raises("(model|token_ids|targets|token ids) (must|is on the meta device)"):
        token_accuracy(model, ids, targets)


@PROPERTY
@given(
    arg=st.sampled_from(["vocab_size", "d_model", "context_length", "num_heads"]),
    bad=BAD_SIZE,
)
def test_tiny_model_refuses_bad_sizes(arg, bad):
    sizes = {"vocab_size": 4, "d_model": 4, "context_length": 4, "num_heads": 2}
    with raises(f"{arg} must be"):
        TinyAttentionModel(**{**sizes, arg: bad})


@PROPERTY
@given(
    which=st.sampled_from(["float", "vocab", "long", "device", "rank"]),
    T=st.integers(1, 4),
)
def test_tiny_model_refuses_bad_token_ids(which, T):
    model = tiny_model(0, vocab=4, context_length=4)
    ids = {
        "float": torch.zeros(1, T),
        "vocab": torch.full((1, T), 4),
        "long": torch.zeros(1, 5, dtype=torch.long),
        "device": torch.zeros(1, T, dtype=torch.long, device="meta"),
        "rank": torch.zeros(T, dtype=torch.long),
    }[which]
    with raises("token_ids|token ids|context_length"):
        model(ids)


@PROPERTY
@given(
    src_bad=st.booleans(),
    bad=st.one_of(
        NOT_TENSORS,
        st.just(MultiHeadAttention),
        st.just({"W_query.weight": torch.zeros(1)}),
        st.just(MultiHeadAttention(4, 8, 6, 0.0, num_heads=2)),
    ),
)
def test_copy_weights_refuses_what_is_not_a_matching_module(src_bad, bad):
    good = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    with raises("(src|dst)"):
        copy_weights(bad, good) if src_bad else copy_weights(good, bad)


@PROPERTY
@given(name=st.sampled_from(sorted(VARIANTS)), bias=st.booleans())
def test_copy_weights_from_meta_has_no_values_to_copy(name, bias):
    src = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2, qkv_bias=bias).to("meta")
    dst = VARIANTS[name](4, 4, 6, 0.0, num_heads=2, qkv_bias=bias)
    with raises("is on the meta device, which holds no values to copy"):
        copy_weights(src, dst)


@PROPERTY
@given(
    which=st.sampled_from(["float", "vocab", "size", "none", "meta"]),
    vocab=st.integers(2, 5),
)
def test_order_blind_accuracy_refuses_bad_input(which, vocab):
    ids, _ = previous_token_data(2, 4, vocab)
    vocab_size = vocab
    if which == "float":
        ids = ids.float()
    elif which == "vocab":
        ids = ids + vocab
    elif which == "size":
        vocab_size = 0
    elif which == "meta":
        ids = ids.to("meta")
    else:
        ids = None
    with raises("(token_ids|token ids|vocab_size) (must|is on the meta device)"):
        order_blind_accuracy(ids, vocab_size)


@PROPERTY
@given(
    bad=st.one_of(
        NOT_TENSORS,
        NOT_FLOAT.map(lambda dtype: torch.ones(1, 1, 3, 3, dtype=dtype)),
        st.sampled_from([torch.zeros(2, 3), torch.zeros(1, 1, 1, 1)]),
    )
)
def test_previous_token_mass_refuses_what_is_not_weights(bad):
    with raises("attn_weights must"):
        previous_token_mass(bad)


# --- every public callable has both kinds of property ----------------------------

#: name -> (valid-input properties, bad-input properties). The test below
#: fails when attention.__all__ gains a callable that is missing here.
PROPERTIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
_MHA_BAD = (
    "test_bad_dropout_names_dropout",
    "test_bad_num_heads_names_num_heads",
    "test_module_and_input_on_different_devices",
    "test_input_dtype_must_match_the_weights",
    "test_too_many_tokens_names_context_length",
)
for _name in (
    "MultiHeadAttention",
    "FusedQKVMultiHeadAttention",
    "SDPAMultiHeadAttention",
    "TorchMultiHeadAttention",
    "FlashMultiHeadAttention",
    "GroupedQueryAttention",
):
    PROPERTIES[_name] = (
        (
            "test_multi_head_classes_equal_the_formula",
            "test_every_variant_computes_the_chapters_function",
        ),
        _MHA_BAD,
    )
PROPERTIES["GroupedQueryAttention"] = (
    PROPERTIES["GroupedQueryAttention"][0][:1],
    (*_MHA_BAD, "test_num_kv_heads_must_divide_num_heads"),
)
PROPERTIES["PaddedMultiHeadAttention"] = (
    (
        "test_multi_head_classes_equal_the_formula",
        "test_padded_attention_hides_the_padding",
    ),
    (*_MHA_BAD, "test_padded_attention_refuses_a_bad_attention_mask"),
)
_OF_ONE_BAD = (
    "test_integer_tensors_are_refused_with_a_hint",
    "test_non_tensors_are_refused",
)
_TILED_BAD = (
    "test_tiled_attention_refuses_keys_that_do_not_fit",
    "test_tiled_attention_refuses_non_tensors",
)
_SOFTMAX_BAD = ("test_softmaxes_refuse_what_is_not_rows_of_float_scores",)
_GENERATION_BAD = ("test_generation_refuses_bad_models_ids_and_lengths",)
PROPERTIES |= {
    "CausalAttention": (
        ("test_causal_attention_matches_the_reference",),
        ("test_bad_dropout_names_dropout", "test_too_many_tokens_names_context_length"),
    ),
    "CrossAttention": (
        ("test_cross_attention_matches_the_reference",),
        ("test_bad_sizes_name_the_argument", "test_qkv_bias_must_be_a_flag"),
    ),
    "MultiHeadAttentionWrapper": (
        ("test_wrapper_is_its_heads_side_by_side",),
        ("test_bad_num_heads_names_num_heads",),
    ),
    "SelfAttention_v1": (
        ("test_self_attention_v1_matches_the_reference",),
        ("test_sequence_classes_check_the_device_too",),
    ),
    "SelfAttention_v2": (
        ("test_self_attention_v2_matches_the_reference",),
        ("test_sequence_classes_check_the_device_too",),
    ),
    "TinyAttentionModel": (
        ("test_decode_step_gives_the_logits_of_the_new_tokens",),
        ("test_tiny_model_refuses_bad_sizes", "test_tiny_model_refuses_bad_token_ids"),
    ),
    "KVCache": (
        ("test_the_cache_concatenates_what_it_gets",),
        (
            "test_kv_cache_refuses_bad_sizes",
            "test_the_cache_refuses_keys_that_do_not_fit",
        ),
    ),
    "attention_over_key_tiles": (
        ("test_key_tiles_and_flash_equal_the_formula",),
        _TILED_BAD,
    ),
    "flash_attention": (
        (
            "test_key_tiles_and_flash_equal_the_formula",
            "test_flash_dropout_keeps_the_expected_output",
        ),
        (*_TILED_BAD, "test_flash_attention_refuses_bad_hyperparameters"),
    ),
    "weights_from_lse": (
        ("test_key_tiles_and_flash_equal_the_formula",),
        (*_TILED_BAD, "test_weights_from_lse_wants_one_lse_per_query"),
    ),
    "softmax_three_pass": (
        ("test_softmaxes_are_exp_over_sum_row_by_row",),
        _SOFTMAX_BAD,
    ),
    "online_softmax": (
        ("test_softmaxes_are_exp_over_sum_row_by_row",),
        (*_SOFTMAX_BAD, "test_online_softmaxes_refuse_a_bad_tile_size"),
    ),
    "online_softmax_stats": (
        ("test_softmaxes_are_exp_over_sum_row_by_row",),
        (*_SOFTMAX_BAD, "test_online_softmaxes_refuse_a_bad_tile_size"),
    ),
    "attention_weights": (
        ("test_attention_weights_are_the_modules_causal_weights",),
        ("test_attention_weights_needs_the_chapters_attention",),
    ),
    "cached_attention": (
        ("test_cached_attention_in_chunks_equals_the_formula",),
        ("test_cached_attention_refuses_what_does_not_fit",),
    ),
    "causal_mask": (
        ("test_causal_mask_hides_exactly_the_future",),
        ("test_causal_mask_refuses_bad_sizes_and_devices",),
    ),
    "register": (
        ("test_register_adds_a_working_entry_in_one_line",),
        ("test_register_refuses_bad_names_taken_names_and_non_classes",),
    ),
    "copy_weights": (
        ("test_every_variant_computes_the_chapters_function",),
        (
            "test_copy_weights_refuses_what_is_not_a_matching_module",
            "test_copy_weights_from_meta_has_no_values_to_copy",
            "test_load_mha_state_dict_wants_a_dict_of_tensors",
        ),
    ),
    "copy_weights_v2_to_v1": (
        ("test_copy_weights_v2_to_v1_makes_them_agree",),
        ("test_swapped_copy_arguments_are_named",),
    ),
    "count_parameters": (
        ("test_count_parameters_counts_every_trainable_number",),
        ("test_count_parameters_wants_a_module",),
    ),
    "parameter_breakdown": (
        ("test_count_parameters_counts_every_trainable_number",),
        ("test_count_parameters_wants_a_module",),
    ),
    "decode_step": (
        ("test_decode_step_gives_the_logits_of_the_new_tokens",),
        _GENERATION_BAD,
    ),
    "generate_greedy": (
        ("test_both_generators_pick_the_reference_argmax",),
        _GENERATION_BAD,
    ),
    "generate_greedy_cached": (
        ("test_both_generators_pick_the_reference_argmax",),
        _GENERATION_BAD,
    ),
    "dot_scores": (
        ("test_dot_scores_is_one_dot_product_per_input",),
        ("test_pairs_of_tensors_must_match",),
    ),
    "weighted_sum": (
        ("test_weighted_sum_mixes_rows",),
        ("test_pairs_of_tensors_must_match",),
    ),
    "mask_with_neg_inf": (
        ("test_mask_with_neg_inf_replaces_only_the_future",),
        _OF_ONE_BAD,
    ),
    "renormalize_masked": (
        (
            "test_renormalize_masked_equals_masking_first_below_its_limit",
            "test_renormalize_masked_fails_exactly_where_its_docstring_says",
        ),
        _OF_ONE_BAD,
    ),
    "simple_self_attention": (
        ("test_simple_self_attention_matches_the_loops",),
        _OF_ONE_BAD,
    ),
    "softmax_naive": (
        ("test_softmax_naive_is_exp_over_sum",),
        (*_OF_ONE_BAD, "test_softmax_naive_refuses_a_dim_it_lacks"),
    ),
    "example_inputs": (("test_example_inputs_are_the_chapters_numbers_and_fresh",), ()),
    "key_padding_mask": (
        ("test_padding_masks_hide_pads_and_the_future",),
        ("test_padding_masks_refuse_what_is_not_ones_and_zeros",),
    ),
    "padded_causal_mask": (
        ("test_padding_masks_hide_pads_and_the_future",),
        ("test_padding_masks_refuse_what_is_not_ones_and_zeros",),
    ),
    "pad_sequences": (
        ("test_pad_sequences_places_every_token",),
        ("test_pad_sequences_refuses_bad_input",),
    ),
    "kv_cache_bytes": (
        ("test_kv_cache_bytes_is_what_a_full_cache_holds",),
        ("test_kv_cache_bytes_refuses_bad_sizes",),
    ),
    "repeat_kv": (
        ("test_repeat_kv_puts_each_head_next_to_itself",),
        ("test_repeat_kv_refuses_bad_input",),
    ),
    "order_blind_accuracy": (
        ("test_order_blind_accuracy_matches_counting",),
        ("test_order_blind_accuracy_refuses_bad_input",),
    ),
    "previous_token_data": (
        ("test_previous_token_data_targets_are_the_previous_tokens",),
        ("test_seeds_must_be_integers",),
    ),
    "previous_token_mass": (
        ("test_previous_token_mass_averages_the_subdiagonal",),
        ("test_previous_token_mass_refuses_what_is_not_weights",),
    ),
    "token_accuracy": (
        ("test_token_accuracy_counts_the_right_argmaxes",),
        ("test_token_accuracy_refuses_bad_input",),
    ),
    "train_model": (
        ("test_train_model_returns_finite_losses",),
        (
            "test_train_model_refuses_a_bad_lr",
            "test_targets_outside_the_vocabulary_are_named",
        ),
    ),
}
#: Callables that take no argument, so no input can be bad.
NO_ARGUMENTS = {"example_inputs"}


def test_every_public_callable_has_a_valid_and_a_bad_input_property():
    public = {name for name in attention.__all__ if callable(getattr(attention, name))}
    assert public == set(PROPERTIES), (
        f"no properties for {sorted(public - set(PROPERTIES))}; "
        f"stale entries {sorted(set(PROPERTIES) - public)}"
    )
    for name, (valid, bad) in PROPERTIES.items():
        assert valid, f"{name} has no valid-input property"
        assert bad or name in NO_ARGUMENTS, f"{name} has no bad-input property"
        for test in (*valid, *bad):
            assert callable(globals().get(test)), f"{name}: {test} does not exist"
    assert not NO_ARGUMENTS - {
        n for n in public if not inspect.signature(getattr(attention, n)).parameters
    }
