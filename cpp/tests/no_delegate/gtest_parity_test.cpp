// etproof/gtest.h in a binary without XNNPACK: loading an XNNPACK bundle inside EXPECT_PARITY is a
// test failure naming backend-not-linked and the missing id, not an escaped exception.
#include "etproof/gtest.h"

#include <string>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "../test_support.h"

namespace etproof {
namespace {

TEST(GtestParityNotLinked, LoadErrorIsAFailureNamingTheBackend) {
  const auto root = etproof::testing::test_bundles();
  const auto dir = (root.empty() ? std::filesystem::path("$ETPROOF_TEST_BUNDLES-unset") : root) /
                   "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle bundle = open_bundle(dir);
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    EXPECT_PARITY(LoadedModel::load(bundle), bundle);
  }
  ASSERT_EQ(results.size(), 1);
  const std::string msg = results.GetTestPartResult(0).message();
  EXPECT_NE(msg.find("etproof::Error [backend-not-linked]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("XnnpackBackend"), std::string::npos) << msg;
}

}  // namespace
}  // namespace etproof
