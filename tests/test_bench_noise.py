"""Tests for the trust of a benchmark run: spreads, noise, comparisons, claims.

No timing is measured here: the runs are made up, so every verdict is known.
"""

from __future__ import annotations

import json

import pytest

from attention import bench
from attention.bench import cli


def made_up_run(load_before=0.2, load_after=1.1, rounds=(1.0, 1.05, 1.1)):
    """A run of two variants, quiet and steady unless told otherwise."""
    rows = [
        {"variant": v, "mode": m, "times_s": list(rounds), "median_s": rounds[1]}
        for v in ("mha", "sdpa")
        for m in bench.MODES
    ]
    rows[-1] = {**rows[-1], "times_s": [0.5, 0.51, 0.52]}
    return {
        "meta": {
            "created_utc": "2026-11-28 13:00 UTC",
            "cpu": "a test CPU",
            "torch": "2.13.0+cpu",
            "cpu_count": 2,
            "threads": 1,
            "load_average_before": [load_before, 0.1, 0.1],
            "load_average_after": [load_after, 0.5, 0.2],
        },
        "config": {"variants": ["mha", "sdpa"]},
        "matmul": {"times_s": [0.1, 0.101, 0.102]},
        "rows": rows,
    }


def test_a_quiet_steady_run_has_no_reasons():
    assert bench.noise_reasons(made_up_run()) == []


@pytest.mark.parametrize(
    ("run", "names"),
    [
        (made_up_run(load_before=1.5), ["before the run was 1.50 on 2 cores"]),
        # 2.4 after, less the benchmark's own thread: 1.4 of other work
        (made_up_run(load_after=2.4), ["after the run was 2.40", "1.40 beside"]),
        (made_up_run(rounds=(1.0, 1.1, 1.2)), ["mha forward spread by 18%"]),
    ],
    ids=["busy-before", "busy-during", "rounds-disagree"],
)
def test_a_noisy_run_says_why(run, names):
    reasons = " | ".join(bench.noise_reasons(run))
    for name in names:
        assert name in reasons


def test_the_largest_spread_names_its_measurement():
    run = made_up_run()
    run["rows"][2]["times_s"] = [1.0, 1.12, 1.06]  # sdpa forward
    name, spread = bench.largest_spread(run)
    assert name == "sdpa forward"
    assert spread == pytest.approx(0.12 / 1.06)


def test_the_command_refuses_to_save_a_noisy_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "run", lambda config, memory: made_up_run(1.7))
    monkeypatch.setattr(cli, "format_report", lambda results: "report")
    argv = ["--quick", "--no-memory", "--out", str(tmp_path), "--formats", ""]
    assert cli.main(argv) == 2
    assert "before the run was 1.70" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []

    assert cli.main([*argv, "--allow-noisy"]) == 0
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert saved["meta"]["noisy"] == bench.noise_reasons(made_up_run(1.7))
    assert "A NOISY RUN" in bench.describe_run(saved)


def test_a_quiet_run_is_saved_unmarked(monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "run", lambda config, memory: made_up_run())
    monkeypatch.setattr(cli, "format_report", lambda results: "report")
    argv = ["--quick", "--no-memory", "--out", str(tmp_path), "--formats", ""]
    assert cli.main(argv) == 0
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert saved["meta"]["noisy"] == []
    assert "NOISY" not in bench.describe_run(saved)


@pytest.mark.parametrize(
    ("a", "b", "faster"),
    [
        ([1.0, 1.1], [1.2, 1.3], "a"),
        ([1.2, 1.3], [1.0, 1.1], "b"),
        ([1.0, 1.25], [1.2, 1.3], None),  # overlapping rounds: no verdict
        ([1.0, 1.0], [1.0, 1.0], None),
    ],
)
def test_compare_decides_only_outside_the_spread(a, b, faster):
    forward, backward = bench.compare(a, b), bench.compare(b, a)
    assert forward.faster == faster
    assert backward.faster == {"a": "b", "b": "a", None: None}[faster]
    assert forward.ratio == pytest.approx(1 / backward.ratio)
    assert ("inside the spread" in forward.word) == (faster is None)


def test_a_claim_names_its_sentence():
    bench.claim(True, "kept")
    with pytest.raises(bench.ClaimError, match="'SDPA is faster'"):
        bench.claim(False, "SDPA is faster")


def test_time_rounds_counts_its_rounds_and_refuses_one():
    calls = []
    timing = bench.time_rounds(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(timing.rounds) == 3 and len(calls) == 5
    with pytest.raises(ValueError, match="at least 2.*got 1"):
        bench.time_rounds(lambda: None, repeats=1)
