"""Small bundles for the C++ tests: tiny-{portable-fp32,xnnpack-fp32,xnnpack-int8-dynamic-...,
openvino-fp32}; one level down, in ``shapes/``, the shapes-and-inputs models of
etproof.models.shapes (a dynamic batch, integer/bool/scalar inputs, no inputs), in ``ptd/`` a
model whose weights live in NAME.ptd beside the program (etproof.models.external), in
``methods/`` a program with two methods (etproof.models.methods, schema_version 2), in
``attribution/`` the GELU MLP of etproof.models.attribution with its tapped twins
(``attribution/gelu_mlp-BACKEND-fp32/gelu_mlp-BACKEND-fp32.taps``, etproof.taps), in
``attribution-spaced/`` the same model with a twin of 2 spaced taps (for ``attribute --bisect``),
in ``attribution-openvino/`` EfficientNet-Lite0 on OpenVINO with a twin of 48 spaced taps, in
``attribution-int8/`` the GELU and outlier MLPs on XNNPACK's two int8 recipes with their tapped
twins (etproof.taps_quantized), and in ``kernel-missing/`` a program this runtime cannot load.

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

from etproof.models import attribution, efficientnet_lite0, external, methods, shapes, tiny
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

# (model key, spec factory, pairs): programs with several methods, written into METHODS_DIR.
METHOD_BUNDLES = [
    ("encdec", methods.encdec_spec,
     [("portable", "fp32"), ("xnnpack", "fp32"), ("xnnpack", "int8-dynamic-per-channel")]),
    # the same program with every method's weights in one NAME.ptd (external_weights)
    ("encdecptd", methods.encdec_ptd_spec, [("portable", "fp32"), ("xnnpack", "fp32")]),
]

# (model key, spec factory, pairs): exported with taps=True (each bundle with its tapped twin),
# written into ATTRIBUTION_DIR. On xnnpack/fp32 the GELU tap differs from its golden (XNNPACK
# computes the erf GELU where the model asks for tanh) while fc1's agrees; on portable all agree.
ATTRIBUTION_BUNDLES = [
    ("gelu_mlp", attribution.spec, [("portable", "fp32"), ("xnnpack", "fp32")]),
]
# The same GELU MLP on xnnpack/fp32 with a spaced twin: 2 taps of its 5 eligible nodes (the first
# linear and the last), so the earliest drift (the last linear) is 3 untapped nodes past the last
# agreeing tap; `attribute --bisect` narrows it to the GELU (a narrower twin exported from
# ATTRIBUTION_SPACED_MODEL, which the twin records as taps.exported_from).
ATTRIBUTION_SPACED_DIR = "attribution-spaced"
ATTRIBUTION_SPACED_TAPS = 2
ATTRIBUTION_SPACED_MODEL = "etproof.models.attribution:spec"
# EfficientNet-Lite0 (the demo's model, its real weights and photos) on OpenVINO fp32, which runs
# in bfloat16 on a CPU with AMX/AVX-512-BF16 (the manifest's precision says which): a twin of
# ATTRIBUTION_OPENVINO_TAPS evenly spaced taps of its 160 eligible nodes, for the error curve that
# grows over depth with no single culprit (cpp/tests/attribute_test.cpp). 48 taps keep the test
# bundle near 100 MB (every one of the 160: 273 MB, first case only).
ATTRIBUTION_OPENVINO_DIR = "attribution-openvino"
ATTRIBUTION_OPENVINO_TAPS = 48
# The PT2E-quantized twins (etproof.taps_quantized), every eligible node tapped: the GELU MLP,
# whose int8 columns agree at every tap, and the outlier MLP (attribution.outlier_spec), whose
# static-int8 column drifts at fc2 (the culprit) and whose dynamic-int8 column follows its qd8
# emulation while the recipe's own cost appears at fc2.
ATTRIBUTION_INT8_DIR = "attribution-int8"
INT8_PAIRS = [("xnnpack", "int8-static-per-channel"), ("xnnpack", "int8-dynamic-per-channel")]
ATTRIBUTION_INT8_BUNDLES = [
    ("gelu_mlp", attribution.spec, INT8_PAIRS),
    ("outlier_mlp", attribution.outlier_spec, INT8_PAIRS),
]

SHAPES_DIR = "shapes"
ATTRIBUTION_DIR = "attribution"
PTD_DIR = "ptd"
METHODS_DIR = "methods"

# The kernel-missing bundle (OUT/kernel-missing/bucketize-xnnpack-fp32): torch.bucketize, which
# XNNPACK does not take and no kernel library of ExecuTorch 1.5.1 registers, so its program calls
# aten::bucketize.Tensor_out without a kernel (XNNPACK's edge config admits the non-core-ATen op;
# the portable backend's edge verifier refuses it). Exported without the export half's run check,
# which would refuse it by the same name; one level down, so a matrix over OUT never sees it.
KERNEL_MISSING_DIR = "kernel-missing"
KERNEL_MISSING_PAIRS = [("xnnpack", "fp32")]
KERNEL_MISSING_OPERATOR = "aten::bucketize.Tensor_out"


def bucketize_spec() -> dict:
    """export_model keyword arguments of the bucketize model: y = bucketize(x, [-1, 0, 1]) + x,
    float32 [1, 8], one synthetic case; verify=False (see KERNEL_MISSING_DIR)."""
    import torch

    class Bucketize(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("boundaries", torch.tensor([-1.0, 0.0, 1.0]))

        def forward(self, x):
            return torch.bucketize(x, self.boundaries).to(torch.float32) + x

    x = torch.linspace(-2.0, 2.0, 8).reshape(1, 8)
    return {
        "model": Bucketize().eval(),
        "example_inputs": (x,),
        "input_names": ["x"],
        "output_names": ["y"],
        "golden_inputs": [("ramp", "synthetic", "torch.linspace(-2, 2, 8)", (x,))],
        "model_name": "bucketize",
        "verify": False,
    }


def export_test_bundles(out: Path, force: bool = False, log=print,
                        openvino_twin: bool = True) -> list[dict]:
    """Exports TEST_PAIRS of the tiny model into ``out``, SHAPE_BUNDLES into ``out/shapes``,
    PTD_BUNDLES into ``out/ptd``, METHOD_BUNDLES into ``out/methods``, ATTRIBUTION_BUNDLES (with
    their tapped twins) into ``out/attribution``, the spaced twin into ATTRIBUTION_SPACED_DIR,
    ATTRIBUTION_INT8_BUNDLES into ATTRIBUTION_INT8_DIR and,
    with ``openvino_twin``, EfficientNet-Lite0's OpenVINO twin into ATTRIBUTION_OPENVINO_DIR
    (about 20 s and 145 MB; the Python tests leave it out) (reusing up-to-date bundles unless
    ``force``); returns the export-report results, tiny's first."""
    t0 = time.monotonic()
    results = export_pairs(tiny.spec, "tiny", TEST_PAIRS, Path(out), force=force, log=log)
    for key, factory, pairs in SHAPE_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / SHAPES_DIR, force=force,
                                log=log)
    for key, factory, pairs in PTD_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / PTD_DIR, force=force, log=log)
    for key, factory, pairs in METHOD_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / METHODS_DIR, force=force,
                                log=log)
    for key, factory, pairs in ATTRIBUTION_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / ATTRIBUTION_DIR, force=force,
                                log=log, taps=True)
    results += export_pairs(attribution.spec, "gelu_mlp", [("xnnpack", "fp32")],
                            Path(out) / ATTRIBUTION_SPACED_DIR, force=force, log=log,
                            taps=ATTRIBUTION_SPACED_TAPS, taps_from=ATTRIBUTION_SPACED_MODEL)
    for key, factory, pairs in ATTRIBUTION_INT8_BUNDLES:
        results += export_pairs(factory, key, pairs, Path(out) / ATTRIBUTION_INT8_DIR,
                                force=force, log=log, taps=True,
                                taps_from=f"{factory.__module__}:{factory.__name__}")
    if openvino_twin:
        results += export_pairs(efficientnet_lite0.spec, "efficientnet_lite0",
                                [("openvino", "fp32")], Path(out) / ATTRIBUTION_OPENVINO_DIR,
                                force=force, log=log, taps=ATTRIBUTION_OPENVINO_TAPS,
                                taps_from="efficientnet_lite0")
    log(f"test bundles in {out} ({time.monotonic() - t0:.1f} s)")
    return results


def export_kernel_missing_bundles(out: Path, force: bool = False, log=print) -> list[dict]:
    """Exports the kernel-missing bundle into ``out`` (OUT/kernel-missing for the test bundles);
    returns the export-report results."""
    return export_pairs(bucketize_spec, "bucketize", KERNEL_MISSING_PAIRS, Path(out), force=force,
                        log=log)
