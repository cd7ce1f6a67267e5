"""The pages' sentences about the stored run follow its numbers.

Every page that reads the stored benchmark run (``bench.stored_run()``) is
executed here, cell by cell, twice: once with the real run, once with a
copy in which two variants' timings are swapped. The swapped run must
either fail the page (a :func:`attention.bench.claim` names its sentence)
or change the page's words, numbers aside. A page whose comparisons were
typed for one run passes the first run and prints the same words for the
second: this test fails on it.

Cells tagged ``nondeterministic`` (live timings) run, but their outputs are
not compared and their claims are left to the build: their words follow
the machine, not the stored run.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from myst_nb.core.read import read_myst_markdown_notebook

from attention import bench

pytestmark = pytest.mark.slow  # executes whole pages: the site tier

BOOK = Path(__file__).resolve().parents[1] / "book"
READERS = sorted(
    path
    for path in BOOK.glob("*/*.md")
    if "stored_run(" in path.read_text(encoding="utf-8")
)
#: Swaps that each page's comparisons must notice: the chapter's two
#: classes, and the chapter's class against the fused kernel.
SWAPS = [("mha", "wrapper"), ("mha", "sdpa")]
NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?")


def swapped(run: dict, a: str, b: str) -> dict:
    """A copy of ``run`` in which variants ``a`` and ``b`` trade their timings."""
    run = copy.deepcopy(run)
    rows = {(r["variant"], r["mode"]): r for r in run["rows"]}
    for mode in bench.MODES:
        first, second = rows[(a, mode)], rows[(b, mode)]
        for key in ("times_s", "median_s"):
            first[key], second[key] = second[key], first[key]
        for row in (first, second):  # the derived ratios, as the runner makes them
            row["times_bound"] = row["median_s"] / row["bound_s"]
    for mode in bench.MODES:
        reference = rows[(bench.REFERENCE, mode)]["median_s"]
        for (_, row_mode), row in rows.items():
            if row_mode == mode:
                row["speedup_vs_chapter"] = reference / row["median_s"]
    return run


def run_page(
    page: Path, run: dict, monkeypatch, folder: Path
) -> tuple[list[str], Exception | None]:
    """Execute a page's code cells with ``run`` as the stored run.

    Returns the words of each compared cell's output (numbers masked), and
    the first :class:`~attention.bench.ClaimError` raised, if any.
    """
    monkeypatch.setattr(bench, "stored_run", lambda name="gpt2": copy.deepcopy(run))
    monkeypatch.chdir(folder)  # whatever a cell writes stays out of the book
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = read_myst_markdown_notebook(page.read_text(encoding="utf-8"))
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    words = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        live = "nondeterministic" in tags
        # the notebook's figure format: not a setting of a plain IPython shell
        source = re.sub(r"(?m)^%config InlineBackend.*$", "", cell.source)
        with capture_output() as captured:
            result = shell.run_cell(source, silent=False, store_history=False)
        error = result.error_in_exec
        if isinstance(error, bench.ClaimError):
            if live:  # a live timing's claim follows the machine: the build's
                continue
            return words, error
        if error is not None and "raises-exception" not in tags:
            raise AssertionError(f"{page.name}: a cell failed: {error!r}") from error
        if not live:
            words.append(NUMBER.sub("#", captured.stdout))
    return words, None


@pytest.mark.parametrize("page", READERS, ids=[p.stem for p in READERS])
def test_swapped_timings_change_the_words_or_fail_the_page(page, monkeypatch, tmp_path):
    stored = bench.stored_run()
    words, error = run_page(page, stored, monkeypatch, tmp_path)
    assert error is None, f"the stored run itself breaks a claim: {error}"
    for a, b in SWAPS:
        doctored = swapped(stored, a, b)
        swapped_words, error = run_page(page, doctored, monkeypatch, tmp_path)
        assert error is not None or swapped_words != words, (
            f"{page.name} says the same with {a} and {b} swapped"
        )


def test_the_pages_that_compare_timings_read_the_stored_run_through_stored_run():
    names = {page.relative_to(BOOK).as_posix() for page in READERS}
    assert names >= {
        "chapter3/3-6-multi-head-attention.md",
        "chapter3/summary.md",
        "beyond/efficient-attention.md",
        "beyond/flash-attention.md",
    }
    opened = re.compile(r"[\"']_data/bench-[\w-]+\.json[\"']")  # a path in code
    for page in BOOK.glob("*/*.md"):  # no page reads the file behind its back
        assert not opened.search(page.read_text(encoding="utf-8")), page


def test_a_swap_trades_the_timings_and_keeps_the_rest():
    stored = bench.stored_run()
    doctored = swapped(stored, "mha", "wrapper")
    before = {(r["variant"], r["mode"]): r for r in stored["rows"]}
    after = {(r["variant"], r["mode"]): r for r in doctored["rows"]}
    for mode in bench.MODES:
        assert after[("mha", mode)]["times_s"] == before[("wrapper", mode)]["times_s"]
        assert after[("wrapper", mode)]["times_s"] == before[("mha", mode)]["times_s"]
        assert after[("sdpa", mode)] != before[("sdpa", mode)]  # its speed-up moved
        assert after[("sdpa", mode)]["times_s"] == before[("sdpa", mode)]["times_s"]
    assert doctored["memory"] == stored["memory"]
