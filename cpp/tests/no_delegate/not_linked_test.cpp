// Built WITHOUT any delegate library: a program that needs XNNPACK is refused by name, before
// ExecuTorch's Method::init would fail with NotFound (0x20), while a portable program still runs.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "etproof/replay/backends_report.h"
#include "etproof/render/backends.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "../test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;

fs::path exported(const std::string& name) {
  const auto root = testing::test_bundles();
  // Unset variable: a path that does not exist but still names the bundle in the skip message.
  return (root.empty() ? fs::path("$ETPROOF_TEST_BUNDLES-unset") : root) / name;
}

TEST(NotLinked, RegistryHasNoXnnpack) {
  EXPECT_FALSE(find_backend("XnnpackBackend").has_value());
  for (const auto& b : registered_backends()) EXPECT_NE(b.id, "XnnpackBackend");
}

TEST(NotLinked, XnnpackBundlesAreRefusedByName) {
  for (const char* name : {"tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel"}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    SCOPED_TRACE(name);
    const Bundle b = open_bundle(exported(name));  // the bundle itself is fine
    try {
      LoadedModel::load(b);
      ADD_FAILURE() << "loaded an XNNPACK program in a binary without XNNPACK";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBackendNotLinked) << e.what();
      EXPECT_NE(e.cause().find("XnnpackBackend"), std::string::npos) << e.cause();
      EXPECT_NE(e.cause().find("not registered"), std::string::npos) << e.cause();
      EXPECT_NE(e.cause().find("registered here:"), std::string::npos) << e.cause();
      EXPECT_NE(e.remedy().find("executorch::backend_xnnpack"), std::string::npos) << e.remedy();
      EXPECT_FALSE(e.et_error().has_value()) << "refused before ExecuTorch was asked: " << e.what();
    }
  }
}

TEST(NotLinked, PortableBundleStillLoadsAndRuns) {
  ETPROOF_REQUIRE_BUNDLE(exported("tiny-portable-fp32"));
  const Bundle b = open_bundle(exported("tiny-portable-fp32"));
  LoadedModel m = LoadedModel::load(b);
  EXPECT_TRUE(m.program_delegates().empty());
  ASSERT_FALSE(b.manifest.goldens.empty());
  const auto& c = b.manifest.goldens.front();
  const auto y = m.run(read_golden_inputs(b, c)).at("y").to_double();
  const auto ref = read_golden_outputs(b, c).at("y").to_double();
  ASSERT_EQ(y.size(), ref.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-4 + 1e-4 * std::abs(ref[i])) << i;
}

}  // namespace
}  // namespace etproof

namespace etproof {
namespace {

// The runtime half, by name from the backend table: this binary links no delegate, so XNNPACK
// is "not-linked" with the component the wheel offered named — not "linked-not-registered".
TEST(NotLinked, RuntimeHalfReportsXnnpackNotLinkedByName) {
  const RuntimeIdStatus s = classify_runtime_id("XnnpackBackend");
  EXPECT_EQ(s.status, RuntimeStatus::kNotLinked) << s.reason;
  EXPECT_FALSE(s.linked);
  EXPECT_FALSE(s.registered);
  EXPECT_EQ(s.keys, std::vector<std::string>{"xnnpack"});
  ASSERT_TRUE(s.component.has_value());
  EXPECT_EQ(*s.component, "backend_xnnpack");
  EXPECT_NE(s.reason.find("does not link it"), std::string::npos) << s.reason;
  for (const auto& c : offered_components())
    if (c.name.rfind("backend_", 0) == 0) EXPECT_FALSE(c.linked) << c.name << " in the delegate-free binary";
  const RuntimeHalf h = runtime_half({});
  for (const auto& k : h.keys)
    if (k.key == "xnnpack" || k.key == "openvino" || k.key == "qnn")
      EXPECT_NE(k.status, RuntimeStatus::kAvailable) << k.key << ": " << k.reason;
}

}  // namespace
}  // namespace etproof
