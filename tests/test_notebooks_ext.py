"""Unit tests of book/_ext/notebooks.py: the steps a notebook download goes through."""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
from notebooks import (
    _cache_per_package_digest,
    imports_package,
    package_digest,
    translate_markdown,
    translate_notebook,
    write_archive,
)

ROOT = Path(__file__).resolve().parents[1]

MARKDOWN = """\
(sec-x)=
# A title

A paragraph
on two lines with `code`.

- an item
  that wraps
- another item

$$
x = y
$$

```{admonition} A note
:class: tip

Inside the note.
```

```{code-cell} python
# A comment
```

| a | b |
|---|---|
"""

TABLE = {
    "A title": "标题",
    "A paragraph on two lines with `code`.": "一段带 `code` 的文字。",
    "an item that wraps": "一项",
    "another item": "另一项",
    "x = y": "不应出现",
    "A note": "注释",
    "Inside the note.": "注释里面。",
    "A comment": "不应出现",
    "a": "甲",
    ":class: tip": "不应出现",
}


def test_markdown_cells_are_translated_piece_by_piece():
    out = translate_markdown(MARKDOWN, TABLE.get)
    assert out.splitlines() == [
        "(sec-x)=",
        "# 标题",
        "",
        "一段带 `code` 的文字。",
        "",
        "- 一项",
        "- 另一项",
        "",
        "$$",
        "x = y",
        "$$",
        "",
        "```{admonition} 注释",
        ":class: tip",
        "",
        "注释里面。",
        "```",
        "",
        "```{code-cell} python",
        "# A comment",
        "```",
        "",
        "| 甲 | b |",
        "|---|---|",
    ]


def test_untranslated_markdown_is_unchanged():
    assert translate_markdown(MARKDOWN, lambda message: None) == MARKDOWN


def test_an_empty_table_cell_is_no_message():
    text = "| | a |\n|---|---|\n| b | |\n"
    table = {"": "the catalog's header", "a": "甲", "b": "乙"}
    assert translate_markdown(text, table.get) == "| | 甲 |\n|---|---|\n| 乙 | |\n"


def test_a_colon_fence_and_a_nested_list_keep_their_markers():
    text = ":::{note} Title\n1. first\n   * inner item\n:::\n"
    table = {"Title": "题", "first": "一", "inner item": "内"}
    assert translate_markdown(text, table.get) == ":::{note} 题\n1. 一\n   * 内\n:::\n"


def test_a_notebook_gets_its_markdown_and_comments_translated_and_nothing_else():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# A title"),
        nbformat.v4.new_code_cell("x = 1  # A comment\nprint('A title')"),
    ]
    table = {"A title": "标题", "A comment": "注释"}
    out = translate_notebook(notebook, table.get)
    assert out.cells[0].source == "# 标题"
    assert out.cells[1].source == "x = 1  # 注释\nprint('A title')"


def test_pages_that_import_the_package_are_found_by_their_code_cells():
    cell = "```{{code-cell}} python\n{}\n```\n"
    assert imports_package(cell.format("from attention.bench import run"))
    assert imports_package(cell.format("import torch\nimport attention as a"))
    assert not imports_package(cell.format("import attentional"))
    assert not imports_package("```python\nimport attention\n```\n")  # not a cell
    assert not imports_package(cell.format("%timeit x"))  # IPython syntax


def test_the_package_digest_changes_with_any_file_of_the_package(tmp_path):
    (tmp_path / "attention" / "_data").mkdir(parents=True)
    (tmp_path / "attention" / "__init__.py").write_text("x = 1\n")
    (tmp_path / "attention" / "_data" / "run.json").write_text("{}")
    before = package_digest(tmp_path)
    (tmp_path / "attention" / "_data" / "run.json").write_text("{ }")
    assert package_digest(tmp_path) != before


def _tables(database: Path) -> set[str]:
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        return {name for (name,) in rows}


def test_the_cache_database_exists_before_any_page_is_read(tmp_path):
    """With -j 2, two reading processes must find the tables already made."""
    app = SimpleNamespace(doctreedir=str(tmp_path / "doctrees"))
    config = SimpleNamespace(notebooks_package_root=str(ROOT))
    _cache_per_package_digest(app, config)
    cache = tmp_path / "jupyter_cache"
    assert config.nb_execution_cache_path == str(cache)
    assert {"nbcache", "nbproject"} <= _tables(cache / "global.db")
    assert (cache / "package-digest.txt").read_text() == package_digest(ROOT)


def test_another_package_digest_empties_the_cache(tmp_path):
    app = SimpleNamespace(doctreedir=str(tmp_path / "doctrees"))
    config = SimpleNamespace(notebooks_package_root=str(ROOT))
    cache = tmp_path / "jupyter_cache"
    _cache_per_package_digest(app, config)
    (cache / "executed").mkdir(exist_ok=True)
    (cache / "executed" / "old.ipynb").write_text("{}")
    (cache / "package-digest.txt").write_text("a digest of another package")
    _cache_per_package_digest(app, config)
    assert not (cache / "executed" / "old.ipynb").exists()
    assert {"nbcache", "nbproject"} <= _tables(cache / "global.db")


def test_the_code_archive_holds_every_notebook_and_the_wheel_and_is_reproducible(
    tmp_path,
):
    (tmp_path / "a.ipynb").write_text("{}")
    (tmp_path / "b.ipynb").write_text("{ }")
    wheel = tmp_path / "attention-1.0.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    notebooks = {
        "chapter3/a.ipynb": tmp_path / "a.ipynb",
        "b.ipynb": tmp_path / "b.ipynb",
    }
    first, second = tmp_path / "1.zip", tmp_path / "2.zip"
    write_archive(first, notebooks, wheel)
    write_archive(second, notebooks, wheel)
    with zipfile.ZipFile(first) as archive:
        assert sorted(archive.namelist()) == sorted([*notebooks, wheel.name])
        assert archive.read("chapter3/a.ipynb") == b"{}"
    assert first.read_bytes() == second.read_bytes()


def test_myst_nb_still_puts_its_notebooks_next_to_the_output_folder():
    """Why ``_own_output_folder`` exists (MyST-NB issue 129): fails once it changes.

    Then look for an option that places the folder, and use it instead.
    """
    import inspect

    from myst_nb import sphinx_ext

    assert sphinx_ext.OUTPUT_FOLDER == "jupyter_execute"
    assert "Path(app.outdir).parent.joinpath(OUTPUT_FOLDER)" in inspect.getsource(
        sphinx_ext
    )
