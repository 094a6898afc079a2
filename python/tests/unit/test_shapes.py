"""Models as users have them (issue 10): dynamic dimensions, integer/bool/scalar-shaped inputs,
no inputs. Real exports (the test bundles, etproof.fixtures.shapes); the C++ half's side is
cpp/tests/integration/bundle_test.cpp, "Shapes".

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_shapes.py."""

import copy
import json

import pytest
import torch
from torch.export import Dim

from etproof.contract import userspec
from etproof.contract.arguments import check_export_arguments
from etproof.errors import InvalidArgument, ManifestError
from etproof.manifest import validate
from etproof.fixtures import shapes

from conftest import FIXTURE


def _with_dynamic_batch(dims):
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    doc["inputs"][0]["shape"][0] = -1
    doc["inputs"][0]["dynamic_dims"] = dims
    return doc


def test_manifest_dynamic_dims_validate():
    validate(_with_dynamic_batch([{"axis": 0, "name": "batch", "min": 1, "max": 8}]))
    # A -1 without a recorded range (a bundle from before dynamic_dims) still opens.
    doc = _with_dynamic_batch([{"axis": 0, "name": "batch", "min": 1, "max": 8}])
    del doc["inputs"][0]["dynamic_dims"]
    validate(doc)


@pytest.mark.parametrize("dims,field", [
    ([{"axis": 1, "name": "batch", "min": 1, "max": 8}], "inputs[0].dynamic_dims[0].axis"),
    ([{"axis": 0, "name": "batch", "min": 4, "max": 2}], "inputs[0].dynamic_dims[0].max"),
    ([{"axis": 0, "name": "batch", "min": 1}], "inputs[0].dynamic_dims[0].max"),
    ([{"axis": 0, "name": "b a", "min": 1, "max": 2}], "inputs[0].dynamic_dims[0].name"),
    ([], "inputs[0].dynamic_dims"),
])
def test_manifest_dynamic_dims_problems_name_the_field(dims, field):
    with pytest.raises(ManifestError) as e:
        validate(_with_dynamic_batch(dims))
    assert e.value.field == field, str(e.value)


def _output_follows(name):
    doc = _with_dynamic_batch([{"axis": 0, "name": "batch", "min": 1, "max": 8}])
    doc["outputs"][0]["shape"][0] = -1
    doc["outputs"][0]["dynamic_dims"] = [{"axis": 0, "name": name, "min": 1, "max": 8}]
    return doc


def test_an_outputs_dynamic_dims_name_an_inputs_dim():
    validate(_output_follows("batch"))  # y's axis 0 is x's Dim 'batch'
    with pytest.raises(ManifestError) as e:
        validate(_output_follows("seq"))
    assert e.value.field == "outputs[0].dynamic_dims[0].name", str(e.value)
    assert "'seq' is no input's dynamic dimension" in str(e.value)
    doc = _output_follows("batch")
    doc["outputs"][0]["shape"][0] = 1  # not a -1
    with pytest.raises(ManifestError) as e:
        validate(doc)
    assert e.value.field == "outputs[0].dynamic_dims[0].axis", str(e.value)


def _dyn_spec(sizes=(1, 3, 8), dim=None, example=3):
    spec = shapes.dynamic_batch_spec()
    spec["example_inputs"] = (torch.randn(example, 6),)
    spec["golden_inputs"] = [(f"b{n}", "synthetic", "torch.randn", (torch.randn(n, 6),))
                             for n in sizes]
    if dim is not None:
        spec["dynamic_shapes"] = {"x": {0: dim}}
    return spec


def _refusal(spec) -> str:
    with pytest.raises(InvalidArgument) as e:
        check_export_arguments(name="check", backend="portable", recipe="fp32", **spec)
    assert e.value.remedy
    return e.value.cause


def test_dynamic_shapes_accepted_forms():
    assert userspec.problems(shapes.dynamic_batch_spec()) == []
    spec = _dyn_spec()
    spec["dynamic_shapes"] = ({0: Dim("batch", min=1, max=8)},)  # torch.export's positional form
    args, in_specs = check_export_arguments(name="c", backend="portable", recipe="fp32", **spec)
    assert in_specs[0]["shape"] == [-1, 6]
    assert in_specs[0]["dynamic_dims"] == [{"axis": 0, "name": "batch", "min": 1, "max": 8}]
    assert args.dynamic_shapes[0][0].__name__ == "batch"


@pytest.mark.parametrize("spec,words", [
    (_dyn_spec(dim=Dim("batch", min=1)), ["no finite max"]),
    (_dyn_spec(sizes=(1, 3)), ["'batch'", "range 1..8", "sizes [1, 3]", "the maximum 8"]),
    (_dyn_spec(sizes=(1, 8)), ["a size between"]),
    (_dyn_spec(sizes=(1, 3, 8, 9)), ["size 9", "outside its range 1..8"]),
    (_dyn_spec(example=9), ["example input's size 9", "outside"]),
    (_dyn_spec(dim="batch"), ["not a torch.export.Dim"]),
])
def test_dynamic_shapes_refusals_name_the_dimension(spec, words):
    cause = _refusal(spec)
    for w in words:
        assert w in cause, cause


def test_dynamic_shapes_keyed_by_an_unknown_input_is_refused():
    spec = _dyn_spec()
    spec["dynamic_shapes"] = {"y": {0: Dim("batch", min=1, max=8)}}
    assert "unknown inputs ['y']" in _refusal(spec)
    assert any("unknown inputs" in p for p in userspec.problems(copy.copy(spec)))
