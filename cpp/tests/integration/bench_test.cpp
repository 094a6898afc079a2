// etproof bench (etproof/bench.h, issue 12 §1) (integration): the report's shape and its refusals
// on the test bundles. Speed itself is never asserted here (it is measured, docs/speed.md); the
// statistics are checked on samples with known quantiles in unit/bench_test.cpp.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/replay/bench.h"
#include "etproof/core/error.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every field of the JSON report, on every tiny test bundle this binary can run.
TEST(Bench, TheTinyBundlesGiveEveryFieldInJson) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const auto r = etproof::testing::run_etproof("bench --json --runs 5 --warmup 1 " +
                                               etproof::testing::quote(etproof::testing::test_bundles().string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_TRUE(doc.contains("bench"));
  size_t measured = 0;
  for (const json& b : doc.at("bench")) {
    for (const char* k : {"path", "bundle", "model", "backend", "recipe", "precision", "delegates", "status", "error",
                          "first_load_ms", "warm_load_ms", "threads_requested", "threads_used", "peak_rss_mb", "methods"})
      EXPECT_TRUE(b.contains(k)) << k << " in " << b.dump();
    if (b.at("status") != "measured") {
      EXPECT_FALSE(b.at("error").is_null()) << b.dump();
      continue;
    }
    ++measured;
    EXPECT_GT(b.at("first_load_ms").get<double>(), 0);
    EXPECT_GT(b.at("warm_load_ms").get<double>(), 0);
    EXPECT_GE(b.at("threads_used").get<int>(), 1);
    ASSERT_FALSE(b.at("methods").empty());
    for (const json& m : b.at("methods")) {
      ASSERT_FALSE(m.at("latency").is_null()) << m.dump();
      const json& l = m.at("latency");
      EXPECT_EQ(l.at("runs"), 5);
      EXPECT_LE(l.at("min_ms").get<double>(), l.at("median_ms").get<double>());
      EXPECT_LE(l.at("median_ms").get<double>(), l.at("p90_ms").get<double>());
      EXPECT_LE(l.at("p90_ms").get<double>(), l.at("p99_ms").get<double>());
      EXPECT_GT(l.at("throughput_per_s").get<double>(), 0);
      EXPECT_EQ(m.at("case"), "case0");
    }
  }
  EXPECT_GE(measured, 3u);  // portable and both XNNPACK bundles at least
}

TEST(Bench, ThreadsAreHonouredForXnnpackAndReported) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  BenchOptions o;
  o.threads = 1;
  o.runs = 3;
  o.warmup = 0;
  const BenchReport r = bench(etproof::testing::test_bundles() / "tiny-xnnpack-fp32", o);
  ASSERT_FALSE(r.refused) << (r.error ? r.error->what() : "");
  EXPECT_EQ(r.threads_requested, 1u);
  EXPECT_EQ(r.threads_used, 1u);
  o.threads = 2;
  const BenchReport two = bench(etproof::testing::test_bundles() / "tiny-xnnpack-fp32", o);
  EXPECT_EQ(two.threads_used, 2u);
  const auto cli = etproof::testing::run_etproof(
      "bench --threads 1 --runs 2 " + etproof::testing::quote((etproof::testing::test_bundles() / "tiny-xnnpack-fp32").string()));
  ASSERT_EQ(cli.rc, 0) << cli.err;
  EXPECT_NE(cli.out.find("threads 1 (asked 1)"), std::string::npos) << cli.out;
}

// A bundle bench cannot run is refused as parity refuses it: the same status and error kind, and
// from the CLI the same `error [KIND]` line and exit 2.
TEST(Bench, ARefusedBundleHasParitysTypedError) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const fs::path dir = etproof::testing::scratch_dir() / "tiny-portable-fp32";
  fs::copy(etproof::testing::test_bundles() / "tiny-portable-fp32", dir, fs::copy_options::recursive);
  const fs::path pte = dir / "tiny-portable-fp32.pte";
  std::string bytes = etproof::testing::slurp(pte);
  bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 0xFF);
  std::ofstream(pte, std::ios::binary | std::ios::trunc) << bytes;
  const BenchReport b = bench(dir);
  const ParityReport p = replay(dir);
  ASSERT_TRUE(b.refused && p.refused);
  EXPECT_EQ(*b.refused, *p.refused);
  ASSERT_TRUE(b.error && p.error);
  EXPECT_EQ(b.error->kind(), ErrorKind::kArtifactMismatch);
  EXPECT_EQ(b.error->kind(), p.error->kind());
  EXPECT_TRUE(b.methods.empty());
  const auto q = etproof::testing::quote(dir.string());
  const auto cb = etproof::testing::run_etproof("bench " + q);
  const auto cp = etproof::testing::run_etproof("parity --no-ledger " + q);
  EXPECT_EQ(cb.rc, 2);
  EXPECT_EQ(cp.rc, 2);
  EXPECT_NE(cb.err.find("error [artifact-mismatch]"), std::string::npos) << cb.err;
  EXPECT_NE(cp.err.find("error [artifact-mismatch]"), std::string::npos) << cp.err;
}

TEST(Bench, AnUnknownMethodIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  BenchOptions o;
  o.methods = {"decode"};
  const BenchReport r = bench(etproof::testing::test_bundles() / "tiny-portable-fp32", o);
  ASSERT_TRUE(r.refused);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(r.error->cause().find("decode"), std::string::npos) << r.error->cause();
}

TEST(Bench, EveryMethodOfAProgramWithSeveralIsTimedOnItsOwnGolden) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  BenchOptions o;
  o.runs = 2;
  o.warmup = 0;
  const BenchReport r = bench(etproof::testing::test_bundles() / "methods" / "encdec-xnnpack-fp32", o);
  ASSERT_FALSE(r.refused) << (r.error ? r.error->what() : "");
  ASSERT_EQ(r.methods.size(), 2u);
  EXPECT_EQ(r.methods[0].method, "encode");
  EXPECT_EQ(r.methods[1].method, "decode");
  for (const MethodBench& m : r.methods) {
    EXPECT_EQ(m.case_id.rfind(m.method + "/", 0), 0u) << m.case_id;
    ASSERT_TRUE(m.latency) << (m.error ? m.error->what() : "");
    EXPECT_EQ(m.latency->runs, 2u);
  }
}

// `bench --ledger FILE` appends one performance record per method measured; the coverage page
// shows them in its Speed section and claims nothing from them (a backend with only performance
// records is still "never run" in the summary).
TEST(Bench, PerformanceRecordsGoToTheLedgerAndTheCoveragePagesSpeedSectionOnly) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const fs::path dir = etproof::testing::scratch_dir();
  const fs::path ledger = dir / "ledger.jsonl";
  const auto q = [](const fs::path& p) { return etproof::testing::quote(p.string()); };
  const auto r = etproof::testing::run_etproof("bench --runs 3 --warmup 0 --ledger " + q(ledger) + " " +
                                               q(etproof::testing::test_bundles() / "tiny-xnnpack-fp32") + " " +
                                               q(etproof::testing::test_bundles() / "tiny-portable-fp32"));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ifstream in(ledger);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    const json rec = json::parse(line);
    EXPECT_EQ(rec.at("kind"), "bench");
    EXPECT_EQ(rec.at("half"), "runtime");
    EXPECT_EQ(rec.at("status"), "measured");
    EXPECT_EQ(rec.at("performance").at("runs"), 3);
    EXPECT_EQ(rec.at("performance").at("method"), "forward");
    EXPECT_TRUE(rec.at("performance").at("median_ms").is_number());
    EXPECT_FALSE(rec.at("bundle_sha256").get<std::string>().empty());
    ++n;
  }
  EXPECT_EQ(n, 2u);
  const auto page = etproof::testing::run_etproof("coverage --ledger " + q(ledger));
  ASSERT_EQ(page.rc, 0) << page.err;
  EXPECT_NE(page.out.find("## Speed"), std::string::npos) << page.out;
  EXPECT_NE(page.out.find("| `xnnpack` |"), std::string::npos) << page.out;
  EXPECT_EQ(page.out.find("| **works**"), std::string::npos) << "a performance record made a claim:\n" << page.out;
  EXPECT_NE(page.out.find("| never run |"), std::string::npos) << page.out;
}

// `matrix --bench`: every column that ran has its speed beside its verdicts, and each speed-up is
// the ratio of the two columns' medians the same JSON reports (worker processes and in-process).
TEST(Bench, MatrixBenchShowsEachColumnsSpeedAndItsSpeedups) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  for (const std::string mode : {"", "--in-process "}) {
    SCOPED_TRACE(mode.empty() ? "worker processes" : "in-process");
    const auto r = etproof::testing::run_etproof("matrix --no-ledger --json --bench " + mode +
                                                 etproof::testing::quote(etproof::testing::test_bundles().string()));
    ASSERT_EQ(r.rc, 0) << r.err;
    const json doc = json::parse(r.out);
    std::map<std::string, double> median;  // backend/recipe -> median ms
    size_t with_speed = 0;
    for (const json& c : doc.at("columns")) {
      if (!c.contains("speed")) continue;
      ++with_speed;
      const json& sp = c.at("speed");
      if (sp.at("status") != "measured") continue;
      median[c.at("backend").get<std::string>() + "/" + c.at("recipe").get<std::string>()] =
          sp.at("methods").at(0).at("latency").at("median_ms").get<double>();
    }
    EXPECT_GE(with_speed, 3u);
    ASSERT_TRUE(median.count("portable/fp32") && median.count("xnnpack/fp32")) << r.out;
    for (const json& c : doc.at("columns")) {
      if (!c.contains("speed") || c.at("speed").at("status") != "measured") continue;
      const std::string key = c.at("backend").get<std::string>() + "/" + c.at("recipe").get<std::string>();
      const json& x = c.at("speed").at("speedup_vs_portable_fp32");
      ASSERT_TRUE(x.is_number()) << key;
      EXPECT_NEAR(x.get<double>(), median.at("portable/fp32") / median.at(key), 1e-9 * x.get<double>()) << key;
    }
  }
}

}  // namespace
}  // namespace etproof
