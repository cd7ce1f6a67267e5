"""Tests for attention.bench: the benchmark runs and reports, at toy sizes.

No timing is asserted anywhere: the numbers depend on the machine and its
load. These tests only check that the benchmark produces complete,
well-formed results and that its FLOP model counts what it says.
"""

from __future__ import annotations

import json
import sys

import pytest

from attention import bench

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
    attention = 2 * (2 * b * h * pairs * (d // h))
    assert bench.flops("mha", b, t, d, h) == projections + attention
    assert bench.flops("sdpa", b, t, d, h) == bench.flops("mha", b, t, d, h)
    assert bench.flops("wrapper", b, t, d, h) == projections + attention - (
        2 * b * t * d * d
    )


def test_timing_covers_every_variant_and_mode():
    results = bench.run(TINY, memory=False, progress=False)
    seen = {(row["variant"], row["mode"]) for row in results["rows"]}
    assert seen == {(v, m) for v in bench.VARIANTS for m in bench.MODES}
    for row in results["rows"]:
        assert len(row["times_s"]) == TINY.repeats
        assert row["median_s"] > 0 and row["bound_s"] > 0
    chapter = [r for r in results["rows"] if r["variant"] == bench.REFERENCE]
    assert all(r["speedup_vs_chapter"] == 1.0 for r in chapter)
    report = bench.format_report(results)
    assert "ceiling forward" in report
    assert max(len(line) for line in report.splitlines()) <= 72


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_memory_is_measured_for_every_length_and_variant(tmp_path):
    config = bench.BenchConfig.quick(**{**TINY.__dict__, "variants": ("mha", "sdpa")})
    results = bench.run(config, memory=True, progress=False)
    memory = results["memory"]
    assert memory["tokens"] == [16, 32]
    assert set(memory["peak_bytes"]) == {"mha", "sdpa"}
    assert all(len(peaks) == 2 for peaks in memory["peak_bytes"].values())
    written = bench.save(results, tmp_path, "tiny", ("svg",))
    names = sorted(path.name for path in written)
    assert names == ["tiny-memory.svg", "tiny-times.svg", "tiny.csv", "tiny.json"]
    assert json.loads((tmp_path / "tiny.json").read_text())["config"]["tokens"] == 16


def test_command_line_quick_run_writes_its_files(tmp_path, capsys):
    argv = ["--quick", "--batch", "1", "--tokens", "8", "--d-model", "8",
            "--heads", "2", "--repeats", "1", "--matmul-size", "16",
            "--no-memory", "--threads", "1", "--out", str(tmp_path),
            "--formats", ""]  # fmt: skip
    assert bench.main(argv) == 0
    assert "speed-up" in capsys.readouterr().out
    assert (tmp_path / "bench.json").exists()
