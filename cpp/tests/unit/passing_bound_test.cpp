// The minimum passing bound (etproof/gate/gate.h: passing_bound): the bound it names passes the
// output it was measured on, and each rule a little tighter than it fails — tried on outputs that
// pass and on outputs that fail their own bound.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/gate/gate.h"
#include "test_support.h"

namespace etproof {
namespace {

using etproof::testing::f64;

Bound caller(double atol, double min_cosine, double min_sqnr_db) {
  Bound b;
  b.atol = atol;
  b.rtol = 0;
  b.min_cosine = min_cosine;
  b.min_sqnr_db = min_sqnr_db;
  b.source = "test";
  b.caller_supplied = true;
  return b;
}

// A loose bound for every rule but the one under test.
constexpr double kLooseAtol = 1e9;
constexpr double kNoCosine = -1;
const double kNoSqnr = -std::numeric_limits<double>::infinity();

struct Pair {
  const char* what;
  HostTensor actual, reference;
};

std::vector<Pair> pairs() {
  return {{"small noise", f64({1.0, -2.0, 3.0, 0.5, -0.25}), f64({1.001, -2.002, 2.998, 0.5005, -0.2502})},
          {"an offset", f64({1.5, -1.5, 3.5, 1.0}), f64({1.0, -2.0, 3.0, 0.5})},
          {"one element off", f64({1.0, 2.0, 3.0, 40.0}), f64({1.0, 2.0, 3.0, 4.0})}};
}

TEST(PassingBound, EachRuleAloneAgreesAtItsPassingValueAndFailsJustTighter) {
  for (const Pair& p : pairs()) {
    SCOPED_TRACE(p.what);
    const TensorReport measured = compare_tensor("y", p.actual, p.reference, caller(kLooseAtol, kNoCosine, kNoSqnr));
    const PassingBound pb = passing_bound(measured);
    ASSERT_GT(pb.atol, 0);
    ASSERT_TRUE(pb.min_cosine && pb.min_sqnr_db);
    EXPECT_DOUBLE_EQ(pb.atol_of_range, pb.atol / measured.reference_range);
    // atol: passes at the passing value (the sign-flip rule included), fails 1% under it.
    EXPECT_TRUE(compare_tensor("y", p.actual, p.reference, caller(pb.atol, kNoCosine, kNoSqnr)).passed);
    EXPECT_FALSE(compare_tensor("y", p.actual, p.reference, caller(pb.atol * 0.99, kNoCosine, kNoSqnr)).passed);
    // cosine and SQNR floors: pass at the measured value, fail just above it.
    EXPECT_TRUE(compare_tensor("y", p.actual, p.reference, caller(kLooseAtol, *pb.min_cosine, kNoSqnr)).passed);
    const double tighter_cos = *pb.min_cosine + (1 - *pb.min_cosine) * 0.5;
    EXPECT_FALSE(compare_tensor("y", p.actual, p.reference, caller(kLooseAtol, tighter_cos, kNoSqnr)).passed);
    EXPECT_TRUE(compare_tensor("y", p.actual, p.reference, caller(kLooseAtol, kNoCosine, *pb.min_sqnr_db)).passed);
    EXPECT_FALSE(
        compare_tensor("y", p.actual, p.reference, caller(kLooseAtol, kNoCosine, *pb.min_sqnr_db + 0.1)).passed);
  }
}

TEST(PassingBound, SeveralOutputsTogetherTakeTheWorstOfEach) {
  PassingBound all;
  std::vector<PassingBound> each;
  for (const Pair& p : pairs()) {
    each.push_back(passing_bound(compare_tensor("y", p.actual, p.reference, caller(kLooseAtol, kNoCosine, kNoSqnr))));
    add_passing(all, each.back());
  }
  for (const PassingBound& pb : each) {
    EXPECT_GE(all.atol, pb.atol);
    EXPECT_LE(*all.min_cosine, *pb.min_cosine);
    EXPECT_LE(*all.min_sqnr_db, *pb.min_sqnr_db);
  }
  const std::string text = passing_bound_text(all);
  EXPECT_NE(text.find("atol "), std::string::npos) << text;
  EXPECT_NE(text.find("of the range"), std::string::npos) << text;
  EXPECT_TRUE(to_json(all).contains("min_sqnr_db"));
}

}  // namespace
}  // namespace etproof
