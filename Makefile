# Two commands: `make html` builds the book, `make test` runs every check.
# Both create .venv and install the pinned dependencies on first use.

PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
BUILDDIR   ?= _build
# -j 2: two pages are read (and their notebooks executed) at a time, one per
# core of the 2-core machine (book/_ext/balanced_read.py deals the pages into
# two halves of about equal cost); the log gives each page's time to execute.
SPHINXOPTS ?= -n -W --keep-going -j 2
# One torch thread per kernel: with -j 2, two kernels run at once on the two
# cores, and torch's default (a thread per core in each) puts four threads on
# two cores that wait for each other. Cells that time something set their own.
# The cells that train a live widget's weights export them (attention.live.
# save_exports) into ATTENTION_LIVE_DIR, where book/_ext/live_widgets.py reads
# them: an absolute path, as each kernel runs in its page's folder.
KERNEL_ENV := OMP_NUM_THREADS=1 ATTENTION_LIVE_DIR=$(abspath $(BUILDDIR))/attention-live
HTML       := $(BIN)/python -m sphinx -b html -c . -d $(BUILDDIR)/doctrees $(SPHINXOPTS)
SPHINX     := $(KERNEL_ENV) $(HTML)
CHROMIUM   := /usr/bin/chromium
FONTS_CJK  := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
STAMP      := $(VENV)/.installed

.PHONY: html test lint unit site bench clean serve repro html-zh update-po pdf

# Sphinx runs only when an input changed: a page, the package, the
# configuration or the installed tools (a folder's time changes when a file
# in it is added or removed). Sphinx then re-reads only what changed.
SOURCES := conf.py $(shell find book attention -not -path '*/__pycache__*' \
             -not -path 'book/locales*' -not -name '*.pyc')
LOCALES := $(shell find book/locales -not -name '*.mo')
BUILT   := $(BUILDDIR)/html/.built
# The build's kernels run the venv's Python, and IPython reads the
# configuration in its environment's etc/ipython (book/_kernel explains why).
KERNEL_CONF := $(VENV)/etc/ipython/ipython_kernel_config.py
# The package as readers download it: its wheel and sdist, built once for both
# editions into $(BUILDDIR)/dist, where book/_ext/downloads.py finds them.
# Both straight from the source tree (--sdist --wheel; by default the wheel
# is built from the unpacked sdist): the same files, a second sooner.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
DIST    := $(BUILDDIR)/dist
WHEEL   := $(DIST)/attention-$(VERSION)-py3-none-any.whl
# The sdist also ships the package's tests (MANIFEST.in says which).
PACKAGE := pyproject.toml README.md MANIFEST.in $(wildcard tests/*.py) \
	$(shell find attention -type f -not -path '*/__pycache__*' -not -name '*.pyc')
# The 简体中文 edition (see below), with its words as plain configuration:
# the site's title, myst-nb's toggle of hidden cells (the book hides only
# code, so "code" where myst-nb's default says "source"), the search box and
# the footer's names.
ZH       := zh_CN
ZH_OUT   := $(BUILDDIR)/html/$(ZH)
ZH_BUILT := $(ZH_OUT)/.built
ZH_OPTS  := -D language=$(ZH) -D html_title=动手编写注意力机制 \
	-D nb_code_prompt_show=显示代码 -D nb_code_prompt_hide=隐藏代码 \
	-D html_theme_options.search_bar_text=搜索本书… \
	-D author=本书作者 -D copyright=2026，本书作者
SPHINX_ZH := $(KERNEL_ENV) $(BIN)/python -m sphinx -b html -c . -d $(BUILDDIR)/doctrees-$(ZH) \
	$(ZH_OPTS) $(SPHINXOPTS)

html: $(BUILT) $(ZH_BUILT)
	@echo "The book is in $(BUILDDIR)/html/index.html (简体中文: $(ZH_OUT)/index.html)"

# A build that failed is not remembered: with -W --keep-going Sphinx saves its
# environment even when a page warned, and the next build would not read that
# page again and pass. So a failed build takes its doctrees with it.
# The pages' kernels are forked from a process that has imported torch once
# (book/_kernel/warm.py): the English edition is the one that executes them.
# The 简体中文 edition executes nothing, so it starts once the English one has
# read every page (Sphinx saves its environment, then writes): the two
# editions are written side by side, the Chinese log printed when it is done.
EN_READ := $(BUILDDIR)/doctrees/environment.pickle
$(BUILT): $(STAMP) $(SOURCES) $(WHEEL) $(KERNEL_CONF)
	mkdir -p $(BUILDDIR) && touch $(BUILDDIR)/.reading
	{ $(KERNEL_ENV) $(BIN)/python book/_kernel/warm.py $(HTML) $(PDF_LINK) book $(BUILDDIR)/html \
		|| { rm -rf $(BUILDDIR)/doctrees; exit 1; }; } & en=$$!; \
	while kill -0 $$en 2>/dev/null && ! [ $(EN_READ) -nt $(BUILDDIR)/.reading ]; do \
		sleep 0.2; done; \
	if [ $(EN_READ) -nt $(BUILDDIR)/.reading ]; then \
		{ $(ZH_SPHINX); } > $(BUILDDIR)/$(ZH).log 2>&1 & zh=$$!; fi; \
	wait $$en; en_ok=$$?; \
	if [ -n "$$zh" ]; then wait $$zh; zh_ok=$$?; cat $(BUILDDIR)/$(ZH).log; fi; \
	[ $$en_ok = 0 ] && { [ -z "$$zh" ] || { [ $$zh_ok = 0 ] && $(ZH_INTO_SITE); }; } \
		&& touch $@ && { [ -z "$$zh" ] || touch $(ZH_BUILT); }

$(KERNEL_CONF): book/_kernel/ipython_kernel_config.py $(STAMP)
	mkdir -p $(@D) && cp $< $@

$(WHEEL): $(STAMP) $(PACKAGE)
	rm -rf $(DIST) && mkdir -p $(DIST)
	$(BIN)/python -m build --no-isolation --sdist --wheel --outdir $(DIST) . > $(DIST)/build.log \
		|| { cat $(DIST)/build.log; exit 1; }

# -- 简体中文 edition ---------------------------------------------------------------
# Built by `make html` into $(BUILDDIR)/html/zh_CN (same page paths), with its
# own doctrees, once the English edition has filled the execution cache it
# reads (it executes nothing): beside the English writing when both are built,
# alone when only the catalogs in book/locales, which English does not read,
# changed.

html-zh: $(ZH_BUILT)

# Sphinx writes it into $(BUILDDIR)/$(ZH)/html, then it is copied into the
# site: myst-nb saves executed notebooks next to the output folder (its
# jupyter_execute/, no option moves it), which must not be inside a site.
# In the site, its pages load the English copy of every identical asset
# (book/_ext/share_assets.py): one copy of the images and theme files.
ZH_INTO_SITE = rm -rf $(ZH_OUT) && cp -a $(BUILDDIR)/$(ZH)/html $(ZH_OUT) \
	&& $(BIN)/python book/_ext/share_assets.py $(BUILDDIR)/html $(ZH)

ZH_SPHINX = $(SPHINX_ZH) $(PDF_LINK_ZH) book $(BUILDDIR)/$(ZH)/html \
		|| { rm -rf $(BUILDDIR)/doctrees-$(ZH); exit 1; }

$(ZH_BUILT): $(BUILT) $(STAMP) $(SOURCES) $(LOCALES) $(KERNEL_CONF)
	$(ZH_SPHINX)
	$(ZH_INTO_SITE)
	touch $@

# -- The book as one PDF per edition ---------------------------------------------
# Sphinx's singlehtml builder puts every page in reading order on one page
# (figures numbered, outputs from the same execution cache), then Chromium
# prints it with bookmarks (book/_ext/book_pdf.py). `make pdf` copies the two
# PDFs into the site and rebuilds it with `-A book_pdf=<file>`, which links
# them from each front page; without them the front page says how to get them.
PDF_DIR     := $(BUILDDIR)/pdf
BOOK_PDF    := $(PDF_DIR)/book.pdf
BOOK_PDF_ZH := $(PDF_DIR)/book-$(ZH).pdf
PDF_LINK     = $(if $(wildcard $(BOOK_PDF)),-A book_pdf=book.pdf)
PDF_LINK_ZH  = $(if $(wildcard $(BOOK_PDF_ZH)),-A book_pdf=book-$(ZH).pdf)
SINGLE      := $(KERNEL_ENV) $(BIN)/python -m sphinx -b singlehtml -c . -D numfig=1 $(SPHINXOPTS)

pdf: $(BOOK_PDF) $(BOOK_PDF_ZH)
	cp $(BOOK_PDF) $(BUILDDIR)/html/
	$(SPHINX) $(PDF_LINK) book $(BUILDDIR)/html && touch $(BUILT)
	$(SPHINX_ZH) $(PDF_LINK_ZH) book $(BUILDDIR)/$(ZH)/html
	cp $(BOOK_PDF_ZH) $(BUILDDIR)/$(ZH)/html/
	$(ZH_INTO_SITE) && touch $(ZH_BUILT)

$(BOOK_PDF): $(BUILT) book/_ext/book_pdf.py $(CHROMIUM) $(FONTS_CJK)
	$(SINGLE) -d $(BUILDDIR)/doctrees-pdf book $(PDF_DIR)/en
	$(BIN)/python book/_ext/book_pdf.py $(PDF_DIR)/en $@ $(FONTS_CJK)

$(BOOK_PDF_ZH): $(ZH_BUILT) book/_ext/book_pdf.py $(CHROMIUM) $(FONTS_CJK)
	$(SINGLE) -d $(BUILDDIR)/doctrees-pdf-$(ZH) $(ZH_OPTS) book $(PDF_DIR)/$(ZH)
	$(BIN)/python book/_ext/book_pdf.py $(PDF_DIR)/$(ZH) $@ $(FONTS_CJK)

# After an English edit: refresh the catalogs. New messages come in empty,
# changed ones as fuzzy (Sphinx ignores both: the page shows the English);
# tests/test_i18n_catalogs.py then names each one still to translate.
update-po: $(STAMP)
	$(BIN)/python -m sphinx -b gettext -c . -d $(BUILDDIR)/doctrees-gettext \
		$(SPHINXOPTS) book $(BUILDDIR)/gettext
	$(BIN)/sphinx-intl update -p $(BUILDDIR)/gettext -l $(ZH) -d book/locales

# Linter, doctests and unit tests, a full build and its PDFs, then the checks of
# the built site. The unit tests draw hypothesis's full count of examples here
# (quick loop: a few; profiles in tests/conftest.py).
test: export HYPOTHESIS_PROFILE = full
test: lint unit html pdf site

lint: $(STAMP)
	$(BIN)/ruff check attention tests conf.py book/_ext book/_kernel
	$(BIN)/ruff format --check attention tests conf.py book/_ext book/_kernel
	$(BIN)/actionlint -shellcheck=$(BIN)/shellcheck

# --durations=15: every run, CI's included, shows where the time goes.
PYTEST := $(BIN)/python -m pytest -q --durations=15

# The quick loop: in-process tests, no build (the wheel's test is a site test),
# hypothesis's quick profile, on both cores (pytest-xdist's two workers, each
# taking the next test when it is free). The site tests are not even collected:
# they read the built site. pytest keeps the modules whose asserts it rewrote
# (the tests' and hypothesis's) as .pyc, unless PYTHONDONTWRITEBYTECODE is set,
# as it is on some machines: then it rewrites them at every start (3 s).
unit: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(PYTEST) -n 2 --dist worksteal -p no:logging \
		-m "not site and not browser and not slow" --ignore=tests/site

site: $(STAMP) $(CHROMIUM) $(FONTS_CJK)
	BUILDDIR=$(BUILDDIR) $(PYTEST) -n 2 --dist loadfile -m "site or browser or slow" tests \
		--ignore=tests/site/test_notebooks_standalone.py
	BUILDDIR=$(BUILDDIR) $(PYTEST) tests/site/test_notebooks_standalone.py

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
	@echo "Serving $(BUILDDIR)/html on http://127.0.0.1:8000 (Ctrl-C to stop)"
	$(BIN)/python -m http.server 8000 --bind 127.0.0.1 --directory $(BUILDDIR)/html

clean:
	rm -rf $(BUILDDIR)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# The browser tests drive Debian's Chromium, and screenshots of the 简体中文
# edition need Chinese glyphs (the site itself ships no fonts: readers'
# systems have their own). Both are installed once, with one package update.
$(CHROMIUM) $(FONTS_CJK) &:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk
