"""Programs with several methods (issue 10): a model spec's ``methods`` exports each method and
lowers them into one program; its manifest is schema_version 2 (docs/manifest.md, "Programs
with several methods"). Real exports (the test bundles' methods/ directory,
etproof.fixtures.methods) run in ExecuTorch's Python runtime; the C++ half's side is
cpp/tests/integration/bundle_test.cpp and cli_test.cpp ("Methods").

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_methods.py."""

import copy

import numpy as np
import torch
from torch import nn

from etproof.export.cache import bundle_intact
from etproof.export.pipeline import export_model
from etproof.manifest import all_goldens, read_manifest
from etproof.fixtures import methods
from etproof.fixtures.testbundles import METHOD_BUNDLES, METHODS_DIR


def _method_bundles(test_bundles):
    return [test_bundles / METHODS_DIR / f"{key}-{b}-{r}"
            for key, _, pairs in METHOD_BUNDLES for b, r in pairs]


def test_exported_bundles_describe_each_method(test_bundles):
    for path in _method_bundles(test_bundles):
        doc = read_manifest(path)
        assert doc["schema_version"] == 2 and "inputs" not in doc and "goldens" not in doc
        by_name = {m["name"]: m for m in doc["methods"]}
        assert list(by_name) == ["encode", "decode"]
        enc, dec = by_name["encode"], by_name["decode"]
        assert enc["inputs"][0]["shape"] == [-1, 6]
        assert enc["inputs"][0]["dynamic_dims"] == [{"axis": 0, "name": "batch", "min": 1,
                                                     "max": 4}]
        assert enc["outputs"][0]["shape"] == [-1, 3]
        assert [(s["name"], s["dtype"]) for s in dec["inputs"]] == [("code", "float32"),
                                                                   ("ids", "int64")]
        assert [g["id"] for g in enc["goldens"]] == ["batch1", "batch2", "batch4"]
        # golden files carry their method's name, and every file the manifest names exists
        files = [fn for g in all_goldens(doc) for part in ("inputs", "outputs")
                 for fn in g[part].values()]
        assert all(fn.split(".")[0] in by_name for fn in files), files
        assert bundle_intact(path)
        if doc["backend"] == "xnnpack":
            assert doc["delegates"] == ["XnnpackBackend"]
        # the embedding is not delegated: its kernel is named program-wide
        assert "aten::embedding.out" in doc["operators"]


def test_each_method_runs_in_executorch_and_reproduces_its_goldens(test_bundles):
    """ExecuTorch's Python runtime, every method of the written program, on every golden case.
    The bound here is float32 rounding of a 6-wide linear layer (a few ulp of values of order 1:
    1e-5); the int8 column is the gate's business (C++), checked only for its shape here."""
    from executorch.runtime import Runtime

    rt = Runtime.get()
    for path in _method_bundles(test_bundles):
        doc = read_manifest(path)
        data = [path / d["file"] for d in doc.get("data_files", [])]  # encdecptd: NAME.ptd
        program = rt.load_program(path / doc["artifact"]["file"],
                                  **({"data_path": data[0]} if data else {}))
        assert set(program.method_names) == {"encode", "decode"}
        gdir = path / f"{path.name}.goldens"
        for m in doc["methods"]:
            method = program.load_method(m["name"])
            for g in m["goldens"]:
                ins = [torch.from_numpy(np.load(gdir / g["inputs"][s["name"]]))
                       for s in m["inputs"]]
                outs = method.execute(ins)
                for s, got in zip(m["outputs"], outs):
                    want = np.load(gdir / g["outputs"][s["name"]])
                    assert got.shape == want.shape, (path.name, m["name"], g["id"])
                    if doc["recipe"] == "fp32":
                        np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-5,
                                                   err_msg=f"{path.name} {m['name']} {g['id']}")


def test_int8_quantizes_each_method_and_a_method_with_nothing_stays_float(tmp_path):
    class LinearAndRelu(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def project(self, x):
            return self.fc(x)

        def clamp(self, x):
            return torch.relu(x)

    torch.manual_seed(0)
    x = torch.randn(2, 4)
    case = [("c0", "synthetic", "torch.randn seed 0", (x,))]
    entry = {"example_inputs": (x,), "input_names": ["x"], "output_names": ["y"],
             "golden_inputs": case}
    path = export_model(LinearAndRelu().eval(), name="lr", out_dir=tmp_path, backend="xnnpack",
                        recipe="int8-dynamic-per-channel",
                        methods={"project": entry, "clamp": copy.deepcopy(entry)})
    doc = read_manifest(path)
    assert [m["name"] for m in doc["methods"]] == ["project", "clamp"]
    assert {"module": "<method clamp>", "reason": "nothing to quantize: the quantizer annotates "
            "none of its operators"} in doc["quantization"]["skipped"]
    assert doc["references"]["int8-dynamic-per-channel"]["captured"] is False
    assert "clamp" in doc["references"]["int8-dynamic-per-channel"]["reason"]
    # the recipe reference is not captured for the program, so no case carries its file
    assert all("int8-dynamic-per-channel" not in g.get("references", {})
               for g in all_goldens(doc))


def test_external_weights_puts_every_methods_weights_in_one_ptd(test_bundles):
    """encdec with external_weights: the manifest lists one NAME.ptd; both methods' weights are
    out of the .pte (it is smaller than the inline program's by at least their size). That
    ExecuTorch's Python runtime, given the .ptd, runs each method to its goldens is
    test_each_method_runs_in_executorch_and_reproduces_its_goldens."""
    model = methods.encdec_spec()["model"]
    weights = sum(p.numel() * 4 for p in model.parameters())
    for backend in ("portable", "xnnpack"):
        path = test_bundles / METHODS_DIR / f"encdecptd-{backend}-fp32"
        inline = read_manifest(test_bundles / METHODS_DIR / f"encdec-{backend}-fp32")
        doc = read_manifest(path)
        assert doc["model"] == "encdec_ptd" and doc["schema_version"] == 2
        ptd = path / f"{path.name}.ptd"
        assert [d["file"] for d in doc["data_files"]] == [ptd.name]
        assert doc["data_files"][0]["bytes"] >= weights, path.name
        assert doc["artifact"]["bytes"] + weights <= inline["artifact"]["bytes"] + 1024, path.name


def test_a_one_method_program_is_still_schema_1(test_bundles):
    doc = read_manifest(test_bundles / "tiny-portable-fp32")
    assert doc["schema_version"] == 1 and "methods" not in doc
