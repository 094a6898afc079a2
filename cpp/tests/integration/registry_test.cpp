// Registry (integration): the runtime half probed on the test bundles, XNNPACK's and the portable
// key's probes agreeing. What the registry and the backend table say is unit/registry_test.cpp's.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/replay/backends_report.h"
#include "etproof/runtime/registry.h"
#include "test_support.h"

namespace etproof {
namespace {

TEST(RuntimeHalf, XnnpackRegisteredAvailableAndItsProbeAgrees) {
  const auto dir = testing::test_bundles() / "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(dir);
  const RuntimeHalf h = runtime_half(testing::test_bundles());
  auto it = std::find_if(h.ids.begin(), h.ids.end(),
                         [](const RuntimeIdReport& r) { return r.runtime.id == "XnnpackBackend"; });
  ASSERT_NE(it, h.ids.end());
  EXPECT_EQ(it->runtime.status, RuntimeStatus::kAvailable) << it->runtime.reason;
  EXPECT_TRUE(it->runtime.linked && it->runtime.registered && it->runtime.available);
  EXPECT_EQ(it->runtime.keys, std::vector<std::string>{"xnnpack"});
  EXPECT_EQ(it->probe.status, "agreed") << it->probe.detail;
  EXPECT_EQ(it->probe.bundle, "tiny-xnnpack-fp32") << "the fp32 program is preferred";
  // The portable key runs its own probe, through no delegate.
  auto p = std::find_if(h.keys.begin(), h.keys.end(), [](const auto& k) { return k.key == "portable"; });
  ASSERT_NE(p, h.keys.end());
  EXPECT_EQ(p->probe.status, "agreed") << p->probe.detail;
  EXPECT_EQ(p->probe.bundle, "tiny-portable-fp32");
}

}  // namespace
}  // namespace etproof
