"""Metal's quirks: its partitioner takes a list of compile specs (the smallest: none).

May import: the quirks' base.
"""

from __future__ import annotations

from etproof.export.quirks.base import BackendQuirks


class MetalQuirks(BackendQuirks):
    def minimum_partitioner(self, cls):
        return cls([])


QUIRKS = MetalQuirks("metal")
