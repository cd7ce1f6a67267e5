"""The readers' questions (``book/_data/questions.yaml``): complete, sourced,
and each one pointing at an anchor that stands on its page.

The built page, and that every link lands on its answer in both editions,
is checked in ``tests/site/test_site_questions.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from reader_questions import DATA, FIELDS, load_questions

BOOK = Path(__file__).resolve().parents[1] / "book"
QUESTIONS = load_questions(BOOK / DATA)
CJK = re.compile(r"[\u4e00-\u9fff]")
ANCHOR = re.compile(r"^q-[a-z0-9]+(-[a-z0-9]+)*$")

#: At least this many questions for each page (issue 43: 12 for 3.3 to 3.6
#: and for every page beyond the chapter, 5 for 3.1, 3.2 and the summary).
MINIMUM = {
    "chapter3/3-1-long-sequences": 5,
    "chapter3/3-2-attention-mechanisms": 5,
    "chapter3/3-3-self-attention": 12,
    "chapter3/3-4-trainable-weights": 12,
    "chapter3/3-5-causal-attention": 12,
    "chapter3/3-6-multi-head-attention": 12,
    "chapter3/summary": 5,
    **{f"beyond/{path.stem}": 12 for path in sorted((BOOK / "beyond").glob("*.md"))},
}


def test_every_entry_has_every_field():
    for entry in QUESTIONS:
        assert set(entry) == set(FIELDS), entry


@pytest.mark.parametrize("page", MINIMUM)
def test_each_page_answers_its_share_of_questions(page):
    count = Counter(entry["page"] for entry in QUESTIONS)[page]
    assert count >= MINIMUM[page], (
        f"{page}: {count} questions, at least {MINIMUM[page]}"
    )


def test_each_anchor_stands_on_its_page():
    problems = []
    for entry in QUESTIONS:
        anchor, page = entry["anchor"], entry["page"]
        source = BOOK / f"{page}.md"
        if not ANCHOR.match(anchor):
            problems.append(f"{anchor!r}: not of the form q-words-with-hyphens")
        elif not source.is_file():
            problems.append(f"{anchor!r}: no page {source}")
        elif f"({anchor})=" not in source.read_text(encoding="utf-8"):
            problems.append(f"{anchor!r}: no target ({anchor})= in {page}.md")
    assert not problems, "\n".join(problems)


def test_an_anchor_belongs_to_one_page():
    pages: dict[str, set[str]] = {}
    for entry in QUESTIONS:
        pages.setdefault(entry["anchor"], set()).add(entry["page"])
    shared = {anchor: p for anchor, p in pages.items() if len(p) > 1}
    assert not shared


def test_questions_are_sourced_and_not_repeated():
    for entry in QUESTIONS:
        assert entry["source"].startswith(("https://", "http://")), entry["source"]
    repeated = [
        q for q, n in Counter(e["question"] for e in QUESTIONS).items() if n > 1
    ]
    assert not repeated


def test_each_question_has_its_chinese_form():
    english = [e["question"] for e in QUESTIONS if not CJK.search(e["question_zh"])]
    assert not english, f"question_zh without Chinese: {english}"


def test_entries_follow_the_reading_order_of_their_pages():
    order = [line.split()[2] for line in (BOOK / DATA).read_text().splitlines()
             if line.startswith("# --- ")]  # fmt: skip
    pages = [entry["page"] for entry in QUESTIONS]
    positions = [order.index(page) for page in pages]
    assert positions == sorted(positions)
