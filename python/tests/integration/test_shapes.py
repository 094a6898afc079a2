"""Models as users have them (issue 10): dynamic dimensions, integer/bool/scalar-shaped inputs,
no inputs. Real exports (the test bundles, etproof.fixtures.shapes); the C++ half's side is
cpp/tests/bundle_test.cpp, "Shapes".

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_shapes.py."""

import numpy as np

from etproof.manifest import read_manifest
from etproof.fixtures import shapes


def test_exported_dynamic_batch_records_its_range_and_goldens_at_each_size(test_bundles):
    for recipe in ("portable-fp32", "xnnpack-fp32", "xnnpack-int8-dynamic-per-channel"):
        d = test_bundles / "shapes" / f"dynbatch-{recipe}"
        m = read_manifest(d)
        assert m["inputs"][0]["shape"] == [-1, 6]
        assert m["inputs"][0]["dynamic_dims"] == [{"axis": 0, "name": "batch", "min": 1,
                                                   "max": 8}]
        assert m["outputs"][0]["shape"] == [-1, 3]
        # y's axis 0 is x's (one torch.export symbol): recorded under the input's Dim
        assert m["outputs"][0]["dynamic_dims"] == m["inputs"][0]["dynamic_dims"]
        gdir = d / f"{d.name}.goldens"
        sizes = sorted(np.load(gdir / g["inputs"]["x"]).shape[0] for g in m["goldens"])
        assert sizes == list(shapes.BATCH_SIZES)
        for g in m["goldens"]:  # each golden output has its own case's batch
            n = np.load(gdir / g["inputs"]["x"]).shape[0]
            assert np.load(gdir / g["outputs"]["y"]).shape == (n, 3)
            for ref in g["references"].values():
                assert np.load(gdir / ref["y"]["file"]).shape == (n, 3)


def test_each_output_records_the_input_dim_it_follows(test_bundles):
    m = read_manifest(test_bundles / "shapes" / "twodims-portable-fp32")
    assert [s["dynamic_dims"] for s in m["outputs"]] == [
        [{"axis": 0, "name": n, "min": 1, "max": 4}] for n in ("A", "B")]


def test_integer_bool_scalar_and_zero_inputs_export(test_bundles):
    m = read_manifest(test_bundles / "shapes" / "tokens-xnnpack-fp32")
    assert [(s["name"], s["dtype"], s["shape"]) for s in m["inputs"]] == [
        ("ids", "int64", [2, 5]), ("mask", "bool", [2, 5]), ("scale", "float32", [])]
    d = test_bundles / "shapes" / "tokens-xnnpack-fp32" / "tokens-xnnpack-fp32.goldens"
    assert np.load(d / m["goldens"][0]["inputs"]["scale"]).shape == ()  # stays 0-d on disk
    m = read_manifest(test_bundles / "shapes" / "noinputs-portable-fp32")
    assert m["inputs"] == [] and m["goldens"][0]["inputs"] == {}
