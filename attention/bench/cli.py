"""The command line of ``python -m attention.bench``, and the files it writes."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import replace
from pathlib import Path

from .config import BenchConfig, _all_variants
from .noise import MAX_SPREAD, noise_reasons
from .plots import plot_memory, plot_times
from .runner import run
from .table import format_report

CSV_FIELDS = [
    "variant",
    "mode",
    "median_s",
    "speedup_vs_chapter",
    "times_bound",
    "flops",
    "bound_s",
]


def save(
    results: dict, out_dir: Path, stem: str, formats: tuple[str, ...]
) -> list[Path]:
    """Write ``<stem>.json``, ``<stem>.csv`` and the plots into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / f"{stem}.json", out_dir / f"{stem}.csv"]
    written[0].write_text(json.dumps(results, indent=1) + "\n")
    with written[1].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results["rows"])
    if formats:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figures = {"times": plot_times(results)}
        if results.get("memory"):
            figures["memory"] = plot_memory(results)
        for name, fig in figures.items():
            for fmt in formats:
                path = out_dir / f"{stem}-{name}.{fmt}"
                fig.savefig(path, dpi=150 if fmt == "png" else "figure")
                written.append(path)
            plt.close(fig)
    return written


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m attention.bench",
        description="Time and size the multi-head attention variants side by side.",
    )
    default = BenchConfig()
    add = parser.add_argument
    add("--quick", action="store_true", help="small sizes, seconds")
    add("--batch", type=int, help=f"default {default.batch}")
    add("--tokens", type=int, help=f"default {default.tokens}")
    add("--d-model", type=int, help=f"default {default.d_model}")
    add("--heads", type=int, help=f"default {default.heads}")
    add("--repeats", type=int, help=f"timed rounds (default {default.repeats})")
    add("--warmup", type=int, help=f"untimed rounds (default {default.warmup})")
    add("--matmul-size", type=int, help="side of the matmul probe")
    add("--memory-tokens", type=int, nargs="+", help="lengths")
    add("--train-memory-tokens", type=int, nargs="+", help="lengths, fwd+bwd")
    add("--memory-batch", type=int, help=f"default {default.memory_batch}")
    add("--no-memory", action="store_true", help="skip memory")
    add("--variants", nargs="+", help=f"default: all of {list(_all_variants())}")
    add(
        "--variant",
        action="append",
        dest="plugins",
        metavar="MODULE:CLASS",
        help="also time a class from outside the package (importable module, "
        "optionally NAME=MODULE:CLASS); repeatable",
    )
    add("--threads", type=int, help="torch intra-op threads")
    add("--out", type=Path, default=Path("_build/bench"), help="output directory")
    add("--stem", default="bench", help="file name stem")
    add("--formats", default="png,svg", help="plot formats, comma-separated, or ''")
    add(
        "--allow-noisy",
        action="store_true",
        help="save a run even when the machine was busy or its rounds spread by "
        f"more than {MAX_SPREAD:.0%}; the run then records why, and the pages "
        "that read it say so",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    overrides = {
        key: value
        for key, value in {
            "batch": args.batch,
            "tokens": args.tokens,
            "d_model": args.d_model,
            "heads": args.heads,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "matmul_size": args.matmul_size,
            "memory_tokens": tuple(args.memory_tokens) if args.memory_tokens else None,
            "train_memory_tokens": tuple(args.train_memory_tokens)
            if args.train_memory_tokens
            else None,
            "memory_batch": args.memory_batch,
            "variants": tuple(args.variants) if args.variants else None,
            "threads": args.threads,
            "plugins": tuple(args.plugins) if args.plugins else None,
        }.items()
        if value is not None
    }
    try:
        if args.quick:
            config = BenchConfig.quick(**overrides)
        else:
            config = replace(BenchConfig(), **overrides)
    except ValueError as exc:
        parser.error(str(exc))
    results = run(config, memory=not args.no_memory)
    results["meta"]["command"] = "python -m attention.bench " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    print(format_report(results))
    reasons = noise_reasons(results)
    if reasons and not args.allow_noisy:
        print("[bench] not saved, the run is noisy:", file=sys.stderr)
        for reason in reasons:
            print(f"[bench]   {reason}", file=sys.stderr)
        print(
            "[bench] measure again on a quiet machine (more --repeats steady the "
            "medians), or pass --allow-noisy to save it marked as noisy",
            file=sys.stderr,
        )
        return 2
    results["meta"]["noisy"] = reasons
    formats = tuple(f for f in args.formats.split(",") if f)
    for path in save(results, args.out, args.stem, formats):
        print(f"[bench] wrote {path}", file=sys.stderr)
    return 0
