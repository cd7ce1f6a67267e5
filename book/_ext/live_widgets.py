"""``live_widgets``: a page's trained weights, as the build exported them, in its HTML.

A page asks for a widget with raw HTML that names its weights files
(``<div data-attention-live="learned learned-no-pos">``), and a cell of the
page writes them while the build runs it: ``attention.live.save_exports``
writes ``<name>.json`` into ``$ATTENTION_LIVE_DIR``, which the Makefile sets
for its HTML builds and so for their kernels (beside the shared execution
cache); without it, as in a reader's notebook, the cell writes nothing.
Each file declares its ``kind``, which picks the widget that draws it.
Each such page gets the JSON in ``_static/attention-live/`` (for readers and
tests), the same data as ``<name>.js`` (a page opened from ``file://`` may
run a script but not ``fetch()`` a file), and the widget's script and
stylesheet: that page only. The widget's words are the page's list
``:::{container} attention-live-text`` with ``:name: <first file>-words``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from sphinx.errors import ExtensionError

FOLDER = "attention-live"  # in each edition's _static
VARIABLE = "ATTENTION_LIVE_DIR"  # attention.live.FOLDER_VARIABLE
KINDS = ("learned", "running-example")  # attention.live.KINDS
NAMES = re.compile(r'data-attention-live="([^"]*)"')


def widget_names(doctree) -> list[str]:
    """The weights files the page's widgets name, in order, each once."""
    names = []
    for raw in doctree.findall(lambda n: n.tagname == "raw"):
        for match in NAMES.finditer(raw.astext()):
            names += [n for n in match.group(1).split() if n not in names]
    return names


def exported_file(name: str) -> Path:
    """Where the build's cells wrote ``name``: ``$ATTENTION_LIVE_DIR/<name>.json``.

    Raises:
        ExtensionError: the variable is not set (a build the Makefile did not
            start), or the file is missing or declares no known kind.
    """
    folder = os.environ.get(VARIABLE, "")
    if not folder:
        raise ExtensionError(
            f"the live widget of {name!r} reads ${VARIABLE}, which is not set: "
            "build with `make html`, which sets it for the pages' cells"
        )
    exported = Path(folder) / f"{name}.json"
    if not exported.is_file():
        raise ExtensionError(
            f"no cell wrote {exported} for the live widget of {name!r} "
            f"(attention.live.save_exports, into ${VARIABLE}); run `make clean` "
            "if the execution cache outlived that folder"
        )
    kind = json.loads(exported.read_text("utf-8")).get("kind")
    if kind not in KINDS:
        raise ExtensionError(
            f"{exported}: expected an export of kind {' or '.join(KINDS)}, got "
            f"{kind!r}; run `make clean` if it is older than attention.live"
        )
    return exported


def _write(path: Path, text: str) -> None:
    """Write atomically: two writing processes (-j 2) may write the same file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(text, "utf-8")
    temporary.replace(path)


def _add_widget(app, pagename, templatename, context, doctree) -> None:
    names = widget_names(doctree) if doctree is not None else []
    if not names:
        return
    static = Path(app.outdir) / "_static" / FOLDER
    for name in names:
        try:
            exported = exported_file(name)
        except ExtensionError as error:
            raise ExtensionError(f"{pagename}: {error}") from None
        text = exported.read_text("utf-8")
        _write(static / f"{name}.json", text)
        script = f"(window.attentionLiveData ||= {{}})[{json.dumps(name)}] = {text};\n"
        _write(static / f"{name}.js", script)
        app.add_js_file(f"{FOLDER}/{name}.js")
    app.add_js_file("attention-live.js")
    app.add_css_file("attention-live.css")


def setup(app):
    app.connect("html-page-context", _add_widget)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
