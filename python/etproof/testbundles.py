"""Small bundles for the C++ tests: tiny-{portable-fp32,xnnpack-fp32,xnnpack-int8-dynamic-...}."""

from __future__ import annotations

import time
from pathlib import Path

from etproof.export import supported_pairs
from etproof.runner import export_pairs


def export_test_bundles(out: Path, force: bool = False, log=print) -> list[dict]:
    from etproof.models import tiny

    t0 = time.monotonic()
    results = export_pairs(tiny.spec, "tiny", supported_pairs(), Path(out), force=force, log=log)
    log(f"test bundles in {out} ({time.monotonic() - t0:.1f} s)")
    return results
