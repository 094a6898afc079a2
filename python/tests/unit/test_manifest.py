"""The manifest: the fixture, its canonical form, validation, and the writer's output.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_manifest.py."""

import copy
import json

import pytest

from etproof.errors import ManifestError
from etproof.manifest import canonical_dumps, validate

from conftest import FIXTURE


def fixture_doc():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_fixture_round_trips_byte_for_byte():
    raw = FIXTURE.read_bytes()
    doc = json.loads(raw.decode("utf-8"))
    validate(doc)
    assert canonical_dumps(doc).encode("utf-8") == raw


def test_canonical_form():
    text = canonical_dumps({"b": 1, "a": ["é"]})
    assert text == '{\n  "a": [\n    "é"\n  ],\n  "b": 1\n}\n'
    with pytest.raises(ValueError):
        canonical_dumps({"x": float("nan")})


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("artifact"), "artifact"),
    (lambda d: d.__setitem__("schema_version", 3), "schema_version"),
    (lambda d: d.__setitem__("schema_version", True), "schema_version"),
    (lambda d: d.__setitem__("name", "a/b"), "name"),
    (lambda d: d["artifact"].__setitem__("bytes", "5"), "artifact.bytes"),
    (lambda d: d["artifact"].__setitem__("sha256", "XYZ"), "artifact.sha256"),
    (lambda d: d.__setitem__("delegates", ["b", "a"]), "delegates"),
    (lambda d: d["inputs"][0].__setitem__("dtype", "float8"), "inputs[0].dtype"),
    (lambda d: d["outputs"][0].__setitem__("layout", "nchw"), "outputs[0].layout"),
    (lambda d: d["inputs"][0]["shape"].__setitem__(0, -2), "inputs[0].shape[0]"),
    (lambda d: d["goldens"][0].__setitem__("data", "fake"), "goldens[0].data"),
    (lambda d: d["goldens"][0]["inputs"].pop("image"), "goldens[0].inputs.image"),
    (lambda d: d["preprocessing"].__setitem__("mean", [127, 127, 127]), "preprocessing.mean[0]"),
    (lambda d: d["labels"].__setitem__("output", "nope"), "labels.output"),
    (lambda d: d["toolchain"].pop("torchao"), "toolchain.torchao"),
    (lambda d: d.__setitem__("created_utc", "yesterday"), "created_utc"),
    (lambda d: d.__setitem__("created_utc", "2026-13-45T99:99:99Z"), "created_utc"),
    (lambda d: d.__setitem__("created_utc", "2026-02-29T12:00:00Z"), "created_utc"),
    (lambda d: d.__setitem__("guessed", 1), "guessed"),
    (lambda d: d["delegation"]["by_operator"].reverse(), "delegation.by_operator"),
    (lambda d: d["quantization"]["skipped"][0].pop("reason"), "quantization.skipped[0].reason"),
    (lambda d: d["weights"].__setitem__("kind", "random"), "weights.kind"),
    (lambda d: d["weights"].pop("source"), "weights.source"),
    (lambda d: d["weights"].__setitem__("seed", 0), "weights.seed"),
    # references, budget, slice_axis, integer_atol (added within schema 1)
    (lambda d: d["goldens"][0]["references"]["float64"].__setitem__(
        "probs", d["goldens"][0]["references"]["float64"]["logits"]),
     "goldens[0].references.float64.probs"),
    (lambda d: d["goldens"][0]["references"]["float64"]["logits"].__setitem__("file", "../x.npy"),
     "goldens[0].references.float64.logits.file"),
    (lambda d: d["goldens"][0]["references"]["float64"]["logits"].__setitem__("file", "a/x.npy"),
     "goldens[0].references.float64.logits.file"),
    (lambda d: d["goldens"][1]["references"].pop("float64"), "goldens[1].references.float64"),
    (lambda d: d["goldens"][0]["references"].__setitem__(
        "int8-dynamic-per-channel", d["goldens"][0]["references"]["float64"]),
     "goldens[0].references.int8-dynamic-per-channel"),
    (lambda d: d["references"]["float64"].__setitem__("reason", "x"), "references.float64.reason"),
    (lambda d: d["references"]["float64"].__setitem__("captured", "yes"),
     "references.float64.captured"),
    (lambda d: d["references"]["int8-dynamic-per-channel"].pop("reason"),
     "references.int8-dynamic-per-channel.reason"),
    (lambda d: d["references"]["float64"].__setitem__("emulates", "per-row"),
     "references.float64.emulates"),
    (lambda d: d["references"]["int8-dynamic-per-channel"].__setitem__("emulates", "pt2e"),
     "references.int8-dynamic-per-channel.emulates"),
    (lambda d: d["outputs"][0].__setitem__("integer_atol", 1), "outputs[0].integer_atol"),
    (lambda d: d["outputs"][0].__setitem__("slice_axis", 2), "outputs[0].slice_axis"),
    (lambda d: d["outputs"][0].__setitem__("slice_axis", -1), "outputs[0].slice_axis"),
    (lambda d: d["inputs"][0].__setitem__("slice_axis", 0), "inputs[0].slice_axis"),
    (lambda d: d["budget"].__setitem__("top1_agreement", 1.5), "budget.top1_agreement"),
    (lambda d: d["budget"].__setitem__("min_cosine", "high"), "budget.min_cosine"),
    (lambda d: d["budget"].__setitem__("min_snr", 30), "budget.min_snr"),
    (lambda d: d.__setitem__("budget", {}), "budget"),
    # goldens[i].files (added within schema 1): exactly the case's files, each a file_ref
    (lambda d: d["goldens"][0]["files"].pop(), "goldens[0].files"),
    (lambda d: d["goldens"][0]["files"].append(d["goldens"][0]["files"][0]), "goldens[0].files"),
    (lambda d: d["goldens"][0]["files"][0].__setitem__("file", "other.npy"), "goldens[0].files"),
    (lambda d: d["goldens"][0]["files"][0].__setitem__("sha256", "00"),
     "goldens[0].files[0].sha256"),
    (lambda d: d["goldens"][0]["files"][1].pop("bytes"), "goldens[0].files[1].bytes"),
    (lambda d: d["goldens"][0].__setitem__("files", {}), "goldens[0].files"),
    # operators (added within schema 1)
    (lambda d: d["operators"].reverse(), "operators"),
    (lambda d: d["operators"].append(d["operators"][-1]), "operators"),
    (lambda d: d["operators"].__setitem__(0, "add.out"), "operators[0]"),
    (lambda d: d["operators"].__setitem__(0, "aten::add out"), "operators[0]"),
    (lambda d: d["operators"].__setitem__(0, 3), "operators[0]"),
    (lambda d: d.__setitem__("operators", "aten::add.out"), "operators"),
])
def test_validate_names_the_field(mutate, field):
    doc = fixture_doc()
    mutate(doc)
    with pytest.raises(ManifestError) as e:
        validate(doc)
    assert e.value.field == field
    assert f"'{field}'" in str(e.value)
    assert "remedy:" in str(e.value)


def test_optional_fields_may_be_absent():
    doc = fixture_doc()
    for k in ("delegation", "quantization", "preprocessing", "labels", "weights", "references",
              "budget", "operators"):
        doc.pop(k)
    for g in doc["goldens"]:
        g.pop("references")
    doc["outputs"][0].pop("slice_axis")
    validate(copy.deepcopy(doc))


def test_integer_options_and_null_slice_axis_are_accepted():
    doc = fixture_doc()
    doc["outputs"][0]["slice_axis"] = None  # null: do not slice
    validate(copy.deepcopy(doc))
    doc["outputs"][0]["dtype"] = "int64"
    doc["outputs"][0]["integer_atol"] = 1
    validate(copy.deepcopy(doc))


def test_output_quantization_is_optional_and_checked():
    """outputs[i].quantization (within schema 1): scale > 0, integer zero point, int8/uint8."""
    with open(FIXTURE) as f:
        doc = json.load(f)
    good = copy.deepcopy(doc)
    good["outputs"][0]["quantization"] = {"scale": 0.0625, "zero_point": -3, "dtype": "int8"}
    validate(good)
    assert json.loads(canonical_dumps(good)) == good
    for bad, field in ((dict(scale=0.0, zero_point=0, dtype="int8"), "scale"),
                       (dict(scale=0.1, zero_point=0.5, dtype="int8"), "zero_point"),
                       (dict(scale=0.1, zero_point=0, dtype="int4"), "dtype"),
                       (dict(scale=0.1, zero_point=0), "dtype")):
        d = copy.deepcopy(doc)
        d["outputs"][0]["quantization"] = bad
        with pytest.raises(ManifestError) as e:
            validate(d)
        assert e.value.field == f"outputs[0].quantization.{field}"
    d = copy.deepcopy(doc)
    d["inputs"][0]["quantization"] = {"scale": 0.1, "zero_point": 0, "dtype": "int8"}
    with pytest.raises(ManifestError):
        validate(d)
