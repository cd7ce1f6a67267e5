"""book/_ext: the book's extensions at work on a tiny book (tests/roots/test-book).

sphinx.testing builds it in a second or two, once per edition (``shared_result``
keeps the built project for the tests that follow), so directives, roles and
transforms are tested without building the book.
"""

from __future__ import annotations

import fcntl
import inspect
import io
import re
import shutil
import threading
import zipfile
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from docutils import nodes
from downloads import drop_merged_streams, hide_solutions, write_archive
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.cache.db import NbCacheRecord
from jupyter_cache.cache.main import JupyterCacheBase
from lean_static import lean
from notebook_i18n import translate_markdown, translate_notebook
from package_cache import (
    imports_package,
    one_writer_at_a_time,
    package_digest,
    start_cache,
)
from pysource import changed_lines, package_source, source_without_docstrings
from share_assets import share
from singlehtml_nodes import html_handlers_for_singlehtml
from site_language import _chinese_search, other_edition_url
from sphinx.registry import SphinxComponentRegistry
from sphinx.search import IndexBuilder
from sphinx.search.zh import SearchChinese
from sphinx.testing.util import SphinxTestApp
from sphinx_exercise.post_transforms import ResolveTitlesInExercises
from svgmath import formula_svg
from variants_api import _public_name

import attention

ROOT = Path(__file__).resolve().parents[1]
TEST_BOOK = Path(__file__).parent / "roots" / "test-book"


@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> dict[str, SphinxTestApp]:
    """Both editions of the test book, built once for the module's tests, one
    after the other (two live apps register docutils' nodes twice), each with
    ATTENTION_LIVE_DIR set as the Makefile sets it for a build.

    The Chinese edition leaves out the API page (autodoc of every class is
    slow) and searches as English: jieba would load its dictionary for
    seconds (the Chinese search's one fix is tested on its own below).
    """
    zh = {"language": "zh_CN", "html_search_language": "en"}
    zh["exclude_patterns"] = ["_build", "api.md"]
    built = {}
    with pytest.MonkeyPatch.context() as env:
        for name, overrides in {"en": {}, "zh": zh}.items():
            srcdir = tmp_path_factory.mktemp(name) / "book"
            shutil.copytree(TEST_BOOK, srcdir)
            env.setenv("ATTENTION_LIVE_DIR", str(srcdir / "_build" / "attention-live"))
            app = SphinxTestApp(
                "html", srcdir=srcdir, confoverrides=overrides, status=io.StringIO()
            )
            try:
                app.build()
            finally:
                app.cleanup()
            built[name] = app
    return built


@pytest.fixture
def en(editions) -> SphinxTestApp:
    return editions["en"]


@pytest.fixture
def zh(editions) -> SphinxTestApp:
    return editions["zh"]


def _page(app, name: str = "index") -> str:
    return (Path(app.outdir) / f"{name}.html").read_text(encoding="utf-8")


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_both_editions_build_without_a_warning(en, zh):
    assert en.warning.getvalue() == ""
    assert zh.warning.getvalue() == ""  # i18n_code warns when a comment is dropped


def test_pysource_shows_the_listing_with_its_imports_and_highlights(en):
    html = _page(en)
    assert "Listing 3.3" in html and "highlighted: new since" in html
    assert html.count('<span class="hll">') >= 2  # the mask, and its use
    code = _text(html[html.index("<pre>", html.index("pysource-listing")) :])
    imports = "import torch\nfrom torch import nn\nfrom attention import causal_mask"
    assert code.startswith(imports)  # causal_mask by the package's public name
    assert code.index("import causal_mask") < code.index("class CausalAttention")
    assert '"""' not in code  # no docstrings


def test_exercise_titles_lose_the_parentheses(en):
    html = _page(en)
    assert "Exercise 3.1: Compare the classes" in html and "(3.1:" not in html


def test_sphinx_exercise_still_puts_the_title_in_parentheses():
    """Fails once it does not (sphinx-exercise issue 57): then see whether an
    option gives "Exercise 3.1: ...", and delete ``UnwrapExerciseSubtitles``."""
    source = inspect.getsource(ResolveTitlesInExercises.resolve_title)
    assert 'Text(" (")' in source and 'Text(")")' in source


def test_the_install_command_and_the_files_of_the_book_code(en):
    html = _page(en)
    assert 'pip install "attention-0.0.test-py3-none-any.whl[notebooks]"' in _text(html)
    assert "_downloads/" in html and 'href="attention-book-code-0.0.test.zip"' in html


def test_a_notebook_page_offers_its_download_and_the_archive_holds_it(en):
    html = _page(en, "notebook")
    assert "Run this page yourself" in html and "notebook.ipynb" in html
    archive = Path(en.outdir) / "attention-book-code-0.0.test.zip"
    with zipfile.ZipFile(archive) as files:
        assert sorted(files.namelist()) == [
            "attention-0.0.test-py3-none-any.whl",
            "notebook.ipynb",
        ]


def test_a_page_that_imports_the_package_depends_on_its_files(en):
    assert str(ROOT / "attention" / "causal.py") in map(
        str, en.env.dependencies["notebook"]
    )
    # The cache is where the build's configuration names it (the Makefile's -D,
    # here the test book's conf.py), not moved, and it is for this package.
    cache = Path(en.srcdir) / "_build" / "jupyter_cache"
    assert en.config.nb_execution_cache_path == str(cache)
    assert (cache / "package-digest.txt").read_text() == package_digest(ROOT)


def test_every_registry_entry_gets_an_api_entry(en):
    html = _page(en, "api")
    for name, cls in attention.VARIANTS.items():
        assert f"<span class=\"pre\">'{name}'</span>" in html, name
        assert f'id="{_public_name(attention, cls)}"' in html, name  # autoclass


def test_formulas_are_svg_and_each_glyph_is_drawn_once_a_page(en):
    html = _page(en)
    assert "\\(" not in html and "$$" not in html  # no TeX left for a script
    assert 'aria-label="x_i^2"' in html and 'aria-label="x_i^2 + y"' in html
    assert html.count('role="img"') == 2 and 'fill="currentColor"' in html
    assert 'math notranslate"><svg' in html  # the span holds the <svg> itself
    assert "vertical-align: -" in html  # the baseline on the text's
    symbols = re.findall(r'<symbol id="([^"]+)"', html)
    assert symbols and len(symbols) == len(set(symbols))  # x and i: once each
    assert all(f'href="#{s}"' in html for s in symbols)
    # Drawn for no page, a formula has ids of its own.
    assert formula_svg("x_i^2", inline=True) != formula_svg("x_i^2", inline=True)


def test_a_page_with_a_live_widget_gets_its_weights_and_scripts(en):
    html = _page(en, "notebook")
    static = Path(en.outdir) / "_static" / "attention-live"
    assert (static / "demo.json").read_text() == '{"kind": "learned"}'
    assert (static / "demo.js").read_text().startswith("(window.attentionLiveData")
    assert "attention-live/demo.js" in html and "attention-live.js" in html
    assert "attention-live.js" not in _page(en)  # only the page with a widget


def test_a_translated_comment_keeps_the_code(zh):
    html = _page(zh)
    assert "一条要翻译的注释" in html and "One comment" not in html
    assert "练习 3.1：比较这些类" in html or "3.1：比较这些类" in html


def test_translated_nodes_belong_to_their_page(zh):
    # Not to the document Locale parsed them in: pickled along, its settings
    # took the build environment into every translated doctree.
    for name in zh.env.found_docs:
        doctree = zh.env.get_doctree(name)
        owners = {node.document for node in doctree.findall()}
        assert owners == {doctree}, name


def test_the_translated_edition_downloads_a_translated_notebook(zh):
    saved = Path(zh.outdir).parent / "jupyter_execute" / "notebook.ipynb"
    cells = nbformat.read(saved, as_version=4).cells
    assert cells[0].source.startswith("# A notebook\n\n一些文字。\n")
    assert cells[1].source == "import attention  # 导入配套包"


# -- What the hooks do, function by function ---------------------------------------


def test_markdown_cells_are_translated_piece_by_piece():
    text = (
        "(sec-x)=\n# A title\n\nA paragraph\non two lines.\n\n- an item\n\n"
        "$$\nx = y\n$$\n\n```{admonition} A note\n:class: tip\n\nInside.\n```\n\n"
        "```{code-cell} python\n# A comment\n```\n\n| | a |\n|---|---|\n"
    )
    table = {
        "A title": "标题",
        "A paragraph on two lines.": "两行。",
        "an item": "一项",
    }
    table |= {"x = y": "NO", "A note": "注", "Inside.": "里面。", "A comment": "NO"}
    table |= {":class: tip": "NO", "": "the catalog's header", "a": "甲"}
    out = translate_markdown(text, table.get)
    assert out == text.replace("A title", "标题").replace(
        "A paragraph\non two lines.", "两行。"
    ).replace("an item", "一项").replace("A note", "注").replace(
        "Inside.", "里面。"
    ).replace("| a |", "| 甲 |")
    assert translate_markdown(text, lambda message: None) == text
    yaml = "```{note}\n---\nclass: tip\n---\nInside.\n```\n"  # options as YAML
    table = {"Inside.": "里面。", "class: tip": "NO"}
    assert translate_markdown(yaml, table.get) == yaml.replace("Inside.", "里面。")


def test_merged_streams_are_kept_once():
    out = [
        {"output_type": "stream", "name": "stdout", "text": t} for t in ("a\n", "b\n")
    ]
    assert drop_merged_streams(out) == out  # not merged: both kept
    merged = [dict(out[0], text="a\nb\n"), dict(out[1], text="b\n")]
    assert drop_merged_streams(merged) == merged[:1]


def test_pages_that_import_the_package_are_found_by_their_code_cells():
    cell = "```{{code-cell}} python\n{}\n```\n"
    assert imports_package(cell.format("from attention.bench import run"))
    assert not imports_package(cell.format("import attentional"))
    assert not imports_package("```python\nimport attention\n```\n")  # not a cell
    assert not imports_package(cell.format("%timeit x"))  # IPython syntax


def test_another_package_digest_empties_the_execution_cache(tmp_path):
    cache = tmp_path / "jupyter_cache"
    start_cache(cache, "digest-1")
    (cache / "old.ipynb").write_text("{}")
    start_cache(cache, "digest-1")  # the same package: kept
    assert (cache / "old.ipynb").exists()
    start_cache(cache, "digest-2")
    assert not (cache / "old.ipynb").exists()
    assert (cache / "global.db").is_file()  # made before -j 2 forks its readers


def test_the_digest_covers_every_file_of_the_package(tmp_path):
    data = tmp_path / "attention" / "_data" / "run.json"
    data.parent.mkdir(parents=True)
    data.write_text("{}")
    before = package_digest(tmp_path)
    data.write_text("{ }")  # any file of the package, not only its code
    assert package_digest(tmp_path) != before


def test_one_process_at_a_time_caches_a_notebook(tmp_path):
    """While another holds the cache's lock, caching waits (see package_cache)."""
    cache = get_cache(str(tmp_path))
    # The method as jupyter-cache has it (a built test app may have wrapped it).
    write = one_writer_at_a_time(inspect.unwrap(JupyterCacheBase.cache_notebook_bundle))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    with open(tmp_path / "writing.lock", "w") as lock:  # another process's
        fcntl.flock(lock, fcntl.LOCK_EX)
        bundle = CacheBundleIn(notebook, "a.ipynb")
        caching = threading.Thread(target=write, args=(cache, bundle, False))
        caching.start()
        caching.join(timeout=1)
        assert caching.is_alive() and not cache.list_cache_records()
    caching.join(timeout=10)
    assert len(cache.list_cache_records()) == 1


def test_jupyter_cache_still_truncates_in_two_queries():
    """Canary of package_cache's lock: it fails once jupyter-cache changes how
    it truncates the cache after caching a notebook (the records to keep, then
    the others, in two queries that another process's new record falls
    between). Then see whether two processes may cache at once, and if so
    delete ``one_writer_at_a_time``."""
    caching = inspect.getsource(inspect.unwrap(JupyterCacheBase.cache_notebook_bundle))
    assert "self.truncate_caches()" in caching
    truncating = inspect.getsource(NbCacheRecord.records_to_delete)
    assert ".limit(keep)" in truncating and "notin_(pks_to_keep)" in truncating


def test_the_code_archive_is_the_same_bytes_each_time(tmp_path):
    (tmp_path / "a.ipynb").write_text("{}")
    wheel = tmp_path / "attention-1.0.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    first, second = tmp_path / "1.zip", tmp_path / "2.zip"
    for out in (first, second):
        write_archive(out, {"chapter3/a.ipynb": tmp_path / "a.ipynb"}, wheel)
    assert first.read_bytes() == second.read_bytes()


def test_viewcode_reads_the_package_source_without_importing_it():
    app = SimpleNamespace(config=SimpleNamespace(pysource_root=str(ROOT)))
    code, tags = package_source(app, "attention.causal")
    assert code == (ROOT / "attention/causal.py").read_text()
    assert "CausalAttention" in tags
    assert package_source(app, "torch.nn") is None  # left to viewcode


def test_pysource_highlights_computation_not_comments_checks_or_headers():
    old = [
        "class A:",
        "    def __init__(self, d_in, dropout):",
        "        check_positive(d_in=d_in)",
        "        self.dropout = dropout",
        '        s = "it\'s #1"',
        "        return x",
    ]
    new = list(old)
    new[1] = "    def __init__(self, d_in, dropout, h):"  # a header
    new[2] = "        check_positive(d_in=d_in, h=h)"  # a check
    new.insert(4, "        self.h = h")  # a stored argument
    new.insert(5, "        # A new comment line.")
    new.insert(6, "        d_in = check_size(d_in)  # a check that returns")
    new[-1] += "  # a new comment"
    assert changed_lines(new, old) == []
    new.insert(4, "        self.scale = d_in**-0.5")  # computation
    new[3] = "        self.dropout_p = dropout"  # stored under another name
    new[-2] = '        s = "it\'s #2"'  # not a comment: found with the tokenizer
    assert changed_lines(new, old) == [4, 5, 9]


def test_the_language_switch_links_the_same_page_in_the_other_edition():
    for page in ["index", "chapter3/3-5-causal-attention"]:
        there = other_edition_url(page, "en", "zh_CN", ".html")
        back = other_edition_url(page, "zh_CN", "en", ".html")
        here_en, here_zh = Path("/site", page).parent, Path("/site/zh_CN", page).parent
        assert (here_en / there).resolve() == Path("/site/zh_CN", page + ".html")
        assert (here_zh / back).resolve() == Path("/site", page + ".html")


def _stemmer_line(language_class) -> str:
    builder = object.__new__(IndexBuilder)  # only its stemmer code is asked for
    builder.lang = object.__new__(language_class)  # no jieba dictionary to load
    return builder.get_js_stemmer_code().splitlines()[-1]


def test_the_chinese_search_names_a_stemmer_that_exists():
    assert _stemmer_line(_chinese_search()) == "window.Stemmer = EnglishStemmer;"
    # Fails once Sphinx has fixed sphinx-doc/sphinx#14229: then delete the fix.
    assert _stemmer_line(SearchChinese) == "window.Stemmer = ChineseStemmer;"


def test_the_chinese_edition_loads_the_english_copy_of_identical_assets(tmp_path):
    site, zh = tmp_path, tmp_path / "zh_CN"
    files = {"same.css": "a", "other.png": "en", "unlinked.js": "a", "named.png": "a"}
    for name, text in files.items():
        (site / "_static").mkdir(exist_ok=True)
        (site / "_static" / name).write_text(text)
        (zh / "_static").mkdir(parents=True, exist_ok=True)
        (zh / "_static" / name).write_text(text if name != "other.png" else "zh")
    (zh / "_static" / "kept.css").write_text("url(named.png)")  # names a file
    links = '<link href="../_static/same.css"><img src="../_static/other.png">'
    links += '<img src="../_static/named.png"><a href="#top">'
    (zh / "chapter3").mkdir()
    (zh / "chapter3" / "page.html").write_text(links)
    assert share(site, "zh_CN") == 1
    html = (zh / "chapter3" / "page.html").read_text()
    assert html == links.replace("../_static/same.css", "../../_static/same.css")
    left = sorted(p.name for p in (zh / "_static").iterdir())
    assert left == ["kept.css", "named.png", "other.png", "unlinked.js"]


def test_the_theme_static_files_keep_only_what_the_pages_use(tmp_path):
    import pydata_sphinx_theme

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme"
    static = tmp_path / "_static"
    font = static / "vendor/fontawesome/webfonts/fa-solid-900.woff2"
    css = static / "styles/pydata-sphinx-theme.css"
    for path in (font, css, css.with_suffix(".css.map")):
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(theme / "static" / path.relative_to(static), path)
    (tmp_path / "index.html").write_text('<i class="fa-solid fa-bars"></i>')
    size = font.stat().st_size
    lean(SimpleNamespace(outdir=tmp_path, builder=SimpleNamespace(format="html")), None)
    assert not list(static.rglob("*.map")) and font.stat().st_size < size / 10
    rules = css.read_text()
    assert ".fa-bars" in rules and ".fa-bell{" not in rules


class _Translator:
    def __init__(self, *args):
        pass


def _visit(self, node):
    pass


def test_the_singlehtml_builder_gets_the_html_node_handlers():
    """Canary of singlehtml_nodes: Sphinx still drops a format's handlers for a
    builder that has handlers of its own name (sphinx-doc/sphinx#14587); once
    it merges them, the first assert fails: delete singlehtml_nodes.py."""

    class html_only(nodes.Element):
        pass

    class both(nodes.Element):
        pass

    registry = SphinxComponentRegistry()
    registry.add_translation_handlers(html_only, html=(_visit, None))
    registry.add_translation_handlers(
        both, html=(_visit, None), singlehtml=(_visit, None)
    )
    single = SimpleNamespace(
        name="singlehtml", format="html", default_translator_class=_Translator
    )
    translator = registry.create_translator(single)
    assert not hasattr(translator, "visit_html_only")  # Sphinx's behaviour
    html_handlers_for_singlehtml(SimpleNamespace(registry=registry))
    translator = registry.create_translator(single)
    assert hasattr(translator, "visit_html_only") and hasattr(translator, "visit_both")


def _exercise_notebook():
    cells = [
        nbformat.v4.new_markdown_cell("```{exercise-start} 1: A mask\n```"),
        nbformat.v4.new_code_cell(
            'from attention.exercises import check, speak\n\nspeak("en")'
        ),
        nbformat.v4.new_code_cell("def mask(m):\n    raise NotImplementedError"),
        nbformat.v4.new_markdown_cell(
            "```{exercise-end}\n```\n\n```{solution-start} ex-1\n:class: dropdown\n```"
        ),
        nbformat.v4.new_code_cell("def mask(m):\n    return m == 0"),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```\n\nMore prose."),
        nbformat.v4.new_code_cell("print('after')"),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def test_a_solutions_code_is_folded_in_the_notebook_and_nothing_else():
    notebook = _exercise_notebook()
    hide_solutions(notebook)
    folded = [
        cell.metadata.get("jupyter", {}).get("source_hidden", False)
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]
    assert folded == [False, False, True, False]  # the stub stays open


def test_a_translated_notebooks_graders_speak_its_language():
    notebook = translate_notebook(_exercise_notebook(), {}.get, "zh_CN")
    assert notebook.cells[1].source.endswith('speak("zh_CN")')
    english = translate_notebook(_exercise_notebook(), {}.get)
    assert english.cells[1].source.endswith('speak("en")')


def test_the_rotary_pages_listing_highlights_rotate_and_two_lines_of_forward():
    """What rotary-positions.md says before its listing of the class: the
    chapter's class with a rotate method and two lines more in forward. (Here,
    not in tests/test_rope.py: it reads book/_ext, which the package's source
    archive does not ship.)"""
    members = ["rotate", "forward"]
    new, _ = source_without_docstrings(attention.RotaryMultiHeadAttention, members)
    old, _ = source_without_docstrings(attention.MultiHeadAttention, members)
    highlighted = [new[n - 1].strip() for n in changed_lines(new, old)]
    assert highlighted == [
        "return rotate_pairs(t, position_ids, self.base, self.layout)",
        "queries = self.rotate(queries, position_ids)",
        "keys = self.rotate(keys, position_ids)",
    ]
