"""The schema files (schema/) and the shared corpus (tests/schema/corpus): every valid document
follows its schema and every invalid one gets exactly the problems its NAME.expect.json lists —
the same files cpp/tests/unit/schema_test.cpp runs through the runtime half's validator."""

import json
from pathlib import Path

import pytest

from etproof import schema
from etproof.errors import ManifestError
from etproof.manifest import validate

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "schema" / "corpus"


def _cases(kind):
    return sorted(p for d in schema.DOCUMENTS for p in (CORPUS / d / kind).glob("*.json")
                  if not p.name.endswith(".expect.json"))


def _id(p: Path) -> str:
    return f"{p.parent.parent.name}/{p.stem}"


def test_every_document_has_a_schema_and_corpus():
    for d, f in schema.DOCUMENTS.items():
        assert (REPO / "schema" / f).is_file(), f
        assert list((CORPUS / d / "valid").glob("*.json")), d
        assert list((CORPUS / d / "invalid").glob("*.expect.json")), d


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_valid_documents_have_no_problem(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert schema.validate(doc, path.parent.parent.name) == []


@pytest.mark.parametrize("path", _cases("invalid"), ids=_id)
def test_invalid_documents_have_exactly_the_expected_problems(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    expect = json.loads(path.with_suffix(".expect.json").read_text(encoding="utf-8"))["problems"]
    got = [{"pointer": p.pointer, "message": p.message}
           for p in schema.validate(doc, path.parent.parent.name)]
    assert got == expect


def test_the_corpus_covers_each_kind_of_problem():
    messages = [p["message"] for f in CORPUS.rglob("*.expect.json")
                for p in json.loads(f.read_text())["problems"]]
    for needle in ("missing", "expected an integer, found a string", "unknown value",
                   "is not a field of", "does not match", "is below the minimum",
                   "empty (at least one item)", "is not allowed here"):
        assert any(needle in m for m in messages), needle
    several = [f for f in CORPUS.rglob("*.expect.json")
               if len(json.loads(f.read_text())["problems"]) >= 3]
    assert len(several) >= 4


def _properties(node, where, out):
    """Every property schema under ``node`` with its place (not the conditions of an "if")."""
    if isinstance(node, dict):
        for k, v in node.get("properties", {}).items():
            out.append((f"{where}.{k}", v))
        for k, v in node.items():
            if isinstance(v, (dict, list)) and k != "if":
                _properties(v, f"{where}/{k}", out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _properties(v, f"{where}[{i}]", out)


@pytest.mark.parametrize("document", sorted(schema.DOCUMENTS))
def test_every_property_is_described(document):
    """A property has a description, or is a $ref to a definition that has one (or a schema that
    only forbids it)."""
    doc = json.loads(schema.schema_path(document).read_text(encoding="utf-8"))
    props = []
    _properties(doc, document, props)
    undescribed = []
    for where, p in props:
        if "description" in p or set(p) == {"not"}:
            continue
        ref = p.get("$ref", "")
        target = doc.get("definitions", {}).get(ref.rsplit("/", 1)[-1], {})
        if ref and "description" in target:
            continue
        undescribed.append(where)
    assert undescribed == []


def test_field_path_and_pointer():
    assert schema.field_path("/inputs/0/dtype") == "inputs[0].dtype"
    assert schema.field_path("/references/a~1b") == "references.a/b"
    assert schema.field_path("") == ""
    assert schema.pointer_of(["methods", 1, "inputs"]) == "/methods/1/inputs"


def test_the_manifest_error_lists_every_problem():
    doc = json.loads((CORPUS / "manifest/invalid/several_problems.json").read_text())
    with pytest.raises(ManifestError) as e:
        validate(doc, origin="x.etproof.json")
    assert e.value.fields == ["artifact.file", "budget", "goldens[1].data", "inputs[0].dtype",
                              "model", "zz"]
    assert e.value.field == "artifact.file"
    assert str(e.value).startswith("x.etproof.json: manifest field 'artifact.file' ")
    assert "manifest field 'zz' is not a field of schema/manifest.schema.json" in str(e.value)


def test_semantic_problems_are_listed_together():
    """What a schema cannot state (sorted lists, names that refer to other fields) is checked in
    code, every problem at once too."""
    doc = json.loads((REPO / "tests/fixtures/manifest_v1.json").read_text())
    doc["delegates"] = ["b", "a"]
    doc["labels"]["output"] = "nope"
    doc["outputs"][0]["slice_axis"] = 5
    with pytest.raises(ManifestError) as e:
        validate(doc)
    assert set(e.value.fields) == {"delegates", "labels.output", "outputs[0].slice_axis"}


def test_the_backend_table_is_quantized_where_the_recipes_quantize():
    """Recipe facts have one home: the table's ``quantized`` says what etproof.recipes computes."""
    from etproof.contract import recipes

    for (b, r), e in recipes.RECIPES.items():
        assert e["entry"]["quantized"] == (e["quant"] is not None), (b, r)
