"""No timing, speed-up or memory size typed into a page's prose.

A measured number typed into a sentence goes stale. The book computes it in a
cell that prints it (from a live measurement, or from the stored run read with
``attention.bench.stored_run()``), and binds every sentence that characterises
it to it: the cell words the sentence with ``attention.bench.compare``, or
states it with ``attention.bench.claim(condition, sentence)``, which fails the
build when the numbers stop supporting it.

Every ``book/**/*.md`` is read with markdown-it (MyST's parser); code cells and
blocks, listings, inline code, roles (``{doc}`...```) and math are not prose.
A duration (``482 ms``), a speed-up (``3.6x``, ``2.7 times as long``) or a size
(``12 GB``) left in the prose fails, unless it is a fact of a format or a spec
listed in ``ALLOWED`` with its reason. ``typed_numbers``'s doctest is the table
the FlashAttention page once typed (issue 27).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "book").glob("**/*.md"))

_NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?"
PATTERNS = {
    "duration": re.compile(
        _NUMBER + r"\s?(?:ms|µs|us|ns|s|sec|secs|seconds?|minutes?)(?![\w-])"
    ),
    "speed-up": re.compile(
        _NUMBER + r"(?:[x×](?![\w-])|\s?[x×]\s+(?:faster|slower|quicker|the\b))"
        r"|" + _NUMBER + r"\s+times\s+(?:faster|slower|quicker|as\s+(?:long|fast))"
    ),
    "memory": re.compile(_NUMBER + r"\s?(?:[KMGT]i?B|bytes)(?![\w-])"),
}

#: (page, matched text): a size that is a fact, not a measurement, and why.
ALLOWED: dict[tuple[str, str], str] = {
    ("chapter3/3-5-causal-attention.md", "36 bytes"): (
        "context_length**2 bytes of the mask buffer at 6 tokens: arithmetic"
    ),
    ("chapter3/3-5-causal-attention.md", "1 MiB"): (
        "context_length**2 bytes at 1,024 tokens: arithmetic"
    ),
    ("chapter3/3-5-causal-attention.md", "68.7 GB"): (
        "a float mask, 4 bytes per pair, at 131,072 tokens: arithmetic"
    ),
    ("chapter3/3-5-causal-attention.md", "17.2 GB"): (
        "context_length**2 bytes at 131,072 tokens: arithmetic"
    ),
    ("beyond/buffers-and-devices.md", "1 MiB"): (
        "a boolean (1024, 1024) mask: 1,024**2 bytes, computed by the next cell"
    ),
}

#: Fenced blocks whose body is code or a listing, never prose.
_CODE_FENCES = re.compile(
    r"^(?:\{(?:code-cell|code-block|code|sourcecode|literalinclude|pysource"
    r"|math|raw|eval-rst|doctest|testcode|testoutput|mermaid|graphviz)\}"
    r"|[\w+-]*)(?:\s|$)"
)
_OPTION = re.compile(r"^:[\w-]+:.*$", re.MULTILINE)

_MD = (
    MarkdownIt("commonmark")
    .enable("table")
    .use(front_matter_plugin)
    .use(dollarmath_plugin, double_inline=True)
)


def prose(markdown: str) -> list[tuple[int, str]]:
    """The prose of a MyST page, as (line number, text) pairs.

    The line is where the paragraph (or table cell) starts.

    Code, math and roles are left out; a directive that holds prose (a note,
    an exercise) is read like the page.

    >>> page = '''# Title
    ... The run took 482 ms, `12 ms` in code.
    ...
    ... ```{code-cell} python
    ... print("1 ms")
    ... ```
    ...
    ... ```{note}
    ... :class: dropdown
    ... A note of 3 s.
    ... ```
    ... '''
    >>> for line, text in prose(page):
    ...     print(line, text)
    1 Title
    2 The run took 482 ms,  in code.
    10 A note of 3 s.
    """
    found = []
    for token in _MD.parse(markdown):
        line = token.map[0] + 1 if token.map else 0
        if token.type == "fence":
            info = token.info.strip()
            if info.startswith("{") and not _CODE_FENCES.match(info):
                body = _OPTION.sub("", token.content)
                found += [(line + n, text) for n, text in prose(body)]
            continue
        if token.type != "inline":
            continue
        text = "".join(
            " " if child.type in ("softbreak", "hardbreak") else child.content
            for child in token.children or ()
            if child.type in ("text", "softbreak", "hardbreak")
        )
        found.append((line, text))
    return found


def typed_numbers(markdown: str) -> list[tuple[int, str, str]]:
    """(line, kind, match) for each timing, speed-up or size typed in prose.

    >>> old_flash_table = '''
    ... | | chapter | SDPA | tiled |
    ... |---|---|---|---|
    ... | forward | 482 ms | 189 ms | 290 ms |
    ...
    ... SDPA is 3.6x faster, and 2.05× in forward plus backward; the chapter's
    ... class would need
    ... 12 GiB and takes 2.7 times as long.
    ... '''
    >>> for hit in typed_numbers(old_flash_table):
    ...     print(hit)
    (4, 'duration', '482 ms')
    (4, 'duration', '189 ms')
    (4, 'duration', '290 ms')
    (6, 'speed-up', '3.6x')
    (6, 'speed-up', '2.05×')
    (6, 'speed-up', '2.7 times as long')
    (6, 'memory', '12 GiB')
    >>> typed_numbers("A `(64, 64)` tile, 8,192 tokens, 12 heads, 1024 x 1024.")
    []
    >>> typed_numbers("See {doc}`the 12 ms run <timing>`, $2 s$ in math.")  # role, math
    []
    """
    hits = []
    for line, text in prose(markdown):
        for kind, pattern in PATTERNS.items():
            hits += [(line, kind, m.group(0)) for m in pattern.finditer(text)]
    return sorted(hits, key=lambda hit: hit[0])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_typed_timing_or_size(page):
    name = str(page.relative_to(ROOT / "book"))
    hits = [
        f"paragraph at line {line}: {kind} {match!r}"
        for line, kind, match in typed_numbers(page.read_text("utf-8"))
        if (name, match) not in ALLOWED
    ]
    assert not hits, (
        f"{name} types measured numbers into its prose. Let a cell compute and "
        "print each one (attention.bench.stored_run() for the stored run), and "
        "bind each sentence about them: word it with attention.bench.compare, "
        "or state it with attention.bench.claim(condition, sentence):\n"
        + "\n".join(hits)
    )


def test_allowlist_is_used():
    """Every allowed entry still matches its page: no stale exceptions."""
    for (name, match), reason in ALLOWED.items():
        hits = typed_numbers((ROOT / "book" / name).read_text("utf-8"))
        assert match in [m for _, _, m in hits], (name, match, reason)


_CLOCK = re.compile(r"perf_counter|benchmark\.Timer|\btimeit\b|time\.time\(")
_TAGGED = re.compile(r"^:?tags:.*\bnondeterministic\b", re.MULTILINE)


def test_cells_that_read_a_clock_are_tagged_nondeterministic():
    """``make repro`` compares two builds' outputs, except in cells so tagged."""
    untagged = [
        f"{page.relative_to(ROOT)}:{token.map[0] + 1}"
        for page in PAGES
        for token in _MD.parse(page.read_text("utf-8"))
        if token.type == "fence"
        and token.info.startswith("{code-cell}")
        and _CLOCK.search(token.content)
        and not _TAGGED.search(token.content)
    ]
    assert not untagged, untagged
