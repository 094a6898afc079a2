// A gate rule's own threshold (gate.h: RuleThreshold, Bound::thresholds) (unit): the median-error
// rule, the one rule that declares one, on constructed tensors — where it must pass, where it must
// fail, where it does not apply — and the threshold's way through the bound table
// (data/bounds.json rows' `thresholds`), a caller's --threshold, the bound's text and JSON, and
// the CLI.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "test_support.h"

namespace etproof {
namespace {

using etproof::testing::f64;
constexpr const char* kMedian = "median_range_error";
constexpr double kInf = std::numeric_limits<double>::infinity();

// An absolute bound loose enough that allclose, cosine and SQNR pass an error of 0.01 per
// element on a reference of range 8; `median` sets the median-error threshold when given.
Bound loose(std::optional<double> median = std::nullopt) {
  Bound b;
  b.atol = 0.05;
  b.min_cosine = 0.99;
  b.min_sqnr_db = 20;
  b.source = "test bound";
  if (median) b.thresholds[kMedian] = *median;
  return b;
}

const std::vector<double> kRef = {1, -2, 3, -4, 5, -6, 7, -8};

std::vector<double> shifted(double by) {
  std::vector<double> a = kRef;
  for (double& v : a) v += by;
  return a;
}

// ---- the rule -------------------------------------------------------------------------------

TEST(RuleThreshold, TheMedianRuleDoesNotApplyWithoutItsThreshold) {
  const TensorReport t = compare_tensor("y", f64(shifted(0.01)), f64(kRef), loose());
  EXPECT_TRUE(t.passed) << t.failure;
  EXPECT_TRUE(t.measured.empty());
  EXPECT_TRUE(t.thresholds.empty());
  const nlohmann::json j = to_json(t);
  EXPECT_FALSE(j.contains("measured"));
  EXPECT_FALSE(j.contains("thresholds"));
}

// An offset of 0.01 on every element: within atol 0.05, cosine and SQNR (≈ 55 dB) — but the
// median error is 0.01 / 8 = 0.00125 of the range, over a threshold of 0.001.
TEST(RuleThreshold, TheMedianRuleFailsAnErrorSpreadOverEveryElement) {
  const TensorReport t = compare_tensor("y", f64(shifted(0.01)), f64(kRef), loose(0.001));
  EXPECT_FALSE(t.passed);
  EXPECT_NE(t.failure.find("median error"), std::string::npos) << t.failure;
  EXPECT_EQ(t.failure.find("allclose"), std::string::npos) << t.failure;
  EXPECT_EQ(t.failure.find("sqnr"), std::string::npos) << t.failure;
  ASSERT_EQ(t.measured.count(kMedian), 1u);
  EXPECT_NEAR(t.measured.at(kMedian), 0.01 / 8, 1e-12);
  EXPECT_EQ(t.thresholds.at(kMedian), 0.001);
  const nlohmann::json j = to_json(t);
  EXPECT_NEAR(j.at("measured").at(kMedian).get<double>(), 0.00125, 1e-12);
  EXPECT_EQ(j.at("thresholds").at(kMedian).get<double>(), 0.001);
}

TEST(RuleThreshold, TheMedianRulePassesAnErrorWithinItsThreshold) {
  const TensorReport t = compare_tensor("y", f64(shifted(0.01)), f64(kRef), loose(0.002));
  EXPECT_TRUE(t.passed) << t.failure;
  EXPECT_NEAR(t.measured.at(kMedian), 0.00125, 1e-12);
}

// One element far off: allclose sees it, the median does not (the rules are independent).
TEST(RuleThreshold, OneOutlierIsAllclosesNotTheMedians) {
  std::vector<double> a = kRef;
  a[3] += 1;
  const TensorReport t = compare_tensor("y", f64(a), f64(kRef), loose(0.001));
  EXPECT_FALSE(t.passed);
  EXPECT_NE(t.failure.find("allclose"), std::string::npos) << t.failure;
  EXPECT_EQ(t.failure.find("median error"), std::string::npos) << t.failure;
  EXPECT_EQ(t.measured.at(kMedian), 0);
}

// An even count takes the mean of the two middle errors: errors 0.1, 0.2, 0.3, 0.4 give 0.25.
TEST(RuleThreshold, TheMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  const std::vector<double> r = {4, 4, 4, -4};
  const std::vector<double> a = {4.3, 3.9, 4.4, -4.2};
  Bound b = loose(1);
  b.atol = 1;
  b.min_cosine = -1;
  b.min_sqnr_db = -kInf;
  const TensorReport t = compare_tensor("y", f64(a), f64(r), b);
  EXPECT_NEAR(t.measured.at(kMedian), 0.25 / 4, 1e-12);
}

// A zero reference range: any error is infinitely many ranges (fails); none is 0 (passes).
TEST(RuleThreshold, OverAZeroRangeAnyErrorFails) {
  Bound b = loose(0.5);
  b.atol = 1;
  const TensorReport off = compare_tensor("y", f64({0.001, 0.001}), f64({0, 0}), b);
  EXPECT_FALSE(off.passed);
  EXPECT_EQ(off.measured.at(kMedian), kInf);
  const TensorReport exact = compare_tensor("y", f64({0, 0}), f64({0, 0}), b);
  EXPECT_TRUE(exact.passed) << exact.failure;
  EXPECT_EQ(exact.measured.at(kMedian), 0);
}

// ---- the bound table --------------------------------------------------------------------------

nlohmann::json table_with(const std::string& axis, const std::string& key, const nlohmann::json& thresholds) {
  nlohmann::json doc = nlohmann::json::parse(embedded_bound_table_json());
  for (auto& row : doc.at("rows"))
    if (row.at("axis") == axis && row.at("key") == key) row["thresholds"] = thresholds;
  return doc;
}

TEST(RuleThreshold, TheTablesTermsAddAsTheRuleDeclares) {
  nlohmann::json doc = table_with("recipe", "int8-dynamic-per-channel", {{kMedian, 0.01}});
  for (auto& row : doc.at("rows"))
    if (row.at("axis") == "precision" && row.at("key") == "float32") row["thresholds"] = {{kMedian, 0.002}};
  const std::vector<BoundTerm> rows = parse_bound_table(doc, "test table");
  const Bound both = derive_bound(rows, "int8-dynamic-per-channel", "float32");
  EXPECT_NEAR(both.thresholds.at(kMedian), 0.012, 1e-15);  // kAdd
  EXPECT_NE(describe_bound(both).find(", median_range_error ≤ 0.012"), std::string::npos) << describe_bound(both);
  EXPECT_EQ(to_json(both).at("thresholds").at(kMedian).get<double>(), both.thresholds.at(kMedian));
  const Bound one = derive_bound(rows, "fp32", "float32");
  EXPECT_EQ(one.thresholds.at(kMedian), 0.002);
  // The shipped table sets none: the rule is off for every derived bound.
  EXPECT_TRUE(derive_bound("int8-dynamic-per-channel", "float32").thresholds.empty());
  EXPECT_FALSE(to_json(derive_bound("fp32", "float32")).contains("thresholds"));
}

TEST(RuleThreshold, ATableRowNamingAnUndeclaredThresholdIsRefused) {
  const nlohmann::json doc = table_with("recipe", "fp32", {{"median_error", 0.01}});
  try {
    (void)parse_bound_table(doc, "test table");
    FAIL() << "accepted a threshold no rule declares";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
    EXPECT_NE(e.cause().find("test table: rows[0].thresholds.median_error"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("declared: median_range_error"), std::string::npos) << e.cause();
  }
}

TEST(RuleThreshold, TermsCombineByTheirDeclaredWay) {
  EXPECT_DOUBLE_EQ(combine_threshold(ThresholdCombine::kAdd, {0.1, 0.2}), 0.30000000000000004);
  EXPECT_DOUBLE_EQ(combine_threshold(ThresholdCombine::kMultiply, {0.5, 0.5}), 0.25);
  // Two 20 dB floors: noise powers 0.01 + 0.01, so 10·log10(50) ≈ 16.99 dB.
  EXPECT_NEAR(combine_threshold(ThresholdCombine::kNoisePower, {20, 20}), 16.9897, 1e-4);
  EXPECT_THROW((void)combine_threshold(ThresholdCombine::kAdd, {}), Error);
  ASSERT_EQ(rule_thresholds().size(), 1u);
  EXPECT_EQ(rule_thresholds()[0].name, kMedian);
}

// ---- a caller's --threshold -----------------------------------------------------------------

TEST(RuleThreshold, ACallersThresholdJoinsTheDerivedBound) {
  BoundOverride o;
  parse_threshold_argument("median_range_error=0.003", o);
  EXPECT_EQ(o.thresholds.at(kMedian), 0.003);
  EXPECT_FALSE(o.empty());
  EXPECT_EQ(describe_override(o), "--threshold median_range_error=0.003");
  o.atol = 0.5;
  EXPECT_EQ(describe_override(o), "--atol 0.5 --threshold median_range_error=0.003");
  const Bound b = override_bound(o, "fp32", "float32");
  EXPECT_TRUE(b.caller_supplied);
  EXPECT_EQ(b.thresholds.at(kMedian), 0.003);
  EXPECT_NE(b.source.find("--threshold median_range_error=0.003; the rest from the derived"), std::string::npos)
      << b.source;
}

TEST(RuleThreshold, ABadThresholdArgumentNamesItsCause) {
  for (const auto& [arg, cause] : std::vector<std::pair<std::string, std::string>>{
           {"median_range_error", "is not NAME=VALUE"},
           {"=0.1", "is not NAME=VALUE"},
           {"median_range_error=abc", "'abc' is not a number"},
           {"median_range_error=0.1x", "'0.1x' is not a number"},
           {"nope=0.1", "no gate rule declares a threshold of that name"}}) {
    BoundOverride o;
    try {
      parse_threshold_argument(arg, o);
      ADD_FAILURE() << arg << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << arg;
      EXPECT_NE(e.cause().find(cause), std::string::npos) << arg << ": " << e.cause();
      EXPECT_NE(e.remedy().find("median_range_error"), std::string::npos) << e.remedy();
    }
    EXPECT_TRUE(o.thresholds.empty()) << arg;
  }
  BoundOverride nan;
  nan.thresholds[kMedian] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(check_bound_override(nan), Error);
}

TEST(RuleThreshold, TheCliTakesAndListsThresholds) {
  const auto help = etproof::testing::run_etproof("parity --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--threshold"), std::string::npos) << help.out;
  EXPECT_NE(etproof::testing::unwrapped(help.out).find("median_range_error ≤ F"), std::string::npos) << help.out;
  const auto bad = etproof::testing::run_etproof("parity --no-ledger --threshold nope=1 /nonexistent.pte");
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("error [invalid-argument]: --threshold nope"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("NAME one of: median_range_error"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace etproof
