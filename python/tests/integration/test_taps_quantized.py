"""The tapped twin of the PT2E-quantized recipes (etproof.export.taps_quantized): the GELU and outlier
MLPs of etproof.fixtures.attribution on XNNPACK's int8 recipes, from the session's test bundles
(build/test-bundles/attribution-int8, python/etproof/fixtures/testbundles.py).

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_taps_quantized.py."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from etproof.export.pipeline import export_model
from etproof.manifest import read_manifest
from etproof.fixtures import attribution
from etproof.export.taps import twin_name
from etproof.fixtures.testbundles import ATTRIBUTION_INT8_DIR


F32_EPS = float(np.finfo(np.float32).eps)
STATIC, DYNAMIC = "int8-static-per-channel", "int8-dynamic-per-channel"


def _bundle(test_bundles, model: str, recipe: str):
    return test_bundles / ATTRIBUTION_INT8_DIR / f"{model}-xnnpack-{recipe}"


def _twin(bundle):
    return bundle / twin_name(bundle.name)


def _npy(d, doc, entry) -> np.ndarray:
    """A golden or reference file of bundle ``d`` (read_manifest's entry: its file name, or
    {"file", ...})."""
    return np.load(d / f"{doc['name']}.goldens" / (entry if isinstance(entry, str)
                                                   else entry["file"]))


@pytest.mark.parametrize("recipe, modules", [
    # static: fc2's output goes into the ReLU fused with it, a value never held: not eligible
    (STATIC, ["fc1", "act", "relu", "fc3"]),
    (DYNAMIC, ["fc1", "act", "fc2", "relu", "fc3"]),
])
def test_the_twin_taps_what_the_quantized_program_holds(test_bundles, recipe, modules):
    twin = _twin(_bundle(test_bundles, "gelu_mlp", recipe))
    doc = read_manifest(twin)
    taps = doc["taps"]
    assert [p["module_path"] for p in taps["points"]] == modules
    assert taps["eligible"] == len(modules) and taps["selection"] == "every"
    assert taps["delegation_matches"] and all(p["delegation_matches"] for p in taps["points"])
    assert taps["delegate_calls"]["shipped"] == taps["delegate_calls"]["twin"] == 1
    assert all(p["delegated"] for p in taps["points"])
    # the points name the compute node (its op), not the dequantize the program taps after it
    assert all("quantize" not in p["op"] for p in taps["points"])
    tap_specs = [o for o in doc["outputs"] if o["name"].startswith("tap.")]
    if recipe == STATIC:
        assert all(o["quantization"]["dtype"] == "int8" and o["quantization"]["scale"] > 0
                   for o in tap_specs), tap_specs
    else:
        assert not any("quantization" in o for o in tap_specs), tap_specs
    assert doc["references"][recipe]["captured"] and doc["references"]["float64"]["captured"]
    assert doc["quantization"] == read_manifest(_bundle(test_bundles, "gelu_mlp",
                                                        recipe))["quantization"]


def test_the_tap_goldens_are_the_float_models_values(test_bundles):
    """Each tap's golden is what the eager float model computes in that module (forward hooks),
    to float32 rounding: the prepared graph folds nothing in this model."""
    model = attribution.build_model()
    seen: dict = {}
    for name, module in model.named_modules():
        if name:
            module.register_forward_hook(lambda _m, _i, out, name=name: seen.__setitem__(name, out))
    for recipe in (STATIC, DYNAMIC):
        twin = _twin(_bundle(test_bundles, "gelu_mlp", recipe))
        doc = read_manifest(twin)
        for g in doc["goldens"]:
            with torch.no_grad():
                model(torch.from_numpy(_npy(twin, doc, g["inputs"]["x"])))
            for p in doc["taps"]["points"]:
                gold = _npy(twin, doc, g["outputs"][p["output"]])
                want = seen[p["module_path"]].numpy()
                scale = float(np.abs(want).max())
                assert np.allclose(gold, want, rtol=0, atol=8 * F32_EPS * scale), p["module_path"]


def test_the_taps_run_in_executorch_on_the_emulations_grid(test_bundles):
    """ExecuTorch's runtime on each twin: a static tap is the int8 value dequantized, so it lies
    within one quantization step of the PT2E emulation (a rounding tie may fall the other way)
    and is never the zeros XNNPACK returns for a dequantize it folded into the next op; a dynamic
    tap is float, within one int8 step of its row's range (1/127 of the tap's range) of the qd8
    emulation."""
    from executorch.runtime import Runtime

    rt = Runtime.get()
    for model in ("gelu_mlp", "outlier_mlp"):
        for recipe in (STATIC, DYNAMIC):
            twin = _twin(_bundle(test_bundles, model, recipe))
            doc = read_manifest(twin)
            method = rt.load_program(str(twin / doc["artifact"]["file"])).load_method("forward")
            specs = {o["name"]: o for o in doc["outputs"]}
            for g in doc["goldens"]:
                outs = method.execute([torch.from_numpy(_npy(twin, doc, g["inputs"]["x"]))])
                got = dict(zip([o["name"] for o in doc["outputs"]], outs))
                for p in doc["taps"]["points"]:
                    o = p["output"]
                    emu = _npy(twin, doc, g["references"][recipe][o])
                    err = float(np.abs(got[o].numpy() - emu).max())
                    if recipe == STATIC:
                        step = specs[o]["quantization"]["scale"]
                        assert err <= step * (1 + 1e-5), (model, o, err, step)
                        assert np.abs(got[o].numpy()).max() > 0, (model, o, "all zeros")
                    else:
                        assert err <= float(np.abs(emu).max()) / 127, (model, o, err)


def test_the_references_cover_every_tap(test_bundles):
    """float64 truth of the float model at each tap (close to the float32 golden), and the
    recipe's emulation; the model outputs keep the shipped bundle's own references."""
    for recipe in (STATIC, DYNAMIC):
        bundle = _bundle(test_bundles, "gelu_mlp", recipe)
        twin, shipped = _twin(bundle), read_manifest(bundle)
        doc = read_manifest(twin)
        assert "The taps:" in doc["references"]["float64"]["description"]
        for g, sg in zip(doc["goldens"], shipped["goldens"]):
            assert set(g["references"]) == {"float64", recipe}
            for p in doc["taps"]["points"]:
                gold = _npy(twin, doc, g["outputs"][p["output"]])
                r64 = _npy(twin, doc, g["references"]["float64"][p["output"]])
                assert r64.dtype == np.float64
                assert np.allclose(r64, gold, rtol=0, atol=64 * F32_EPS * np.abs(gold).max())
            for name in ("float64", recipe):
                mine = _npy(twin, doc, g["references"][name]["y"])
                theirs = _npy(bundle, shipped, sg["references"][name]["y"])
                assert np.array_equal(mine, theirs), name


def test_the_shipped_int8_bundle_is_the_same_with_and_without_taps(test_bundles, tmp_path):
    with_taps = _bundle(test_bundles, "gelu_mlp", STATIC)
    without = export_model(name=with_taps.name, out_dir=tmp_path, backend="xnnpack",
                           recipe=STATIC, **attribution.spec())
    name = with_taps.name
    files = sorted(p.relative_to(without) for p in without.rglob("*") if p.is_file())
    files_t = sorted(p.relative_to(with_taps) for p in with_taps.rglob("*") if p.is_file()
                     and p.relative_to(with_taps).parts[0] != twin_name(name))
    assert files == files_t
    for rel in files:
        if rel.name != f"{name}.etproof.json":
            assert (with_taps / rel).read_bytes() == (without / rel).read_bytes(), rel
    a, b = (json.loads((p / f"{name}.etproof.json").read_text()) for p in (with_taps, without))
    a.pop("created_utc"), b.pop("created_utc")
    assert a == b
