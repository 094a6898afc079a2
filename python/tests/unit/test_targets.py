"""What a target-bound delegate's artifact was compiled for (etproof.export.targets; issue 31 §B): the
OpenVINO test bundle's manifest records the runtime requirements its CPU blob states, and the
manifest's reader refuses a target record that breaks docs/manifest.md.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_targets.py."""

from __future__ import annotations

import struct

import pytest

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
