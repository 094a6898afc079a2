"""Arm Ethos-U's quirks: its partitioner's smallest configuration is
EthosUCompileSpec("ethos-u55-128").

May import: the quirks' base; ExecuTorch only inside the hooks.
"""

from __future__ import annotations

from etproof.export.quirks.base import BackendQuirks


class ArmEthosUQuirks(BackendQuirks):
    def minimum_partitioner(self, cls):
        from executorch.backends.arm.ethosu import EthosUCompileSpec

        return cls(EthosUCompileSpec("ethos-u55-128"))


QUIRKS = ArmEthosUQuirks("arm-ethos-u")
