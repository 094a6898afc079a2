"""Each backend's own quantizer (issue 36): OpenVINO's (OpenVINOQuantizer on NNCF), Core ML's
(CoreMLQuantizer on coremltools) and Vulkan's (VulkanQuantizer), each through PT2E before that
backend's partitioner, with the converted graph as the recipe's emulation. Real exports: the test
bundles' ``quantizers/`` (etproof.fixtures.testbundles.QUANTIZER_BUNDLES) and, for what only a
particular model shows, a fresh export; every backend's quantizer on the tiny model is
integration/test_all_backends.py's. The runtime half's side: cpp/tests/integration/
quantizers_test.cpp."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from etproof.errors import QuantizationError
from etproof.export.pipeline import export_model
from etproof.fixtures.testbundles import QUANTIZER_DIR
from etproof.manifest import read_manifest

def test_openvino_runs_its_int8_program_at_export(test_bundles):
    """The export half ran OpenVINO's int8 program in ExecuTorch's Python runtime and measured it
    against its emulation (references[RECIPE].program_at_export)."""
    doc = read_manifest(test_bundles / QUANTIZER_DIR / "tiny-openvino-int8-static-per-channel")
    at_export = doc["references"]["int8-static-per-channel"]["program_at_export"]
    assert at_export["cases"] == len(doc["goldens"])
    assert at_export["max_range_error"] < 0.05  # measured 0.0019 (bfloat16 in the CPU plugin)


@pytest.mark.parametrize("recipe", ["int8-static-per-channel", "int8-weight-only"])
def test_openvino_int8_in_bfloat16_carries_its_rounded_emulation(test_bundles, recipe):
    """Where OpenVINO's plugin computes the float parts in bfloat16, the bundle carries the
    recipe's emulation rounded to bfloat16 (RECIPE-bfloat16), which widens the bound the runtime
    half judges the program against its emulation by (cpp/include/etproof/gate/references.h)."""
    bundle = test_bundles / QUANTIZER_DIR / f"tiny-openvino-{recipe}"
    doc = read_manifest(bundle)
    rounded = f"{recipe}-bfloat16"
    if doc["precision"] != "bfloat16":
        assert rounded not in doc["references"]
        pytest.skip(f"OpenVINO computes {recipe} in {doc['precision']} on this machine: no "
                    "rounded emulation to carry")
    assert doc["references"][rounded]["captured"] is True, doc["references"][rounded]
    for g in doc["goldens"]:
        emu = np.load(bundle / f"{doc['name']}.goldens" / g["references"][recipe]["y"]["file"])
        r16 = np.load(bundle / f"{doc['name']}.goldens" / g["references"][rounded]["y"]["file"])
        gap = float(np.abs(r16 - emu).max() / np.abs(emu).max())
        assert 0 < gap < 0.05, (g["id"], gap)  # moved by the rounding, not by another model


def test_emulation_sensitivity_rounds_by_the_export_halfs_own_rewrite():
    """tests/bounds/emulation_sensitivity.py, the measurement behind judging an int8 output by its
    golden row where its emulation admits no stricter bound (docs/design.md sec. 5): rounding to 8
    significant bits through the export half's rewrite is the bfloat16 reference the export half
    captures, and tiny's emulation, which float32's last bits do not move, moves far less at 22
    bits than at bfloat16 (measured 2026-12-06: 0.0000 against 0.0018-0.0022 of the range)."""
    path = Path(__file__).resolve().parents[3] / "tests" / "bounds" / "emulation_sensitivity.py"
    loader = importlib.util.spec_from_file_location("emulation_sensitivity", path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    table = module.measure("tiny", "openvino", "int8-static-per-channel", [22, 8])
    assert len(table) == 3, table
    for case, row in table.items():
        assert row["8 bits"][0] == pytest.approx(row["bfloat16"][0], rel=1e-9), (case, row)
        assert 0 < row["bfloat16"][0] < 0.05, (case, row)
        assert row["22 bits"][0] < row["bfloat16"][0] / 10, (case, row)


def test_openvino_weight_compression_is_counted_as_quantization(test_bundles):
    """OpenVINO's weight compression (INT8WO_SYM) leaves no quantize/dequantize op, only NNCF's
    weight decompressors: they count as quantization, and the scheme and emulation say what it
    is."""
    doc = read_manifest(test_bundles / QUANTIZER_DIR / "tiny-openvino-int8-weight-only")
    assert doc["quantization"]["quantizer"] == "OpenVINOQuantizer"
    assert "INT8WO_SYM" in doc["quantization"]["scheme"]
    assert doc["references"]["int8-weight-only"]["emulates"] == "pt2e-weight-only"


class LinearNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(self.proj(x))


def test_openvino_leaves_layer_norm_float_and_says_so(tmp_path):
    """NNCF 3.4.0's INT8_SYM puts a per-channel observer on LayerNorm's 1-D weight, whose
    calibration fails; the recipe leaves every LayerNorm float, recorded in quantization.skipped,
    and quantizes the rest."""
    torch.manual_seed(0)
    cases = [(f"c{i}", "synthetic", f"torch.randn seed 0, draw {i}", (torch.randn(1, 4, 16),))
             for i in range(3)]
    path = export_model(LinearNorm().eval(), cases[0][3], "ln", tmp_path, "openvino",
                        "int8-static-per-channel", ["x"], ["y"], cases, model_name="ln")
    skipped = read_manifest(path)["quantization"]["skipped"]
    assert [s["module"] for s in skipped] == ["norm"]
    assert "LayerNorm" in skipped[0]["reason"] and "IndexError" in skipped[0]["reason"]


def test_vulkan_quantizer_on_a_model_without_linears_is_refused(tmp_path):
    """Vulkan's quantizer annotates linears only: a conv-only model quantizes nothing, refused
    (export-refused) before anything is written, as for XNNPACK's."""
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(QuantizationError) as e:
        export_model(nn.Conv2d(3, 4, 3).eval(), (x,), "conv", tmp_path, "vulkan",
                     "int8-weight-only", ["x"], ["y"], [("c0", "synthetic", "randn", (x,))])
    assert e.value.stage == "quantize"
    assert "quantized nothing" in e.value.cause
    assert list(tmp_path.iterdir()) == []
