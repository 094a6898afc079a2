"""Small bundles for the C++ tests: tiny-{portable-fp32,xnnpack-fp32,xnnpack-int8-dynamic-...,
openvino-fp32}, and in ``shapes/`` the shapes-and-inputs models of etproof.models.shapes (a
dynamic batch, integer/bool/scalar inputs, no inputs), and in ``ptd/`` a model whose weights
live in NAME.ptd beside the program (etproof.models.external).

The C++ tests build a matrix over the top directory (the tiny columns) and expect every column in
it to agree; the shapes and ptd bundles sit one level down so that matrix, the runtime probes
and the tolerance re-measurements keep to the tiny model. `etproof backends` finds each
delegate's runtime probe bundle here by delegate id (the OpenVINO one is tiny-openvino-fp32).
Export other pairs of the tiny model with
``python -m etproof export tiny --backend B --recipe R --out DIR``.
"""

from __future__ import annotations

import time
from pathlib import Path

from etproof.models import external, shapes, tiny
from etproof.runner import export_pairs

TEST_PAIRS = [("portable", "fp32"), ("xnnpack", "fp32"), ("xnnpack", "int8-dynamic-per-channel"),
              ("openvino", "fp32")]

# (model key, spec factory, pairs): etproof.models.shapes, for the shapes-and-inputs tests.
SHAPE_BUNDLES = [
    ("dynbatch", shapes.dynamic_batch_spec,
     [("portable", "fp32"), ("xnnpack", "fp32"), ("xnnpack", "int8-dynamic-per-channel")]),
    ("tokens", shapes.token_inputs_spec, [("portable", "fp32"), ("xnnpack", "fp32")]),
    ("noinputs", shapes.no_inputs_spec, [("portable", "fp32")]),
]

# (model key, spec factory, pairs): models whose constant weights go into NAME.ptd
# (external_weights), written into PTD_DIR for the .ptd bundle tests.
PTD_BUNDLES = [
    ("extweights", external.external_weights_spec, [("portable", "fp32"), ("xnnpack", "fp32")]),
]

SHAPES_DIR = "shapes"
PTD_DIR = "ptd"


def export_test_bundles(out: Path, force: bool = False, log=print) -> list[dict]:
    """Exports TEST_PAIRS of the tiny model into ``out``, SHAPE_BUNDLES into ``out/shapes`` and
    PTD_BUNDLES into ``out/ptd`` (reusing up-to-date bundles unless ``force``); returns the
    export-report results, tiny's first."""
    t0 = time.monotonic()
    results = export_pairs(tiny.spec, "tiny", TEST_PAIRS, Path(out), force=force, log=log)
    for key, factory, pairs in SHAPE_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / SHAPES_DIR, force=force,
                                log=log)
    for key, factory, pairs in PTD_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / PTD_DIR, force=force, log=log)
    log(f"test bundles in {out} ({time.monotonic() - t0:.1f} s)")
    return results
