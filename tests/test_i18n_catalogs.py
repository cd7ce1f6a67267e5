"""The 简体中文 catalogs are complete: every message translated, none fuzzy.

Sphinx shows the English text for a message that is untranslated or fuzzy
(a fuzzy entry is an old translation of a message whose English changed), so
a page silently falls back to English. This test names each such entry, with
its catalog, so a translator knows exactly what is left. After an English
edit, ``make update-po`` refreshes the catalogs and this test lists the new
work.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sphinx_intl.catalog import load_po

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CATALOGS = BOOK / "locales" / "zh_CN" / "LC_MESSAGES"
# Folders of book/ that hold no pages.
NOT_PAGES = {"_ext", "_static", "_templates", "locales"}
PAGES = sorted(
    p.relative_to(BOOK).with_suffix("").as_posix()
    for p in BOOK.rglob("*.md")
    if not NOT_PAGES & set(p.relative_to(BOOK).parts)
)
# The catalogs of no page: the text the build adds (notebooks.po), Sphinx's own.
OTHERS = sorted(
    {p.relative_to(CATALOGS).with_suffix("").as_posix() for p in CATALOGS.rglob("*.po")}
    - set(PAGES)
)


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def test_the_text_the_build_adds_has_a_catalog():
    assert "notebooks" in OTHERS, (
        "no notebooks.po: the download notes would stay English"
    )


@pytest.mark.parametrize("catalog", PAGES + OTHERS)
def test_catalog_is_fully_translated(catalog):
    path = CATALOGS / f"{catalog}.po"
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing; run `make update-po`")
    messages = [m for m in load_po(path, abort_invalid=True) if m.id]
    assert messages, f"{path.relative_to(ROOT)} holds no message"
    untranslated = [m for m in messages if not m.fuzzy and not m.string]
    fuzzy = [m for m in messages if m.fuzzy]
    problems = [f"  untranslated: {_short(m.id)}" for m in untranslated]
    problems += [f"  fuzzy: {_short(m.id)}" for m in fuzzy]
    assert not problems, (
        f"{path.relative_to(ROOT)}: {len(untranslated)} untranslated and "
        f"{len(fuzzy)} fuzzy of {len(messages)} messages\n" + "\n".join(problems)
    )
