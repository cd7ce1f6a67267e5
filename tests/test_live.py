"""The live widgets' exports (attention/live.py, book/_ext/live_widgets.py).

The cells of the pages that export a widget's weights run here, as they are
written on the pages, with small stand-ins for what the earlier cells of the
page computed (the trained models, the running example). Without the build's
``$ATTENTION_LIVE_DIR`` (a reader's notebook) they must write no file
anywhere; with it, the files must land where
``live_widgets`` reads them, each declaring the kind that picks its widget.
"""

from __future__ import annotations

import json
from pathlib import Path

import live_widgets
import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from myst_nb.core.read import read_myst_markdown_notebook
from sphinx.errors import ExtensionError

from attention import EXAMPLE_WORDS, TinyAttentionModel, example_inputs
from attention.live import (
    FOLDER_VARIABLE,
    KINDS,
    export,
    export_tiny_model,
    load_tiny_model,
    save_exports,
)

BOOK = Path(__file__).resolve().parents[1] / "book"


def _tiny_model(use_positions: bool) -> TinyAttentionModel:
    torch.manual_seed(0)
    return TinyAttentionModel(
        16, 8, context_length=12, num_heads=2, use_positions=use_positions
    )


#: Each page that exports, the files its cell writes with their kinds, and the
#: names its cell reads from the page's earlier cells, as small stand-ins.
PAGES = {
    "chapter3/3-3-self-attention.md": {
        "files": {"running-example": "running-example"},
        "stand_ins": lambda: {
            "inputs": example_inputs(),
            "EXAMPLE_WORDS": EXAMPLE_WORDS,
        },
    },
    "beyond/attention-that-has-learned.md": {
        "files": {"learned": "learned", "learned-no-pos": "learned"},
        "stand_ins": lambda: {
            "model": _tiny_model(use_positions=True),
            "model_no_pos": _tiny_model(use_positions=False),
            "shown": torch.tensor([[3, 1, 4, 1, 5]]),
        },
    },
}


def exporting_cell(page: str) -> str:
    """The source of the one code cell of ``page`` that calls ``save_exports``."""
    text = (BOOK / page).read_text(encoding="utf-8")
    notebook = read_myst_markdown_notebook(text)
    cells = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and "save_exports(" in cell.source
    ]
    assert len(cells) == 1, f"{page}: expected one exporting cell, found {len(cells)}"
    return cells[0]


def run_exporting_cell(page: str):
    """Run the page's exporting cell in a fresh IPython session; its last value."""
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    shell.user_ns.update(PAGES[page]["stand_ins"]())
    result = shell.run_cell(exporting_cell(page), store_history=False)
    result.raise_error()
    return result.result


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("page", PAGES)
def test_an_exporting_cell_writes_nothing_without_the_build(
    page, tmp_path, monkeypatch
):
    """A reader's kernel (no $ATTENTION_LIVE_DIR) runs the cell in its own
    folder: no file there, and none beside the page in the book's source."""
    monkeypatch.delenv(FOLDER_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    source = (BOOK / page).parent
    source_before = files_under(source)
    widget = run_exporting_cell(page)
    assert files_under(tmp_path) == []
    assert files_under(source) == source_before
    assert widget.names == list(PAGES[page]["files"])  # the widget is still shown


@pytest.mark.parametrize("page", PAGES)
def test_the_build_exports_land_where_the_widgets_read_them(
    page, tmp_path, monkeypatch
):
    """With the Makefile's setting, each file the widget names is where the
    extension reads it, and declares the kind that picks its widget."""
    folder = tmp_path / "_build" / "attention-live"
    monkeypatch.setenv(FOLDER_VARIABLE, str(folder))
    page_folder = tmp_path / "book"  # where a build's kernel runs: nothing there
    page_folder.mkdir()
    monkeypatch.chdir(page_folder)
    widget = run_exporting_cell(page)
    named = live_widgets.NAMES.search(widget._repr_html_()).group(1).split()
    assert named == list(PAGES[page]["files"])
    expected = sorted(f"_build/attention-live/{name}.json" for name in named)
    assert files_under(tmp_path) == expected
    for name, kind in PAGES[page]["files"].items():
        path = live_widgets.exported_file(name)
        assert path == folder / f"{name}.json"
        assert json.loads(path.read_text("utf-8"))["kind"] == kind


def test_the_running_example_carries_its_words_and_inputs(tmp_path):
    example = export("running-example", {"words": ["a"]}, {"inputs": example_inputs()})
    [path] = save_exports({"running-example": example}, tmp_path)
    saved = json.loads(path.read_text("utf-8"))
    assert saved["config"] == {"words": ["a"]}
    assert torch.equal(torch.tensor(saved["state_dict"]["inputs"]), example_inputs())


def test_a_relative_folder_is_refused(tmp_path, monkeypatch):
    """Each kernel runs in its page's folder: a relative path would write there."""
    monkeypatch.setenv(FOLDER_VARIABLE, "attention-live")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=FOLDER_VARIABLE):
        save_exports({"learned": export_tiny_model(_tiny_model(True))})
    assert files_under(tmp_path) == []


def test_kinds_agree_and_unknown_kinds_are_refused(tmp_path):
    assert live_widgets.KINDS == KINDS
    assert live_widgets.VARIABLE == FOLDER_VARIABLE
    with pytest.raises(ValueError, match="kind"):
        export("heatmap", {}, {})
    [path] = save_exports(
        {"x": export("running-example", {"words": []}, {"inputs": example_inputs()})},
        tmp_path,
    )
    with pytest.raises(ValueError, match="learned"):
        load_tiny_model(path)


def test_the_extension_names_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv(FOLDER_VARIABLE, raising=False)
    with pytest.raises(ExtensionError, match=FOLDER_VARIABLE):
        live_widgets.exported_file("learned")
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path))
    with pytest.raises(ExtensionError, match="no cell wrote"):
        live_widgets.exported_file("learned")
    (tmp_path / "learned.json").write_text('{"config": {}, "state_dict": {}}')
    with pytest.raises(ExtensionError, match="kind"):  # older than the kinds
        live_widgets.exported_file("learned")
