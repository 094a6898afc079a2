// One exported bundle against its own goldens, through the ExecuTorch runtime:
//   ETPROOF_BUNDLE=path/to/model-xnnpack-fp32 ./parity_test     (or: ./parity_test path/to/bundle)
#include <cstdlib>
#include <string>

#include <etproof/gtest.h>
#include <gtest/gtest.h>

namespace {
std::string g_bundle_dir;  // argv[1] after GoogleTest's flags, else $ETPROOF_BUNDLE
}  // namespace

TEST(Parity, BundleMatchesItsGoldens) {
  if (g_bundle_dir.empty()) GTEST_SKIP() << "no bundle: set ETPROOF_BUNDLE or pass its directory";
  // The arguments are evaluated inside EXPECT_PARITY: a tampered artifact, a delegate missing
  // from this binary or a failed run is a failure naming the etproof::Error, not an exception.
  // Drift fails with the whole parity report (worst element, cosine, SQNR, the bound, headroom).
  EXPECT_PARITY(etproof::LoadedModel::load(etproof::open_bundle(g_bundle_dir)), g_bundle_dir);
}

// The same gate with the bundle opened and loaded by the macro: a bundle whose backend this binary
// has not linked, registered or made available (Core ML on Linux) SKIPS by name, with the reason;
// a path that does not exist, or a drift, fails as above.
TEST(Parity, BundleRunsHereOrSkipsByName) {
  if (g_bundle_dir.empty()) GTEST_SKIP() << "no bundle: set ETPROOF_BUNDLE or pass its directory";
  EXPECT_BUNDLE_PARITY(g_bundle_dir);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) {
    g_bundle_dir = argv[1];
  } else if (const char* env = std::getenv("ETPROOF_BUNDLE")) {
    g_bundle_dir = env;
  }
  return RUN_ALL_TESTS();
}
