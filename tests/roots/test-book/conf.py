"""A tiny book for tests/test_book_ext.py: every extension of book/_ext at work."""

from pathlib import Path

import attention

ROOT = Path(attention.__file__).parents[1]  # where the package's code lives
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
extensions += ["sphinx.ext.napoleon", "sphinx_exercise"]
extensions += ["package_cache", "downloads", "pysource", "i18n_code"]
extensions += ["site_language", "exercise_titles", "variants_api"]
pysource_root = package_cache_root = str(ROOT)
release = "0.0.test"
nb_execution_mode = "off"  # the tests check what the extensions do, not cells
locale_dirs = ["locales/"]
gettext_compact = False
exclude_patterns = ["_build"]
napoleon_custom_sections = [("Shape", "params_style")]
# The wheel that `make html` builds before Sphinx runs, here a stand-in.
_DIST = Path(__file__).parent / "_build" / "dist"
_DIST.mkdir(parents=True, exist_ok=True)
(_DIST / f"attention-{release}-py3-none-any.whl").write_bytes(b"a wheel")
html_theme = "basic"  # no theme to load: a faster build
