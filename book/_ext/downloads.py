"""``downloads``: every page's notebook for the reader, and the book's code.

At ``doctree-read``, the notebook myst-nb saved for the page (``jupyter_execute/
<page>.ipynb``) becomes the reader's download: its outputs restored from the
execution cache (in cache mode myst-nb saves it without them), merged
streams dropped, its text translated in a translated edition
(``notebook_i18n``), and a note under the page's title links it with the
package's wheel and the command that installs both. At
``build-finished`` every notebook and the wheel go into one zip
(:data:`ARCHIVE`), which the front page links with the ``book-file`` role
beside the ``install-command`` directive. ``make html`` builds the wheel and
sdist into ``<build>/dist`` first.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import nbformat
from docutils import nodes
from jupyter_cache import get_cache
from notebook_i18n import page_catalog, translate_notebook
from sphinx import addnodes
from sphinx.locale import get_translation
from sphinx.util.docutils import SphinxDirective, SphinxRole

# The note's text, translated in the hand-kept book/locales/*/LC_MESSAGES/notebooks.po.
CATALOG = "notebooks"
_ = get_translation(CATALOG)

PACKAGE = "attention"
ARCHIVE = "attention-book-code-{release}.zip"


def restore_outputs(notebook, cache_path: str):
    """The notebook with its outputs from the execution cache, if it has them."""
    try:
        return get_cache(cache_path).merge_match_into_notebook(notebook)[1]
    except KeyError:  # not in the cache: the page was not executed
        return notebook


def _stripped(text: str) -> str:
    return text.rstrip() + "\n" if text.rstrip() else ""


def drop_merged_streams(outputs: list) -> list:
    """The outputs without the streams that their stream's first output holds:
    ``nb_merge_streams`` merges them into it but leaves them in the notebook."""
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


def hide_solutions(notebook) -> None:
    """Fold the code of every exercise's solution, as the page folds it.

    The code cells between a markdown cell that opens a solution
    (sphinx-exercise's ``solution-start``) and the one that closes it get
    Jupyter's ``source_hidden`` and ``outputs_hidden``: a reader sees the
    solution only by unfolding it.
    """
    inside = False
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            # One markdown cell may close a solution and open the next.
            opened = cell.source.rfind("{solution-start}")
            closed = cell.source.rfind("{solution-end}")
            if opened >= 0 or closed >= 0:
                inside = opened > closed
        elif inside:
            folded = cell.metadata.setdefault("jupyter", {})
            folded["source_hidden"] = True
            folded["outputs_hidden"] = True


def saved_notebook(app, docname: str) -> Path:
    """Where myst-nb saved the page's notebook: in ``jupyter_execute`` next to
    the output folder, which no option moves (MyST-NB issue 129). If it ever
    moves, no page offers its notebook and ``tests/test_book_ext.py`` fails."""
    return Path(app.outdir).parent / "jupyter_execute" / f"{docname}.ipynb"


def dist_files(env) -> dict[str, Path]:
    """The package's wheel and sdist that ``make html`` built for this release."""
    dist, release = Path(env.doctreedir).parent / "dist", env.config.release
    return {
        "wheel": dist / f"{PACKAGE}-{release}-py3-none-any.whl",
        "sdist": dist / f"{PACKAGE}-{release}.tar.gz",
    }


def install_block(env) -> nodes.literal_block:
    """The one command that installs this release's wheel and the notebooks' needs."""
    command = f'pip install "{dist_files(env)["wheel"].name}[notebooks]"'
    return nodes.literal_block(command, command, language="sh")


def _offer_download(app, doctree) -> None:
    """Make the page's notebook download, then put the note under its title."""
    docname = app.env.docname
    path = saved_notebook(app, docname)
    is_notebook = any("cell" in n["classes"] for n in doctree.findall(nodes.container))
    section = next(iter(doctree.findall(nodes.section)), None)
    if not (is_notebook and path.is_file() and section is not None):
        return
    notebook = nbformat.read(path, as_version=4)
    if app.config.nb_execution_mode == "cache":
        notebook = restore_outputs(notebook, app.config.nb_execution_cache_path)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = drop_merged_streams(cell.outputs)
    hide_solutions(notebook)
    if app.config.language not in (None, "", "en"):
        translate = page_catalog(app, docname)
        notebook = translate_notebook(notebook, translate, app.config.language)
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    note = download_note(app, docname, path)
    section.insert(section.first_child_matching_class(nodes.title) + 1, note)


def _download(env, docname: str, path: Path) -> addnodes.download_reference:
    target = "/" + os.path.relpath(path, env.srcdir).replace(os.sep, "/")
    link = addnodes.download_reference("", "", refdoc=docname, reftarget=target)
    link += nodes.literal(path.name, path.name, classes=["xref", "download"])
    return link


def download_note(app, docname: str, notebook: Path) -> nodes.admonition:
    """The "Run this page yourself" box: two downloads and one command."""
    wheel = dist_files(app.env)["wheel"]
    note = nodes.admonition(classes=["tip", "nb-download-tip"])
    note += nodes.title("", _("Run this page yourself"))
    note += nodes.paragraph(
        "",
        "",
        nodes.Text(_("Download the notebook") + " "),
        _download(app.env, docname, notebook),
        nodes.Text(f" {_('and the package')} "),
        _download(app.env, docname, wheel),
        nodes.Text(" " + _("into one folder. In a fresh environment, run:")),
    )
    note += install_block(app.env)
    more = "Then open the notebook in Jupyter. Every page's notebook and the wheel "
    more += "are also in one file:"
    note += nodes.paragraph("", _(more) + " ", _archive_link(app.env, docname))
    return note


def _archive_link(env, docname: str) -> nodes.reference:
    """A link from the page to the edition's archive of the book's code."""
    name = ARCHIVE.format(release=env.config.release)
    link = nodes.reference("", "", refuri="../" * docname.count("/") + name)
    link += nodes.literal(name, name, classes=["xref", "download"])
    return link


class BookFile(SphinxRole):
    """``{book-file}`wheel``` (or ``sdist``, ``archive``): a file of the book's code."""

    def run(self):
        kind = self.text.strip()
        if kind == "archive":
            return [_archive_link(self.env, self.env.docname)], []
        files = dist_files(self.env)
        if kind not in files:
            msg = f"book-file: expected archive, wheel or sdist; got {kind!r}"
            return [], [self.inliner.reporter.error(msg, line=self.lineno)]
        link = _download(self.env, self.env.docname, files[kind])
        self.set_source_info(link)
        return [link], []


class InstallCommand(SphinxDirective):
    """``{install-command}``: the command that installs this release's wheel."""

    def run(self):
        block = install_block(self.env)
        self.set_source_info(block)
        return [block]


def write_archive(out: Path, notebooks: dict[str, Path], wheel: Path) -> None:
    """A zip of the notebooks (by page path) and the wheel, the same bytes each time."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, path in sorted({**notebooks, wheel.name: wheel}.items()):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())


def _write_archive(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    notebooks = {
        f"{docname}.ipynb": saved_notebook(app, docname)
        for docname in sorted(app.env.found_docs)
        if saved_notebook(app, docname).is_file()
    }
    out = Path(app.outdir, ARCHIVE.format(release=app.config.release))
    write_archive(out, notebooks, dist_files(app.env)["wheel"])


def _load_catalog(app, env, docnames) -> None:
    # After Sphinx compiled the catalogs (.po -> .mo), before the pages are read.
    for folder in app.config.locale_dirs:
        app.add_message_catalog(CATALOG, str(Path(app.srcdir, folder)))


def setup(app):
    app.setup_extension("myst_nb")
    app.add_role("book-file", BookFile())
    app.add_directive("install-command", InstallCommand)
    app.connect("env-before-read-docs", _load_catalog)
    # Before Sphinx's collectors (500): its download collector registers the
    # files the note links, so that they are copied into _downloads.
    app.connect("doctree-read", _offer_download, priority=400)
    app.connect("build-finished", _write_archive)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
