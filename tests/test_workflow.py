"""The publishing workflow (.github/workflows/book.yml): actionlint refuses a
broken copy of it, it runs the README's commands, its cache of ``.venv`` is
keyed on every file the Makefile reinstalls for, and it provides the files
the Makefile's apt-get rule would otherwise try to install without sudo.

actionlint and shellcheck are the pinned ones in ``.venv/bin`` (their wheels
carry the binaries: nothing is downloaded), as ``make lint`` runs them.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
BIN = Path(sys.executable).parent


def actionlint(workflow: Path) -> subprocess.CompletedProcess:
    command = [BIN / "actionlint", f"-shellcheck={BIN / 'shellcheck'}", workflow]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_actionlint_passes_the_workflow():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


# Each mistake: the text it replaces, its replacement, and what actionlint's
# message must name.
MISTAKES = {
    "typo in a key": ("runs-on: ubuntu-24.04", "runs_on: ubuntu-24.04", "runs_on"),
    "unknown input": ("path: _build/html", "paht: _build/html", "paht"),
    "needs a missing job": ("needs: build", "needs: biuld", "biuld"),
    "unknown output": ("outputs.cache-hit", "outputs.cache_hit", "cache_hit"),
    "unknown permission": ("id-token: write", "id_token: write", "id_token"),
    "shell error": ("touch .venv/.installed", 'touch "$(ls .venv', "shellcheck"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_actionlint_refuses_a_broken_copy(mistake, tmp_path):
    old, new, named = MISTAKES[mistake]
    text = WORKFLOW.read_text("utf-8")
    assert old in text, f"{old!r} is no longer in the workflow: update MISTAKES"
    broken = tmp_path / "book.yml"
    broken.write_text(text.replace(old, new), "utf-8")
    result = actionlint(broken)
    assert result.returncode != 0, f"actionlint passed a workflow with {mistake}"
    assert named in result.stdout, result.stdout


def _jobs() -> dict:
    return yaml.safe_load(WORKFLOW.read_text("utf-8"))["jobs"]


def test_the_workflow_runs_the_readmes_two_commands():
    """The commands of the README's set-up block, in its order, as steps."""
    readme = (ROOT / "README.md").read_text("utf-8")
    setup = readme.split("## Set-up: two commands", 1)[1].split("```sh", 1)[1]
    block = setup.split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    commands = [command for command in commands if command]
    runs = [step["run"].strip() for step in _jobs()["build"]["steps"] if "run" in step]
    assert commands == ["make html", "make test"], commands
    assert [run for run in runs if run.startswith("make")] == commands, runs


def test_the_cache_key_hashes_every_file_make_reinstalls_for():
    """The workflow marks a restored .venv as installed on an exact hit, so
    its key must change whenever the Makefile would reinstall: every
    prerequisite of the stamp rule is hashed."""
    makefile = (ROOT / "Makefile").read_text("utf-8")
    stamp = re.search(r"^\$\(STAMP\):(.*)$", makefile, re.MULTILINE)
    assert stamp, "the Makefile has no $(STAMP) rule"
    prerequisites = stamp[1].split()
    cache = next(s for s in _jobs()["build"]["steps"] if s.get("id") == "venv")
    hashed = re.search(r"hashFiles\(([^)]*)\)", cache["with"]["key"])
    files = re.findall(r"'([^']+)'", hashed[1])
    assert prerequisites and set(prerequisites) <= set(files), (prerequisites, files)


def test_the_workflow_provides_what_the_makefiles_apt_rule_would_install():
    """The Makefile installs Chromium and the CJK fonts with apt-get, without
    sudo, when either file is missing: on the runner, an earlier step must
    make sure both files are there (and fail at once if not)."""
    makefile = (ROOT / "Makefile").read_text("utf-8")
    paths = [
        re.search(rf"^{name}\s*:=\s*(\S+)$", makefile, re.MULTILINE)
        for name in ("CHROMIUM", "FONTS_CJK")
    ]
    assert all(paths), "the Makefile no longer names CHROMIUM and FONTS_CJK"
    scripts = "\n".join(s["run"] for s in _jobs()["build"]["steps"] if "run" in s)
    missing = [path[1] for path in paths if path[1] not in scripts]
    assert not missing, f"no step of the workflow checks {missing}"
