"""Faults during work (issue 11 §3): an export killed with SIGKILL at several moments — after
its staging directory exists, once the bundle is written, and between the swap of an existing
bundle and the removal of the old one — leaves either no bundle or a complete one; its staging
directory is never taken for a bundle and the next export into that directory removes it.
Real exports in a subprocess (etproof.export.bundle's ETPROOF_TEST_KILL_AT hook kills it there).

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_faults.py."""

import os

from etproof.export.bundle import remove_stale_staging


def test_staging_directories_of_live_exports_are_kept(tmp_path):
    live = tmp_path / f".lin.tmp-{os.getpid()}-abcd1234"
    live.mkdir()
    dead_pid = 2 ** 22 + 12345  # above Linux's default pid_max (4194304): never a process
    dead = tmp_path / f".lin.tmp-{dead_pid}-abcd1234"
    dead.mkdir()
    bundle = tmp_path / "lin"
    bundle.mkdir()
    assert remove_stale_staging(tmp_path) == [dead.name]
    assert live.is_dir() and bundle.is_dir() and not dead.exists()
