"""Weights outside the program (issue 10): ``external_weights`` writes the constant weights into
NAME.ptd beside NAME.pte, and the manifest's data_files lists it with its size and SHA-256. Real
exports (the test bundles' ptd/ directory, etproof.fixtures.external); the C++ half's side is
cpp/tests/integration/bundle_test.cpp, "Ptd".

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_ptd.py."""

import hashlib
import shutil

import numpy as np
import pytest
import torch
from torch import nn

from etproof.export.cache import bundle_intact
from etproof.errors import ExportError
from etproof.export.pipeline import export_model
from etproof.manifest import read_manifest
from etproof.fixtures import external
from etproof.fixtures.testbundles import PTD_BUNDLES, PTD_DIR


def _ptd_bundles(test_bundles):
    return [test_bundles / PTD_DIR / f"{key}-{b}-{r}"
            for key, _, pairs in PTD_BUNDLES for b, r in pairs]


def test_manifest_lists_the_ptd_with_its_size_and_sha256(test_bundles):
    for path in _ptd_bundles(test_bundles):
        m = read_manifest(path / f"{path.name}.etproof.json")
        ptd = path / f"{path.name}.ptd"
        data = ptd.read_bytes()
        assert m["data_files"] == [{"file": ptd.name, "bytes": len(data),
                                    "sha256": hashlib.sha256(data).hexdigest()}], path.name
        assert m["artifact"]["bytes"] == (path / f"{path.name}.pte").stat().st_size
        assert sorted(p.name for p in path.iterdir()) == sorted(
            [f"{path.name}.pte", ptd.name, f"{path.name}.etproof.json", f"{path.name}.goldens"])


def test_a_changed_or_missing_ptd_is_not_reused(test_bundles, tmp_path):
    """The export cache re-exports a bundle whose .ptd no longer matches its manifest."""
    src = _ptd_bundles(test_bundles)[0]
    path = tmp_path / src.name
    shutil.copytree(src, path)
    assert bundle_intact(path)
    ptd = path / f"{path.name}.ptd"
    data = bytearray(ptd.read_bytes())
    data[len(data) // 2] ^= 1
    ptd.write_bytes(bytes(data))
    assert not bundle_intact(path)
    ptd.unlink()
    assert not bundle_intact(path)


def test_the_weights_moved_out_of_the_program(test_bundles, tmp_path):
    """The same model without external_weights: one .pte holding the weights, no data_files; with
    it, the .pte shrinks by about the weights' size and ExecuTorch's Python runtime, given the
    .ptd, reproduces the goldens."""
    from executorch.runtime import Runtime

    spec = external.external_weights_spec()
    spec["external_weights"] = False
    inline = export_model(name="inline-portable-fp32", out_dir=tmp_path, backend="portable",
                          recipe="fp32", **spec)
    m_inline = read_manifest(inline / f"{inline.name}.etproof.json")
    assert "data_files" not in m_inline
    assert not list(inline.glob("*.ptd"))
    weights = sum(p.numel() * 4 for p in spec["model"].parameters())
    for path in _ptd_bundles(test_bundles):
        m = read_manifest(path / f"{path.name}.etproof.json")
        assert m["artifact"]["bytes"] + weights <= m_inline["artifact"]["bytes"] + 1024, path.name
        assert m["data_files"][0]["bytes"] >= weights, path.name
        loaded = Runtime.get().load_program(path / f"{path.name}.pte",
                                            data_path=path / f"{path.name}.ptd")
        method = loaded.load_method("forward")
        for case, (_cid, _d, _o, tensors) in zip(m["goldens"], spec["golden_inputs"]):
            want = torch.from_numpy(np.load(path / f"{path.name}.goldens"
                                            / case["outputs"]["y"]))
            torch.testing.assert_close(method.execute(list(tensors))[0], want,
                                       rtol=1e-5, atol=1e-5)


def test_external_weights_on_a_model_without_weights_fails_by_name(tmp_path):
    x = torch.randn(1, 4)
    with pytest.raises(ExportError) as e:
        export_model(nn.ReLU().eval(), (x,), "relu-portable-fp32", tmp_path, "portable", "fp32",
                     ["x"], ["y"], [("c0", "synthetic", "torch.randn", (x,))],
                     external_weights=True)
    assert e.value.stage == "serialize"
    assert "moved no weights out of the program" in e.value.cause
    assert e.value.remedy == "drop external_weights for this model"
    assert not list(tmp_path.iterdir()), "nothing half-written"
