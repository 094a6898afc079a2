"""Programs with several methods (issue 10): a model spec's ``methods`` exports each method and
lowers them into one program; its manifest is schema_version 2 (docs/manifest.md, "Programs
with several methods"). Real exports (the test bundles' methods/ directory,
etproof.fixtures.methods) run in ExecuTorch's Python runtime; the C++ half's side is
cpp/tests/bundle_test.cpp and cli_test.cpp ("Methods").

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_methods.py."""

import copy
import json

import pytest
import torch

from conftest import FIXTURE, FIXTURE_V2
from etproof.contract import userspec
from etproof.errors import InvalidArgument, ManifestError
from etproof.export.pipeline import export_model
from etproof.manifest import all_goldens, canonical_dumps, validate
from etproof.fixtures import methods


def test_fixture_v2_validates_and_round_trips_byte_for_byte():
    raw = FIXTURE_V2.read_bytes()
    doc = validate(json.loads(raw))
    assert doc["schema_version"] == 2
    assert [m["name"] for m in doc["methods"]] == ["encode", "decode"]
    assert canonical_dumps(doc).encode("utf-8") == raw
    assert [g["id"] for g in all_goldens(doc)] == ["one", "one"]


@pytest.mark.parametrize("change, field", [
    (lambda d: d["methods"][1].update(name="encode"), "methods[1].name"),
    (lambda d: d["methods"][0].update(name="en-code"), "methods[0].name"),
    (lambda d: d.update(methods=[]), "methods"),
    (lambda d: d.update(inputs=d["methods"][0]["inputs"]), "inputs"),
    (lambda d: d.update(labels={"output": "y", "source": "s", "names": ["a"]}), "labels"),
    (lambda d: d["methods"][0].pop("goldens"), "methods[0]"),
    (lambda d: d["methods"][1]["goldens"][0]["inputs"].pop("ids"),
     "methods[1].goldens[0].inputs"),
    (lambda d: d.update(schema_version=3), "schema_version"),
])
def test_v2_problems_name_the_field(change, field):
    doc = json.loads(FIXTURE_V2.read_text())
    change(doc)
    with pytest.raises(ManifestError, match=__import__("re").escape(field)):
        validate(doc)


def test_methods_is_not_a_schema_1_field_and_v1_needs_its_inputs():
    doc = json.loads(FIXTURE.read_text())
    bad = copy.deepcopy(doc)
    bad["methods"] = json.loads(FIXTURE_V2.read_text())["methods"]
    with pytest.raises(ManifestError, match="methods"):
        validate(bad)
    v2 = json.loads(FIXTURE_V2.read_text())
    v2["schema_version"] = 1  # a schema-2 document relabelled: schema 1 needs inputs/outputs
    with pytest.raises(ManifestError):
        validate(v2)


@pytest.mark.parametrize("change, words", [
    (lambda s: s.update(example_inputs=(torch.zeros(1),)), "goes inside each method's entry"),
    (lambda s: s["methods"].update(nope=s["methods"].pop("decode")), "no method 'nope'"),
    (lambda s: s["methods"].update({"en-code": s["methods"].pop("encode")}), "not an identifier"),
    (lambda s: s.update(labels={"output": "y", "source": "s", "names": ["a"]}),
     "labels is not supported with several methods"),
    (lambda s: s["methods"]["decode"].pop("golden_inputs"), "missing golden_inputs"),
    (lambda s: s["methods"]["decode"].update(labels=1), "unknown key(s) 'labels'"),
    (lambda s: s.update(slice_axis={"zz": 0}), "slice_axis names 'zz'"),
    (lambda s: s.update(methods={}), "non-empty dict"),
])
def test_spec_problems_are_named(change, words):
    spec = methods.encdec_spec()
    change(spec)
    found = userspec.problems(spec)
    assert any(words in p for p in found), found
    kwargs = {k: v for k, v in spec.items() if k != "name"}
    with pytest.raises(InvalidArgument, match=__import__("re").escape(words)):
        export_model(name="x", out_dir="/nonexistent/never-written", backend="portable",
                     recipe="fp32", **kwargs)


def test_the_builtin_spec_has_no_problems():
    assert userspec.problems(methods.encdec_spec()) == []
