"""The live widgets (book/_static/attention-live.js), opened from disk (``file://``).

The JavaScript forward pass must equal the package's, computed in float64 on
the weights the build exported, on random sequences of random lengths; a
copy with one line wrong must fail that check. Section 3.3's widget must show
the numbers its page's cells printed. Two widgets on one page must each show
the words of their own list. Screenshots of the widgets go to
``$BUILDDIR/screenshots/live/`` when ``SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import random
import re

import pytest
import torch
from axe_playwright_python.sync_playwright import Axe
from bs4 import BeautifulSoup
from conftest import CJK, build_dir

from attention import attention_weights, previous_token_data, token_accuracy
from attention.live import load_tiny_model

pytestmark = pytest.mark.browser

LEARNED = "beyond/attention-that-has-learned.html"
CHAPTER = "chapter3/3-3-self-attention.html"
MODELS = ("learned", "learned-no-pos")
FOLDER = "attention-live"  # in _static: the exported weights
TOLERANCE = 1e-9
BUDGET = 150_000  # bytes of the widget's scripts (code and weights) on a page
WIDGET = "[data-attention-live]"
TOKENS = f"{WIDGET} input[type=text]"
BLOCKING = ("serious", "critical")
FORWARD = "([m, seqs]) => seqs.map(s => window.attentionLive.forward(m, s))"


def open_page(chromium, site, rel, width=1280):
    """The page from disk, offline, its widget drawn; page errors fail the test."""
    size = {"width": width, "height": 900}
    tab = chromium.new_page(viewport=size, reduced_motion="reduce")
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.route("http*://**", lambda route: route.abort())  # nothing from the network
    tab.goto((site.html / rel).as_uri())
    tab.wait_for_selector(f"{WIDGET}.al-ready")
    assert not errors, errors
    return tab


def largest_differences(tab, site, count=60) -> tuple[float, float]:
    """Largest |JS - PyTorch| over ``count`` random sequences per model."""
    rng = random.Random(29)
    logits_diff = weights_diff = 0.0
    for name in MODELS:
        model = load_tiny_model(site.html / "_static" / FOLDER / f"{name}.json")
        seqs = [
            [rng.randrange(model.vocab_size) for _ in range(rng.randint(1, 12))]
            for _ in range(count)
        ]
        for seq, js in zip(seqs, tab.evaluate(FORWARD, [name, seqs]), strict=True):
            ids = torch.tensor([seq])
            with torch.no_grad():
                logits = model(ids)[0]  # (T, V)
            weights = attention_weights(model, ids)  # (1, h, T, T): one layer
            js_logits = torch.tensor(js["logits"], dtype=torch.float64)
            js_weights = torch.tensor(js["weights"], dtype=torch.float64)
            logits_diff = max(logits_diff, (js_logits - logits).abs().max().item())
            weights_diff = max(weights_diff, (js_weights - weights).abs().max().item())
    return logits_diff, weights_diff


def screenshot(tab, name, widget=WIDGET):
    if os.environ.get("SCREENSHOTS") == "1":
        path = build_dir() / "screenshots" / "live" / f"{name}.png"
        hide = ".bd-header, .bd-header-article, .skip-link { visibility: hidden; }"
        tab.locator(widget).screenshot(path=path, style=hide)


def test_js_forward_equals_the_package(chromium, site):
    tab = open_page(chromium, site, LEARNED)
    logits_diff, weights_diff = largest_differences(tab, site)
    ms = tab.evaluate("window.attentionLive.timing")  # after navigation
    print(f"\n{site.edition}: |JS - torch| logits {logits_diff:.1e}, weights ", end="")
    print(f"{weights_diff:.1e}; first heatmap at {ms['firstHeatmap']:.0f} ms,", end="")
    print(f" DOM ready at {ms['start']:.0f} ms")
    assert logits_diff < TOLERANCE and weights_diff < TOLERANCE


def test_the_check_catches_a_forward_without_the_scaling(chromium, english):
    source = (english.html / "_static" / "attention-live.js").read_text("utf-8")
    assert source.count(" / Math.sqrt(hd)") == 1
    tab = open_page(chromium, english, LEARNED)
    tab.add_script_tag(content=source.replace(" / Math.sqrt(hd)", ""))
    logits_diff, weights_diff = largest_differences(tab, english, count=5)
    assert logits_diff > TOLERANCE and weights_diff > TOLERANCE


def test_exported_weights_are_the_trained_models(english):
    """The JSON files reach the accuracies the page printed for its models."""
    text = english.page(LEARNED).article.get_text()
    printed = re.findall(r"accuracy(?: on the test set)?:\s+([01]\.\d{4})", text)
    test_ids, test_targets = previous_token_data(2000, 12, 16, seed=1)
    folder = english.html / "_static" / FOLDER
    for name, shown in zip(MODELS, printed, strict=True):
        model = load_tiny_model(folder / f"{name}.json")
        assert f"{token_accuracy(model, test_ids, test_targets):.4f}" == shown


def test_chapter_widget_starts_with_the_printed_numbers(chromium, site):
    cells = site.page(CHAPTER).article.select("div.cell")

    def printed(source):  # the 4-decimal numbers a cell printed
        [cell] = [c for c in cells if source in c.select_one(".cell_input").get_text()]
        return re.findall(r"-?\d+\.\d{4}", cell.select_one(".cell_output").get_text())

    tab = open_page(chromium, site, CHAPTER, width=360)
    values = "els => els.map(e => e.textContent)"
    shown = {
        key: tab.eval_on_selector_all(f"[data-live={key}] .al-value", values)
        for key in ("scores", "weights")
    }
    context = re.findall(r"-?\d+\.\d{4}", tab.inner_text("[data-live=context]"))
    assert shown["scores"] == printed("attn_scores_2 = dot_scores(query, inputs)")
    assert shown["weights"] == printed("attn_weights_2 = torch.softmax(")
    assert context == printed("context_vec_2 = weighted_sum(")
    screenshot(tab, f"chapter-{site.edition}-360")
    tab.focus(f"{WIDGET} input[type=range]")
    tab.keyboard.press("ArrowRight")  # the query's first dimension grows
    assert re.findall(r"-?\d+\.\d{4}", tab.inner_text("[data-live=context]")) != context
    assert_fits_and_passes_axe(tab)


def assert_fits_and_passes_axe(tab):
    fits = tab.eval_on_selector(WIDGET, "r => r.scrollWidth <= r.clientWidth")
    assert fits, "the widget is wider than the page"
    for scheme in ("light", "dark"):  # the theme follows the reader's system
        tab.emulate_media(color_scheme=scheme)
        tab.wait_for_function(f"document.documentElement.dataset.theme === '{scheme}'")
        response = Axe().run(tab, context={"include": [[WIDGET]]}).response
        found = [v["id"] for v in response["violations"] if v["impact"] in BLOCKING]
        assert not found, (scheme, found)


def test_learned_widget_by_keyboard_and_narrow(chromium, site):
    tab = open_page(chromium, site, LEARNED, width=360)
    tokens = tab.get_attribute(WIDGET, "data-tokens")
    first = tab.evaluate(FORWARD, ["learned", [[int(t) for t in tokens.split(",")]]])[0]
    tab.focus("[role=gridcell][tabindex='0']")
    tab.keyboard.press("ArrowDown")  # query 1, key 0 of head 0
    readout = tab.inner_text(".al-readout >> nth=0")
    assert f"{first['weights'][0][0][1][0]:.6f}" in readout
    tab.fill(TOKENS, "3 1 4 1 5")
    assert tab.locator(".al-heatmap >> nth=0").locator("[role=gridcell]").count() == 25
    tab.check(f"{WIDGET} input[type=checkbox]")
    assert tab.locator(".al-model").count() == 2
    screenshot(tab, f"learned-{site.edition}-360")
    assert_fits_and_passes_axe(tab)
    words = tab.inner_text(f"{WIDGET} .al-controls")
    chinese = bool(CJK.search(words))
    assert chinese == (site.edition == "zh_CN"), words
    tab.set_viewport_size({"width": 1280, "height": 900})
    screenshot(tab, f"learned-{site.edition}")
    tab.fill(TOKENS, "3 99")
    assert tab.get_attribute(TOKENS, "aria-invalid") == "true"


def test_widget_scripts_fit_the_budget(site):
    for rel in (LEARNED, CHAPTER):
        page = site.page(rel)
        scripts = [s["src"] for s in page.soup.select("script[src*=attention-live]")]
        assert len(scripts) >= 2, scripts  # weights, code
        size = sum(page.resolve(src).stat().st_size for src in scripts)
        size += len(page.soup.select_one(WIDGET)["data-colors"])  # colours
        print(f"\n{site.edition} {rel}: {size} bytes of widget scripts")
        assert size <= BUDGET


def page_with_both_widgets(site, folder):
    """The learned page with section 3.3's widget, its word list and its
    weights added at the end of its article: a page with two widgets, written
    to ``folder`` with every script and stylesheet pointing into the site."""
    learned, chapter = site.page(LEARNED), site.page(CHAPTER)
    soup = BeautifulSoup(learned.path.read_text("utf-8"), "html.parser")
    for tag in soup.select("script[src], link[href], img[src]"):
        attribute = "href" if tag.name == "link" else "src"
        if "://" not in tag[attribute]:
            tag[attribute] = learned.resolve(tag[attribute]).as_uri()
    other = BeautifulSoup(chapter.path.read_text("utf-8"), "html.parser")
    article = soup.select_one("article.bd-article")
    article.append(other.select_one(WIDGET))
    article.append(other.select_one("#running-example-words"))
    weights = other.select_one("script[src*='attention-live/running-example.js']")
    weights["src"] = chapter.resolve(weights["src"]).as_uri()
    soup.select_one("script[src$='/attention-live.js']").insert_before(weights)
    path = folder / "two-widgets.html"
    path.write_text(str(soup), "utf-8")
    return path


def own_words(tab, name):
    """The texts of the word list ``<name>-words`` on the open page, each as a
    pattern (``dimension {d}`` matches ``dimension 1``)."""
    script = """id => [...document.getElementById(id).querySelectorAll("li")]
        .map(li => li.textContent.replace(li.querySelector("code").textContent, ""))"""
    texts = [" ".join(t.split()) for t in tab.evaluate(script, f"{name}-words")]
    return [re.compile(re.sub(r"\\\{\w+\\\}", ".+", re.escape(t))) for t in texts]


#: The words each widget shows, by the CSS selectors of their elements.
SHOWN = {
    "learned": ".al-controls label, button, th, caption",
    "running-example": "legend, button, .al-slider label, label[for*=token]",
}


def test_each_widget_shows_its_own_words(chromium, site, tmp_path):
    """Two widgets on one page: every word a widget shows comes from its own
    list. (Both lists have a ``token`` entry, "token" in one, "Token" in the
    other: a widget that read the page's first list, or both, shows the other
    widget's word or fails to start.)"""
    tab = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.route("http*://**", lambda route: route.abort())
    tab.goto(page_with_both_widgets(site, tmp_path).as_uri())
    assert not errors, errors
    for name, selector in SHOWN.items():
        widget = tab.locator(f"[data-attention-live^='{name}']")
        assert "al-ready" in widget.get_attribute("class"), name
        texts = widget.locator(selector).all_inner_texts()
        shown = [" ".join(text.split()) for text in texts]
        assert len(shown) >= 4, (name, shown)
        patterns = own_words(tab, name)
        foreign = [t for t in shown if not any(p.fullmatch(t) for p in patterns)]
        assert not foreign, f"the {name} widget shows words not in its list: {foreign}"
    chapter_widget = "[data-attention-live=running-example]"
    screenshot(tab, f"two-widgets-{site.edition}", chapter_widget)
