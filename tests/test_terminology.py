"""The Chinese edition keeps its terms: the glossary's table is the term base.

``book/reference/glossary.md`` holds one table (English | 中文 | Not used
here); it is what readers see and what this test reads, so there is one
list. Two rules, over every message of the catalogs:

- a msgid that uses an English term (outside code, math and link targets)
  has a msgstr that uses the Chinese term;
- no msgstr uses a rendering of the last column (``令牌`` for *token*,
  ``计算下限`` for *compute bound*, lowercase ``transformer`` ...).

A failure names the catalog, the term and the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from sphinx_intl.catalog import load_po

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "reference" / "glossary.md"
CATALOGS = ROOT / "book" / "locales" / "zh_CN" / "LC_MESSAGES"

#: (English term, start of the msgid): where the English word is not the
#: term, with the reason. Keep this short.
EXCEPTIONS = {
    ("value", "The 6 by 6 causal attention weights after dropout"): (
        "'the original values': numbers, not the value vectors"
    ),
    ("tile", "`torch.repeat_interleave(x, 3, dim=1)` gives"): (
        "'repeat tiles the heads': the verb, not a FlashAttention tile"
    ),
    ("base", "The book has a 简体中文 edition (the language"): (
        "'the edition's term base': the glossary's table, not RoPE's base"
    ),
}


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    rivals: tuple[str, ...]


def term_base(markdown: str) -> list[Term]:
    """The terms of the glossary's English | 中文 | Not used here table.

    ``*query* / *key* / *value*`` with ``查询 / 键 / 值`` gives three terms; a
    parenthesis after the English term (``(GQA)``) is a note.
    """
    tables, row, in_row = [], [], False
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row, in_row = [], True
        elif token.type == "inline" and in_row:
            row.append(token.content)
        elif token.type == "tr_close":
            tables[-1].append(row)
            in_row = False
    (table,) = [t for t in tables if t[0][:2] == ["English", "中文"]]
    terms = []
    for english, chinese, rivals in table[1:]:
        english = re.sub(r"\s*\([^)]*\)", "", english)  # (GQA), (the 3.6.1 class)
        names = [name.strip().strip("*") for name in english.split(" / ")]
        renderings = [name.strip() for name in chinese.split(" / ")]
        assert len(names) == len(renderings), (english, chinese)
        others = tuple(
            r.removeprefix("小写的 ")  # "lowercase transformer": the word itself
            for r in re.split(r"[、,]\s*", rivals)
            if r
        )
        terms += [Term(n, z, others) for n, z in zip(names, renderings, strict=True)]
    return terms


TERMS = term_base(GLOSSARY.read_text("utf-8"))


def prose(msgid: str, msgstr: str) -> str:
    """``msgid`` without code, math, roles, link targets, shape tuples and
    the italic English spans that ``msgstr`` keeps as they are (titles)."""
    text = re.sub(r"\{[^}]+\}`[^`]*`", " ", msgid)  # roles
    text = re.sub(r"``.*?``|`[^`]*`", " ", text)  # code
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text)  # math
    text = re.sub(r"\]\([^)]*\)|<[^>]*>", " ", text)  # link targets
    text = re.sub(r"[(\[][^()\[\]]*,[^()\[\]]*[)\]]", " ", text)  # (b, T, d), [n, h]
    for span in re.findall(r"\*[^*]+\*", text):
        if span in msgstr:
            text = text.replace(span, " ")
    return text


def uses(text: str, english: str) -> bool:
    """Whether ``text`` uses the term ``english``, plural included; the words
    of a term may be split by a line break or joined by a hyphen.

    >>> uses("a masked-out key", "masked out"), uses("8 prompts", "prompt")
    (True, True)
    >>> uses("it was prompted", "prompt"), uses("masked outputs", "masked out")
    (False, False)
    """
    flags = 0 if english[:1].isupper() else re.IGNORECASE
    return re.search(term_pattern(english), text, flags) is not None


def term_pattern(english: str) -> str:
    """The regex :func:`uses` looks for: the words of ``english``, plural included."""
    words = r"(?:\s+|-)".join(re.escape(word) for word in english.split())
    return rf"(?<![\w-]){words}(?:s|es)?(?![\w-])"


def outside_longer_terms(text: str, term: Term, terms) -> str:
    """``text`` without the longer terms that hold ``term``'s words: the
    *embedding* of *rotary position embedding* is that term's, whose Chinese
    (旋转位置编码) need not contain 嵌入.

    >>> rope = Term("rotary position embedding", "旋转位置编码", ())
    >>> embedding = Term("embedding", "嵌入", ())
    >>> outside_longer_terms("Rotary position embeddings and an embedding",
    ...                      embedding, [rope, embedding])
    '  and an embedding'
    """
    for other in terms:
        if other.english != term.english and uses(other.english, term.english):
            flags = 0 if other.english[:1].isupper() else re.IGNORECASE
            text = re.sub(term_pattern(other.english), " ", text, flags=flags)
    return text


def violations(messages, terms=TERMS) -> list[str]:
    """Every broken rule, as ``file: term: message``; ``messages`` yields
    ``(file, msgid, msgstr)``."""
    found = []
    for file, msgid, msgstr in messages:
        if not msgid or not msgstr or msgid == msgstr:  # identical: kept as is
            continue
        text = prose(msgid, msgstr)
        for term in terms:
            excused = any(
                (term.english, msgid[: len(start)]) == (name, start)
                for name, start in EXCEPTIONS
            )
            if (
                term.english != term.chinese
                and not excused
                and uses(outside_longer_terms(text, term, terms), term.english)
                and term.chinese not in msgstr
            ):
                found.append(
                    f"{file}: '{term.english}' without {term.chinese}: "
                    f"{msgid[:70]!r} -> {msgstr[:50]!r}"
                )
            shown = re.sub(r"``.*?``|`[^`]*`", " ", msgstr)  # code may say anything
            for rival in term.rivals:
                # Latin rivals as whole words, case and all (transformer, not
                # Transformer); Chinese ones anywhere.
                pattern = re.escape(rival)
                if rival.isascii():
                    pattern = rf"(?<![\w-]){pattern}(?![\w-])"
                if re.search(pattern, shown):
                    found.append(
                        f"{file}: '{rival}' instead of {term.chinese}: {msgstr[:70]!r}"
                    )
    return found


#: A multiple after a comparative: 大了四倍 is read as x5 by many readers, and
#: a decrease has no multiple (小了四倍, 降低 3 倍). Chinese style says
#: "是…的 4 倍" for a multiple, and a fraction for a decrease ("只有…的四分之一").
NUMBER = r"(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百千万几数]+)"
COMPARATIVE_MULTIPLE = re.compile(
    rf"(?:[大小多少快慢高低长短宽窄重轻]|降低|减少|缩小|减小|下降|减慢)了?\s*{NUMBER}\s*倍"
)


def multiples(messages) -> list[str]:
    """Every msgstr that writes a multiple after a comparative, outside code."""
    found = []
    for file, _, msgstr in messages:
        shown = re.sub(r"``.*?``|`[^`]*`", " ", msgstr or "")
        found += [
            f"{file}: {match.group(0)!r} in {msgstr[:70]!r}"
            for match in COMPARATIVE_MULTIPLE.finditer(shown)
        ]
    return found


def catalog_messages(folder: Path = CATALOGS):
    for po in sorted(folder.rglob("*.po")):
        name = po.relative_to(folder).as_posix()
        for message in load_po(po):
            if isinstance(message.id, str):
                yield name, message.id, message.string


def test_terminology_of_the_catalogs():
    problems = violations(catalog_messages())
    assert not problems, f"{len(problems)} term problems:\n" + "\n".join(problems[:40])


def test_multiples_are_written_as_multiples_not_comparatives():
    problems = multiples(catalog_messages())
    assert not problems, "write 是…的 N 倍, or a fraction for a decrease:\n" + (
        "\n".join(problems)
    )


@pytest.mark.parametrize(
    ("msgstr", "caught"),
    [
        ("估算就大了四倍。", True),
        ("估算小了四倍。", True),
        ("得到的数字会大八倍", True),
        ("内存降低了 3 倍", True),
        ("快 2.5 倍", True),
        ("估算是正确值的 4 倍。", False),
        ("只有正确值的四分之一", False),
        ("代码 `# 大 2 倍` 照原样", False),  # code may say anything
        ("反向传播约是前向的 2.5 倍", False),
    ],
)
def test_the_multiples_rule(msgstr, caught):
    assert bool(multiples([("x.po", "x", msgstr)])) == caught


def test_terminology_check_fails_when_a_token_becomes_a_ling_pai():
    """Any one 词元 of the catalogs swapped for 令牌 is caught, with its file."""
    messages = list(catalog_messages())
    swapped = [i for i, (_, _, msgstr) in enumerate(messages) if "词元" in msgstr]
    assert len(swapped) > 50
    for i in swapped[:: max(1, len(swapped) // 25)]:  # 25 spread over the catalogs
        file, msgid, msgstr = messages[i]
        problems = violations([(file, msgid, msgstr.replace("词元", "令牌", 1))])
        assert any(p.startswith(f"{file}: '令牌'") for p in problems), (file, msgstr)


@pytest.mark.parametrize(
    ("msgid", "msgstr", "expected"),
    [
        (
            "The attention weights sum to 1.",
            "权重之和为 1。",
            "'attention weights' without",
        ),
        ("Each token.", "每个标记。", "'token' without 词元"),
        ("The KV cache.", "缓存。", "'KV cache' without KV 缓存"),
        ("A compute bound.", "一个计算上限。", "'compute bound' without 计算下界"),
        ("A compute bound.", "一个计算下限。", "'计算下限' instead of 计算下界"),
        ("Every Transformer block.", "每个 transformer 块。", "'transformer' instead"),
        ("See `token_ids`.", "见 `token_ids`。", None),  # code, not the term
        ("`True` = masked out.", "`True` = 被屏蔽。", "'被屏蔽' instead of 被遮住"),
        ("Keys masked\nout by the mask.", "被掩码遮蔽的键。", "'masked out' without"),
        ("`True` = masked out.", "`True` = 被遮住。", None),
        ("A running maximum $m$.", "运行中的最大值 $m$。", "'running maximum' without"),
        ("A running sum.", "一个和。", "'running sum' without 累积和"),
        ("A running sum.", "一个运行和。", "'运行和' instead of 累积和"),
        ("A running maximum.", "运行最大值。", "'运行最大值' instead of 累积最大值"),
        ("The running output.", "输出。", "'running output' without 累积输出"),
        ("The running output `o`.", "累积输出 `o`。", None),
        ("A running softmax.", "运行中的 softmax。", "'running softmax' without"),
        ("It reads the prompt.", "它读入提示。", "'prompt' without 提示词"),
        ("8 prompts of 4 tokens", "8 个各含 4 个词元的提示词", None),
        ("A hint: `x`.", "提示：`x`。", None),  # 提示 alone is not forbidden
        ("The batch size.", "批大小。", "'批大小' instead of 批次大小"),
        ("The batch size.", "批量大小。", "'batch size' without 批次大小"),
        ("The batch size.", "批次大小。", None),
        ("A chunk of 2 tokens.", "2 个词元的一块。", "'chunk' without 段"),
        ("Chunked prefill.", "预填充。", "'chunked prefill' without 分段预填充"),
        ("Chunked prefill.", "分块预填充。", "'分块预填充' instead of 分段预填充"),
        ("Chunked prefill, in chunks.", "分段预填充，一段一段地。", None),
        ("Rotary position embeddings.", "旋转位置编码。", None),  # not 嵌入 too
        ("Rotary position embeddings.", "旋转位置嵌入。", "'旋转位置嵌入' instead"),
        ("A position embedding and RoPE.", "位置和 RoPE。", "'embedding' without 嵌入"),
        ("The base of RoPE.", "RoPE 的基数。", "'基数' instead of 底数"),
        ("Two layouts.", "两种排列方式。", "'layout' without 布局"),
    ],
)
def test_terminology_rules(msgid, msgstr, expected):
    problems = violations([("x.po", msgid, msgstr)])
    if expected is None:
        assert not problems, problems
    else:
        assert any(expected in p for p in problems), problems
