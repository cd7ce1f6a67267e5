"""Sphinx configuration for the book. The Makefile runs ``sphinx-build -c . book ...``.

Project-specific hooks live at the bottom, on public Sphinx APIs only:

- outputs never go stale: every page that imports ``attention`` depends on
  the package's files, and the execution cache is keyed on the package's
  digest;
- every executed page offers itself as a notebook download;
- a build that warned is not remembered.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import sys
from pathlib import Path

from docutils import nodes
from jupyter_cache import get_cache
from sphinx import addnodes
from sphinx.application import ENV_PICKLE_FILENAME
from sphinx.pycode import ModuleAnalyzer

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # autodoc imports the package from the checkout
sys.path.insert(0, str(ROOT / "book" / "_ext"))  # the book's own directives

project = "Coding Attention Mechanisms"
author = "The attention-book authors"
copyright = "2026, the attention-book authors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "sphinx_design",
    "sphinx_exercise",
    "sphinx_togglebutton",
    "mathjax_offline",  # book/_ext/mathjax_offline.py: MathJax 3 and fonts in _static
    "balanced_read",  # book/_ext/balanced_read.py: -j 2 processes share the work
    "pysource",  # book/_ext/pysource.py: shows the package's real code
    "exercise_titles",  # book/_ext/exercise_titles.py: "Exercise 3.1: <title>"
    "nb_streams",  # book/_ext/nb_streams.py: downloads show each print once
    "variants_api",  # book/_ext/variants_api.py: API entries for attention.VARIANTS
    "i18n_site",  # book/_ext/i18n_site.py, i18n_code.py: the 简体中文 edition
    # myst-nb 1.4 saves the downloads without outputs in cache mode: put them back.
    "nb_cache_downloads",  # book/_ext/nb_cache_downloads.py
]
pysource_root = str(ROOT)

exclude_patterns = [
    "_build",
    "**/_build",
    "_ext",
    "_static",
    "_templates",
    "locales",
    ".venv",
    "**.ipynb_checkpoints",
]
root_doc = "index"

# -- MyST and execution -------------------------------------------------------
myst_enable_extensions = ["amsmath", "colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
# "cache": a page's cells run when Sphinx reads the page and the cache (kept
# for one package digest, see the hooks at the bottom) has no outputs for
# exactly these cells.
nb_execution_mode = "cache"
nb_execution_raise_on_error = True  # a failing cell fails the build
nb_execution_timeout = 300
nb_merge_streams = True
nb_execution_show_tb = True

# -- 简体中文 edition (i18n) -----------------------------------------------------
# `make html` also builds `-D language=zh_CN` into _build/html/zh_CN; `make
# update-po` refreshes the catalogs: book/locales/zh_CN/LC_MESSAGES/<page>.po,
# one per page. Code comments are messages of their own (i18n_code.py).
locale_dirs = ["locales/"]  # relative to book/
gettext_compact = False  # one catalog per page, not per folder
gettext_location = False  # no line numbers in the catalogs: no churn on edits
i18n_html_title = {"zh_CN": "动手编写注意力机制"}

# -- API reference ------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": False}
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = [("Shape", "params_style")]
# torch is not documented here (no network for intersphinx): don't demand links.
nitpick_ignore_regex = [
    (r"py:.*", r"torch(\..*)?"),
    (r"py:.*", r"nn\..*"),
    (r"py:class", r"Tensor"),
    (r"py:class", r"collections\.abc\..*"),
]

# -- HTML ----------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "Coding Attention Mechanisms"
html_theme_options = {
    "use_download_button": True,
    "show_toc_level": 2,
    "home_page_in_toc": True,
    # pydata-sphinx-theme 0.20 re-adds its own navbar under sphinx-book-theme 1.4:
    # a second search box across the top and hidden duplicate sidebar toggles
    # that steal the phone menu's click handler (sphinx-book-theme issue 986).
    "navbar_persistent": [],
}
# A named default: with none, the theme logs a console error on a first visit.
html_context = {"default_mode": "auto"}
html_static_path = ["book/_static"]  # relative to this file
html_css_files = ["book.css"]
# Wide code blocks take the keyboard focus even when they appear later.
html_js_files = ["focusable-scroll.js"]
html_last_updated_fmt = None
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True

# -- Outputs never go stale ----------------------------------------------------
# Two public mechanisms together:
#
# - every page that imports ``attention`` declares each file of the package as
#   a dependency (``env.note_dependency``), so Sphinx reads, and myst-nb runs,
#   the page again whenever one of those files changes;
# - the execution cache belongs to one digest of the package: a changed
#   package empties it, so it never finds the old outputs. Any other re-read
#   (a prose edit, a touched file, another edition) finds the cells' outputs
#   in the cache and executes nothing.
_IMPORTS_PACKAGE = re.compile(r"^\s*(?:from|import)\s+attention\b", re.MULTILINE)
PACKAGE_FILES = sorted(
    p
    for p in (ROOT / "attention").rglob("*")
    if p.is_file() and "__pycache__" not in p.parts
)


def package_digest() -> str:
    """SHA-256 over every file of the ``attention`` package (code and data)."""
    h = hashlib.sha256()
    for path in PACKAGE_FILES:
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


PACKAGE_DIGEST = package_digest()


def _depend_on_package(app, docname, source):
    if _IMPORTS_PACKAGE.search(source[0]):
        for path in PACKAGE_FILES:
            app.env.note_dependency(str(path))


def _cache_per_package_digest(app, config):
    """One execution cache, next to the build's doctrees, for one package digest.

    The cache folder keeps its name (a changed config value would make Sphinx
    read every page again); a file in it names the digest its outputs were
    computed with, and a different digest empties it.
    """
    cache = Path(app.doctreedir).parent / "jupyter_cache"
    config.nb_execution_cache_path = str(cache)
    stamp = cache / "package-digest.txt"
    if stamp.is_file() and stamp.read_text() != PACKAGE_DIGEST:
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(PACKAGE_DIGEST)
    # Create the cache's database now, before Sphinx forks its reading
    # processes (-j 2). Two processes that both found no database would both
    # create its tables, and one would fail: "table nbproject already exists".
    get_cache(str(cache)).list_cache_records()


# -- Every executed page offers its notebook -------------------------------------
DOWNLOAD_NOTE = (
    ": this page as a Jupyter notebook, with its outputs. It runs on its own. "
    "In a clone of the book's repository, install the package and everything "
    "the notebooks import with"
)
NOTEBOOKS_INSTALL = 'pip install -e ".[notebooks]"'


def _add_download_note(app, doctree):
    """Put a download note under the title of every page executed as a notebook."""
    docname = app.env.docname
    output_folder = Path(app.env.mystnb_config.output_folder)
    notebook = output_folder.joinpath(*docname.split("/")).with_suffix(".ipynb")
    is_notebook = any("cell" in n["classes"] for n in doctree.findall(nodes.container))
    section = next(iter(doctree.findall(nodes.section)), None)
    if not (is_notebook and notebook.is_file() and section is not None):
        return
    name = notebook.name
    target = "/" + os.path.relpath(notebook, app.srcdir).replace(os.sep, "/")
    link = addnodes.download_reference("", "", refdoc=docname, reftarget=target)
    link += nodes.literal(name, name, classes=["xref", "download"])
    note = nodes.admonition(classes=["tip", "nb-download-tip"])
    note += nodes.title("", "Run this page yourself")
    note += nodes.paragraph(
        "", "", nodes.Text("Download "), link, nodes.Text(DOWNLOAD_NOTE + ":")
    )
    note += nodes.literal_block(NOTEBOOKS_INSTALL, NOTEBOOKS_INSTALL, language="sh")
    section.insert(section.first_child_matching_class(nodes.title) + 1, note)


# -- viewcode reads the package's source without importing it ---------------------
def _package_source(app, modname):
    """Source and tags of an ``attention`` module, read as text.

    viewcode would import the module to find its file, on every build, and
    importing ``attention`` imports torch: seconds of a no-op build.
    """
    if modname.split(".")[0] != "attention":
        return None
    path = ROOT.joinpath(*modname.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    code = path.read_text(encoding="utf-8")
    return code, ModuleAnalyzer.for_string(code, modname, str(path)).find_tags()


# -- A build with warnings is not remembered -----------------------------------
class _WarningCounter(logging.Handler):
    """Counts the warnings Sphinx logs (its loggers are ``sphinx.*``)."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1


def _forget_failed_build(app, exception, counter):
    """Delete the saved environment after a build that warned.

    With ``-W --keep-going`` Sphinx saves the environment even when a page
    warned; the next incremental build would then not re-read that page and
    would pass silently. Sphinx already does this for builds that raise.
    """
    if exception is None and counter.count:
        (Path(app.doctreedir) / ENV_PICKLE_FILENAME).unlink(missing_ok=True)


def setup(app):
    counter = _WarningCounter()
    logging.getLogger("sphinx").addHandler(counter)
    app.connect(
        "build-finished", functools.partial(_forget_failed_build, counter=counter)
    )
    app.connect("config-inited", _cache_per_package_digest)
    app.connect("source-read", _depend_on_package)
    app.connect("doctree-read", _add_download_note, priority=400)  # before collectors
    app.connect("viewcode-find-source", _package_source)
