"""Per-backend quirks of the export half: one module per backend that has any, each a
BackendQuirks (base.py) overriding only the hooks it needs, bound as its ``QUIRKS``.

``quirks_for(key)`` is what lower.py, references.py and targets.py ask instead of comparing a
backend's key; a backend without a module gets BackendQuirks' defaults (nothing special).
Adding a quirky backend: its row in data/backends.json, its module here, and its name in the
import and in MODULES below (python/tests/unit/test_quirks.py holds every module registered, and no
module outside this package and the table comparing a backend key to a literal).

Part of the export rank (python/tests/unit/test_layering.py), below the other export modules: may
import the root modules only; no torch or ExecuTorch at import.
"""

from __future__ import annotations

from etproof.export.quirks import (
    arm_ethos_u,
    arm_tosa,
    arm_vgf,
    coreml,
    cuda,
    metal,
    openvino,
    xnnpack,
)
from etproof.export.quirks.base import BackendQuirks

# The registered modules: one per backend with quirks.
MODULES = (arm_ethos_u, arm_tosa, arm_vgf, coreml, cuda, metal, openvino, xnnpack)

REGISTRY: dict[str, BackendQuirks] = {m.QUIRKS.key: m.QUIRKS for m in MODULES}


def quirks_for(key: str) -> BackendQuirks:
    """Backend ``key``'s quirks: its module's QUIRKS, or the defaults (nothing special)."""
    q = REGISTRY.get(key)
    return q if q is not None else BackendQuirks(key)


__all__ = ["BackendQuirks", "MODULES", "REGISTRY", "quirks_for"]
