"""Sphinx configuration for the book. The Makefile runs ``sphinx-build -c . book ...``.

Settings only: what the book does beyond Sphinx and its extensions lives in
``book/_ext``, one module per job (see the README's "How the repository is
laid out").
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # autodoc imports the package from the checkout
sys.path.insert(0, str(ROOT / "book" / "_ext"))  # the book's own extensions

project = "Coding Attention Mechanisms"
author = "The attention-book authors"
copyright = "2026, the attention-book authors"
# The package's version: in the names of the wheel and the code archive.
release = version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "version"
]

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "sphinx_design",
    "sphinx_exercise",
    "sphinx_togglebutton",
    # The book's own, in book/_ext, one job each:
    "notebooks",  # fresh outputs, the downloads and the wheel, the code archive
    "pysource",  # the package's real code on the pages, "Listing 3.x"
    "i18n_code",  # code comments (and alt texts) as messages of the catalogs
    "site_language",  # the editions side by side: switch, search, title
    "exercise_titles",  # "Exercise 3.1: <title>", in every edition
    "variants_api",  # API entries for attention.VARIANTS
    "balanced_read",  # -j 2 reading processes share the work
    "svgmath",  # formulas drawn as SVG at build time (html_math_renderer)
    "lean_static",  # theme files no page loads (source maps) leave the build
    "book_pdf",  # make pdf: singlehtml writes html-only nodes too
]
pysource_root = notebooks_package_root = str(ROOT)

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
# myst-nb's toggle texts (nb_code_prompt_show / nb_code_prompt_hide) per
# language. The book hides only cell sources (tag hide-input), so the texts
# say "code" where myst-nb's English default fills in {type} = "source".
i18n_nb_code_prompts = {"zh_CN": ("显示代码", "隐藏代码")}
# The API reference's docstrings go through reference/api.po like the pages'
# text (book/_ext/i18n_code.py); the English docstrings stay the source.
i18n_translate_docstrings = True

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

# -- Exercises ------------------------------------------------------------------
# A solution follows its exercise; its title is "Solution", with no link to
# the exercise (a link there swallowed the click that opens the solution).
exercise_style = "solution_follow_exercise"

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
# Theme options that are words, per edition (book/_ext/site_language.py merges
# them into html_theme_options). The themes' other labels are translated by
# book/locales/<language>/LC_MESSAGES/sphinx.po.
i18n_html_theme_options = {"zh_CN": {"search_bar_text": "搜索本书…"}}
# A named default: with none, the theme logs a console error on a first visit.
html_context = {"default_mode": "auto"}
# Formulas are drawn as SVG when pages are written (book/_ext/svgmath.py): no
# MathJax, no math fonts, nothing loaded from the network.
html_static_path = ["book/_static"]
html_math_renderer = "svgmath"
html_css_files = ["book.css"]
# Wide code blocks take the keyboard focus even when they appear later.
html_js_files = ["focusable-scroll.js"]
html_last_updated_fmt = None
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True
