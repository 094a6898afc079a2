// The matrix over real exported bundles: every column found is measured or listed with a reason.
#include "etproof/matrix.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include <set>

#include <gtest/gtest.h>

#include "etproof/bundle.h"
#include "etproof/error.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
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

TEST(Matrix, TestBundlesAreAllMeasuredAndAgree) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const Matrix m = build_matrix(test_bundles());
  ASSERT_EQ(m.columns.size(), 3u) << to_text(m);
  EXPECT_EQ(m.cases.size(), 3u);
  EXPECT_EQ(m.measured, 9u) << to_text(m);
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  for (const Cell& c : m.cells) EXPECT_EQ(c.status, CellStatus::kAgreed) << c.detail;

  const size_t portable = column_of(m, "tiny-portable-fp32");
  EXPECT_TRUE(m.columns[portable].delegates.empty());
  EXPECT_EQ(m.columns[portable].backend, "portable");
  const size_t xnn = column_of(m, "tiny-xnnpack-fp32");
  EXPECT_EQ(m.columns[xnn].delegates, std::vector<std::string>{"XnnpackBackend"});
  // Portable and XNNPACK fp32 share one bound; int8 has its own, looser one.
  ASSERT_TRUE(m.columns[xnn].bound && m.columns[portable].bound);
  EXPECT_EQ(m.columns[xnn].bound->atol, m.columns[portable].bound->atol);
  const size_t q = column_of(m, "tiny-xnnpack-int8-dynamic-per-channel");
  ASSERT_TRUE(m.columns[q].bound);
  EXPECT_GT(m.columns[q].bound->atol, m.columns[xnn].bound->atol);
  for (const Cell* c : cells_of(m, q)) {
    ASSERT_TRUE(c->max_abs_error && c->cosine && c->headroom);
    EXPECT_GE(*c->headroom, 0);
  }

  const std::string text = to_text(m);
  EXPECT_NE(text.find("9 cells measured: 9 agreed, 0 drifted"), std::string::npos) << text;
  EXPECT_NE(text.find("xnnpack/int8-dynamic-per-channel"), std::string::npos) << text;
  const std::string md = to_markdown(m);
  EXPECT_NE(md.find("| case |"), std::string::npos) << md;
  EXPECT_NE(md.find("`agreed`"), std::string::npos) << md;
}

TEST(Matrix, JsonHasTheDocumentedKeys) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const Matrix m = build_matrix(test_bundles());
  const auto j = nlohmann::json::parse(to_json(m).dump());
  ASSERT_EQ(j.at("columns").size(), m.columns.size());
  for (const auto& c : j.at("columns"))
    for (const char* k : {"backend", "recipe", "precision", "delegates", "bundle", "bound"})
      EXPECT_TRUE(c.contains(k)) << k;
  ASSERT_EQ(j.at("cells").size(), 9u);
  for (const auto& c : j.at("cells")) {
    for (const char* k : {"case", "backend", "recipe", "status", "max_abs_error", "cosine",
                          "sqnr_db", "headroom", "bound", "detail"})
      EXPECT_TRUE(c.contains(k)) << k;
    EXPECT_EQ(c.at("status"), "agreed");
    EXPECT_TRUE(c.at("max_abs_error").is_number());
  }
  EXPECT_TRUE(j.at("not_run").is_array());
  EXPECT_EQ(j.at("measured").get<size_t>(), 9u);
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

TEST(Matrix, EmptyDirectoryMeasuresNothingAndFails) {
  const fs::path dir = scratch_dir();
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.measured, 0u);
  EXPECT_TRUE(m.columns.empty());
  EXPECT_EQ(m.exit_code(), 1);
  EXPECT_NE(to_text(m).find("nothing was measured"), std::string::npos) << to_text(m);
}

TEST(Matrix, MissingDirectoryIsAnError) {
  try {
    build_matrix(scratch_dir() / "does-not-exist");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
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
  EXPECT_NE(text.find("xnnpack/fp32: bundle-invalid (fails the run): tiny-xnnpack-fp32: 3 of 3 "
                      "case(s) (case0, case1, case2): goldens unreadable"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3 cells measured: 3 agreed, 0 drifted; 3 not measured (3 bundle-invalid)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FAIL: xnnpack/fp32 bundle-invalid"), std::string::npos) << text;
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
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  copy_bundle(test_bundles() / "tiny-portable-fp32", dir);
  edit_manifest(dir / "tiny-portable-fp32",
                [](nlohmann::json& d) { d["recipe"] = "int4-weight-only"; });
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.columns.size(), 1u);
  EXPECT_FALSE(m.columns[0].bound.has_value());
  EXPECT_EQ(m.measured, 0u);
  ASSERT_EQ(m.cells.size(), 3u);
  for (const Cell& c : m.cells) {
    EXPECT_EQ(c.status, CellStatus::kNoBound);
    // It ran: the real measurements are shown, only the verdict is missing.
    ASSERT_TRUE(c.max_abs_error && c.cosine && c.sqnr_db);
    EXPECT_LT(*c.max_abs_error, 1e-6);
    EXPECT_GT(*c.sqnr_db, 100);
    EXPECT_FALSE(c.headroom.has_value());
    EXPECT_NE(c.detail.find("no bound is known"), std::string::npos) << c.detail;
  }
  EXPECT_EQ(to_string(CellStatus::kNoBound), "no-bound");
  EXPECT_EQ(m.exit_code(), 1);
  ASSERT_EQ(m.not_run.size(), 1u);
  EXPECT_EQ(m.not_run[0].status, CellStatus::kNoBound);
  EXPECT_NE(m.not_run[0].reason.find("int4-weight-only"), std::string::npos) << m.not_run[0].reason;
  EXPECT_NE(m.not_run[0].reason.find("--min-sqnr"), std::string::npos) << m.not_run[0].reason;
  const std::string text = to_text(m);
  EXPECT_NE(text.find("case2  no-bound 6e-08 1-"), std::string::npos) << text;  // its numbers
  EXPECT_NE(text.find("headroom - (no bound)"), std::string::npos) << text;

  // With a full caller bound the same column is judged, and says whose bound it was.
  BoundOverride caller;
  caller.atol = 1e-4;
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
  // An SQNR floor of 200 dB: no column reaches it (the fp32 columns measure ~140 dB).
  BoundOverride strict;
  strict.min_sqnr_db = 200;
  const Matrix m = build_matrix(test_bundles(), strict);
  EXPECT_EQ(m.measured, 9u);
  EXPECT_EQ(m.exit_code(), 1);
  for (const Column& c : m.columns) {
    ASSERT_TRUE(c.bound);
    EXPECT_TRUE(c.bound->caller_supplied) << c.bundle;
    EXPECT_EQ(c.bound->min_sqnr_db, 200);
    // The other fields are still the column's own derived ones.
    EXPECT_EQ(c.bound->atol, derive_bound(c.recipe, c.precision).atol) << c.bundle;
  }
  for (const Cell& c : m.cells) {
    EXPECT_EQ(c.status, CellStatus::kDrifted);
    EXPECT_NE(c.detail.find("sqnr below bound"), std::string::npos) << c.detail;
  }
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

TEST(Matrix, DemoBundlesEveryPhotoOnEveryColumn) {
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-int8-dynamic-per-channel");
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
    EXPECT_EQ(c.status, CellStatus::kAgreed) << label << " " << c.case_id << ": " << c.detail;
    EXPECT_TRUE(c.sqnr_db.has_value());
    measured_columns.insert(label);
  }
  for (const char* col : {"portable/fp32", "xnnpack/fp32", "xnnpack/int8-dynamic-per-channel"})
    EXPECT_TRUE(measured_columns.count(col)) << col << "\n" << to_text(m);
  EXPECT_EQ(m.measured, 6u * measured_columns.size()) << to_text(m);
  for (const NotRun& n : m.not_run) EXPECT_EQ(n.status, CellStatus::kNotLinked) << n.reason;
  for (const char* photo : {"chelsea", "coffee", "astronaut", "rocket", "china", "flower"})
    EXPECT_NE(std::find(m.cases.begin(), m.cases.end(), photo), m.cases.end()) << photo;
}

}  // namespace
}  // namespace etproof
