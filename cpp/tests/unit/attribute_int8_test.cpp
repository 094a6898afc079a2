// attribute_int8_test.cpp (unit) — the rule that names where a PT2E-quantized recipe's own cost
// grows (etproof/attribute.h, find_drift's cost sentence) on made-up curves that should and should
// not name a layer. The tapped int8 twins it is seen on are integration/attribute_int8_test.cpp's.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "etproof/replay/attribute.h"

using namespace etproof;

namespace {

// A row with a measured tap and a recipe cost, as find_drift sees them.
LayerRow costed(size_t index, double cost_sqnr_db) {
  LayerRow r;
  r.point.output = "tap." + std::to_string(index);
  r.point.index = index;
  r.point.op = "aten.linear.default";
  r.report.output = r.point.output;
  r.report.sqnr_db = 120;
  r.report.passed = true;
  RecipeCost c;
  c.reference = "int8-dynamic-per-channel";
  c.output = r.point.output;
  c.sqnr_db = cost_sqnr_db;
  r.cost = c;
  return r;
}

Attribution cost_curve(const std::vector<double>& cost_db) {
  Attribution a;
  for (size_t i = 0; i < cost_db.size(); ++i) a.layers.push_back(costed(i, cost_db[i]));
  a.outputs_passed = true;
  return a;
}

}  // namespace

// ---- the cost rule, on curves ------------------------------------------------------------------

TEST(AttributeCostRule, AFallOfTwentyDecibelsBetweenTapsNamesWhereTheCostGrows) {
  Attribution a = cost_curve({44, 43, 10, 9});
  find_drift(a);
  ASSERT_TRUE(a.costliest);
  EXPECT_EQ(*a.costliest, 2u);
  EXPECT_DOUBLE_EQ(a.layers[2].cost_step_db, 33);
  EXPECT_NE(a.summary.find("grows most at tap.2"), std::string::npos) << a.summary;
  EXPECT_FALSE(a.earliest_drift);  // a cost is not a drift
}

TEST(AttributeCostRule, AGradualCostNamesNoLayer) {
  Attribution a = cost_curve({44, 38, 31, 25, 19});  // 6 dB a layer: 25 dB in all, no one step
  find_drift(a);
  EXPECT_FALSE(a.costliest);
  EXPECT_NE(a.summary.find("no step between taps falls 20.0 dB"), std::string::npos) << a.summary;
}

TEST(AttributeCostRule, TheThresholdIsTwentyDecibelsFromBothSides) {
  Attribution under = cost_curve({40, 20.5});
  find_drift(under);
  EXPECT_FALSE(under.costliest) << under.summary;
  Attribution at = cost_curve({40, 20});
  find_drift(at);
  EXPECT_TRUE(at.costliest) << at.summary;
}

TEST(AttributeCostRule, TheFirstTapsCostIsNoGrowth) {
  // An int8 format costs ~40-50 dB at the first layer it quantizes; that is the recipe, not a layer.
  Attribution a = cost_curve({41, 40});
  find_drift(a);
  EXPECT_FALSE(a.costliest);
  EXPECT_DOUBLE_EQ(a.layers[0].cost_step_db, 0);
}

TEST(AttributeCostRule, WhereTheRecipeEntersAfterExactLayersIsNoGrowth) {
  // A conv the quantizer left float (cost exact: +inf) then the first quantized linear: entering
  // int8 costs ~45 dB there, as at a first tap; only a fall after that is growth.
  const double inf = std::numeric_limits<double>::infinity();
  Attribution a = cost_curve({inf, inf, 45});
  find_drift(a);
  EXPECT_FALSE(a.costliest) << a.summary;
  EXPECT_DOUBLE_EQ(a.layers[2].cost_step_db, 0);
  Attribution b = cost_curve({inf, 45, 12});
  find_drift(b);
  ASSERT_TRUE(b.costliest) << b.summary;
  EXPECT_EQ(*b.costliest, 2u);
}

TEST(AttributeCostRule, NoCostNoSentence) {
  Attribution a;
  LayerRow r = costed(0, 40);
  r.cost.reset();
  a.layers.push_back(r);
  a.outputs_passed = true;
  find_drift(a);
  EXPECT_FALSE(a.costliest);
  EXPECT_EQ(a.summary.find("recipe's own cost"), std::string::npos) << a.summary;
}
