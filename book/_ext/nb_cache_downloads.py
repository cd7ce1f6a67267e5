"""``nb_cache_downloads``: in cache mode, the notebook downloads keep their outputs.

myst-nb 1.4 with ``nb_execution_mode = "cache"`` renders a page from the
cached, executed notebook, but saves the notebook it read, without outputs,
as ``jupyter_execute/<page>.ipynb``: the notebook a reader downloads (its
cache client merges the outputs into a copy, and the copy is not the one
written). After a page is read, this puts the outputs back from the same
cache record, with jupyter-cache's public ``merge_match_into_notebook``,
for every page (a cache hit or a fresh run alike, so each edition's download
is made the same way), and drops the ``glue`` records that myst-nb takes out
of the page (as it does in its other modes). It runs before ``nb_streams``
cleans the saved notebook.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from jupyter_cache import get_cache


def _restore_outputs(app, doctree) -> None:
    config = getattr(app.env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache":
        return
    path = Path(config.output_folder, f"{app.env.docname}.ipynb")
    if not path.is_file():
        return
    notebook = nbformat.read(path, as_version=4)
    if not any(cell.cell_type == "code" for cell in notebook.cells):
        return
    try:
        _, merged = get_cache(config.execution_cache_path).merge_match_into_notebook(
            notebook
        )
    except KeyError:  # not in the cache: the page was not executed
        return
    for cell in merged.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not _is_glue_record(o)]
    path.write_text(nbformat.writes(merged), encoding="utf-8")


def _is_glue_record(output) -> bool:
    """An output ``myst_nb.glue`` stored under a prefixed MIME type."""
    scrapbook = output.get("metadata", {}).get("scrapbook", {})
    return bool(scrapbook.get("mime_prefix"))


def setup(app):
    app.connect("doctree-read", _restore_outputs, priority=400)  # nb_streams: 500
    return {"parallel_read_safe": True, "parallel_write_safe": True}
