// Registry: what this binary (linked with XNNPACK) can run, read from ExecuTorch's own registry.
#include <algorithm>

#include <executorch/runtime/backend/interface.h>
#include <gtest/gtest.h>

#include "etproof/registry.h"

namespace etproof {
namespace {

TEST(Registry, ListsXnnpackLinkedIntoThisBinary) {
  const auto all = registered_backends();
  EXPECT_EQ(all.size(), ::executorch::runtime::get_num_registered_backends());
  auto it = std::find_if(all.begin(), all.end(), [](const RuntimeBackend& b) { return b.id == "XnnpackBackend"; });
  ASSERT_NE(it, all.end()) << "XnnpackBackend is linked into etproof_tests but not registered";
  EXPECT_TRUE(it->registered);
  EXPECT_TRUE(it->available) << "XNNPACK runs on every CPU etproof's tests run on";
  for (const auto& b : all) EXPECT_TRUE(b.registered) << b.id;
}

TEST(Registry, FindsByIdAndRefusesUnknownIds) {
  const auto x = find_backend("XnnpackBackend");
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->id, "XnnpackBackend");
  EXPECT_TRUE(x->available);
  EXPECT_FALSE(find_backend("NoSuchBackend").has_value());
  EXPECT_FALSE(find_backend("").has_value());
}

TEST(Registry, MapsExportKeysToRuntimeIds) {
  EXPECT_EQ(runtime_ids_for_backend("xnnpack"), std::vector<std::string>{"XnnpackBackend"});
  const auto portable = runtime_ids_for_backend("portable");
  ASSERT_TRUE(portable.has_value());
  EXPECT_TRUE(portable->empty());
  EXPECT_FALSE(runtime_ids_for_backend("no-such-backend").has_value());
}

}  // namespace
}  // namespace etproof
