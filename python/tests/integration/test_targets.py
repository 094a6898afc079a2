"""What a target-bound delegate's artifact was compiled for (etproof.export.targets; issue 31 §B): the
OpenVINO test bundle's manifest records the runtime requirements its CPU blob states, and the
manifest's reader refuses a target record that breaks docs/manifest.md.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_targets.py."""

from __future__ import annotations

import json

import pytest

from etproof.manifest import read_manifest
from etproof.export.targets import target_record


def test_the_openvino_test_bundle_records_what_its_blob_was_compiled_for(test_bundles):
    bundle = test_bundles / "tiny-openvino-fp32"
    if not bundle.is_dir():
        pytest.skip("tiny-openvino-fp32 was not exported here (OpenVINO's export half missing)")
    doc = read_manifest(bundle)
    program = (bundle / doc["artifact"]["file"]).read_bytes()
    assert doc["target"] == target_record("openvino", program)
    assert doc["target"]["requirements"].startswith("meta=")
    import openvino

    assert doc["target"]["openvino"] == openvino.__version__.split("-")[0]
    # every other backend's bundle records none
    assert "target" not in read_manifest(test_bundles / "tiny-xnnpack-fp32")


@pytest.mark.parametrize("bad, field", [
    ({"kind": 5, "requirements": "x"}, "target.kind"),
    ({"kind": "openvino-cpu"}, "target"),
    ({"kind": "openvino-cpu", "requirements": 5}, "target.requirements"),
    ({"kind": "openvino-cpu", "requirements": "x", "soc": "y"}, "target"),
    ("openvino-cpu", "target"),
])
def test_a_target_that_breaks_the_schema_is_refused(test_bundles, bad, field):
    from etproof.errors import ManifestError
    from etproof.manifest import validate

    doc = read_manifest(test_bundles / "tiny-portable-fp32")
    d = json.loads(json.dumps(doc))
    d["target"] = bad
    with pytest.raises(ManifestError, match=field.replace(".", r"\.")):
        validate(d)


def test_a_target_kind_this_reader_does_not_know_is_kept(test_bundles):
    """As the runtime half does (Targets.AKindThisBinaryDoesNotKnowIsKeptAndNotChecked)."""
    from etproof.manifest import validate

    d = json.loads(json.dumps(read_manifest(test_bundles / "tiny-portable-fp32")))
    d["target"] = {"kind": "qnn-soc", "requirements": "SM8650"}
    assert validate(d)["target"]["kind"] == "qnn-soc"
