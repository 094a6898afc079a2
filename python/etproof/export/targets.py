"""What a delegate's artifact was compiled for, where it is compiled for a target: the manifest's
``target`` (docs/manifest.md "target"; data/backends.json ``runtime_needs.target`` says which
backends are target-bound and how).

OpenVINO: ExecuTorch's OpenVINO ``preprocess`` stores the CPU plugin's *compiled* model, which
opens with a runtime requirements block: the magic ``RR_UPCVO`` (8 bytes), a version (uint32
little-endian, 1), the length of the text that follows (uint64 little-endian) and the text,
``meta=1.0;ov=2026.4.1;isa=Intel AVX2``: the OpenVINO version and the ISA class the plugin compiled
for. The plugin refuses to import a blob whose requirements differ from its own ("[CPU] Cannot
import compiled blob: it was built for a different runtime configuration (OpenVINO version/isa
mismatch)", libopenvino_intel_cpu_plugin.so of openvino 2026.4.1). Read from the program's bytes
as written, so the manifest states what the plugin will check.

Imports nothing from etproof.
"""

from __future__ import annotations

import struct

OPENVINO_MAGIC = b"RR_UPCVO"
OPENVINO_KIND = "openvino-cpu"
# the longest requirements text read (the real ones are under 100 bytes)
_MAX_TEXT = 4096


def openvino_requirements(program: bytes) -> list[str]:
    """Every distinct runtime requirements text of the OpenVINO CPU blobs in ``program`` (the
    .pte's bytes), in the order they appear; [] where there is none (no OpenVINO delegate, or a
    device other than the CPU). A block whose length runs past the program or over 4096 bytes,
    or whose text is not ASCII, is skipped."""
    found: list[str] = []
    at = program.find(OPENVINO_MAGIC)
    while at >= 0:
        head = at + len(OPENVINO_MAGIC)
        if head + 12 <= len(program):
            _version, size = struct.unpack_from("<IQ", program, head)
            start = head + 12
            if 0 < size <= _MAX_TEXT and start + size <= len(program):
                try:
                    text = program[start:start + size].decode("ascii")
                except UnicodeDecodeError:
                    text = ""
                if text and text not in found:
                    found.append(text)
        at = program.find(OPENVINO_MAGIC, at + 1)
    return found


def requirement_fields(text: str) -> dict[str, str]:
    """``meta=1.0;ov=2026.4.1;isa=Intel AVX2`` -> {"meta": "1.0", "ov": "2026.4.1", "isa": "Intel
    AVX2"} (a part without "=" is left out)."""
    out = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def target_record(backend: str, program: bytes) -> dict | None:
    """The manifest's ``target`` for a program lowered for ``backend``: {"kind": "openvino-cpu",
    "requirements": TEXT, "openvino": VERSION, "isa": ISA CLASS} for an OpenVINO program with
    one CPU blob requirement (several blobs compiled on one machine share it); None for any other
    backend, or where none is found. Raises ValueError where the blobs of one program state
    different requirements (they were compiled on one machine: that is a broken program)."""
    if backend != "openvino":
        return None
    texts = openvino_requirements(program)
    if not texts:
        return None
    if len(texts) > 1:
        raise ValueError(f"the program's OpenVINO CPU blobs state different runtime requirements: "
                         f"{texts}")
    fields = requirement_fields(texts[0])
    record = {"kind": OPENVINO_KIND, "requirements": texts[0]}
    if "ov" in fields:
        record["openvino"] = fields["ov"]
    if "isa" in fields:
        record["isa"] = fields["isa"]
    return record
