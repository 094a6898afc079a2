"""Arm TOSA's quirks: its partitioner's smallest configuration is TosaCompileSpec("TOSA-1.0+FP").

May import: the quirks' base; ExecuTorch only inside the hooks.
"""

from __future__ import annotations

from etproof.export.quirks.base import BackendQuirks


class ArmTosaQuirks(BackendQuirks):
    def minimum_partitioner(self, cls):
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

        return cls(TosaCompileSpec("TOSA-1.0+FP"))


QUIRKS = ArmTosaQuirks("arm-tosa")
