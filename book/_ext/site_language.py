"""``site_language``: the book's editions side by side in one site.

The English edition is the root of the site (``_build/html/``), every other
edition a folder named after its language (``_build/html/zh_CN/``) with the
same page paths. This extension, active in every edition's build:

- adds a language switch above each page (``book/_templates/
  language-switch.html``, placed before the theme's header buttons): a
  relative link to the same page in each other edition, so it works offline
  and under any URL prefix;
- sets, in a translated build, the search language (Chinese: ``zh``, which
  segments words with jieba), the translated site title, and myst-nb's
  toggle texts (its documented options ``nb_code_prompt_show`` and
  ``nb_code_prompt_hide``, from ``i18n_nb_code_prompts``);

The page text itself is translated by Sphinx from the catalogs, code
comments by ``i18n_code``, the notebook downloads by ``notebooks``.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "_templates"
SWITCH_TEMPLATE = "language-switch.html"

# The editions: the first is the site's root, the others live in a folder of
# their language's name. The label is the language's own name for itself.
EDITIONS = {"en": "English", "zh_CN": "简体中文"}
LANG_TAGS = {"en": "en", "zh_CN": "zh-CN"}
SEARCH_LANGUAGES = {"zh_CN": "zh"}
ROOT_LANGUAGE = "en"


def edition_of(language: str | None) -> str:
    return language if language in EDITIONS else ROOT_LANGUAGE


def edition_prefix(language: str) -> str:
    """The edition's folder inside the site: ``""`` or ``"zh_CN/"``."""
    return "" if language == ROOT_LANGUAGE else f"{language}/"


def other_edition_url(pagename: str, here: str, there: str, suffix: str) -> str:
    """Relative URL from ``pagename`` of edition ``here`` to it in ``there``.

    >>> other_edition_url("chapter3/summary", "en", "zh_CN", ".html")
    '../zh_CN/chapter3/summary.html'
    >>> other_edition_url("chapter3/summary", "zh_CN", "en", ".html")
    '../../chapter3/summary.html'
    >>> other_edition_url("index", "zh_CN", "en", ".html")
    '../index.html'
    """
    up_to_site = "../" * pagename.count("/") + "../" * edition_prefix(here).count("/")
    return up_to_site + edition_prefix(there) + pagename + suffix


def language_links(pagename: str, language: str, suffix: str) -> list[dict]:
    """The switch's entries: one per edition, the current one without a link."""
    here = edition_of(language)
    return [
        {
            "language": lang,
            "lang_tag": LANG_TAGS[lang],
            "label": label,
            "current": lang == here,
            "url": other_edition_url(pagename, here, lang, suffix),
        }
        for lang, label in EDITIONS.items()
    ]


# -- Chinese search ------------------------------------------------------------------
def _chinese_search():
    """Sphinx 9.0's Chinese search, with its JavaScript stemmer named right.

    ``SearchChinese`` stems Latin words with the English Snowball stemmer and
    ships ``english-stemmer.js``, but Sphinx names the class it hands to the
    search page after ``language_name``: ``window.Stemmer = ChineseStemmer``,
    which does not exist. The search page then stops at "正在搜索中" with a
    ReferenceError. The stemmer is the English one, so name it so.

    Upstream: sphinx-doc/sphinx issue 14229, fixed by pull request 14416
    (after 9.0.4). ``tests/test_site_language.py`` fails once the installed
    Sphinx has the fix: then delete this function.
    """
    from sphinx.search.zh import SearchChinese

    class SearchChineseEnglishStemmer(SearchChinese):
        language_name = "English"  # only used to name the JS stemmer class

    return SearchChineseEnglishStemmer


# -- Sphinx hooks ------------------------------------------------------------------
def _configure(app, config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        # First: the book's templates replace the themes' components of the
        # same name (the themes add their own folders to templates_path).
        config.templates_path.insert(0, str(TEMPLATES))
    options = config.html_theme_options
    header = options.setdefault("article_header_end", ["article-header-buttons.html"])
    if SWITCH_TEMPLATE not in header:
        header.insert(0, SWITCH_TEMPLATE)
    language = edition_of(config.language)
    if language in SEARCH_LANGUAGES:
        config.html_search_language = SEARCH_LANGUAGES[language]
    if config.html_search_language == "zh":
        app.add_search_language(_chinese_search())
        # The book's terms as whole words, so that a search for 注意力权重 finds
        # it: the search page looks a query up as one word, unsegmented.
        terms = Path(app.srcdir, "locales", language, "search-terms.txt")
        config.html_search_options = {"dict": str(terms), **config.html_search_options}
    titles = config.i18n_html_title
    if language in titles:
        config.html_title = titles[language]
    config.html_theme_options.update(config.i18n_html_theme_options.get(language, {}))
    prompts = config.i18n_nb_code_prompts  # myst-nb reads them at builder-inited
    if language in prompts:
        config.nb_code_prompt_show, config.nb_code_prompt_hide = prompts[language]


def _page_context(app, pagename, templatename, context, doctree) -> None:
    suffix = context.get("file_suffix", ".html")
    context["language_links"] = language_links(pagename, app.config.language, suffix)


def setup(app):
    app.add_config_value("i18n_html_title", {}, "html", dict)
    app.add_config_value("i18n_nb_code_prompts", {}, "html", dict)
    app.add_config_value("i18n_html_theme_options", {}, "html", dict)
    app.add_css_file("i18n.css")  # book/_static/i18n.css
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
