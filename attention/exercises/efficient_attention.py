"""The exercises of the page efficient-attention.

Two pieces of the fused classes of ``attention.efficient``: loading the
chapter's three projections into one fused layer
(``FusedQKVMultiHeadAttention.load_mha_state_dict``) and the forward pass of
the SDPA variant (``SDPAMultiHeadAttention.forward``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..causal import causal_mask
from ..data import example_inputs
from ..efficient import FusedQKVMultiHeadAttention, SDPAMultiHeadAttention
from ..multihead import MultiHeadAttention
from ..variants import mha_state_dict
from .grader import Case, Exercise, Mistake, Words


def _built(cls, seed, *args, dtype=torch.float32, **kwargs):
    """``cls(*args, **kwargs)`` drawn from ``seed``, leaving the reader's RNG alone."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return cls(*args, **kwargs).to(dtype)


# --- load the chapter's weights into the fused layer ---------------------------


def _load_cases() -> list[Case]:
    def pair(seed, d_in, d_out, num_heads, qkv_bias=False, dtype=torch.float32):
        sizes = (d_in, d_out, 6, 0.0, num_heads)
        source = _built(MultiHeadAttention, seed, *sizes, qkv_bias, dtype=dtype)
        target = _built(
            FusedQKVMultiHeadAttention, seed + 1, *sizes, qkv_bias, dtype=dtype
        )
        return (target, {k: v.clone() for k, v in mha_state_dict(source).items()})

    return [
        Case(
            "the chapter's sizes: d_in 3, d_out 2, 2 heads",
            "本章的尺寸：d_in 3、d_out 2、2 个头",
            pair(20, 3, 2, 2),
        ),
        Case(
            "d_in 5, d_out 8, 4 heads, float64",
            "d_in 5、d_out 8、4 个头，float64",
            pair(21, 5, 8, 4, dtype=torch.float64),
        ),
        Case(
            "with qkv_bias=True, 2 heads",
            "qkv_bias=True，2 个头",
            pair(22, 4, 6, 2, qkv_bias=True),
        ),
        Case("one head", "只有一个头", pair(23, 4, 4, 1)),
    ]


def _loaded(fn, case: Case) -> tuple:
    """Run ``fn(module, state)``; what is compared: the module's four tensors."""
    module = case.args[0]
    fn(*case.args, **case.kwargs)
    bias = module.qkv.bias
    return (
        module.qkv.weight.detach(),
        None if bias is None else bias.detach(),
        module.out_proj.weight.detach(),
        module.out_proj.bias.detach(),
    )


def _per_head(module, state):
    # q, k, v interleaved head by head: GPT-NeoX's layout, not this layer's.
    h, hd = module.num_heads, module.head_dim
    names = ("W_query", "W_key", "W_value")
    rows = torch.stack([state[f"{n}.weight"].view(h, hd, -1) for n in names], dim=1)
    with torch.no_grad():
        module.qkv.weight.copy_(rows.reshape(3 * h * hd, -1))  # (h, 3, hd, d_in)
        module.out_proj.weight.copy_(state["out_proj.weight"])
        module.out_proj.bias.copy_(state["out_proj.bias"])
        if module.qkv.bias is not None:
            biases = [state[f"{n}.bias"].view(h, hd) for n in names]
            module.qkv.bias.copy_(torch.stack(biases, dim=1).reshape(-1))


def _weights_only(module, state):
    names = ("W_query", "W_key", "W_value")
    with torch.no_grad():
        module.qkv.weight.copy_(torch.cat([state[f"{n}.weight"] for n in names]))
        module.out_proj.weight.copy_(state["out_proj.weight"])
        module.out_proj.bias.copy_(state["out_proj.bias"])


def _side_by_side(module, state):
    names = ("W_query", "W_key", "W_value")
    weight = torch.cat([state[f"{n}.weight"] for n in names], dim=1)  # (d_out, 3 d_in)
    module.qkv.weight = nn.Parameter(weight)
    _rest(module, state)


def _transposes_side_by_side(module, state):
    names = ("W_query", "W_key", "W_value")
    weight = torch.cat([state[f"{n}.weight"].T for n in names], dim=1)  # x @ W's
    module.qkv.weight = nn.Parameter(weight)
    _rest(module, state)


def _rest(module, state):
    with torch.no_grad():
        module.out_proj.weight.copy_(state["out_proj.weight"])
        module.out_proj.bias.copy_(state["out_proj.bias"])
        if module.qkv.bias is not None:
            names = ("W_query", "W_key", "W_value")
            module.qkv.bias.copy_(torch.cat([state[f"{n}.bias"] for n in names]))


# --- the forward pass of the SDPA variant --------------------------------------


def _forward_cases() -> list[Case]:
    inputs = example_inputs()
    gen = torch.Generator().manual_seed(30)
    return [
        Case(
            "the chapter's batch: 2 x 6 tokens, d_in 3, d_out 2, 2 heads",
            "本章的批次：2 x 6 个词元，d_in 3、d_out 2、2 个头",
            (
                _built(SDPAMultiHeadAttention, 123, 3, 2, 6, 0.0, 2),
                torch.stack((inputs, inputs)),
            ),
        ),
        Case(
            "4 heads, d_in 5, d_out 8, 5 tokens of a context of 8",
            "4 个头，d_in 5、d_out 8，上下文长度 8 中的 5 个词元",
            (
                _built(SDPAMultiHeadAttention, 31, 5, 8, 8, 0.0, 4),
                torch.randn(2, 5, 5, generator=gen),
            ),
        ),
        Case(
            "one token, a batch of one, float64",
            "一个词元，批次大小为 1，float64",
            (
                _built(
                    SDPAMultiHeadAttention, 32, 4, 6, 4, 0.0, 3, dtype=torch.float64
                ),
                torch.randn(1, 1, 4, generator=gen, dtype=torch.float64),
            ),
        ),
        Case(
            "one head, 3 tokens, float64",
            "一个头，3 个词元，float64",
            (
                _built(
                    SDPAMultiHeadAttention, 33, 4, 4, 3, 0.0, 1, dtype=torch.float64
                ),
                torch.randn(2, 3, 4, generator=gen, dtype=torch.float64),
            ),
        ),
    ]


def _sdpa_forward(module, x, slip):
    """The SDPA variant's forward pass, with one ``slip`` made on purpose."""
    b, num_tokens, _ = x.shape
    h, hd = module.num_heads, module.head_dim
    qkv = module.qkv(x)  # (b, T, 3 * d_out)
    if slip == "heads first":
        queries, keys, values = qkv.view(b, num_tokens, h, 3, hd).unbind(3)
    else:
        queries, keys, values = qkv.view(b, num_tokens, 3, h, hd).unbind(2)
    if slip != "no transpose":  # (b, T, h, hd) -> (b, h, T, hd)
        queries, keys, values = (t.transpose(1, 2) for t in (queries, keys, values))
    if slip == "scaled twice":
        queries = queries / hd**0.5
    if slip == "hidden as attend":
        mask = causal_mask(num_tokens, device=x.device)  # True = hidden
        context_vec = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask
        )
    else:
        causal = slip != "not causal"
        context_vec = F.scaled_dot_product_attention(
            queries, keys, values, is_causal=causal
        )
    if slip not in ("no transpose", "not merged back"):
        context_vec = context_vec.transpose(1, 2)  # (b, T, h, hd)
    return module.out_proj(context_vec.reshape(b, num_tokens, module.d_out))


def _slipped(slip):
    def wrong(module, x):
        return _sdpa_forward(module, x, slip)

    return wrong


EXERCISES = (
    Exercise(
        name="load_fused_weights",
        reference=FusedQKVMultiHeadAttention.load_mha_state_dict,
        cases=_load_cases,
        run=_loaded,
        mistakes=(
            Mistake(
                Words(
                    en="your qkv rows interleave query, key and value head by head "
                    "(GPT-NeoX's layout). This layer stacks all query rows, then "
                    "all key rows, then all value rows: torch.cat of the three "
                    "weights.",
                    zh_CN="你的 qkv 各行按头交错排列查询、键和值（GPT-NeoX 的布局）。"
                    "这一层先放全部查询行，再放全部键行，最后放全部值行："
                    "对三个权重做 torch.cat。",
                ),
                _per_head,
            ),
            Mistake(
                Words(
                    en="the qkv bias was left as it was. With qkv_bias=True the three "
                    "biases are stacked too, in the same order as the weights.",
                    zh_CN="qkv 的偏置没有改动。qkv_bias=True 时，三个偏置也要按与权重"
                    "相同的顺序拼接起来。",
                ),
                _weights_only,
            ),
            Mistake(
                Words(
                    en="your weight puts the three matrices side by side (dim=1). "
                    "nn.Linear stores W^T, of shape (out, in): stack the three by "
                    "rows, torch.cat(..., dim=0).",
                    zh_CN="你的权重把三个矩阵左右并排（dim=1）。nn.Linear 存的是 W^T，"
                    "形状为 (out, in)：要按行上下拼接，torch.cat(..., dim=0)。",
                ),
                _side_by_side,
            ),
            Mistake(
                Words(
                    en="your weight is [W_q W_k W_v] side by side, the layout of "
                    "x @ W. nn.Linear's weight is its transpose: stack the stored "
                    "weights by rows, without .T.",
                    zh_CN="你的权重是左右并排的 [W_q W_k W_v]，即 x @ W 的布局。"
                    "nn.Linear 的权重是它的转置：把存储的权重按行拼接，不要 .T。",
                ),
                _transposes_side_by_side,
            ),
        ),
    ),
    Exercise(
        name="sdpa_forward",
        reference=SDPAMultiHeadAttention.forward,
        cases=_forward_cases,
        mistakes=(
            Mistake(
                Words(
                    en="you split the projection as (b, T, h, 3, hd). Its features "
                    "are query | key | value, each cut into heads: "
                    "view(b, T, 3, h, hd), then unbind(2).",
                    zh_CN="你把投影拆成了 (b, T, h, 3, hd)。"
                    "它的特征依次是查询 | 键 | 值，每一段再切成多个头："
                    "view(b, T, 3, h, hd)，然后 unbind(2)。",
                ),
                _slipped("heads first"),
            ),
            Mistake(
                Words(
                    en="your call gets (b, T, h, hd): SDPA then attends across heads, "
                    "not tokens. transpose(1, 2) to (b, h, T, hd) before the call, "
                    "and back after it.",
                    zh_CN="你传给 SDPA 的是 (b, T, h, hd)：它会在头之间而不是词元之间"
                    "计算注意力。调用前用 transpose(1, 2) 变成 (b, h, T, hd)，"
                    "调用后再换回来。",
                ),
                _slipped("no transpose"),
            ),
            Mistake(
                Words(
                    en="you merged the heads straight from (b, h, T, hd). "
                    "transpose(1, 2) to (b, T, h, hd) first, then reshape to "
                    "(b, T, d_out).",
                    zh_CN="你直接从 (b, h, T, hd) 合并了各头。先用 transpose(1, 2) "
                    "变成 (b, T, h, hd)，再 reshape 成 (b, T, d_out)。",
                ),
                _slipped("not merged back"),
            ),
            Mistake(
                Words(
                    en="you passed causal_mask as attn_mask. In SDPA a boolean True "
                    "means attend, the opposite of this package: pass is_causal=True "
                    "(or ~causal_mask(T)).",
                    zh_CN="你把 causal_mask 作为 attn_mask 传入。在 SDPA 中布尔值 True "
                    "表示可以关注，与本书的包相反：传 is_causal=True（或 "
                    "~causal_mask(T)）。",
                ),
                _slipped("hidden as attend"),
            ),
            Mistake(
                Words(
                    en="your attention sees the future: pass is_causal=True.",
                    zh_CN="你的注意力看到了未来的词元：传入 is_causal=True。",
                ),
                _slipped("not causal"),
            ),
            Mistake(
                Words(
                    en="your scores are scaled twice: SDPA divides by sqrt(hd) "
                    "itself, so pass the queries as they are.",
                    zh_CN="你的分数被缩放了两次：SDPA 自己会除以 sqrt(hd)，"
                    "所以直接传入原始的查询。",
                ),
                _slipped("scaled twice"),
            ),
        ),
    ),
)
