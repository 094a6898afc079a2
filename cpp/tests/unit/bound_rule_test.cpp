// The scale-free bound rules (gate.h) (unit): each rule on constructed tensors, resolution from the
// reference range and from the output's quantization scale, compounding, and the manifest's
// outputs[i].quantization read by the C++ reader. Parity using it on an exported bundle is
// integration/bound_rule_test.cpp's.
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/core/manifest.h"
#include "test_support.h"

namespace etproof {
namespace {

using etproof::testing::fixture;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using etproof::testing::f64;
using etproof::testing::kind_of;

BoundTerm term(const std::string& axis, const std::string& key) {
  for (const BoundTerm& t : bound_table())
    if (t.axis == axis && t.key == key) return t;
  ADD_FAILURE() << "no " << axis << " " << key;
  return BoundTerm{};
}

// A rule: atol = range·max|ref| + (qsteps·scale, or unquantized·max|ref|), no floor, no rtol.
Bound rule(double range, double qsteps = 0, double unquantized = 0) {
  Bound b;
  b.atol_range = range;
  b.atol_qsteps = qsteps;
  b.atol_range_unquantized = unquantized;
  b.min_cosine = -1;
  b.source = "test rule";
  return b;
}

// ---- the rules ------------------------------------------------------------------------------

// Every (recipe, precision, compute unit) the backend table lets the export half write — planned
// rows and OpenVINO's alternative precisions included — has a bound on the basis the replay
// reaches for it (plan_judgement tries its own reference's row, then the golden's), so no bundle
// the export writes can come back "ran, but no bound" (issue 16 §2: this replaces a warning at
// export time with a guarantee that holds before anything is exported). A recipe the table does
// not list still has none: the test's other half.
TEST(BoundRule, EveryRecipeTheBackendTableExportsHasABound) {
  size_t pairs = 0;
  for (const auto& b : backend_table().raw.at("backends")) {
    for (const auto& r : b.value("recipes", nlohmann::json::array())) {
      const std::string recipe = r.at("recipe").get<std::string>();
      std::vector<std::string> precisions{r.at("precision").get<std::string>()};
      for (const auto& p : r.value("precisions", nlohmann::json::array())) precisions.push_back(p.get<std::string>());
      std::optional<std::string> unit;
      if (r.contains("compute_unit")) unit = r.at("compute_unit").get<std::string>();
      for (const std::string& precision : precisions) {
        ++pairs;
        std::string why;
        bool bound = false;
        for (BoundBasis basis : {BoundBasis::kReference, BoundBasis::kGolden}) {
          try {
            derive_bound(b.at("key").get<std::string>() + "/" + recipe, precision, unit, basis);  // as the replay asks
            bound = true;
          } catch (const Error& e) {
            why += std::string(e.cause()) + "\n";
          }
        }
        EXPECT_TRUE(bound) << b.at("key").get<std::string>() << ": " << recipe << " / " << precision
                           << " has no bound on either basis:\n" << why;
      }
    }
  }
  EXPECT_GE(pairs, 10u);  // the table's rows today, OpenVINO's precisions counted
  for (BoundBasis basis : {BoundBasis::kReference, BoundBasis::kGolden}) {
    try {
      derive_bound("int4-weight-only", "float32", std::nullopt, basis);
      ADD_FAILURE() << "a recipe outside the table got a bound";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCapabilityUnavailable);
    }
  }
}

// A recipe row keyed BACKEND/RECIPE is that backend's (its own quantizer, measured or derived on
// it) and is taken before the recipe's row; every other backend keeps the recipe's.
TEST(BoundRule, ABackendsOwnRecipeRowIsTakenBeforeTheRecipesRow) {
  std::vector<BoundTerm> rows{term("recipe", "fp32")};
  for (const BoundTerm& t : bound_table())  // float32's rows, one per basis
    if (t.axis == "precision" && t.key == "float32") rows.push_back(t);
  rows[0].key = "r";
  rows[0].atol_range = 0.1;
  BoundTerm own = rows[0];
  own.key = "b/r";
  own.atol_range = 0.2;
  rows.push_back(own);
  for (BoundBasis basis : {BoundBasis::kGolden, BoundBasis::kReference}) {
    const double recipe = derive_bound(rows, "r", "float32", std::nullopt, basis).atol_range;
    EXPECT_DOUBLE_EQ(derive_bound(rows, "b/r", "float32", std::nullopt, basis).atol_range, recipe + 0.1);
    EXPECT_DOUBLE_EQ(derive_bound(rows, "c/r", "float32", std::nullopt, basis).atol_range, recipe);
    EXPECT_EQ(kind_of([&] { (void)derive_bound(rows, "b/s", "float32", std::nullopt, basis); }),
              ErrorKind::kCapabilityUnavailable);
  }
  // The table: Core ML's and Vulkan's weight-only quantizers have rows of their own (derived:
  // neither runs here); XNNPACK's keeps the measured int8-weight-only row; OpenVINO's static int8
  // takes the int8-static-per-channel target.
  for (const char* backend : {"coreml", "vulkan"}) {
    const Bound b = derive_bound(std::string(backend) + "/int8-weight-only", "float32", std::nullopt,
                                 BoundBasis::kReference);
    EXPECT_NE(b.source.find("derived, not measured (" + std::string(backend)), std::string::npos) << b.source;
  }
  EXPECT_EQ(derive_bound("xnnpack/int8-weight-only", "float32", std::nullopt, BoundBasis::kReference).source,
            derive_bound("int8-weight-only", "float32", std::nullopt, BoundBasis::kReference).source);
  EXPECT_EQ(derive_bound("openvino/int8-static-per-channel", "bfloat16").source,
            derive_bound("int8-static-per-channel", "bfloat16").source);
}

TEST(BoundRule, NaNMatchesOnlyNaNUnderADerivedRule) {
  const Bound fp32 = derive_bound("fp32", "float32");
  EXPECT_TRUE(compare_tensor("y", f64({1, kNaN, 3}), f64({1, kNaN, 3}), fp32).passed);
  const TensorReport r = compare_tensor("y", f64({1, 2, 3}), f64({1, kNaN, 3}), fp32);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("non-finite mismatch"), std::string::npos) << r.failure;
  // The range is taken over finite elements only.
  EXPECT_DOUBLE_EQ(r.reference_range, 3);
}

TEST(BoundRule, AllZeroReferenceResolvesToTheAbsoluteFloor) {
  const Bound fp32 = derive_bound("fp32", "float32");
  const TensorReport same = compare_tensor("y", f64({0, 0, 0}), f64({0, 0, 0}), fp32);
  EXPECT_TRUE(same.passed) << same.failure;
  EXPECT_EQ(same.reference_range, 0);
  EXPECT_DOUBLE_EQ(same.atol, kAtolFloor);  // every range term vanished; the floor remains
  EXPECT_EQ(same.range_error, 0);
  // Float32 round-off on values that ought to be zero: within the floor.
  const TensorReport tiny = compare_tensor("y", f64({1e-10, -5e-10, 0}), f64({0, 0, 0}), fp32);
  EXPECT_TRUE(tiny.passed) << tiny.failure;
  EXPECT_TRUE(tiny.sqnr_skipped);
  // Anything larger is not zero.
  const TensorReport over = compare_tensor("y", f64({1e-6, 0, 0}), f64({0, 0, 0}), fp32);
  EXPECT_FALSE(over.passed);
  EXPECT_NE(over.failure.find("allclose"), std::string::npos) << over.failure;
  EXPECT_TRUE(std::isinf(over.range_error));
}

TEST(BoundRule, ConstantOutputNeverPassesEvenInsideTheRule) {
  // Every element within 100% of the range, but the output is dead.
  const TensorReport r = compare_tensor("y", f64({0.5, 0.5, 0.5}), f64({0.2, 0.9, 0.4}), rule(1.0));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("constant output"), std::string::npos) << r.failure;
}

TEST(BoundRule, SignFlipIsCaughtByCosineUnderALooseElementwiseRule) {
  Bound loose = rule(5.0);  // |a − r| ≤ 5·max|ref|: a sign flip (2·|r|) is inside
  loose.min_cosine = 0.5;
  const TensorReport r = compare_tensor("y", f64({-1, 2, -3}), f64({1, -2, 3}), loose);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.fraction_over, 0);
  EXPECT_NEAR(r.cosine, -1, 1e-12);
  EXPECT_NE(r.failure.find("cosine"), std::string::npos) << r.failure;
  EXPECT_EQ(r.failure.find("allclose"), std::string::npos) << r.failure;
}

TEST(BoundRule, JustInsideAndJustOutsideTheRangeRelativeForm) {
  // max|ref| = 10, atol_range 0.01 → resolved atol 0.1.
  const Bound b = rule(0.01);
  const TensorReport in = compare_tensor("y", f64({10, 2.0999, 0}), f64({10, 2, 0}), b);
  EXPECT_TRUE(in.passed) << in.failure;
  EXPECT_DOUBLE_EQ(in.atol, 0.1);
  EXPECT_NEAR(in.range_error, 0.0999 / 10, 1e-12);
  EXPECT_GT(in.headroom, 0);
  const TensorReport out = compare_tensor("y", f64({10, 2.1001, 0}), f64({10, 2, 0}), b);
  EXPECT_FALSE(out.passed);
  EXPECT_LT(out.headroom, 0);
  EXPECT_EQ(out.worst_index, std::vector<int64_t>{1});
  // The same relative error on a reference 1000× smaller (probabilities): same verdicts.
  EXPECT_TRUE(compare_tensor("y", f64({0.01, 0.0020999, 0}), f64({0.01, 0.002, 0}), b).passed);
  EXPECT_FALSE(compare_tensor("y", f64({0.01, 0.0021001, 0}), f64({0.01, 0.002, 0}), b).passed);
}

TEST(BoundRule, JustInsideAndJustOutsideTheQuantStepForm) {
  // 2 steps of scale 0.05 = 0.1 where the scale is recorded; 0.5·max|ref| where it is not.
  const Bound b = rule(0, 2, 0.5);
  const HostTensor ref = f64({1, 2, 0});
  const TensorReport in = compare_tensor("y", f64({1, 2.099, 0}), ref, b, 0.05);
  EXPECT_TRUE(in.passed) << in.failure;
  EXPECT_DOUBLE_EQ(in.atol, 0.1);
  ASSERT_TRUE(in.quant_scale && in.qstep_error);
  EXPECT_NEAR(*in.qstep_error, 0.099 / 0.05, 1e-9);
  const TensorReport out = compare_tensor("y", f64({1, 2.101, 0}), ref, b, 0.05);
  EXPECT_FALSE(out.passed);
  // Without a recorded scale the range form applies: 0.5 × 2 = 1.0.
  const TensorReport unscaled = compare_tensor("y", f64({1, 2.101, 0}), ref, b);
  EXPECT_TRUE(unscaled.passed) << unscaled.failure;
  EXPECT_DOUBLE_EQ(unscaled.atol, 1.0);
  EXPECT_FALSE(unscaled.qstep_error);
}

// ---- resolution and compounding -----------------------------------------------------------------

TEST(BoundRule, ResolutionFromRangeAndFromQuantScale) {
  Bound b = rule(0.1, 4, 0.3);
  b.atol = kAtolFloor;
  b.rtol = 1e-5;
  const Bound by_range = resolve_bound(b, 8.0);
  EXPECT_DOUBLE_EQ(by_range.atol, kAtolFloor + 0.1 * 8 + 0.3 * 8);
  EXPECT_DOUBLE_EQ(by_range.rtol, 1e-5);
  EXPECT_FALSE(by_range.scale_relative());
  const Bound by_scale = resolve_bound(b, 8.0, 0.02);
  EXPECT_DOUBLE_EQ(by_scale.atol, kAtolFloor + 0.1 * 8 + 4 * 0.02);
  // An absolute (caller-supplied) bound is never rescaled.
  Bound caller;
  caller.atol = 0.25;
  caller.caller_supplied = true;
  EXPECT_DOUBLE_EQ(resolve_bound(caller, 1000, 0.5).atol, 0.25);
  // A caller's --atol replaces the whole derived atol rule; other flags keep it.
  BoundOverride o;
  o.atol = 0.3;
  const Bound given = override_bound(o, "int8-dynamic-per-channel", "float32");
  EXPECT_FALSE(given.scale_relative());
  EXPECT_DOUBLE_EQ(given.atol, 0.3);
  EXPECT_TRUE(given.caller_supplied);
  BoundOverride sq;
  sq.min_sqnr_db = 30;
  EXPECT_TRUE(override_bound(sq, "int8-dynamic-per-channel", "float32").scale_relative());
}

TEST(BoundRule, RecipeAndPrecisionCompoundInScaleFreeTerms) {
  const BoundTerm st = term("recipe", "int8-static-per-channel");
  const BoundTerm f32 = term("precision", "float32");
  ASSERT_GT(st.atol_qsteps, 0);  // the int8-static term has a step form
  const Bound b = derive_bound("int8-static-per-channel", "float32");
  EXPECT_DOUBLE_EQ(b.atol, kAtolFloor);
  EXPECT_DOUBLE_EQ(b.atol_range, f32.atol_range);         // always applied
  EXPECT_DOUBLE_EQ(b.atol_qsteps, st.atol_qsteps);        // where a scale is recorded
  EXPECT_DOUBLE_EQ(b.atol_range_unquantized, st.atol_range);  // where none is
  EXPECT_DOUBLE_EQ(b.rtol, st.rtol + f32.rtol);
  EXPECT_DOUBLE_EQ(b.min_cosine, st.min_cosine * f32.min_cosine);
  EXPECT_TRUE(b.target);
  EXPECT_FALSE(derive_bound("int8-dynamic-per-channel", "float32").target);
  const double R = 7, s = 0.06;
  EXPECT_DOUBLE_EQ(resolve_bound(b, R, s).atol,
                   kAtolFloor + f32.atol_range * R + st.atol_qsteps * s);
  EXPECT_DOUBLE_EQ(resolve_bound(b, R).atol,
                   kAtolFloor + f32.atol_range * R + st.atol_range * R);
  // The rule and its JSON say both forms.
  const std::string text = describe_bound(b);
  EXPECT_NE(text.find("quant steps"), std::string::npos) << text;
  EXPECT_NE(text.find("·max|ref|"), std::string::npos) << text;
  const auto j = to_json(b);
  for (const char* key : {"atol", "atol_range", "atol_qsteps", "atol_range_unquantized",
                          "scale_relative", "rule", "target"})
    EXPECT_TRUE(j.contains(key)) << key;
  // Every table row is scale-free: no absolute atol of its own.
  for (const BoundTerm& t : bound_table()) {
    EXPECT_EQ(t.atol, 0) << t.key;
    EXPECT_GE(t.atol_range, 0) << t.key;
    EXPECT_LT(t.atol_range, 1) << t.key;  // a fraction of the range
  }
}

// ---- outputs[i].quantization in the manifest ------------------------------------------------------

nlohmann::json fixture_doc() {
  std::ifstream in(fixture("manifest_v1.json"));
  return nlohmann::json::parse(in);
}

TEST(OutputQuantization, ParsedWhenPresentAbsentOtherwise) {
  nlohmann::json doc = fixture_doc();
  EXPECT_FALSE(parse_manifest(doc, "fixture").outputs.at(0).quantization);
  doc["outputs"][0]["quantization"] = {{"scale", 0.0611}, {"zero_point", -62}, {"dtype", "int8"}};
  const Manifest m = parse_manifest(doc, "fixture");
  ASSERT_TRUE(m.outputs.at(0).quantization);
  EXPECT_DOUBLE_EQ(m.outputs[0].quantization->scale, 0.0611);
  EXPECT_EQ(m.outputs[0].quantization->zero_point, -62);
  EXPECT_EQ(m.outputs[0].quantization->dtype, "int8");
  EXPECT_EQ(output_scale(m, m.outputs[0].name), 0.0611);
  EXPECT_FALSE(output_scale(m, "no-such-output"));
}

TEST(OutputQuantization, InvalidFieldsAreNamed) {
  for (const auto& [q, field] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"scale", 0.0}, {"zero_point", 0}, {"dtype", "int8"}}, "scale"},
           {{{"scale", 0.1}, {"zero_point", 0.5}, {"dtype", "int8"}}, "zero_point"},
           {{{"scale", 0.1}, {"zero_point", 0}, {"dtype", "int4"}}, "dtype"},
           {{{"scale", 0.1}, {"zero_point", 0}}, "dtype"}}) {
    nlohmann::json doc = fixture_doc();
    doc["outputs"][0]["quantization"] = q;
    try {
      parse_manifest(doc, "fixture");
      ADD_FAILURE() << q.dump() << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid);
      EXPECT_NE(e.cause().find("quantization." + field), std::string::npos) << e.cause();
    }
  }
}

}  // namespace
}  // namespace etproof
