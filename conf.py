"""Sphinx configuration for the book (the Makefile runs ``sphinx-build -c . book``).

Settings only: what the book does beyond Sphinx and its extensions lives in
``book/_ext``, one module a job (the README's map).
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
# The package's version, in the names of the wheel and the code archive.
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
    "package_cache",  # the execution cache per package digest, page dependencies
    "downloads",  # the notebook download (translated: notebook_i18n), the archive
    "pysource",  # the package's real code on the pages, "Listing 3.x"
    "i18n_code",  # code comments (and alt texts) as messages of the catalogs
    "site_language",  # the editions side by side: switch, search, title
    "exercise_titles",  # "Exercise 3.1: <title>", in every edition
    "variants_api",  # API entries for attention.VARIANTS
    "live_widgets",  # the trained weights and the live widgets on their pages
    "svgmath",  # formulas drawn as SVG at build time (html_math_renderer)
    "lean_static",  # theme files no page loads (source maps) leave the build
    "reader_questions",  # "Questions readers ask", from book/_data/questions.yaml
]
pysource_root = package_cache_root = str(ROOT)

# The single page that `make pdf` prints (sphinx-build -b singlehtml -t pdf):
# its figures numbered, and the nodes only html knows written there too.
if tags.has("pdf"):  # noqa: F821 (Sphinx gives conf.py its build's tags)
    extensions.append("singlehtml_nodes")
    numfig = True

exclude_patterns = ["_build", "**/_build", "locales", "**.ipynb_checkpoints"]

# -- MyST and execution -------------------------------------------------------
myst_enable_extensions = ["amsmath", "colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
# A page's cells run when the cache has no outputs for exactly these cells.
# The cache is one folder for both editions, named on the Makefile's line
# (-D nb_execution_cache_path=<build>/jupyter_cache), and package_cache.py
# empties it when the package changes.
nb_execution_mode = "cache"
nb_execution_raise_on_error = True  # a failing cell fails the build
nb_execution_timeout = 300
nb_merge_streams = True
nb_execution_show_tb = True

# -- 简体中文 edition (i18n) -----------------------------------------------------
# `make html` also builds `-D language=zh_CN` into _build/html/zh_CN, its words
# (title, toggle texts, search box) set with -D on the Makefile's line.
# `make update-po` refreshes book/locales/zh_CN/LC_MESSAGES/<page>.po.
locale_dirs = ["locales/"]  # relative to book/
gettext_compact = False  # one catalog per page, not per folder
gettext_location = False  # no line numbers in the catalogs: no churn on edits
# The Chinese search segments with jieba, the book's terms as whole words
# (the English search ignores it).
html_search_options = {"dict": str(ROOT / "book/locales/zh_CN/search-terms.txt")}

# -- API reference ------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# No autodoc_default_options: a "members" default there (even False) makes
# Sphinx 9.0 ignore a directive's own ":members: name, ..." (sphinx-doc/sphinx
# issue 9709), and the API page lists chosen members that way.
autodoc_inherit_docstrings = False
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
# A solution follows its exercise, titled "Solution" with no link to it (a
# link swallowed the click that opens the solution).
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
    # The language switch (site_language.py) before the theme's buttons.
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
}
# Before the themes' components of the same name. The themes' labels are
# translated in book/locales/<lang>/LC_MESSAGES/sphinx.po.
templates_path = ["book/_templates"]
# A named default: with none, the theme logs a console error on a first visit.
# book_pdf: the PDF the front page links, which `make pdf` puts beside it (the
# zh_CN edition's name is given on the Makefile's line, -A book_pdf=...).
html_context = {"default_mode": "auto", "book_pdf": "book.pdf"}
# Formulas are SVG drawn at build time (svgmath.py): no MathJax, no network.
html_static_path = ["book/_static"]
html_math_renderer = "svgmath"
html_css_files = ["book.css", "i18n.css"]
# Wide code blocks take the keyboard focus even when they appear later.
html_js_files = ["focusable-scroll.js"]
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True
