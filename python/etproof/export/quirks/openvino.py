"""OpenVINO's quirks: its partitioner's device, the precision its CPU plugin really computes in,
the bfloat16 reference every fp32 bundle carries, and the target its compiled blobs are bound to.

Target: ExecuTorch's OpenVINO ``preprocess`` stores the CPU plugin's *compiled* model, which
opens with a runtime requirements block: the magic ``RR_UPCVO`` (8 bytes), a version (uint32
little-endian, 1), the length of the text that follows (uint64 little-endian) and the text,
``meta=1.0;ov=2026.4.1;isa=Intel AVX2``: the OpenVINO version and the ISA class the plugin compiled
for. The plugin refuses to import a blob whose requirements differ from its own ("[CPU] Cannot
import compiled blob: it was built for a different runtime configuration (OpenVINO version/isa
mismatch)", libopenvino_intel_cpu_plugin.so of openvino 2026.4.1). Read from the program's bytes
as written, so the manifest states what the plugin will check.

May import: etproof.backends (OPENVINO_DEVICE), the quirks' base; openvino and ExecuTorch only
inside the hooks.
"""

from __future__ import annotations

import struct

from etproof.backends import OPENVINO_DEVICE
from etproof.export.quirks.base import BackendQuirks

OPENVINO_MAGIC = b"RR_UPCVO"
OPENVINO_KIND = "openvino-cpu"
# the longest requirements text read (the real ones are under 100 bytes)
_MAX_TEXT = 4096

# OpenVINO's INFERENCE_PRECISION_HINT type names -> the manifest's precision names.
_OV_TYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


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


class OpenVINOQuirks(BackendQuirks):
    def minimum_partitioner(self, cls):
        """Device OPENVINO_DEVICE (the compile spec "device")."""
        from executorch.exir.backend.compile_spec_schema import CompileSpec

        return cls([CompileSpec("device", OPENVINO_DEVICE.encode())])

    def effective_precision(self, precision: str, recipe: str) -> str:
        """What the CPU plugin reports, not the table's: it compiles with the device's default
        INFERENCE_PRECISION_HINT (bf16 on CPUs with native bf16, e.g. AVX512_BF16 or AMX) and
        ExecuTorch's OpenVINO compile specs cannot override it (their values reach
        openvino_compile as strings; its "config" must be a dict)."""
        import openvino as ov

        hint = ov.Core().get_property(OPENVINO_DEVICE, "INFERENCE_PRECISION_HINT").get_type_name()
        return _OV_TYPES.get(hint, hint)

    def extra_references(self, recipe: str, names: list[str]) -> list[str]:
        """``bfloat16`` for every bundle of recipe ``fp32``, whatever the precision recorded at
        export: the CPU plugin computes fp32 programs in bfloat16 on CPUs with AVX512_BF16 or AMX,
        which the runtime half detects on the machine it runs on, which need not be the machine
        that exported."""
        return ["bfloat16"] if recipe == "fp32" and "bfloat16" not in names else []

    def target_record(self, program: bytes) -> dict | None:
        """{"kind": "openvino-cpu", "requirements": TEXT, "openvino": VERSION, "isa": ISA CLASS}
        for a program with one CPU blob requirement (several blobs compiled on one machine share
        it); None where none is found. Raises ValueError where the blobs of one program state
        different requirements (they were compiled on one machine: that is a broken program)."""
        texts = openvino_requirements(program)
        if not texts:
            return None
        if len(texts) > 1:
            raise ValueError(f"the program's OpenVINO CPU blobs state different runtime "
                             f"requirements: {texts}")
        fields = requirement_fields(texts[0])
        record = {"kind": OPENVINO_KIND, "requirements": texts[0]}
        if "ov" in fields:
            record["openvino"] = fields["ov"]
        if "isa" in fields:
            record["isa"] = fields["isa"]
        return record


QUIRKS = OpenVINOQuirks("openvino")
