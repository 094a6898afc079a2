// Programs with several methods (schema_version 2, docs/manifest.md): a real two-method bundle
// (build/test-bundles/methods/encdec-*: `encode` x float32 [-1, 6] → code, `decode` code
// float32 [1, 3] and ids int64 [1] → y) loads every method, replays each case through its own
// method, names cases METHOD/CASE everywhere, and `--method` selects what runs.
#include <algorithm>
#include <cmath>
#include <functional>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/render/junit.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "test_support.h"

namespace etproof {
using etproof::testing::unwrapped;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::quote;

const char* const kPortable = "methods/encdec-portable-fp32";
const char* const kXnnpack = "methods/encdec-xnnpack-fp32";

fs::path exported(const std::string& name) {
  const auto root = testing::test_bundles();
  return (root.empty() ? fs::path("$ETPROOF_TEST_BUNDLES-unset") : root) / name;
}

fs::path manifest_of(const fs::path& dir) { return dir / (dir.filename().string() + ".etproof.json"); }

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The case labels the manifest gives `method`'s cases, in order ("decode/id3", …).
std::vector<std::string> labels_of(const Manifest& m, const std::string& method) {
  std::vector<std::string> out;
  for (const GoldenCase& g : m.goldens)
    if (g.method == method) out.push_back(method + "/" + g.id);
  return out;
}

std::vector<std::string> case_ids(const ParityReport& r) {
  std::vector<std::string> out;
  for (const CaseReport& c : r.cases) out.push_back(c.case_id);
  return out;
}

template <typename F>
Error expect_error(ErrorKind kind, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e;
  }
  ADD_FAILURE() << "no error thrown";
  return Error(ErrorKind::kIo, "", "");
}

TEST(Methods, TheExportedManifestIsSchema2AndCanonical) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  for (const char* name : {kPortable, kXnnpack}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    const fs::path p = manifest_of(exported(name));
    const Manifest m = read_manifest(p);
    EXPECT_EQ(m.schema_version, 2) << name;
    EXPECT_EQ(to_canonical_json(m.raw), testing::slurp(p)) << name;
    ASSERT_EQ(m.methods.size(), 2u) << name;
    EXPECT_EQ(m.methods[0].name, "encode");
    EXPECT_EQ(m.methods[1].name, "decode");
    EXPECT_EQ(m.methods[0].inputs.at(0).shape, (std::vector<int64_t>{-1, 6}));
    EXPECT_EQ(find_method(m, "decode").inputs.at(1).dtype, DType::kInt64);
    EXPECT_FALSE(labels_of(m, "encode").empty());
    EXPECT_FALSE(labels_of(m, "decode").empty());
  }
}

TEST(Methods, ParityAgreesOnBothMethodsWithMethodSlashCaseIds) {
  for (const char* name : {kPortable, kXnnpack}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    const Manifest m = read_manifest(manifest_of(exported(name)));
    const ParityReport r = replay(exported(name));
    EXPECT_TRUE(r.passed) << to_text(r);
    EXPECT_FALSE(r.refused.has_value());
    EXPECT_TRUE(r.several_methods);
    EXPECT_EQ(r.methods, (std::vector<std::string>{"encode", "decode"}));
    std::vector<std::string> want = labels_of(m, "encode");
    for (const auto& l : labels_of(m, "decode")) want.push_back(l);
    EXPECT_EQ(case_ids(r), want) << name;
    for (const CaseReport& c : r.cases) {
      EXPECT_TRUE(is_agreement(c.status)) << c.case_id << ": " << c.detail;
      EXPECT_EQ(c.case_id.rfind(c.method + "/", 0), 0u) << c.case_id;
      ASSERT_EQ(c.outputs.size(), 1u) << c.case_id;
      EXPECT_EQ(c.outputs[0].output, c.method == "encode" ? "code" : "y");
    }
    // The reports say so: the text names the methods, the JSON each case's method.
    EXPECT_TRUE(contains(to_text(r), "methods: encode, decode")) << to_text(r);
    EXPECT_TRUE(contains(to_text(r), "case encode/")) << to_text(r);
    const json j = to_json(r);
    EXPECT_EQ(j.at("methods"), json({"encode", "decode"}));
    EXPECT_EQ(j.at("cases").at(0).at("method"), "encode");
    EXPECT_EQ(j.at("cases").back().at("method"), "decode");
  }
}

// A schema-1 bundle's report is as it was: plain case ids, no methods line or key.
TEST(Methods, ASchema1BundleKeepsPlainCaseIds) {
  ETPROOF_REQUIRE_BUNDLE(exported("tiny-portable-fp32"));
  const ParityReport r = replay(exported("tiny-portable-fp32"));
  EXPECT_FALSE(r.several_methods);
  EXPECT_EQ(r.methods, std::vector<std::string>{"forward"});
  for (const CaseReport& c : r.cases) {
    EXPECT_EQ(c.method, "forward");
    EXPECT_FALSE(contains(c.case_id, "/")) << c.case_id;
  }
  EXPECT_FALSE(contains(to_text(r), "methods:"));
  EXPECT_FALSE(to_json(r).contains("methods"));
  EXPECT_FALSE(to_json(r).at("cases").at(0).contains("method"));
}

TEST(Methods, AMethodSelectionReplaysOnlyItsCases) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const Manifest m = read_manifest(manifest_of(exported(kPortable)));
  ReplayOptions o;
  o.methods = {"decode"};
  const ParityReport r = replay(exported(kPortable), o);
  EXPECT_TRUE(r.passed) << to_text(r);
  EXPECT_EQ(r.methods, std::vector<std::string>{"decode"});
  EXPECT_EQ(case_ids(r), labels_of(m, "decode"));
}

TEST(Methods, AnUnknownMethodIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  ReplayOptions o;
  o.methods = {"forward"};
  const ParityReport r = replay(exported(kPortable), o);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(*r.refused, Status::kBundleInvalid);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->kind(), ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(r.error->cause(), "has no method 'forward' (its methods: 'encode', 'decode')"))
      << r.error->cause();
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.cases.empty()) << "no case of the methods asked for exists";
  // The same on a bundle and model the caller loaded.
  const Bundle b = open_bundle(exported(kPortable));
  LoadedModel model = LoadedModel::load(b);
  o.methods = {"encode", "bogus"};
  const ParityReport r2 = replay(b, model, o);
  ASSERT_TRUE(r2.error.has_value());
  EXPECT_TRUE(contains(r2.error->cause(), "has no method 'bogus'")) << r2.error->cause();
  EXPECT_EQ(case_ids(r2), labels_of(b.manifest, "encode")) << "the cases asked for are listed as refused";
  for (const CaseReport& c : r2.cases) EXPECT_EQ(c.status, Status::kBundleInvalid);
}

TEST(Methods, LoadedModelRunsEachMethodByName) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const Bundle b = open_bundle(exported(kXnnpack));
  LoadedModel model = LoadedModel::load(b);
  EXPECT_EQ(model.method_names(), (std::vector<std::string>{"encode", "decode"}));
  EXPECT_EQ(model.program_delegates(), std::vector<std::string>{"XnnpackBackend"});
  for (const GoldenCase& g : b.manifest.goldens) {
    const auto out = model.run(g.method, read_golden_inputs(b, g));
    const auto golden = read_golden_outputs(b, g);
    ASSERT_EQ(out.size(), golden.size()) << g.method << "/" << g.id;
    for (const auto& [name, ref] : golden) {
      const HostTensor& got = out.at(name);
      ASSERT_EQ(got.shape, ref.shape) << name;
      for (size_t i = 0; i < got.numel(); ++i)
        EXPECT_NEAR(got.value_as_double(i), ref.value_as_double(i), 1e-4 * (1 + std::fabs(ref.value_as_double(i))));
    }
  }
  // run(inputs) is the first method's (encode).
  const GoldenCase& first = b.manifest.goldens.front();
  ASSERT_EQ(first.method, "encode");
  EXPECT_EQ(model.run(read_golden_inputs(b, first)).count("code"), 1u);
  const Error e = expect_error(ErrorKind::kInvalidArgument, [&] { (void)model.run("forward", {}); });
  EXPECT_TRUE(contains(e.cause(), "has no method 'forward' (its methods: 'encode', 'decode')")) << e.cause();
}

TEST(Methods, AWrongDtypeIsRefusedNamingTheMethodAndInput) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const Bundle b = open_bundle(exported(kPortable));
  LoadedModel model = LoadedModel::load(b);
  const auto decode_case = std::find_if(b.manifest.goldens.begin(), b.manifest.goldens.end(),
                                        [](const GoldenCase& g) { return g.method == "decode"; });
  ASSERT_NE(decode_case, b.manifest.goldens.end());
  auto inputs = read_golden_inputs(b, *decode_case);
  inputs["ids"] = testing::tensor_of<int32_t, DType::kInt32>({3});
  Error e = expect_error(ErrorKind::kDtypeMismatch, [&] { (void)model.run("decode", inputs); });
  EXPECT_TRUE(contains(e.cause(), "bundle 'encdec-portable-fp32' method 'decode': input 'ids': dtype int32 given, "
                                  "the manifest says int64"))
      << e.cause();
  // encode's input given to decode: unknown there, and decode's own missing, by name.
  e = expect_error(ErrorKind::kInvalidArgument,
                   [&] { (void)model.run("decode", {{"x", testing::f32({0, 0, 0, 0, 0, 0}, {1, 6})}}); });
  EXPECT_TRUE(contains(e.cause(), "method 'decode'")) << e.cause();
  EXPECT_TRUE(contains(e.cause(), "unknown input 'x' (the method's inputs: 'code', 'ids')")) << e.cause();
  EXPECT_TRUE(contains(e.cause(), "input 'code' not given")) << e.cause();
  // encode's dynamic batch is checked against its own range (1..4).
  e = expect_error(ErrorKind::kShapeMismatch,
                   [&] { (void)model.run("encode", {{"x", testing::f32(std::vector<float>(30, 0.f), {5, 6})}}); });
  EXPECT_TRUE(contains(e.cause(), "method 'encode': input 'x': dimension 0 ('batch') is 5, outside the range 1..4"))
      << e.cause();
}

// external_weights with several methods (methods/encdecptd-*): every method's weights in the one
// NAME.ptd, loaded through ExecuTorch's named-data map for each method; a changed .ptd is refused.
TEST(Methods, EveryMethodsWeightsInOnePtd) {
  for (const char* name : {"methods/encdecptd-portable-fp32", "methods/encdecptd-xnnpack-fp32"}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    SCOPED_TRACE(name);
    const fs::path dir = exported(name);
    const Bundle b = open_bundle(dir);
    EXPECT_EQ(b.manifest.schema_version, 2);
    ASSERT_EQ(b.manifest.data_files.size(), 1u);
    EXPECT_EQ(b.manifest.data_files[0].file, dir.filename().string() + ".ptd");
    EXPECT_EQ(b.manifest.data_files[0].sha256, testing::sha256_file(dir / b.manifest.data_files[0].file));
    const ParityReport r = run_parity(b);
    EXPECT_TRUE(r.passed);
    EXPECT_EQ(r.cases.size(), b.manifest.goldens.size());
    std::set<std::string> methods_run;
    for (const CaseReport& c : r.cases) methods_run.insert(c.case_id.substr(0, c.case_id.find('/')));
    EXPECT_EQ(methods_run, (std::set<std::string>{"decode", "encode"}));

    const fs::path copy = testing::scratch_dir() / dir.filename();
    fs::copy(dir, copy, fs::copy_options::recursive);
    const fs::path ptd = copy / b.manifest.data_files[0].file;
    std::string bytes = testing::slurp(ptd);
    bytes[bytes.size() / 2] ^= 0x01;
    std::ofstream(ptd, std::ios::binary | std::ios::trunc) << bytes;
    const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)open_bundle(copy); });
    EXPECT_TRUE(contains(e.cause(), ptd.filename().string() + ": SHA-256")) << e.cause();
  }
}

// A copy of a bundle in this test's scratch directory, its manifest edited by `edit`.
fs::path edited_copy(const std::string& name, const std::function<void(json&)>& edit) {
  const fs::path dst = testing::scratch_dir() / fs::path(name).filename();
  fs::copy(exported(name), dst, fs::copy_options::recursive);
  json doc = json::parse(testing::slurp(manifest_of(dst)));
  edit(doc);
  std::ofstream(manifest_of(dst)) << doc.dump(2) << "\n";
  return dst;
}

TEST(Methods, AMethodTheProgramLacksIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = edited_copy(kPortable, [](json& d) { d["methods"][1]["name"] = "decode2"; });
  const Bundle b = open_bundle(dir);
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)LoadedModel::load(b); });
  EXPECT_TRUE(contains(e.cause(), "the manifest lists method 'decode2' but program")) << e.cause();
  EXPECT_TRUE(contains(e.cause(), "(the program's methods: decode, encode)")) << e.cause();
}

TEST(Methods, ASignatureMismatchNamesTheMethod) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = edited_copy(kPortable, [](json& d) {
    d["methods"][1]["inputs"][1]["dtype"] = "int32";  // ids is int64 in the program
  });
  // The goldens now disagree too; the load is refused before they are read.
  const Bundle b = open_bundle(dir);
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)LoadedModel::load(b); });
  EXPECT_TRUE(contains(e.cause(), "method 'decode' inputs[1] 'ids': dtype int64 in the program, int32 in the manifest"))
      << e.cause();
}

// The names METHOD/CASE reach the matrix, the ledger, JUnit and xfail records' cases.
TEST(Methods, MatrixLedgerJunitAndXfailUseMethodSlashCase) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = testing::scratch_dir() / "bundles";
  fs::create_directories(dir);
  fs::copy(exported(kPortable), dir / "encdec-portable-fp32", fs::copy_options::recursive);
  const Manifest man = read_manifest(manifest_of(dir / "encdec-portable-fp32"));
  const std::string decode_case = labels_of(man, "decode").at(0);
  std::ofstream(dir / "xfail.json") << json({{"schema_version", 1},
                                             {"records", {{{"model", "encdec"},
                                                           {"backend", "portable"},
                                                           {"recipe", "fp32"},
                                                           {"half", "runtime"},
                                                           {"cases", {decode_case}},
                                                           {"reason", "test: a case named METHOD/CASE"},
                                                           {"recorded", "2026-12-01"}}}}})
                                           .dump(2);
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.columns.size(), 1u);
  EXPECT_TRUE(std::find(m.cases.begin(), m.cases.end(), decode_case) != m.cases.end());
  bool xpassed = false;
  for (const Cell& c : m.cells) {
    EXPECT_TRUE(contains(c.case_id, "/")) << c.case_id;
    if (c.case_id == decode_case) xpassed = c.status == Status::kXpass;
    else EXPECT_EQ(c.status, Status::kAgreed) << c.case_id;
  }
  EXPECT_TRUE(xpassed) << "the xfail record naming " << decode_case << " covers exactly that case";
  ASSERT_EQ(m.xfail.size(), 1u);
  EXPECT_EQ(m.xfail[0].result, XfailResult::kXpass);
  EXPECT_TRUE(contains(to_junit(m), "name=\"" + decode_case + "\"")) << to_junit(m);
  EXPECT_TRUE(contains(to_text(m), decode_case)) << to_text(m);

  RecordContext ctx;
  ctx.time_utc = "2026-12-01T10:00:00Z";
  ctx.command = "etproof parity";
  ctx.kind = "parity";
  ctx.machine = {{"os", "test"}, {"kernel", "test"}, {"cpu", "test"}, {"cores", 2}, {"arch", "x86_64"}};
  ctx.toolchain = {{"etproof", "0.1.0"}, {"executorch", "1.5.1"}};
  ctx.commit = "0123456789ab";
  ctx.commit_source = "git";
  const ParityReport r = replay(dir / "encdec-portable-fp32");
  const auto records = records_from_parity(ctx, r);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].at("status"), "agreed");
  const json ids = records[0].at("numbers").at("case_ids");
  EXPECT_TRUE(std::find(ids.begin(), ids.end(), json(decode_case)) != ids.end()) << ids.dump();
  const auto from_matrix = records_from_matrix(ctx, m);
  EXPECT_FALSE(from_matrix.empty());
}

// A scratch directory holding copies of the two-method portable bundle and the one-method tiny one.
fs::path two_model_dir() {
  const fs::path dir = testing::scratch_dir() / "bundles";
  fs::create_directories(dir);
  fs::copy(exported(kPortable), dir / "encdec-portable-fp32", fs::copy_options::recursive);
  fs::copy(exported("tiny-portable-fp32"), dir / "tiny-portable-fp32", fs::copy_options::recursive);
  return dir;
}

TEST(Methods, MatrixLeavesOutBundlesWithoutTheMethodsAskedFor) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  ETPROOF_REQUIRE_BUNDLE(exported("tiny-portable-fp32"));
  const fs::path dir = two_model_dir();
  const Manifest man = read_manifest(manifest_of(dir / "encdec-portable-fp32"));

  const Matrix m = build_matrix(dir, {}, 1, std::nullopt, {"decode"});
  ASSERT_EQ(m.columns.size(), 1u);
  EXPECT_EQ(m.columns[0].bundle, "encdec-portable-fp32");
  EXPECT_EQ(m.cases, labels_of(man, "decode"));
  ASSERT_EQ(m.left_out.size(), 1u);
  EXPECT_EQ(m.left_out[0].bundle, "tiny-portable-fp32");
  EXPECT_EQ(m.left_out[0].reason, "has no method 'decode' (its methods: 'forward')");
  EXPECT_EQ(m.exit_code(), 0) << "left out is not a failure";
  EXPECT_TRUE(contains(to_text(m), "left out by --method decode")) << to_text(m);
  EXPECT_TRUE(contains(unwrapped(to_text(m)), "tiny-portable-fp32 (" + dir.string() + "): has no method 'decode'"))
      << to_text(m);
  EXPECT_TRUE(contains(to_markdown(m), "**Left out**")) << to_markdown(m);
  EXPECT_TRUE(contains(to_junit(m), "<testcase classname=\"left-out\" name=\"tiny-portable-fp32\">")) << to_junit(m);
  const json j = to_json(m);
  EXPECT_EQ(j.at("methods"), json({"decode"}));
  ASSERT_EQ(j.at("left_out").size(), 1u);
  EXPECT_EQ(j.at("left_out")[0].at("bundle"), "tiny-portable-fp32");

  // forward: the schema-1 bundle is the column, the two-method one is left out.
  const Matrix f = build_matrix(dir, {}, 1, std::nullopt, {"forward"});
  ASSERT_EQ(f.columns.size(), 1u);
  EXPECT_EQ(f.columns[0].bundle, "tiny-portable-fp32");
  ASSERT_EQ(f.left_out.size(), 1u);
  EXPECT_EQ(f.left_out[0].reason, "has no method 'forward' (its methods: 'encode', 'decode')");

  // No selection: both are columns, nothing left out, and the JSON is as before (no keys).
  const Matrix all = build_matrix(dir);
  EXPECT_EQ(all.columns.size(), 2u);
  EXPECT_TRUE(all.left_out.empty());
  EXPECT_FALSE(to_json(all).contains("left_out"));
}

// ---- the CLI ------------------------------------------------------------------------------------

testing::CliResult cli(const std::string& args) { return testing::run_etproof(args); }

TEST(Methods, CliRunsOneMethodOnItsInput) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path b = exported(kPortable);
  const Manifest man = read_manifest(manifest_of(b));
  const GoldenCase& enc = man.goldens.front();
  ASSERT_EQ(enc.method, "encode");
  const fs::path goldens = b / (man.name + ".goldens");
  const fs::path x = goldens / enc.inputs.at("x");
  const fs::path out = testing::scratch_dir() / "out";
  const auto r = cli("run " + quote(b.string()) + " --method encode --input " + quote("x=" + x.string()) +
                     " --out " + quote(out.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "methods encode)")) << r.out;
  EXPECT_TRUE(contains(r.out, "output encode.code float32 [")) << r.out;
  const HostTensor code = read_npy(out / "encode.code.npy");
  const HostTensor ref = read_npy(goldens / enc.outputs.at("code"));
  ASSERT_EQ(code.shape, ref.shape);
  for (size_t i = 0; i < code.numel(); ++i)
    EXPECT_NEAR(code.value_as_double(i), ref.value_as_double(i), 1e-4 * (1 + std::fabs(ref.value_as_double(i))));

  // Every method by default: decode's inputs are missing, by method and name.
  auto bad = cli("run " + quote(b.string()) + " --input " + quote("x=" + x.string()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_TRUE(contains(bad.err, "method 'decode': input 'code', 'ids' not given")) << bad.err;
  // An input no selected method has.
  bad = cli("run " + quote(b.string()) + " --method encode --input " + quote("x=" + x.string()) + " --input " +
            quote("ids=" + x.string()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_TRUE(contains(bad.err, "unknown input 'ids' (the inputs of the methods run (encode): 'x')")) << bad.err;
  // A method the bundle does not have.
  bad = cli("run " + quote(b.string()) + " --method forward --input " + quote("x=" + x.string()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_TRUE(contains(bad.err, "error [invalid-argument]: bundle 'encdec-portable-fp32' has no method 'forward'"))
      << bad.err;
}

TEST(Methods, CliParitySelectsMethodsAndRefusesAnUnknownOne) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path b = exported(kPortable);
  const auto all = cli("parity --no-ledger " + quote(b.string()));
  ASSERT_EQ(all.rc, 0) << all.out << all.err;
  EXPECT_TRUE(contains(all.out, "case encode/")) << all.out;
  EXPECT_TRUE(contains(all.out, "case decode/")) << all.out;

  const auto only = cli("parity --no-ledger --json --method decode " + quote(b.string()));
  ASSERT_EQ(only.rc, 0) << only.out << only.err;
  const json j = json::parse(only.out);
  EXPECT_EQ(j.at("methods"), json({"decode"}));
  ASSERT_FALSE(j.at("cases").empty());
  for (const auto& c : j.at("cases")) EXPECT_EQ(c.at("case").get<std::string>().rfind("decode/", 0), 0u) << c;

  const auto bad = cli("parity --no-ledger --method bogus " + quote(b.string()));
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_TRUE(contains(bad.err, "error [invalid-argument]: bundle 'encdec-portable-fp32' has no method 'bogus' "
                                "(its methods: 'encode', 'decode')"))
      << bad.err;
  EXPECT_TRUE(bad.out.empty()) << "refused up front: " << bad.out;
}

TEST(Methods, CliInspectShowsEachMethod) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path b = exported(kPortable);
  const auto text = cli("inspect " + quote(b.string()));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "method    encode\n  input   x float32 [-1, 6]")) << text.out;
  EXPECT_TRUE(contains(text.out, "method    decode\n  input   code float32 [1, 3]\n  input   ids int64 [1]\n"
                                 "  output  y float32 [1, 6]"))
      << text.out;
  EXPECT_TRUE(contains(text.out, " decode/")) << text.out;
  const auto js = cli("inspect --json " + quote(b.string()));
  ASSERT_EQ(js.rc, 0) << js.err;
  const json j = json::parse(js.out);
  ASSERT_EQ(j.at("methods").size(), 2u);
  EXPECT_EQ(j.at("methods")[1].at("name"), "decode");
  EXPECT_EQ(j.at("methods")[1].at("inputs")[1].at("name"), "ids");
  EXPECT_EQ(j.at("goldens").back().at("method"), "decode");
}

TEST(Methods, CliMatrixNamesTheBundlesItLeavesOut) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  ETPROOF_REQUIRE_BUNDLE(exported("tiny-portable-fp32"));
  const fs::path dir = two_model_dir();
  const auto r = cli("matrix --no-ledger -j 1 --method encode " + quote(dir.string()));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "left out by --method encode")) << r.out;
  EXPECT_TRUE(contains(unwrapped(r.out), "tiny-portable-fp32 (" + dir.string() + "): has no method 'encode' (its "
                                         "methods: 'forward')"))
      << r.out;
  const auto j = cli("matrix --no-ledger -j 1 --json --method encode " + quote(dir.string()));
  EXPECT_EQ(j.rc, 0) << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc.at("columns").size(), 1u);
  EXPECT_EQ(doc.at("left_out").at(0).at("bundle"), "tiny-portable-fp32");
  for (const auto& c : doc.at("cells")) EXPECT_EQ(c.at("case").get<std::string>().rfind("encode/", 0), 0u) << c;
}

}  // namespace
}  // namespace etproof
