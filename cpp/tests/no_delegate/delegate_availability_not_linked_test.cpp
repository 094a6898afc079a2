// Built WITHOUT any delegate library: delegate_availability says XNNPACK is not linked, so a
// caller refuses an XNNPACK bundle from its manifest, before reading its program.
#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/runtime/registry.h"
#include "../test_support.h"

namespace etproof {
namespace {

TEST(NotLinked, DelegateAvailabilityNamesXnnpack) {
  const DelegateAvailability a = delegate_availability({"XnnpackBackend"});
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.not_linked, std::vector<std::string>{"XnnpackBackend"});
  for (const auto& r : a.registered) EXPECT_NE(r, "XnnpackBackend");
}

TEST(NotLinked, XnnpackBundleRefusedFromItsManifestAlone) {
  const auto root = testing::test_bundles();
  const auto dir = (root.empty() ? std::filesystem::path("$ETPROOF_TEST_BUNDLES-unset") : root) / "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir, OpenOptions{.verify_artifact = false});
  EXPECT_FALSE(b.artifact_verified);
  EXPECT_EQ(b.program, nullptr) << "nothing of the program was read";
  EXPECT_EQ(delegate_availability(b.manifest.delegates).not_linked, std::vector<std::string>{"XnnpackBackend"});
}

}  // namespace
}  // namespace etproof
