"""Weights outside the program (issue 10): ``external_weights`` writes the constant weights into
NAME.ptd beside NAME.pte, and the manifest's data_files lists it with its size and SHA-256. Real
exports (the test bundles' ptd/ directory, etproof.fixtures.external); the C++ half's side is
cpp/tests/bundle_test.cpp, "Ptd".

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_ptd.py."""

import pytest

from etproof.contract import userspec
from etproof.contract.arguments import check_export_arguments
from etproof.errors import InvalidArgument
from etproof.export.pipeline import export_model
from etproof.fixtures import external


@pytest.mark.parametrize("bad", ["yes", 1, None, [True]])
def test_external_weights_must_be_a_bool(bad):
    spec = external.external_weights_spec()
    spec["external_weights"] = bad
    found = userspec.problems(spec)
    assert len(found) == 1 and f"external_weights must be True or False, got {bad!r}" in found[0]
    assert "set external_weights to True to store the program's constant weights in NAME.ptd" \
        in found[0]
    with pytest.raises(InvalidArgument) as e:
        check_export_arguments(name="x", backend="xnnpack", recipe="fp32", **spec)
    assert e.value.stage == "export" and "False (the default)" in e.value.remedy


def test_external_weights_is_refused_by_a_backend_that_keeps_weights_in_its_blob(tmp_path):
    spec = external.external_weights_spec()
    assert userspec.problems(spec) == []  # checked on a backend that writes NAME.ptd
    with pytest.raises(InvalidArgument) as e:
        export_model(name="x-openvino-fp32", out_dir=tmp_path, backend="openvino",
                     recipe="fp32", **spec)
    assert "external_weights: backend 'openvino' keeps its weights inside its own delegate " \
        "blob" in e.value.cause
    assert "drop external_weights for this backend" in e.value.remedy
    assert not list(tmp_path.iterdir())
