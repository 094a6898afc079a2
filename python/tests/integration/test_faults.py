"""Faults during work (issue 11 §3): an export killed with SIGKILL at several moments — after
its staging directory exists, once the bundle is written, and between the swap of an existing
bundle and the removal of the old one — leaves either no bundle or a complete one; its staging
directory is never taken for a bundle and the next export into that directory removes it.
Real exports in a subprocess (etproof.export.bundle's ETPROOF_TEST_KILL_AT hook kills it there).

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_faults.py."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO
from etproof.export.bundle import KILL_AT_ENV
from etproof.export.cache import bundle_intact
from etproof.manifest import read_manifest


EXPORT = """
import sys, torch
from etproof.export.pipeline import export_model
torch.manual_seed(int(sys.argv[2]))
x = torch.randn(1, 4)
export_model(torch.nn.Linear(4, 2).eval(), (x,), "lin", sys.argv[1], "portable", "fp32",
             ["x"], ["y"], [("c0", "synthetic", "torch.randn", (x,))])
"""


def _export(out, seed: int, kill_at: str | None = None) -> int:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop(KILL_AT_ENV, None)
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    return subprocess.run([sys.executable, "-c", EXPORT, str(out), str(seed)], env=env,
                          capture_output=True, timeout=300).returncode


def _leftovers(out):
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("kill_at, existing", [
    ("staged", False), ("written", False), ("written", True), ("renamed", True),
])
def test_a_killed_export_leaves_no_bundle_or_a_complete_one(tmp_path, kill_at, existing):
    out = tmp_path / "out"
    out.mkdir()
    before = None
    if existing:
        assert _export(out, seed=1) == 0
        before = read_manifest(out / "lin")["artifact"]["sha256"]
    assert _export(out, seed=2, kill_at=kill_at) == -signal.SIGKILL
    bundle = out / "lin"
    if existing:
        assert bundle_intact(bundle)  # the old one, or (swapped in) the new one, never a mix
        sha = read_manifest(bundle)["artifact"]["sha256"]
        assert (sha == before) == (kill_at != "renamed"), kill_at
    else:
        assert not bundle.exists()
    left = _leftovers(out)
    assert left and all(".tmp-" in n for n in left), left  # only dot folders remain
    # the next export into OUT removes what the killed one left, and completes
    assert _export(out, seed=3) == 0
    assert bundle_intact(bundle)
    assert _leftovers(out) == []
