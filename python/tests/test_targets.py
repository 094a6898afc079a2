"""What a target-bound delegate's artifact was compiled for (etproof.export.targets; issue 31 §B): the
OpenVINO test bundle's manifest records the runtime requirements its CPU blob states, and the
manifest's reader refuses a target record that breaks docs/manifest.md."""

from __future__ import annotations

import json
import struct

import pytest

from etproof.manifest import read_manifest
from etproof.export.quirks.openvino import openvino_requirements, requirement_fields
from etproof.export.targets import target_record


def _blob(text: str) -> bytes:
    return b"RR_UPCVO" + struct.pack("<IQ", 1, len(text)) + text.encode() + b"\0" * 8


def test_the_requirements_are_read_from_the_blob_header():
    text = "meta=1.0;ov=2026.4.1;isa=Intel AVX2"
    program = b"ET12" + _blob(text) + b"<?xml ..." + _blob(text)
    assert openvino_requirements(program) == [text]  # two blobs of one machine: one text
    assert target_record("openvino", program) == {
        "kind": "openvino-cpu", "requirements": text, "openvino": "2026.4.1", "isa": "Intel AVX2"}
    assert requirement_fields(text) == {"meta": "1.0", "ov": "2026.4.1", "isa": "Intel AVX2"}
    assert target_record("xnnpack", program) is None
    assert target_record("openvino", b"no header") is None
    # a length past the end, or over 4096 bytes, is skipped
    assert openvino_requirements(b"RR_UPCVO" + struct.pack("<IQ", 1, 50) + b"short") == []
    assert openvino_requirements(b"RR_UPCVO" + struct.pack("<IQ", 1, 5000) + b"x" * 5000) == []
    with pytest.raises(ValueError, match="different runtime requirements"):
        target_record("openvino", _blob(text) + _blob(text.replace("AVX2", "AVX-512")))


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
