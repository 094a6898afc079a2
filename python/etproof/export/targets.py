"""What a delegate's artifact was compiled for, where it is compiled for a target: the manifest's
``target`` (docs/manifest.md "target"; data/backends.json ``runtime_needs.target`` says which
backends are target-bound and how).

Each target-bound backend reads its own artifact in its quirks module (``target_record``;
etproof.export.quirks): OpenVINO's CPU blobs open with a runtime requirements block, read from the
program's bytes as written (etproof.export.quirks.openvino), so the manifest states what the
plugin will check.

May import: the backends' quirks (etproof.export.quirks).
"""

from __future__ import annotations

from etproof.export.quirks import quirks_for


def target_record(backend: str, program: bytes) -> dict | None:
    """The manifest's ``target`` for a program lowered for ``backend`` (the .pte's bytes), from the
    backend's quirks: for OpenVINO {"kind": "openvino-cpu", "requirements": TEXT, "openvino":
    VERSION, "isa": ISA CLASS} where the program has one CPU blob requirement (several blobs
    compiled on one machine share it); None for a backend that is not target-bound, or where
    none is found. Raises ValueError where the blobs of one program state different requirements
    (they were compiled on one machine: that is a broken program)."""
    return quirks_for(backend).target_record(program)
