// etproof bench (etproof/bench.h) (unit): the latency statistics, checked on samples with known
// quantiles. The report's shape and its refusals on real bundles are integration/bench_test.cpp's.
#include <vector>

#include <gtest/gtest.h>

#include "etproof/replay/bench.h"
#include "etproof/core/error.h"

namespace etproof {
namespace {

TEST(Bench, LatencyStatisticsAreTheSamplesNearestRankQuantiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100 ms, given out of order
  const Latency l = latency_of(v);
  EXPECT_EQ(l.runs, 100u);
  EXPECT_DOUBLE_EQ(l.median_ms, 50.5);
  EXPECT_DOUBLE_EQ(l.p90_ms, 90);
  EXPECT_DOUBLE_EQ(l.p99_ms, 99);
  EXPECT_DOUBLE_EQ(l.min_ms, 1);
  EXPECT_DOUBLE_EQ(l.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(l.throughput_per_s, 1000 / 50.5);
  const Latency one = latency_of({2.5});
  EXPECT_DOUBLE_EQ(one.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(one.p99_ms, 2.5);
  EXPECT_THROW((void)latency_of({}), Error);
}

}  // namespace
}  // namespace etproof
