"""The exercises of chapter 3: 3.1 to 3.3.

Exercise 3.1 asks for :func:`~attention.copy_weights_v2_to_v1` itself: the
grader runs the reader's copy and compares what the ``SelfAttention_v1``
computes afterwards. Exercises 3.2 and 3.3 ask for a function that *builds*
a module: :func:`wrapper_2d` and :func:`gpt2_attention` are their
references. The grader seeds torch before it calls a builder, so that the
reader's module and the reference draw the same weights, and compares what
the two modules compute; it restores the reader's random state afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..data import example_inputs
from ..multihead import MultiHeadAttention, MultiHeadAttentionWrapper, count_parameters
from ..self_attention import SelfAttention_v1, SelfAttention_v2, copy_weights_v2_to_v1
from .grader import Case, Exercise, Mistake, Words

#: The seed the grader sets before it calls a builder (the chapter's seed).
SEED = 123


def wrapper_2d() -> MultiHeadAttentionWrapper:
    """The chapter's two-head wrapper, made to give 2-dimensional context vectors.

    Book section: 3.6.1, exercise 3.2. The wrapper's ``d_out`` is the width
    of *one head*, and the heads' outputs are concatenated: two heads give
    ``2 * d_out`` numbers per token, so a width of 2 needs ``d_out=1``.

    Shape:
        The module's input: ``(b, T, 3)`` with ``T <= 6``
        Its output: ``(b, T, 2)``

    Returns:
        A new :class:`~attention.MultiHeadAttentionWrapper` with
        ``d_in=3, d_out=1, context_length=6, dropout=0.0, num_heads=2``.

    Example:
        >>> mha_2d = wrapper_2d()
        >>> mha_2d(example_inputs()[None]).shape  # (1, 6, 3) -> (1, 6, 2)
        torch.Size([1, 6, 2])
    """
    return MultiHeadAttentionWrapper(
        d_in=3, d_out=1, context_length=6, dropout=0.0, num_heads=2
    )


def gpt2_attention(qkv_bias: bool = False) -> MultiHeadAttention:
    """A :class:`~attention.MultiHeadAttention` the size of the smallest GPT-2.

    Book section: 3.6.2, exercise 3.3. Twelve heads share a width of 768
    (``d_in = d_out``, so that layers stack), 64 numbers per head, over a
    context of 1,024 tokens; no dropout.

    Args:
        qkv_bias: give the query, key and value projections a bias, as
            OpenAI's released GPT-2 weights have. Default: ``False``.

    Shape:
        The module's input: ``(b, T, 768)`` with ``T <= 1024``
        Its output: ``(b, T, 768)``

    Returns:
        A new module with ``d_in=768, d_out=768, context_length=1024,
        dropout=0.0, num_heads=12``.

    Example:
        >>> gpt2_mha = gpt2_attention()
        >>> gpt2_mha.head_dim, count_parameters(gpt2_mha)
        (64, 2360064)
        >>> count_parameters(gpt2_attention(qkv_bias=True))
        2362368
    """
    return MultiHeadAttention(
        d_in=768,
        d_out=768,
        context_length=1024,
        dropout=0.0,
        num_heads=12,
        qkv_bias=qkv_bias,
    )


# -- 3.1: copy_weights_v2_to_v1 ------------------------------------------------


def _copy_case(en, zh_CN, d_in, d_out, x=None, num_tokens=4, dtype=torch.float32):
    """Two modules with different weights, and the input to run ``sa_v1`` on."""
    # Seeded for repeatable cases, without moving the reader's random state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(789)
        sa_v2 = SelfAttention_v2(d_in, d_out).to(dtype)
        sa_v1 = SelfAttention_v1(d_in, d_out).to(dtype)
        if x is None:
            x = torch.rand(num_tokens, d_in, dtype=dtype)  # (T, d_in)
    return Case(en, zh_CN, (sa_v2, sa_v1, x))


def _copy_cases() -> list[Case]:
    return [
        # First, because a copy without the transpose raises no error here.
        _copy_case(
            "d_in equal to d_out (4 and 4)", "d_in 与 d_out 相等（都是 4）", 4, 4
        ),
        _copy_case(
            "the chapter's sizes: d_in=3, d_out=2, the six tokens of inputs",
            "本章的尺寸：d_in=3，d_out=2，inputs 的六个词元",
            3,
            2,
            x=example_inputs(),
        ),
        _copy_case(
            "d_out wider than d_in (2 and 5)", "d_out 比 d_in 宽（2 和 5）", 2, 5
        ),
        _copy_case("one token", "只有一个词元", 3, 2, num_tokens=1),
        _copy_case(
            "float64 modules and input",
            "float64 的模块和输入",
            3,
            3,
            dtype=torch.float64,
        ),
    ]


def _after_copy(fn: Callable, case: Case) -> torch.Tensor:
    """Copy with ``fn(sa_v2, sa_v1)``; then what ``sa_v1`` computes, ``(T, d_out)``."""
    sa_v2, sa_v1, x = case.args
    fn(sa_v2, sa_v1)
    with torch.no_grad():
        return sa_v1(x)


@torch.no_grad()
def _not_transposed(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight)


@torch.no_grad()
def _key_from_query(sa_v2, sa_v1):
    sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
    sa_v1.W_key.copy_(sa_v2.W_query.weight.T)  # the slip: W_query again
    sa_v1.W_value.copy_(sa_v2.W_value.weight.T)


@torch.no_grad()
def _value_forgotten(sa_v2, sa_v1):
    sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
    sa_v1.W_key.copy_(sa_v2.W_key.weight.T)


@torch.no_grad()
def _into_v2(sa_v2, sa_v1):
    # The other direction: sa_v1 keeps its own weights.
    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v2, name).weight.copy_(getattr(sa_v1, name).T)


_COPY_MISTAKES = (
    Mistake(
        Words(
            en="your copy is not transposed. nn.Linear stores its weight as "
            "(d_out, d_in) and computes x @ weight.T; SelfAttention_v1 computes "
            "x @ W with W of shape (d_in, d_out). Copy weight.T: a reshape or "
            "view only regroups the numbers in memory order, it does not swap "
            "rows and columns.",
            zh_CN="你复制的权重没有转置。nn.Linear 把权重存成 (d_out, d_in)，计算 "
            "x @ weight.T；SelfAttention_v1 计算 x @ W，W 的形状是 (d_in, d_out)。"
            "要复制 weight.T：reshape 或 view 只是按内存顺序把数重新分组，"
            "并不交换行与列。",
        ),
        _not_transposed,
    ),
    Mistake(
        Words(
            en="your sa_v1.W_key holds the query weights. Copy each matrix into "
            "its namesake: W_query into W_query, W_key into W_key, W_value into "
            "W_value.",
            zh_CN="你的 sa_v1.W_key 里是查询的权重。每个矩阵都要复制到同名的位置："
            "W_query 到 W_query，W_key 到 W_key，W_value 到 W_value。",
        ),
        _key_from_query,
    ),
    Mistake(
        Words(
            en="your sa_v1.W_value still holds its own random weights: copy "
            "W_value too.",
            zh_CN="你的 sa_v1.W_value 仍是它自己的随机权重：W_value 也要复制。",
        ),
        _value_forgotten,
    ),
    Mistake(
        Words(
            en="sa_v1 still computes with its own weights: your function "
            "changed none of the parameters of the sa_v1 it was given. Copy "
            "from sa_v2, the first argument, into sa_v1's own W_query, W_key and "
            "W_value; a copy the other way, or a new module bound to the name "
            "sa_v1, leaves the caller's sa_v1 as it was.",
            zh_CN="sa_v1 仍在用它自己的权重计算：你的函数没有改动传进来的 sa_v1 的"
            "任何参数。应当从第一个参数 sa_v2 复制到 sa_v1 自己的 W_query、W_key "
            "和 W_value；反方向的复制，或者把名字 sa_v1 绑定到一个新模块，都不会"
            "改变调用者手里的 sa_v1。",
        ),
        _into_v2,
    ),
)


# -- 3.2: wrapper_2d --------------------------------------------------------------


def _wrapper_cases() -> list[Case]:
    # The input the returned module runs on: (b, T, d_in=3)
    inputs = example_inputs()
    return [
        Case(
            "the chapter's batch: two copies of inputs, (2, 6, 3)",
            "本章的批次：inputs 的两份拷贝，(2, 6, 3)",
            (torch.stack((inputs, inputs)),),
        ),
        Case("one token, (1, 1, 3)", "只有一个词元，(1, 1, 3)", (inputs[None, :1],)),
        Case(
            "a batch of one, the first four tokens, (1, 4, 3)",
            "批次大小为 1，前四个词元，(1, 4, 3)",
            (inputs[None, :4],),
        ),
    ]


def _seeded(build: Callable, *args, **kwargs):
    """``build(*args, **kwargs)`` after ``torch.manual_seed(SEED)``; the
    caller's random state is restored afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return build(*args, **kwargs)


def _wrapper_output(fn: Callable, case: Case) -> torch.Tensor:
    """Build the module with ``fn()`` under the seed; its output on the case's input."""
    (x,) = case.args
    module = _seeded(fn)
    return module(x)


def _four_wide():
    return MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)


def _one_head():
    return MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=1)


def _split_class():
    return MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)


_WRAPPER_MISTAKES = (
    Mistake(
        Words(
            en="your module gives 4 numbers per token. The wrapper's d_out is the "
            "width of one head, and two heads are concatenated: set d_out=1.",
            zh_CN="你的模块给每个词元输出 4 个数。包装类的 d_out 是单个头的宽度，"
            "两个头的输出会拼接起来：应设 d_out=1。",
        ),
        _four_wide,
    ),
    Mistake(
        Words(
            en="your module has one head of width 2. Keep num_heads=2 and make each "
            "head narrower: d_out=1.",
            zh_CN="你的模块只有一个宽度为 2 的头。保持 num_heads=2，让每个头变窄："
            "d_out=1。",
        ),
        _one_head,
    ),
    Mistake(
        Words(
            en="your function builds MultiHeadAttention (section 3.6.2), whose d_out "
            "is the total width. The exercise keeps MultiHeadAttentionWrapper, "
            "whose d_out is one head's width: d_out=1.",
            zh_CN="你的函数构造的是 MultiHeadAttention（第 3.6.2 节），它的 d_out "
            "是总宽度。这道练习用的是 MultiHeadAttentionWrapper，它的 d_out 是"
            "单个头的宽度：d_out=1。",
        ),
        _split_class,
    ),
)


# -- 3.3: gpt2_attention ----------------------------------------------------------


def _gpt2_cases() -> list[Case]:
    # kwargs go to the builder; args[0] is the input the module runs on,
    # (b, T, 768), seeded apart from the reader's random state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        one_token = torch.randn(1, 1, 768)
        two = torch.randn(2, 5, 768)
        three = torch.randn(1, 3, 768)
    return [
        Case("one token, qkv_bias=False", "只有一个词元，qkv_bias=False", (one_token,)),
        Case(
            "a batch of two sequences of 5 tokens, qkv_bias=False",
            "两条各 5 个词元的序列组成的批次，qkv_bias=False",
            (two,),
        ),
        Case(
            "qkv_bias=True, as in GPT-2's released weights; 3 tokens",
            "qkv_bias=True，与 GPT-2 公开的权重一致；3 个词元",
            (three,),
            {"qkv_bias": True},
        ),
    ]


def _gpt2_summary(fn: Callable, case: Case) -> tuple:
    """Build the module with ``fn(**kwargs)`` under the seed, and describe it:
    its class's name, its number of trainable parameters, the shape of its
    causal mask, and its output on ``args[0]``, ``(b, T, 768)``."""
    (x,) = case.args
    module = _seeded(fn, **case.kwargs)
    mask = getattr(module, "mask", None)
    mask_shape = None if mask is None else tuple(mask.shape)
    return (
        type(module).__name__,
        count_parameters(module),
        mask_shape,
        _seeded(module, x),  # the seed matters only if dropout is on
    )


def _length_768(qkv_bias=False):
    return MultiHeadAttention(768, 768, 768, 0.0, num_heads=12, qkv_bias=qkv_bias)


def _64_heads(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=64, qkv_bias=qkv_bias)


def _wrapper_of_12(qkv_bias=False):
    return MultiHeadAttentionWrapper(
        768, 64, 1024, 0.0, num_heads=12, qkv_bias=qkv_bias
    )


def _bias_ignored(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)


def _training_dropout(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.1, num_heads=12, qkv_bias=qkv_bias)


_GPT2_MISTAKES = (
    Mistake(
        Words(
            en="your causal mask is 768 x 768: context_length is the longest "
            "sequence, 1,024 tokens; 768 is the width (d_in and d_out).",
            zh_CN="你的因果掩码是 768 x 768：context_length 是最长的序列，"
            "1,024 个词元；768 是宽度（d_in 和 d_out）。",
        ),
        _length_768,
    ),
    Mistake(
        Words(
            en="your module has 64 heads of width 12. GPT-2 small has num_heads=12; "
            "each head's width, 64, follows from d_out // num_heads.",
            zh_CN="你的模块有 64 个头，每个宽 12。最小的 GPT-2 是 num_heads=12；"
            "每个头的宽度 64 由 d_out // num_heads 得出。",
        ),
        _64_heads,
    ),
    Mistake(
        Words(
            en="your function builds MultiHeadAttentionWrapper, whose d_out is one "
            "head's width. Build MultiHeadAttention, whose d_out is the total "
            "width, 768.",
            zh_CN="你的函数构造的是 MultiHeadAttentionWrapper，它的 d_out 是单个头的"
            "宽度。应构造 MultiHeadAttention，它的 d_out 是总宽度 768。",
        ),
        _wrapper_of_12,
    ),
    Mistake(
        Words(
            en="your module has no query, key and value biases although "
            "qkv_bias=True: pass the argument on to MultiHeadAttention.",
            zh_CN="qkv_bias=True，你的模块却没有查询、键、值的偏置：把这个参数传给 "
            "MultiHeadAttention。",
        ),
        _bias_ignored,
    ),
    Mistake(
        Words(
            en="your module drops attention weights: the exercise asks for "
            "dropout=0.0. (GPT-2 trains with 0.1, and then every call gives "
            "another output.)",
            zh_CN="你的模块会随机丢弃注意力权重：这道练习要求 dropout=0.0。"
            "（GPT-2 训练时用 0.1，这样每次调用的输出都不同。）",
        ),
        _training_dropout,
    ),
)


EXERCISES = (
    Exercise(
        name="copy_weights_v2_to_v1",
        reference=copy_weights_v2_to_v1,
        cases=_copy_cases,
        mistakes=_COPY_MISTAKES,
        run=_after_copy,
    ),
    Exercise(
        name="wrapper_2d",
        reference=wrapper_2d,
        cases=_wrapper_cases,
        mistakes=_WRAPPER_MISTAKES,
        run=_wrapper_output,
    ),
    Exercise(
        name="gpt2_attention",
        reference=gpt2_attention,
        cases=_gpt2_cases,
        mistakes=_GPT2_MISTAKES,
        run=_gpt2_summary,
    ),
)
