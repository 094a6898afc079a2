// The scale-free bound rules (gate.h) (integration): the manifest's outputs[i].quantization used
// by parity on an exported bundle. The rules on constructed tensors are unit/bound_rule_test.cpp's.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/gate/gate.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/core/manifest.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

// ---- outputs[i].quantization in the manifest ------------------------------------------------------

TEST(OutputQuantization, ParityResolvesTheStepFormFromTheManifest) {
  // The tiny int8 bundle, its manifest saying int8-static with an output scale of 0.01: the
  // gate's atol is the step form (26 steps × 0.01), not the range form.
  const std::string name = "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / name);
  const fs::path dir = scratch_dir() / name;
  fs::copy(test_bundles() / name, dir, fs::copy_options::recursive);
  const fs::path mp = dir / (name + ".etproof.json");
  nlohmann::json doc;
  {
    std::ifstream in(mp);
    doc = nlohmann::json::parse(in);
  }
  doc["recipe"] = "int8-static-per-channel";
  doc["outputs"][0]["quantization"] = {{"scale", 0.01}, {"zero_point", 0}, {"dtype", "int8"}};
  {
    std::ofstream out(mp);
    out << to_canonical_json(doc);
  }
  const ParityReport r = run_parity(open_bundle(dir));
  const Bound rule_b = derive_bound("int8-static-per-channel", "float32");
  ASSERT_FALSE(r.cases.empty());
  EXPECT_TRUE(r.passed) << to_text(r);
  for (const CaseReport& c : r.cases) {
    const TensorReport& t = c.outputs.at(0);
    ASSERT_TRUE(t.quant_scale);
    EXPECT_DOUBLE_EQ(*t.quant_scale, 0.01);
    EXPECT_NEAR(t.atol, kAtolFloor + rule_b.atol_range * t.reference_range + rule_b.atol_qsteps * 0.01,
                1e-12);
    ASSERT_TRUE(t.qstep_error);
    EXPECT_NEAR(*t.qstep_error, t.max_abs_error / 0.01, 1e-9);
  }
  const std::string text = to_text(r);
  EXPECT_NE(text.find("bound resolved: atol"), std::string::npos) << text;
  EXPECT_NE(text.find("output scale 0.01"), std::string::npos) << text;
  const auto j = to_json(r);
  const auto& o = j.at("cases")[0].at("outputs")[0];
  for (const char* key : {"atol", "rtol", "reference_range", "quant_scale", "range_error",
                          "qstep_error"})
    EXPECT_TRUE(o.contains(key)) << key;
  EXPECT_DOUBLE_EQ(o.at("quant_scale").get<double>(), 0.01);
}

}  // namespace
}  // namespace etproof
