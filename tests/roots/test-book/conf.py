"""A tiny book for tests/test_book_ext.py: every extension of book/_ext at work."""

from pathlib import Path

import attention

ROOT = Path(attention.__file__).parents[1]  # where the package's code lives
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
extensions += ["sphinx.ext.napoleon", "sphinx_exercise"]
extensions += ["package_cache", "downloads", "pysource", "i18n_code"]
extensions += ["site_language", "exercise_titles", "variants_api"]
extensions += ["live_widgets", "svgmath"]
pysource_root = package_cache_root = str(ROOT)
release = "0.0.test"
nb_execution_mode = "off"  # the tests check what the extensions do, not cells
myst_enable_extensions = ["dollarmath"]
html_math_renderer = "svgmath"
locale_dirs = ["locales/"]
gettext_compact = False
exclude_patterns = ["_build"]
napoleon_custom_sections = [("Shape", "params_style")]
# What `make html` makes before Sphinx runs, here stand-ins: the wheel, and
# the weights a cell of the notebook page would export for its live widget.
_BUILD = Path(__file__).parent / "_build"
nb_execution_cache_path = str(_BUILD / "jupyter_cache")  # the Makefile's -D
(_BUILD / "dist").mkdir(parents=True, exist_ok=True)
(_BUILD / "dist" / f"attention-{release}-py3-none-any.whl").write_bytes(b"a wheel")
(_BUILD / "attention-live").mkdir(exist_ok=True)
(_BUILD / "attention-live" / "demo.json").write_text('{"kind": "learned"}')
html_theme = "basic"  # no theme to load: a faster build
