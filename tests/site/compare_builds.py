"""Compare the cell outputs of two builds of the book.

Usage: ``python tests/site/compare_builds.py _build/repro-a _build/repro-b``,
each a ``BUILDDIR`` (holding myst-nb's ``jupyter_execute/``) or that folder
itself; exit status 0 when the outputs agree, 1 with the differences listed.
``make repro`` runs it on two clean builds, ``test_site_stale.py`` on a copy.

Compared: every code cell's source, and its outputs unless it is tagged
``nondeterministic`` (timings). Ignored: execution counts and other metadata,
object addresses, how printed text was split into messages
(``nb_merge_streams`` merges it), a Matplotlib SVG's date and random ids.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

IGNORED_TAGS = frozenset({"nondeterministic"})

_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")
_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>", re.DOTALL)
_SVG_ID = re.compile(r'\bid="([^"]+)"')


def normalize_text(text: str) -> str:
    """Hide object addresses, which differ between runs.

    >>> normalize_text("<Linear object at 0x7f3a2c1d9e50>")
    '<Linear object at 0x...>'
    """
    return _ADDRESS.sub("at 0x...", text)


def normalize_svg(svg: str) -> str:
    """Drop a Matplotlib SVG's metadata and number its ids in order of use.

    Matplotlib stamps the date into ``<metadata>`` and salts its clip-path
    and marker ids with a random value unless ``svg.hashsalt`` is set.

    >>> a = '<metadata>2026-01-01</metadata><path id="p3f1"/><use href="#p3f1"/>'
    >>> b = '<metadata>2026-01-02</metadata><path id="p9c2"/><use href="#p9c2"/>'
    >>> normalize_svg(a) == normalize_svg(b)
    True
    >>> normalize_svg(a)
    '<path id="id0"/><use href="#id0"/>'
    """
    svg = _SVG_METADATA.sub("", svg)
    ids = list(dict.fromkeys(_SVG_ID.findall(svg)))
    # Two passes through placeholders, so that a new name never meets an old one.
    for i, old in enumerate(ids):
        svg = re.sub(rf'(?<=["#]){re.escape(old)}(?=["\)])', f"\0{i}\0", svg)
    return re.sub("\0(\\d+)\0", r"id\1", svg)


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def normalize_output(output: dict) -> dict:
    """The parts of one nbformat output that must not change between builds."""
    kind = output["output_type"]
    if kind == "stream":
        text = normalize_text(_joined(output["text"]))
        return {"stream": output["name"], "text": text}
    if kind == "error":
        return {"error": output["ename"], "evalue": output["evalue"]}
    data = {}
    for mime, value in output.get("data", {}).items():
        text = _joined(value)
        if mime == "image/svg+xml":
            text = normalize_svg(text)
        elif mime.startswith("text/"):
            text = normalize_text(text)
        data[mime] = text
    return {kind: data}


def merge_streams(outputs: list[dict]) -> list[dict]:
    """Each stream's text in one output, where the stream first printed.

    >>> merge_streams([
    ...     {"output_type": "stream", "name": "stdout", "text": "a\\n"},
    ...     {"output_type": "execute_result", "data": {}},
    ...     {"output_type": "stream", "name": "stdout", "text": ["b\\n"]},
    ... ])  # doctest: +NORMALIZE_WHITESPACE
    [{'output_type': 'stream', 'name': 'stdout', 'text': 'a\\nb\\n'},
     {'output_type': 'execute_result', 'data': {}}]
    """
    merged, streams = [], {}
    for output in outputs:
        if output["output_type"] != "stream":
            merged.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += _joined(output["text"])
        else:
            streams[output["name"]] = dict(output, text=_joined(output["text"]))
            merged.append(streams[output["name"]])
    return merged


def cells(notebook: Path, ignore_tags=IGNORED_TAGS) -> list[dict]:
    """Source and normalized outputs of each code cell of an executed notebook."""
    nb = json.loads(notebook.read_text("utf-8"))
    result = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        outputs = None  # not compared
        if not tags & set(ignore_tags):
            merged = merge_streams(cell.get("outputs", []))
            outputs = [normalize_output(o) for o in merged]
        result.append({"source": _joined(cell["source"]), "outputs": outputs})
    return result


def executed_notebooks(build: Path) -> dict[str, Path]:
    """``{relative path: file}`` of the executed notebooks of a build."""
    folder = build if build.name == "jupyter_execute" else build / "jupyter_execute"
    if not folder.is_dir():
        raise FileNotFoundError(f"no executed notebooks: {folder} is missing")
    return {
        p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*.ipynb"))
    }


def _first_change(x: dict, y: dict) -> str:
    """The first output line that differs, as ``'old' -> 'new'``."""
    a, b = (json.dumps(c["outputs"], indent=1).splitlines() for c in (x, y))
    for old, new in zip(a, b, strict=False):
        if old != new:
            return f"{old.strip()[:100]!r} -> {new.strip()[:100]!r}"
    return f"{len(a)} vs {len(b)} lines"


def compare(build_a: Path, build_b: Path, ignore_tags=IGNORED_TAGS) -> list[str]:
    """Every difference between the executed outputs of two builds (empty: same)."""
    a, b = executed_notebooks(Path(build_a)), executed_notebooks(Path(build_b))
    problems = [f"{name}: only in {build_a}" for name in sorted(a.keys() - b.keys())]
    problems += [f"{name}: only in {build_b}" for name in sorted(b.keys() - a.keys())]
    for name in sorted(a.keys() & b.keys()):
        cells_a, cells_b = cells(a[name], ignore_tags), cells(b[name], ignore_tags)
        if len(cells_a) != len(cells_b):
            problems.append(f"{name}: {len(cells_a)} vs {len(cells_b)} code cells")
            continue
        for i, (x, y) in enumerate(zip(cells_a, cells_b, strict=True)):
            first_line = x["source"].strip().splitlines()[:1]
            where = f"{name}, code cell {i + 1} ({first_line[0] if first_line else ''})"
            if x["source"] != y["source"]:
                problems.append(f"{where}: the sources differ")
            elif x["outputs"] != y["outputs"]:
                problems.append(f"{where}: the outputs differ: {_first_change(x, y)}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    problems = compare(Path(argv[0]), Path(argv[1]))
    for problem in problems:
        print(problem)
    count = len(executed_notebooks(Path(argv[0])))
    verdict = "differences found" if problems else "same"
    print(f"{count} notebooks compared: {verdict}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
