// The unit tests' main (etproof_unit_tests): runs them as GoogleTest's own main does, then fails
// the run (exit 1) when any test skipped. A unit test needs no exported bundle, so it has no reason
// to skip; one that does (GTEST_SKIP, ETPROOF_REQUIRE_BUNDLE) needs what only the integration
// tests may assume, and would otherwise pass unnoticed where the bundles are missing.
//
// CTest counts a test whose output holds GoogleTest's "[  SKIPPED ]" mark as skipped whatever its
// exit status (gtest_discover_tests sets that SKIP_REGULAR_EXPRESSION, and CTest adds a test's
// further expressions to it rather than replacing it). So here a skipped test is printed as
// "[  FAILED  ]", never with that mark: it shows in CTest as the failure it is.
#include <cstdio>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace {

using ::testing::TestEventListener;
using ::testing::TestInfo;
using ::testing::TestPartResult;
using ::testing::TestSuite;
using ::testing::UnitTest;

// GoogleTest's default printer, every event passed on to it but two: a skipped test's end, printed
// as a failure, and the summary of an iteration in which a test skipped (main names them instead).
class NeverSkipPrinter : public TestEventListener {
 public:
  explicit NeverSkipPrinter(TestEventListener* printer) : printer_(printer) {}

  void OnTestProgramStart(const UnitTest& u) override { printer_->OnTestProgramStart(u); }
  void OnTestIterationStart(const UnitTest& u, int i) override { printer_->OnTestIterationStart(u, i); }
  void OnEnvironmentsSetUpStart(const UnitTest& u) override { printer_->OnEnvironmentsSetUpStart(u); }
  void OnEnvironmentsSetUpEnd(const UnitTest& u) override { printer_->OnEnvironmentsSetUpEnd(u); }
  void OnTestSuiteStart(const TestSuite& s) override { printer_->OnTestSuiteStart(s); }
#ifndef GTEST_REMOVE_LEGACY_TEST_CASEAPI_
  void OnTestCaseStart(const ::testing::TestCase& s) override { printer_->OnTestCaseStart(s); }
#endif
  void OnTestStart(const TestInfo& t) override { printer_->OnTestStart(t); }
  void OnTestDisabled(const TestInfo& t) override { printer_->OnTestDisabled(t); }
  void OnTestPartResult(const TestPartResult& r) override { printer_->OnTestPartResult(r); }
  void OnTestEnd(const TestInfo& t) override {
    if (!t.result()->Skipped()) return printer_->OnTestEnd(t);
    std::printf("[  FAILED  ] %s.%s: it skipped, and unit tests never skip\n", t.test_suite_name(), t.name());
    std::fflush(stdout);
  }
  void OnTestSuiteEnd(const TestSuite& s) override { printer_->OnTestSuiteEnd(s); }
#ifndef GTEST_REMOVE_LEGACY_TEST_CASEAPI_
  void OnTestCaseEnd(const ::testing::TestCase& s) override { printer_->OnTestCaseEnd(s); }
#endif
  void OnEnvironmentsTearDownStart(const UnitTest& u) override { printer_->OnEnvironmentsTearDownStart(u); }
  void OnEnvironmentsTearDownEnd(const UnitTest& u) override { printer_->OnEnvironmentsTearDownEnd(u); }
  void OnTestIterationEnd(const UnitTest& u, int i) override {
    if (u.skipped_test_count() == 0) printer_->OnTestIterationEnd(u, i);
  }
  void OnTestProgramEnd(const UnitTest& u) override { printer_->OnTestProgramEnd(u); }

 private:
  std::unique_ptr<TestEventListener> printer_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::TestEventListeners& listeners = UnitTest::GetInstance()->listeners();
  if (TestEventListener* printer = listeners.default_result_printer())
    listeners.Append(new NeverSkipPrinter(listeners.Release(printer)));
  const int rc = RUN_ALL_TESTS();

  const UnitTest& all = *UnitTest::GetInstance();
  int skipped = 0;
  std::string names;
  for (int i = 0; i < all.total_test_suite_count(); ++i) {
    const TestSuite& suite = *all.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const TestInfo& test = *suite.GetTestInfo(j);
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
