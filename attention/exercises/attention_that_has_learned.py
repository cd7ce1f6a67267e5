"""The exercises of the page attention-that-has-learned."""

from __future__ import annotations

import torch

from ..learned import TinyAttentionModel, attention_weights, previous_token_mass
from .grader import Case, Exercise, Mistake, Words


def _causal_weights(*shape: int, seed: int) -> torch.Tensor:
    """Softmax rows of random scores under a causal mask: ``(b, h, T, T)``."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(*shape, generator=generator) * 2
    num_tokens = shape[-1]
    future = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


def _full_weights(*shape: int, seed: int) -> torch.Tensor:
    """Softmax rows of random scores, no mask: every key has some weight."""
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=generator), dim=-1)


def _previous_and_itself() -> torch.Tensor:
    # Head 0 looks at the previous token only, head 1 at itself only: (1, 2, 4, 4)
    weights = torch.zeros(1, 2, 4, 4)
    weights[0, 0] = torch.eye(4).roll(-1, dims=1)  # row i -> key i - 1 ...
    weights[0, 0, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0])  # ... row 0 -> key 0
    weights[0, 1] = torch.eye(4)
    return weights


def _mass_cases() -> list[Case]:
    # args: (attn_weights,), shape (b, h, T, T)
    return [
        Case(
            "3 sequences, 2 heads, 5 tokens, causal weights",
            "3 条序列，2 个头，5 个词元，因果权重",
            (_causal_weights(3, 2, 5, 5, seed=0),),
        ),
        Case(
            "one head on the previous token, one on itself",
            "一个头只看前一个词元，一个头只看自己",
            (_previous_and_itself(),),
        ),
        Case(
            "weights without a causal mask (every key has weight)",
            "没有因果掩码的权重（每个键都有权重）",
            (_full_weights(2, 3, 4, 4, seed=1),),
        ),
        Case(
            "two tokens: one query counts",
            "两个词元：只有一个查询计入",
            (_causal_weights(4, 2, 2, 2, seed=2),),
        ),
        Case(
            "a batch of one, one head",
            "批次大小为 1，一个头",
            (_causal_weights(1, 1, 6, 6, seed=3),),
        ),
        Case(
            "float64",
            "float64",
            (_causal_weights(2, 2, 5, 5, seed=4).double(),),
        ),
    ]


def _model(num_heads: int = 2, positions: str = "learned", seed: int = 0):
    torch.manual_seed(seed)
    return TinyAttentionModel(10, 8, 6, num_heads=num_heads, positions=positions)


def _ids(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(10, shape, generator=generator)


def _weights_cases() -> list[Case]:
    # args: (model, token_ids); d_model = 8, context_length = 6, vocab 10
    return [
        Case(
            "2 heads, 3 sequences of 6 tokens",
            "2 个头，3 条 6 个词元的序列",
            (_model(), _ids(3, 6, seed=0)),
        ),
        Case(
            "sequences shorter than the context: 4 tokens",
            "序列比上下文短：4 个词元",
            (_model(seed=1), _ids(2, 4, seed=1)),
        ),
        Case("one token", "只有一个词元", (_model(seed=2), _ids(2, 1, seed=2))),
        Case(
            "a batch of one, 4 heads",
            "批次大小为 1，4 个头",
            (_model(num_heads=4, seed=3), _ids(1, 6, seed=3)),
        ),
        Case(
            "one head",
            "一个头",
            (_model(num_heads=1, seed=4), _ids(2, 5, seed=4)),
        ),
        Case(
            "a model without position embeddings",
            "没有位置嵌入的模型",
            (_model(positions="none", seed=5), _ids(2, 6, seed=5)),
        ),
        Case(
            "a float64 model",
            "float64 模型",
            (_model(seed=6).double(), _ids(2, 6, seed=6)),
        ),
    ]


# --- the mistakes readers make, written as readers write them ---------------


def _mass_above(attn_weights):
    # The diagonal above the main one: key i + 1.
    return attn_weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def _mass_all_queries(attn_weights):
    # Entries [i, i - 1] for every i: i = 0 reads key -1, the last one.
    rows = torch.arange(attn_weights.shape[-1])
    return attn_weights[..., rows, rows - 1].mean(dim=(0, 2))


def _mass_over_heads(attn_weights):
    return attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 1))


def _mass_summed(attn_weights):
    return attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=(0, 2))


def _heads(model, token_ids):
    """Queries and keys split into heads the right way: (b, h, T, hd) each."""
    attn = model.attn
    x = model.embed(token_ids)
    b, num_tokens, _ = x.shape

    def split(t):
        return t.view(b, num_tokens, attn.num_heads, attn.head_dim).transpose(1, 2)

    return split(attn.W_query(x)), split(attn.W_key(x))


def _softmax_causal(scores, dim=-1):
    num_tokens = scores.shape[-1]
    future = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=dim)


@torch.no_grad()
def _weights_heads_viewed(model, token_ids):
    # (b, T, d) viewed straight as (b, h, T, hd): features of other tokens mix in.
    attn = model.attn
    x = model.embed(token_ids)
    b, num_tokens, _ = x.shape
    shape = (b, attn.num_heads, num_tokens, attn.head_dim)
    queries, keys = attn.W_query(x).view(shape), attn.W_key(x).view(shape)
    scores = queries @ keys.transpose(-2, -1) / attn.head_dim**0.5
    return _softmax_causal(scores)


@torch.no_grad()
def _weights_scaled_by_d_model(model, token_ids):
    queries, keys = _heads(model, token_ids)
    scores = queries @ keys.transpose(-2, -1) / model.attn.d_out**0.5
    return _softmax_causal(scores)


@torch.no_grad()
def _weights_no_mask(model, token_ids):
    queries, keys = _heads(model, token_ids)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1)


@torch.no_grad()
def _weights_mask_after_softmax(model, token_ids):
    queries, keys = _heads(model, token_ids)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    weights = torch.softmax(scores, dim=-1)
    num_tokens = weights.shape[-1]
    future = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    return weights.masked_fill(future, 0.0)


@torch.no_grad()
def _weights_over_queries(model, token_ids):
    queries, keys = _heads(model, token_ids)
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    return _softmax_causal(scores, dim=-2)


@torch.no_grad()
def _weights_no_positions(model, token_ids):
    # The token embeddings alone: the learned positions left out.
    attn = model.attn
    x = model.tok_emb(token_ids)
    b, num_tokens, _ = x.shape

    def split(t):
        return t.view(b, num_tokens, attn.num_heads, attn.head_dim).transpose(1, 2)

    queries, keys = split(attn.W_query(x)), split(attn.W_key(x))
    return _softmax_causal(queries @ keys.transpose(-2, -1) / attn.head_dim**0.5)


EXERCISES = (
    Exercise(
        name="previous_token_mass",
        reference=previous_token_mass,
        cases=_mass_cases,
        mistakes=(
            Mistake(
                Words(
                    en="you read the diagonal above the main one, key i + 1: the "
                    "next token, not the previous one. Take offset=-1 with "
                    "dim1=-2 (queries) and dim2=-1 (keys).",
                    zh_CN="你读的是主对角线上方的那条对角线，即键 i + 1："
                    "那是下一个词元，"
                    "不是前一个。应取 offset=-1，且 dim1=-2（查询）、dim2=-1（键）。",
                ),
                _mass_above,
            ),
            Mistake(
                Words(
                    en="you counted query 0, whose index i - 1 = -1 reads the last "
                    "key. Query 0 has no previous token: average over queries 1 "
                    "to T - 1 only.",
                    zh_CN="你把查询 0 也算进去了，它的下标 i - 1 = -1 "
                    "读到的是最后一个键。"
                    "查询 0 没有前一个词元：只对查询 1 到 T - 1 求平均。",
                ),
                _mass_all_queries,
            ),
            Mistake(
                Words(
                    en="you averaged over the batch and the heads, which leaves one "
                    "number per query. Average over the batch and the queries, "
                    "dims (0, 2), to keep one number per head.",
                    zh_CN="你对批次和头求了平均，结果是每个查询一个数。"
                    "应对批次和查询求平均，"
                    "即 dim=(0, 2)，这样每个头留下一个数。",
                ),
                _mass_over_heads,
            ),
            Mistake(
                Words(
                    en="your masses are sums, not means: a mass lies between 0 "
                    "and 1. Use mean over the batch and the queries.",
                    zh_CN="你得到的是总和，不是平均：这个比例应在 0 到 1 之间。"
                    "对批次和查询用 mean。",
                ),
                _mass_summed,
            ),
        ),
    ),
    Exercise(
        name="attention_weights",
        reference=attention_weights,
        cases=_weights_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your heads mix features of different tokens: a view straight "
                    "to (b, h, T, head_dim) cuts each row in the wrong order. View "
                    "as (b, T, h, head_dim), then transpose(1, 2).",
                    zh_CN="你的头混入了不同词元的特征：直接 view 成 (b, h, T, "
                    "head_dim) "
                    "会按错误的顺序切分每一行。先 view 成 (b, T, h, head_dim)，"
                    "再 transpose(1, 2)。",
                ),
                _weights_heads_viewed,
            ),
            Mistake(
                Words(
                    en="you scaled by the square root of d_model, the width of all "
                    "heads together. Each head's scores are dot products of "
                    "head_dim numbers: divide by sqrt(head_dim).",
                    zh_CN="你按 d_model（所有头合在一起的宽度）的平方根做了缩放。"
                    "每个头的"
                    "注意力分数是 head_dim 个数的点积：应除以 sqrt(head_dim)。",
                ),
                _weights_scaled_by_d_model,
            ),
            Mistake(
                Words(
                    en="keys after the query get weight: no causal mask took "
                    "effect. `masked_fill` returns a new tensor: assign its "
                    "result, before the softmax.",
                    zh_CN="查询之后的键也得到了权重：因果掩码没有生效。`masked_fill` "
                    "返回一个新张量：在 softmax 之前把结果赋给变量。",
                ),
                _weights_no_mask,
            ),
            Mistake(
                Words(
                    en="the future gets 0, but the rows no longer sum to 1: the mask "
                    "came after the softmax. Fill the future scores with -inf "
                    "before the softmax.",
                    zh_CN="未来的位置得到了 0，但每行之和不再是 1：掩码加在了 softmax "
                    "之后。应在 softmax 之前用 -inf 填充未来位置的分数。",
                ),
                _weights_mask_after_softmax,
            ),
            Mistake(
                Words(
                    en="each column of your weights sums to 1, not each row: the "
                    "softmax ran over the queries. Take it over the keys, dim=-1.",
                    zh_CN="你的权重是每一列和为 1，而不是每一行：softmax 沿查询进行了。"
                    "应沿键做 softmax，即 dim=-1。",
                ),
                _weights_over_queries,
            ),
            Mistake(
                Words(
                    en="your weights ignore where the tokens are: the position "
                    "embeddings were left out. model.embed(token_ids) adds them to "
                    "the token embeddings.",
                    zh_CN="你的权重没有考虑词元所在的位置：漏掉了位置嵌入。"
                    "model.embed(token_ids) 会把它们加到词元嵌入上。",
                ),
                _weights_no_positions,
            ),
        ),
    ),
)
