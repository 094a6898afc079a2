// The evidence ledger: records, ids, append-only writing, the reader's typed errors, and the CLI
// runs (backends, matrix, parity) that append to it.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/error.h"
#include "etproof/ledger.h"
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
           (fs::temp_directory_path() / "etproof-tests" / "unset-ledger.jsonl").c_str(), 1);
  return true;
}();

RecordContext ctx(const std::string& time = "2026-11-29T10:00:00Z") {
  RecordContext c;
  c.time_utc = time;
  c.command = "etproof matrix build/demo/bundles";
  c.kind = "matrix";
  c.machine = {{"os", "Debian GNU/Linux 12 (bookworm)"}, {"kernel", "Linux 6.1"},
               {"cpu", "Test CPU"}, {"cores", 2}, {"arch", "x86_64"}};
  c.toolchain = {{"etproof", "0.1.0"}, {"executorch", "1.5.1"}};
  c.commit = "0123456789ab";
  c.commit_source = "git";
  return c;
}


size_t count_lines(const fs::path& p) {
  size_t n = 0;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) ++n;
  return n;
}

// A constructed `to_json(Matrix)` document: one column with 2 agreed and 2 xfail cases, one
// column not linked, one export refusal.
json matrix_doc() {
  json bound = {{"atol", 0.1}, {"rtol", 0.0}, {"min_cosine", 0.99}, {"min_sqnr_db", 20.0},
                {"source", "test"}, {"caller_supplied", false}};
  json cols = json::array({{{"backend", "xnnpack"}, {"recipe", "int8"}, {"precision", "float32"},
                            {"delegates", {"XnnpackBackend"}}, {"bundle", "m-xnnpack-int8"},
                            {"bound", bound}},
                           {{"backend", "coreml"}, {"recipe", "fp32"}, {"precision", "float32"},
                            {"delegates", json::array()}, {"bundle", "m-coreml-fp32"},
                            {"bound", bound}}});
  auto cell = [&](const std::string& c, const std::string& st, double err, double cos, double sq) {
    return json{{"case", c},           {"backend", "xnnpack"}, {"recipe", "int8"},
                {"bundle", "m-xnnpack-int8"}, {"status", st}, {"max_abs_error", err},
                {"cosine", cos},       {"sqnr_db", sq},        {"headroom", 0.1},
                {"bound", bound},      {"detail", st == "xfail" ? "SQNR below floor" : ""}};
  };
  json cells = json::array({cell("a", "agreed", 0.01, 0.999, 30), cell("b", "agreed", 0.02, 0.998, 25),
                            cell("c", "xfail", 0.5, 0.9, 5), cell("d", "xfail", 0.7, 0.8, 4)});
  // A column that could not run has cells too (no numbers), and a not_run line saying the same.
  for (const char* c : {"a", "b"})
    cells.push_back({{"case", c}, {"backend", "coreml"}, {"recipe", "fp32"}, {"bundle", "m-coreml-fp32"},
                     {"status", "not-linked"}, {"max_abs_error", nullptr}, {"cosine", nullptr},
                     {"sqnr_db", nullptr}, {"headroom", nullptr}, {"bound", bound},
                     {"detail", "CoreMLBackend is not linked into this binary"}});
  json not_run = json::array(
      {{{"backend", "coreml"}, {"recipe", "fp32"}, {"status", "not-linked"}, {"fails_run", false},
        {"reason", "CoreMLBackend is not linked into this binary"}},
       {{"backend", "qnn"}, {"recipe", "fp32"}, {"status", "export-refused"}, {"fails_run", false},
        {"reason", "QNN_SDK_ROOT is not set"}}});
  json xfail = {{"file", "x/xfail.json"},
                {"records", json::array({{{"model", "m"}, {"backend", "xnnpack"}, {"recipe", "int8"},
                                          {"half", "runtime"}, {"reason", "static int8 misses the bound"},
                                          {"recorded", "2026-11-29"}, {"cases", {"c", "d"}},
                                          {"outcome", "xfail"}, {"fails_run", false}, {"detail", ""}}})}};
  return {{"columns", cols}, {"cases", {"a", "b", "c", "d"}}, {"cells", cells},
          {"not_run", not_run}, {"xfail", xfail}, {"measured", 4}, {"exit_code", 0}};
}


using CliRun = etproof::testing::CliResult;

CliRun cli(const std::string& args, const std::string& env) {
  return etproof::testing::run_etproof(args, env);
}

}  // namespace

TEST(Ledger, RecordsRoundTripWithTheirIds) {
  const fs::path file = scratch_dir() / "ledger.jsonl";
  auto recs = records_from_matrix(ctx(), matrix_doc(), scratch_dir());
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

TEST(Ledger, MatrixRecordsGroupEachColumnByStatusWithNumbersAndReasons) {
  const auto recs = records_from_matrix(ctx(), matrix_doc(), scratch_dir());
  auto find = [&](const std::string& half, const std::string& backend, const std::string& status) {
    for (const auto& r : recs)
      if (r["half"] == half && r["backend"] == backend && r["status"] == status) return r;
    ADD_FAILURE() << "no " << half << " " << backend << " " << status << " record";
    return json();
  };
  const json agreed = find("runtime", "xnnpack", "agreed");
  EXPECT_EQ(agreed["numbers"]["cases"], 2);
  EXPECT_EQ(agreed["numbers"]["case_ids"], json({"a", "b"}));
  EXPECT_DOUBLE_EQ(agreed["numbers"]["max_abs_error"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(agreed["numbers"]["cosine"].get<double>(), 0.998);
  EXPECT_DOUBLE_EQ(agreed["numbers"]["sqnr_db"].get<double>(), 25);
  EXPECT_EQ(agreed["numbers"]["bound"]["min_sqnr_db"], 20.0);
  EXPECT_EQ(agreed["backend_ids"], json({"XnnpackBackend"}));
  EXPECT_EQ(agreed["recipe"], "int8");
  EXPECT_FALSE(agreed.contains("reason"));
  const json xfail = find("runtime", "xnnpack", "xfail");
  EXPECT_EQ(xfail["numbers"]["cases"], 2);
  EXPECT_EQ(xfail["reason"], "static int8 misses the bound");
  EXPECT_EQ(find("export", "xnnpack", "exported")["half"], "export");
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
  json parity = {{"bundle", "b"}, {"backend", "xnnpack"}, {"recipe", "fp32"}, {"precision", "float32"},
                 {"delegates", {"XnnpackBackend"}}, {"passed", true},
                 {"bound", {{"atol", 1e-4}, {"rtol", 0}, {"min_cosine", 0.999}, {"min_sqnr_db", nullptr}}},
                 {"cases", json::array({{{"case", "x"}, {"passed", true},
                                         {"outputs", json::array({{{"output", "y"}, {"passed", true},
                                                                   {"max_abs_error", 1e-6}, {"cosine", 1.0},
                                                                   {"sqnr_db", nullptr}, {"sqnr_skipped", false}}})}}})}};
  const auto p = records_from_parity(ctx(), parity, scratch_dir() / "b");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["status"], "agreed");
  EXPECT_EQ(p[0]["half"], "runtime");
  EXPECT_EQ(p[0]["numbers"]["cases"], 1);
  EXPECT_EQ(p[0]["numbers"]["sqnr_db"], "inf");  // identical output: the gate wrote null

  json backends = {
      {"probe_bundles", (scratch_dir() / "none").string()},
      {"export", json::array({{{"backend", "xnnpack"}, {"status", "available"}, {"delegates", {"XnnpackBackend"}},
                               {"reason", "lowered"}},
                              {{"backend", "qnn"}, {"status", "refused"}, {"reason", "QNN_SDK_ROOT is not set"}}})},
      {"runtime_by_backend",
       json::array({{{"backend", "xnnpack"}, {"ids", {"XnnpackBackend"}}, {"status", "available"},
                     {"reason", "registered"},
                     {"probe", {{"status", "agreed"}, {"bundle", "tiny-xnnpack-fp32"},
                                {"detail", "3 golden case(s), 3 output(s) ran through XnnpackBackend; max |err| 5.96e-08, min SQNR 138 dB; bound …"}}}},
                    {{"backend", "coreml"}, {"ids", {"CoreMLBackend"}}, {"status", "not-linked"},
                     {"reason", "no backend_coreml"}, {"probe", {{"status", "not-run"}, {"bundle", nullptr}, {"detail", "not run: not-linked"}}}}})}};
  const auto b = records_from_backends(ctx(), backends);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0]["half"], "export");
  EXPECT_EQ(b[0]["status"], "available");
  EXPECT_EQ(b[1]["reason"], "QNN_SDK_ROOT is not set");
  EXPECT_EQ(b[2]["status"], "agreed");
  EXPECT_EQ(b[2]["numbers"]["cases"], 3);
  EXPECT_DOUBLE_EQ(b[2]["numbers"]["sqnr_db"].get<double>(), 138);
  EXPECT_EQ(b[3]["status"], "not-linked");
  EXPECT_EQ(b[3]["reason"], "no backend_coreml");
}

TEST(Ledger, ConcatenatedLedgersDeduplicateById) {
  const fs::path dir = scratch_dir();
  const auto run1 = records_from_matrix(ctx("2026-11-29T10:00:00Z"), matrix_doc(), dir);
  const auto run2 = records_from_matrix(ctx("2026-11-30T10:00:00Z"), matrix_doc(), dir);
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
  const auto recs = records_from_matrix(ctx(), matrix_doc(), dir);
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
    EXPECT_NE(e.cause().find("f.jsonl:1: record lacks time_utc"), std::string::npos) << e.cause();
  }
  EXPECT_THROW(read_ledger(dir / "missing.jsonl"), Error);
}

TEST(Ledger, AppendingAfterATruncatedLineKeepsTheNewRecordsWhole) {
  const fs::path dir = scratch_dir();
  const auto recs = records_from_matrix(ctx(), matrix_doc(), dir);
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

  // --no-ledger records nothing; and ETPROOF_LEDGER is not needed when --ledger is given.
  const size_t before = count_lines(ledger);
  const CliRun n = cli("parity --no-ledger " + quote((bundles / "tiny-xnnpack-fp32").string()), env);
  EXPECT_EQ(n.rc, 0) << n.err;
  EXPECT_EQ(count_lines(ledger), before);
  EXPECT_EQ(n.err.find("ledger:"), std::string::npos);
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
