// Each backend's own quantizer on the tiny model (python/etproof/fixtures/testbundles.py:
// QUANTIZER_BUNDLES, test bundles' quantizers/): OpenVINO's int8 runs here and agrees within its
// bound — on a CPU where its plugin computes the float parts in bfloat16, against the recipe's
// PT2E emulation widened by 4x that emulation's distance from itself rounded to bfloat16
// (references.h, plan_rounded_emulation); elsewhere against the golden — with the recipe's cost
// against that emulation; a program 15 % off is caught, which the golden row alone passed; and an
// output whose rounded emulation leaves no bound falls back to the golden row, never to no verdict.
// Vulkan's is exported and its column is not-linked, naming what its runtime needs (Core ML's
// quantizer is exported by the Python tests only: it takes about 50 s to prepare even this model).
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "etproof/core/npy.h"
#include "etproof/core/status.h"
#include "etproof/gate/references.h"
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

TEST(Quantizers, OpenvinosOwnInt8AgreesAndReportsItsCost) {
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
  EXPECT_FALSE(contains(text, "XNNPACK")) << text;
}

constexpr const char* kOpenvinoInt8 = "int8-static-per-channel";
constexpr const char* kRounded = "int8-static-per-channel-bfloat16";

// The OpenVINO int8 test bundle in a scratch copy, or skipped by name where it does not run here
// or this machine's plugin does not compute it in bfloat16 (its plan is then the golden's).
fs::path openvino_int8_copy() {
  const fs::path src = quantized("openvino", kOpenvinoInt8);
  if (!fs::exists(src)) return {};
  const fs::path dir = etproof::testing::scratch_dir() / src.filename();
  fs::copy(src, dir, fs::copy_options::recursive);
  return dir;
}

#define ETPROOF_REQUIRE_BFLOAT16_PLAN(dir)                                                         \
  do {                                                                                             \
    ETPROOF_REQUIRE_BUNDLE(quantized("openvino", kOpenvinoInt8));                                  \
    const Manifest& m_ = open_bundle(dir).manifest;                                                \
    const PrecisionHere here_ = precision_here(m_);                                                \
    if (here_.precision != "bfloat16" || !m_.references.count(kRounded))                           \
      GTEST_SKIP() << "OpenVINO computes this bundle in " << here_.precision                       \
                   << " here (or it carries no " << kRounded << " reference): judged against "     \
                      "the golden, not the widened emulation";                                     \
  } while (0)

// Skips by name where the OpenVINO column does not run here.
#define ETPROOF_REQUIRE_RUNS(r)                                                                    \
  if ((r).refused && (*(r).refused == Status::kNotLinked || *(r).refused == Status::kUnavailable)) \
  GTEST_SKIP() << "tiny-openvino-int8-static-per-channel: " << to_string(*(r).refused) << " here"

TEST(Quantizers, OpenvinosInt8InBfloat16IsJudgedAgainstItsEmulationWidenedByItsRounding) {
  const fs::path dir = openvino_int8_copy();
  ETPROOF_REQUIRE_BFLOAT16_PLAN(dir);
  const ParityReport r = replay(dir);
  ETPROOF_REQUIRE_RUNS(r);
  EXPECT_TRUE(r.passed) << to_text(r);
  EXPECT_EQ(r.against, kOpenvinoInt8) << r.judgement;
  for (const CaseReport& c : r.cases)
    for (const TensorReport& t : c.outputs) {
      EXPECT_EQ(t.against, kOpenvinoInt8) << c.case_id;
      EXPECT_EQ(t.widened_by, kRounded) << c.case_id;
      ASSERT_TRUE(t.widening_error.has_value()) << c.case_id;
      EXPECT_GT(*t.widening_error, 0) << c.case_id;  // bfloat16 rounding moved the emulation
      EXPECT_TRUE(t.fell_back.empty()) << c.case_id << ": " << t.fell_back;
      // Tighter than the golden row's 0.44 of the range and 8.1 dB (data/bounds.json).
      EXPECT_LT(t.atol, 0.2 * t.reference_range) << c.case_id;
      EXPECT_GT(t.min_sqnr_db, 15) << c.case_id;
    }
}

TEST(Quantizers, OpenvinosInt8FifteenPercentOffDriftsWhereTheGoldenRowPassedIt) {
  const fs::path dir = openvino_int8_copy();
  ETPROOF_REQUIRE_BFLOAT16_PLAN(dir);
  // Every golden and reference times 0.87: the program is 15 % over each of them (SQNR 17.3 dB
  // against the emulation), inside the golden row's 0.44 of the range and 8.1 dB.
  etproof::testing::scale_goldens(dir, 0.87);
  const ParityReport r = replay(dir);
  ETPROOF_REQUIRE_RUNS(r);
  EXPECT_FALSE(r.passed) << to_text(r);
  for (const CaseReport& c : r.cases) EXPECT_EQ(c.status, Status::kDrifted) << c.case_id;
  ReplayOptions golden_row;
  golden_row.bound = derive_bound("openvino/int8-static-per-channel", "bfloat16", std::nullopt,
                                  BoundBasis::kGolden);
  const ParityReport old = replay(dir, golden_row);
  EXPECT_TRUE(old.passed) << "the golden row was expected to pass a 15 % scale: " << to_text(old);
}

TEST(Quantizers, AnOutputItsRoundedEmulationLeavesNoBoundFallsBackToTheGoldenRow) {
  const fs::path dir = openvino_int8_copy();
  ETPROOF_REQUIRE_BFLOAT16_PLAN(dir);
  // The rounded emulation replaced by the emulation times -1: 2x the range from it, as a model
  // that amplifies every rounding would be; widened by 4x that, no bound is left.
  const Manifest& m = open_bundle(dir).manifest;
  for (const GoldenCase& g : m.goldens)
    for (const auto& [output, ref] : g.references.at(kRounded)) {
      const fs::path file = dir / (m.name + ".goldens") / ref.file;
      const fs::path emulation = dir / (m.name + ".goldens") / g.references.at(kOpenvinoInt8).at(output).file;
      HostTensor t = read_npy(emulation);
      auto* v = reinterpret_cast<float*>(t.data.data());
      for (size_t i = 0; i < t.numel(); ++i) v[i] = -v[i];
      write_npy(file, t);
    }
  etproof::testing::rehash_references(dir);
  const ParityReport r = replay(dir);
  ETPROOF_REQUIRE_RUNS(r);
  EXPECT_TRUE(r.passed) << to_text(r);  // the program is as good as before: the golden row passes it
  for (const CaseReport& c : r.cases)
    for (const TensorReport& t : c.outputs) {
      EXPECT_EQ(t.against, "golden") << c.case_id;
      EXPECT_TRUE(t.widened_by.empty()) << c.case_id;
      EXPECT_TRUE(contains(t.fell_back, "no bound")) << t.fell_back;
      EXPECT_TRUE(contains(t.fell_back, kRounded)) << t.fell_back;
      EXPECT_TRUE(t.inconclusive.empty()) << t.inconclusive;
    }
  EXPECT_TRUE(contains(to_text(r), "judged against the float32 golden by the recipe's golden row"));
  EXPECT_EQ(r.against, "golden");  // every output fell back: the column's basis is the golden row
  EXPECT_TRUE(contains(r.judgement, "float outputs judged against the float32 golden")) << r.judgement;
}

TEST(Quantizers, OpenvinosWeightCompressionAgreesAgainstItsEmulation) {
  const fs::path dir = quantized("openvino", "int8-weight-only");
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);
  EXPECT_EQ(b.manifest.references.at("int8-weight-only").emulates, "pt2e-weight-only");
  const ParityReport r = replay(dir);
  if (r.refused && (*r.refused == Status::kNotLinked || *r.refused == Status::kUnavailable))
    GTEST_SKIP() << dir.filename() << ": " << to_string(*r.refused) << " here";
  EXPECT_TRUE(r.passed) << to_text(r);
  EXPECT_EQ(r.against, "int8-weight-only") << r.judgement;  // never the golden: a faithful emulation
  const bool bf16 = precision_here(b.manifest).precision == "bfloat16";
  for (const CaseReport& c : r.cases)
    for (const TensorReport& t : c.outputs) {
      EXPECT_EQ(t.against, "int8-weight-only") << c.case_id;
      EXPECT_EQ(t.widened_by, bf16 ? "int8-weight-only-bfloat16" : "") << c.case_id;
      EXPECT_LT(t.atol, 0.1 * t.reference_range) << c.case_id;
    }
}

// A golden edited together with its hash (times 1.5, its references untouched) is no reference a
// quantized column may pass against or cost from, though its judgement is against the emulation
// (or, for XNNPACK's dynamic int8, the golden itself): every case is inconclusive, naming the
// golden's gap to the float64 truth the bundle carries (references.h, golden_disagrees). The same
// bundles unedited agree (the tests above).
TEST(Quantizers, AGoldenEditedWithItsHashIsInconclusiveWhateverTheColumnIsJudgedAgainst) {
  for (const fs::path& src : {quantized("openvino", kOpenvinoInt8), quantized("openvino", "int8-weight-only"),
                              testing::test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel"}) {
    ETPROOF_REQUIRE_BUNDLE(src);
    const fs::path dir = etproof::testing::scratch_dir() / src.filename();
    fs::copy(src, dir, fs::copy_options::recursive);
    const Manifest& m = open_bundle(dir).manifest;
    for (const GoldenCase& g : m.goldens)
      for (const auto& [output, file] : g.outputs) {
        const fs::path path = dir / (m.name + ".goldens") / file;
        HostTensor t = read_npy(path);
        auto* v = reinterpret_cast<float*>(t.data.data());
        for (size_t i = 0; i < t.numel(); ++i) v[i] *= 1.5f;
        write_npy(path, t);
      }
    etproof::testing::rehash_references(dir);
    const ParityReport r = replay(dir);
    ETPROOF_REQUIRE_RUNS(r);
    EXPECT_FALSE(r.passed) << to_text(r);
    ASSERT_FALSE(r.cases.empty()) << src.filename();
    for (const CaseReport& c : r.cases) {
      EXPECT_EQ(c.status, Status::kInconclusive) << src.filename() << " " << c.case_id << ": " << c.detail;
      for (const TensorReport& t : c.outputs) {
        EXPECT_TRUE(contains(t.inconclusive, "the references disagree: the float32 golden is")) << t.inconclusive;
        EXPECT_TRUE(contains(t.inconclusive, "one of them was edited")) << t.inconclusive;
      }
    }
  }
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
