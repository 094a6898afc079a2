"""The golden set: op-family inputs reach their stated ranges, MiniLM matches sentence-transformers,
MobileNetV3-Small says its weights are seeded, and golden-set writes one directory with one report.

The full set (every model × every column) is exercised by ``python -m etproof golden-set``; here
two models are exported for two columns, once per session.
"""

from __future__ import annotations

import json

import pytest
import torch

from etproof.goldens import ops

PAIRS = [("portable", "fp32"), ("xnnpack", "fp32")]
EXPORTED = ["op_conv2d", "mobilenet_v3_small"]


def _inputs(op) -> dict[str, torch.Tensor]:
    """Input name -> every case's tensor of that input, concatenated (flattened)."""
    cases = ops.golden_inputs(op)
    return {n: torch.cat([c[3][i].reshape(-1) for c in cases]) for i, n in enumerate(op.inputs)}


def test_at_least_twelve_op_families_each_its_own_golden():
    names = [op.name for op in ops.OPS]
    assert len(names) >= 12 and len(set(names)) == len(names)
    for family in ("conv2d", "depthwise_conv2d", "linear", "matmul", "add_mul", "activations",
                   "softmax", "layer_norm", "batch_norm", "pooling", "mean", "upsample",
                   "concat_reshape_permute"):
        assert ops.PREFIX + family in names


@pytest.mark.parametrize("op", ops.OPS, ids=lambda o: o.name)
def test_op_inputs_reach_their_stated_range(op):
    cases = ops.golden_inputs(op)
    assert len(cases) >= 2
    for cid, data, origin, tensors in cases:
        assert data == "synthetic" and origin, cid
        assert all(torch.isfinite(t).all() for t in tensors)
    assert set(op.reaches) == set(op.inputs), "every input states its range"
    for name, x in _inputs(op).items():
        lo, hi = op.reaches[name]
        assert x.min() < lo and x.max() > hi, (name, float(x.min()), float(x.max()))


def test_activation_inputs_cover_every_region():
    x = _inputs(ops.BY_NAME["op_activations"])["x"]
    assert (x > 3).sum() >= 100 and (x < -3).sum() >= 100  # hardswish's linear / zero regions
    assert ((x > -3) & (x < 3)).sum() >= 100  # its transition (and relu6's, above 6: below)
    assert (x > 6).sum() >= 50  # relu6 saturated
    assert (x < -5).sum() >= 50 and (x > 5).sum() >= 50  # gelu's and sigmoid's tails


def test_softmax_sees_large_logits():
    x = _inputs(ops.BY_NAME["op_softmax"])["x"]
    assert x.max() > 88 and x.min() < -88  # exp() overflows float32 past ~88.7
    assert (x.abs() > 50).sum() >= 50


def test_batch_norm_has_nontrivial_running_stats():
    bn = ops.build_model(ops.BY_NAME["op_batch_norm"]).layers["bn"]
    assert not bn.training
    assert bn.running_mean.abs().max() > 1.0
    assert (bn.running_var - 1).abs().max() > 0.5 and bn.running_var.min() > 0
    assert (bn.weight - 1).abs().max() > 0.1 and bn.bias.abs().max() > 0.1


def test_layer_norm_sees_a_large_mean():
    cases = ops.golden_inputs(ops.BY_NAME["op_layer_norm"])
    x = cases[0][3][0]
    assert x.mean() > 90 and x.std() < 2  # large mean against a small spread


def test_op_weights_recorded_where_there_are_weights():
    for op in ops.OPS:
        s = ops.spec(op)
        has_params = any(True for _ in s["model"].parameters())
        assert ("weights" in s) == has_params, op.name
        if has_params:
            assert s["weights"]["kind"] == "seeded"


@pytest.fixture(scope="module")
def minilm_model():
    from etproof.goldens import minilm

    return minilm.build_model()


def test_minilm_embedding_is_unit_norm_and_matches_sentence_transformers(minilm_model):
    from etproof.goldens import minilm

    st = pytest.importorskip("sentence_transformers")
    cases = minilm.golden_inputs()
    assert [c[1] for c in cases] == ["real"] * len(minilm.SENTENCES)
    with torch.no_grad():
        mine = torch.cat([minilm_model(*c[3]) for c in cases])
    assert mine.shape == (len(cases), 384) and mine.dtype == torch.float32
    torch.testing.assert_close(mine.norm(dim=1), torch.ones(len(cases)), atol=1e-5, rtol=0)
    ref = st.SentenceTransformer(str(minilm.model_dir()), device="cpu").encode(
        [s for _, s in minilm.SENTENCES], convert_to_tensor=True)
    torch.testing.assert_close(mine, ref.float(), atol=1e-5, rtol=1e-4)
    assert (mine @ mine.T).fill_diagonal_(0).max() < 0.9  # five different sentences


def test_minilm_inputs_are_padded_token_ids_with_a_mask():
    from etproof.goldens import minilm

    ids, mask = minilm.tokenize("A cat.")
    assert ids.shape == mask.shape == (1, minilm.SEQ_LEN) and ids.dtype == torch.int64
    assert ids[0, 0] == 101 and mask.sum() == 5  # [CLS] a cat . [SEP]
    assert (ids[0, 5:] == 0).all() and (mask[0, 5:] == 0).all()


def test_dynamic_minilm_goldens_cover_its_sequence_range(minilm_model):
    """The dynamic-sequence MiniLM: goldens at the Dim's minimum (the shortest sentence), at each
    sentence's own length, and at its maximum (the longest, padded); a sentence's embedding does
    not depend on its padding (the mask removes it), so padded and unpadded agree."""
    from etproof.contract import userspec
    from etproof.goldens import minilm

    spec = minilm.dynamic_spec()
    assert userspec.problems(spec) == []
    seq = spec["dynamic_shapes"]["input_ids"][1]
    assert spec["dynamic_shapes"]["attention_mask"][1] is seq  # one Dim, shared
    lengths = sorted(c[3][0].shape[1] for c in spec["golden_inputs"])
    assert lengths[0] == seq.min and lengths[-1] == seq.max == minilm.SEQ_LEN
    assert len(set(lengths)) >= 3
    cases = {c[0]: c[3] for c in spec["golden_inputs"]}
    padded = next(k for k in cases if k.endswith("_padded"))
    with torch.no_grad():
        torch.testing.assert_close(minilm_model(*cases[padded]),
                                   minilm_model(*cases[padded.removesuffix("_padded")]),
                                   atol=1e-6, rtol=0)


def test_mobilenet_v3_small_is_torchvisions_architecture():
    from etproof.goldens import mobilenet_v3_small as mb

    m = mb.build_model()
    assert sum(p.numel() for p in m.parameters()) == 2_542_856  # torchvision's count
    sd = m.state_dict()
    assert "features.1.block.1.fc1.weight" in sd and "classifier.3.weight" in sd
    assert sum(isinstance(x, torch.nn.Hardswish) for x in m.modules()) >= 10
    assert sum(isinstance(x, torch.nn.Hardsigmoid) for x in m.modules()) == 9  # one per SE


@pytest.fixture(scope="module")
def golden_set(tmp_path_factory):
    from etproof.goldens.golden_set import run_golden_set

    out = tmp_path_factory.mktemp("golden-set")
    logs: list[str] = []
    # two models in two export processes, as setup.sh exports the golden set (--jobs)
    report = run_golden_set(out, only=EXPORTED, pairs=PAIRS, log=logs.append, jobs=2)
    return out, report, logs


def test_golden_set_writes_every_bundle_and_one_report(golden_set):
    out, report, _ = golden_set
    bundles = out / "bundles"
    doc = json.loads((bundles / "export-report.json").read_text())
    got = {(r["model"], r["backend"], r["recipe"]): r["status"] for r in doc["results"]}
    assert got == {(m, b, r): "exported" for m in EXPORTED for b, r in PAIRS}
    for m in EXPORTED:
        for b, r in PAIRS:
            assert (bundles / f"{m}-{b}-{r}" / f"{m}-{b}-{r}.etproof.json").is_file()


def test_models_exported_at_once_keep_every_stamp_and_the_report_order(golden_set):
    """--jobs: the processes write one stamps file; each bundle's entry survives the others'
    (cache.record_stamp), and the results come in model_keys() order, one log line a bundle."""
    from etproof.export.cache import load_stamps
    from etproof.goldens.golden_set import model_keys

    out, report, logs = golden_set
    names = {f"{m}-{b}-{r}" for m in EXPORTED for b, r in PAIRS}
    stamps = load_stamps(out / "bundles")
    assert names <= set(stamps), sorted(names - set(stamps))
    assert all(stamps[n]["result"]["status"] == "exported" for n in names)
    order = [k for k in model_keys() if k in EXPORTED]
    assert [r["model"] for r in report["results"]] == [m for m in order for _ in PAIRS]
    assert sum(line.endswith(" s") and ": exported in " in line for line in logs) == len(names)
    assert logs[-1].endswith("2 export processes)"), logs[-1]


def test_golden_set_refuses_no_export_process(tmp_path):
    from etproof.errors import InvalidArgument
    from etproof.goldens.golden_set import run_golden_set

    with pytest.raises(InvalidArgument, match="at least one export process"):
        run_golden_set(tmp_path, only=EXPORTED, pairs=PAIRS, jobs=0)


def test_mobilenet_manifest_says_weights_seeded(golden_set):
    from etproof.manifest import read_manifest

    out, _, _ = golden_set
    doc = read_manifest(out / "bundles" / "mobilenet_v3_small-xnnpack-fp32")
    assert doc["weights"]["kind"] == "seeded"
    assert "torchvision" in doc["weights"]["source"]
    data = [g["data"] for g in doc["goldens"]]
    assert data.count("real") == 6 and data.count("synthetic") == 1
    assert doc["delegates"] == ["XnnpackBackend"]
    conv = read_manifest(out / "bundles" / "op_conv2d-portable-fp32")
    assert conv["weights"]["kind"] == "seeded" and conv["delegates"] == []


def test_golden_set_rerun_is_cached(golden_set):
    from etproof.goldens.golden_set import run_golden_set

    out, first, _ = golden_set
    logs: list[str] = []
    again = run_golden_set(out, only=EXPORTED, pairs=PAIRS, log=logs.append)
    assert again["results"] == first["results"]
    assert sum("up to date" in line for line in logs) == len(EXPORTED) * len(PAIRS)
    assert again["seconds"] < 30


def test_bundles_up_to_date_elsewhere_are_copied(golden_set, tmp_path):
    from etproof.export.runner import export_pairs

    out, _, _ = golden_set

    def never():
        raise AssertionError("exported instead of copied")

    logs: list[str] = []
    results = export_pairs(never, "op_conv2d", PAIRS, tmp_path, log=logs.append,
                           reuse_from=out / "bundles")
    assert [r["status"] for r in results] == ["exported"] * len(PAIRS)
    assert all("copied" in line for line in logs), logs
    assert (tmp_path / "op_conv2d-xnnpack-fp32" / "op_conv2d-xnnpack-fp32.pte").is_file()


def test_weights_field_is_checked_by_the_model_dict_contract():
    from etproof.contract import userspec

    spec = ops.spec(ops.BY_NAME["op_conv2d"])
    assert userspec.problems(spec) == []
    for bad in ({"kind": "random", "source": "x"}, {"kind": "seeded"}, "seeded"):
        found = userspec.problems({**spec, "weights": bad})
        assert any("weights" in p for p in found), (bad, found)


def test_golden_xfail_records_name_golden_models_and_columns_of_the_set():
    """data/golden-xfail.json: every record is about a golden model and a column the golden set
    exports, with its measurement in the reason (docs/xfail.md); the golden set writes it merged
    with the demo's records."""
    from etproof.demo.demo import demo_pairs
    from etproof.goldens.golden_set import GOLDEN_XFAIL, model_keys

    doc = json.loads(GOLDEN_XFAIL.read_text(encoding="utf-8"))
    keys = set(model_keys())
    pairs = set(demo_pairs(True))
    seen = set()
    for r in doc["records"]:
        assert r["model"] in keys, r
        assert (r["backend"], r["recipe"]) in pairs, r
        assert r["half"] in ("export", "runtime") and r["reason"] and r["recorded"]
        key = (r["model"], r["backend"], r["recipe"], r["half"])
        assert key not in seen, f"second record for {key}"
        seen.add(key)


def test_golden_set_xfail_file_merges_demo_and_golden_records(tmp_path):
    from etproof.demo.demo import DEMO_XFAIL, write_xfail
    from etproof.goldens.golden_set import GOLDEN_XFAIL

    records = write_xfail(tmp_path, (DEMO_XFAIL, GOLDEN_XFAIL))
    want = (json.loads(DEMO_XFAIL.read_text())["records"]
            + json.loads(GOLDEN_XFAIL.read_text())["records"])
    assert records == want
    assert json.loads((tmp_path / "xfail.json").read_text())["records"] == want


def test_quick_set_names_supported_columns_and_golden_models():
    """The quick demo and golden set (./setup.sh without --full) are subsets of the full ones, so a
    renamed column or model cannot silently drop out of the main job."""
    from etproof.contract.recipes import supported_pairs
    from etproof.demo.demo import QUICK_PAIRS, demo_pairs
    from etproof.goldens.golden_set import QUICK_MODELS, model_keys

    assert set(QUICK_PAIRS) <= set(supported_pairs())
    assert demo_pairs(quick=True) == [p for p in demo_pairs() if p in QUICK_PAIRS]
    assert set(QUICK_MODELS) <= set(model_keys())
    # the demo's recorded expected failure stays in the quick set (matrix tests judge it)
    assert ("xnnpack", "int8-static-per-channel") in QUICK_PAIRS


def test_quick_golden_set_leaves_out_the_slow_models_and_says_so(tmp_path):
    from etproof.goldens.golden_set import run_golden_set

    logs: list[str] = []
    report = run_golden_set(tmp_path, only=["minilm_l6_v2", "tinyllama"], quick=True,
                            log=logs.append)
    assert report["results"] == []
    said = next(line for line in logs if line.startswith("quick golden set:"))
    assert "minilm_l6_v2" in said and "tinyllama" in said, said
    assert json.loads((tmp_path / "bundles" / "export-report.json").read_text())["results"] == []
    # no record of a model the directory does not hold (it would be listed as stale: "remove it")
    kept = json.loads((tmp_path / "bundles" / "xfail.json").read_text())["records"]
    assert not [r for r in kept if r.get("model") in ("minilm_l6_v2", "tinyllama")], kept


def test_golden_set_keeps_the_xfail_records_of_the_models_it_holds(tmp_path):
    from etproof.demo.demo import DEMO_XFAIL, write_xfail
    from etproof.goldens.golden_set import GOLDEN_XFAIL

    records = write_xfail(tmp_path, (DEMO_XFAIL, GOLDEN_XFAIL), models={"op_layer_norm"})
    assert records and {r.get("model") for r in records} <= {"op_layer_norm", None}
