// attribute_int8_test.cpp (integration) — which layer drifted, for the PT2E-quantized recipes
// (etproof/attribute.h; python/etproof/export/taps_quantized.py): the tapped twins of
// build/test-bundles/attribution-int8. The cost rule on made-up curves is unit/attribute_int8_test.cpp's.
//
// The bundles (python/etproof/fixtures/testbundles.py, ATTRIBUTION_INT8_BUNDLES): the GELU MLP, whose int8
// columns agree at every tap, and the outlier MLP (etproof.fixtures.attribution.outlier_spec): fc1 has
// one output channel 1000x the others and fc2 ignores it, so int8 activations quantized per tensor
// (static) or per row (XNNPACK's qd8, dynamic) leave fc2 almost nothing of what it reads
// (LLM.int8()'s outlier features). Both programs matched their recipe's emulation at export (the
// twins too: references[RECIPE].program_at_export), so every tap is judged against that emulation,
// as the column is: every tap agrees, and the recipe's own cost is what grows at fc2. A twin judged
// against the float32 golden instead (one that departed from its emulation) names fc2 the culprit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "etproof/replay/attribute.h"
#include "etproof/render/attribute.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace etproof;

namespace {

fs::path int8_bundle(const std::string& name) { return etproof::testing::twin_test_bundle("attribution-int8", name); }

const LayerRow* by_module(const Attribution& a, const std::string& module) {
  for (const LayerRow& l : a.layers)
    if (l.point.module_path == module) return &l;
  return nullptr;
}

}  // namespace

// ---- the twins ---------------------------------------------------------------------------------

TEST(AttributeInt8, TheGeluMlpAgreesAtEveryTapOnBothInt8Recipes) {
  for (const char* name : {"gelu_mlp-xnnpack-int8-static-per-channel", "gelu_mlp-xnnpack-int8-dynamic-per-channel"}) {
    const fs::path b = int8_bundle(name);
    SKIP_WITHOUT_TWIN(b);
    const Attribution a = attribute(b);
    ASSERT_FALSE(a.layers.empty()) << name;
    EXPECT_TRUE(a.taps.delegation_matches) << name;
    EXPECT_EQ(a.taps.shipped_delegate_calls, a.taps.twin_delegate_calls) << name;
    for (const LayerRow& l : a.layers) {
      EXPECT_TRUE(l.report.passed) << name << " " << l.point.op << "\n" << to_text(a);
      EXPECT_TRUE(l.point.delegated) << name << " " << l.point.op;
      EXPECT_TRUE(l.cost) << name << " " << l.point.op << ": no recipe cost at the tap";
    }
    EXPECT_FALSE(a.earliest_drift) << to_text(a);
    EXPECT_TRUE(a.outputs_passed) << to_text(a);
    EXPECT_FALSE(a.costliest) << to_text(a);  // the recipe costs ~40 dB everywhere: no one layer
  }
}

TEST(AttributeInt8, StaticInt8TapsOnlyWhatTheProgramHoldsInInt8) {
  // fc2's output goes into the ReLU fused with it: the quantized program never holds it, so only
  // the ReLU after it is tapped (taps_quantized.py); dynamic int8 taps every compute node.
  const fs::path s = int8_bundle("gelu_mlp-xnnpack-int8-static-per-channel");
  const fs::path d = int8_bundle("gelu_mlp-xnnpack-int8-dynamic-per-channel");
  SKIP_WITHOUT_TWIN(s);
  SKIP_WITHOUT_TWIN(d);
  const Attribution as = attribute(s), ad = attribute(d);
  EXPECT_EQ(by_module(as, "fc2"), nullptr) << to_text(as);
  EXPECT_NE(by_module(as, "relu"), nullptr) << to_text(as);
  EXPECT_NE(by_module(ad, "fc2"), nullptr) << to_text(ad);
  EXPECT_EQ(ad.layers.size(), as.layers.size() + 1) << to_text(as) << to_text(ad);
}

TEST(AttributeInt8, TheTapsAreJudgedAgainstTheReferenceTheColumnIsJudgedAgainst) {
  // issue 30: attribute's taps, parity's outputs and the ledger's verdict read one judgement. The
  // static program and its twin both matched the int8-static emulation at export.
  const fs::path b = int8_bundle("outlier_mlp-xnnpack-int8-static-per-channel");
  SKIP_WITHOUT_TWIN(b);
  const Attribution a = attribute(b);
  const ParityReport shipped = replay(b);
  ASSERT_FALSE(shipped.cases.empty());
  EXPECT_EQ(a.twin_report.judgement, shipped.judgement);
  EXPECT_NE(a.twin_report.judgement.find("which the program matched"), std::string::npos) << a.twin_report.judgement;
  EXPECT_EQ(a.summary.find("Note:"), std::string::npos) << a.summary;
  for (const LayerRow& l : a.layers) EXPECT_TRUE(l.report.passed) << l.point.op << "\n" << to_text(a);
  EXPECT_TRUE(a.outputs_passed) << to_text(a);
  ASSERT_TRUE(a.costliest) << to_text(a);  // the recipe's own cost grows at the starved layer
  EXPECT_EQ(a.layers[*a.costliest].point.module_path, "fc2") << to_text(a);
}

TEST(AttributeInt8, ATwinJudgedAgainstTheGoldenNamesTheLayerTheOutlierStarvesAndSaysWhy) {
  // The same static bundle with its twin's measurement at export saying "departed": the twin is then
  // judged by the recipe's golden-basis row, where fc2 is the culprit, and the summary says that the
  // column itself is judged against the emulation.
  const fs::path src = int8_bundle("outlier_mlp-xnnpack-int8-static-per-channel");
  SKIP_WITHOUT_TWIN(src);
  const fs::path b = etproof::testing::scratch_dir() / src.filename();
  fs::copy(src, b, fs::copy_options::recursive);
  const fs::path twin = b / (src.filename().string() + ".taps") / (src.filename().string() + ".taps.etproof.json");
  nlohmann::json doc = nlohmann::json::parse(etproof::testing::slurp(twin));
  nlohmann::json& at = doc["references"]["int8-static-per-channel"]["program_at_export"];
  ASSERT_TRUE(at.is_object()) << doc["references"].dump();
  at["matched"] = false;
  at["max_steps"] = 3.0;
  std::ofstream(twin) << doc.dump(2);
  for (const std::string& c : attribute(b).cases) {
    AttributeOptions o;
    o.case_id = c;
    const Attribution a = attribute(b, o);
    ASSERT_TRUE(a.earliest_drift) << to_text(a);
    const LayerRow& first = a.layers[*a.earliest_drift];
    EXPECT_EQ(first.point.module_path, "fc2") << to_text(a);
    ASSERT_TRUE(first.point.source) << to_text(a);
    EXPECT_NE(first.point.source->code.find("fc2"), std::string::npos) << first.point.source->code;
    for (size_t i = 0; i < *a.earliest_drift; ++i) EXPECT_TRUE(a.layers[i].report.passed) << to_text(a);
    EXPECT_TRUE(a.culprit) << to_text(a);
    EXPECT_NE(a.summary.find("Note: the column is judged against the int8-static-per-channel emulation, which its "
                             "program matched at export, but the taps are not: the tapped twin departed from it"),
              std::string::npos)
        << a.summary;
  }
}

TEST(AttributeInt8, DynamicInt8FollowsItsEmulationWhileTheRecipesCostGrowsAtTheOutlier) {
  const fs::path b = int8_bundle("outlier_mlp-xnnpack-int8-dynamic-per-channel");
  SKIP_WITHOUT_TWIN(b);
  const Attribution a = attribute(b);
  EXPECT_NE(a.twin_report.judgement.find("emulation"), std::string::npos) << a.twin_report.judgement;
  for (const LayerRow& l : a.layers) EXPECT_TRUE(l.report.passed) << l.point.op << "\n" << to_text(a);
  EXPECT_FALSE(a.earliest_drift) << to_text(a);
  EXPECT_TRUE(a.outputs_passed) << to_text(a);
  ASSERT_TRUE(a.costliest) << to_text(a);
  const LayerRow& c = a.layers[*a.costliest];
  EXPECT_EQ(c.point.module_path, "fc2") << to_text(a);
  EXPECT_GE(c.cost_step_db, kCulpritDropDb) << to_text(a);
  EXPECT_NE(a.summary.find("grows most at"), std::string::npos) << a.summary;
  EXPECT_NE(to_text(a).find("cost SQNR dB"), std::string::npos);
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j["costliest"], *a.costliest);
  EXPECT_TRUE(j["layers"][*a.costliest]["cost"].contains("sqnr_db"));
}
