"""XNNPACK's quirks: lowered with XNNPACK's own edge compile config and serialized with its
ExecutorchBackendConfig (executorch.backends.xnnpack.utils.configs).

May import: the quirks' base; ExecuTorch only inside the hooks.
"""

from __future__ import annotations

from etproof.export.quirks.base import BackendQuirks


class XNNPACKQuirks(BackendQuirks):
    def lowering_config(self):
        from executorch.backends.xnnpack.utils.configs import (
            get_xnnpack_edge_compile_config,
            get_xnnpack_executorch_backend_config,
        )

        return ({"compile_config": get_xnnpack_edge_compile_config()},
                get_xnnpack_executorch_backend_config())


QUIRKS = XNNPACKQuirks("xnnpack")
