"""``notebooks``: the book's notebooks, from execution to the reader's download.

Every page with code cells is a notebook that myst-nb executes while Sphinx
reads the page. This extension owns everything that happens to it, in order:

1. **Freshness** (``config-inited``, ``source-read``). The execution cache
   belongs to one SHA-256 of the ``attention`` package: a changed package
   empties it, so no page finds outputs computed by older code. Every page
   that imports the package declares the package's files as dependencies
   (``env.note_dependency``), so Sphinx reads it again when one changes.
2. **Kernels** (``setup``). The kernels the build starts print when a cell
   ends, never on a timer, so printed text is cut the same way in every
   build (see :data:`KERNEL_CONFIG`).
3. **The download** (``doctree-read``), one function a step, applied to the
   notebook myst-nb saved (``jupyter_execute/<page>.ipynb``):

   a. :func:`restore_outputs`: put back the outputs from the cache record
      (myst-nb 1.4 saves the notebook it read, without outputs, in cache
      mode) and drop the ``glue`` records myst-nb takes out of the page;
   b. :func:`drop_merged_streams`: keep each printed text once;
   c. :func:`translate_notebook`: in a translated edition, the markdown
      cells and code comments from the page's catalog;
   d. a note under the page's title: the notebook, the package's wheel, and
      the one command that installs the wheel with its ``notebooks`` extra.
4. **The book's code in one file** (``build-finished``): every page's
   notebook and the wheel in one zip at the root of the edition
   (:data:`ARCHIVE`); the front page links it with the ``book-file`` role
   and shows the install command with the ``install-command`` directive.

The wheel and sdist are built by ``make html`` into ``<build>/dist`` (next to
the doctrees) before Sphinx runs; :func:`dist_files` names them.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import i18n_code
import nbformat
from docutils import nodes
from jupyter_cache import get_cache
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from sphinx import addnodes
from sphinx.locale import get_translation
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

logger = logging.getLogger(__name__)

# The text this extension writes into pages, translated from the hand-kept
# catalog book/locales/<language>/LC_MESSAGES/notebooks.po.
CATALOG = "notebooks"
_ = get_translation(CATALOG)

PACKAGE = "attention"
ARCHIVE = "attention-book-code-{release}.zip"

# -- 1. Freshness ---------------------------------------------------------------


def package_files(root: Path) -> list[Path]:
    """Every file of the package under ``root``, sorted (code and data)."""
    return sorted(
        p
        for p in (root / PACKAGE).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def package_digest(root: Path) -> str:
    """SHA-256 over the names and bytes of every file of the package."""
    h = hashlib.sha256()
    for path in package_files(root):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def imports_package(source: str) -> bool:
    """Whether a page's code cells import the package (read with Python's parser).

    >>> imports_package("```{code-cell} python\\nimport torch, attention\\n```")
    True
    >>> imports_package("Prose that says: import attention.")
    False
    """
    for code in _code_cells(source):
        try:
            tree = ast.parse(code)
        except SyntaxError:  # IPython syntax (a magic): such a cell imports nothing
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            if any(m.split(".")[0] == PACKAGE for m in modules):
                return True
    return False


def _code_cells(source: str) -> list[str]:
    """The contents of the page's ``{code-cell}`` fences, from markdown-it."""
    return [
        t.content
        for t in _markdown().parse(source)
        if t.type == "fence" and t.info.strip().startswith("{code-cell}")
    ]


def _cache_per_package_digest(app, config) -> None:
    """One execution cache, next to the build's doctrees, for one package digest.

    The cache folder keeps its name (a changed config value would make Sphinx
    read every page again); a file in it names the digest its outputs were
    computed with, and a different digest empties it. The cache's database
    is created here, before Sphinx forks its reading processes (``-j 2``):
    two processes that both found none would both create its tables.
    """
    digest = package_digest(Path(config.notebooks_package_root))
    cache = Path(app.doctreedir).parent / "jupyter_cache"
    config.nb_execution_cache_path = str(cache)
    stamp = cache / "package-digest.txt"
    if stamp.is_file() and stamp.read_text() != digest:
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)
    get_cache(str(cache)).list_cache_records()


def _depend_on_package(app, docname, source) -> None:
    if imports_package(source[0]):
        for path in package_files(Path(app.config.notebooks_package_root)):
            app.env.note_dependency(str(path))


# -- 2. Kernels -------------------------------------------------------------------

# Run by each kernel at start-up. The kernel sends printed text on a timer
# (every 0.2 s), so a print could be cut between two stream messages at a
# different place in each build, and myst-nb's stream merging (1.4) then
# puts a line break at the cut. Without timed flushes the kernel sends the
# text when the cell ends or before a figure: the same in every build.
KERNEL_CONFIG = """\
c = get_config()  # noqa: F821
c.IPKernelApp.exec_lines = [
    "import sys; sys.stdout.flush_interval = sys.stderr.flush_interval = 1e9"
]
# The build's kernels talk to the build over loopback TCP; ipykernel 7 warns
# about unencrypted TCP on every start, which buries the build's own log.
c.IPKernelApp.log_level = "ERROR"
"""


def kernel_profile(build_dir: Path) -> Path:
    """An IPython folder whose default profile configures the build's kernels."""
    ipython_dir = build_dir / "ipython"
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(KERNEL_CONFIG)
    return ipython_dir


# -- 3. The download, one step a function -----------------------------------------


def restore_outputs(notebook, cache_path: str):
    """The notebook with its outputs from the execution cache, glue records dropped.

    Returns the notebook unchanged when the cache has no record of it.
    """
    try:
        _, merged = get_cache(cache_path).merge_match_into_notebook(notebook)
    except KeyError:  # not in the cache: the page was not executed
        return notebook
    for cell in merged.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not _is_glue_record(o)]
    return merged


def _is_glue_record(output) -> bool:
    """An output ``myst_nb.glue`` stored under a prefixed MIME type."""
    scrapbook = output.get("metadata", {}).get("scrapbook", {})
    return bool(scrapbook.get("mime_prefix"))


def _stripped(text: str) -> str:
    return text.rstrip() + "\n" if text.rstrip() else ""


def drop_merged_streams(outputs: list) -> list:
    """The outputs without the stream outputs their stream's first one holds.

    myst-nb's ``nb_merge_streams`` joins a cell's stream outputs into the
    first one but leaves the others in the saved notebook, so a download
    would print their text twice. Outputs the first does not hold are kept.

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


# Directives whose body is code, not prose: nothing in it is translated.
CODE_DIRECTIVES = {
    "code-cell", "code-block", "code", "sourcecode", "math", "raw", "pysource",
    "toctree", "eval-rst", "literalinclude", "csv-table",
}  # fmt: skip


@functools.cache
def _markdown():
    """The markdown-it parser myst-parser reads the book's pages with."""
    config = MdParserConfig(
        enable_extensions={"amsmath", "colon_fence", "dollarmath", "deflist"}
    )
    return create_md_parser(config, RendererHTML)


def _message(text: str) -> str:
    """A text as Sphinx extracts it as a message: lines joined, ends stripped."""
    return " ".join(text.splitlines()).strip()


def translate_markdown(text: str, translate: Callable[[str], str | None]) -> str:
    """A MyST markdown text with each translated piece of prose replaced.

    The pieces are markdown-it's inline tokens (headings, paragraphs, list
    items, table cells, definition terms), looked up as Sphinx extracts
    them; their line ranges come from the tokens' ``map``. A prose
    directive's title and body (an admonition, an exercise) are translated
    too; code, math and everything not found in the catalog stay as they are.

    >>> table = {"A heading": "标题", "Some text on two lines.": "两行文字。",
    ...          "A tip": "提示", "Cell": "格"}
    >>> print(translate_markdown(
    ...     "# A heading\\n\\nSome text\\non two lines.\\n\\n"
    ...     "| Cell | x |\\n|---|---|\\n\\n"
    ...     "```{tip} A tip\\n- Some text on two lines.\\n```\\n", table.get), end="")
    # 标题
    <BLANKLINE>
    两行文字。
    <BLANKLINE>
    | 格 | x |
    |---|---|
    <BLANKLINE>
    ```{tip} 提示
    - 两行文字。
    ```
    """
    lines = text.splitlines(keepends=True)
    # Later line ranges first, so that earlier ranges keep their numbers.
    for first, last, new in sorted(_replacements(lines, translate), reverse=True):
        lines[first:last] = new
    return "".join(lines)


def _replacements(lines: list[str], translate) -> list[tuple[int, int, list[str]]]:
    """``(first, last, new lines)`` for each translated piece of ``lines``."""
    found = []
    for token in _markdown().parse("".join(lines)):
        if token.map is None:
            continue
        first, last = token.map
        if token.type == "inline":
            new = _translate_inline(lines, first, last, token.content, translate)
            if new is not None:
                found.append((first, last, new))
        elif token.type in ("fence", "colon_fence") and token.info.startswith("{"):
            name, _, title = token.info[1:].partition("}")
            if name in CODE_DIRECTIVES:
                continue
            new = _translate_directive(lines, first, last, title.strip(), translate)
            found.extend(new)
    return found


def _translate_inline(lines, first, last, content, translate) -> list[str] | None:
    if not _message(content):  # an empty table cell: no message (gettext's
        return None  # "" is the catalog's header)
    translated = translate(_message(content))
    if not translated:
        return None
    translated = " ".join(translated.splitlines())
    head = content.splitlines()[0]
    line = lines[first]
    at = line.find(head)
    if at < 0:
        return None
    if last - first == 1:  # one line: a heading, a short paragraph, a table cell
        return [line[:at] + line[at:].replace(content, translated, 1)]
    end = "\n" if lines[last - 1].endswith("\n") else ""
    return [line[:at] + translated + end]


def _translate_directive(lines, first, last, title, translate):
    """The title and the prose body of a directive fenced on lines first..last."""
    found = []
    if title and translate(title):
        found.append(
            (first, first + 1, [lines[first].replace(title, translate(title))])
        )
    closed = last - first >= 2 and lines[last - 1].strip().startswith(("`", ":"))
    start = first + 1 + _options_length(lines[first + 1 : last])
    body = lines[start : last - 1 if closed else last]
    indent = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
    inner = [b[indent:] if b.strip() else b for b in body]
    for a, b, new in _replacements(inner, translate):
        found.append((start + a, start + b, [" " * indent + n for n in new]))
    return found


def _options_length(body: list[str]) -> int:
    """How many lines at the top of a directive's body are its options.

    Options come as ``:name: value`` lines or as a YAML block between ``---``.

    >>> _options_length([":class: tip", ":label: x", "", "Text"])
    2
    >>> _options_length(["---", "class: tip", "---", "Text"])
    3
    """
    if body and body[0].strip() == "---":
        ends = [i for i, line in enumerate(body[1:], 1) if line.strip() == "---"]
        return ends[0] + 1 if ends else 0
    count = 0
    while count < len(body) and re.match(r"\s*:[\w-]+:", body[count]):
        count += 1
    return count


def translate_notebook(notebook, translate: Callable[[str], str | None]):
    """The notebook with its markdown cells and code comments translated.

    A translated comment that would change the code is not used (see
    :func:`i18n_code.same_code`).
    """
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, translate)
        elif cell.cell_type == "code":
            new, _ = i18n_code.translate_code(cell.source, translate)
            if i18n_code.same_code(cell.source, new):
                cell.source = new
    return notebook


def page_catalog(app, docname: str) -> Callable[[str], str | None]:
    """A lookup in the page's compiled catalog for this build's language."""
    import gettext

    # One catalog per page (conf.py sets gettext_compact = False): the
    # catalog's domain is the page's docname.
    if app.config.gettext_compact is not False:
        raise ValueError(
            "the notebooks extension expects one catalog per page: "
            f"gettext_compact = False, got {app.config.gettext_compact!r}"
        )
    domain = docname
    lookups = []
    for folder in app.config.locale_dirs:
        try:
            lookups.append(
                gettext.translation(
                    domain, Path(app.srcdir, folder), [app.config.language]
                )
            )
        except OSError:
            continue

    def translate(message: str) -> str | None:
        for catalog in lookups:
            found = catalog.gettext(message)
            if found != message:
                return found
        return None

    return translate


def saved_notebook(app, docname: str) -> Path:
    """Where myst-nb saved the page's notebook in this build."""
    return Path(app.env.mystnb_config.output_folder, f"{docname}.ipynb")


def is_translated(app) -> bool:
    return app.config.language not in (None, "", "en")


def dist_files(app) -> dict[str, Path]:
    """The package's wheel and sdist that ``make html`` built for this release."""
    dist = Path(app.doctreedir).parent / "dist"
    name = PACKAGE.replace("-", "_")
    return {
        "wheel": dist / f"{name}-{app.config.release}-py3-none-any.whl",
        "sdist": dist / f"{name}-{app.config.release}.tar.gz",
    }


def install_command(wheel: Path) -> str:
    """The one command that installs the downloaded wheel and the notebooks' needs.

    >>> install_command(Path("dist/attention-1.0.0-py3-none-any.whl"))
    'pip install "attention-1.0.0-py3-none-any.whl[notebooks]"'
    """
    return f'pip install "{wheel.name}[notebooks]"'


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
    if is_translated(app):
        notebook = translate_notebook(notebook, page_catalog(app, docname))
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    note = download_note(app, docname, path)
    section.insert(section.first_child_matching_class(nodes.title) + 1, note)


def _download(app, docname: str, path: Path) -> addnodes.download_reference:
    target = "/" + os.path.relpath(path, app.srcdir).replace(os.sep, "/")
    link = addnodes.download_reference("", "", refdoc=docname, reftarget=target)
    link += nodes.literal(path.name, path.name, classes=["xref", "download"])
    return link


def download_note(app, docname: str, notebook: Path) -> nodes.admonition:
    """The "Run this page yourself" box: two downloads and one command."""
    wheel = dist_files(app)["wheel"]
    note = nodes.admonition(classes=["tip", "nb-download-tip"])
    note += nodes.title("", str(_("Run this page yourself")))
    note += nodes.paragraph(
        "",
        "",
        nodes.Text(str(_("Download the notebook")) + " "),
        _download(app, docname, notebook),
        nodes.Text(" " + str(_("and the package")) + " "),
        _download(app, docname, wheel),
        nodes.Text(" " + str(_("into one folder. In a fresh environment, run:"))),
    )
    command = install_command(wheel)
    note += nodes.literal_block(command, command, language="sh")
    note += nodes.paragraph(
        "",
        "",
        nodes.Text(
            str(
                _(
                    "Then open the notebook in Jupyter. Every page's notebook and the "
                    "wheel are also in one file:"
                )
            )
            + " "
        ),
        _archive_link(app, docname),
    )
    return note


def _archive_link(app, docname: str) -> nodes.reference:
    """A link from the page to the edition's archive of the book's code."""
    name = ARCHIVE.format(release=app.config.release)
    link = nodes.reference("", "", refuri="../" * docname.count("/") + name)
    link += nodes.literal(name, name, classes=["xref", "download"])
    return link


# -- 4. The book's code in one file -------------------------------------------------


class BookFile(SphinxRole):
    """``{book-file}`wheel``` (or ``sdist``, ``archive``): a file of the book's code."""

    def run(self):
        app = self.env.app
        kind = self.text.strip()
        if kind == "archive":
            return [_archive_link(app, self.env.docname)], []
        files = dist_files(app)
        if kind not in files:
            msg = (
                f"book-file: expected one of archive, {', '.join(files)}; got {kind!r}"
            )
            return [], [self.inliner.reporter.error(msg, line=self.lineno)]
        link = _download(app, self.env.docname, files[kind])
        self.set_source_info(link)
        return [link], []


class InstallCommand(SphinxDirective):
    """``{install-command}``: the command that installs this release's wheel."""

    def run(self):
        command = install_command(dist_files(self.env.app)["wheel"])
        block = nodes.literal_block(command, command, language="sh")
        self.set_source_info(block)
        return [block]


def _check_dist(app) -> None:
    for kind, path in dist_files(app).items():
        if not path.is_file():
            logger.warning(
                "notebooks: the package's %s %s is missing: `make html` builds it "
                "before Sphinx runs",
                kind,
                path,
            )


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
    write_archive(out, notebooks, dist_files(app)["wheel"])


def _own_output_folder(app) -> None:
    """A translated build keeps its executed notebooks out of the English site.

    myst-nb saves them next to the output folder, which for
    ``_build/html/zh_CN`` is inside the English site: use
    ``_build/jupyter_execute-zh_CN`` instead. myst-nb has no option for the
    folder (upstream: executablebooks/MyST-NB issue 129, open);
    ``tests/test_notebooks_ext.py`` fails when its placement changes.
    """
    config = getattr(app.env, "mystnb_config", None)
    if not is_translated(app) or config is None:
        return
    folder = Path(app.doctreedir).parent / f"jupyter_execute-{app.config.language}"
    app.env.mystnb_config = config.copy(output_folder=str(folder.resolve()))


def _load_catalog(app, env, docnames) -> None:
    # After Sphinx compiled the catalogs (.po -> .mo), before the pages are read.
    for folder in app.config.locale_dirs:
        app.add_message_catalog(CATALOG, str(Path(app.srcdir, folder)))


def setup(app):
    app.setup_extension("myst_nb")
    app.setup_extension("i18n_code")
    app.add_config_value("notebooks_package_root", str(Path.cwd()), "env", str)
    # Kernels inherit the build's environment. The profile sits next to the
    # doctrees: a build into _build/html/zh_CN must not put it in a site.
    os.environ["IPYTHONDIR"] = str(kernel_profile(Path(app.doctreedir).parent))
    app.add_role("book-file", BookFile())
    app.add_directive("install-command", InstallCommand)
    app.connect("config-inited", _cache_per_package_digest)
    app.connect("builder-inited", _own_output_folder, priority=900)  # after myst-nb
    app.connect("builder-inited", _check_dist)
    app.connect("env-before-read-docs", _load_catalog)
    app.connect("source-read", _depend_on_package)
    # Before Sphinx's collectors (500): its download collector registers the
    # files the note links, so that they are copied into _downloads.
    app.connect("doctree-read", _offer_download, priority=400)
    app.connect("build-finished", _write_archive)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
