"""Unit tests of book/_ext/pysource.py: what a ``:diff:`` highlights."""

from __future__ import annotations

import textwrap

from pysource import changed_lines, source_without_docstrings

import attention

OLD = textwrap.dedent("""\
    class A:
        def __init__(self, d_in, dropout):
            check_positive(d_in=d_in)
            self.dropout = dropout
            self.W = Linear(d_in, d_in)

        def forward(self, x):
            return self.W(x)
    """).splitlines()


def test_a_new_line_of_computation_is_highlighted_and_its_comment_is_not_needed():
    new = OLD[:5] + ["        self.scale = d_in**-0.5  # new"] + OLD[5:]
    assert changed_lines(new, OLD) == [6]


def test_a_new_comment_alone_is_not_a_change():
    new = [line + "  # a shape comment" if "return" in line else line for line in OLD]
    assert changed_lines(new, OLD) == []


def test_headers_checks_and_stored_arguments_are_never_highlighted():
    new = list(OLD)
    new[1] = "    def __init__(self, d_in, dropout, num_heads):"
    new[2] = "        check_positive(d_in=d_in, num_heads=num_heads)"
    new.insert(4, "        self.num_heads = num_heads")
    assert changed_lines(new, OLD) == []


def test_an_argument_stored_under_another_name_is_a_change():
    """``self.dropout_p = dropout`` is what the SDPA class does instead of a layer."""
    new = [line.replace("self.dropout =", "self.dropout_p =") for line in OLD]
    assert changed_lines(new, OLD) == [4]


def test_the_sdpa_listing_highlights_where_its_dropout_goes():
    new, _, _ = source_without_docstrings(attention.SDPAMultiHeadAttention)
    old, _, _ = source_without_docstrings(attention.MultiHeadAttention)
    highlighted = {new[n - 1].strip() for n in changed_lines(new, old)}
    assert any(line.startswith("self.dropout_p = dropout") for line in highlighted)
