// attribute_test.cpp (unit) — which layer drifted (etproof/attribute.h): find_drift's rules on
// made-up curves that should and should not name a culprit. The tapped twins and the errors of a
// missing, stale or broken twin are integration/attribute_test.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "etproof/replay/attribute.h"

using namespace etproof;

namespace {

// A row as find_drift sees it: an SQNR and whether the tap is within its bound.
LayerRow row(size_t index, double sqnr_db, bool passed, const std::string& op = "aten.linear.default") {
  LayerRow r;
  r.point.output = "tap." + std::to_string(index);
  r.point.index = index;
  r.point.op = op;
  r.report.output = r.point.output;
  r.report.sqnr_db = sqnr_db;
  r.report.passed = passed;
  return r;
}

Attribution curve(const std::vector<std::pair<double, bool>>& points, bool outputs_passed) {
  Attribution a;
  for (size_t i = 0; i < points.size(); ++i) a.layers.push_back(row(i, points[i].first, points[i].second));
  a.outputs_passed = outputs_passed;
  return a;
}

}  // namespace

// ---- the rules ---------------------------------------------------------------------------------

TEST(AttributeRules, AStepAtTheEarliestDriftNamesTheCulprit) {
  // identical, identical, then a 70 dB fall that fails the bound; the layers after it carry it on.
  Attribution a = curve({{INFINITY, true}, {140, true}, {70, false}, {69, false}}, false);
  find_drift(a);
  ASSERT_TRUE(a.earliest_drift);
  EXPECT_EQ(*a.earliest_drift, 2u);
  EXPECT_TRUE(a.culprit);
  EXPECT_EQ(*a.largest_growth, 2u);
  EXPECT_DOUBLE_EQ(a.layers[0].step_db, 0.0);  // +inf counts as float32's resolution
  EXPECT_NEAR(a.layers[2].step_db, 70.0, 1e-9);
  EXPECT_NE(a.summary.find("earliest drift is tap.2"), std::string::npos) << a.summary;
}

TEST(AttributeRules, AGradualCurveHasNoSingleCulprit) {
  // bfloat16-like: the first layer already at 50 dB (within its widened bound), then a few dB a
  // layer until the bound is crossed at 38 dB.
  Attribution a = curve({{50, true}, {47, true}, {44, true}, {41, true}, {38, false}, {35, false}}, false);
  find_drift(a);
  ASSERT_TRUE(a.earliest_drift);
  EXPECT_EQ(*a.earliest_drift, 4u);
  EXPECT_FALSE(a.culprit);
  // Among the taps after the first (whose fall from float32's resolution to bfloat16's is the
  // precision's entry, not a growth): every step is 3 dB, the first of them named.
  EXPECT_EQ(*a.largest_growth, 1u);
  EXPECT_NE(a.summary.find("no single culprit: the error grows over depth"), std::string::npos) << a.summary;
  EXPECT_NE(a.summary.find("first crosses the bound at tap.4"), std::string::npos) << a.summary;
}

TEST(AttributeRules, AnErrorThatDoesNotGrowIsNotSaidToGrow) {
  // A dip under the bound at tap 2 (a 7 dB step: no culprit), the SQNR back above the first tap's
  // at the last.
  Attribution a = curve({{50, true}, {45, true}, {38, false}, {52, false}}, false);
  find_drift(a);
  ASSERT_TRUE(a.earliest_drift);
  EXPECT_EQ(*a.earliest_drift, 2u);
  EXPECT_FALSE(a.culprit);
  EXPECT_NE(a.summary.find("does not grow"), std::string::npos) << a.summary;
  EXPECT_EQ(a.summary.find("grows over depth"), std::string::npos) << a.summary;
}

TEST(AttributeRules, TheCulpritThresholdIsAFallOfTwentyDecibels) {
  Attribution just = curve({{100, true}, {100 - kCulpritDropDb, false}}, false);
  find_drift(just);
  EXPECT_TRUE(just.culprit);
  Attribution under = curve({{100, true}, {100 - kCulpritDropDb + 0.5, false}}, false);
  find_drift(under);
  EXPECT_FALSE(under.culprit);
}

TEST(AttributeRules, EveryTapAgreeingNamesNothing) {
  Attribution a = curve({{140, true}, {120, true}, {110, true}}, true);
  find_drift(a);
  EXPECT_FALSE(a.earliest_drift);
  EXPECT_FALSE(a.culprit);
  EXPECT_NE(a.summary.find("every tap agrees"), std::string::npos) << a.summary;
}

TEST(AttributeRules, AnOutputDriftingAfterAgreeingTapsIsPlacedAfterTheLastTap) {
  Attribution a = curve({{140, true}, {120, true}}, false);
  find_drift(a);
  EXPECT_FALSE(a.earliest_drift);
  EXPECT_NE(a.summary.find("after the last tap"), std::string::npos) << a.summary;
}
