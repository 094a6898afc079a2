// The matrix over real exported bundles (integration): every column found is measured or listed
// with a reason. An empty or missing directory is unit/matrix_test.cpp's.
#include "etproof/render/junit.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include <set>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/core/npy.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::unwrapped;
using etproof::testing::demo_bundles;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

size_t column_of(const Matrix& m, const std::string& bundle) {
  for (size_t i = 0; i < m.columns.size(); ++i)
    if (m.columns[i].bundle == bundle) return i;
  ADD_FAILURE() << "no column for " << bundle;
  return m.columns.size();
}

std::vector<const Cell*> cells_of(const Matrix& m, size_t col) {
  std::vector<const Cell*> out;
  for (const Cell& c : m.cells)
    if (c.column == col) out.push_back(&c);
  return out;
}

void copy_bundle(const fs::path& from, const fs::path& to_dir) {
  fs::copy(from, to_dir / from.filename(), fs::copy_options::recursive);
}

// Rewrites one field of a copied bundle's manifest (canonical form, as the writer would).
void edit_manifest(const fs::path& bundle_dir, const std::function<void(nlohmann::json&)>& edit) {
  fs::path path;
  for (const auto& e : fs::directory_iterator(bundle_dir))
    if (e.path().filename().string().ends_with(".etproof.json")) path = e.path();
  ASSERT_FALSE(path.empty());
  nlohmann::json doc;
  {
    std::ifstream in(path);
    doc = nlohmann::json::parse(in);
  }
  edit(doc);
  std::ofstream(path) << doc.dump(2) << "\n";
}

// build/test-bundles holds one bundle per runtime probe the CLI needs (python/etproof/
// testbundles.py); these three are the ones every test here relies on.
constexpr const char* kOriginalColumns[] = {"tiny-portable-fp32", "tiny-xnnpack-fp32",
                                            "tiny-xnnpack-int8-dynamic-per-channel"};

TEST(Matrix, TestBundlesAreAllMeasuredAndAgree) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const Matrix m = build_matrix(test_bundles());
  ASSERT_EQ(m.columns.size(), find_bundles(test_bundles()).size()) << to_text(m);
  for (const char* b : kOriginalColumns) column_of(m, b);
  EXPECT_EQ(m.cases.size(), 3u);
  // Every column ran every case here and agreed: nothing left unmeasured, nothing not run.
  EXPECT_EQ(m.measured, m.columns.size() * m.cases.size()) << to_text(m);
  EXPECT_TRUE(m.not_run.empty()) << to_text(m);
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  for (const Cell& c : m.cells) EXPECT_EQ(c.status, CellStatus::kAgreed) << c.detail;

  const size_t portable = column_of(m, "tiny-portable-fp32");
  EXPECT_TRUE(m.columns[portable].delegates.empty());
  EXPECT_EQ(m.columns[portable].backend, "portable");
  const size_t xnn = column_of(m, "tiny-xnnpack-fp32");
  EXPECT_EQ(m.columns[xnn].delegates, std::vector<std::string>{"XnnpackBackend"});
  // Portable and XNNPACK fp32 share one bound; int8 has its own, looser one: the tiny program
  // matched its qd8 emulation at export, so 4 x the match criterion of the range (references.h,
  // matched_program_bound; its outputs are float: the term without a scale).
  ASSERT_TRUE(m.columns[xnn].bound && m.columns[portable].bound);
  EXPECT_EQ(m.columns[xnn].bound->atol_range, m.columns[portable].bound->atol_range);
  const size_t q = column_of(m, "tiny-xnnpack-int8-dynamic-per-channel");
  ASSERT_TRUE(m.columns[q].bound);
  EXPECT_GT(m.columns[q].bound->atol_range + m.columns[q].bound->atol_range_unquantized,
            m.columns[xnn].bound->atol_range);
  for (const Cell* c : cells_of(m, q)) {
    ASSERT_TRUE(c->max_abs_error && c->cosine && c->headroom);
    EXPECT_GE(*c->headroom, 0);
  }

  const std::string text = to_text(m);
  const std::string n = std::to_string(m.measured);
  EXPECT_NE(text.find(n + " cells measured: " + n + " agreed, 0 drifted"), std::string::npos)
      << text;
  EXPECT_NE(text.find("xnnpack/int8-dynamic-per-channel"), std::string::npos) << text;
  const std::string md = to_markdown(m);
  EXPECT_NE(md.find("| case |"), std::string::npos) << md;
  EXPECT_NE(md.find("`agreed`"), std::string::npos) << md;
}

TEST(Matrix, JsonHasTheDocumentedKeys) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const Matrix m = build_matrix(test_bundles());
  const auto j = nlohmann::json::parse(to_json(m).dump());
  ASSERT_EQ(j.at("columns").size(), m.columns.size());
  for (const auto& c : j.at("columns"))
    for (const char* k : {"backend", "recipe", "precision", "delegates", "bundle", "bound"})
      EXPECT_TRUE(c.contains(k)) << k;
  ASSERT_EQ(j.at("cells").size(), m.cells.size());
  ASSERT_FALSE(m.cells.empty());
  for (const auto& c : j.at("cells")) {
    for (const char* k : {"case", "backend", "recipe", "status", "max_abs_error", "cosine",
                          "sqnr_db", "headroom", "bound", "detail"})
      EXPECT_TRUE(c.contains(k)) << k;
    EXPECT_EQ(c.at("status"), "agreed");
    EXPECT_TRUE(c.at("max_abs_error").is_number());
  }
  EXPECT_TRUE(j.at("not_run").is_array());
  EXPECT_EQ(j.at("measured").get<size_t>(), m.measured);
  EXPECT_EQ(m.measured, m.cells.size());
  // No xfail.json there: the key says so.
  EXPECT_TRUE(j.at("xfail").at("file").is_null());
  EXPECT_TRUE(j.at("xfail").at("records").empty());
}

TEST(Matrix, ExportReportRefusalsAreListedNotLeftOut) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  std::ofstream(dir / "export-report.json") << R"({"results": [
    {"backend": "portable", "recipe": "fp32", "status": "exported"},
    {"backend": "coreml", "recipe": "fp32", "status": "export-refused",
     "reason": "coremltools is not installed (pip install coremltools); macOS only"},
    {"backend": "vulkan", "recipe": "fp32", "status": "export-failed", "stage": "lower",
     "reason": "RuntimeError: no partitioner tagged any node"}
  ]})";
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.measured, 3u);
  // export-refused is an absent capability; export-failed is a failed claim and fails the run.
  EXPECT_FALSE(fails_run(CellStatus::kExportRefused));
  EXPECT_TRUE(fails_run(CellStatus::kExportFailed));
  EXPECT_EQ(m.exit_code(), 1) << to_text(m);
  ASSERT_EQ(m.not_run.size(), 2u) << to_text(m);
  const NotRun& refused = m.not_run[0];
  EXPECT_EQ(refused.backend, "coreml");
  EXPECT_EQ(refused.status, CellStatus::kExportRefused);
  EXPECT_NE(refused.reason.find("coremltools is not installed"), std::string::npos);
  EXPECT_EQ(m.not_run[1].status, CellStatus::kExportFailed);
  EXPECT_NE(m.not_run[1].reason.find("lower"), std::string::npos);
  const std::string text = to_text(m);
  EXPECT_NE(text.find("coreml/fp32: export-refused: coremltools is not installed"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vulkan/fp32: export-failed (fails the run): at lower: RuntimeError"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FAIL: vulkan/fp32 export-failed"), std::string::npos) << text;
  EXPECT_EQ(text.find("FAIL: nothing"), std::string::npos) << text;
  const auto j = to_json(m);
  bool found = false;
  for (const auto& n : j.at("not_run"))
    found = found || (n.at("backend") == "coreml" && n.at("status") == "export-refused");
  EXPECT_TRUE(found) << j.dump(2);
}

TEST(Matrix, TamperedArtifactIsABundleInvalidColumnAndTheOthersStillRun) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  copy_bundle(test_bundles() / "tiny-xnnpack-fp32", dir);
  {
    const fs::path pte = dir / "tiny-xnnpack-fp32" / "tiny-xnnpack-fp32.pte";
    std::fstream f(pte, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(fs::file_size(pte) / 2);
    f.seekg(at);
    const char byte = static_cast<char>(f.get());
    f.seekp(at);
    f.put(static_cast<char>(byte ^ 0x5a));  // one byte changed, size kept
  }
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.measured, 3u) << to_text(m);
  const size_t bad = column_of(m, "tiny-xnnpack-fp32");
  const auto cells = cells_of(m, bad);
  ASSERT_EQ(cells.size(), 3u);
  for (const Cell* c : cells) {
    EXPECT_EQ(c->status, CellStatus::kBundleInvalid);
    EXPECT_NE(c->detail.find("artifact-mismatch"), std::string::npos) << c->detail;
  }
  ASSERT_EQ(m.not_run.size(), 1u);
  EXPECT_EQ(m.not_run[0].status, CellStatus::kBundleInvalid);
  EXPECT_NE(m.not_run[0].reason.find("artifact-mismatch"), std::string::npos)
      << m.not_run[0].reason;
  // Nothing drifted and the portable column agreed, but a broken bundle is a failed claim.
  EXPECT_EQ(m.exit_code(), 1) << to_text(m);
}

TEST(Matrix, BundleInvalidColumnFailsTheRunAndIsListedWithItsReason) {
  // A copy of a tiny bundle with its goldens directory removed: the manifest and artifact are
  // fine, so the column is found, but none of its cases can be gated. The other column agrees.
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  copy_bundle(test_bundles() / "tiny-xnnpack-fp32", dir);
  fs::remove_all(dir / "tiny-xnnpack-fp32" / "tiny-xnnpack-fp32.goldens");
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.measured, 3u) << to_text(m);
  for (const Cell* c : cells_of(m, column_of(m, "tiny-portable-fp32")))
    EXPECT_EQ(c->status, CellStatus::kAgreed) << c->detail;
  for (const Cell* c : cells_of(m, column_of(m, "tiny-xnnpack-fp32")))
    EXPECT_EQ(c->status, CellStatus::kBundleInvalid) << c->detail;
  EXPECT_EQ(m.exit_code(), 1) << to_text(m);

  ASSERT_EQ(m.not_run.size(), 1u) << to_text(m);
  const NotRun& n = m.not_run[0];
  EXPECT_EQ(n.backend, "xnnpack");
  EXPECT_EQ(n.recipe, "fp32");
  EXPECT_EQ(n.status, CellStatus::kBundleInvalid);
  EXPECT_NE(n.reason.find("3 of 3 case(s)"), std::string::npos) << n.reason;
  EXPECT_NE(n.reason.find("goldens unreadable"), std::string::npos) << n.reason;

  const std::string text = to_text(m);
  EXPECT_NE(unwrapped(text).find("xnnpack/fp32: bundle-invalid (fails the run): tiny-xnnpack-fp32: 3 of 3 "
                                 "case(s) (case0, case1, case2): goldens unreadable"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3 cells measured: 3 agreed, 0 drifted; 3 cells not measured (3 bundle-invalid)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FAIL: tiny xnnpack/fp32 bundle-invalid"), std::string::npos) << text;
  const auto j = to_json(m);
  EXPECT_EQ(j.at("exit_code").get<int>(), 1);
  ASSERT_EQ(j.at("not_run").size(), 1u);
  EXPECT_EQ(j.at("not_run")[0].at("status"), "bundle-invalid");
  EXPECT_TRUE(j.at("not_run")[0].at("fails_run").get<bool>());
  EXPECT_NE(j.at("not_run")[0].at("reason").get<std::string>().find("goldens unreadable"),
            std::string::npos);
}

TEST(Matrix, NotLinkedColumnIsListedButDoesNotFailTheRun) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  copy_bundle(test_bundles() / "tiny-xnnpack-fp32", dir);
  // Recorded as a Vulkan export: a consistent manifest whose delegate this binary does not link.
  edit_manifest(dir / "tiny-xnnpack-fp32", [](nlohmann::json& d) {
    d["backend"] = "vulkan";
    d["delegates"] = {"VulkanBackend"};
  });
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.measured, 3u);
  ASSERT_EQ(m.not_run.size(), 1u);
  EXPECT_EQ(m.not_run[0].status, CellStatus::kNotLinked);
  EXPECT_FALSE(fails_run(CellStatus::kNotLinked));
  EXPECT_FALSE(fails_run(CellStatus::kUnavailable));
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  EXPECT_NE(to_text(m).find("vulkan/fp32: not-linked: "), std::string::npos) << to_text(m);
  EXPECT_NE(m.not_run[0].reason.find("VulkanBackend"), std::string::npos) << m.not_run[0].reason;
}

TEST(Matrix, ColumnWithNoKnownBoundRunsShowsItsNumbersAndFails) {
  // A compute unit the bound table has no row for (Core ML's Neural Engine named on an XNNPACK
  // bundle): no bound. (OpenVINO in float16 is no longer one: the replay asks the plugin which
  // precision it computes in here, and float16 has a derived row.)
  const std::string name = "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / name);
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / name, dir);
  edit_manifest(dir / name, [](nlohmann::json& d) { d["compute_unit"] = "ane"; });
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.columns.size(), 1u);
  EXPECT_FALSE(m.columns[0].bound.has_value());
  EXPECT_EQ(m.measured, 0u);
  ASSERT_EQ(m.cells.size(), 3u);
  for (const Cell& c : m.cells) {
    EXPECT_EQ(c.status, CellStatus::kNoBound);
    // It ran: the real measurements are shown, only the verdict is missing.
    ASSERT_TRUE(c.max_abs_error && c.cosine && c.sqnr_db);
    EXPECT_GT(*c.sqnr_db, 20);
    EXPECT_FALSE(c.headroom.has_value());
    EXPECT_NE(c.detail.find("no bound is known"), std::string::npos) << c.detail;
  }
  EXPECT_EQ(to_string(CellStatus::kNoBound), "no-bound");
  EXPECT_EQ(m.exit_code(), 1);
  ASSERT_EQ(m.not_run.size(), 1u);
  EXPECT_EQ(m.not_run[0].status, CellStatus::kNoBound);
  EXPECT_NE(m.not_run[0].reason.find("ane"), std::string::npos) << m.not_run[0].reason;
  EXPECT_NE(m.not_run[0].reason.find("--min-sqnr"), std::string::npos) << m.not_run[0].reason;
  const std::string text = to_text(m);
  EXPECT_NE(text.find("case2  no-bound "), std::string::npos) << text;  // its numbers
  EXPECT_NE(text.find("headroom - (no bound)"), std::string::npos) << text;

  // With a full caller bound the same column is judged, and says whose bound it was.
  BoundOverride caller;
  caller.atol = 0.05;  // OpenVINO computes in bfloat16 or float16 here: max |a-r| ~1e-3
  caller.rtol = 0;
  caller.min_cosine = 0.999;
  const Matrix judged = build_matrix(dir, caller);
  EXPECT_EQ(judged.measured, 3u) << to_text(judged);
  EXPECT_EQ(judged.exit_code(), 0) << to_text(judged);
  ASSERT_TRUE(judged.columns[0].bound);
  EXPECT_TRUE(judged.columns[0].bound->caller_supplied);
  EXPECT_EQ(judged.columns[0].bound->min_sqnr_db, -std::numeric_limits<double>::infinity());
  // A partial caller bound cannot be completed from a table with no entry: still no-bound.
  BoundOverride partial;
  partial.min_sqnr_db = 40;
  const Matrix still = build_matrix(dir, partial);
  EXPECT_EQ(still.exit_code(), 1);
  for (const Cell& c : still.cells) EXPECT_EQ(c.status, CellStatus::kNoBound);
  EXPECT_NE(still.not_run.at(0).reason.find("--atol"), std::string::npos);
}

TEST(Matrix, CallerBoundAppliesToEveryColumnAndIsReported) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  // An SQNR floor of 200 dB: no inexact output reaches it (the fp32 columns measure ~140 dB); an
  // output the delegate computes exactly (SQNR +inf: OpenVINO in float32 on a CPU without bf16)
  // does, and must still agree.
  BoundOverride strict;
  strict.min_sqnr_db = 200;
  const Matrix m = build_matrix(test_bundles(), strict);
  EXPECT_EQ(m.measured, m.cells.size());
  EXPECT_GE(m.measured, 9u);
  EXPECT_EQ(m.exit_code(), 1);
  for (const Column& c : m.columns) {
    ASSERT_TRUE(c.bound);
    EXPECT_TRUE(c.bound->caller_supplied) << c.bundle;
    EXPECT_EQ(c.bound->min_sqnr_db, 200);
    // The other fields are still the column's own derived ones.
    EXPECT_EQ(c.bound->atol, derive_bound(c.recipe, c.precision).atol) << c.bundle;
  }
  size_t drifted = 0;
  for (const Cell& c : m.cells) {
    ASSERT_TRUE(c.sqnr_db) << c.case_id;
    if (*c.sqnr_db >= 200) {
      EXPECT_EQ(c.status, CellStatus::kAgreed) << c.case_id << " " << c.detail;
      continue;
    }
    ++drifted;
    EXPECT_EQ(c.status, CellStatus::kDrifted);
    EXPECT_NE(c.detail.find("sqnr below bound"), std::string::npos) << c.detail;
  }
  EXPECT_GE(drifted, m.cells.size() - 3);  // at most one exact column (3 cases)
  const std::string text = to_text(m);
  EXPECT_NE(text.find("bound: caller-supplied for every column (--min-sqnr 200)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(caller-supplied)"), std::string::npos) << text;
  EXPECT_EQ(text.find("hint:"), std::string::npos) << text;  // the caller chose the bound
  const auto j = to_json(m);
  EXPECT_EQ(j.at("caller_bound"), "--min-sqnr 200");
  for (const auto& c : j.at("columns"))
    EXPECT_TRUE(c.at("bound").at("caller_supplied").get<bool>());

  // Drift under the derived bounds gets the hint instead.
  const Matrix derived = build_matrix(test_bundles());
  EXPECT_TRUE(to_json(derived).at("caller_bound").is_null());
}

TEST(Matrix, DelegateBackendWithNoDelegateInTheProgramIsAgreedUndelegated) {
  // A real program with no delegate, recorded as an xnnpack export: what the export half writes
  // when the partitioner tags nothing. The cells must not count as XNNPACK coverage.
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  edit_manifest(dir / "tiny-portable-fp32", [](nlohmann::json& d) { d["backend"] = "xnnpack"; });
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.columns.size(), 1u);
  EXPECT_EQ(m.measured, 3u);
  for (const Cell& c : m.cells) {
    EXPECT_EQ(c.status, CellStatus::kAgreedUndelegated);
    EXPECT_NE(c.detail.find("portable kernels"), std::string::npos) << c.detail;
  }
  EXPECT_NE(to_text(m).find("agreed-undelegated"), std::string::npos);
}

// ---- expected failures (DIR/xfail.json, docs/xfail.md) ----------------------------------------

void write_xfail(const fs::path& dir, const std::string& records) {
  std::ofstream(dir / "xfail.json") << R"({"schema_version": 1, "records": [)" << records << "]}\n";
}

std::string record(const std::string& model, const std::string& backend,
                   const std::string& recipe, const std::string& half = "runtime",
                   const std::string& reason = "known: the goldens were halved") {
  return nlohmann::json{{"model", model},   {"backend", backend}, {"recipe", recipe},
                        {"half", half},     {"reason", reason},   {"recorded", "2026-11-29"}}
      .dump();
}

// A copy of the tiny int8 bundle whose goldens are halved: the program is fine, the reference
// is not, so every case drifts under the derived bound (SQNR ≈ 0 dB, below its 9.6 dB floor).
fs::path halved_int8(const fs::path& dir) {
  const std::string name = "tiny-xnnpack-int8-dynamic-per-channel";
  copy_bundle(test_bundles() / name, dir);
  etproof::testing::scale_goldens(dir / name, 0.5);
  return dir / name;
}

TEST(Xfail, DriftedColumnWithARuntimeRecordIsXfailAndPasses) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel");
  const fs::path dir = scratch_dir();
  halved_int8(dir);
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  // Without a record: drift, and the run fails.
  const Matrix plain = build_matrix(dir);
  EXPECT_EQ(plain.exit_code(), 1) << to_text(plain);
  const size_t q = column_of(plain, "tiny-xnnpack-int8-dynamic-per-channel");
  for (const Cell* c : cells_of(plain, q)) ASSERT_EQ(c->status, CellStatus::kDrifted);

  write_xfail(dir, record("tiny", "xnnpack", "int8-dynamic-per-channel"));
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  EXPECT_EQ(m.measured, 6u);  // xfail cells are measured cells
  ASSERT_EQ(cells_of(m, q).size(), 3u);
  for (const Cell* c : cells_of(m, q)) {
    EXPECT_EQ(c->status, CellStatus::kXfail);
    // The measured numbers stay, and the detail carries both the reason and the failing rule.
    ASSERT_TRUE(c->max_abs_error && c->cosine && c->sqnr_db && c->headroom);
    EXPECT_LT(*c->sqnr_db, 9.6);  // the failing rule: allclose alone still has headroom
    EXPECT_NE(c->detail.find("known: the goldens were halved"), std::string::npos) << c->detail;
    EXPECT_NE(c->detail.find("sqnr below bound"), std::string::npos) << c->detail;
  }
  for (const Cell* c : cells_of(m, column_of(m, "tiny-portable-fp32")))
    EXPECT_EQ(c->status, CellStatus::kAgreed);
  EXPECT_FALSE(fails_run(CellStatus::kXfail));
  EXPECT_EQ(to_string(CellStatus::kXfail), "xfail");
  ASSERT_EQ(m.xfail.size(), 1u);
  EXPECT_EQ(m.xfail[0].result, XfailResult::kXfail);
  EXPECT_EQ(m.xfail_file, (dir / "xfail.json").string());

  const std::string text = to_text(m);
  EXPECT_NE(text.find("6 cells measured: 3 agreed, 0 drifted, 3 xfail"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1 xfail record(s) (1 xfail)"), std::string::npos) << text;
  EXPECT_NE(unwrapped(text).find("expected failures (" + (dir / "xfail.json").string() + "):"),
            std::string::npos)
      << text;
  EXPECT_NE(unwrapped(text).find("tiny xnnpack/int8-dynamic-per-channel (runtime half), recorded "
                                 "2026-11-29: xfail: column tiny-xnnpack-int8-dynamic-per-channel: 3 xfail"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    case0: xfail, max abs error "), std::string::npos) << text;
  EXPECT_NE(text.find("\nPASS — "), std::string::npos) << text;
  EXPECT_EQ(text.find("hint:"), std::string::npos) << text;  // nothing drifted unexpectedly
  EXPECT_NE(to_markdown(m).find("`xfail`"), std::string::npos) << to_markdown(m);
  const auto j = to_json(m);
  EXPECT_EQ(j.at("exit_code"), 0);
  ASSERT_EQ(j.at("xfail").at("records").size(), 1u);
  const auto& r = j.at("xfail").at("records")[0];
  EXPECT_EQ(r.at("outcome"), "xfail");
  EXPECT_FALSE(r.at("fails_run").get<bool>());
  EXPECT_EQ(r.at("half"), "runtime");
  EXPECT_EQ(r.at("reason"), "known: the goldens were halved");
  size_t xfail_cells = 0;
  for (const auto& c : j.at("cells"))
    if (c.at("status") == "xfail") {
      ++xfail_cells;
      EXPECT_TRUE(c.at("sqnr_db").is_number());
    }
  EXPECT_EQ(xfail_cells, 3u);
}

TEST(Xfail, ARecordNamingCasesCoversOnlyThoseCases) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel");
  const fs::path dir = scratch_dir();
  halved_int8(dir);
  nlohmann::json r = nlohmann::json::parse(record("tiny", "xnnpack", "int8-dynamic-per-channel"));
  r["cases"] = {"case0", "case2"};
  write_xfail(dir, r.dump());
  const Matrix m = build_matrix(dir);
  // case1 drifted too and no record covers it: the run fails, on that cell alone.
  EXPECT_EQ(m.exit_code(), 1) << to_text(m);
  for (const Cell& c : m.cells)
    EXPECT_EQ(c.status, c.case_id == "case1" ? CellStatus::kDrifted : CellStatus::kXfail)
        << c.case_id;
  ASSERT_EQ(m.xfail.size(), 1u);
  EXPECT_EQ(m.xfail[0].result, XfailResult::kXfail);
  EXPECT_NE(m.xfail[0].detail.find("(cases case0, case2): 2 xfail"), std::string::npos)
      << m.xfail[0].detail;
  EXPECT_EQ(to_json(m).at("xfail").at("records")[0].at("cases"),
            nlohmann::json::array({"case0", "case2"}));
  // Cases belong to the runtime half only.
  r["half"] = "export";
  write_xfail(dir, r.dump());
  try {
    (void)build_matrix(dir);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kXfailInvalid);
    EXPECT_NE(e.cause().find("records[0].cases: only a runtime record names cases"),
              std::string::npos)
        << e.cause();
  }
}

TEST(Xfail, RecordOnAnAgreeingColumnIsXpassAndFailsTheRun) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  copy_bundle(test_bundles() / "tiny-xnnpack-fp32", dir);
  write_xfail(dir, record("tiny", "xnnpack", "fp32"));
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.exit_code(), 1) << to_text(m);
  EXPECT_TRUE(fails_run(CellStatus::kXpass));
  const std::string msg = "unexpected pass: update or remove the xfail record in " +
                          (dir / "xfail.json").string();
  for (const Cell* c : cells_of(m, column_of(m, "tiny-xnnpack-fp32"))) {
    EXPECT_EQ(c->status, CellStatus::kXpass);
    EXPECT_NE(c->detail.find(msg), std::string::npos) << c->detail;
    EXPECT_TRUE(c->max_abs_error.has_value());
  }
  for (const Cell* c : cells_of(m, column_of(m, "tiny-portable-fp32")))
    EXPECT_EQ(c->status, CellStatus::kAgreed);
  ASSERT_EQ(m.xfail.size(), 1u);
  EXPECT_EQ(m.xfail[0].result, XfailResult::kXpass);
  const std::string text = to_text(m);
  EXPECT_NE(text.find("6 cells measured: 3 agreed, 0 drifted, 3 xpass"), std::string::npos)
      << text;
  EXPECT_NE(unwrapped(text).find("FAIL: xnnpack/fp32 xpass (runtime half): " + msg), std::string::npos)
      << text;
  EXPECT_NE(text.find("xpass (fails the run)"), std::string::npos) << text;
  const auto j = to_json(m);
  EXPECT_EQ(j.at("xfail").at("records")[0].at("outcome"), "xpass");
  EXPECT_TRUE(j.at("xfail").at("records")[0].at("fails_run").get<bool>());
  EXPECT_NE(to_markdown(m).find("`xpass`"), std::string::npos);
}

TEST(Xfail, RecordsThatMatchNothingAreListedAsStaleAndDoNotFail) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  // Another model's column, a pair never exported, and an export record with no report at all.
  write_xfail(dir, record("other_model", "portable", "fp32") + "," +
                       record("tiny", "coreml", "fp16") + "," +
                       record("tiny", "vulkan", "fp32", "export"));
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  for (const Cell& c : m.cells) EXPECT_EQ(c.status, CellStatus::kAgreed);
  ASSERT_EQ(m.xfail.size(), 3u);
  for (const XfailOutcome& x : m.xfail) {
    EXPECT_EQ(x.result, XfailResult::kStale) << x.detail;
    EXPECT_NE(x.detail.find("remove it"), std::string::npos) << x.detail;
  }
  const std::string text = to_text(m);
  EXPECT_NE(text.find("other_model portable/fp32 (runtime half), recorded 2026-11-29: stale: "
                      "matches no column"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tiny vulkan/fp32 (export half), recorded 2026-11-29: stale: matches no "
                      "export-report.json entry"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3 xfail record(s) (3 stale)"), std::string::npos) << text;
  const nlohmann::json doc = to_json(m);  // a named value: the loop must not outlive it
  for (const auto& r : doc.at("xfail").at("records")) {
    EXPECT_EQ(r.at("outcome"), "stale");
    EXPECT_FALSE(r.at("fails_run").get<bool>());
  }
}

TEST(Xfail, MalformedFileIsATypedErrorNamingTheField) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  auto error_for = [&](const std::string& content) -> std::string {
    std::ofstream(dir / "xfail.json") << content;
    try {
      (void)build_matrix(dir);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kXfailInvalid) << e.what();
      EXPECT_NE(e.cause().find((dir / "xfail.json").string()), std::string::npos) << e.cause();
      EXPECT_NE(e.remedy().find("docs/xfail.md"), std::string::npos) << e.remedy();
      return e.cause();
    }
    ADD_FAILURE() << "no error for " << content;
    return "";
  };
  EXPECT_NE(error_for("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_for(R"({"schema_version": 2, "records": []})")
                .find("schema_version: must be 1, found 2"),
            std::string::npos);
  EXPECT_NE(error_for(R"({"schema_version": 1, "records": {}})").find("records: expected an array, found an object"),
            std::string::npos);
  nlohmann::json bad = nlohmann::json::parse(record("tiny", "portable", "fp32"));
  bad["half"] = "both";
  std::string cause =
      error_for(R"({"schema_version": 1, "records": [)" + bad.dump() + "]}");
  EXPECT_NE(cause.find("records[0].half: unknown value 'both' (known: 'export', 'runtime')"),
            std::string::npos)
      << cause;
  // Every problem at once: a missing reason, a bad date, an unknown field, a duplicate.
  nlohmann::json no_reason = nlohmann::json::parse(record("tiny", "portable", "fp32"));
  no_reason.erase("reason");
  nlohmann::json bad_date = nlohmann::json::parse(record("tiny", "xnnpack", "fp32"));
  bad_date["recorded"] = "29/11/2026";
  nlohmann::json extra = nlohmann::json::parse(record("tiny", "openvino", "fp32"));
  extra["case"] = "case0";
  cause = error_for(R"({"schema_version": 1, "records": [)" + no_reason.dump() + "," +
                    bad_date.dump() + "," + extra.dump() + "," +
                    record("tiny", "openvino", "fp32") + "]}");
  for (const char* want : {"records[0].reason: missing",
                           "records[1].recorded: '29/11/2026' does not match ^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                           "records[2].case: is not a field of schema/xfail.schema.json",
                           "records[3]: the same model/backend/recipe/half as an earlier record"})
    EXPECT_NE(cause.find(want), std::string::npos) << want << "\n" << cause;
  EXPECT_EQ(to_string(ErrorKind::kXfailInvalid), "xfail-invalid");
}

TEST(Xfail, ExportRecordsAgainstTheExportReport) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  std::ofstream(dir / "export-report.json") << R"({"results": [
    {"backend": "portable", "recipe": "fp32", "bundle": "tiny-portable-fp32", "status": "exported"},
    {"backend": "vulkan", "recipe": "fp32", "model": "tiny", "status": "export-failed",
     "stage": "lower", "reason": "RuntimeError: no partitioner tagged any node"},
    {"backend": "coreml", "recipe": "fp16", "model": "tiny", "status": "export-refused",
     "reason": "coremltools is not installed"}
  ]})";
  // Without a record the export failure fails the run.
  EXPECT_EQ(build_matrix(dir).exit_code(), 1);

  // An export record on the failed pair: xfail, the run passes; on the refused one: not
  // exercised (the export half never tried), listed, not failing.
  write_xfail(dir, record("tiny", "vulkan", "fp32", "export", "Vulkan cannot lower tiny's ops") +
                       "," + record("tiny", "coreml", "fp16", "export"));
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  ASSERT_EQ(m.xfail.size(), 2u);
  EXPECT_EQ(m.xfail[0].result, XfailResult::kXfail) << m.xfail[0].detail;
  EXPECT_EQ(m.xfail[1].result, XfailResult::kNotExercised) << m.xfail[1].detail;
  bool vulkan = false;
  for (const NotRun& n : m.not_run)
    if (n.backend == "vulkan") {
      vulkan = true;
      EXPECT_EQ(n.status, CellStatus::kXfail);
      EXPECT_NE(n.reason.find("Vulkan cannot lower tiny's ops"), std::string::npos) << n.reason;
      EXPECT_NE(n.reason.find("at lower: RuntimeError"), std::string::npos) << n.reason;
    } else if (n.backend == "coreml") {
      EXPECT_EQ(n.status, CellStatus::kExportRefused);
    }
  EXPECT_TRUE(vulkan) << to_text(m);
  const std::string text = to_text(m);
  EXPECT_NE(text.find("vulkan/fp32: xfail: expected failure"), std::string::npos) << text;
  EXPECT_NE(text.find("2 xfail record(s) (1 xfail, 1 not-exercised)"), std::string::npos) << text;

  // An export record on a pair that exported (the report's entry names its bundle, whose NAME
  // is the model): xpass for that column, and the run fails.
  write_xfail(dir, record("tiny", "portable", "fp32", "export") + "," +
                       record("tiny", "vulkan", "fp32", "export"));
  const Matrix x = build_matrix(dir);
  EXPECT_EQ(x.exit_code(), 1) << to_text(x);
  ASSERT_EQ(x.xfail.size(), 2u);
  EXPECT_EQ(x.xfail[0].result, XfailResult::kXpass) << x.xfail[0].detail;
  EXPECT_NE(x.xfail[0].detail.find("unexpected pass"), std::string::npos) << x.xfail[0].detail;
  // The runtime cells of that column are what they are: the record is about the export half.
  for (const Cell& c : x.cells) EXPECT_EQ(c.status, CellStatus::kAgreed);
  EXPECT_NE(unwrapped(to_text(x)).find("FAIL: portable/fp32 xpass (export half): unexpected pass: update or "
                            "remove the xfail record in " +
                            (dir / "xfail.json").string()),
            std::string::npos)
      << to_text(x);
  EXPECT_EQ(to_json(x).at("exit_code"), 1);
}

TEST(Matrix, DemoBundlesEveryPhotoOnEveryColumn) {
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-int8-static-per-channel");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const Matrix m = build_matrix(demo_bundles());
  EXPECT_EQ(m.cases.size(), 6u);
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  // Every column whose delegates run here is measured on every photo and agrees; the others
  // (Core ML, Vulkan, WebGPU: exported here, runtime not in this wheel) are not-linked and listed.
  std::set<std::string> measured_columns;
  for (const Cell& c : m.cells) {
    const Column& col = m.columns.at(c.column);
    const std::string label = col.backend + "/" + col.recipe;
    if (c.status == CellStatus::kNotLinked) {
      EXPECT_TRUE(col.backend == "coreml" || col.backend == "vulkan" || col.backend == "webgpu")
          << label << ": " << c.detail;
      // The reason carries what the backend table says its runtime needs.
      EXPECT_NE(c.detail.find("runs on"), std::string::npos) << c.detail;
      continue;
    }
    // The one recorded expected failure (data/demo-xfail.json, copied there by the demo):
    // static int8 drifts against the int8 target bound on the photos the record lists, and
    // agrees on the others.
    if (label == "xnnpack/int8-static-per-channel") {
      ASSERT_EQ(m.xfail.size(), 1u) << to_text(m);
      const auto& listed = m.xfail[0].record.cases;
      const bool expected = std::find(listed.begin(), listed.end(), c.case_id) != listed.end();
      EXPECT_EQ(c.status, expected ? CellStatus::kXfail : CellStatus::kAgreed)
          << label << " " << c.case_id << ": " << c.detail;
    } else
      EXPECT_EQ(c.status, CellStatus::kAgreed) << label << " " << c.case_id << ": " << c.detail;
    EXPECT_TRUE(c.sqnr_db.has_value());
    measured_columns.insert(label);
  }
  for (const char* col : {"portable/fp32", "xnnpack/fp32", "xnnpack/int8-dynamic-per-channel",
                          "xnnpack/int8-static-per-channel"})
    EXPECT_TRUE(measured_columns.count(col)) << col << "\n" << to_text(m);
  ASSERT_EQ(m.xfail.size(), 1u) << to_text(m);
  EXPECT_EQ(m.xfail[0].result, XfailResult::kXfail) << m.xfail[0].detail;
  EXPECT_EQ(m.measured, 6u * measured_columns.size()) << to_text(m);
  for (const NotRun& n : m.not_run) EXPECT_EQ(n.status, CellStatus::kNotLinked) << n.reason;
  for (const char* photo : {"chelsea", "coffee", "astronaut", "rocket", "china", "flower"})
    EXPECT_NE(std::find(m.cases.begin(), m.cases.end(), photo), m.cases.end()) << photo;
}

}  // namespace
}  // namespace etproof

namespace etproof {
namespace {

// export-report.json entries name their model: another model's column for the same (backend,
// recipe) does not stand in for a bundle the report says was exported but is missing, and every
// not-run line names its model.
TEST(MatrixModels, AReportedBundleMissingIsNotMaskedByAnotherModelsColumn) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-xnnpack-fp32", dir);
  std::ofstream(dir / "export-report.json")
      << R"({"results": [)"
      << R"({"model": "tiny", "backend": "xnnpack", "recipe": "fp32", "status": "exported"},)"
      << R"({"model": "other", "backend": "xnnpack", "recipe": "fp32", "status": "exported"}]})";
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.not_run.size(), 1u) << to_text(m);
  EXPECT_EQ(m.not_run[0].model, "other");
  EXPECT_EQ(m.not_run[0].status, CellStatus::kBundleInvalid);
  EXPECT_NE(to_text(m).find("other xnnpack/fp32: bundle-invalid"), std::string::npos) << to_text(m);
  EXPECT_EQ(to_json(m).at("not_run").at(0).at("model"), "other");
  EXPECT_EQ(m.exit_code(), 1);
}

}  // namespace
}  // namespace etproof

namespace etproof {
namespace {

// A matrix where nothing ran (its one column not linked here) says nothing of repeated runs: no
// "each case ran 2x, bit-identical" beside "0 cells measured" (a newcomer read it as evidence).
TEST(MatrixText, NothingMeasuredClaimsNoRepeatedRuns) {
  const fs::path src = test_bundles() / "quantizers" / "tiny-vulkan-int8-weight-only";
  ETPROOF_REQUIRE_BUNDLE(src);
  const fs::path dir = scratch_dir() / "only-not-linked";
  fs::create_directories(dir);
  fs::copy(src, dir / src.filename(), fs::copy_options::recursive);
  Repetition twice;
  twice.repeat = 2;
  const Matrix m = build_matrix(dir, {}, 1, std::nullopt, {}, {}, twice);
  if (m.measured > 0) GTEST_SKIP() << "VulkanBackend is linked here: its column ran";
  const std::string text = to_text(m);
  EXPECT_NE(text.find("0 cells measured"), std::string::npos) << text;
  EXPECT_EQ(text.find("each case ran"), std::string::npos) << text;
  EXPECT_EQ(text.find("bit-identical"), std::string::npos) << text;
}

}  // namespace
}  // namespace etproof

namespace etproof {
namespace {

// The verdict line names a column computed here in a lower precision than its recipe names:
// OpenVINO's fp32 on a CPU with bfloat16 units, whether the bundle was exported on such a CPU
// (its manifest says bfloat16) or its hint said so here; never a column in its recipe's precision.
TEST(MatrixText, TheVerdictNamesAColumnComputedBelowItsRecipesPrecision) {
  const fs::path dir = scratch_dir() / "precision";
  fs::create_directories(dir);
  for (const char* name : {"tiny-openvino-fp32", "tiny-xnnpack-fp32"}) {
    ETPROOF_REQUIRE_BUNDLE(test_bundles() / name);
    fs::copy(test_bundles() / name, dir / name, fs::copy_options::recursive);
  }
  const Matrix m = build_matrix(dir);
  const fs::path ov = dir / "tiny-openvino-fp32";
  const auto col = std::find_if(m.columns.begin(), m.columns.end(), [](const Column& c) { return c.backend == "openvino"; });
  ASSERT_NE(col, m.columns.end()) << to_text(m);
  const std::string text = unwrapped(to_text(m));
  if (col->precision == "float32") {
    EXPECT_EQ(text.find("lower precision"), std::string::npos) << text;
    GTEST_SKIP() << "OpenVINO computes fp32 in float32 on this CPU: nothing lower to name";
  }
  EXPECT_NE(text.find("computed here in a lower precision than the recipe names: openvino/fp32 in " + col->precision),
            std::string::npos) << text;
  EXPECT_EQ(text.find("xnnpack/fp32 in"), std::string::npos) << text;
}

}  // namespace
}  // namespace etproof
