// The unit tests' main (etproof_unit_tests): runs them as GoogleTest's own main does, then fails
// the run (exit 1) when any test skipped. A unit test needs no exported bundle, so it has no reason
// to skip; one that does (GTEST_SKIP, ETPROOF_REQUIRE_BUNDLE) needs what only the integration
// tests may assume, and would otherwise pass unnoticed where the bundles are missing.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& all = *::testing::UnitTest::GetInstance();
  int skipped = 0;
  std::string names;
  for (int i = 0; i < all.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *all.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& test = *suite.GetTestInfo(j);
      if (!test.should_run() || !test.result()->Skipped()) continue;
      names += (skipped++ ? ", " : "") + std::string(suite.name()) + "." + test.name();
    }
  }
  if (skipped == 0) return rc;
  std::fprintf(stderr,
               "unit tests never skip: %d skipped (%s); a test that needs an exported bundle belongs in "
               "cpp/tests/integration/\n",
               skipped, names.c_str());
  return 1;
}
