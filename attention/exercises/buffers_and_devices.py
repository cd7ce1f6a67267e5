"""The exercises of the page buffers-and-devices.

The mask that ``CausalAttention`` registers as a buffer: building it where it
will be used (:func:`~attention.causal_mask`, on the ``meta`` device that
stands in for a GPU), and reading it back in ``forward``
(``CausalAttention.forward``), in float32 and float64.
"""

from __future__ import annotations

import torch

from ..causal import CausalAttention, causal_mask
from ..data import example_inputs
from .grader import Case, Exercise, Mistake, Words

# --- causal_mask ----------------------------------------------------------------


def _causal_mask_cases() -> list[Case]:
    return [
        Case("5 tokens", "5 个词元", (5,)),
        Case("one token", "只有一个词元", (1,)),
        Case("no tokens at all", "一个词元也没有", (0,)),
        Case(
            "4 tokens on the meta device (a stand-in for a GPU)",
            "meta 设备上的 4 个词元（代替 GPU）",
            (4,),
            {"device": "meta"},
        ),
        Case(
            "3 tokens, device=torch.device('cpu')",
            "3 个词元，device=torch.device('cpu')",
            (3,),
            {"device": torch.device("cpu")},
        ),
    ]


def _where_and_what(fn, case: Case) -> object:
    """The mask; on the meta device, which has no values: its device, dtype, shape."""
    mask = fn(*case.args, **case.kwargs)
    if case.kwargs.get("device") != "meta" or not isinstance(mask, torch.Tensor):
        return mask
    return (mask.device.type, mask.dtype, tuple(mask.shape))


def _float_triangle(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, device=device)
    return torch.triu(ones, diagonal=1)


def _uint8_triangle(num_tokens, device=None):
    return _float_triangle(num_tokens, device).to(torch.uint8)


def _diagonal_hidden(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.triu(ones)


def _keep_triangle(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.tril(ones)


def _on_the_cpu(num_tokens, device=None):
    return causal_mask(num_tokens)


# --- CausalAttention.forward --------------------------------------------------


def _built(seed, *args, dtype=torch.float32, **kwargs):
    """A ``CausalAttention`` drawn from ``seed``, leaving the reader's RNG alone."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return CausalAttention(*args, **kwargs).to(dtype)


def _forward_cases() -> list[Case]:
    inputs = example_inputs()
    gen = torch.Generator().manual_seed(40)
    return [
        Case(
            "the chapter's batch: 2 x 6 tokens, context 6",
            "本章的批次：2 x 6 个词元，上下文长度 6",
            (_built(123, 3, 2, 6, 0.0), torch.stack((inputs, inputs))),
        ),
        Case(
            "4 tokens of a context of 8",
            "上下文长度 8 中的 4 个词元",
            (_built(41, 3, 4, 8, 0.0), torch.randn(2, 4, 3, generator=gen)),
        ),
        Case(
            "one token, a batch of one",
            "一个词元，批次大小为 1",
            (_built(42, 3, 2, 5, 0.0), torch.randn(1, 1, 3, generator=gen)),
        ),
        Case(
            "a module moved to float64 (its mask stays boolean), with qkv_bias",
            "转成 float64 的模块（掩码仍是布尔型），带 qkv_bias",
            (
                _built(43, 4, 3, 6, 0.0, qkv_bias=True, dtype=torch.float64),
                torch.randn(2, 5, 4, generator=gen, dtype=torch.float64),
            ),
        ),
    ]


def _forward(module, x, slip):
    """``CausalAttention.forward`` with one ``slip`` made on purpose."""
    num_tokens = x.shape[1]
    queries, keys, values = module.W_query(x), module.W_key(x), module.W_value(x)
    scores = queries @ keys.transpose(1, 2)  # (b, T, T)
    hidden = module.mask[:num_tokens, :num_tokens]
    if slip == "keep polarity":
        hidden = ~hidden
    if slip == "not assigned":
        scores.masked_fill(hidden, -torch.inf)  # the result is thrown away
    elif slip != "after softmax":
        scores = scores.masked_fill(hidden, -torch.inf)
    scale = 1.0 if slip == "not scaled" else keys.shape[-1] ** 0.5
    weights = torch.softmax(scores / scale, dim=1 if slip == "query axis" else -1)
    if slip == "after softmax":
        weights = weights.masked_fill(hidden, 0.0)
    return weights @ values


def _slipped(slip):
    def wrong(module, x):
        return _forward(module, x, slip)

    return wrong


EXERCISES = (
    Exercise(
        name="causal_mask",
        reference=causal_mask,
        cases=_causal_mask_cases,
        run=_where_and_what,
        mistakes=(
            Mistake(
                Words(
                    en="your mask is a float triangle of ones, as in the printed "
                    "book. masked_fill takes only boolean masks: build it with "
                    "dtype=torch.bool.",
                    zh_CN="你的掩码是由 1 组成的浮点三角，和印刷版书中一样。"
                    "masked_fill 只接受布尔掩码：用 dtype=torch.bool 构造它。",
                ),
                _float_triangle,
            ),
            Mistake(
                Words(
                    en="your mask is uint8, like old GPT-2 checkpoints' attn.bias. "
                    "PyTorch now refuses uint8 masks: build it with dtype=torch.bool.",
                    zh_CN="你的掩码是 uint8，就像旧 GPT-2 检查点里的 attn.bias。"
                    "PyTorch 现在拒绝 uint8 掩码：用 dtype=torch.bool 构造它。",
                ),
                _uint8_triangle,
            ),
            Mistake(
                Words(
                    en="your mask hides the diagonal: a token could not see itself. "
                    "Start above it, torch.triu(..., diagonal=1).",
                    zh_CN="你的掩码遮住了对角线：词元看不到它自己。从对角线上方开始，"
                    "torch.triu(..., diagonal=1)。",
                ),
                _diagonal_hidden,
            ),
            Mistake(
                Words(
                    en="your mask marks what a query may see (tril). In this package "
                    "True marks the hidden future: torch.triu(..., diagonal=1).",
                    zh_CN="你的掩码标出的是查询可以看到的位置（tril）。在本书的包中 "
                    "True 标出被遮住的未来：torch.triu(..., diagonal=1)。",
                ),
                _keep_triangle,
            ),
            Mistake(
                Words(
                    en="your mask stays on the CPU whatever `device` says. Build it "
                    "where it will be used: pass device=device to torch.ones.",
                    zh_CN="无论 `device` 是什么，你的掩码都留在 CPU 上。"
                    "要在使用它的设备上构造：把 device=device 传给 torch.ones。",
                ),
                _on_the_cpu,
            ),
        ),
    ),
    Exercise(
        name="causal_attention_forward",
        reference=CausalAttention.forward,
        cases=_forward_cases,
        mistakes=(
            Mistake(
                Words(
                    en="your scores were never masked: masked_fill returns a new "
                    "tensor, so assign its result (scores = scores.masked_fill(...)).",
                    zh_CN="你的分数根本没有被遮住：masked_fill 返回一个新张量，要把结果"
                    "赋回去（scores = scores.masked_fill(...)）。",
                ),
                _slipped("not assigned"),
            ),
            Mistake(
                Words(
                    en="you masked after the softmax: the rows no longer sum to 1. "
                    "Fill the scores with -inf before the softmax.",
                    zh_CN="你在 softmax 之后才加掩码：各行的和不再是 1。"
                    "要在 softmax 之前把分数填成 -inf。",
                ),
                _slipped("after softmax"),
            ),
            Mistake(
                Words(
                    en="your softmax runs over the queries (dim=1). Each query's "
                    "weights over the keys must sum to 1: softmax over dim=-1.",
                    zh_CN="你的 softmax 是沿查询（dim=1）计算的。每个查询对所有键的权重"
                    "之和应为 1：沿 dim=-1 做 softmax。",
                ),
                _slipped("query axis"),
            ),
            Mistake(
                Words(
                    en="you hid the past instead of the future. The buffer's True "
                    "marks what is hidden: pass it to masked_fill as it is, "
                    "without ~.",
                    zh_CN="你遮住的是过去而不是未来。缓冲区中的 True 表示被遮住的位置："
                    "直接传给 masked_fill，不要加 ~。",
                ),
                _slipped("keep polarity"),
            ),
            Mistake(
                Words(
                    en="your scores are not scaled: divide them by sqrt(d_out) "
                    "(keys.shape[-1] ** 0.5) before the softmax.",
                    zh_CN="你的分数没有缩放：在 softmax 之前除以 sqrt(d_out)"
                    "（keys.shape[-1] ** 0.5）。",
                ),
                _slipped("not scaled"),
            ),
        ),
    ),
)
