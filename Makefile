# Two commands: `make html` builds the book, `make test` runs every check.
# Both create .venv and install the pinned dependencies on first use.
#
# The file reads top to bottom: first every setting, then the rules, each
# with the files it makes. `BUILDDIR=...` moves the build folder.

# -- Settings ------------------------------------------------------------------

PYTHON   ?= python3
VENV     := .venv
BIN      := $(VENV)/bin
# Made when the pinned dependencies and the package are installed into .venv.
STAMP    := $(VENV)/.installed
BUILDDIR ?= _build

# Every Sphinx build of the book (both editions, the PDF's single page, the
# catalogs) runs with these options:
# -n -W --keep-going: every warning, and a failing cell, fails the build.
# -j 2: two pages are read, and their notebooks executed, at a time, one per
#   core of the 2-core machine; the log gives each page's time to execute.
SPHINXOPTS ?= -n -W --keep-going -j 2
# One execution cache for every build, so the 简体中文 edition and the PDF
# read the outputs the English edition computed (book/_ext/package_cache.py
# empties it when the package changes).
CACHE := $(abspath $(BUILDDIR))/jupyter_cache
# The kernels' environment. One torch thread per kernel: with -j 2, two
# kernels run at once on the two cores, and torch's default (a thread per
# core in each) puts four threads on two cores that wait for each other;
# cells that time something set their own. The cells that train a live
# widget's weights export them (attention.live.save_exports) into
# ATTENTION_LIVE_DIR, where book/_ext/live_widgets.py reads them: an absolute
# path, as each kernel runs in its page's folder.
KERNEL_ENV := OMP_NUM_THREADS=1 ATTENTION_LIVE_DIR=$(abspath $(BUILDDIR))/attention-live
SPHINX := env $(KERNEL_ENV) $(BIN)/python -m sphinx -c . \
	-D nb_execution_cache_path=$(CACHE) $(SPHINXOPTS)
# The English edition executes the pages: `$(WARM) $(SPHINX) ...` forks its
# kernels from a process that has imported torch once (book/_kernel/warm.py).
# That saves a fifth of a clean `make html` (88.5 s -> 69.9 s, medians of 3
# alternating rounds on a quiet 2-core machine, 2026-11-28).
WARM := env $(KERNEL_ENV) $(BIN)/python book/_kernel/warm.py

# The site: the English edition in $(SITE), the 简体中文 edition in
# $(SITE)/zh_CN with the same page paths. Sphinx writes the Chinese edition
# into $(ZH_OUT) first: myst-nb saves executed notebooks next to the output
# folder (its jupyter_execute/, no option moves it), which must not be in
# the site.
SITE    := $(BUILDDIR)/html
ZH      := zh_CN
ZH_OUT  := $(BUILDDIR)/$(ZH)/html
ZH_SITE := $(SITE)/$(ZH)
# The Chinese edition's words are plain configuration: the site's title,
# myst-nb's toggle of hidden cells (the book hides only code, so "code" where
# myst-nb's default says "source"), sphinx-togglebutton's hint on a folded
# solution, the search box and the footer's names; and the name of its PDF,
# which its front page links.
ZH_OPTS := -D language=$(ZH) -D html_title=动手编写注意力机制 \
	-D nb_code_prompt_show=显示代码 -D nb_code_prompt_hide=隐藏代码 \
	-D togglebutton_hint=点击显示 -D togglebutton_hint_hide=点击隐藏 \
	-D html_theme_options.search_bar_text=搜索本书… \
	-D author=本书作者 -D copyright=2026，本书作者 -A book_pdf=book-$(ZH).pdf
# Each edition's Sphinx runs only when something it reads changed: a page,
# the package, the configuration or the installed tools (a folder's time
# changes when a file in it is added or removed); Sphinx then re-reads only
# what changed. Only the Chinese edition reads the catalogs.
SOURCES  := conf.py $(shell find book attention -not -path '*/__pycache__*' \
	-not -path 'book/locales*' -not -name '*.pyc')
LOCALES  := $(shell find book/locales -not -name '*.mo')
EN_BUILT := $(SITE)/.built
ZH_BUILT := $(ZH_SITE)/.built
# The build's kernels run the venv's Python, and IPython reads the
# configuration in its environment's etc/ipython (book/_kernel explains why).
KERNEL_CONF := $(VENV)/etc/ipython/ipython_kernel_config.py

# The package as readers download it: its wheel and sdist, built once for both
# editions into $(DIST), where book/_ext/downloads.py finds them. The sdist
# also ships the package's tests (MANIFEST.in says which).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
DIST    := $(BUILDDIR)/dist
WHEEL   := $(DIST)/attention-$(VERSION)-py3-none-any.whl
PACKAGE := pyproject.toml README.md MANIFEST.in $(wildcard tests/*.py) \
	$(shell find attention -type f -not -path '*/__pycache__*' -not -name '*.pyc')

# The book as one PDF per edition, in the site beside each front page, which
# links it. Sphinx's singlehtml builder puts every page in reading order on
# one page ($(PDF_PAGES)/<edition>), from the same execution cache; `-t pdf`
# numbers its figures (conf.py). tools/print_pdf.py prints it with Chromium.
PDF_PAGES := $(BUILDDIR)/pdf
EN_PDF    := $(SITE)/book.pdf
ZH_PDF    := $(ZH_SITE)/book-$(ZH).pdf
# The browser tests and the PDF use Debian's Chromium; the Chinese PDF and the
# screenshots of the Chinese edition need Chinese glyphs.
CHROMIUM  := /usr/bin/chromium
FONTS_CJK := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc

# pytest, with the 15 slowest tests listed on every run, CI's included.
PYTEST := $(BIN)/python -m pytest -q --durations=15

# -- The site: make html -------------------------------------------------------

.PHONY: html test lint unit site pdf update-po repro bench serve clean
# A rule that fails deletes the file it was making: a half-printed PDF is not
# taken for a finished one by the next `make pdf`.
.DELETE_ON_ERROR:

html: $(EN_BUILT) $(ZH_BUILT)
	@echo "The book is in $(SITE)/index.html (简体中文: $(ZH_SITE)/index.html)"

# A build that failed is not remembered: with -W --keep-going Sphinx saves its
# environment even when a page warned, and the next build would not read that
# page again and pass. So a failed build deletes its doctrees.
$(EN_BUILT): $(STAMP) $(SOURCES) $(WHEEL) $(KERNEL_CONF)
	$(WARM) $(SPHINX) -b html -d $(BUILDDIR)/doctrees book $(SITE) \
		|| { rm -rf $(BUILDDIR)/doctrees; exit 1; }
	touch $@

# The Chinese edition executes nothing: it reads the outputs the English
# build left in the cache. In the site, its pages load the English copy of
# every identical asset (tools/share_assets.py): one copy of the images and
# theme files.
$(ZH_BUILT): $(EN_BUILT) $(LOCALES) tools/share_assets.py
	$(SPHINX) -b html -d $(BUILDDIR)/doctrees-$(ZH) $(ZH_OPTS) book $(ZH_OUT) \
		|| { rm -rf $(BUILDDIR)/doctrees-$(ZH); exit 1; }
	rm -rf $(ZH_SITE) && cp -a $(ZH_OUT) $(ZH_SITE)
	$(BIN)/python tools/share_assets.py $(SITE) $(ZH)
	touch $@

$(KERNEL_CONF): book/_kernel/ipython_kernel_config.py $(STAMP)
	mkdir -p $(@D) && cp $< $@

# Wheel and sdist both straight from the source tree (--sdist --wheel; by
# default the wheel is built from the unpacked sdist): the same files, a
# second sooner. The log is shown only when the build fails.
$(WHEEL): $(STAMP) $(PACKAGE)
	rm -rf $(DIST) && mkdir -p $(DIST)
	$(BIN)/python -m build --no-isolation --sdist --wheel --outdir $(DIST) . > $(DIST)/build.log \
		|| { cat $(DIST)/build.log; exit 1; }

# -- The PDFs: make pdf --------------------------------------------------------
# After `make html`: it prints each edition and puts the PDF in the site. It
# rebuilds neither edition's HTML: the front pages link the PDFs already.

pdf: $(EN_PDF) $(ZH_PDF)

# Each edition's single page, then one command prints both PDFs side by side:
# Chromium prints a book on one core (about 40 s each), the machine has two.
$(EN_PDF) $(ZH_PDF) &: $(EN_BUILT) $(ZH_BUILT) tools/print_pdf.py $(CHROMIUM) $(FONTS_CJK)
	$(SPHINX) -b singlehtml -t pdf -d $(BUILDDIR)/doctrees-pdf book $(PDF_PAGES)/en \
		|| { rm -rf $(BUILDDIR)/doctrees-pdf; exit 1; }
	$(SPHINX) -b singlehtml -t pdf -d $(BUILDDIR)/doctrees-pdf-$(ZH) $(ZH_OPTS) \
		book $(PDF_PAGES)/$(ZH) || { rm -rf $(BUILDDIR)/doctrees-pdf-$(ZH); exit 1; }
	$(BIN)/python tools/print_pdf.py $(FONTS_CJK) \
		$(PDF_PAGES)/en $(EN_PDF) $(PDF_PAGES)/$(ZH) $(ZH_PDF)

# -- The checks: make test -----------------------------------------------------

# Linter, doctests and unit tests, a full build and its PDFs, then the checks of
# the built site. The unit tests draw hypothesis's full count of examples here
# (quick loop: a few; profiles in tests/conftest.py).
test: export HYPOTHESIS_PROFILE = full
test: lint unit html pdf site

lint: $(STAMP)
	$(BIN)/ruff check attention tests conf.py book/_ext book/_kernel tools
	$(BIN)/ruff format --check attention tests conf.py book/_ext book/_kernel tools
	$(BIN)/actionlint -shellcheck=$(BIN)/shellcheck

# The quick loop: in-process tests, no build (the wheel's test is a site test),
# hypothesis's quick profile, on both cores (pytest-xdist's two workers, each
# taking the next test when it is free). The site tests are not even collected:
# they read the built site. pytest keeps the modules whose asserts it rewrote
# (the tests' and hypothesis's) as .pyc, unless PYTHONDONTWRITEBYTECODE is set,
# as it is on some machines: then it rewrites them at every start (3 s).
unit: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(PYTEST) -n 2 --dist worksteal -p no:logging \
		-m "not site and not browser and not slow" --ignore=tests/site

# The checks of the built site (run `make html` and `make pdf` first), in three
# steps, so that no step runs more heavy processes than the machine has cores:
# every test file but two on two workers (--dist loadfile: a file's fixtures
# are made once); the browser visit alone, which opens the two editions at
# once, one Chromium each; the reader's notebooks alone, two at a time, since
# their live timing claims need both cores (README: where make test's time goes).
site: $(STAMP) $(CHROMIUM) $(FONTS_CJK)
	BUILDDIR=$(BUILDDIR) $(PYTEST) -n 2 --dist loadfile -m "site or browser or slow" tests \
		--ignore=tests/site/test_site_browser.py \
		--ignore=tests/site/test_notebooks_standalone.py
	BUILDDIR=$(BUILDDIR) $(PYTEST) tests/site/test_site_browser.py
	BUILDDIR=$(BUILDDIR) $(PYTEST) tests/site/test_notebooks_standalone.py

# -- The other commands --------------------------------------------------------

# After an English edit: refresh the catalogs. New messages come in empty,
# changed ones as fuzzy (Sphinx ignores both: the page shows the English);
# tests/test_i18n_catalogs.py then names each one still to translate.
update-po: $(STAMP)
	$(SPHINX) -b gettext -d $(BUILDDIR)/doctrees-gettext book $(BUILDDIR)/gettext
	$(BIN)/sphinx-intl update -p $(BUILDDIR)/gettext -l $(ZH) -d book/locales

# Two clean builds must print the same cell outputs (cells tagged
# nondeterministic, such as timings, excepted): see tests/site/compare_builds.py.
repro: $(STAMP)
	rm -rf $(BUILDDIR)/repro-a $(BUILDDIR)/repro-b
	$(MAKE) --no-print-directory html BUILDDIR=$(BUILDDIR)/repro-a
	$(MAKE) --no-print-directory html BUILDDIR=$(BUILDDIR)/repro-b
	$(BIN)/python tests/site/compare_builds.py $(BUILDDIR)/repro-a $(BUILDDIR)/repro-b

bench: $(STAMP)
	$(BIN)/python -m attention.bench

serve: html
	@echo "Serving $(SITE) on http://127.0.0.1:8000 (Ctrl-C to stop)"
	$(BIN)/python -m http.server 8000 --bind 127.0.0.1 --directory $(SITE)

clean:
	rm -rf $(BUILDDIR)

# -- What the rules above need -------------------------------------------------

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# Chromium and the Chinese font are installed once, with one package update
# (the site itself ships no fonts: readers' systems have their own).
$(CHROMIUM) $(FONTS_CJK) &:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk
