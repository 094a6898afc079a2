"""Arm VGF's quirks: its partitioner takes a VgfCompileSpec (its defaults).

May import: the quirks' base; ExecuTorch only inside the hooks.
"""

from __future__ import annotations

from etproof.export.quirks.base import BackendQuirks


class ArmVgfQuirks(BackendQuirks):
    def minimum_partitioner(self, cls):
        from executorch.backends.arm.vgf import VgfCompileSpec

        return cls(VgfCompileSpec())


QUIRKS = ArmVgfQuirks("arm-vgf")
