"""Sphinx configuration for the book. The Makefile runs ``sphinx-build -c . book ...``.

Two project-specific hooks live at the bottom:

- outputs never go stale: every page that imports ``attention`` records a
  digest of the package's source; when the digest changes, those pages are
  read, and so executed, again;
- every executed page offers itself as a notebook download.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

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
    "sphinx-mathjax-offline",  # MathJax 3 and its fonts, served from _static
    "pysource",  # book/_ext/pysource.py: shows the package's real code
    "exercise_titles",  # book/_ext/exercise_titles.py: "Exercise 3.1: <title>"
    "nb_streams",  # book/_ext/nb_streams.py: downloads show each print once
]
pysource_root = str(ROOT)

exclude_patterns = [
    "_build",
    "**/_build",
    "_ext",
    "_static",
    ".venv",
    "**.ipynb_checkpoints",
]
root_doc = "index"

# -- MyST and execution -------------------------------------------------------
myst_enable_extensions = ["amsmath", "colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
# "force": a page is executed whenever Sphinx reads it. Sphinx reads a page
# when its source changed or when the hook below marks it outdated, so there
# is no separate execution cache that could go stale.
nb_execution_mode = "force"
nb_execution_raise_on_error = True  # a failing cell fails the build
nb_execution_timeout = 300
nb_merge_streams = True
nb_execution_show_tb = True

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
html_last_updated_fmt = None
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True

# -- Outputs never go stale ----------------------------------------------------
_IMPORTS_PACKAGE = re.compile(r"^\s*(?:from|import)\s+attention\b", re.MULTILINE)


def package_digest() -> str:
    """SHA-256 over every file of the ``attention`` package (code and data)."""
    h = hashlib.sha256()
    files = (ROOT / "attention").rglob("*")
    for path in sorted(
        p for p in files if p.is_file() and "__pycache__" not in p.parts
    ):
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


PACKAGE_DIGEST = package_digest()


def _record_digest(app, docname, source):
    digests = app.env.__dict__.setdefault("attention_digests", {})
    if _IMPORTS_PACKAGE.search(source[0]):
        digests[docname] = PACKAGE_DIGEST
    else:
        digests.pop(docname, None)


def _outdated_by_package(app, env, added, changed, removed):
    digests = env.__dict__.setdefault("attention_digests", {})
    stale = [doc for doc, seen in digests.items() if seen != PACKAGE_DIGEST]
    return [doc for doc in stale if doc in env.found_docs]


def _purge(app, env, docname):
    env.__dict__.setdefault("attention_digests", {}).pop(docname, None)


# -- Every executed page offers a notebook download ------------------------------
_KERNEL_PAGE = re.compile(r"\A---\n.*?^kernelspec:", re.MULTILINE | re.DOTALL)
_FIRST_TITLE = re.compile(r"^# .+$", re.MULTILINE)


def _add_download_link(app, docname, source):
    text = source[0]
    if not _KERNEL_PAGE.match(text):
        return
    name = docname.rsplit("/", 1)[-1]
    link = (
        "\n\n```{admonition} Run this page yourself\n:class: tip nb-download-tip\n"
        f"{{nb-download}}`Download {name}.ipynb <{name}.ipynb>`, the executed "
        "notebook of this page. It runs anywhere the `attention` package is "
        "installed (`pip install -e .` in the book's repository).\n```\n"
    )
    source[0] = _FIRST_TITLE.sub(lambda m: m.group(0) + link, text, count=1)


# -- A build with warnings is not remembered -----------------------------------
def _forget_failed_build(app, exception):
    """Delete the saved environment after a build that warned.

    With ``-W --keep-going`` Sphinx saves the environment even when a page
    warned; the next incremental build would then not re-read that page and
    would pass silently. Sphinx already does this for builds that raise.
    """
    if exception is None and app._warncount:
        (Path(app.doctreedir) / "environment.pickle").unlink(missing_ok=True)


def setup(app):
    app.connect("build-finished", _forget_failed_build)
    app.connect("source-read", _record_digest)
    app.connect("source-read", _add_download_link)
    app.connect("env-get-outdated", _outdated_by_package)
    app.connect("env-purge-doc", _purge)
