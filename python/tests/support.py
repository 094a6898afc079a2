"""Helpers both suites use (python/tests/unit/ and python/tests/integration/), each once: a file
split between the suites imports what both halves call from here (``from support import ...``;
pytest puts python/tests on sys.path for the conftest.py beside this file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

from etproof.cli.main import main
from etproof.export.pipeline import export_model
from etproof.fixtures import tiny


# ---- every (backend, recipe) on the tiny model (test_all_backends.py) --------------------------

FORCED = ("portable", "fp32")  # the pair made to fail; tiny-portable-fp32 is covered elsewhere

# (backend, recipe) -> (delegate ids in the program, precision, compute_unit)
EXPECTED = {
    ("coreml", "fp16"): (["CoreMLBackend"], "float16", "all"),
    ("coreml", "fp32"): (["CoreMLBackend"], "float32", "cpu_and_gpu"),
    ("coreml", "int8-static-per-channel"): (["CoreMLBackend"], "float32", "cpu_and_gpu"),
    ("coreml", "int8-weight-only"): (["CoreMLBackend"], "float32", "cpu_and_gpu"),
    ("openvino", "fp32"): (["OpenvinoBackend"], None, None),  # None: what the plugin reports
    ("openvino", "int8-static-per-channel"): (["OpenvinoBackend"], None, None),
    ("openvino", "int8-weight-only"): (["OpenvinoBackend"], None, None),
    ("vulkan", "fp32"): (["VulkanBackend"], "float32", None),
    ("vulkan", "int8-weight-only"): (["VulkanBackend"], "float32", None),
    ("webgpu", "fp32"): (["VulkanBackend"], "float32", None),  # WebGPU registers as Vulkan
    ("xnnpack", "fp32"): (["XnnpackBackend"], "float32", None),
    ("xnnpack", "int8-dynamic-per-channel"): (["XnnpackBackend"], "float32", None),
    ("xnnpack", "int8-static-per-channel"): (["XnnpackBackend"], "float32", None),
    ("xnnpack", "int8-weight-only"): (["XnnpackBackend"], "float32", None),
}

# Pairs the tiny model cannot be exported for, and the refusal's words: 8da4w groups a linear's
# input features by 32, and tiny's one Linear has 8 (export-refused at stage quantize, by name).
REFUSED_FOR_TINY = {
    ("xnnpack", "8da4w"): "none whose input features are a multiple of 32",
}


# ---- the tiny model's exports and refusals (test_export.py) ---------------------------------

def _only_bundles(out):
    """Everything left in OUT, hidden entries (temp dirs, stamps) included."""
    return sorted(p.name for p in out.iterdir())


def _tiny_args(**over):
    cases = tiny.golden_inputs()[:1]
    args = dict(model=tiny.build_model(), example_inputs=cases[0][3], name="t",
                backend="portable", recipe="fp32", input_names=["x"], output_names=["y"],
                golden_inputs=cases, verify=False)
    args.update(over)
    return args


PRE = {"kind": "image", "input": "x", "color": "rgb", "resize_shorter": 16,
       "interpolation": "bilinear", "crop": (16, 16), "mean": [127, 127, 127],
       "std": [128.0, 128.0, 128.0], "value_range": [0, 255]}


# ---- goldens that certify nothing (test_goldens_certify.py) ---------------------------------

class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


def _export(tmp_path, model, x, name="g"):
    return export_model(model.eval(), (x,), name, tmp_path, "portable", "fp32", ["x"], ["y"],
                        [("c0", "synthetic", "hand-made", (x,))])


# ---- the export half's ranks (test_layering.py) ----------------------------------------------

PKG = Path(__file__).resolve().parents[1] / "etproof"

# Subpackage -> rank; "" is the root (modules directly in etproof/). Equal ranks may not import
# each other either: the probe and the demo, the golden set and the fixtures are siblings.
LAYERS = {
    "": 0,          # errors, status, backends (the table), manifest: the shared vocabulary
    "contract": 1,  # recipes, arguments, program, userspec: what a caller may ask for
    "export": 2,    # the stages, export_model (pipeline), runner, cache
    "probe": 3,     # python -m etproof probe
    "demo": 3,      # EfficientNet-Lite0, the photos, the demo's columns
    "goldens": 4,   # the golden set and its models
    "fixtures": 5,  # the test-fixture models and the test bundles (some are golden models)
    "cli": 6,       # python -m etproof
}
# Modules outside their folder's layer: the package's entry point belongs to the command line.
PLACED = {"etproof.__main__": "cli"}

EXPORTER = ("etproof.export.pipeline", "etproof.contract.recipes", "etproof.contract.arguments",
            "etproof.contract.program", "etproof.export.quantize", "etproof.export.lower",
            "etproof.export.delegation", "etproof.export.bundle", "etproof.export.toolchain",
            "etproof.export.references", "etproof.export.taps", "etproof.export.taps_quantized",
            "etproof.export.twin", "etproof.export.targets", "etproof.export.quirks",
            "etproof.export.quirks.openvino")


def layer_of(mod: str) -> str:
    """The subpackage (LAYERS key) module ``mod`` belongs to: etproof.export.lower -> "export",
    etproof.export (its __init__) -> "export", etproof.errors -> ""."""
    if mod in PLACED:
        return PLACED[mod]
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS and parts[1] else ""


def _above(layer: str, modules) -> set[str]:
    """The etproof modules among ``modules`` ranked above ``layer``."""
    return {m for m in modules if (m == "etproof" or m.startswith("etproof."))
            and LAYERS[layer_of(m)] > LAYERS[layer]}


def _modules_after_import(module: str) -> set[str]:
    """sys.modules after ``import module`` in a fresh interpreter (this package's PYTHONPATH)."""
    code = (f"import json, sys; import {module}; "
            "print(json.dumps(sorted(sys.modules)))")
    env = dict(os.environ, PYTHONPATH=str(PKG.parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


# ---- the MODULE:FUNCTION contract (test_userspec.py) -----------------------------------------

def _help(capsys) -> str:
    capsys.readouterr()
    assert main(["export", "--help"]) == 0
    return capsys.readouterr().out
