"""The tapped twin (issue 13 §1, etproof.export.taps, docs/manifest.md "The tapped twin"): real exports
of the attribution model (etproof.fixtures.attribution), each bundle exported once per module.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_taps.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from etproof.export import cache
from etproof.export.bundle import file_ref
from etproof.errors import InvalidArgument, ManifestError
from etproof.export.pipeline import export_model
from etproof.manifest import read_manifest, validate
from etproof.fixtures import attribution
from etproof.export.runner import export_pairs
from etproof.export.taps import DEFAULT_CAP, eligible_nodes, spaced_indices, twin_name
from etproof.export.toolchain import program_calls


F32_EPS = float(np.finfo(np.float32).eps)
PAIRS = [("portable", "fp32"), ("xnnpack", "fp32")]


def _name(backend: str, recipe: str = "fp32") -> str:
    return f"gelu_mlp-{backend}-{recipe}"


@pytest.fixture(scope="module")
def tapped(tmp_path_factory):
    """{backend: bundle path} of the attribution model exported with taps=True."""
    out = tmp_path_factory.mktemp("taps")
    return {b: export_model(name=_name(b, r), out_dir=out, backend=b, recipe=r, taps=True,
                            **attribution.spec()) for b, r in PAIRS}


@pytest.fixture(scope="module")
def untapped_xnnpack(tmp_path_factory):
    """The xnnpack/fp32 bundle of the same model exported without taps."""
    out = tmp_path_factory.mktemp("notaps")
    return export_model(name=_name("xnnpack"), out_dir=out, backend="xnnpack", recipe="fp32",
                        **attribution.spec())


@pytest.fixture(scope="module")
def two_taps(tmp_path_factory):
    """The portable/fp32 bundle exported with taps=2."""
    out = tmp_path_factory.mktemp("taps2")
    return export_model(name=_name("portable"), out_dir=out, backend="portable", recipe="fp32",
                        taps=2, **attribution.spec())


def _twin(bundle: Path) -> Path:
    return bundle / twin_name(bundle.name)


def _npy(bundle: Path, doc: dict, fn: str) -> np.ndarray:
    return np.load(bundle / f"{doc['name']}.goldens" / fn)


def _eager_module_outputs(x: torch.Tensor) -> dict:
    """Each top-level module's output of the eager model on ``x`` (forward hooks)."""
    model = attribution.build_model()
    seen = {}
    for mname, mod in model.named_children():
        mod.register_forward_hook(lambda _m, _i, out, mname=mname: seen.__setitem__(mname, out))
    with torch.no_grad():
        model(x)
    return seen


def _line_of(path: Path, needle: str) -> tuple[int, str]:
    """(1-based line number, stripped text) of the one line of ``path`` containing ``needle``."""
    hits = [(i + 1, t.strip()) for i, t in enumerate(path.read_text().splitlines())
            if needle in t]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.mark.parametrize("backend", [b for b, _ in PAIRS])
def test_the_twin_is_a_bundle_inside_the_bundle(tapped, backend):
    bundle = tapped[backend]
    name = bundle.name
    twin = _twin(bundle)
    assert sorted(p.name for p in bundle.iterdir()) == sorted(
        [f"{name}.pte", f"{name}.etproof.json", f"{name}.goldens", f"{name}.taps"])
    assert sorted(p.name for p in twin.iterdir()) == sorted(
        [f"{name}.taps.pte", f"{name}.taps.etproof.json", f"{name}.taps.goldens"])
    assert not [p for p in bundle.parent.iterdir() if p.name.startswith(".")]  # no staging left
    assert cache.bundle_intact(bundle) and cache.bundle_intact(twin)


@pytest.mark.parametrize("backend", [b for b, _ in PAIRS])
def test_the_twin_manifest_validates_and_follows_the_shipped_one(tapped, backend):
    bundle = tapped[backend]
    doc, tdoc = read_manifest(bundle), read_manifest(_twin(bundle))
    assert tdoc["name"] == twin_name(doc["name"]) and "taps" not in doc
    for key in ("model", "backend", "recipe", "precision", "inputs", "schema_version", "weights"):
        assert tdoc[key] == doc[key], key
    assert tdoc["taps"]["of"] == {"name": doc["name"],
                                  "artifact_sha256": doc["artifact"]["sha256"]}
    delegates, operators = program_calls((_twin(bundle) / tdoc["artifact"]["file"]).read_bytes())
    assert (tdoc["delegates"], tdoc["operators"]) == (delegates, operators)
    assert tdoc["artifact"] == file_ref(_twin(bundle) / f"{tdoc['name']}.pte")
    # the model's outputs first, then one per tap, in order
    points = tdoc["taps"]["points"]
    assert tdoc["outputs"][:len(doc["outputs"])] == doc["outputs"]
    assert [o["name"] for o in tdoc["outputs"][len(doc["outputs"]):]] == [
        p["output"] for p in points] == [f"tap.{i:03d}" for i in range(len(points))]
    assert [p["index"] for p in points] == list(range(len(points)))
    # same cases, same inputs (byte for byte)
    assert [g["id"] for g in tdoc["goldens"]] == [g["id"] for g in doc["goldens"]]
    for g, tg in zip(doc["goldens"], tdoc["goldens"]):
        for inp, fn in g["inputs"].items():
            assert (np.array_equal(_npy(bundle, doc, fn),
                                   _npy(_twin(bundle), tdoc, tg["inputs"][inp])))


@pytest.mark.parametrize("backend", [b for b, _ in PAIRS])
def test_points_are_in_graph_order_with_module_and_source(tapped, backend):
    tdoc = read_manifest(_twin(tapped[backend]))
    taps = tdoc["taps"]
    model = attribution.build_model()
    modules = [n for n, _ in model.named_children()]
    ep = torch.export.export(model, attribution.golden_inputs()[0][3])
    elig = eligible_nodes(ep)
    assert taps["selection"] == "every" and taps["eligible"] == len(elig) <= DEFAULT_CAP
    assert [p["node"] for p in taps["points"]] == [n.name for n in elig]
    assert [p["op"] for p in taps["points"]] == [str(n.target) for n in elig]
    assert [p["module_path"] for p in taps["points"]] == modules
    assert [p["module_class"] for p in taps["points"]] == [
        type(m).__name__ for _, m in model.named_children()]
    gelu = next(p for p in taps["points"] if p["module_class"] == "GELU")
    assert gelu["op"] == "aten.gelu.default"
    src_file = Path(attribution.__file__)
    line, code = _line_of(src_file, "self.act(")
    assert gelu["source"]["line"] == line and gelu["source"]["code"] == code
    assert gelu["source"]["file"].endswith("etproof/fixtures/attribution.py")
    assert Path(gelu["source"]["file"]).resolve() == src_file.resolve()
    # relative to the current directory when under it
    if src_file.resolve().is_relative_to(Path.cwd().resolve()):
        assert not Path(gelu["source"]["file"]).is_absolute()


def test_delegation_facts(tapped):
    p = read_manifest(_twin(tapped["portable"]))["taps"]
    assert p["delegate_calls"] == {"shipped": 0, "twin": 0}
    assert p["delegation_matches"] is True
    assert not any(pt["delegated"] for pt in p["points"])
    assert all(pt["delegation_matches"] for pt in p["points"])
    x = read_manifest(_twin(tapped["xnnpack"]))
    shipped = read_manifest(tapped["xnnpack"])
    assert x["delegates"] == shipped["delegates"] == ["XnnpackBackend"]
    assert x["taps"]["delegate_calls"]["shipped"] >= 1 and x["taps"]["delegate_calls"]["twin"] >= 1
    assert all(pt["delegated"] for pt in x["taps"]["points"])  # the whole MLP is delegated
    assert x["taps"]["delegation_matches"] is True


@pytest.mark.parametrize("backend", [b for b, _ in PAIRS])
def test_goldens_are_the_tapped_values_and_float64_references_cover_every_output(tapped,
                                                                               backend):
    bundle, twin = tapped[backend], _twin(tapped[backend])
    doc, tdoc = read_manifest(bundle), read_manifest(twin)
    assert tdoc["references"]["float64"]["captured"] is True
    points = {p["output"]: p for p in tdoc["taps"]["points"]}
    for g, tg in zip(doc["goldens"], tdoc["goldens"]):
        x = torch.from_numpy(_npy(twin, tdoc, tg["inputs"]["x"]))
        eager = _eager_module_outputs(x)
        assert sorted(tg["references"]["float64"]) == sorted(o["name"] for o in tdoc["outputs"])
        for spec in tdoc["outputs"]:
            o = spec["name"]
            gold = _npy(twin, tdoc, tg["outputs"][o])
            assert gold.dtype == np.float32 and list(gold.shape) == spec["shape"]
            want = (_npy(bundle, doc, g["outputs"][o]) if o in g["outputs"]
                    else eager[points[o]["module_path"]].numpy())
            scale = max(float(np.abs(want).max()), 1e-6)
            assert np.allclose(gold, want, rtol=0, atol=4 * F32_EPS * scale), o
            ref = tg["references"]["float64"][o]
            assert file_ref(twin / f"{tdoc['name']}.goldens" / ref["file"]) == ref
            r64 = _npy(twin, tdoc, ref["file"])
            assert r64.dtype == np.float64 and r64.shape == gold.shape
            assert np.allclose(r64, gold, rtol=0, atol=64 * F32_EPS * scale), o


def test_the_twin_runs_and_shows_where_xnnpack_departs(tapped):
    """ExecuTorch's Python runtime on each twin: on portable every tap agrees with its golden to
    float32 rounding; on xnnpack fc1's tap does and the GELU's does not (XNNPACK computes the erf
    GELU where the model asks for the tanh approximation)."""
    from executorch.runtime import Runtime

    rt = Runtime.get()
    worst: dict = {}
    for backend, bundle in tapped.items():
        twin = _twin(bundle)
        tdoc = read_manifest(twin)
        method = rt.load_program(str(twin / tdoc["artifact"]["file"])).load_method("forward")
        names = [o["name"] for o in tdoc["outputs"]]
        by_module = {p["output"]: p["module_path"] for p in tdoc["taps"]["points"]}
        for g in tdoc["goldens"]:
            outs = method.execute([torch.from_numpy(_npy(twin, tdoc, g["inputs"]["x"]))])
            for o, got in zip(names, outs):
                gold = _npy(twin, tdoc, g["outputs"][o])
                err = float(np.abs(got.numpy() - gold).max()) / float(np.abs(gold).max())
                key = (backend, by_module.get(o, o))
                worst[key] = max(worst.get(key, 0.0), err)
    tol = 8 * F32_EPS
    assert all(err <= tol for (b, _), err in worst.items() if b == "portable"), worst
    assert worst[("xnnpack", "fc1")] <= tol, worst
    assert worst[("xnnpack", "act")] > 10 * tol, worst


def test_the_shipped_bundle_is_the_same_with_and_without_taps(tapped, untapped_xnnpack):
    with_taps, without = tapped["xnnpack"], untapped_xnnpack
    name = with_taps.name
    files = sorted(p.relative_to(without) for p in without.rglob("*") if p.is_file())
    files_t = sorted(p.relative_to(with_taps) for p in with_taps.rglob("*") if p.is_file()
                     and not p.relative_to(with_taps).parts[0] == twin_name(name))
    assert files == files_t
    for rel in files:
        if rel.name == f"{name}.etproof.json":
            continue
        assert (with_taps / rel).read_bytes() == (without / rel).read_bytes(), rel
    a, b = (json.loads((p / f"{name}.etproof.json").read_text()) for p in (with_taps, without))
    a.pop("created_utc"), b.pop("created_utc")
    assert a == b
    assert ".taps" not in (with_taps / f"{name}.etproof.json").read_text()


def test_taps_n_gives_n_evenly_spaced_points_ending_at_the_last(tapped, two_taps):
    every = read_manifest(_twin(tapped["portable"]))["taps"]
    doc = read_manifest(_twin(two_taps))
    taps = doc["taps"]
    assert taps["selection"] == "spaced" and taps["eligible"] == every["eligible"]
    assert len(taps["points"]) == 2 and len(doc["outputs"]) == 1 + 2
    want = [every["points"][i]["node"] for i in spaced_indices(every["eligible"], 2)]
    assert [p["node"] for p in taps["points"]] == want
    assert taps["points"][-1]["node"] == every["points"][-1]["node"]
    assert all(g["references"]["float64"] for g in doc["goldens"])


def _refused_field(good: dict):
    """broken(edit): the field validate() names for a copy of ``good`` with ``edit`` applied
    (it must refuse it)."""
    def broken(edit) -> str:
        doc = copy.deepcopy(good)
        edit(doc)
        with pytest.raises(ManifestError) as ei:
            validate(doc)
        return ei.value.field
    return broken


def test_the_validator_refuses_a_broken_taps_object(tapped):
    broken = _refused_field(read_manifest(_twin(tapped["xnnpack"])))

    assert broken(lambda d: d["taps"]["points"][0].update(index=3)) == "taps.points[0].index"
    assert broken(lambda d: d["taps"]["points"][1].update(output="tap.7")) == \
        "taps.points[1].output"
    assert broken(lambda d: d["taps"].pop("of")) == "taps.of"
    assert broken(lambda d: d["taps"].update(selection="some")) == "taps.selection"
    assert broken(lambda d: d["taps"]["points"][0]["source"].update(line=0)) == \
        "taps.points[0].source.line"
    assert broken(lambda d: d["taps"]["points"][0].update(delegated="yes")) == \
        "taps.points[0].delegated"
    assert broken(lambda d: d["taps"].update(eligible=1)) == "taps.points"
    assert broken(lambda d: d.update(name="other.taps")) == "name"
    assert broken(lambda d: d["taps"].update(extra=1)) == "taps.extra"


def test_the_cache_re_exports_when_taps_are_asked_for(tmp_path):
    lines: list = []
    pairs = [("portable", "fp32")]
    name = _name("portable")
    export_pairs(attribution.spec, "gelu_mlp", pairs, tmp_path, log=lines.append)
    assert not _twin(tmp_path / name).exists()
    lines.clear()
    export_pairs(attribution.spec, "gelu_mlp", pairs, tmp_path, log=lines.append, taps=True)
    assert not any("up to date" in line for line in lines), lines
    assert cache.bundle_intact(_twin(tmp_path / name))
    lines.clear()
    export_pairs(attribution.spec, "gelu_mlp", pairs, tmp_path, log=lines.append, taps=True)
    assert any("up to date" in line for line in lines), lines
    # a twin edited after export makes the bundle stale
    (_twin(tmp_path / name) / f"{name}.taps.pte").write_bytes(b"edited")
    assert not cache.bundle_intact(tmp_path / name)


class _BranchesOnDtype(torch.nn.Module):
    """Linear -> *2, and between them, only in float64, relu(h) - relu(-h) (h itself, exactly):
    the float64 program's nodes do not correspond one to one to the float32 program's, while its
    outputs are the same model's (a float64 program that computed another function would be
    refused at export: its truth would disagree with the golden, references.inconsistent_cases)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        if h.dtype == torch.float64:
            h = torch.relu(h) - torch.relu(-h)
        return h * 2


def test_a_float64_program_that_does_not_correspond_is_recorded_not_fatal(tmp_path):
    x = torch.randn(1, 4, generator=torch.Generator().manual_seed(5))
    bundle = export_model(_BranchesOnDtype().eval(), (x,), "branches", tmp_path, "portable", "fp32",
                          ["x"], ["y"], [("c0", "synthetic", "torch.randn seed 5", (x,))],
                          taps=True)
    tdoc = read_manifest(_twin(bundle))
    rec = tdoc["references"]["float64"]
    assert rec["captured"] is False and "correspond" in rec["reason"], rec
    assert all("references" not in g for g in tdoc["goldens"])
    assert len(tdoc["taps"]["points"]) == tdoc["taps"]["eligible"] >= 2


# ---- taps_range, feeds, eligible_index, exported_from (attribute --bisect and --output) ---------

class _TwoHeads(torch.nn.Module):
    """A trunk, then two heads: ``a`` from the trunk through tanh, ``b`` from the trunk through a
    second linear. The trunk reaches both outputs; each head's nodes reach one."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.trunk = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        h = torch.relu(self.trunk(x))
        return torch.tanh(h), self.head(h)


def test_output_feeds_follows_the_graph_to_each_output():
    from etproof.export.taps import output_feeds

    x = torch.randn(1, 4)
    ep = torch.export.export(_TwoHeads().eval(), (x,))
    feeds = output_feeds(ep, ["a", "b"])
    by_op = {}
    for n in eligible_nodes(ep):
        by_op.setdefault(str(n.target), []).append(feeds[n.name])
    assert by_op["aten.tanh.default"] == [["a"]]
    assert by_op["aten.relu.default"] == [["a", "b"]]
    assert by_op["aten.linear.default"] == [["a", "b"], ["b"]]  # the trunk, then the head
    with pytest.raises(RuntimeError, match="user outputs"):
        output_feeds(ep, ["a"])


def test_a_narrowed_twin_taps_only_its_range_and_records_it(tmp_path, tapped):
    every = read_manifest(_twin(tapped["xnnpack"]))["taps"]
    path = export_model(name=_name("xnnpack"), out_dir=tmp_path, backend="xnnpack",
                        recipe="fp32", taps=True, taps_range=(1, 3),
                        taps_from="etproof.fixtures.attribution:spec", **attribution.spec())
    doc = read_manifest(_twin(path))
    taps = doc["taps"]
    assert taps["range"] == [1, 3] and taps["selection"] == "every"
    assert taps["exported_from"] == "etproof.fixtures.attribution:spec"
    assert [p["eligible_index"] for p in taps["points"]] == [1, 2, 3]
    assert [p["node"] for p in taps["points"]] == [p["node"] for p in every["points"][1:4]]
    assert all(p["feeds"] == ["y"] for p in taps["points"])
    # the shipped program is the one a whole-program twin's bundle ships
    assert read_manifest(path)["artifact"] == read_manifest(tapped["xnnpack"])["artifact"]
    # every point of the whole twin carries its eligible index: its position
    assert [p["eligible_index"] for p in every["points"]] == list(range(every["eligible"]))


# A range past the program's eligible nodes, known once torch.export has run (the refusals before
# it: unit/test_taps.py).
@pytest.mark.parametrize("taps, taps_range, match", [
    (True, (0, 99), "not inside the program's 5 eligible nodes"),
])
def test_a_bad_taps_range_is_refused_before_anything_is_written(tmp_path, taps, taps_range,
                                                                 match):
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument, match=match):
        export_model(name="refused", out_dir=out, backend="portable", recipe="fp32", taps=taps,
                     taps_range=taps_range, **attribution.spec())
    assert not (out / "refused").exists()


def test_the_validator_checks_range_eligible_index_and_feeds(tapped):
    broken = _refused_field(read_manifest(_twin(tapped["xnnpack"])))

    assert broken(lambda d: d["taps"].update(range=[2, 9])) == "taps.range[1]"
    assert broken(lambda d: d["taps"].update(range=[2])) == "taps.range"
    # selection "every" over a range must tap each node in it
    assert broken(lambda d: d["taps"].update(range=[0, 1])) == "taps.points"
    assert broken(lambda d: d["taps"]["points"][1].update(eligible_index=0)) == \
        "taps.points[1].eligible_index"
    assert broken(lambda d: d["taps"]["points"][0].update(feeds=["tap.001"])) == \
        "taps.points[0].feeds[0]"
    assert broken(lambda d: d["taps"].update(exported_from="")) == "taps.exported_from"


def test_a_bundle_with_external_weights_gets_a_twin_with_its_own_ptd(tmp_path):
    """The twin of a bundle whose weights live in NAME.ptd is complete too: NAME.taps.ptd beside
    its program, listed in its data_files, its weights out of the program, and ExecuTorch's
    runtime reproduces every tap's golden from the two files (to float32 rounding)."""
    from executorch.runtime import Runtime

    from etproof.fixtures import external

    bundle = export_model(name="extweights-xnnpack-fp32", out_dir=tmp_path, backend="xnnpack",
                          recipe="fp32", taps=True, **external.external_weights_spec())
    twin = _twin(bundle)
    doc = read_manifest(twin)
    assert [d["file"] for d in doc["data_files"]] == [f"{twin.name}.ptd"]
    assert doc["data_files"][0] == file_ref(twin / f"{twin.name}.ptd")
    shipped = read_manifest(bundle)
    assert doc["taps"]["delegation_matches"]
    assert (twin / doc["artifact"]["file"]).stat().st_size < \
        (twin / f"{twin.name}.ptd").stat().st_size  # the weights are in the .ptd
    assert shipped["data_files"][0]["file"] == f"{bundle.name}.ptd"
    method = Runtime.get().load_program(twin / doc["artifact"]["file"],
                                        data_path=twin / f"{twin.name}.ptd").load_method("forward")
    names = [o["name"] for o in doc["outputs"]]
    for g in doc["goldens"]:
        outs = method.execute([torch.from_numpy(_npy(twin, doc, g["inputs"]["x"]))])
        for o, got in zip(names, outs):
            gold = _npy(twin, doc, g["outputs"][o])
            assert np.allclose(got.numpy(), gold, rtol=0,
                               atol=64 * F32_EPS * float(np.abs(gold).max())), o
