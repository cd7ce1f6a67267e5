"""Tests for attention.bench: the benchmark runs and reports, at toy sizes.

No timing is asserted anywhere: the numbers depend on the machine and its
load. These tests check that the benchmark covers the registry, produces
complete, well-formed results, that its FLOP model counts what it says, and
that its report keeps its width whatever the numbers.
"""

from __future__ import annotations

import json
import sys

import pytest

import attention
from attention import bench
from attention.bench import cli
from attention.bench.table import milliseconds, ratio

# The quick loop leaves this file to `make test` (its site tier): it runs the
# benchmark's measurements for real, about 8 s in all.
pytestmark = pytest.mark.slow

TINY = bench.BenchConfig.quick(
    batch=1,
    tokens=16,
    d_model=8,
    heads=2,
    repeats=2,
    warmup=1,
    matmul_size=32,
    memory_tokens=(16, 32),
    threads=1,
)


def test_flop_model_counts_projections_and_causal_pairs():
    b, t, d, h = 2, 4, 6, 3
    projections = 2 * b * t * d * 3 * d + 2 * b * t * d * d
    pairs = 4 + 3 + 2 + 1  # query i sees keys 0..i
    attention_flops = 2 * (2 * b * h * pairs * (d // h))
    assert bench.flops("mha", b, t, d, h) == projections + attention_flops
    assert bench.flops("sdpa", b, t, d, h) == bench.flops("mha", b, t, d, h)


def test_the_default_variants_are_the_registry_then_the_wrapper():
    assert bench.BenchConfig().variants == (*attention.VARIANTS, bench.WRAPPER)


def test_a_config_refuses_unknown_variants():
    with pytest.raises(ValueError, match=r"unknown variants \['nope'\]"):
        bench.BenchConfig(variants=("mha", "nope"))


def test_the_split_divides_the_sdpa_variants_flops_into_projections_and_core():
    config = bench.BenchConfig.quick(batch=1, tokens=32, d_model=16, heads=2, repeats=1)
    split = bench.time_split(config, tiled=True)
    rows = {row["piece"]: row for row in split["rows"]}
    assert list(rows) == [
        "projections", "core causal", "core dense", "core tiled", "sdpa (whole)",
    ]  # fmt: skip
    whole = bench.flops("sdpa", 1, 32, 16, 2)
    assert rows["projections"]["flops"] + rows["core causal"]["flops"] == whole
    assert rows["core dense"]["flops"] == 2 * 2 * 1 * 2 * 32 * 32 * 8  # every pair
    rate = split["matmul"]["flops_per_s"]
    for row in rows.values():
        assert row["bound_s"] == pytest.approx(row["flops"] / rate)
        assert row["times_bound"] == pytest.approx(row["median_s"] / row["bound_s"])
    assert "projections + causal core: projections" in bench.format_split(split)


def test_timing_covers_every_variant_and_mode():
    results = bench.run(TINY, memory=False, progress=False)
    seen = {(row["variant"], row["mode"]) for row in results["rows"]}
    assert seen == {(v, m) for v in TINY.variants for m in bench.MODES}
    for row in results["rows"]:
        assert len(row["times_s"]) == TINY.repeats
        assert row["median_s"] > 0 and row["bound_s"] > 0
    chapter = [r for r in results["rows"] if r["variant"] == bench.REFERENCE]
    assert all(r["speedup_vs_chapter"] == 1.0 for r in chapter)
    report = bench.format_report(results)
    assert "ceiling forward" in report
    assert max(len(line) for line in report.splitlines()) <= 72


def _results(variants, median, bound, tokens=(1024, 2048, 4096, 8192), peak=1.0):
    """Made-up results with the given numbers in every cell."""
    rows = [
        {"variant": v, "mode": m, "median_s": median, "bound_s": bound,
         "times_bound": median / bound, "speedup_vs_chapter": 1 / median}
        for v in variants for m in bench.MODES
    ]  # fmt: skip
    return {
        "config": {"batch": 8, "tokens": 1024, "d_model": 768, "heads": 12,
                   "repeats": 5, "variants": list(variants)},
        "meta": {"threads": 2},
        "matmul": {"size": 2048, "flops_per_s": 1.5e11},
        "rows": rows,
        "memory": {"batch": 1, "tokens": list(tokens),
                   "peak_bytes": {v: [peak * 2**20] * len(tokens) for v in variants}},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("median", "bound", "peak"),
    [(1e-6, 1e-9, 0.0), (1234.5, 1e-7, 123456.0), (0.0123, 0.0123, 3.5)],
    ids=["tiny", "huge", "typical"],
)
def test_report_lines_fit_72_columns_whatever_the_numbers(median, bound, peak):
    names = ("mha", "a_twenty_char_name__", "wrapper")
    report = bench.format_report(_results(names, median, bound, peak=peak))
    too_wide = [line for line in report.splitlines() if len(line) > 72]
    assert not too_wide, too_wide


def test_numbers_keep_a_fixed_width():
    for x in (1e-9, 0.5, 9.999, 99.99, 999.4, 999.6, 1e4, 1e12):
        assert len(ratio(x)) <= 6, x
    for s in (1e-7, 0.09996, 99.9994, 100.0, 1e6):
        assert len(milliseconds(s)) <= 5, s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_memory_is_measured_for_every_length_and_variant(tmp_path):
    config = bench.BenchConfig.quick(**{**TINY.__dict__, "variants": ("mha", "sdpa")})
    results = bench.run(config, memory=True, progress=False)
    memory = results["memory"]
    assert memory["tokens"] == [16, 32]
    assert set(memory["peak_bytes"]) == {"mha", "sdpa"}
    assert all(len(peaks) == 2 for peaks in memory["peak_bytes"].values())
    written = cli.save(results, tmp_path, "tiny", ("svg",))
    names = sorted(path.name for path in written)
    assert names == ["tiny-memory.svg", "tiny-times.svg", "tiny.csv", "tiny.json"]
    assert json.loads((tmp_path / "tiny.json").read_text())["config"]["tokens"] == 16


def test_command_line_quick_run_writes_its_files(tmp_path, capsys):
    argv = ["--quick", "--batch", "1", "--tokens", "8", "--d-model", "8",
            "--heads", "2", "--repeats", "1", "--matmul-size", "16",
            "--no-memory", "--threads", "1", "--out", str(tmp_path),
            "--formats", "", "--allow-noisy"]  # fmt: skip
    assert cli.main(argv) == 0
    assert "speed-up" in capsys.readouterr().out
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert saved["meta"]["noisy"] == bench.noise_reasons(saved)


def test_command_line_refuses_a_run_without_the_reference(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--quick", "--variants", "sdpa", "--no-memory"])
    assert "must include 'mha'" in capsys.readouterr().err
