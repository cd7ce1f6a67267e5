"""Unit tests of book/_ext/i18n_code.py: comments become messages, code stays."""

from __future__ import annotations

import tokenize

import pytest
from i18n_code import code_tokens, find_comments, same_code, translate_code

CELL = """\
import torch

# Attention scores: one dot product
# per pair of tokens.
attn_scores = inputs @ inputs.T  # (6, 6)
text = "# a hash in a string"  # not a comment inside the string
    # noqa: E501
print(attn_scores)  # prints a 6x6 tensor
%config InlineBackend.figure_formats = ['svg']  # SVG figures: magics tokenize
"""


def test_comments_are_found_with_tokenize():
    found = find_comments(CELL)
    assert [c.text for c in found] == [
        "Attention scores: one dot product\nper pair of tokens.",
        "not a comment inside the string",
        "prints a 6x6 tensor",
        "SVG figures: magics tokenize",
    ]
    assert [(c.first, c.last, c.trailing) for c in found] == [
        (3, 4, False),
        (6, 6, True),
        (8, 8, True),
        (9, 9, True),
    ]


def test_comments_at_other_columns_are_separate_messages_kept_at_their_column():
    code = "# Outer.\nif True:\n    # Inner.\n    x = 1\n"
    assert [c.text for c in find_comments(code)] == ["Outer.", "Inner."]
    new, _ = translate_code(code, {"Inner.": "里面。"}.get)  # keeps its indent
    assert new == "# Outer.\nif True:\n    # 里面。\n    x = 1\n"


def test_translation_keeps_code_and_indentation():
    table = {
        "Attention scores: one dot product\nper pair of tokens.": (
            "注意力分数：\n每对词元一个点积。"
        ),
        "prints a 6x6 tensor": "打印一个 6×6 张量",
    }
    new, line_map = translate_code(CELL, table.get)
    assert "# 注意力分数：\n# 每对词元一个点积。\n" in new
    assert "print(attn_scores)  # 打印一个 6×6 张量\n" in new
    assert "# not a comment inside the string" in new  # not in the table: kept
    assert same_code(CELL, new)
    assert line_map[5] == 5 and line_map[8] == 8


def test_a_longer_translation_shifts_the_line_map():
    code = "# One line.\nx = 1  # One\n"
    table = {"One line.": "第一行\n第二行", "One": "一\n二"}
    new, line_map = translate_code(code, table.get)
    assert new == "# 第一行\n# 第二行\nx = 1  # 一 二\n"  # a trailing one: one line
    assert line_map == {1: 1, 2: 3}


def test_same_code_sees_any_code_change():
    assert same_code("x = 1  # a\n", "x = 1  # 乙\n")
    assert not same_code("x = 1\n", "x = 2\n")
    assert not same_code("x = 1\n", "x = 1; y = 2\n")
    assert not same_code("x = 'a'\n", "x = 'b'\n")


def test_untokenizable_code_raises():
    with pytest.raises((tokenize.TokenError, SyntaxError)):
        code_tokens('x = """never closed\n')
