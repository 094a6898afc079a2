"""export_model on the tiny model: the bundle, its manifest and goldens, and the refusals.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_export.py."""

import hashlib
import json

import numpy as np
import pytest
import torch
from torch import nn

from etproof.export.bundle import file_ref
from etproof.errors import ExportError, QuantizationError
from etproof.export.pipeline import delegates_in_program, export_model
from etproof.export.toolchain import operators_in_program
from etproof.manifest import read_manifest
from etproof.fixtures import tiny
from etproof.export.references import reference_names

from support import _only_bundles, _tiny_args, PRE


TINY = ["tiny-portable-fp32", "tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel"]


def test_layout(test_bundles):
    for name in TINY:
        b = test_bundles / name
        assert sorted(p.name for p in b.iterdir()) == [
            f"{name}.etproof.json", f"{name}.goldens", f"{name}.pte"]
        files = sorted(p.name for p in (b / f"{name}.goldens").iterdir())
        doc = read_manifest(b)
        refs = reference_names(doc["backend"], doc["recipe"], doc["precision"],
                               "quantization" in doc)
        assert files == sorted([f"case{i}.{d}.npy" for i in range(3) for d in ("in.x", "out.y")]
                               + [f"case{i}.ref.{r}.y.npy" for i in range(3) for r in refs])
    assert not [p for p in test_bundles.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_delegates_read_from_program(test_bundles):
    expected = {"tiny-portable-fp32": [], "tiny-xnnpack-fp32": ["XnnpackBackend"],
                "tiny-xnnpack-int8-dynamic-per-channel": ["XnnpackBackend"]}
    for name, want in expected.items():
        doc = read_manifest(test_bundles / name)
        program = (test_bundles / name / f"{name}.pte").read_bytes()
        assert delegates_in_program(program) == want
        assert doc["delegates"] == want
        d = doc["delegation"]
        assert d["delegated_nodes"] == sum(e["delegated"] for e in d["by_operator"])
        assert d["non_delegated_nodes"] == sum(e["non_delegated"] for e in d["by_operator"])
        if want:
            assert d["delegated_nodes"] > 0
        else:
            assert d["delegated_nodes"] == 0


def test_artifact_hash_and_size(test_bundles):
    for name in TINY:
        doc = read_manifest(test_bundles / name)
        data = (test_bundles / name / doc["artifact"]["file"]).read_bytes()
        assert doc["artifact"] == {"file": f"{name}.pte", "bytes": len(data),
                                   "sha256": hashlib.sha256(data).hexdigest()}


def test_manifest_facts(test_bundles):
    doc = read_manifest(test_bundles / "tiny-xnnpack-fp32")
    assert doc["model"] == "tiny" and doc["backend"] == "xnnpack" and doc["recipe"] == "fp32"
    assert doc["precision"] == "float32"
    assert doc["engine"]["name"] == "executorch"
    assert doc["inputs"] == [{"name": "x", "dtype": "float32", "shape": [1, 3, 16, 16],
                              "layout": "nchw"}]
    assert doc["outputs"] == [{"name": "y", "dtype": "float32", "shape": [1, 4]}]
    for absent in ("quantization", "preprocessing", "labels", "compute_unit", "data_files"):
        assert absent not in doc
    assert [g["id"] for g in doc["goldens"]] == ["case0", "case1", "case2"]
    assert all(g["data"] == "synthetic" for g in doc["goldens"])
    assert set(doc["toolchain"]) == {"python", "torch", "executorch", "torchao", "numpy",
                                     "etproof"}


def test_every_golden_file_is_hashed_in_the_manifest(test_bundles):
    """goldens[i].files: the size and SHA-256 of each input and output file, as written."""
    for name in TINY:
        doc = read_manifest(test_bundles / name)
        gdir = test_bundles / name / f"{name}.goldens"
        for g in doc["goldens"]:
            named = list(g["inputs"].values()) + list(g["outputs"].values())
            assert [f["file"] for f in g["files"]] == named
            assert g["files"] == [file_ref(gdir / fn) for fn in named]


def test_goldens_are_the_eager_outputs(test_bundles):
    model = tiny.build_model()
    for name in TINY:
        doc = read_manifest(test_bundles / name)
        gdir = test_bundles / name / f"{name}.goldens"
        for g, (cid, _, _, (x,)) in zip(doc["goldens"], tiny.golden_inputs()):
            assert g["id"] == cid
            x_file = np.load(gdir / g["inputs"]["x"])
            assert x_file.dtype == np.float32 and np.array_equal(x_file, x.numpy())
            with torch.no_grad():
                y = model(torch.from_numpy(x_file)).numpy()
            y_file = np.load(gdir / g["outputs"]["y"])
            assert y_file.dtype == np.float32 and y_file.shape == (1, 4)
            np.testing.assert_array_equal(y_file, y)


@pytest.mark.parametrize("name, atol", [(TINY[0], 1e-5), (TINY[1], 1e-4), (TINY[2], 0.1)])
def test_executorch_runtime_reproduces_goldens(test_bundles, name, atol):
    from executorch.runtime import Runtime

    b = test_bundles / name
    doc = read_manifest(b)
    method = Runtime.get().load_program(b / f"{name}.pte").load_method("forward")
    for g in doc["goldens"]:
        x = torch.from_numpy(np.load(b / f"{name}.goldens" / g["inputs"]["x"]))
        ref = np.load(b / f"{name}.goldens" / g["outputs"]["y"])
        (y,) = method.execute([x])
        np.testing.assert_allclose(y.numpy(), ref, atol=atol, rtol=0.05)


def test_int8_records_quantization(test_bundles):
    doc = read_manifest(test_bundles / "tiny-xnnpack-int8-dynamic-per-channel")
    q = doc["quantization"]
    assert q["quantizer"] == "XNNPACKQuantizer"
    assert "per output channel" in q["scheme"] and "dynamic" in q["scheme"]
    assert q["skipped"] == []  # the tiny conv pads by itself, no constant_pad_nd
    ops = {e["op"] for e in doc["delegation"]["by_operator"]}
    assert any("quantize" in op for op in ops)


def test_int8_skips_conv_fed_by_constant_pad(padded_int8_bundle):
    from executorch.runtime import Runtime

    doc = read_manifest(padded_int8_bundle)
    skipped = doc["quantization"]["skipped"]
    assert [s["module"] for s in skipped] == ["stem"]
    assert "constant_pad_nd" in skipped[0]["reason"]
    # the linear head is still quantized, and the program runs (it would not without the skip)
    ops = {e["op"] for e in doc["delegation"]["by_operator"]}
    assert "quantized_decomposed_dequantize_per_channel_default" in ops
    name = padded_int8_bundle.name
    g = doc["goldens"][0]
    x = torch.from_numpy(np.load(padded_int8_bundle / f"{name}.goldens" / g["inputs"]["x"]))
    ref = np.load(padded_int8_bundle / f"{name}.goldens" / g["outputs"]["y"])
    (y,) = Runtime.get().load_program(padded_int8_bundle / f"{name}.pte").load_method(
        "forward").execute([x])
    np.testing.assert_allclose(y.numpy(), ref, atol=0.1, rtol=0.05)


# --- refusals and failures leave nothing behind ----------------------------------------------------

class Untraceable(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
            return x * 2
        return x - 1


def test_untraceable_model_fails_at_export_stage_and_leaves_nothing(tmp_path):
    x = torch.ones(1, 4)
    with pytest.raises(ExportError) as e:
        export_model(Untraceable(), (x,), "untraceable", tmp_path, "xnnpack", "fp32", ["x"], ["y"],
                     [("c0", "synthetic", "ones", (x,))])
    assert e.value.stage == "export"
    assert e.value.cause and e.value.remedy
    assert _only_bundles(tmp_path) == []


def test_quantized_nothing_is_refused(tmp_path):
    from etproof.errors import NothingToQuantize
    from etproof.export.runner import result_for_error

    x = torch.randn(1, 8)
    with pytest.raises(NothingToQuantize) as e:
        export_model(nn.Hardswish(), (x,), "nothing", tmp_path, "xnnpack",
                     "int8-dynamic-per-channel", ["x"], ["y"], [("c0", "synthetic", "randn", (x,))])
    assert e.value.stage == "quantize"
    assert "quantized nothing" in e.value.cause
    assert isinstance(e.value, QuantizationError)
    assert _only_bundles(tmp_path) == []
    # A refusal, not a failure: the export report lists it as export-refused (never failing a
    # matrix by itself), with its stage and reason.
    entry = result_for_error("xnnpack", "int8-dynamic-per-channel", e.value, model="nothing")
    assert entry["status"] == "export-refused"
    assert entry["stage"] == "quantize"
    assert "quantized nothing" in entry["reason"]


def test_failed_reexport_keeps_the_old_bundle(tmp_path):
    path = export_model(out_dir=tmp_path, **_tiny_args(name="keep"))
    before = (path / "keep.etproof.json").read_bytes()
    x = torch.ones(1, 4)
    with pytest.raises(ExportError):
        export_model(Untraceable(), (x,), "keep", tmp_path, "portable", "fp32", ["x"], ["y"],
                     [("c0", "synthetic", "ones", (x,))])
    assert _only_bundles(tmp_path) == ["keep"]
    assert (path / "keep.etproof.json").read_bytes() == before
    # a successful re-export replaces it in one step
    path2 = export_model(out_dir=tmp_path, **_tiny_args(name="keep", backend="xnnpack"))
    assert path2 == path and _only_bundles(tmp_path) == ["keep"]
    assert json.loads((path / "keep.etproof.json").read_text())["backend"] == "xnnpack"


def test_preprocessing_and_labels_written(tmp_path):
    labels = {"output": "y", "source": "test", "names": ["a", "b", "c", "Café ☕"]}
    path = export_model(out_dir=tmp_path, **_tiny_args(preprocessing=PRE, labels=labels,
                                                       layouts={"x": "nchw"}, model_name="tiny"))
    doc = read_manifest(path)
    assert doc["preprocessing"]["mean"] == [127.0, 127.0, 127.0]
    assert doc["preprocessing"]["crop"] == [16, 16]
    assert doc["labels"] == labels
    assert '"Café ☕"' in (path / "t.etproof.json").read_text(encoding="utf-8")


def test_without_the_pad_workaround_the_program_fails_to_run(tmp_path, monkeypatch):
    """The upstream bug the workaround exists for, caught by the runtime check at stage 'lower'.

    If this starts passing the export, XNNPACK fixed the bug: drop the workaround.
    """
    import etproof.export.quantize as quantize
    from conftest import PaddedConvNet

    monkeypatch.setattr(quantize, "_padded_convs_quantized", lambda ep, q: [])
    torch.manual_seed(1)
    x = torch.randn(1, 3, 16, 16)
    with pytest.raises(ExportError) as e:
        export_model(PaddedConvNet().eval(), (x,), "padded-raw", tmp_path, "xnnpack",
                     "int8-dynamic-per-channel", ["x"], ["y"], [("c0", "synthetic", "randn", (x,))])
    assert e.value.stage == "lower"
    assert "does not run" in e.value.cause
    assert _only_bundles(tmp_path) == []


def test_operators_read_from_program(test_bundles):
    """The manifest records the operators the program calls outside its delegates, as ExecuTorch's
    kernel registry names them: the portable program's kernels, none for a fully delegated one."""
    for name in ("tiny-portable-fp32", "tiny-xnnpack-fp32",
                 "tiny-xnnpack-int8-dynamic-per-channel"):
        doc = read_manifest(test_bundles / name)
        program = (test_bundles / name / f"{name}.pte").read_bytes()
        assert doc["operators"] == operators_in_program(program)
    ops = read_manifest(test_bundles / "tiny-portable-fp32")["operators"]
    assert {"aten::convolution.out", "aten::addmm.out", "aten::mean.out"} <= set(ops), ops
    assert read_manifest(test_bundles / "tiny-xnnpack-fp32")["operators"] == []


def test_operator_without_a_kernel_is_refused_by_name_before_running(tmp_path):
    """torch.bucketize: XNNPACK leaves it, and ExecuTorch's Python runtime has no kernel for
    aten::bucketize.Tensor_out; the run check names it and its kernel library, not "0x14"."""
    from etproof.fixtures.testbundles import KERNEL_MISSING_OPERATOR, bucketize_spec

    spec = bucketize_spec()
    spec["verify"] = True
    with pytest.raises(ExportError) as e:
        export_model(name="bucketize-verified", out_dir=tmp_path, backend="xnnpack",
                     recipe="fp32", **spec)
    assert e.value.stage == "lower"
    assert KERNEL_MISSING_OPERATOR in e.value.cause, e.value.cause
    assert "has no kernel for" in e.value.cause and "0x" not in str(e.value)
    assert "portable_kernels / optimized_kernels" in e.value.remedy, e.value.remedy
    assert "Decompose it" in e.value.remedy
    assert _only_bundles(tmp_path) == []


def test_operator_without_a_kernel_is_recorded_when_the_check_is_off(tmp_path):
    """verify=False writes the bundle; its manifest names the operator, so a runtime half can
    refuse by name (cpp/tests/integration/bundle_test.cpp loads the test-bundles copy)."""
    from etproof.fixtures.testbundles import KERNEL_MISSING_OPERATOR, bucketize_spec

    path = export_model(name="bucketize-xnnpack-fp32", out_dir=tmp_path, backend="xnnpack",
                        recipe="fp32", **bucketize_spec())
    doc = read_manifest(path)
    assert KERNEL_MISSING_OPERATOR in doc["operators"]
    assert doc["delegates"] == ["XnnpackBackend"]


def test_bundle_directories_have_the_mode_mkdir_gives(test_bundles):
    """A bundle (staged with tempfile.mkdtemp, mode 0700) is installed with the mode a directory
    made with mkdir would have, 0777 less the umask, like its files: readable by the other users
    and containers that read committed or copied bundles."""
    import os

    mask = os.umask(0)
    os.umask(mask)
    want = 0o777 & ~mask
    twin = test_bundles / "attribution" / "gelu_mlp-xnnpack-fp32" / "gelu_mlp-xnnpack-fp32.taps"
    for d in (test_bundles / "tiny-xnnpack-fp32",
              test_bundles / "tiny-xnnpack-fp32" / "tiny-xnnpack-fp32.goldens", twin):
        assert d.is_dir(), d
        assert d.stat().st_mode & 0o777 == want, (d, oct(d.stat().st_mode & 0o777), oct(want))
