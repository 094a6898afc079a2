// delegate_availability (registry.h): whether a manifest's recorded delegates can run in this
// binary (XNNPACK linked), answered from ExecuTorch's registry without loading a program.
#include <algorithm>

#include <gtest/gtest.h>

#include "etproof/runtime/registry.h"

namespace etproof {
namespace {

TEST(DelegateAvailability, LinkedAndAvailableIsOk) {
  const DelegateAvailability a = delegate_availability({"XnnpackBackend"});
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(a.not_linked.empty());
  EXPECT_TRUE(a.unavailable.empty());
  EXPECT_NE(std::find(a.registered.begin(), a.registered.end(), "XnnpackBackend"), a.registered.end());
}

TEST(DelegateAvailability, NoDelegateIsOk) {
  EXPECT_TRUE(delegate_availability({}).ok()) << "a portable program needs nothing from the registry";
}

TEST(DelegateAvailability, UnregisteredIdsAreNotLinkedEachOnceInOrder) {
  const DelegateAvailability a =
      delegate_availability({"CoreMLBackend", "XnnpackBackend", "VulkanBackend", "CoreMLBackend"});
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.not_linked, (std::vector<std::string>{"CoreMLBackend", "VulkanBackend"}));
  EXPECT_TRUE(a.unavailable.empty());
}

// The registered list says which are unavailable, as a refusal prints it.
TEST(DelegateAvailability, RegisteredListMarksUnavailableOnes) {
  const auto all = registered_backends();
  const DelegateAvailability a = delegate_availability({});
  ASSERT_EQ(a.registered.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    EXPECT_EQ(a.registered[i], all[i].id + (all[i].available ? "" : " (unavailable)"));
  for (const auto& b : all)
    if (!b.available) EXPECT_EQ(delegate_availability({b.id}).unavailable, std::vector<std::string>{b.id});
}

}  // namespace
}  // namespace etproof
