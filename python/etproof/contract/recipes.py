"""What the export half supports: the (backend, recipe) pairs and how each is computed.

Which pairs exist, their precision, partitioner and compute unit are facts of the backend table
(data/backends.json, etproof.backends); the quantization scheme of each pair (QUANT_OF) is how
etproof computes it (the schemes are etproof.export.quantize's). A pair in the table without an entry in
QUANT_OF, or the reverse, is BackendTableError at import.

May import: the table (etproof.backends) only; never torch or ExecuTorch, so the CLI can list the
pairs without importing either.
"""

from __future__ import annotations

from typing import Any

from etproof import backends

# How etproof computes each (backend, recipe) it exports: the quantization scheme (None: float).
QUANT_OF = {
    ("portable", "fp32"): None,
    ("xnnpack", "fp32"): None,
    ("xnnpack", "int8-dynamic-per-channel"): "xnnpack-int8-dynamic-per-channel",
    ("xnnpack", "int8-static-per-channel"): "xnnpack-int8-static-per-channel",
    ("xnnpack", "8da4w"): "torchao-8da4w",
    ("xnnpack", "int8-weight-only"): "torchao-int8-weight-only",
    ("coreml", "fp32"): None,
    ("coreml", "fp16"): None,
    ("coreml", "int8-static-per-channel"): "coreml-int8-static-per-channel",
    ("coreml", "int8-weight-only"): "coreml-int8-weight-only",
    ("vulkan", "fp32"): None,
    ("vulkan", "int8-weight-only"): "vulkan-int8-weight-only",
    ("webgpu", "fp32"): None,
    ("openvino", "fp32"): None,
    ("openvino", "int8-static-per-channel"): "openvino-int8-static-per-channel",
    ("openvino", "int8-weight-only"): "openvino-int8-weight-only",
}


def _recipes_from_table() -> dict[tuple[str, str], dict[str, Any]]:
    table = backends.load_table()
    pairs = backends.recipes()
    if set(pairs) != set(QUANT_OF):
        raise backends.BackendTableError(
            f"data/backends.json exports {sorted(pairs)}, etproof/contract/recipes.py implements "
            f"{sorted(QUANT_OF)}", "mark unimplemented recipes \"planned\": true in the table")
    # Quantized or not is the table's fact (recipes[].quantized), read by both halves: a scheme
    # here for a float recipe, or none for a quantized one, is a table that disagrees with etproof.
    wrong = sorted(p for p, e in pairs.items() if e["quantized"] != (QUANT_OF[p] is not None))
    if wrong:
        raise backends.BackendTableError(
            f"data/backends.json's 'quantized' disagrees with etproof/recipes.py for {wrong}",
            "set quantized: true exactly for the recipes etproof quantizes (QUANT_OF)")
    return {(b, r): {"precision": e["precision"], "partitioner": table[b]["partitioner"],
                     "compute_unit": e.get("compute_unit"), "entry": e,
                     "quant": QUANT_OF[(b, r)]} for (b, r), e in sorted(pairs.items())}


# (backend, recipe) -> {"precision", "partitioner" (the table's, or None), "compute_unit" (or
# None), "entry" (the table's recipe entry), "quant" (an etproof.export.quantize.QUANT_SCHEMES key or
# None)}.
RECIPES: dict[tuple[str, str], dict[str, Any]] = _recipes_from_table()

# Backends ExecuTorch has (the table's keys) that this export half does not export yet. Asking for
# one is a real column, refused and recorded in export-report.json; any other name is a typo (a
# usage error, recorded nowhere).
EXECUTORCH_BACKENDS = tuple(k for k in backends.keys() if k not in {b for b, _ in RECIPES})


def supported_pairs() -> list[tuple[str, str]]:
    """Every (backend, recipe) the export half exports, sorted."""
    return sorted(RECIPES)


def supported_backends() -> list[str]:
    """The backends of supported_pairs(), sorted."""
    return sorted({b for b, _ in RECIPES})


def supported_recipes() -> list[str]:
    """The recipes of supported_pairs(), sorted."""
    return sorted({r for _, r in RECIPES})


def supported_pairs_text() -> str:
    """supported_pairs() as "backend/recipe, ..." for messages."""
    return ", ".join(f"{b}/{r}" for b, r in supported_pairs())
