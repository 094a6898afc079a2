// etproof rejudge (etproof/evidence/rejudge.h) on real evidence: a matrix over the test bundles
// recorded into a scratch ledger, and the project's own ledger (evidence/ledger.jsonl). Under the
// recorded bounds the verdicts reproduce; under a tighter bound they change, named; a record that
// lacks what the new rule needs is refused, never guessed.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/evidence/ledger.h"
#include "etproof/evidence/rejudge.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::quote;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;
using json = nlohmann::json;

// A ledger of one matrix run over the tiny columns and the verdict models (some drift, some agree).
fs::path recorded_ledger() {
  const fs::path ledger = scratch_dir() / "rejudge-ledger.jsonl";
  fs::remove(ledger);
  for (const fs::path& dir : {test_bundles(), test_bundles() / "verdicts"}) {
    const auto r = etproof::testing::run_etproof("matrix --repeat 1 --ledger " + quote(ledger.string()) + " " +
                                                 quote(dir.string()));
    EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.out << r.err;
  }
  return ledger;
}

#define REQUIRE_TINY()                                                                                   \
  if (!fs::exists(test_bundles() / "tiny-portable-fp32") || !fs::exists(test_bundles() / "verdicts"))   \
    GTEST_SKIP() << "test bundles not exported: run `python -m etproof test-bundles --out "             \
                 << test_bundles().string() << "` (test.sh does)";

TEST(Rejudge, RecordedVerdictsReproduceUnderTheRecordedBounds) {
  REQUIRE_TINY();
  const std::vector<json> records = read_ledger(recorded_ledger());
  const RejudgeReport r = rejudge(records, {});
  ASSERT_GT(r.records.size(), 4u);
  EXPECT_EQ(r.changed, 0u) << to_text(r);
  EXPECT_EQ(r.refused, 0u) << to_text(r);
  for (const Rejudged& j : r.records) {
    ASSERT_TRUE(j.now.has_value()) << j.why;
    EXPECT_FALSE(j.changed) << j.backend << "/" << j.recipe << ": " << j.why;
  }
}

TEST(Rejudge, ATighterBoundChangesAgreedRecordsNamingTheNumbers) {
  REQUIRE_TINY();
  const fs::path ledger = recorded_ledger();
  // Every agreed record measured some error: a floor of SQNR 400 dB (identical outputs only) fails it.
  const RejudgeReport r = rejudge(read_ledger(ledger), RejudgeBound{.min_sqnr_db = 400.0});
  EXPECT_GT(r.changed, 0u) << to_text(r);
  EXPECT_GT(r.now_fail, 0u);
  bool named = false;
  for (const Rejudged& j : r.records)
    if (j.changed && j.recorded == "agreed") {
      EXPECT_EQ(j.now, Status::kDrifted);
      named = named || j.why.find("SQNR dB") != std::string::npos;
    }
  EXPECT_TRUE(named) << to_text(r);
  // A bound every record meets changes nothing that agreed.
  const RejudgeReport loose =
      rejudge(read_ledger(ledger), RejudgeBound{.atol = 1e9, .min_cosine = -1.0, .min_sqnr_db = -1e9});
  for (const Rejudged& j : loose.records)
    if (j.recorded == "agreed") EXPECT_FALSE(j.changed) << j.why;
  // The CLI: exit 1 where a record that passed now fails, JSON on request.
  const auto cli = etproof::testing::run_etproof("rejudge --min-sqnr 400 --json " + quote(ledger.string()));
  EXPECT_EQ(cli.rc, 1) << cli.out << cli.err;
  EXPECT_GT(json::parse(cli.out).at("counts").at("now_fail").get<int>(), 0);
  const auto same = etproof::testing::run_etproof("rejudge " + quote(ledger.string()));
  EXPECT_EQ(same.rc, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("0 changed"), std::string::npos) << same.out;
}

// A drifted record whose only failed rules a new bound replaces can agree under it; one that also
// failed another rule stays drifted, naming it.
TEST(Rejudge, ADriftedRecordIsJudgedByItsFailedRules) {
  REQUIRE_TINY();
  const RejudgeReport r = rejudge(read_ledger(recorded_ledger()),
                                  RejudgeBound{.atol = 1e9, .min_cosine = -1.0, .min_sqnr_db = -1e9});
  for (const Rejudged& j : r.records) {
    if (j.recorded != "drifted" && j.recorded != "xfail") continue;
    ASSERT_TRUE(j.now.has_value()) << j.why;
    if (j.now == Status::kDrifted)
      EXPECT_NE(j.why.find("still fails"), std::string::npos) << j.why;
  }
}

// The project's own ledger: its records reproduce under their recorded bounds; records from before
// etproof kept failed rules are re-judged where they agreed and refused where they did not.
TEST(Rejudge, TheProjectsOwnLedger) {
  const fs::path ledger = fs::path(ETPROOF_SOURCE_DIR) / "evidence" / "ledger.jsonl";
  ASSERT_TRUE(fs::exists(ledger)) << ledger;
  const std::vector<json> records = read_ledger(ledger);
  const RejudgeReport same = rejudge(records, {});
  ASSERT_GT(same.records.size(), 100u);
  EXPECT_EQ(same.changed, 0u) << to_text(same);
  EXPECT_EQ(same.refused, 0u) << to_text(same);
  // Tighter: cosine ≥ 0.9999 turns the int8 columns' agreements (cosine ~0.99) into drifts.
  const RejudgeReport tight = rejudge(records, RejudgeBound{.min_cosine = 0.9999});
  EXPECT_GT(tight.changed, 0u) << to_text(tight);
  for (const Rejudged& j : tight.records)
    if (j.changed) EXPECT_NE(j.why.find("cosine"), std::string::npos) << j.why;
  // The xfail records (drifted, their failed rules not recorded then) are refused, with the reason.
  size_t refused_xfail = 0;
  for (const Rejudged& j : tight.records)
    if (!j.now) {
      EXPECT_NE(j.why.find("which rules failed"), std::string::npos) << j.why;
      refused_xfail += j.recorded == "xfail" ? 1 : 0;
    }
  EXPECT_GT(refused_xfail, 0u) << to_text(tight);
  // A budget needs the recipe's recorded cost, which these records do not carry.
  const RejudgeReport budget = rejudge(records, RejudgeBound{.budget_min_sqnr_db = 20.0});
  EXPECT_GT(budget.refused, 0u);
}

}  // namespace
}  // namespace etproof
