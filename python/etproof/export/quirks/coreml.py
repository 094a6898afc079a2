"""Core ML's quirks: its partitioner is configured per recipe, with compile specs from
CoreMLBackend.generate_compile_specs (the recipe's compute_unit, precision and
minimum_deployment_target; etproof.backends' COREML_* name the coremltools enums).

May import: etproof.backends, the quirks' base; coremltools and ExecuTorch only inside the hooks.
"""

from __future__ import annotations

from etproof.backends import COREML_COMPUTE_UNITS, COREML_PRECISIONS
from etproof.export.quirks.base import BackendQuirks


class CoreMLQuirks(BackendQuirks):
    def partitioner(self, cls, recipe: dict | None):
        if recipe is None:
            return self.minimum_partitioner(cls)
        import coremltools as ct
        from executorch.backends.apple.coreml.compiler import CoreMLBackend

        kwargs = {"compute_precision": getattr(ct.precision,
                                               COREML_PRECISIONS[recipe["precision"]])}
        if recipe.get("compute_unit"):
            kwargs["compute_unit"] = getattr(ct.ComputeUnit,
                                             COREML_COMPUTE_UNITS[recipe["compute_unit"]])
        if recipe.get("minimum_deployment_target"):
            kwargs["minimum_deployment_target"] = getattr(ct.target,
                                                          recipe["minimum_deployment_target"])
        return cls(compile_specs=CoreMLBackend.generate_compile_specs(**kwargs))


QUIRKS = CoreMLQuirks("coreml")
