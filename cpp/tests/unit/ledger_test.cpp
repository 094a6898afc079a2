// The evidence ledger (unit): records, ids, append-only writing and the reader's typed errors, on
// constructed reports. Records from real runs, and the CLI runs (backends, matrix, parity) that
// append to it, are integration/ledger_test.cpp's.
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

// A constructed Matrix: one column with 2 agreed and 2 xfail cases, one column not linked (its
// cells, and a not-run line saying the same), one export refusal.
Matrix matrix_fixture() {
  Bound bound;
  bound.atol = 0.1;
  bound.rtol = 0;
  bound.min_cosine = 0.99;
  bound.min_sqnr_db = 20;
  bound.source = "test";
  Matrix m;
  Column x{"m-xnnpack-int8", "xnnpack", "int8", "float32", {"XnnpackBackend"}, bound, "m", "x"};
  x.sha256 = std::string(64, 'a');
  x.created_utc = "2026-11-28T09:00:00Z";
  x.toolchain = {{"executorch", "1.5.1"}, {"torch", "2.13.0"}};
  Column c{"m-coreml-fp32", "coreml", "fp32", "float32", {"CoreMLBackend"}, bound, "m", "x"};
  c.sha256 = std::string(64, 'c');
  m.columns = {x, c};
  m.cases = {"a", "b", "c", "d"};
  auto cell = [](const std::string& id, size_t col, Status st, std::optional<double> err,
                 std::optional<double> cos, std::optional<double> sq, const std::string& detail) {
    Cell cell;
    cell.case_id = id;
    cell.column = col;
    cell.status = st;
    cell.max_abs_error = err;
    cell.cosine = cos;
    cell.sqnr_db = sq;
    cell.detail = detail;
    return cell;
  };
  m.cells = {cell("a", 0, Status::kAgreed, 0.01, 0.999, 30, ""),
             cell("b", 0, Status::kAgreed, 0.02, 0.998, 25, ""),
             cell("c", 0, Status::kXfail, 0.5, 0.9, 5, "SQNR below floor"),
             cell("d", 0, Status::kXfail, 0.7, 0.8, 4, "SQNR below floor")};
  // A column that could not run has cells too (no numbers), and a not_run line saying the same.
  for (const char* id : {"a", "b"})
    m.cells.push_back(cell(id, 1, Status::kNotLinked, std::nullopt, std::nullopt, std::nullopt,
                           "CoreMLBackend is not linked into this binary"));
  m.not_run = {{"coreml", "fp32", Status::kNotLinked, "CoreMLBackend is not linked into this binary",
                "x", "m"},
               {"qnn", "fp32", Status::kExportRefused, "QNN_SDK_ROOT is not set", "x", "m"}};
  m.measured = 4;
  m.xfail_file = "x/xfail.json";
  XfailRecord rec{"m", "xnnpack", "int8", "runtime", "static int8 misses the bound", "2026-11-29",
                  {"c", "d"}};
  m.xfail = {{rec, XfailResult::kXfail, ""}};
  return m;
}

// The record of `recs` with this half, backend and status (a test failure when there is none).
json find_record(const std::vector<json>& recs, const std::string& half, const std::string& backend,
                 const std::string& status) {
  for (const auto& r : recs)
    if (r["half"] == half && r["backend"] == backend && r["status"] == status) return r;
  ADD_FAILURE() << "no " << half << " " << backend << " " << status << " record";
  return json::object();
}

}  // namespace

TEST(Ledger, RecordsRoundTripWithTheirIds) {
  const fs::path file = scratch_dir() / "ledger.jsonl";
  auto recs = records_from_matrix(ctx(), matrix_fixture());
  ASSERT_FALSE(recs.empty());
  append_records(file, recs);
  const auto back = read_ledger(file);
  ASSERT_EQ(back.size(), recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(back[i], finalize(recs[i]));
    EXPECT_EQ(back[i]["id"].get<std::string>().size(), 16u);
    EXPECT_EQ(back[i]["id"], record_id(back[i]));
  }
  // One line per record, each a compact JSON object.
  EXPECT_EQ(count_lines(file), recs.size());
}

// Two processes appending 300 batches each to one ledger at the same time: every line is one
// whole record (issue 11 §3), none lost, each process's in its own order.
TEST(Ledger, TwoProcessesAppendingAtOnceKeepEveryLine) {
  const fs::path file = scratch_dir() / "ledger.jsonl";
  constexpr int kBatches = 300;
  const auto batch = [](int who, int i) {
    auto recs = records_from_matrix(ctx(), matrix_fixture());
    for (auto& r : recs) {
      r["command"] = "writer " + std::to_string(who) + " batch " + std::to_string(i);
      r.erase("id");  // the id is of the content: finalize gives the new one
    }
    return recs;
  };
  const size_t per_batch = batch(0, 0).size();
  std::vector<std::vector<json>> batches[2];
  for (int who = 0; who < 2; ++who)
    for (int i = 0; i < kBatches; ++i) batches[who].push_back(batch(who, i));  // built before forking
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  const int who = child == 0 ? 1 : 0;
  for (const auto& b : batches[who]) {
    try {
      append_records(file, b);
    } catch (...) {
      if (child == 0) _exit(3);
      throw;
    }
  }
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const auto back = read_ledger(file);  // throws ledger-invalid on a broken line
  ASSERT_EQ(back.size(), 2 * kBatches * per_batch);
  EXPECT_EQ(count_lines(file), back.size());
  int next[2] = {0, 0};
  for (size_t k = 0; k < back.size(); k += per_batch) {
    const std::string cmd = back[k]["command"];
    const int w = cmd.rfind("writer 1", 0) == 0 ? 1 : 0;
    EXPECT_EQ(cmd, "writer " + std::to_string(w) + " batch " + std::to_string(next[w]));
    for (size_t j = 0; j < per_batch; ++j) EXPECT_EQ(back[k + j]["command"], cmd) << "a batch stays whole";
    ++next[w];
  }
  EXPECT_EQ(next[0], kBatches);
  EXPECT_EQ(next[1], kBatches);
}

TEST(Ledger, MatrixRecordsGroupEachColumnByStatusWithNumbersAndReasons) {
  const auto recs = records_from_matrix(ctx(), matrix_fixture());
  auto find = [&](const std::string& half, const std::string& backend, const std::string& status) {
    return find_record(recs, half, backend, status);
  };
  const json agreed = find("runtime", "xnnpack", "agreed");
  EXPECT_EQ(agreed["numbers"]["cases"], 2);
  EXPECT_EQ(agreed["numbers"]["case_ids"], json({"a", "b"}));
  EXPECT_DOUBLE_EQ(agreed["numbers"]["max_abs_error"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(agreed["numbers"]["cosine"].get<double>(), 0.998);
  EXPECT_DOUBLE_EQ(agreed["numbers"]["sqnr_db"].get<double>(), 25);
  EXPECT_EQ(agreed["numbers"]["bound"]["min_sqnr_db"], 20.0);
  EXPECT_EQ(agreed["numbers"]["against"], "golden");  // what the numbers were measured against
  EXPECT_EQ(agreed["backend_ids"], json({"XnnpackBackend"}));
  EXPECT_EQ(agreed["recipe"], "int8");
  EXPECT_FALSE(agreed.contains("reason"));
  const json xfail = find("runtime", "xnnpack", "xfail");
  EXPECT_EQ(xfail["numbers"]["cases"], 2);
  EXPECT_EQ(xfail["reason"], "static int8 misses the bound");
  const json exported = find("export", "xnnpack", "exported");
  EXPECT_EQ(exported["half"], "export");
  // The bundle's facts come from the column (the manifest as the matrix read it).
  for (const json& r : {agreed, xfail, exported}) {
    EXPECT_EQ(r["bundle"], "m-xnnpack-int8");
    EXPECT_EQ(r["bundle_sha256"], std::string(64, 'a'));
    EXPECT_EQ(r["bundle_created_utc"], "2026-11-28T09:00:00Z");
    EXPECT_EQ(r["bundle_toolchain"]["torch"], "2.13.0");
    EXPECT_EQ(r["model"], "m");
    EXPECT_EQ(r["precision"], "float32");
  }
  EXPECT_FALSE(find("runtime", "coreml", "not-linked").contains("bundle_created_utc"));
  EXPECT_EQ(find("runtime", "coreml", "not-linked")["reason"],
            "CoreMLBackend is not linked into this binary");
  EXPECT_EQ(find("export", "qnn", "export-refused")["reason"], "QNN_SDK_ROOT is not set");
  // Said once, with no numbers: nothing ran.
  size_t coreml_not_linked = 0;
  for (const auto& r : recs)
    if (r["backend"] == "coreml" && r["status"] == "not-linked") {
      ++coreml_not_linked;
      EXPECT_FALSE(r.contains("numbers") && r["numbers"].contains("sqnr_db")) << r.dump();
    }
  EXPECT_EQ(coreml_not_linked, 1u);
  // Every record carries the run's context.
  for (const auto& r : recs) {
    EXPECT_EQ(r["time_utc"], "2026-11-29T10:00:00Z");
    EXPECT_EQ(r["machine"]["cpu"], "Test CPU");
    EXPECT_EQ(r["toolchain"]["executorch"], "1.5.1");
    EXPECT_EQ(r["etproof_commit"], "0123456789ab");
    EXPECT_EQ(r["kind"], "matrix");
  }
}

TEST(Ledger, ParityAndBackendsRecords) {
  ParityReport parity;
  parity.bundle = "b";
  parity.backend = "xnnpack";
  parity.recipe = "fp32";
  parity.precision = "float32";
  parity.delegates = {"XnnpackBackend"};
  parity.manifest_read = true;
  parity.passed = true;
  parity.bound.atol = 1e-4;
  parity.bound.min_cosine = 0.999;  // min_sqnr_db left at -inf: no SQNR rule
  TensorReport y;
  y.output = "y";
  y.passed = true;
  y.max_abs_error = 1e-6;
  y.cosine = 1.0;
  y.sqnr_db = std::numeric_limits<double>::infinity();  // identical output
  CaseReport x;
  x.case_id = "x";
  x.passed = true;
  x.outputs = {y};
  parity.cases = {x};
  const auto p = records_from_parity(ctx(), parity);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["status"], "agreed");
  EXPECT_EQ(p[0]["half"], "runtime");
  EXPECT_EQ(p[0]["numbers"]["cases"], 1);
  EXPECT_EQ(p[0]["numbers"]["sqnr_db"], "inf");  // identical output
  EXPECT_EQ(p[0]["numbers"]["bound"]["min_sqnr_db"], "-inf");  // as `parity --json` writes it

  const json export_half =
      json::array({{{"backend", "xnnpack"}, {"status", "available"}, {"delegates", {"XnnpackBackend"}},
                    {"reason", "lowered"}},
                   {{"backend", "qnn"}, {"status", "refused"}, {"reason", "QNN_SDK_ROOT is not set"}}});
  RuntimeHalf runtime;
  RuntimeKeyReport xnnpack;
  xnnpack.key = "xnnpack";
  xnnpack.ids = {"XnnpackBackend"};
  xnnpack.status = RuntimeStatus::kAvailable;
  xnnpack.reason = "registered";
  xnnpack.probe.outcome = Status::kAgreed;
  xnnpack.probe.status = "agreed";
  xnnpack.probe.bundle = "tiny-xnnpack-fp32";
  xnnpack.probe.detail = "3 golden case(s), 3 output(s) ran through XnnpackBackend; max |err| "
                         "5.96e-08, min SQNR 138 dB; bound …";
  xnnpack.probe.cases = 3;
  xnnpack.probe.max_abs_error = 5.96e-08;
  xnnpack.probe.min_sqnr_db = 138;
  RuntimeKeyReport coreml;
  coreml.key = "coreml";
  coreml.ids = {"CoreMLBackend"};
  coreml.status = RuntimeStatus::kNotLinked;
  coreml.reason = "no backend_coreml";
  coreml.probe.detail = "not run: not-linked";
  runtime.keys = {xnnpack, coreml};
  const auto b = records_from_backends(ctx(), runtime, export_half);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0]["half"], "export");
  EXPECT_EQ(b[0]["status"], "available");
  EXPECT_EQ(b[1]["reason"], "QNN_SDK_ROOT is not set");
  EXPECT_EQ(b[2]["status"], "agreed");
  EXPECT_EQ(b[2]["numbers"]["cases"], 3);
  EXPECT_DOUBLE_EQ(b[2]["numbers"]["sqnr_db"].get<double>(), 138);
  EXPECT_DOUBLE_EQ(b[2]["numbers"]["max_abs_error"].get<double>(), 5.96e-08);
  EXPECT_EQ(b[2]["detail"], xnnpack.probe.detail);
  EXPECT_EQ(b[2]["registry"], "available");
  EXPECT_EQ(b[3]["status"], "not-linked");
  EXPECT_EQ(b[3]["reason"], "no backend_coreml");
  // Without the export half's answer, only the runtime half is recorded.
  EXPECT_EQ(records_from_backends(ctx(), runtime, nullptr).size(), 2u);
}

TEST(Ledger, ConcatenatedLedgersDeduplicateById) {
  const fs::path dir = scratch_dir();
  const auto run1 = records_from_matrix(ctx("2026-11-29T10:00:00Z"), matrix_fixture());
  const auto run2 = records_from_matrix(ctx("2026-11-30T10:00:00Z"), matrix_fixture());
  append_records(dir / "a.jsonl", run1);
  append_records(dir / "b.jsonl", run1);  // the same evidence, copied to another ledger
  append_records(dir / "b.jsonl", run2);
  std::ofstream(dir / "cat.jsonl") << slurp(dir / "a.jsonl") << slurp(dir / "b.jsonl");
  const auto cat = read_ledger(dir / "cat.jsonl");
  EXPECT_EQ(cat.size(), 2 * run1.size() + run2.size());
  EXPECT_EQ(merge_records({cat}).size(), run1.size() + run2.size());
  EXPECT_EQ(merge_records({read_ledger(dir / "a.jsonl"), read_ledger(dir / "b.jsonl")}).size(),
            run1.size() + run2.size());
  // A different time is a different record: ids are content hashes.
  EXPECT_NE(record_id(run1[0]), record_id(run2[0]));
}

TEST(Ledger, CorruptLineIsATypedErrorWithItsLineNumber) {
  const fs::path dir = scratch_dir();
  const auto recs = records_from_matrix(ctx(), matrix_fixture());
  append_records(dir / "l.jsonl", {recs[0]});
  { std::ofstream(dir / "l.jsonl", std::ios::app) << "{\"id\": \"abc\", \"time_utc\": \"2026-\n"; }
  append_records(dir / "l.jsonl", {recs[1]});
  try {
    read_ledger(dir / "l.jsonl");
    FAIL() << "a corrupt line was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLedgerInvalid);
    EXPECT_NE(e.cause().find("l.jsonl:2:"), std::string::npos) << e.cause();
    EXPECT_NE(e.remedy().find("delete"), std::string::npos) << e.remedy();
  }
  // A record edited after the fact no longer matches its id.
  json edited = finalize(recs[0]);
  edited["status"] = "agreed-by-hand";
  std::ofstream(dir / "e.jsonl") << finalize(recs[1]).dump() << "\n\n" << edited.dump() << "\n";
  try {
    read_ledger(dir / "e.jsonl");
    FAIL() << "an edited record was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLedgerInvalid);
    EXPECT_NE(e.cause().find("e.jsonl:3:"), std::string::npos) << e.cause();
  }
  // A record without the fields the renderer needs.
  std::ofstream(dir / "f.jsonl") << "{\"id\":\"x\"}\n";
  try {
    read_ledger(dir / "f.jsonl");
    FAIL();
  } catch (const Error& e) {
    // every problem of the record at once (schema/ledger-record.schema.json)
    EXPECT_NE(e.cause().find("f.jsonl:1: backend: missing; half: missing; id: 'x' does not match ^[0-9a-f]{16}$; "
                             "machine: missing; status: missing; time_utc: missing"),
              std::string::npos)
        << e.cause();
  }
  EXPECT_THROW(read_ledger(dir / "missing.jsonl"), Error);
}

TEST(Ledger, AppendingAfterATruncatedLineKeepsTheNewRecordsWhole) {
  const fs::path dir = scratch_dir();
  const auto recs = records_from_matrix(ctx(), matrix_fixture());
  append_records(dir / "l.jsonl", {recs[0]});
  const std::string whole = slurp(dir / "l.jsonl");
  { std::ofstream(dir / "l.jsonl", std::ios::app) << finalize(recs[1]).dump().substr(0, 40); }
  append_records(dir / "l.jsonl", {recs[2], recs[3]});
  const std::string text = slurp(dir / "l.jsonl");
  EXPECT_EQ(text.rfind(whole, 0), 0u) << "appending rewrote earlier bytes";
  EXPECT_NE(text.find("\n" + finalize(recs[2]).dump() + "\n" + finalize(recs[3]).dump() + "\n"),
            std::string::npos);
  try {
    read_ledger(dir / "l.jsonl");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.cause().find("l.jsonl:2:"), std::string::npos) << e.cause();
  }
}

TEST(Ledger, DefaultPathIsEnvThenXdgStateThenHome) {
  const std::string saved_ledger = std::getenv("ETPROOF_LEDGER") ? std::getenv("ETPROOF_LEDGER") : "";
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const std::string saved_xdg = xdg ? xdg : "";
  setenv("ETPROOF_LEDGER", "/tmp/x/l.jsonl", 1);
  std::string why;
  EXPECT_EQ(default_ledger_path(&why), fs::path("/tmp/x/l.jsonl"));
  EXPECT_EQ(why, "ETPROOF_LEDGER");
  unsetenv("ETPROOF_LEDGER");
  setenv("XDG_STATE_HOME", "/tmp/state", 1);
  EXPECT_EQ(default_ledger_path(), fs::path("/tmp/state/etproof/ledger.jsonl"));
  unsetenv("XDG_STATE_HOME");
  if (const char* home = std::getenv("HOME"))
    EXPECT_EQ(default_ledger_path(), fs::path(home) / ".local/state/etproof/ledger.jsonl");
  setenv("ETPROOF_LEDGER", saved_ledger.c_str(), 1);
  if (xdg) setenv("XDG_STATE_HOME", saved_xdg.c_str(), 1);
}

TEST(Ledger, ContextNamesThisMachineToolchainAndCommit) {
  const auto c = current_context("parity", "etproof parity x", scratch_dir() / "l.jsonl");
  EXPECT_EQ(c.time_utc.size(), 20u);
  EXPECT_EQ(c.time_utc.back(), 'Z');
  EXPECT_TRUE(c.machine.contains("arch"));
  EXPECT_TRUE(c.machine.contains("cores"));
  EXPECT_FALSE(c.toolchain.value("executorch", std::string()).empty());
  EXPECT_NE(c.toolchain.value("executorch", std::string()), "unknown");
  EXPECT_FALSE(c.commit.empty());
  // The source tree is a git checkout here: the commit is asked at run time, not configure time.
  if (fs::exists(fs::path(ETPROOF_SOURCE_DIR) / ".git")) EXPECT_EQ(c.commit_source, "git");
}

// The commit is asked of git at run time; a dirty tree says so, except for the files evidence
// recording itself writes; without a checkout, the configure-time commit is used and named.
TEST(Ledger, CommitComesFromGitAtRunTimeAndSaysDirty) {
  const fs::path repo = scratch_dir() / "src";
  fs::create_directories(repo / "evidence");
  std::ofstream(repo / "a.txt") << "a\n";
  std::ofstream(repo / "evidence" / "ledger.jsonl") << "";
  const std::string git = "git -C " + quote(repo.string()) + " ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git +
                         "-c user.email=t@t -c user.name=t commit -qm init").c_str()), 0);
  const char* saved = std::getenv("ETPROOF_SOURCE_DIR");
  const std::string saved_s = saved ? saved : "";
  setenv("ETPROOF_SOURCE_DIR", repo.c_str(), 1);
  CommitInfo c = etproof_commit({repo / "evidence" / "ledger.jsonl"});
  EXPECT_EQ(c.source, "git");
  EXPECT_EQ(c.commit.size(), 12u) << c.commit;
  std::ofstream(repo / "evidence" / "ledger.jsonl") << "{}\n";  // the ledger being written
  EXPECT_EQ(etproof_commit({repo / "evidence" / "ledger.jsonl"}).commit, c.commit);
  std::ofstream(repo / "a.txt") << "changed\n";
  EXPECT_EQ(etproof_commit({repo / "evidence" / "ledger.jsonl"}).commit, c.commit + "+dirty");
  setenv("ETPROOF_SOURCE_DIR", (scratch_dir() / "not-a-checkout").c_str(), 1);
  c = etproof_commit();
  EXPECT_NE(c.source, "git");
  EXPECT_TRUE(c.source == "build" || c.source == "unknown") << c.source;
  if (saved) setenv("ETPROOF_SOURCE_DIR", saved_s.c_str(), 1);
  else unsetenv("ETPROOF_SOURCE_DIR");
}
