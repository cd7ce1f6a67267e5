"""sphinx-mathjax-offline, declared safe for parallel builds.

The extension (MathJax 3 and its fonts, copied into ``_static`` when the
build ends) keeps no state, but its ``setup`` does not say so, and Sphinx
then reads the pages one at a time. ``make html`` reads them two at a time
(``-j 2``): every page executes in its own kernel, so the two cores each run
one.
"""

import importlib

_offline = importlib.import_module("sphinx-mathjax-offline")


def setup(app):
    _offline.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
