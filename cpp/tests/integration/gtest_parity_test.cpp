// etproof/gtest.h: EXPECT_PARITY / ASSERT_PARITY / *_WITHIN on real exported programs — a pass,
// a drift (failing with the parity report), a caller bound, and errors as named failures.
// Failures are intercepted (gtest-spi.h) so their messages can be checked.
#include "etproof/gtest.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/npy.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;

fs::path tiny_xnnpack() {
  const auto root = etproof::testing::test_bundles();
  return (root.empty() ? fs::path("$ETPROOF_TEST_BUNDLES-unset") : root) / "tiny-xnnpack-fp32";
}

// A copy of `src` in a scratch directory.
fs::path copy_bundle(const fs::path& src) {
  const fs::path dst = scratch_dir() / src.filename();
  fs::copy(src, dst, fs::copy_options::recursive);
  return dst;
}

// The copy with the first case's goldens and references scaled (a program whose numbers moved).
fs::path scale_first_case(const fs::path& bundle, double factor) {
  etproof::testing::scale_goldens(bundle, factor, 0);
  return bundle;
}

// The failures `body` reports, intercepted.
template <typename Body>
std::vector<::testing::TestPartResult> intercept(Body&& body) {
  ::testing::TestPartResultArray array;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &array);
    body();
  }
  std::vector<::testing::TestPartResult> results;
  for (int i = 0; i < array.size(); ++i) results.push_back(array.GetTestPartResult(i));
  return results;
}

TEST(GtestParity, PassesOnItsOwnGoldens) {
  ETPROOF_REQUIRE_BUNDLE(tiny_xnnpack());
  Bundle bundle = open_bundle(tiny_xnnpack());
  LoadedModel model = LoadedModel::load(bundle);
  EXPECT_PARITY(model, bundle);
  ASSERT_PARITY(model, bundle) << "a second run of the same model";
}

TEST(GtestParity, TemporariesAndPathsAreEvaluatedInside) {
  ETPROOF_REQUIRE_BUNDLE(tiny_xnnpack());
  const fs::path dir = tiny_xnnpack();
  EXPECT_PARITY(LoadedModel::load(open_bundle(dir)), dir);
  EXPECT_PARITY(LoadedModel::load(open_bundle(dir)), dir.string());
  EXPECT_PARITY(LoadedModel::load(open_bundle(dir)), dir.string().c_str());
  EXPECT_PARITY(LoadedModel::load(open_bundle(dir)), open_bundle(dir));
  // What a temporary points into is read before the temporary goes.
  EXPECT_PARITY(LoadedModel::load(open_bundle(dir)), open_bundle(dir).dir);
}

TEST(GtestParity, DriftFailsWithTheWholeReport) {
  ETPROOF_REQUIRE_BUNDLE(tiny_xnnpack());
  const Bundle drifted = open_bundle(scale_first_case(copy_bundle(tiny_xnnpack()), 1.5));
  LoadedModel model = LoadedModel::load(drifted);
  const auto results = intercept([&] { EXPECT_PARITY(model, drifted); });
  ASSERT_EQ(results.size(), 1u);
  const auto& r = results[0];
  EXPECT_TRUE(r.nonfatally_failed());
  const std::string msg = r.message();
  for (const char* line : {"parity of `model` against the goldens of `drifted` failed:",
                           "parity: tiny-xnnpack-fp32", "bound: ", "worst element ",
                           "max abs error ", "cosine ", "SQNR ", "    failed: ",
                           "result: DRIFT", "EXPECT_PARITY_WITHIN(model, goldens, bound)"})
    EXPECT_NE(msg.find(line), std::string::npos) << "missing \"" << line << "\" in:\n" << msg;
}

TEST(GtestParity, AssertParityReturnsFromTheFunction) {
  ETPROOF_REQUIRE_BUNDLE(tiny_xnnpack());
  const Bundle drifted = open_bundle(scale_first_case(copy_bundle(tiny_xnnpack()), 1.5));
  LoadedModel model = LoadedModel::load(drifted);
  bool went_on = false;
  const auto results = intercept([&] {
    ASSERT_PARITY(model, drifted);
    went_on = true;
  });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].fatally_failed());
  EXPECT_FALSE(went_on);
}

TEST(GtestParity, WithinACallerBound) {
  ETPROOF_REQUIRE_BUNDLE(tiny_xnnpack());
  // |a − r| = |r|/3 of the scaled reference, SQNR 9.5 dB
  const Bundle drifted = open_bundle(scale_first_case(copy_bundle(tiny_xnnpack()), 1.5));
  LoadedModel model = LoadedModel::load(drifted);
  Bound loose;
  loose.atol = 1e-3;
  loose.rtol = 0.5;
  loose.min_cosine = 0.99;
  loose.min_sqnr_db = 6;
  loose.source = "this test";
  EXPECT_PARITY_WITHIN(model, drifted, loose);
  BoundOverride o;
  o.atol = 1e-3;
  o.rtol = 0.5;
  o.min_cosine = 0.99;
  o.min_sqnr_db = 6;
  EXPECT_PARITY_WITHIN(model, drifted, o);
  // A caller bound that is too tight still fails, and the report says whose bound it was.
  Bound tight = loose;
  tight.rtol = 0.1;
  const auto results = intercept([&] { EXPECT_PARITY_WITHIN(model, drifted, tight); });
  ASSERT_EQ(results.size(), 1u);
  const std::string msg = results[0].message();
  EXPECT_NE(msg.find("supplied by the caller"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("EXPECT_PARITY_WITHIN(model, goldens, bound)"), std::string::npos) << msg;
}

TEST(GtestParity, AnErrorIsAFailureNamingIt) {
  ETPROOF_REQUIRE_BUNDLE(tiny_xnnpack());
  const fs::path dir = copy_bundle(tiny_xnnpack());
  std::ofstream(open_bundle(dir).artifact_path, std::ios::app | std::ios::binary) << 'x';
  const auto results =
      intercept([&] { EXPECT_PARITY(LoadedModel::load(open_bundle(dir)), dir); });
  ASSERT_EQ(results.size(), 1u);
  const std::string msg = results[0].message();
  for (const char* part : {"could not be measured: etproof::Error [artifact-mismatch]",
                           "remedy: ", "LoadedModel::load(open_bundle(dir))"})
    EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << msg;
  // A bundle path that is not a bundle: the same, from open_bundle inside the assertion.
  Bundle ok = open_bundle(tiny_xnnpack());
  LoadedModel model = LoadedModel::load(ok);
  const auto missing = intercept([&] { EXPECT_PARITY(model, scratch_dir() / "nothing-here"); });
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(std::string(missing[0].message()).find("etproof::Error ["),
            std::string::npos)
      << missing[0].message();
}

}  // namespace
}  // namespace etproof
