"""Every (backend, recipe) the export half supports, on the tiny model: real exports, no mocks.

One session-scoped `export tiny --backend all` (with one pair forced to fail through the
ETPROOF_TEST_FAIL_LOWER test hook) feeds every test here.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_all_backends.py.
"""

import importlib.util
import json
import os

import numpy as np
import pytest
import torch
from torch import nn

from etproof.errors import QuantizationError
from etproof.export.pipeline import TEST_FAIL_ENV, delegates_in_program, export_model, supported_pairs
from etproof.manifest import read_manifest

from support import FORCED, EXPECTED, REFUSED_FOR_TINY


NEEDS = {"coreml": ["coremltools"], "openvino": ["openvino", "nncf"]}


def _missing(backend: str) -> list[str]:
    return [m for m in NEEDS.get(backend, []) if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="session")
def all_backends(tmp_path_factory):
    """`python -m etproof export tiny --backend all`, with FORCED failing at stage lower."""
    from etproof.cli.main import main

    out = tmp_path_factory.mktemp("all-backends")
    old = os.environ.get(TEST_FAIL_ENV)
    os.environ[TEST_FAIL_ENV] = "/".join(FORCED)
    try:
        rc = main(["export", "tiny", "--backend", "all", "--out", str(out)])
    finally:
        if old is None:
            del os.environ[TEST_FAIL_ENV]
        else:
            os.environ[TEST_FAIL_ENV] = old
    report = json.loads((out / "export-report.json").read_text())["results"]
    return out, rc, {(r["backend"], r["recipe"]): r for r in report}


def test_one_failing_pair_does_not_stop_the_others(all_backends):
    out, rc, report = all_backends
    assert rc == 1  # a column failed (2 is a usage error)
    assert set(report) == set(supported_pairs())
    failed = report[FORCED]
    assert failed["status"] == "export-failed" and failed["stage"] == "lower"
    assert "forced failure" in failed["reason"]
    assert not (out / "tiny-portable-fp32").exists()
    for pair, r in report.items():
        if pair == FORCED:
            continue
        if r["status"] == "export-refused" and _missing(pair[0]):
            continue  # the package is absent here: refused by name, checked below
        if pair in REFUSED_FOR_TINY:  # nothing the recipe quantizes: refused, naming why
            assert r["status"] == "export-refused" and r["stage"] == "quantize", r
            assert REFUSED_FOR_TINY[pair] in r["reason"], r
            continue
        assert r["status"] == "exported", r
        assert (out / r["bundle"] / f"{r['bundle']}.pte").is_file()
    # the pairs sorted after the failing one were still written
    assert any(p > FORCED and r["status"] == "exported" for p, r in report.items())
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize("pair", sorted(EXPECTED), ids=lambda p: "/".join(p))
def test_pair_delegate_precision_compute_unit(all_backends, pair):
    out, _, report = all_backends
    backend, recipe = pair
    if _missing(backend):
        assert report[pair]["status"] == "export-refused"
        assert _missing(backend)[0] in report[pair]["reason"]
        pytest.skip(f"{backend}: Python module(s) {_missing(backend)} not installed here")
    delegates, precision, compute_unit = EXPECTED[pair]
    name = f"tiny-{backend}-{recipe}"
    doc = read_manifest(out / name)
    program = (out / name / f"{name}.pte").read_bytes()
    assert delegates_in_program(program) == delegates
    assert doc["delegates"] == delegates
    assert doc["backend"] == backend and doc["recipe"] == recipe
    if precision is None:  # OpenVINO: the CPU plugin's inference precision on this machine
        from etproof.export.pipeline import effective_precision

        precision = effective_precision(backend, recipe)
        assert precision in ("float32", "bfloat16", "float16")
    assert doc["precision"] == precision
    assert doc.get("compute_unit") == compute_unit
    assert doc["delegation"]["delegated_nodes"] > 0
    if recipe == "int8-weight-only" and backend == "xnnpack":  # torchao's int8 weights; XNNPACK
        assert doc["quantization"]["quantizer"].startswith("IntxWeightOnlyConfig")  # runs the conv
        assert doc["references"][recipe]["emulates"] == "torchao"
        assert all("quantization" not in o for o in doc["outputs"])
    elif recipe == "int8-weight-only":  # the backend's own PT2E quantizer: weights only
        ops = {e["op"] for e in doc["delegation"]["by_operator"]}
        if backend == "openvino":  # NNCF's weight compression: decompressors, no q/dq op
            assert "INT8WO_SYM" in doc["quantization"]["scheme"]
            assert not any("quantize_per" in op for op in ops), ops
        else:
            assert any("dequantize_per_channel" in op for op in ops)
        assert not any("quantize_per_tensor" in op for op in ops)  # activations stay float
        assert all("quantization" not in o for o in doc["outputs"])
    elif recipe.startswith("int8"):
        ops = {e["op"] for e in doc["delegation"]["by_operator"]}
        assert any("quantize_per_tensor" in op for op in ops)
        assert doc["quantization"]["skipped"] == []
        if recipe == "int8-static-per-channel":
            assert "static" in doc["quantization"]["scheme"]
            assert not any("choose_qparams" in op for op in ops)  # no dynamic activations
            # The output's quantization step, from the converted graph's last dequantize: int8 for
            # XNNPACK's, uint8 for Core ML's (quint8 activations, as ExecuTorch's
            # coreml_pt2e_int8_static recipe); none for OpenVINO's (NNCF leaves the last layer's
            # output float: no quantize after it)
            if backend == "openvino":
                assert "quantization" not in doc["outputs"][0]
            else:
                q = doc["outputs"][0]["quantization"]
                want = "uint8" if backend == "coreml" else "int8"
                assert q["dtype"] == want and q["scale"] > 0 and isinstance(q["zero_point"], int)
        else:  # dynamic int8: the outputs are float, so no output scale is recorded
            assert all("quantization" not in o for o in doc["outputs"])
    else:
        assert all("quantization" not in o for o in doc["outputs"])


@pytest.mark.parametrize("pair", [("coreml", "fp32"), ("vulkan", "fp32")],
                         ids=lambda p: "/".join(p))
def test_runtime_without_the_delegate_is_not_claimed(all_backends, pair):
    """CoreML and Vulkan are not in ExecuTorch's Python runtime here: the export skips its run."""
    from executorch.runtime import Runtime

    out, _, report = all_backends
    if _missing(pair[0]):
        pytest.skip(f"{pair[0]}: Python module(s) {_missing(pair[0])} not installed here")
    delegate = EXPECTED[pair][0][0]
    if Runtime.get().backend_registry.is_available(delegate):
        pytest.skip(f"this Python runtime has {delegate}")
    assert report[pair]["status"] == "exported"
    doc = read_manifest(out / report[pair]["bundle"])
    assert "verified" not in json.dumps(doc)


def test_openvino_program_runs_in_python_runtime(all_backends):
    from executorch.runtime import Runtime

    out, _, report = all_backends
    if _missing("openvino"):
        pytest.skip(f"openvino: Python module(s) {_missing('openvino')} not installed here")
    if not Runtime.get().backend_registry.is_available("OpenvinoBackend"):
        pytest.skip("this Python runtime has no OpenvinoBackend")
    b = out / "tiny-openvino-fp32"
    doc = read_manifest(b)
    # From bytes, as the export's own check does: executorch 1.5.1's Python runtime segfaults
    # executing an OpenVINO program loaded by path (mmap'd file); from bytes it runs.
    program = Runtime.get().load_program((b / "tiny-openvino-fp32.pte").read_bytes())
    method = program.load_method("forward")
    for g in doc["goldens"]:
        x = torch.from_numpy(np.load(b / "tiny-openvino-fp32.goldens" / g["inputs"]["x"]))
        ref = np.load(b / "tiny-openvino-fp32.goldens" / g["outputs"]["y"])
        (y,) = method.execute([x])
        # float32 within 1e-4; bfloat16 (8 mantissa bits) within a few parts in a thousand
        tol = 1e-4 if doc["precision"] == "float32" else 2e-2
        np.testing.assert_allclose(y.numpy(), ref, atol=tol, rtol=tol)


# --- each backend's own quantizer ------------------------------------------------------------------

# (backend, recipe) -> (the quantizer the manifest names, what its emulation reproduces)
QUANTIZERS = {
    ("xnnpack", "int8-dynamic-per-channel"): ("XNNPACKQuantizer", "xnnpack-qd8"),
    ("xnnpack", "int8-static-per-channel"): ("XNNPACKQuantizer", "pt2e"),
    ("openvino", "int8-static-per-channel"): ("OpenVINOQuantizer", "pt2e"),
    ("openvino", "int8-weight-only"): ("OpenVINOQuantizer", "pt2e-weight-only"),
    ("coreml", "int8-static-per-channel"): ("CoreMLQuantizer", "pt2e"),
    ("coreml", "int8-weight-only"): ("CoreMLQuantizer", "pt2e-weight-only"),
    ("vulkan", "int8-weight-only"): ("VulkanQuantizer", "pt2e-weight-only"),
}


def test_each_backend_quantizes_with_its_own_quantizer(all_backends):
    from etproof.contract.recipes import QUANT_OF
    from etproof.export.quantize import QUANT_SCHEMES

    out, _, report = all_backends
    for (backend, recipe), (quantizer, emulates) in QUANTIZERS.items():
        if report[(backend, recipe)]["status"] == "export-refused" and _missing(backend):
            continue  # the backend's package is absent here: refused by name, checked above
        doc = read_manifest(out / report[(backend, recipe)]["bundle"])
        assert doc["quantization"]["quantizer"] == quantizer, (backend, recipe)
        assert doc["quantization"]["scheme"] == QUANT_SCHEMES[QUANT_OF[(backend, recipe)]]
        ref = doc["references"][recipe]
        assert ref["captured"] and ref["emulates"] == emulates, (backend, recipe, ref)


# --- static int8 ----------------------------------------------------------------------------------

def test_static_int8_quantized_nothing_is_refused(tmp_path):
    x = torch.randn(1, 8)
    with pytest.raises(QuantizationError) as e:
        export_model(nn.Hardswish(), (x,), "nothing", tmp_path, "xnnpack",
                     "int8-static-per-channel", ["x"], ["y"], [("c0", "synthetic", "randn", (x,))])
    assert e.value.stage == "quantize"
    assert "quantized nothing" in e.value.cause
    assert list(tmp_path.iterdir()) == []


def test_static_int8_conv_after_constant_pad_runs_unskipped(tmp_path):
    """Static int8 needs no pad workaround: the padded conv is quantized and the program runs.

    If this starts failing at stage "lower", XNNPACK broke static quantized convs after
    constant_pad_nd too: set PAD_WORKAROUND["xnnpack-int8-static-per-channel"] in quantize.py.
    """
    from executorch.runtime import Runtime

    from conftest import PaddedConvNet

    torch.manual_seed(1)
    model = PaddedConvNet().eval()
    cases = [(f"c{i}", "synthetic", f"torch.randn seed 1, draw {i}", (torch.randn(1, 3, 16, 16),))
             for i in range(3)]
    path = export_model(model, cases[0][3], "padded-static", tmp_path, "xnnpack",
                        "int8-static-per-channel", ["x"], ["y"], cases, model_name="padded")
    doc = read_manifest(path)
    assert doc["quantization"]["skipped"] == []
    by_op = {e["op"]: e for e in doc["delegation"]["by_operator"]}
    assert by_op["aten_constant_pad_nd_default"]["delegated"] == 1
    assert by_op["aten_convolution_default"]["delegated"] == 1
    method = Runtime.get().load_program(path / "padded-static.pte").load_method("forward")
    for g in doc["goldens"]:
        x = torch.from_numpy(np.load(path / "padded-static.goldens" / g["inputs"]["x"]))
        ref = np.load(path / "padded-static.goldens" / g["outputs"]["y"])
        (y,) = method.execute([x])
        np.testing.assert_allclose(y.numpy(), ref, atol=0.1, rtol=0.1)


# --- why an operator was not delegated -------------------------------------------------------------

class CubeHead(nn.Module):
    """Linear -> x ** 3: XNNPACK's pow config takes only power 2 and says so."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.pow(self.fc(x), 3)


def test_non_delegated_reasons_recorded(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(1, 8)
    path = export_model(CubeHead().eval(), (x,), "cube", tmp_path, "xnnpack", "fp32", ["x"],
                        ["y"], [("c0", "synthetic", "torch.randn seed 0", (x,))])
    doc = read_manifest(path)
    by_op = {e["op"]: e for e in doc["delegation"]["by_operator"]}
    pow_op = next(op for op in by_op if op.startswith("aten_pow"))
    assert by_op[pow_op]["non_delegated"] == 1
    assert by_op[pow_op]["reasons"] == ["only support power == 2, got 3"]
    # delegated operators, and non-delegated ones the partitioner said nothing about, carry none
    for op, e in by_op.items():
        if op != pow_op:
            assert "reasons" not in e, e
    text = (path / "cube.etproof.json").read_text()
    assert json.loads(text) == doc and text.endswith("}\n")


class AcoshCumsum(nn.Module):
    """Linear -> acosh -> cumsum: Core ML refuses acosh, Vulkan implements neither."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.cumsum(torch.acosh(self.fc(x).abs() + 1.5), 1)


@pytest.mark.parametrize("backend, expected", [
    ("coreml", {"aten_acosh_default": ["it is not supported by CoreML"]}),
    ("vulkan", {"aten_acosh_default": ["no operator implementation"],
                "aten_cumsum_default": ["no operator implementation"]}),
])
def test_non_delegated_reasons_from_coreml_and_vulkan(tmp_path, backend, expected):
    if _missing(backend):
        pytest.skip(f"{backend}: Python module(s) {_missing(backend)} not installed here")
    torch.manual_seed(0)
    x = torch.randn(1, 8)
    path = export_model(AcoshCumsum().eval(), (x,), "ac", tmp_path, backend, "fp32", ["x"],
                        ["y"], [("c0", "synthetic", "torch.randn seed 0", (x,))])
    doc = read_manifest(path)
    got = {e["op"]: e["reasons"] for e in doc["delegation"]["by_operator"] if "reasons" in e}
    assert got == expected
