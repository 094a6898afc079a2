// The runtime half on emulated Arm CPUs (etproof/emulation.h) (unit): the --emulate profiles and
// sets parsed, and a bad spec a usage error. The bundles replayed under qemu-aarch64 are
// integration/emulation_test.cpp's.
#include <string>

#include <gtest/gtest.h>

#include "etproof/runtime/emulation.h"
#include "etproof/core/error.h"

using etproof::Error;
using etproof::ErrorKind;

TEST(Emulation, ProfilesAndSetsParseAndBadSpecsAreUsageErrors) {
  const auto one = etproof::parse_emulation("arm64/neoverse-n1");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].label(), "arm64/neoverse-n1");
  EXPECT_EQ(etproof::parse_emulation("aarch64/max,sme=off").at(0).label(), "arm64/max,sme=off");
  const auto phones = etproof::parse_emulation("arm64/phones");
  ASSERT_EQ(phones.size(), 4u);  // NEON, dot product, i8mm without SME, SME
  EXPECT_EQ(phones.front().cpu, "cortex-a53");
  EXPECT_EQ(phones.back().cpu, "max");
  for (const char* bad : {"x86_64/foo", "arm64", "arm64/", "arm64/a b", "arm64/a;rm"}) {
    SCOPED_TRACE(bad);
    try {
      (void)etproof::parse_emulation(bad);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(e.remedy().find("arm64/cortex-a53"), std::string::npos) << e.remedy();
    }
  }
}
