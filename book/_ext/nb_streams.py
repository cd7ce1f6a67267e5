"""``nb_streams``: the downloadable notebook shows each cell's prints once.

With ``nb_merge_streams = True``, myst-nb merges the stream outputs of a cell
into the first one before it renders them, and does so in place: the first
output takes in the text of the later ones, which stay in the notebook as
well. The notebook myst-nb then saves (``jupyter_execute/``, offered on the
page as a download) repeats that text whenever a cell's prints reached the
notebook in more than one message, for instance a print before and one after
a slow step. Which cells split depends on timing, so two builds of the same
source could save different notebooks.

After a page is read, this extension removes the later stream outputs that
the first one of the same stream already ends with, so the saved notebook has
the outputs the page shows. Outputs the first one does not hold are kept, so
nothing is lost if myst-nb stops merging in place.
"""

from __future__ import annotations

from pathlib import Path

import nbformat


def _stripped(text: str) -> str:
    return text.rstrip() + "\n" if text.rstrip() else ""


def drop_merged_streams(outputs: list) -> list:
    """The outputs without the stream outputs their stream's first one holds.

    >>> out = lambda text: {"output_type": "stream", "name": "stdout", "text": text}
    >>> merged = [out("a\\nb\\n"), out("b\\n")]  # what myst-nb leaves behind
    >>> [o["text"] for o in drop_merged_streams(merged)]
    ['a\\nb\\n']
    >>> [o["text"] for o in drop_merged_streams([out("a\\n"), out("b\\n")])]
    ['a\\n', 'b\\n']
    """
    streams: dict[str, list] = {}
    for output in outputs:
        if output["output_type"] == "stream":
            streams.setdefault(output["name"], []).append(output)
    drop = set()
    for first, *later in streams.values():
        tail = "".join(_stripped(o["text"]) for o in later)
        if later and first["text"].endswith(tail):
            drop.update(id(o) for o in later)
    return [o for o in outputs if id(o) not in drop]


def _clean_saved_notebook(app, doctree) -> None:
    config = getattr(app.env, "mystnb_config", None)
    if config is None or not config.merge_streams or not config.output_folder:
        return
    path = Path(config.output_folder, f"{app.env.docname}.ipynb")
    if not path.is_file():
        return
    notebook = nbformat.read(path, as_version=4)
    changed = False
    for cell in notebook.cells:
        if cell.cell_type == "code":
            kept = drop_merged_streams(cell.outputs)
            changed |= len(kept) != len(cell.outputs)
            cell.outputs = kept
    if changed:
        path.write_text(nbformat.writes(notebook), encoding="utf-8")


def setup(app):
    app.connect("doctree-read", _clean_saved_notebook)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
