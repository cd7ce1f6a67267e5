"""``nb_streams``: printed output is the same in every build, and in the
downloadable notebook it appears once.

The kernel sends what a cell prints in chunks, on a timer (every 0.2 s), so
where a cell's text is cut into stream messages depends on timing. With
``nb_merge_streams = True`` myst-nb joins the chunks before it renders them,
but (myst-nb 1.4) it strips the end of each chunk and adds a newline: a print
cut in the middle of a line, say between the arguments of ``print(label,
tensor)``, shows up on two lines in some builds and not in others. It also
joins them in place, so the first chunk takes in the text of the later ones,
which stay in the saved notebook as well: the notebook offered as a download
(``jupyter_execute/<page>.ipynb``) then repeats that text.

Two measures, both for the build only (a reader's Jupyter is unaffected):

- the kernels this build starts send printed text when a cell ends (or
  before a figure or other display), never on a timer, so no line is cut;
  they read an IPython profile made in the build folder;
- after a page is read, the saved notebook drops the later stream outputs
  that the first one of the same stream already ends with, so it holds the
  outputs the page shows. Outputs the first does not hold are kept, so
  nothing is lost if myst-nb stops joining in place.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

# Run by each kernel at start-up: no timed flushes, only the ones ipykernel
# makes when a cell ends or before it publishes a display.
KERNEL_CONFIG = """\
c = get_config()  # noqa: F821
c.IPKernelApp.exec_lines = [
    "import sys; sys.stdout.flush_interval = sys.stderr.flush_interval = 1e9"
]
# The build's kernels talk to the build over loopback TCP; ipykernel 7 warns
# about unencrypted TCP on every start, which buries the build's own log.
c.IPKernelApp.log_level = "ERROR"
"""


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


def _kernel_profile(build_dir: Path) -> Path:
    """An IPython folder whose default profile configures the kernels."""
    ipython_dir = build_dir / "ipython"
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(KERNEL_CONFIG)
    return ipython_dir


def setup(app):
    # Kernels inherit the environment of the build that starts them.
    # Next to the doctrees: a build into _build/html/zh_CN must not put it in a site.
    os.environ["IPYTHONDIR"] = str(_kernel_profile(Path(app.doctreedir).parent))
    app.connect("doctree-read", _clean_saved_notebook)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
