"""Answers to the chapter's exercises 3.1 to 3.3.

The wrong answers come from the threads the pages cite: ``nn.Linear``'s
transposed weight (the discuss.pytorch.org thread of q-3-4-linear-transposed),
the two meanings of ``d_out`` (rasbt/LLMs-from-scratch issue 443 and pull
request 859), heads that must divide the width (google-research/bert issue
316), and the chapter's own printouts.
"""

from __future__ import annotations

import torch
from torch import nn

from attention import MultiHeadAttention, MultiHeadAttentionWrapper, SelfAttention_v1

from . import Answers, Wrong

# -- 3.1 --------------------------------------------------------------------------


def copy_by_state_dict(sa_v2, sa_v1):
    # load_state_dict copies without tracking gradients by itself.
    transposed = {name: p.T for name, p in sa_v2.state_dict().items()}
    sa_v1.load_state_dict(
        {name.removesuffix(".weight"): w for name, w in transposed.items()}
    )


def copy_as_new_parameters(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        weight = getattr(sa_v2, name).weight  # (d_out, d_in)
        setattr(sa_v1, name, nn.Parameter(weight.detach().T.clone()))


def no_transpose(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight)
        sa_v1.W_key.copy_(sa_v2.W_key.weight)
        sa_v1.W_value.copy_(sa_v2.W_value.weight)


def reshape_for_transpose(sa_v2, sa_v1):
    d_in, d_out = sa_v1.W_query.shape
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.view(d_in, d_out))
        sa_v1.W_key.copy_(sa_v2.W_key.weight.view(d_in, d_out))
        sa_v1.W_value.copy_(sa_v2.W_value.weight.view(d_in, d_out))


def query_copied_into_keys(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)


def copied_the_other_way(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v2.W_query.weight.copy_(sa_v1.W_query.T)
        sa_v2.W_key.weight.copy_(sa_v1.W_key.T)
        sa_v2.W_value.weight.copy_(sa_v1.W_value.T)


def a_new_module_under_the_old_name(sa_v2, sa_v1):
    sa_v1 = SelfAttention_v1(sa_v2.d_in, sa_v2.d_out)  # rebinds the local name only
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
    return sa_v1


def copy_while_tracking_gradients(sa_v2, sa_v1):
    sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
    sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
    sa_v1.W_value.copy_(sa_v2.W_value.weight.T)


def assign_a_plain_tensor(sa_v2, sa_v1):
    sa_v1.W_query = sa_v2.W_query.weight.T
    sa_v1.W_key = sa_v2.W_key.weight.T
    sa_v1.W_value = sa_v2.W_value.weight.T


# -- 3.2 --------------------------------------------------------------------------


def wrapper_by_position():
    return MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)


def wrapper_from_the_width():
    width, num_heads = 2, 2
    return MultiHeadAttentionWrapper(
        d_in=3,
        d_out=width // num_heads,  # the wrapper's d_out is one head's width
        context_length=6,
        dropout=0.0,
        num_heads=num_heads,
    )


def wrapper_d_out_2():
    return MultiHeadAttentionWrapper(
        d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2
    )


def wrapper_one_head():
    return MultiHeadAttentionWrapper(
        d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=1
    )


def split_class_instead():
    return MultiHeadAttention(
        d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2
    )


# -- 3.3 --------------------------------------------------------------------------

GPT_CONFIG_124M = {
    "emb_dim": 768,
    "context_length": 1024,
    "n_heads": 12,
    "drop_rate": 0.0,
}


def gpt2_from_a_config(qkv_bias=False):
    cfg = GPT_CONFIG_124M
    return MultiHeadAttention(
        d_in=cfg["emb_dim"],
        d_out=cfg["emb_dim"],
        context_length=cfg["context_length"],
        dropout=cfg["drop_rate"],
        num_heads=cfg["n_heads"],
        qkv_bias=qkv_bias,
    )


def gpt2_by_position(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.0, 12, qkv_bias)


def width_as_context_length(qkv_bias=False):
    return MultiHeadAttention(
        768, 768, context_length=768, dropout=0.0, num_heads=12, qkv_bias=qkv_bias
    )


def head_width_as_num_heads(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=64, qkv_bias=qkv_bias)


def head_width_as_d_out(qkv_bias=False):
    return MultiHeadAttention(768, 64, 1024, 0.0, num_heads=12, qkv_bias=qkv_bias)


def wrapper_of_12_heads(qkv_bias=False):
    return MultiHeadAttentionWrapper(
        768, 64, 1024, 0.0, num_heads=12, qkv_bias=qkv_bias
    )


def bias_argument_dropped(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)


def gpt2_training_dropout(qkv_bias=False):
    return MultiHeadAttention(768, 768, 1024, 0.1, num_heads=12, qkv_bias=qkv_bias)


ANSWERS = [
    Answers(
        "copy_weights_v2_to_v1",
        right=(copy_by_state_dict, copy_as_new_parameters),
        wrong={
            "nn.Linear's weight copied without the transpose": Wrong(
                no_transpose, "weight.T", "转置"
            ),
            "a view where a transpose belongs": Wrong(
                reshape_for_transpose, "reshape or view", "reshape 或 view"
            ),
            "the query weights copied into the keys": Wrong(
                query_copied_into_keys, "W_key holds the query weights", "W_key"
            ),
            "sa_v1 copied into sa_v2": Wrong(
                copied_the_other_way, "Copy from sa_v2", "复制到 sa_v1"
            ),
            "a new module bound to the parameter's name": Wrong(
                a_new_module_under_the_old_name, "a new module bound", "新模块"
            ),
            "copy_ on a parameter outside torch.no_grad()": Wrong(
                copy_while_tracking_gradients, "leaf Variable that requires grad"
            ),
            "a plain tensor assigned to a parameter": Wrong(
                assign_a_plain_tensor, "torch.nn.Parameter or None expected"
            ),
        },
    ),
    Answers(
        "wrapper_2d",
        right=(wrapper_by_position, wrapper_from_the_width),
        wrong={
            "d_out=2 per head: 4-dimensional vectors": Wrong(
                wrapper_d_out_2, "set d_out=1", "d_out=1"
            ),
            "one head of width 2": Wrong(
                wrapper_one_head, "Keep num_heads=2", "num_heads=2"
            ),
            "MultiHeadAttention's d_out read as the wrapper's": Wrong(
                split_class_instead, "d_out is the total width", "总宽度"
            ),
        },
    ),
    Answers(
        "gpt2_attention",
        right=(gpt2_from_a_config, gpt2_by_position),
        wrong={
            "the width as context_length": Wrong(
                width_as_context_length, "context_length is the longest", "最长的序列"
            ),
            "the head width as num_heads": Wrong(
                head_width_as_num_heads, "num_heads=12", "num_heads=12"
            ),
            "the head width as d_out: num_heads must divide d_out": Wrong(
                head_width_as_d_out, "d_out must be divisible by num_heads"
            ),
            "the wrapper, whose d_out is one head's width": Wrong(
                wrapper_of_12_heads, "Build MultiHeadAttention", "总宽度"
            ),
            "qkv_bias not passed on": Wrong(
                bias_argument_dropped, "pass the argument on", "qkv_bias=True"
            ),
            "GPT-2's training dropout of 0.1": Wrong(
                gpt2_training_dropout, "dropout=0.0", "dropout=0.0"
            ),
        },
    ),
]
