"""The page "Questions readers ask", built: every question links to an
element that exists on its page, in both editions, and reads in the
edition's language."""

from __future__ import annotations

from conftest import CJK, ROOT, assert_none
from reader_questions import DATA, load_questions

QUESTIONS = load_questions(ROOT / "book" / DATA)
# Sphinx's smartquotes turns an English page's straight quotes and dashes
# into typographic ones.
TYPOGRAPHIC = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "--"})


def test_every_question_links_to_its_answer(site):
    page = site.page("reference/questions.html")
    links = page.article.select("ul.reader-questions a.reference.internal")
    assert len(links) == len(QUESTIONS)
    problems = []
    for link, entry in zip(links, QUESTIONS, strict=True):
        href = link["href"]
        target = page.resolve(href)
        anchor = href.partition("#")[2]
        expected = f"{entry['page']}.html"
        if not target.as_posix().endswith(expected) or anchor != entry["anchor"]:
            problems.append(f"{entry['anchor']}: links to {href}")
        elif not target.is_file():
            problems.append(f"{entry['anchor']}: {target} was not built")
        else:
            answer = site.page(expected)
            if answer.soup.find(id=anchor) is None:
                problems.append(f"{entry['anchor']}: no id={anchor!r} in {expected}")
        words = entry["question_zh" if site.edition == "zh_CN" else "question"]
        shown = link.get_text(strip=True).translate(TYPOGRAPHIC)
        if shown != words.strip().translate(TYPOGRAPHIC):
            problems.append(f"{entry['anchor']}: reads {link.get_text()!r}")
    assert_none(problems, "questions whose link does not land on their answer")


def test_the_questions_read_in_the_editions_language(site):
    page = site.page("reference/questions.html")
    text = page.article.select_one("ul.reader-questions").get_text()
    assert bool(CJK.search(text)) == (site.edition == "zh_CN")
