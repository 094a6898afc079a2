"""References captured at export (etproof.export.references, docs/manifest.md "references"): real
exports of the tiny model (the session's test bundles), the files checked against the manifest and
against their own definition, recomputed here.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_references.py."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from etproof.export.references import capture_references, reference_names


def test_reference_names_is_the_rule():
    assert reference_names("portable", "fp32", "float32", False) == ["float64"]
    assert reference_names("xnnpack", "int8-static-per-channel", "float32", True) == [
        "float64", "int8-static-per-channel"]
    assert reference_names("coreml", "fp16", "float16", False) == ["float64", "float16"]
    # OpenVINO fp32 gets bfloat16 whatever the exporting machine's plugin reported, once.
    assert reference_names("openvino", "fp32", "float32", False) == ["float64", "bfloat16"]
    assert reference_names("openvino", "fp32", "bfloat16", False) == ["float64", "bfloat16"]
    # A quantized recipe computed in bfloat16 also carries its emulation rounded to bfloat16.
    assert reference_names("openvino", "int8-static-per-channel", "bfloat16", True) == [
        "float64", "int8-static-per-channel", "bfloat16", "int8-static-per-channel-bfloat16"]
    assert reference_names("openvino", "int8-static-per-channel", "float32", True) == [
        "float64", "int8-static-per-channel"]


def test_the_rounded_emulation_rounds_every_float_value_but_the_quantizers():
    """rounded_emulation: each float32 value an operator other than quantize/dequantize computes
    is rounded to bfloat16; the quantize/dequantize ops and the graph's structure stay as they
    are (the emulation itself is not modified)."""
    from etproof.contract.arguments import GoldenCase
    import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401 - registers quantized_decomposed

    from etproof.export.quantize import is_quant_op, rounded_emulation

    class M(torch.nn.Module):
        def forward(self, x):
            q = torch.ops.quantized_decomposed.quantize_per_tensor(x * 1.001, 0.01, 0, -128, 127,
                                                                   torch.int8)
            d = torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.01, 0, -128, 127,
                                                                     torch.int8)
            return d + 1.0 / 3.0

    gm = torch.fx.symbolic_trace(M())
    before = gm.code
    rounded = rounded_emulation(gm, torch.bfloat16)
    assert gm.code == before
    quant = [n.target for n in rounded.graph.nodes if n.op == "call_function" and is_quant_op(n.target)]
    assert len(quant) == 2
    x = torch.tensor([[0.5, -0.25, 0.7777]])
    exact, got = gm(x), rounded(x)
    assert torch.equal(got, got.to(torch.bfloat16).to(torch.float32))  # every value bfloat16
    assert not torch.equal(exact, got)  # 1/3 added in bfloat16 is not 1/3 added in float32
    assert float((exact - got).abs().max()) <= 2.0 ** -8 * float(exact.abs().max())
    # captured as a reference beside the emulation, described as what it is
    cases = [GoldenCase("c0", "synthetic", "a ramp", (x,))]
    specs = [{"name": "y", "dtype": "float32", "shape": [1, 3]}]
    names = ["int8-static-per-channel", "int8-static-per-channel-bfloat16"]
    refs = capture_references(M(), cases, ["y"], specs, names, emulation=gm, emulates="pt2e")
    rec = refs.records["int8-static-per-channel-bfloat16"]
    assert rec["captured"] is True and "rounded to bfloat16" in rec["description"], rec
    assert "emulates" not in rec and refs.records["int8-static-per-channel"]["emulates"] == "pt2e"
    assert torch.equal(refs.per_case["c0"]["int8-static-per-channel-bfloat16"]["y"], got)
    # an emulation that is not a PT2E graph is not rounded: recorded, not fatal
    refs = capture_references(M(), cases, ["y"], specs, names, emulation=gm, emulates="torchao")
    assert refs.records["int8-static-per-channel-bfloat16"]["captured"] is False


class WeightOnlyInt8Linear(torch.nn.Module):
    """A weight-only int8 linear (torch._weight_int8pack_mm): its CPU kernel takes float32,
    float16 and bfloat16 activations, not float64."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.register_buffer("w", torch.randint(-127, 127, (4, 8), dtype=torch.int8, generator=g))
        self.register_buffer("scales", torch.rand(4, generator=g) * 0.01 + 0.01)

    def forward(self, x):
        return torch._weight_int8pack_mm(x, self.w, self.scales.to(x.dtype))


def test_an_operator_without_a_float64_kernel_is_recorded_not_fatal():
    from etproof.contract.arguments import GoldenCase

    model = WeightOnlyInt8Linear().eval()
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(1))
    cases = [GoldenCase("c0", "synthetic", "torch.randn seed 1", (x,))]
    specs = [{"name": "y", "dtype": "float32", "shape": [2, 4]}]
    # float16 beside it, not bfloat16: torch 2.13.0's bfloat16 _weight_int8pack_mm kernel dies
    # with SIGSEGV on a CPU with AVX512_BF16 (an AMD EPYC here, 2026-12-01; the process, not
    # an exception a reference could record).
    refs = capture_references(model, cases, ["y"], specs, ["float64", "float16"])
    rec = refs.records["float64"]
    assert rec["captured"] is False
    assert "_weight_int8pack_mm" in rec["reason"], rec
    assert "float64" not in refs.per_case["c0"]
    # The other reference is computed on its own: float16 has a kernel.
    assert refs.records["float16"]["captured"] is True
    assert refs.per_case["c0"]["float16"]["y"].dtype == torch.float32
    json.dumps(refs.records)  # the records go into the manifest as they are


def test_a_model_that_fixes_float32_inside_forward_has_no_float64_truth():
    from etproof.contract.arguments import GoldenCase

    class Fixed(torch.nn.Module):
        def forward(self, x):
            return x.float() * 2

    x = torch.randn(1, 3)
    refs = capture_references(Fixed(), [GoldenCase("c0", "synthetic", "randn", (x,))], ["y"],
                              [{"name": "y", "dtype": "float32", "shape": [1, 3]}], ["float64"])
    assert refs.records["float64"]["captured"] is False
    assert "came back torch.float32" in refs.records["float64"]["reason"]


def test_the_cache_reexports_when_the_reference_code_changes(tmp_path, monkeypatch):
    """Bundles are reused by stamp (etproof.export.cache): the stamp covers every .py of the package,
    so a change to the export code (references included) re-exports the test bundles, the demo
    and the golden set, and they pick the references up."""
    import shutil

    from etproof.export import cache

    pkg = tmp_path / "etproof"
    shutil.copytree(cache._PKG_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "_PKG_DIR", pkg)
    before = cache.make_stamp("tiny-portable-fp32")
    ref = pkg / "export" / "references.py"
    ref.write_text(ref.read_text() + "\n# changed\n")
    assert cache.make_stamp("tiny-portable-fp32") != before


def test_integer_outputs_keep_their_dtype_in_every_reference():
    """topk: values follow the reference's precision, indices stay int64 (compared exactly)."""
    from etproof.contract.arguments import GoldenCase

    class TopK(torch.nn.Module):
        def forward(self, x):
            v, i = torch.topk(x, 3)
            return v, i

    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(4))
    specs = [{"name": "v", "dtype": "float32", "shape": [2, 3]},
             {"name": "i", "dtype": "int64", "shape": [2, 3]}]
    refs = capture_references(TopK(), [GoldenCase("c0", "synthetic", "randn", (x,))], ["v", "i"],
                              specs, ["float64", "bfloat16"])
    assert all(r["captured"] for r in refs.records.values()), refs.records
    got = refs.per_case["c0"]
    assert got["float64"]["v"].dtype == torch.float64
    assert got["bfloat16"]["v"].dtype == torch.float32
    for name in ("float64", "bfloat16"):
        assert got[name]["i"].dtype == torch.int64
    assert torch.equal(got["float64"]["i"], torch.topk(x, 3).indices)


def test_the_cap_is_the_runtime_halfs():
    """One number in two languages: the export half's cap equals the runtime half's
    kExplainableRoundoffs (cpp/include/etproof/gate/references.h)."""
    from etproof.export.references import EXPLAINABLE_ROUNDOFFS

    header = (Path(__file__).resolve().parents[3] / "cpp" / "include" / "etproof" / "gate" /
              "references.h").read_text()
    assert f"inline constexpr double kExplainableRoundoffs = {EXPLAINABLE_ROUNDOFFS};" in header


def test_the_match_criterion_is_the_runtime_halfs():
    """The export half's MATCH_STEPS and STEP_ROUNDING equal the runtime half's kMatchSteps
    (references.h) and kStepRounding (references.cpp)."""
    from etproof.export.references import MATCH_STEPS, STEP_ROUNDING

    header = (Path(__file__).resolve().parents[3] / "cpp" / "include" / "etproof" / "gate" /
              "references.h").read_text()
    assert f"inline constexpr double kMatchSteps = {MATCH_STEPS:g};" in header
    source = (Path(__file__).resolve().parents[3] / "cpp" / "src" / "gate" / "references.cpp").read_text()
    assert STEP_ROUNDING == 2.0 ** -10 and "constexpr double kStepRounding = 0x1p-10;" in source
