"""Writes tests/schema/corpus: for each document of schema/, valid/*.json (documents that follow
it) and invalid/*.json, each with NAME.expect.json: {"problems": [{"pointer", "message"}]}, the
problems both halves must report, sorted by pointer (python/tests/unit/test_schema.py and
cpp/tests/unit/schema_test.cpp run every file). The pointers of each invalid case are written here by
hand and checked against etproof.schema before anything is written; the messages are the wording
both halves share. Run from the repository root: .venv/bin/python tests/schema/make_corpus.py
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from etproof import schema  # noqa: E402

CORPUS = ROOT / "tests" / "schema" / "corpus"


def load(p):
    return json.loads((ROOT / p).read_text(encoding="utf-8"))


def dump(doc) -> str:
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


V1 = load("tests/fixtures/manifest_v1.json")
V2 = load("tests/fixtures/manifest_v2.json")
TABLE = load("data/backends.json")
BOUNDS = load("data/bounds.json")
XFAIL = load("data/demo-xfail.json")
LEDGER = [json.loads(line) for line in (ROOT / "evidence/ledger.jsonl").read_text().splitlines()]
REPORT = {"results": [
    {"backend": "xnnpack", "bundle": "tiny-xnnpack-fp32", "model": "tiny", "recipe": "fp32",
     "status": "exported"},
    {"backend": "coreml", "model": "tiny", "recipe": "fp32", "stage": "export",
     "status": "export-refused",
     "reason": "coremltools is not installed (remedy: pip install coremltools)"},
    {"backend": "vulkan", "model": "tiny", "recipe": "fp32", "stage": "lower",
     "status": "export-failed", "reason": "lowering failed (remedy: see the error)",
     "error": {"type": "RuntimeError", "message": "aten.cumsum.default is not supported",
               "where": "lower.py:10 in lower", "operators": ["aten.cumsum.default"]}},
]}


def edit(doc, *changes):
    """A deep copy of doc with each change (pointer, value) applied; value DELETE removes."""
    d = copy.deepcopy(doc)
    for ptr, value in changes:
        toks = [t.replace("~1", "/").replace("~0", "~") for t in ptr.split("/")[1:]]
        parent = d
        for t in toks[:-1]:
            parent = parent[int(t)] if isinstance(parent, list) else parent[t]
        last = toks[-1]
        key = int(last) if isinstance(parent, list) else last
        if value is DELETE:
            del parent[key]
        else:
            parent[key] = value
    return d


DELETE = object()


def ledger_where(pred):
    return copy.deepcopy(next(r for r in LEDGER if pred(r)))


VALID = {
    "manifest": {
        "fixture_v1": V1,
        "fixture_v2": V2,
        "v1_with_state": edit(V1, ("/state", {"mutable_buffers": ["total"], "per_case": "fresh"})),
        "v2_with_state": edit(V2, ("/state", {"mutable_buffers": ["cache.k", "cache.v"], "per_case": "fresh"})),
        "v2_with_shared_state": edit(V2, ("/state", {"mutable_buffers": ["cache.k", "cache.v"], "per_case": "fresh",
                                                     "shared_across_methods": True})),
        "v1_with_sequence": edit(V1, ("/state", {"mutable_buffers": ["total"], "per_case": "fresh"}),
                                 ("/goldens/0/sequence", {"case": "chat", "step": 0}),
                                 ("/goldens/1/sequence", {"case": "chat", "step": 1})),
        "v1_without_optional_fields": edit(V1, *[(f"/{k}", DELETE) for k in (
            "delegation", "quantization", "preprocessing", "labels", "weights", "references",
            "budget", "operators")], ("/goldens/0/references", DELETE),
            ("/goldens/1/references", DELETE), ("/outputs/0/slice_axis", DELETE)),
        "v1_null_slice_axis_and_integer_atol": edit(
            V1, ("/outputs/0/slice_axis", None), ("/outputs/0/dtype", "int64"),
            ("/outputs/0/integer_atol", 1)),
        "v1_output_quantization_and_target": edit(
            V1, ("/outputs/0/quantization", {"scale": 0.0625, "zero_point": -3, "dtype": "int8"}),
            ("/target", {"kind": "openvino-cpu", "requirements": "meta=1.0;ov=2026.4.1;isa=Intel AVX2",
                         "openvino": "2026.4.1", "isa": "Intel AVX2"}),
            ("/data_files", [{"file": "x.ptd", "bytes": 12, "sha256": "a" * 64}])),
    },
    "backends": {"data_backends": TABLE},
    "xfail": {"demo_xfail": XFAIL, "golden_xfail": load("data/golden-xfail.json"),
              "no_records": {"schema_version": 1, "records": []}},
    "ledger-record": {
        "backends_export": ledger_where(lambda r: r["kind"] == "backends" and r["half"] == "export"),
        "matrix_with_numbers": ledger_where(lambda r: "numbers" in r and "bound" in r["numbers"]),
        "sqnr_inf": ledger_where(lambda r: isinstance(r.get("numbers", {}).get("sqnr_db"), str)),
        "bench": ledger_where(lambda r: r["kind"] == "bench"),
        "emulated_machine": ledger_where(lambda r: r["machine"].get("emulated")),
        "named_machine": edit(ledger_where(lambda r: r["kind"] == "matrix"), ("/machine/name", "ci-runner-1")),
        "bound_with_a_rule_threshold": edit(ledger_where(lambda r: "numbers" in r and "bound" in r["numbers"]),
                                            ("/numbers/bound/thresholds", {"median_range_error": 0.01})),
    },
    "export-report": {"three_outcomes": REPORT, "empty": {"results": []}},
    "bounds": {
        "data_bounds": BOUNDS,
        "one_row_without_a_floor": edit(BOUNDS, ("/rows", [edit(BOUNDS["rows"][0], ("/bases", ["reference"]),
                                                                ("/min_cosine", -1))])),
        "a_rule_threshold": edit(BOUNDS, ("/rows/2/thresholds", {"median_range_error": 0.01})),
    },
}

# Each invalid case: (document, expected pointers).
INVALID = {
    "manifest": {
        "not_an_object": ([], [""]),
        "missing_field": (edit(V1, ("/recipe", DELETE)), ["/recipe"]),
        "state_other_than_fresh": (edit(V1, ("/state", {"mutable_buffers": ["total"], "per_case": "carried"})),
                                   ["/state/per_case"]),
        "state_without_buffers": (edit(V1, ("/state", {"mutable_buffers": [], "per_case": "fresh"})),
                                  ["/state/mutable_buffers"]),
        "state_shared_false": (edit(V2, ("/state", {"mutable_buffers": ["cache.k"], "per_case": "fresh",
                                                    "shared_across_methods": False})),
                               ["/state/shared_across_methods"]),
        "sequence_step_negative": (edit(V1, ("/goldens/0/sequence", {"case": "chat", "step": -1})),
                                   ["/goldens/0/sequence/step"]),
        "sequence_without_case": (edit(V1, ("/goldens/1/sequence", {"step": 0})),
                                  ["/goldens/1/sequence/case"]),
        "wrong_type": (edit(V1, ("/artifact/bytes", "5")), ["/artifact/bytes"]),
        "wrong_enum": (edit(V1, ("/inputs/0/dtype", "float8")), ["/inputs/0/dtype"]),
        "unknown_key_top_level": (edit(V1, ("/guessed", 1)), ["/guessed"]),
        "unknown_key_nested": (edit(V1, ("/weights/seed", 0)), ["/weights/seed"]),
        "unknown_keys_two_in_one_object": (edit(V1, ("/weights/seed", 0), ("/weights/a", 1),
                                                ("/goldens/0/x", 1), ("/goldens/1/y", 1)),
                                           ["/goldens/0/x", "/goldens/1/y", "/weights/a", "/weights/seed"]),
        "v2_unknown_keys_at_the_top": (edit(V2, ("/labels", {}), ("/taps", {})), ["/labels", "/taps"]),
        "unknown_key_budget": (edit(V1, ("/budget/min_snr", 30)), ["/budget/min_snr"]),
        "input_with_an_output_field": (edit(V1, ("/inputs/0/slice_axis", 0)), ["/inputs/0/slice_axis"]),
        "v2_bad_nested_item": (edit(V2, ("/methods/1/inputs/0/dtype", "float8")),
                               ["/methods/1/inputs/0/dtype"]),
        "v2_method_name": (edit(V2, ("/methods/0/name", "1st")), ["/methods/0/name"]),
        "v2_methods_empty": (edit(V2, ("/methods", [])), ["/methods"]),
        "v2_top_level_inputs": (edit(V2, ("/inputs", [])), ["/inputs"]),
        "v1_with_methods": (edit(V1, ("/methods", [])), ["/methods"]),
        "several_problems": (edit(V1, ("/model", DELETE), ("/inputs/0/dtype", "float8"),
                                  ("/artifact/file", "../x.pte"), ("/budget", {}), ("/zz", True),
                                  ("/goldens/1/data", "fake")),
                             ["/artifact/file", "/budget", "/goldens/1/data", "/inputs/0/dtype",
                              "/model", "/zz"]),
        "schema_version_3": (edit(V1, ("/schema_version", 3)), ["/schema_version"]),
        "schema_version_a_string": (edit(V1, ("/schema_version", "1")),
                                    ["/schema_version", "/schema_version"]),
        "schema_version_true": (edit(V1, ("/schema_version", True)),
                                ["/schema_version", "/schema_version"]),
        "schema_version_missing": (edit(V1, ("/schema_version", DELETE)), ["/schema_version"]),
        "name_with_a_slash": (edit(V1, ("/name", "a/b")), ["/name"]),
        "name_dotdot": (edit(V1, ("/name", "..")), ["/name"]),
        "name_empty": (edit(V1, ("/name", "")), ["/name"]),
        "artifact_sha256_upper_case": (edit(V1, ("/artifact/sha256", "A" * 64)), ["/artifact/sha256"]),
        "artifact_a_string": (edit(V1, ("/artifact", "x.pte")), ["/artifact"]),
        "golden_input_escapes": (edit(V1, ("/goldens/0/inputs/image", "../../secret.npy")),
                                 ["/goldens/0/inputs/image"]),
        "golden_files_an_object": (edit(V1, ("/goldens/0/files", {})), ["/goldens/0/files"]),
        "shape_entry_a_float": (edit(V1, ("/inputs/0/shape/2", 224.5)), ["/inputs/0/shape/2"]),
        "shape_entry_below_minus_one": (edit(V1, ("/inputs/0/shape/0", -2)), ["/inputs/0/shape/0"]),
        "outputs_empty": (edit(V1, ("/outputs", [])), ["/outputs"]),
        "output_quantization": (edit(V1, ("/outputs/0/quantization",
                                          {"scale": 0.0, "zero_point": 0.5, "dtype": "int4"})),
                                ["/outputs/0/quantization/dtype", "/outputs/0/quantization/scale",
                                 "/outputs/0/quantization/zero_point"]),
        "slice_axis_negative": (edit(V1, ("/outputs/0/slice_axis", -1)), ["/outputs/0/slice_axis"]),
        "slice_axis_a_float": (edit(V1, ("/outputs/0/slice_axis", 0.5)), ["/outputs/0/slice_axis"]),
        "reference_captured_with_a_reason": (edit(V1, ("/references/float64/reason", "x")),
                                             ["/references/float64/reason"]),
        "reference_not_captured_without_reason": (
            edit(V1, ("/references/int8-dynamic-per-channel/reason", DELETE),
                 ("/references/int8-dynamic-per-channel/emulates", "pt2e")),
            ["/references/int8-dynamic-per-channel/emulates",
             "/references/int8-dynamic-per-channel/reason"]),
        "reference_entry_not_an_object": (edit(V1, ("/references/float16", "yes"),
                                                ("/references/bf16", {"captured": False})),
                                          ["/references/bf16/reason", "/references/float16"]),
        "reference_captured_a_string": (edit(V1, ("/references/float64/captured", "yes")),
                                        ["/references/float64/captured"]),
        "program_at_export": (edit(V1, ("/references/float64/program_at_export",
                                        {"cases": 0, "outputs": 1, "max_steps": -1, "matched": "yes",
                                         "steps": 1})),
                              ["/references/float64/program_at_export/cases",
                               "/references/float64/program_at_export/machine",
                               "/references/float64/program_at_export/matched",
                               "/references/float64/program_at_export/max_steps",
                               "/references/float64/program_at_export/steps"]),
        "budget_out_of_range": (edit(V1, ("/budget/top1_agreement", 1.5), ("/budget/min_cosine", "high")),
                                ["/budget/min_cosine", "/budget/top1_agreement"]),
        "preprocessing": (edit(V1, ("/preprocessing/std/1", 0), ("/preprocessing/mean", [1, 2]),
                               ("/preprocessing/kind", "audio")),
                          ["/preprocessing/kind", "/preprocessing/mean", "/preprocessing/std/1"]),
        "operators": (edit(V1, ("/operators/0", "add.out"), ("/operators/1", 3)),
                      ["/operators/0", "/operators/1"]),
        "operators_a_string": (edit(V1, ("/operators", "aten::add.out")), ["/operators"]),
        "toolchain": (edit(V1, ("/toolchain/torchao", DELETE), ("/toolchain/torch", 2)),
                      ["/toolchain/torch", "/toolchain/torchao"]),
        "created_utc_not_a_timestamp": (edit(V1, ("/created_utc", "yesterday")), ["/created_utc"]),
        "delegation_reasons_empty": (edit(V1, ("/delegation/by_operator/1/reasons", [])),
                                     ["/delegation/by_operator/1/reasons"]),
        "engine_other": (edit(V1, ("/engine/name", "tflite")), ["/engine/name"]),
        "labels_names_empty": (edit(V1, ("/labels/names", [])), ["/labels/names"]),
        "weights_kind": (edit(V1, ("/weights/kind", "random"), ("/weights/source", DELETE)),
                         ["/weights/kind", "/weights/source"]),
        "delegates_empty_string": (edit(V1, ("/delegates", [""])), ["/delegates/0"]),
    },
    "backends": {
        "recipe_without_quantized": (edit(TABLE, ("/backends/1/recipes/1/quantized", DELETE)),
                                     ["/backends/1/recipes/1/quantized"]),
        "kind_unknown": (edit(TABLE, ("/backends/0/kind", "gpu")), ["/backends/0/kind"]),
        "unknown_key": (edit(TABLE, ("/backends/2/speed", "fast")), ["/backends/2/speed"]),
        "partitioner_without_class": (edit(TABLE, ("/backends/1/partitioner/class", DELETE)),
                                      ["/backends/1/partitioner/class"]),
        "precision_unknown": (edit(TABLE, ("/backends/0/recipes/0/precision", "int4")),
                              ["/backends/0/recipes/0/precision"]),
        "several": (edit(TABLE, ("/schema_version", 2), ("/kernel_libraries/0/wheel_component", 3),
                         ("/backends/1/runtime_ids", "XnnpackBackend")),
                    ["/backends/1/runtime_ids", "/kernel_libraries/0/wheel_component",
                     "/schema_version"]),
    },
    "xfail": {
        "half_unknown": (edit(XFAIL, ("/records/0/half", "both")), ["/records/0/half"]),
        "reason_missing": (edit(XFAIL, ("/records/0/reason", DELETE)), ["/records/0/reason"]),
        "unknown_field": (edit(XFAIL, ("/records/0/owner", "me")), ["/records/0/owner"]),
        "cases_empty": (edit(XFAIL, ("/records/0/cases", [])), ["/records/0/cases"]),
        "schema_version_2": (edit(XFAIL, ("/schema_version", 2)), ["/schema_version"]),
        "several": (edit(XFAIL, ("/records/0/recorded", "yesterday"), ("/records/0/model", ""),
                         ("/notes", "x")),
                    ["/notes", "/records/0/model", "/records/0/recorded"]),
        "records_not_a_list": ({"schema_version": 1, "records": {}}, ["/records"]),
    },
    "ledger-record": {
        "machine_missing": (edit(LEDGER[0], ("/machine", DELETE)), ["/machine"]),
        "id_not_hex": (edit(LEDGER[0], ("/id", "xyz")), ["/id"]),
        "kind_unknown": (edit(LEDGER[0], ("/kind", "other")), ["/kind"]),
        "unknown_key": (edit(LEDGER[0], ("/extra", 1)), ["/extra"]),
        "several": (edit(VALID["ledger-record"]["matrix_with_numbers"], ("/machine/cores", "2"),
                         ("/numbers/sqnr_db", "big"), ("/numbers/bound/atol", DELETE)),
                    ["/machine/cores", "/numbers/bound/atol", "/numbers/sqnr_db"]),
        "threshold_not_a_measure": (edit(VALID["ledger-record"]["matrix_with_numbers"],
                                         ("/numbers/bound/thresholds", {"median_range_error": True})),
                                    ["/numbers/bound/thresholds/median_range_error"]),
    },
    "export-report": {
        "status_unknown": (edit(REPORT, ("/results/0/status", "done")), ["/results/0/status"]),
        "exported_without_bundle": (edit(REPORT, ("/results/0/bundle", DELETE)), ["/results/0/bundle"]),
        "refused_without_reason": (edit(REPORT, ("/results/1/reason", DELETE)), ["/results/1/reason"]),
        "unknown_key": (edit(REPORT, ("/results/2/seconds", 3)), ["/results/2/seconds"]),
        "error_without_type": (edit(REPORT, ("/results/2/error/type", DELETE)),
                               ["/results/2/error/type"]),
    },
    "bounds": {
        "min_cosine_above_one": (edit(BOUNDS, ("/rows/2/min_cosine", 1.5)), ["/rows/2/min_cosine"]),
        "source_empty": (edit(BOUNDS, ("/rows/0/source", "")), ["/rows/0/source"]),
        "unknown_key": (edit(BOUNDS, ("/rows/1/margin", 4)), ["/rows/1/margin"]),
        "axis_unknown": (edit(BOUNDS, ("/rows/0/axis", "backend")), ["/rows/0/axis"]),
        "no_floor_as_a_string": (edit(BOUNDS, ("/rows/0/min_sqnr_db", "inf")), ["/rows/0/min_sqnr_db"]),
        "bases": (edit(BOUNDS, ("/rows/3/bases", []), ("/rows/4/bases", ["truth"])),
                  ["/rows/3/bases", "/rows/4/bases/0"]),
        "rows_empty": (edit(BOUNDS, ("/rows", [])), ["/rows"]),
        "threshold_as_a_string": (edit(BOUNDS, ("/rows/2/thresholds", {"median_range_error": "0.01"})),
                                  ["/rows/2/thresholds/median_range_error"]),
        "several": (edit(BOUNDS, ("/schema_version", 2), ("/rows/4/atol_range", -0.1), ("/rows/5/why", DELETE),
                         ("/rows/6/min_cosine", -1.5), ("/rows/7/target", "no")),
                    ["/rows/4/atol_range", "/rows/5/why", "/rows/6/min_cosine", "/rows/7/target",
                     "/schema_version"]),
    },
}


def main() -> None:
    shutil.rmtree(CORPUS, ignore_errors=True)
    for document in schema.DOCUMENTS:
        for name, doc in VALID[document].items():
            got = schema.validate(doc, document)
            assert not got, (document, name, got)
            out = CORPUS / document / "valid" / f"{name}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(dump(doc), encoding="utf-8")
        for name, (doc, pointers) in INVALID[document].items():
            got = schema.validate(doc, document)
            assert [p.pointer for p in got] == sorted(pointers), (document, name, got)
            out = CORPUS / document / "invalid" / f"{name}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(dump(doc), encoding="utf-8")
            expect = {"problems": [{"pointer": p.pointer, "message": p.message} for p in got]}
            out.with_suffix(".expect.json").write_text(dump(expect), encoding="utf-8")
    print(f"wrote {sum(1 for _ in CORPUS.rglob('*.json'))} files under {CORPUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
