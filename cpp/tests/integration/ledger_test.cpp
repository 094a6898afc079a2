// The evidence ledger (integration): records from real matrix and parity runs on the test bundles,
// and the CLI runs (backends, matrix, parity) that append to it. Records, ids, append-only writing
// and the reader's typed errors on constructed reports are unit/ledger_test.cpp's.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/replay/backends_report.h"
#include "etproof/render/backends.h"
#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/core/status.h"
#include "ledger_support.h"
#include "test_support.h"

namespace fs = std::filesystem;
using etproof::testing::quote;
using etproof::testing::slurp;
using etproof::Error;
using etproof::ErrorKind;
using nlohmann::json;
using namespace etproof;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

namespace {

// Anything in this test binary that spawns the CLI without ctest's environment still must not
// write to the user's own ledger.
const bool kLedgerEnvSet = [] {
  if (!std::getenv("ETPROOF_LEDGER"))
    setenv("ETPROOF_LEDGER",
           (etproof::testing::tests_tmp_root() / "unset-ledger.jsonl").c_str(), 1);
  return true;
}();

using etproof::testing::count_lines;
using etproof::testing::ctx;

// A copy of a test bundle in `dir`, its manifest edited as the export half would write it.
fs::path copy_bundle(const std::string& name, const fs::path& dir,
                     const std::function<void(json&)>& edit = {}) {
  fs::copy(test_bundles() / name, dir / name, fs::copy_options::recursive);
  if (edit) {
    const fs::path path = dir / name / (name + ".etproof.json");
    json doc = json::parse(slurp(path));
    edit(doc);
    std::ofstream(path) << doc.dump(2) << "\n";
  }
  return dir / name;
}

using CliRun = etproof::testing::CliResult;

CliRun cli(const std::string& args, const std::string& env) {
  return etproof::testing::run_etproof(args, env);
}

}  // namespace

// Records from typed reports made by running real bundles: every field from the report, none
// re-read from disk.
TEST(Ledger, RecordsFromARealMatrixAndParityRun) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const Matrix m = build_matrix(test_bundles());
  ASSERT_FALSE(m.columns.empty());
  const auto recs = records_from_matrix(ctx(), m);
  for (size_t ci = 0; ci < m.columns.size(); ++ci) {
    const Column& col = m.columns[ci];
    const Manifest manifest =
        read_manifest(fs::path(col.dir) / col.bundle / (col.bundle + ".etproof.json"));
    size_t exported = 0, cases = 0;
    for (const json& r : recs) {
      if (r.value("bundle", std::string()) != col.bundle) continue;
      // The bundle's facts as its manifest has them.
      EXPECT_EQ(r["bundle_sha256"], manifest.artifact.sha256);
      EXPECT_EQ(r["bundle_created_utc"], manifest.created_utc);
      EXPECT_EQ(r["bundle_toolchain"], json(manifest.toolchain));
      EXPECT_EQ(r["model"], manifest.model);
      EXPECT_EQ(r["recipe"], manifest.recipe);
      EXPECT_EQ(r["precision"], manifest.precision);
      EXPECT_EQ(r["backend"], manifest.backend);
      EXPECT_EQ(r["backend_ids"], json(col.delegates));
      if (r["half"] == "export") {
        ++exported;
        EXPECT_EQ(r["status"], "exported");
        continue;
      }
      // A runtime record: one status of the replay vocabulary, with the cells' worst numbers.
      const auto st = status_from_string(r["status"].get<std::string>());
      ASSERT_TRUE(st.has_value()) << r["status"];
      double worst = 0;
      size_t n = 0;
      for (const Cell& c : m.cells)
        if (c.column == ci && c.status == *st) {
          ++n;
          worst = std::max(worst, c.max_abs_error.value_or(0));
        }
      ASSERT_TRUE(r.contains("numbers")) << r.dump();
      EXPECT_EQ(r["numbers"]["cases"], n);
      EXPECT_EQ(r["numbers"]["case_ids"].size(), n);
      EXPECT_DOUBLE_EQ(r["numbers"]["max_abs_error"].get<double>(), worst);
      ASSERT_TRUE(col.bound.has_value());
      EXPECT_DOUBLE_EQ(r["numbers"]["bound"]["atol"].get<double>(), col.bound->atol);
      EXPECT_DOUBLE_EQ(r["numbers"]["bound"]["min_cosine"].get<double>(), col.bound->min_cosine);
      cases += n;
    }
    EXPECT_EQ(exported, 1u) << col.bundle;
    EXPECT_EQ(cases, manifest.goldens.size()) << col.bundle;
  }

  // parity: one record, agreed, with the report's numbers.
  const ParityReport r = replay(test_bundles() / "tiny-xnnpack-fp32");
  ASSERT_TRUE(r.passed) << to_text(r);
  const auto p = records_from_parity(ctx(), r);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["status"], "agreed");
  EXPECT_EQ(p[0]["bundle"], "tiny-xnnpack-fp32");
  EXPECT_EQ(p[0]["bundle_sha256"], r.bundle_sha256);
  EXPECT_EQ(p[0]["bundle_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(p[0]["bundle_created_utc"], r.bundle_created_utc);
  EXPECT_EQ(p[0]["backend_ids"], json({"XnnpackBackend"}));
  EXPECT_FALSE(p[0].contains("reason"));
  double worst = 0, lowest_cosine = 1;
  json ids = json::array();
  for (const CaseReport& c : r.cases) {
    ids.push_back(c.case_id);
    for (const TensorReport& t : c.outputs) {
      worst = std::max(worst, t.max_abs_error);
      lowest_cosine = std::min(lowest_cosine, t.cosine);
    }
  }
  EXPECT_EQ(p[0]["numbers"]["case_ids"], ids);
  EXPECT_EQ(p[0]["numbers"]["cases"], r.cases.size());
  EXPECT_DOUBLE_EQ(p[0]["numbers"]["max_abs_error"].get<double>(), worst);
  EXPECT_DOUBLE_EQ(p[0]["numbers"]["cosine"].get<double>(), lowest_cosine);
  EXPECT_EQ(p[0]["numbers"]["bound"]["caller_supplied"], false);
  EXPECT_EQ(p[0]["numbers"]["against"], r.against);  // "float64" for a bundle with references

  // Drift under a caller's tight bound: drifted, the failing rules as the reason.
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel");
  ReplayOptions tight;
  tight.caller.atol = 1e-7;
  tight.caller.rtol = 0;
  tight.caller.min_cosine = 0.9999999;
  const ParityReport d = replay(test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel", tight);
  ASSERT_FALSE(d.passed);
  const auto dr = records_from_parity(ctx(), d);
  ASSERT_EQ(dr.size(), 1u);
  EXPECT_EQ(dr[0]["status"], "drifted");
  EXPECT_NE(dr[0]["reason"].get<std::string>().find(d.cases.front().case_id + "/"), std::string::npos)
      << dr[0]["reason"];
  EXPECT_EQ(dr[0]["numbers"]["bound"]["caller_supplied"], true);
  EXPECT_DOUBLE_EQ(dr[0]["numbers"]["bound"]["atol"].get<double>(), 1e-7);

  // Failed on the recipe's cost alone (a budget no int8 emulation meets) while the program is
  // faithful: over-budget, not drifted, and the reason names the budget.
  const fs::path int8 = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ReplayOptions budget;
  budget.budget = Budget{};
  budget.budget->min_sqnr_db = 1000;
  const ParityReport b = replay(int8, budget);
  if (b.cases.empty() || b.cases.front().costs.empty()) return;  // exported without references
  ASSERT_TRUE(replay(int8).passed) << "the tiny int8 program agrees without a budget";
  const auto br = records_from_parity(ctx(), b);
  ASSERT_EQ(br.size(), 1u);
  EXPECT_EQ(br[0]["status"], "over-budget");
  EXPECT_NE(br[0]["reason"].get<std::string>().find("over the budget"), std::string::npos)
      << br[0]["reason"];
}

// A parity run that ended in an Error: its record's status is status_of(the Error), by kind —
// whether the bundle was refused, a case could not be measured, or no bound is known.
TEST(Ledger, ParityErrorRecordTakesItsStatusFromTheErrorKind) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  struct Case {
    fs::path bundle;
    ErrorKind kind;
    std::string status;
  };
  std::vector<Case> cases;
  // The artifact does not match its manifest.
  const fs::path broken = copy_bundle("tiny-portable-fp32", dir);
  std::ofstream(broken / "tiny-portable-fp32.pte", std::ios::app) << "x";
  cases.push_back({broken, ErrorKind::kArtifactMismatch, "bundle-invalid"});
  // A delegate this binary does not link (a consistent manifest of a Vulkan export).
  cases.push_back({copy_bundle("tiny-xnnpack-fp32", dir,
                               [](json& d) {
                                 d["backend"] = "vulkan";
                                 d["delegates"] = {"VulkanBackend"};
                               }),
                   ErrorKind::kBackendNotLinked, "not-linked"});
  // No bound known (a compute unit the bound table has no row for).
  fs::create_directories(dir / "nobound");
  cases.push_back({copy_bundle("tiny-xnnpack-fp32", dir / "nobound",
                               [](json& d) { d["compute_unit"] = "ane"; }),
                   ErrorKind::kCapabilityUnavailable, "no-bound"});
  // A golden case that cannot be read.
  fs::create_directories(dir / "npy");
  const fs::path goldens = copy_bundle("tiny-xnnpack-fp32", dir / "npy");
  const Manifest gm = read_manifest(goldens / "tiny-xnnpack-fp32.etproof.json");
  ASSERT_FALSE(gm.goldens.empty());
  std::ofstream(goldens / "tiny-xnnpack-fp32.goldens" / gm.goldens.front().outputs.begin()->second,
                std::ios::trunc)
      << "not npy";
  etproof::testing::rehash_references(goldens);  // hashed as written: the bytes reach the .npy reader
  cases.push_back({goldens, ErrorKind::kNpyInvalid, "bundle-invalid"});
  // The same file edited after export (its hash no longer matches): refused before it is parsed.
  fs::create_directories(dir / "edited");
  const fs::path edited = copy_bundle("tiny-xnnpack-fp32", dir / "edited");
  std::ofstream(edited / "tiny-xnnpack-fp32.goldens" / gm.goldens.front().outputs.begin()->second,
                std::ios::trunc)
      << "not npy";
  cases.push_back({edited, ErrorKind::kArtifactMismatch, "bundle-invalid"});

  for (const Case& c : cases) {
    const ParityReport r = replay(c.bundle);
    const Error* e = r.first_error();
    if (!e && r.bound_error) e = &*r.bound_error;
    ASSERT_NE(e, nullptr) << c.bundle;
    EXPECT_EQ(e->kind(), c.kind) << c.bundle << ": " << e->cause();
    const auto recs = records_from_parity(ctx(), r);
    ASSERT_EQ(recs.size(), 1u) << c.bundle;
    const json& rec = recs[0];
    EXPECT_EQ(rec["status"], std::string(to_string(status_of(*e)))) << c.bundle;
    EXPECT_EQ(rec["status"], c.status) << c.bundle;
    EXPECT_EQ(rec["reason"], "[" + std::string(to_string(c.kind)) + "] " + e->cause());
    EXPECT_EQ(rec["bundle"], c.bundle.filename().string());
    EXPECT_EQ(rec["bundle_sha256"].get<std::string>().size(), 64u);
    EXPECT_FALSE(rec.contains("numbers")) << rec.dump();
  }
  // No manifest: nothing a claim could rest on.
  EXPECT_TRUE(records_from_parity(ctx(), replay(dir / "no-such-bundle")).empty());
}

// ---- the CLI appends ---------------------------------------------------------------------------
TEST(LedgerCli, BackendsMatrixAndParityAppendToTheLedger) {
  const fs::path bundles = test_bundles();
  ETPROOF_REQUIRE_BUNDLE(bundles / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  const fs::path ledger = dir / "ledger.jsonl";
  const std::string env = "ETPROOF_LEDGER=" + quote(ledger.string());

  const CliRun b = cli("backends --runtime-only --probe-bundles " + quote(bundles.string()), env);
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_NE(b.err.find("ledger: recorded"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find(ledger.string()), std::string::npos) << b.err;
  EXPECT_EQ(b.out.find("ledger:"), std::string::npos) << "stdout must stay unchanged";
  const size_t after_backends = count_lines(ledger);
  EXPECT_GE(after_backends, 10u);
  for (const auto& r : read_ledger(ledger)) {
    EXPECT_EQ(r["kind"], "backends");
    EXPECT_EQ(r["half"], "runtime");  // --runtime-only: the export half did not answer
  }

  const CliRun p = cli("parity --json " + quote((bundles / "tiny-xnnpack-fp32").string()), env);
  ASSERT_EQ(p.rc, 0) << p.err;
  // parity --json's stdout stays one JSON report (the ledger line goes to stderr).
  EXPECT_TRUE(json::accept(p.out) && json::parse(p.out).is_object()) << p.out;
  ASSERT_EQ(count_lines(ledger), after_backends + 1);
  const json pr = read_ledger(ledger).back();
  EXPECT_EQ(pr["kind"], "parity");
  EXPECT_EQ(pr["status"], "agreed");
  EXPECT_EQ(pr["backend"], "xnnpack");
  EXPECT_EQ(pr["backend_ids"], json({"XnnpackBackend"}));
  EXPECT_EQ(pr["bundle"], "tiny-xnnpack-fp32");
  EXPECT_EQ(pr["bundle_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(pr["numbers"]["cases"], 3);
  EXPECT_TRUE(pr["numbers"].contains("bound"));
  EXPECT_TRUE(pr["command"].get<std::string>().rfind("etproof parity --json", 0) == 0) << pr["command"];

  const CliRun m = cli("matrix --ledger " + quote(ledger.string()) + " " + quote(bundles.string()), "");
  EXPECT_EQ(m.err.find("error"), std::string::npos) << m.err;
  const auto all = read_ledger(ledger);
  size_t matrix_runtime = 0, matrix_export = 0;
  for (const auto& r : all)
    if (r["kind"] == "matrix") (r["half"] == "runtime" ? matrix_runtime : matrix_export)++;
  EXPECT_GE(matrix_runtime, 3u);
  EXPECT_GE(matrix_export, 3u);

  // A bundle that cannot be judged is recorded with the reason; a path with no bundle is not.
  const fs::path broken = dir / "tiny-portable-fp32";
  fs::copy(bundles / "tiny-portable-fp32", broken, fs::copy_options::recursive);
  std::ofstream(broken / "tiny-portable-fp32.pte", std::ios::app) << "x";
  const size_t before_broken = count_lines(ledger);
  const CliRun e = cli("parity " + quote(broken.string()), env);
  EXPECT_EQ(e.rc, 2) << e.err;
  ASSERT_EQ(count_lines(ledger), before_broken + 1);
  const json er = read_ledger(ledger).back();
  EXPECT_EQ(er["status"], "bundle-invalid");
  EXPECT_EQ(er["backend"], "portable");
  EXPECT_NE(er["reason"].get<std::string>().find("[artifact-mismatch]"), std::string::npos) << er["reason"];
  const CliRun nb = cli("parity " + quote((dir / "no-such-bundle").string()), env);
  EXPECT_EQ(nb.rc, 2);
  EXPECT_EQ(count_lines(ledger), before_broken + 1);
  // No bound known: an error (exit 2) and evidence (no-bound); a caller's partial bound that
  // cannot be completed is a usage error, not recorded.
  if (fs::exists(bundles / "tiny-xnnpack-fp32")) {
    fs::create_directories(dir / "nobound");
    const fs::path f16 = copy_bundle("tiny-xnnpack-fp32", dir / "nobound",
                                     [](json& d) { d["compute_unit"] = "ane"; });
    const CliRun nob = cli("parity " + quote(f16.string()), env);
    EXPECT_EQ(nob.rc, 2);
    EXPECT_NE(nob.err.find("error [capability-unavailable]"), std::string::npos) << nob.err;
    ASSERT_EQ(count_lines(ledger), before_broken + 2);
    EXPECT_EQ(read_ledger(ledger).back()["status"], "no-bound");
    const CliRun partial = cli("parity --atol 1e-3 " + quote(f16.string()), env);
    EXPECT_EQ(partial.rc, 2);
    EXPECT_NE(partial.err.find("error [invalid-argument]"), std::string::npos) << partial.err;
    EXPECT_EQ(count_lines(ledger), before_broken + 2);
  }

  // --no-ledger records nothing; and ETPROOF_LEDGER is not needed when --ledger is given.
  const size_t before = count_lines(ledger);
  const CliRun n = cli("parity --no-ledger " + quote((bundles / "tiny-xnnpack-fp32").string()), env);
  EXPECT_EQ(n.rc, 0) << n.err;
  EXPECT_EQ(count_lines(ledger), before);
  EXPECT_EQ(n.err.find("ledger:"), std::string::npos);
}
