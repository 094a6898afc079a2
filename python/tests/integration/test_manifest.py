"""The manifest: the fixture, its canonical form, validation, and the writer's output.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_manifest.py."""

import pytest

from etproof.errors import ManifestError
from etproof.manifest import canonical_dumps, read_manifest


def test_read_manifest_accepts_dir_and_file(test_bundles):
    b = test_bundles / "tiny-portable-fp32"
    assert read_manifest(b) == read_manifest(b / "tiny-portable-fp32.etproof.json")
    with pytest.raises(ManifestError):
        read_manifest(test_bundles / "missing")


def test_writer_output_validates_and_round_trips(test_bundles):
    from etproof.fixtures.testbundles import METHODS_DIR, PTD_DIR, SHAPES_DIR

    dirs = (test_bundles, test_bundles / SHAPES_DIR, test_bundles / PTD_DIR,
            test_bundles / METHODS_DIR)
    bundles = sorted(p for d in dirs for p in d.iterdir()
                     if (p / f"{p.name}.etproof.json").is_file())
    assert any(b.parent.name == PTD_DIR for b in bundles)
    assert any(b.parent.name == METHODS_DIR for b in bundles)
    for b in bundles:
        raw = (b / f"{b.name}.etproof.json").read_bytes()
        doc = read_manifest(b)
        assert canonical_dumps(doc).encode("utf-8") == raw
        assert doc["name"] == b.name
