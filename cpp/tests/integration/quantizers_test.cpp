// Each backend's own quantizer on the tiny model (python/etproof/fixtures/testbundles.py:
// QUANTIZER_BUNDLES, test bundles' quantizers/): OpenVINO's int8 runs here and agrees within its
// bound, judged against the golden (its PT2E emulation is not what OpenVINO computes, measured:
// data/bounds.json) with the recipe's cost against that emulation; Vulkan's is exported and its
// column is not-linked, naming what its runtime needs (Core ML's quantizer is exported by the
// Python tests only: it takes about 50 s to prepare even this model).
#include <string>

#include <gtest/gtest.h>

#include "etproof/core/status.h"
#include "etproof/render/parity.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

fs::path quantized(const std::string& backend, const std::string& recipe) {
  return testing::test_bundles() / "quantizers" / ("tiny-" + backend + "-" + recipe);
}

TEST(Quantizers, OpenvinosOwnInt8AgreesAgainstTheGoldenAndReportsItsCost) {
  const fs::path dir = quantized("openvino", "int8-static-per-channel");
  ETPROOF_REQUIRE_BUNDLE(dir);
  const ParityReport r = replay(dir);
  if (r.refused && (*r.refused == Status::kNotLinked || *r.refused == Status::kUnavailable))
    GTEST_SKIP() << dir.filename() << ": " << to_string(*r.refused) << " here";
  EXPECT_TRUE(r.passed) << to_text(r);
  EXPECT_EQ(open_bundle(dir).manifest.raw.at("quantization").at("quantizer"), "OpenVINOQuantizer");
  ASSERT_FALSE(r.cases.empty());
  for (const CaseReport& c : r.cases) {
    EXPECT_EQ(c.status, Status::kAgreed) << c.case_id << ": " << c.detail;
    ASSERT_EQ(c.costs.size(), 1u) << c.case_id;  // question 2: the recipe's cost, from its emulation
    EXPECT_EQ(c.costs[0].reference, "int8-static-per-channel");
  }
  const std::string text = to_text(r);
  EXPECT_TRUE(contains(text, "the openvino delegate's int8 kernels")) << text;
  EXPECT_FALSE(contains(text, "XNNPACK")) << text;
}

TEST(Quantizers, VulkansOwnInt8IsWrittenAndNotLinkedHere) {
  const fs::path dir = quantized("vulkan", "int8-weight-only");
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);  // the manifest and program as the export wrote them
  EXPECT_EQ(b.manifest.raw.at("quantization").at("quantizer"), "VulkanQuantizer");
  EXPECT_EQ(b.manifest.references.at("int8-weight-only").emulates, "pt2e-weight-only");
  const ParityReport r = replay(dir);
  ASSERT_TRUE(r.refused.has_value()) << to_text(r);
  EXPECT_EQ(*r.refused, Status::kNotLinked) << to_text(r);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_TRUE(contains(r.error->cause(), "VulkanBackend")) << r.error->cause();
  EXPECT_TRUE(contains(r.error->cause(), "EXECUTORCH_BUILD_VULKAN")) << r.error->cause();
}

}  // namespace
}  // namespace etproof
