"""References captured at export (etproof.export.references, docs/manifest.md "references"): real
exports of the tiny model (the session's test bundles), the files checked against the manifest and
against their own definition, recomputed here.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_references.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from etproof.export.bundle import file_ref
from etproof.manifest import read_manifest
from etproof.fixtures import tiny
from etproof.export.references import reference_names


EPS32 = float(np.finfo(np.float32).eps)


def _refs(bundle: Path, doc: dict, case: dict, name: str) -> dict:
    gdir = bundle / f"{doc['name']}.goldens"
    return {o: np.load(gdir / ref["file"]) for o, ref in case["references"][name].items()}


def _golden(bundle: Path, doc: dict, case: dict, output: str) -> np.ndarray:
    return np.load(bundle / f"{doc['name']}.goldens" / case["outputs"][output])


def test_every_test_bundle_carries_its_references_hash_checked(test_bundles):
    seen = 0
    for bundle in sorted(p for p in test_bundles.iterdir() if p.is_dir()
                         and (p / f"{p.name}.etproof.json").is_file()):  # not shapes/, ptd/
        doc = read_manifest(bundle)
        names = reference_names(doc["backend"], doc["recipe"], doc["precision"],
                                "quantization" in doc)
        assert sorted(doc["references"]) == sorted(names), bundle.name
        for name, rec in doc["references"].items():
            assert rec["captured"], (bundle.name, name, rec)
            assert rec["description"]
        gdir = bundle / f"{doc['name']}.goldens"
        for case in doc["goldens"]:
            assert sorted(case["references"]) == sorted(names)
            for name, per_output in case["references"].items():
                for output, ref in per_output.items():
                    assert ref["file"] == f"{case['id']}.ref.{name}.{output}.npy"
                    assert file_ref(gdir / ref["file"]) == ref
                    seen += 1
    assert seen >= 4 * 3  # every test bundle, every case


def test_float64_truth_is_within_float32_rounding_of_the_golden(test_bundles):
    bundle = test_bundles / "tiny-portable-fp32"
    doc = read_manifest(bundle)
    for case in doc["goldens"]:
        truth = _refs(bundle, doc, case, "float64")["y"]
        golden = _golden(bundle, doc, case, "y")
        assert truth.dtype == np.float64 and golden.dtype == np.float32
        # It is float64 arithmetic, not a widened float32 result: some element carries digits
        # float32 cannot hold.
        assert np.any(truth != truth.astype(np.float32).astype(np.float64))
        # The golden is the same arithmetic in float32: its error is rounding, a few units of
        # float32's roundoff at the output's magnitude (about sqrt(n) u for the ~300-term sums of
        # the tiny model's conv, pooling and linear; measured below one eps here). 16 eps leaves
        # room for summation order while still failing on anything but rounding.
        err = np.abs(golden.astype(np.float64) - truth).max()
        assert err <= 16 * EPS32 * np.abs(truth).max(), (case["id"], err)
        # ... and recomputed here from the definition, bit for bit.
        x = torch.from_numpy(np.load(bundle / f"{doc['name']}.goldens" / case["inputs"]["x"]))
        with torch.no_grad():
            again = tiny.build_model().double()(x.double()).numpy()
        np.testing.assert_array_equal(truth, again)


def test_int8_emulation_is_quantization_sized_and_reruns_exactly(test_bundles):
    from etproof.contract.arguments import GoldenCase
    from etproof.export.quantize import quantize

    bundle = test_bundles / "tiny-xnnpack-int8-dynamic-per-channel"
    doc = read_manifest(bundle)
    name = "int8-dynamic-per-channel"
    assert doc["references"][name]["captured"]
    gdir = bundle / f"{doc['name']}.goldens"
    cases = [GoldenCase(c["id"], c["data"], c["origin"],
                        (torch.from_numpy(np.load(gdir / c["inputs"]["x"])),))
             for c in doc["goldens"]]
    model = tiny.build_model()
    ep = torch.export.export(model, cases[0].inputs)
    _, _, _, converted, _ = quantize(ep, "xnnpack-int8-dynamic-per-channel", cases[0].inputs, cases)
    for case, c in zip(doc["goldens"], cases):
        emu = _refs(bundle, doc, case, name)["y"]
        golden = _golden(bundle, doc, case, "y")
        assert emu.dtype == np.float32
        span = float(golden.max() - golden.min())
        diff = float(np.abs(emu - golden).max())
        # Quantization-sized: far above float32 rounding (1e-5 of the range is ~100x the fp32
        # golden's own error) and within a few int8 steps (one step is 1/255 of a tensor's range;
        # 2% of the output's range is ~5 steps).
        assert 1e-5 * span < diff < 0.02 * span, (case["id"], diff, span)
        with torch.no_grad():
            again = converted(*c.inputs).numpy()
        np.testing.assert_array_equal(emu, again)


def test_bfloat16_emulation_of_openvino_fp32_is_the_model_in_bfloat16(test_bundles):
    bundle = test_bundles / "tiny-openvino-fp32"
    if not bundle.is_dir():
        pytest.skip("no tiny-openvino-fp32 test bundle (OpenVINO not installed)")
    doc = read_manifest(bundle)
    assert doc["references"]["bfloat16"]["captured"]
    model = tiny.build_model().to(torch.bfloat16)
    for case in doc["goldens"]:
        emu = _refs(bundle, doc, case, "bfloat16")["y"]
        x = torch.from_numpy(np.load(bundle / f"{doc['name']}.goldens" / case["inputs"]["x"]))
        with torch.no_grad():
            again = model(x.to(torch.bfloat16)).float().numpy()
        np.testing.assert_array_equal(emu, again)
        assert np.abs(emu - _golden(bundle, doc, case, "y")).max() > 0  # bfloat16 is not float32


def test_spec_options_flow_into_the_manifest(tmp_path):
    from etproof.export.pipeline import export_model
    from etproof.contract.userspec import problems

    spec = tiny.spec()
    spec["golden_inputs"] = spec["golden_inputs"][:1]
    spec.update(slice_axis={"y": None}, budget={"min_cosine": 0.999, "top1_agreement": 1.0})
    assert problems(spec) == []
    path = export_model(name="opts", out_dir=tmp_path, backend="portable", recipe="fp32",
                        verify=False, **spec)
    doc = read_manifest(path)
    assert doc["outputs"][0]["slice_axis"] is None
    assert "integer_atol" not in doc["outputs"][0]
    assert doc["budget"] == {"min_cosine": 0.999, "top1_agreement": 1.0}
    # Refused before anything is exported, naming the problem.
    for bad, needle in (({"slice_axis": {"y": 2}}, "slice_axis"),
                        ({"slice_axis": {"z": 0}}, "unknown output"),
                        ({"integer_atol": {"y": 1}}, "integer_atol"),
                        ({"budget": {"top1_agreement": 2}}, "top1_agreement"),
                        ({"budget": {"min_snr": 30}}, "min_snr")):
        s = {k: v for k, v in spec.items() if k not in ("slice_axis", "budget")}
        s.update(bad)
        found = problems(s)
        if found:  # caught by the spec check
            assert any(needle in p for p in found), (bad, found)
        else:  # rank and dtype are known once the model ran: the export refuses it
            from etproof.errors import InvalidArgument

            with pytest.raises(InvalidArgument, match=needle):
                export_model(name="bad", out_dir=tmp_path, backend="portable", recipe="fp32",
                             verify=False, **s)
            assert not (tmp_path / "bad").exists()


def test_a_bundle_whose_reference_changed_is_not_reused(test_bundles, tmp_path):
    import shutil

    from etproof.export.cache import bundle_intact

    b = tmp_path / "tiny-portable-fp32"
    shutil.copytree(test_bundles / "tiny-portable-fp32", b)
    assert bundle_intact(b)
    ref = b / "tiny-portable-fp32.goldens" / "case0.ref.float64.y.npy"
    data = bytearray(ref.read_bytes())
    data[-1] ^= 1
    ref.write_bytes(bytes(data))
    assert not bundle_intact(b)


def test_a_reference_that_cannot_be_computed_never_fails_the_export(tmp_path):
    """A model that fixes float32 inside forward exports; its manifest says why it has no
    float64 truth, and no file claims to be one."""
    from etproof.export.pipeline import export_model

    class Fixed(torch.nn.Module):
        def forward(self, x):
            return torch.tanh(x.float() * 2)

    x = torch.randn(1, 4, generator=torch.Generator().manual_seed(3))
    path = export_model(Fixed().eval(), (x,), "fixed", tmp_path, "portable", "fp32", ["x"], ["y"],
                        [("c0", "synthetic", "torch.randn seed 3", (x,))], verify=False)
    doc = read_manifest(path)
    assert doc["references"]["float64"]["captured"] is False
    assert "came back torch.float32" in doc["references"]["float64"]["reason"]
    assert "references" not in doc["goldens"][0]
    assert not list((path / "fixed.goldens").glob("*.ref.*"))


@pytest.mark.parametrize("kind", ["linear", "conv", "pointwise"])
def test_qd8_emulation_is_what_the_lowered_xnnpack_program_computes(kind):
    """XNNPACK's qd8 kernels quantize a linear's input per row, a pointwise convolution's per
    pixel and another convolution's per batch element; the PT2E graph says per tensor. On rows (or images) of very different ranges the
    lowered program matches qd8_emulation to float32 rounding and is far from the per-tensor
    graph: the int8-dynamic emulation a bundle carries is the one XNNPACK computes."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    from etproof.contract.arguments import GoldenCase
    from etproof.export.quantize import quantize

    torch.manual_seed(0)
    if kind == "linear":
        model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 8)).eval()
        x = torch.randn(2, 5, 64) * torch.linspace(0.1, 5, 5).view(1, 5, 1)
    elif kind == "conv":  # one range per image
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                    torch.nn.Conv2d(8, 4, 3)).eval()
        x = torch.randn(3, 3, 12, 12) * torch.tensor([0.1, 1.0, 10.0]).view(3, 1, 1, 1)
    else:  # a 1x1, stride-1, unpadded conv runs as a GEMM over pixels: one range per pixel
        model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1), torch.nn.Hardswish(),
                                    torch.nn.Conv2d(16, 4, 1)).eval()
        x = torch.randn(2, 8, 10, 10) * torch.linspace(0.1, 5, 10).view(1, 1, 10, 1)
    cases = [GoldenCase("c", "synthetic", "test", (x,))]
    ep = torch.export.export(model, (x,))
    ep_q, _, _, emulation, _ = quantize(ep, "xnnpack-int8-dynamic-per-channel", (x,), cases)
    program = to_edge_transform_and_lower(ep_q, partitioner=[XnnpackPartitioner()]).to_executorch()
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    actual = method.execute([x])[0]
    with torch.no_grad():
        qd8 = emulation(x)
        per_tensor = ep_q.module()(x)
    span = float(model(x).abs().max())
    to_qd8 = float((actual - qd8).abs().max()) / span
    to_per_tensor = float((actual - per_tensor).abs().max()) / span
    assert to_qd8 < 1e-5, to_qd8  # float32 accumulation order only
    assert to_per_tensor > 100 * to_qd8, (to_per_tensor, to_qd8)


def test_the_int8_dynamic_emulation_says_what_it_emulates(test_bundles):
    doc = read_manifest(test_bundles / "tiny-xnnpack-int8-dynamic-per-channel")
    ref = doc["references"]["int8-dynamic-per-channel"]
    assert ref["emulates"] == "xnnpack-qd8"
    assert "qd8" in ref["description"]


class _Accumulates(torch.nn.Module):
    """forward adds its input into a registered buffer and returns it (public reports: a running
    total, the shape of a KV cache)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(1, 8))

    def forward(self, x):
        self.total.add_(x)
        return self.total * 1.0


class _CountsInAnAttribute(torch.nn.Module):
    """forward scales its input by how often it was called, counted in a plain Python attribute:
    state the export half cannot see or restore (not a buffer)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * float(self.calls)


def _cases():
    return [(f"seed{s}", "synthetic", f"torch.randn seed {s}",
             (torch.randn(1, 8, generator=torch.Generator().manual_seed(s)),)) for s in (0, 1)]


def test_a_buffer_the_model_writes_starts_every_case_from_its_initial_state(tmp_path):
    """With the state rule, the goldens and the float64 truth of a model that writes a buffer are
    both taken from the initial state (design.md §5, "State"): the check passes, and the manifest
    names the buffer."""
    from etproof.export.pipeline import export_model

    cases = _cases()
    path = export_model(_Accumulates().eval(), cases[0][3], "acc", tmp_path, "portable", "fp32",
                        ["x"], ["y"], cases, verify=False)
    doc = read_manifest(path)
    assert doc["state"] == {"mutable_buffers": ["total"], "per_case": "fresh"}
    for case, (_, _, _, (x,)) in zip(doc["goldens"], cases):
        np.testing.assert_array_equal(_golden(path, doc, case, "y"), x.numpy())  # 0 + x


def test_goldens_from_another_state_than_their_truth_are_refused_naming_the_case(tmp_path):
    """State kept outside the buffers (a Python attribute) is not restored: the float32 goldens
    are taken call after call, the float64 truth from a deep copy after them, so the call count
    differs and the gap is the whole signal, not rounding. The export half refuses the pair
    (stage goldens, kind references-disagree) naming the cases, and writes nothing under the
    bundle's name."""
    from etproof.errors import ReferencesDisagree
    from etproof.export.pipeline import export_model

    cases = _cases()
    with pytest.raises(ReferencesDisagree) as e:
        export_model(_CountsInAnAttribute().eval(), cases[0][3], "cnt", tmp_path, "portable",
                     "fp32", ["x"], ["y"], cases, verify=False)
    assert e.value.stage == "goldens" and e.value.kind == "references-disagree"
    assert "case 'seed0', output 'y'" in e.value.cause, e.value.cause
    assert "float32 rounding explains at most" in e.value.cause
    assert "register that state as a buffer" in e.value.remedy
    assert not (tmp_path / "cnt").exists()


def test_goldens_within_float32_rounding_of_their_truth_pass_the_check(test_bundles):
    """Every test bundle the session exported passed the same check (it would not exist
    otherwise); recomputed here from the files: each float golden within the cap of its
    truth, with room (the largest gap in unit roundoffs of the range is reported on failure)."""
    from etproof.export.references import EXPLAINABLE_ROUNDOFFS, FLOAT32_UNIT_ROUNDOFF

    worst = (0.0, "")
    for manifest in sorted(test_bundles.rglob("*.etproof.json")):
        doc = json.loads(manifest.read_text())
        bundle = manifest.parent
        for case in doc.get("goldens", []):
            truth = case.get("references", {}).get("float64")
            if not truth:
                continue
            for output, ref in truth.items():
                t = np.load(bundle / f"{doc['name']}.goldens" / ref["file"]).astype(np.float64)
                g = _golden(bundle, doc, case, output).astype(np.float64)
                if not np.issubdtype(t.dtype, np.floating) or not t.size:
                    continue
                ok = np.isfinite(t) & np.isfinite(g)
                span = np.abs(t[ok]).max() if ok.any() else 0.0
                if not span:
                    continue
                ulps = np.abs(g[ok] - t[ok]).max() / (FLOAT32_UNIT_ROUNDOFF * span)
                if ulps > worst[0]:
                    worst = (ulps, f"{doc['name']} {case['id']} {output}")
    assert worst[0] <= EXPLAINABLE_ROUNDOFFS, worst
    assert worst[1], "no test bundle carries a float64 truth"


@pytest.mark.parametrize("where", ["tiny-xnnpack-int8-dynamic-per-channel",
                                   "attribution-int8/gelu_mlp-xnnpack-int8-static-per-channel",
                                   "attribution-int8/outlier_mlp-xnnpack-int8-static-per-channel",
                                   # tapped twins: the taps are measured too (attribute judges
                                   # them against the emulation only where the twin matched it)
                                   "attribution-int8/outlier_mlp-xnnpack-int8-static-per-channel/"
                                   "outlier_mlp-xnnpack-int8-static-per-channel.taps",
                                   "attribution-int8/outlier_mlp-xnnpack-int8-dynamic-per-channel/"
                                   "outlier_mlp-xnnpack-int8-dynamic-per-channel.taps"])
def test_an_int8_bundle_records_its_program_against_its_emulation(test_bundles, where):
    """program_at_export: the export half ran the lowered program on every golden case; the same
    program run again here (ExecuTorch's Python runtime) against the emulation's files gives the
    recorded figures and verdict (steps where the output's scale is recorded, else the range)."""
    from executorch.runtime import Runtime

    from etproof.export.references import (
        EXPLAINABLE_ROUNDOFFS,
        FLOAT32_UNIT_ROUNDOFF,
        MATCH_STEPS,
        STEP_ROUNDING,
    )

    bundle = test_bundles / where
    doc = read_manifest(bundle)
    recipe = doc["recipe"]
    x = doc["references"][recipe]["program_at_export"]
    assert x["cases"] == len(doc["goldens"]) and x["machine"]
    method = Runtime.get().load_program(bundle / doc["artifact"]["file"]).load_method("forward")
    gdir = bundle / f"{doc['name']}.goldens"
    worst = {"max_steps": 0.0, "max_range_error": 0.0}
    matched = True
    for case in doc["goldens"]:
        ins = [torch.from_numpy(np.load(gdir / case["inputs"][i["name"]])) for i in doc["inputs"]]
        outs = method.execute(ins)
        emus = _refs(bundle, doc, case, recipe)
        for spec, out in zip(doc["outputs"], outs):
            emu = emus[spec["name"]].astype(np.float64)
            gap = float(np.abs(out.numpy().astype(np.float64) - emu).max())
            scale = (spec.get("quantization") or {}).get("scale")
            if scale:
                worst["max_steps"] = max(worst["max_steps"], gap / scale)
                matched &= gap / scale <= MATCH_STEPS + STEP_ROUNDING
            else:
                rel = gap / float(np.abs(emu).max())
                worst["max_range_error"] = max(worst["max_range_error"], rel)
                matched &= rel <= EXPLAINABLE_ROUNDOFFS * FLOAT32_UNIT_ROUNDOFF
    for key, value in worst.items():
        if key in x:
            assert x[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key
    assert x["matched"] is matched
    if recipe == "int8-dynamic-per-channel":
        assert matched and "max_steps" not in x  # float outputs; XNNPACK computes the emulation


def test_program_at_export_is_validated_by_the_manifest_reader(test_bundles):
    from etproof.errors import ManifestError
    from etproof.manifest import validate

    doc = read_manifest(test_bundles / "tiny-xnnpack-int8-dynamic-per-channel")
    validate(doc)
    for bad, field in [({"cases": 0}, "cases"), ({"max_steps": -1.0}, "max_steps"),
                       ({"matched": "yes"}, "matched"), ({"steps": 1}, "steps")]:
        d = json.loads(json.dumps(doc))
        d["references"]["int8-dynamic-per-channel"]["program_at_export"].update(bad)
        with pytest.raises(ManifestError, match=f"program_at_export.{field}"):
            validate(d)
