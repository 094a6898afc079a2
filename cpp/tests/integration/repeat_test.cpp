// Runs that must repeat (etproof/replay.h: Repetition, RepeatReport; Status::kNondeterministic) on
// real exported programs and the real runtime: a program that reads memory it never wrote
// (python/etproof/fixtures/verdicts.py, uninit_read: torch.empty's bytes, clamped to ±1e-7) is
// caught by a second run, and deterministic programs — stateless, stateful, sequences — keep
// their verdicts, every run byte for byte the same.
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::quote;
using etproof::testing::test_bundles;
using json = nlohmann::json;

const char* const kUninit = "verdicts/uninit_read-portable-fp32";

#define REQUIRE_TEST_BUNDLE(var, name)                                                            \
  const fs::path var = test_bundles() / (name);                                                   \
  if (!fs::exists(var))                                                                           \
    GTEST_SKIP() << (name) << " not exported: run `python -m etproof test-bundles --out "         \
                 << test_bundles().string() << "` (test.sh does)";

ReplayOptions repeating(size_t repeat, size_t fresh_loads, bool isolate = false) {
  ReplayOptions o;
  o.repetition = Repetition{repeat, fresh_loads};
  o.isolation.enabled = isolate;
  return o;
}

// One run cannot see it: the judged run is within its bound and no repeat is recorded.
TEST(Repeat, OneRunOfAProgramReadingUnwrittenMemoryIsNotCaught) {
  REQUIRE_TEST_BUNDLE(b, kUninit);
  const ParityReport r = replay(b);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::kAgreed) << r.cases[0].detail;
  EXPECT_FALSE(r.cases[0].repeats.has_value());
}

// Two runs on one load: the second reads the bytes the first run's later operators left, so its
// output differs in the last bit; the case is nondeterministic, naming the runs, the distinct
// outputs, the largest difference and the first run's own verdict.
void expect_caught(const ParityReport& r, size_t runs, size_t fresh) {
  ASSERT_EQ(r.cases.size(), 1u);
  const CaseReport& c = r.cases[0];
  EXPECT_EQ(c.status, Status::kNondeterministic) << c.detail;
  EXPECT_FALSE(c.passed);
  EXPECT_FALSE(r.passed);
  ASSERT_TRUE(c.repeats.has_value());
  EXPECT_EQ(c.repeats->runs, runs);
  EXPECT_EQ(c.repeats->fresh_loads, fresh);
  EXPECT_GE(c.repeats->distinct, 2u);
  EXPECT_EQ(c.repeats->output, "y");
  // The clamp bounds what the unwritten bytes add: |e| ≤ 1e-7, times 3, plus the roundings.
  EXPECT_GT(c.repeats->max_abs_difference, 0.0);
  EXPECT_LT(c.repeats->max_abs_difference, 1e-5);
  EXPECT_NE(c.detail.find("the first run alone: agreed"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("distinct outputs"), std::string::npos) << c.detail;
}

TEST(Repeat, ASecondRunOnTheSameLoadCatchesIt) {
  REQUIRE_TEST_BUNDLE(b, kUninit);
  expect_caught(replay(b, repeating(2, 0)), 2, 0);
}

TEST(Repeat, TheWorkerProcessCatchesItToo) {
  REQUIRE_TEST_BUNDLE(b, kUninit);
  expect_caught(replay(b, repeating(3, 1, /*isolate=*/true)), 4, 1);
}

// Fresh loads alone compare first runs: each program starts from its own planned memory.
TEST(Repeat, FreshLoadsAreCountedAndCompared) {
  REQUIRE_TEST_BUNDLE(b, kUninit);
  const ParityReport r = replay(b, repeating(1, 2));
  ASSERT_EQ(r.cases.size(), 1u);
  ASSERT_TRUE(r.cases[0].repeats.has_value());
  EXPECT_EQ(r.cases[0].repeats->runs, 3u);
  EXPECT_EQ(r.cases[0].repeats->fresh_loads, 2u);
  // Whatever the allocator gave each load, the verdict follows the comparison.
  EXPECT_EQ(r.cases[0].status == Status::kNondeterministic, !r.cases[0].repeats->identical());
}

// Deterministic programs: the verdicts of every case are those of one run, and every repeat is
// byte for byte the first — a stateless column, a program that writes state (each repeat on a
// fresh load, its state initial) and sequences whose steps carry state across methods.
void expect_unchanged(const fs::path& b) {
  const ParityReport once = replay(b);
  const ParityReport rep = replay(b, repeating(3, 1));
  ASSERT_EQ(once.cases.size(), rep.cases.size());
  ASSERT_FALSE(rep.cases.empty());
  for (size_t i = 0; i < rep.cases.size(); ++i) {
    EXPECT_EQ(rep.cases[i].status, once.cases[i].status) << b << " " << rep.cases[i].case_id << ": "
                                                          << rep.cases[i].detail;
    ASSERT_TRUE(rep.cases[i].repeats.has_value()) << rep.cases[i].case_id;
    EXPECT_TRUE(rep.cases[i].repeats->identical()) << repeat_text(*rep.cases[i].repeats);
    EXPECT_EQ(rep.cases[i].repeats->runs, 4u);
  }
  EXPECT_EQ(rep.passed, once.passed);
}

TEST(Repeat, DeterministicProgramsKeepTheirVerdicts) {
  for (const char* name : {"tiny-portable-fp32", "tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel",
                           "state/accumulator-xnnpack-fp32", "state/accumulator_chain-portable-fp32"}) {
    SCOPED_TRACE(name);
    REQUIRE_TEST_BUNDLE(b, name);
    expect_unchanged(b);
  }
}

// The matrix: the same cells with and without repeats over the tiny columns (its CLI default runs
// each case twice), and the uninit_read column nondeterministic, failing the run.
TEST(Repeat, MatrixVerdictsAreUnchangedForDeterministicColumns) {
  REQUIRE_TEST_BUNDLE(dir, "tiny-portable-fp32");
  const Matrix once = build_matrix(test_bundles());
  const Matrix twice = build_matrix(test_bundles(), {}, 1, std::nullopt, {}, {}, Repetition{2, 0});
  ASSERT_EQ(once.cells.size(), twice.cells.size());
  for (size_t i = 0; i < once.cells.size(); ++i) {
    EXPECT_EQ(twice.cells[i].status, once.cells[i].status) << twice.cells[i].detail;
    if (!is_judged(twice.cells[i].status)) continue;  // not run here (OpenVINO off under ASan): no repeats
    ASSERT_TRUE(twice.cells[i].repeats.has_value()) << twice.cells[i].detail;
    EXPECT_TRUE(twice.cells[i].repeats->identical());
  }
  EXPECT_EQ(twice.exit_code(), once.exit_code());
}

TEST(Repeat, CliParityAndMatrixSayNondeterministic) {
  REQUIRE_TEST_BUNDLE(b, kUninit);
  const auto once = etproof::testing::run_etproof("parity --no-ledger " + quote(b.string()));
  EXPECT_EQ(once.rc, 0) << once.out << once.err;
  const auto text = etproof::testing::run_etproof("parity --no-ledger --repeat 2 " + quote(b.string()));
  EXPECT_EQ(text.rc, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("NONDETERMINISTIC"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("repeats: each case 2 times"), std::string::npos) << text.out;
  const auto js = etproof::testing::run_etproof("parity --no-ledger --json --repeat 2 " + quote(b.string()));
  const json doc = json::parse(js.out);
  EXPECT_EQ(doc.at("cases").at(0).at("status"), "nondeterministic");
  EXPECT_EQ(doc.at("cases").at(0).at("repeats").at("runs"), 2);
  EXPECT_FALSE(doc.at("cases").at(0).at("repeats").at("identical").get<bool>());
  // The matrix runs each case twice unless told otherwise.
  const fs::path one = etproof::testing::scratch_dir() / "repeat-matrix";
  fs::remove_all(one);
  fs::create_directories(one);
  fs::copy(b, one / b.filename(), fs::copy_options::recursive);
  const auto m = etproof::testing::run_etproof("matrix --no-ledger --json " + quote(one.string()));
  EXPECT_EQ(m.rc, 1) << m.out << m.err;
  const json mj = json::parse(m.out);
  EXPECT_EQ(mj.at("cells").at(0).at("status"), "nondeterministic") << m.out;
  const auto m1 = etproof::testing::run_etproof("matrix --no-ledger --repeat 1 " + quote(one.string()));
  EXPECT_EQ(m1.rc, 0) << m1.out << m1.err;
}

}  // namespace
}  // namespace etproof
