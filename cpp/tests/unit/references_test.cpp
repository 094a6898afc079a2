// What a column is judged against (references.h): the widening of a bound by a reference's own
// error against truth (its arithmetic, and a property check that it never turns a pass against
// the golden into a drift against truth), the precision a delegate computes in here, the plan for
// each kind of bundle, and the recipe's cost against a budget.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/gate/references.h"
#include "test_support.h"

namespace etproof {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using etproof::testing::f32;
using etproof::testing::f64;

Bound absolute(double atol, double min_cosine, double min_sqnr_db) {
  Bound b;
  b.atol = atol;
  b.min_cosine = min_cosine;
  b.min_sqnr_db = min_sqnr_db;
  b.source = "test";
  return b;
}

// ---- widening -------------------------------------------------------------------------------

TEST(Widen, AddsTheMarginTimesTheReferencesErrorToEachRule) {
  const ReferenceError e{0.01, std::cos(0.001), 40.0};
  const Bound w = widen_by_reference(absolute(0.1, std::cos(0.002), 30.0), e, 4);
  EXPECT_DOUBLE_EQ(w.atol, 0.1 + 4 * 0.01);
  EXPECT_NEAR(std::acos(w.min_cosine), 0.002 + 4 * 0.001, 1e-9);
  // Noise amplitudes add: 10^(-30/20) + 4·10^(-40/20).
  EXPECT_NEAR(w.min_sqnr_db, -20 * std::log10(std::pow(10, -1.5) + 4 * std::pow(10, -2.0)), 1e-9);
  EXPECT_FALSE(w.scale_relative());
}

TEST(Widen, AnExactReferenceChangesNothingAndNoSqnrRuleStaysNone) {
  const ReferenceError exact{};  // max 0, cosine 1, SQNR +inf
  const Bound b = absolute(0.5, 0.99, -kInf);
  const Bound w = widen_by_reference(b, exact, 4);
  EXPECT_DOUBLE_EQ(w.atol, 0.5);
  EXPECT_NEAR(w.min_cosine, 0.99, 1e-12);
  EXPECT_EQ(w.min_sqnr_db, -kInf);
}

TEST(Widen, AnglesPastPiLeaveNoCosineRule) {
  const Bound w = widen_by_reference(absolute(0, -1, -kInf), ReferenceError{0, 0, 0}, 4);
  EXPECT_EQ(w.min_cosine, -1);
}

// The claim of references.h: whatever passed against the golden with bound B passes against truth
// with B widened by the golden's own error (triangle inequalities). Checked on random tensors of
// every scale, with the actual anywhere from identical to the golden to far outside B.
TEST(Widen, NeverTurnsAPassAgainstTheGoldenIntoADriftAgainstTruth) {
  std::mt19937 rng(20261130);
  std::normal_distribution<double> n01(0, 1);
  int passes = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const double scale = std::pow(10.0, (trial % 7) - 3);
    const double golden_noise = scale * std::pow(10.0, -2 - trial % 5);
    const double actual_noise = scale * std::pow(10.0, -1 - trial % 6);
    std::vector<double> t(64), g(64), a(64);
    for (size_t i = 0; i < t.size(); ++i) {
      t[i] = scale * n01(rng);
      g[i] = t[i] + golden_noise * n01(rng);
      a[i] = g[i] + actual_noise * n01(rng);
    }
    const Bound b = absolute(3 * scale * 1e-3, 1 - 1e-6, 60);
    const TensorReport vs_golden = compare_tensor("y", f64(a), f64(g), b);
    // The replay's margin M = 4, the same M the sign-flip rule divides the bound by (gate.h
    // kBoundMargin): its noise level atol_B/M + max|g − t| then admits every flip the golden's
    // own error allows.
    static_assert(kReferenceMargin == kBoundMargin);
    const Bound w = widen_by_reference(b, reference_error(f64(g), f64(t)));
    const TensorReport vs_truth = compare_tensor("y", f64(a), f64(t), w);
    if (vs_golden.passed) {
      ++passes;
      EXPECT_TRUE(vs_truth.passed) << "trial " << trial << ": " << vs_truth.failure;
    }
  }
  EXPECT_GT(passes, 20);  // the property was exercised
}

TEST(ReferenceError, MeasuresInFloat64AndRefusesOtherShapes) {
  const ReferenceError e = reference_error(f64({1, 2, 3}), f64({1, 2, 3.5}));
  EXPECT_DOUBLE_EQ(e.max_abs_error, 0.5);
  EXPECT_LT(e.cosine, 1);
  EXPECT_NEAR(e.sqnr_db, 10 * std::log10((1 + 4 + 12.25) / 0.25), 1e-9);
  EXPECT_THROW((void)reference_error(f64({1, 2}), f64({1, 2, 3})), Error);
}

// ---- the precision computed here --------------------------------------------------------------

Manifest manifest(const std::string& backend, const std::string& recipe,
                  const std::string& precision) {
  Manifest m;
  m.name = "m";
  m.backend = backend;
  m.recipe = recipe;
  m.precision = precision;
  return m;
}

TEST(PrecisionHere, OpenvinoFollowsThePluginsHintOthersTheManifest) {
  const Manifest ov = manifest("openvino", "fp32", "float32");
  const PrecisionHere bf = precision_given(ov, std::string("bf16"));
  EXPECT_EQ(bf.precision, "bfloat16");
  EXPECT_NE(bf.reason.find("INFERENCE_PRECISION_HINT bf16"), std::string::npos) << bf.reason;
  EXPECT_EQ(precision_given(ov, std::string("f32")).precision, "float32");
  EXPECT_TRUE(precision_given(ov, std::string("f32")).reason.empty());
  EXPECT_EQ(precision_given(ov, std::nullopt).precision, "float32");
  EXPECT_EQ(precision_given(manifest("xnnpack", "fp32", "float32"), std::string("bf16")).precision,
            "float32");
  // An OpenVINO bundle exported on a bfloat16 machine, judged on a float32 one.
  EXPECT_EQ(precision_given(manifest("openvino", "fp32", "bfloat16"), std::string("f32")).precision,
            "float32");
}

// ---- the plan --------------------------------------------------------------------------------

void capture(Manifest& m, const std::string& name) { m.references[name] = {true, "test", ""}; }

TEST(Plan, Float32AgainstTruthWidenedByTheGolden) {
  Manifest m = manifest("xnnpack", "fp32", "float32");
  capture(m, "float64");
  const JudgePlan p = plan_judgement(m, {"float32", ""});
  EXPECT_EQ(p.against, "float64");
  EXPECT_EQ(p.widen_by, "golden");
  EXPECT_EQ(p.basis, BoundBasis::kReference);
  EXPECT_FALSE(p.no_rule);
  EXPECT_TRUE(p.cost_reference.empty());
}

TEST(Plan, WithoutTruthTheGoldenBasisAndWhy) {
  Manifest m = manifest("xnnpack", "fp32", "float32");
  m.references["float64"] = {false, "", "aten.foo has no float64 kernel"};
  const JudgePlan p = plan_judgement(m, {"float32", ""});
  EXPECT_EQ(p.against, "golden");
  EXPECT_EQ(p.basis, BoundBasis::kGolden);
  EXPECT_NE(p.why.find("aten.foo has no float64 kernel"), std::string::npos) << p.why;
}

// The derived row holds the numbers its argument gives (data/bounds.json): 8 unit roundoffs u of
// the precision on the range (two output roundings, by the margin 4), cosine 1 − (8u)²/2, and an
// SQNR floor −20·log10(8u) rounded down to 0.1 dB (bound_table_test.cpp checks the file's numbers
// exactly; this checks the bound derive_bound makes of them).
// bfloat16 is measured (OpenVINO's CPU plugin, on two kinds of CPU), and looser than its argument would be.
TEST(Plan, DerivedRowsAreTheirUnitRoundoffArgument) {
  const Bound bf16 = derive_bound("fp32", "bfloat16", std::nullopt, BoundBasis::kReference);
  EXPECT_GT(bf16.atol_range, 8.0 / 256) << "measured beyond the argument";
  EXPECT_NE(bf16.source.find("measured by etproof measure-tolerances"), std::string::npos) << bf16.source;
  EXPECT_NE(bf16.source.find("(2026-12-01;"), std::string::npos) << bf16.source;  // each kind measured, dated
  EXPECT_NE(bf16.source.find("(2026-12-05;"), std::string::npos) << bf16.source;
  for (const auto& [precision, u] : {std::pair<std::string, double>{"float16", 1.0 / 2048}}) {
    SCOPED_TRACE(precision);
    const Bound b = derive_bound("fp32", precision, std::nullopt, BoundBasis::kReference);
    EXPECT_DOUBLE_EQ(b.atol_range, 8 * u);
    EXPECT_DOUBLE_EQ(b.min_cosine, 1 - (8 * u) * (8 * u) / 2);
    const double exact = -20 * std::log10(8 * u);
    EXPECT_LE(b.min_sqnr_db, exact);
    EXPECT_GT(b.min_sqnr_db, exact - 0.1);
  }
}

TEST(Plan, Float16IsDerivedFromItsEmulationWithNoDeviceMeasurement) {
  Manifest m = manifest("coreml", "fp32", "float16");
  capture(m, "float64");
  capture(m, "float16");
  const JudgePlan p = plan_judgement(m, {"float16", ""});
  ASSERT_FALSE(p.no_rule) << p.no_rule->cause();
  EXPECT_EQ(p.against, "float64");
  EXPECT_EQ(p.widen_by, "float16");
  EXPECT_EQ(p.cost_reference, "float16");
  EXPECT_NEAR(p.rule.atol_range, 8.0 / 2048, 1e-12);  // 8 unit roundoffs of float16
  // Without the emulation there is no float16 bound at all (none was ever measured).
  Manifest old = manifest("coreml", "fp32", "float16");
  EXPECT_TRUE(plan_judgement(old, {"float16", ""}).no_rule.has_value());
}

TEST(Plan, BfloatOnThisMachineIsJudgedAgainstItsEmulationsError) {
  Manifest m = manifest("openvino", "fp32", "float32");
  capture(m, "float64");
  capture(m, "bfloat16");
  const JudgePlan p = plan_judgement(m, precision_given(m, std::string("bf16")));
  EXPECT_EQ(p.precision, "bfloat16");
  EXPECT_EQ(p.widen_by, "bfloat16");
  EXPECT_NEAR(p.rule.atol_range, 0.059, 1e-12);  // the measured bfloat16 row
  EXPECT_FALSE(p.precision_reason.empty());
}

// ---- the widening's cap (issue 30) ----------------------------------------------------------

// The applied bound of one float output, with the named references (float64 truth, emulations).
AppliedBound apply(const JudgePlan& p, const HostTensor& golden,
                   const std::map<std::string, HostTensor>& refs) {
  return applied_bound(p, p.rule, golden,
                       [&](const std::string& n) -> const HostTensor& { return refs.at(n); },
                       std::nullopt);
}

JudgePlan float_plan(const std::string& backend, const std::string& hint) {
  Manifest m = manifest(backend, "fp32", "float32");
  capture(m, "float64");
  capture(m, "bfloat16");
  return plan_judgement(m, precision_given(m, hint.empty() ? std::nullopt
                                                           : std::optional<std::string>(hint)));
}

TEST(Cap, AGoldenWithinFloat32RoundingOfItsTruthWidensAndIsJudged) {
  const JudgePlan p = float_plan("xnnpack", "");
  const HostTensor truth = f64({1.0, -0.5, 0.25, 0.75});
  // 40 unit roundoffs of float32 off on the largest element: offset_linear's order.
  const HostTensor golden = f64({1.0 + 40 * std::ldexp(1.0, -24), -0.5, 0.25, 0.75});
  const AppliedBound a = apply(p, golden, {{"float64", truth}});
  EXPECT_TRUE(a.inconclusive.empty()) << a.inconclusive;
  EXPECT_EQ(a.widened_by, "golden");
  EXPECT_NEAR(a.resolved.atol, p.rule.atol + p.rule.atol_range * 1.0 + 4 * 40 * std::ldexp(1.0, -24), 1e-15);
}

TEST(Cap, AZeroedGoldenOrAnotherStatesTruthIsInconclusiveNamingTheGap) {
  const JudgePlan p = float_plan("portable", "");
  const HostTensor truth = f64({3.65, -1.2, 0.4, 2.0});
  for (const HostTensor& golden : {f64({0, 0, 0, 0}),                 // zeroed and re-hashed
                                   f64({2.09, -1.2, 0.4, 2.0})}) {    // another buffer history
    const AppliedBound a = apply(p, golden, {{"float64", truth}});
    EXPECT_NE(a.inconclusive.find("the references disagree"), std::string::npos) << a.inconclusive;
    EXPECT_NE(a.inconclusive.find("the float32 golden"), std::string::npos) << a.inconclusive;
    EXPECT_NE(a.inconclusive.find("float32 rounding explains"), std::string::npos);
    // The bound reported is the unwidened rule's: no widening was trusted.
    EXPECT_NEAR(a.resolved.atol, p.rule.atol + p.rule.atol_range * 3.65, 1e-12);
  }
  // Just inside the cap (2^14 unit roundoffs of the range): still judged.
  const double cap = kExplainableRoundoffs * std::ldexp(1.0, -24) * 3.65;
  const AppliedBound inside = apply(p, f64({3.65 - 0.99 * cap, -1.2, 0.4, 2.0}), {{"float64", truth}});
  EXPECT_TRUE(inside.inconclusive.empty()) << inside.inconclusive;
  const AppliedBound outside = apply(p, f64({3.65 - 1.01 * cap, -1.2, 0.4, 2.0}), {{"float64", truth}});
  EXPECT_FALSE(outside.inconclusive.empty());
}

TEST(Cap, ABfloat16EmulationThatLosesTheSignalLeavesNoBound) {
  // A Linear after a folded normalisation (input offset 100): bfloat16 rounds the inputs by up to
  // 0.25 and the outputs within ±1 lose their signal; the emulation is 0.354 off truth. Widened
  // by 4x that the bound would be atol ≥ 1.4 on outputs within ±1: no bound.
  const JudgePlan p = float_plan("openvino", "bf16");
  ASSERT_EQ(p.widen_by, "bfloat16");
  const HostTensor truth = f64({0.255, -0.8, 1.0, 0.1});
  const HostTensor emulation = f64({-0.099, -0.6, 0.8, 0.3});
  const HostTensor golden = truth;
  const AppliedBound a = apply(p, golden, {{"float64", truth}, {"bfloat16", emulation}});
  EXPECT_NE(a.inconclusive.find("no bound"), std::string::npos) << a.inconclusive;
  EXPECT_NE(a.inconclusive.find("bfloat16 arithmetic cannot carry this output"), std::string::npos);
  EXPECT_NE(a.inconclusive.find("max|ref| 1"), std::string::npos) << a.inconclusive;
  // An ordinary bfloat16 gap (a few roundings) widens and is judged.
  const HostTensor close = f64({0.255 + 0.004, -0.8 - 0.003, 1.0, 0.1});
  const AppliedBound ok = apply(p, golden, {{"float64", truth}, {"bfloat16", close}});
  EXPECT_TRUE(ok.inconclusive.empty()) << ok.inconclusive;
  EXPECT_LT(ok.resolved.atol, 1.0);
}

TEST(Cap, NoBoundReasonNamesEachRuleThatAdmitsEverything) {
  EXPECT_EQ(no_bound_reason(absolute(0.5, 0.9, 20), 1.0), "");
  EXPECT_NE(no_bound_reason(absolute(1.0, 0.9, 20), 1.0).find("atol 1 ≥ max|ref| 1"), std::string::npos);
  EXPECT_NE(no_bound_reason(absolute(0.1, 0.0, 20), 1.0).find("cosine floor"), std::string::npos);
  EXPECT_NE(no_bound_reason(absolute(0.1, 0.9, -3), 1.0).find("SQNR floor"), std::string::npos);
  EXPECT_EQ(no_bound_reason(absolute(0.1, 0.9, -kInf), 1.0), "") << "no SQNR rule is not a floor ≤ 0";
  EXPECT_EQ(no_bound_reason(absolute(5.0, -1, -kInf), 0.0), "") << "an all-zero reference";
}

TEST(Cap, TheSignFlipRuleKeepsItsNoiseLevelUnderAWideBound) {
  // Judged against truth with a wide absolute bound (atol 2.5: what the uncapped widening gave),
  // a flip of 0.255 to −0.065 passes allclose, and the bound's own noise level (atol/1) is blind
  // to it; the rule's noise level (CompareOptions::noise_rule) sees it.
  const HostTensor truth = f64({0.255, -0.8, 1.0, 0.1});
  const HostTensor actual = f64({-0.065, -0.8, 1.0, 0.1});
  const Bound wide = absolute(2.5, -1, -kInf);
  EXPECT_TRUE(compare_tensor("y", actual, truth, wide).passed);
  CompareOptions o;
  o.noise_rule = derive_bound("fp32", "float32", std::nullopt, BoundBasis::kReference);
  const TensorReport t = compare_tensor("y", actual, truth, wide, std::nullopt, o);
  EXPECT_FALSE(t.passed);
  EXPECT_EQ(t.sign_flips, 1u);
  EXPECT_NE(t.failure.find("sign flip"), std::string::npos) << t.failure;
  EXPECT_EQ(t.noise_margin, kBoundMargin);
}

TEST(Plan, Int8DynamicIsJudgedAgainstItsQd8EmulationOnly) {
  // The qd8 emulation (activations quantized as XNNPACK's qd8 kernels do) is what the program
  // computes: the column is judged against it, on the reference-basis row.
  Manifest m = manifest("xnnpack", "int8-dynamic-per-channel", "float32");
  capture(m, "float64");
  capture(m, "int8-dynamic-per-channel");
  m.references.at("int8-dynamic-per-channel").emulates = "xnnpack-qd8";
  for (bool use_truth : {true, false}) {
    const JudgePlan p = plan_judgement(m, {"float32", ""}, use_truth);
    EXPECT_EQ(p.against, "int8-dynamic-per-channel");
    EXPECT_EQ(p.basis, BoundBasis::kReference);
    EXPECT_FALSE(p.no_rule);
    EXPECT_EQ(p.cost_reference, "int8-dynamic-per-channel");
  }
  // A bundle exported before the qd8 emulation carries the PT2E graph as it is (per-tensor
  // activations), which XNNPACK does not compute: judged against the golden, and it says why.
  m.references.at("int8-dynamic-per-channel").emulates = "pt2e";
  for (bool use_truth : {true, false}) {
    const JudgePlan p = plan_judgement(m, {"float32", ""}, use_truth);
    EXPECT_EQ(p.against, "golden");
    EXPECT_EQ(p.basis, BoundBasis::kGolden);
    EXPECT_EQ(p.cost_reference, "int8-dynamic-per-channel");
    if (use_truth) EXPECT_NE(p.why.find("per tensor"), std::string::npos) << p.why;
  }
}

TEST(Plan, Int8StaticIsJudgedAgainstTheGoldenAndReportsItsCost) {
  // No int8-static row against the emulation (data/bounds.json, that row's why: XNNPACK's static
  // kernels are not within a few steps of it), so it is judged — and measured — against the
  // golden; the emulation gives the recipe's cost.
  Manifest m = manifest("xnnpack", "int8-static-per-channel", "float32");
  capture(m, "float64");
  capture(m, "int8-static-per-channel");
  m.references.at("int8-static-per-channel").emulates = "pt2e";
  for (bool use_truth : {true, false}) {
    const JudgePlan p = plan_judgement(m, {"float32", ""}, use_truth);
    EXPECT_EQ(p.against, "golden");
    EXPECT_EQ(p.basis, BoundBasis::kGolden);
    EXPECT_FALSE(p.no_rule);
    EXPECT_EQ(p.cost_reference, "int8-static-per-channel");
    EXPECT_NE(p.why.find("emulation"), std::string::npos) << p.why;
  }
}

// The judgement line says what each faithful emulation computes: XNNPACK's qd8 activations only
// for the emulation that quantizes them so (a newcomer read "activations quantized as XNNPACK's
// qd8 kernels do" on a Core ML weight-only bundle, whose emulation quantizes no activation).
TEST(Plan, TheJudgementLineNamesWhatEachEmulationComputes) {
  const std::vector<std::tuple<std::string, std::string, std::string, std::string>> cases = {
      {"xnnpack", "int8-dynamic-per-channel", "xnnpack-qd8", "activations quantized as XNNPACK's qd8 kernels do"},
      {"coreml", "int8-weight-only", "pt2e-weight-only", "int8 weights dequantized and the rest in float"},
      {"vulkan", "int8-weight-only", "pt2e-weight-only", "int8 weights dequantized and the rest in float"},
      {"xnnpack", "int8-weight-only", "torchao", "the eager model as torchao's quantize_ left it"},
      {"xnnpack", "8da4w", "xnnpack-qb4w", "int4 group scales rounded to bfloat16"}};
  size_t judged = 0;
  for (const auto& [backend, recipe, emulates, says] : cases) {
    Manifest m = manifest(backend, recipe, "float32");
    capture(m, "float64");
    capture(m, recipe);
    m.references.at(recipe).emulates = emulates;
    const JudgePlan p = plan_judgement(m, {"float32", ""});
    if (p.against != recipe) continue;  // no reference row for this pair: judged against the golden
    ++judged;
    EXPECT_NE(p.why.find(says), std::string::npos) << recipe << ": " << p.why;
    if (emulates != "xnnpack-qd8") EXPECT_EQ(p.why.find("qd8"), std::string::npos) << recipe << ": " << p.why;
  }
  EXPECT_GE(judged, 4u) << "most of these pairs have a reference row (data/bounds.json)";
}

// Every plan but a float column widened by the golden (which holds the golden to truth itself)
// checks each float golden against the truth the bundle carries: an int8 column judged against
// its emulation or the golden, and a float column widened by its precision's emulation.
TEST(GoldenTruth, CheckedWhereTheJudgementDoesNotHoldTheGoldenToTruth) {
  Manifest int8 = manifest("xnnpack", "int8-static-per-channel", "float32");
  capture(int8, "int8-static-per-channel");
  int8.references.at("int8-static-per-channel").emulates = "pt2e";
  EXPECT_TRUE(plan_judgement(int8, {"float32", ""}).golden_truth.empty()) << "no truth carried";
  capture(int8, "float64");
  EXPECT_EQ(plan_judgement(int8, {"float32", ""}).golden_truth, "float64");
  EXPECT_TRUE(plan_judgement(int8, {"float32", ""}, false).golden_truth.empty()) << "use_truth false";
  Manifest fp32 = manifest("xnnpack", "fp32", "float32");
  capture(fp32, "float64");
  EXPECT_TRUE(plan_judgement(fp32, {"float32", ""}).golden_truth.empty()) << "widened by the golden";
  Manifest bf16 = manifest("openvino", "fp32", "float32");
  capture(bf16, "float64");
  capture(bf16, "bfloat16");
  const JudgePlan p = plan_judgement(bf16, {"bfloat16", ""});
  ASSERT_EQ(p.widen_by, "bfloat16");
  EXPECT_EQ(p.golden_truth, "float64");
}

TEST(GoldenTruth, AGoldenOffTruthBeyondFloat32RoundingIsInconclusiveAndOneWithinIsNot) {
  Manifest m = manifest("xnnpack", "int8-static-per-channel", "float32");
  capture(m, "float64");
  capture(m, "int8-static-per-channel");
  m.references.at("int8-static-per-channel").emulates = "pt2e";
  const JudgePlan p = plan_judgement(m, {"float32", ""});
  const HostTensor truth = f64({0.1, -0.7, 0.3, 0.9});
  const HostTensor golden = f32({0.1f, -0.7f, 0.3f, 0.9f});  // truth rounded to float32
  EXPECT_EQ(golden_disagrees(p, golden, [&](const std::string&) -> const HostTensor& { return truth; }), "");
  const AppliedBound ok = apply(p, golden, {{"float64", truth}});
  EXPECT_TRUE(ok.inconclusive.empty()) << ok.inconclusive;
  const HostTensor edited = f32({0.15f, -1.05f, 0.45f, 1.35f});  // times 1.5
  const AppliedBound bad = apply(p, edited, {{"float64", truth}});
  EXPECT_NE(bad.inconclusive.find("the references disagree: the float32 golden is 0.45 off float64 truth"),
            std::string::npos) << bad.inconclusive;
  EXPECT_EQ(bad.against, "golden");  // still measured against it: the numbers, judged by nothing
  JudgePlan unchecked = p;
  unchecked.golden_truth.clear();
  EXPECT_TRUE(apply(unchecked, edited, {}).inconclusive.empty());
}

// ---- a quantized recipe computed in bfloat16: its emulation widened by its own rounding -------

Manifest openvino_int8(bool rounded) {
  Manifest m = manifest("openvino", "int8-static-per-channel", "bfloat16");
  capture(m, "float64");
  capture(m, "int8-static-per-channel");
  capture(m, "bfloat16");
  m.references.at("int8-static-per-channel").emulates = "pt2e";
  if (rounded) capture(m, "int8-static-per-channel-bfloat16");
  return m;
}

TEST(RoundedEmulation, PlansTheEmulationWidenedWithTheGoldenRowAsFallback) {
  const JudgePlan p = plan_judgement(openvino_int8(true), {"bfloat16", ""});
  ASSERT_FALSE(p.no_rule) << p.no_rule->cause();
  EXPECT_EQ(p.against, "int8-static-per-channel");
  EXPECT_EQ(p.widen_by, "int8-static-per-channel-bfloat16");
  EXPECT_EQ(p.basis, BoundBasis::kReference);
  EXPECT_NEAR(p.rule.atol_range, 0.021 + 0.059, 1e-12);  // the backend's row and the bfloat16 row
  ASSERT_TRUE(p.fallback.has_value());
  EXPECT_NEAR(p.fallback->atol_qsteps, 26, 1e-12);  // the int8-static golden row
  // Without the rounded emulation, or computed in float32: the golden, as before.
  EXPECT_EQ(plan_judgement(openvino_int8(false), {"bfloat16", ""}).against, "golden");
  Manifest f32 = openvino_int8(true);
  EXPECT_EQ(plan_judgement(f32, {"float32", ""}).against, "golden");
}

TEST(RoundedEmulation, WidensByTheRoundingOrFallsBackWhereNoBoundIsLeft) {
  const JudgePlan p = plan_judgement(openvino_int8(true), {"bfloat16", ""});
  const HostTensor golden = f32({1.0f, -0.5f, 0.25f, 0.75f});
  const HostTensor truth = f64({1.0, -0.5, 0.25, 0.75});  // the golden holds to it (golden_truth)
  const HostTensor emulation = f32({0.98f, -0.5f, 0.25f, 0.76f});
  // Rounding moved the emulation by 0.01 of its range: the rows (0.08 of the range) plus 4x that.
  const HostTensor near = f32({0.99f, -0.5f, 0.25f, 0.76f});
  const AppliedBound a = apply(p, golden, {{"float64", truth}, {"int8-static-per-channel", emulation},
                                           {"int8-static-per-channel-bfloat16", near}});
  EXPECT_TRUE(a.fell_back.empty()) << a.fell_back;
  EXPECT_TRUE(a.inconclusive.empty()) << a.inconclusive;
  EXPECT_EQ(a.against, "int8-static-per-channel");
  EXPECT_EQ(a.widened_by, "int8-static-per-channel-bfloat16");
  EXPECT_NEAR(a.resolved.atol, p.rule.atol + 0.08 * 0.98 + 4 * (0.99 - 0.98), 1e-6);
  EXPECT_GT(a.resolved.min_sqnr_db, 0);
  // Rounding flipped the output's sign: widened by 4x that, no bound; judged against the golden
  // by the golden row, saying why — never inconclusive.
  const HostTensor far = f32({-0.98f, 0.5f, -0.25f, -0.76f});
  const AppliedBound b = apply(p, golden, {{"float64", truth}, {"int8-static-per-channel", emulation},
                                           {"int8-static-per-channel-bfloat16", far}});
  EXPECT_TRUE(b.inconclusive.empty()) << b.inconclusive;
  EXPECT_EQ(b.against, "golden");
  EXPECT_TRUE(b.widened_by.empty());
  EXPECT_NE(b.fell_back.find("no bound"), std::string::npos) << b.fell_back;
  EXPECT_NE(b.fell_back.find("golden row"), std::string::npos) << b.fell_back;
  EXPECT_NEAR(b.bound.atol_qsteps, 26, 1e-12);
  // Rounding moved the emulation by 8 % of its signal (SQNR ~22 dB): widened by 4x that the
  // bound is still a bound (SQNR floor above 0 dB) but looser than the golden row's: the golden
  // row judges it.
  const HostTensor third = f32({0.98f * 1.08f, -0.5f * 0.92f, 0.25f * 1.08f, 0.76f * 0.92f});
  const AppliedBound l = apply(p, golden, {{"float64", truth}, {"int8-static-per-channel", emulation},
                                           {"int8-static-per-channel-bfloat16", third}});
  EXPECT_EQ(l.against, "golden");
  EXPECT_NE(l.fell_back.find("looser than the golden row"), std::string::npos)
      << l.fell_back << " / widened: SQNR " << l.resolved.min_sqnr_db << " cos " << l.resolved.min_cosine;
  // Without a golden row to fall back on the output is inconclusive, as any bound that is none.
  JudgePlan none = p;
  none.fallback.reset();
  const AppliedBound c = apply(none, golden, {{"float64", truth}, {"int8-static-per-channel", emulation},
                                              {"int8-static-per-channel-bfloat16", far}});
  EXPECT_NE(c.inconclusive.find("no bound"), std::string::npos) << c.inconclusive;
}

// ---- int8 judged as tightly as the program allows (program_at_export) ------------------------

Manifest int8_manifest(const std::string& recipe, bool matched, double steps, double range) {
  Manifest m = manifest("xnnpack", recipe, "float32");
  capture(m, "float64");
  capture(m, recipe);
  ReferenceInfo& emu = m.references.at(recipe);
  emu.emulates = recipe == "int8-dynamic-per-channel" ? "xnnpack-qd8" : "pt2e";
  ProgramAtExport x;
  x.cases = 4;
  x.outputs = 4;
  if (recipe == "int8-static-per-channel") x.max_steps = steps; else x.max_range_error = range;
  x.matched = matched;
  x.machine = "x86_64 test CPU (Linux)";
  emu.program_at_export = x;
  return m;
}

TEST(MatchedProgram, Int8StaticThatMatchedAtExportIsJudgedAgainstItsEmulationInSteps) {
  const std::string r = "int8-static-per-channel";
  const JudgePlan p = plan_judgement(int8_manifest(r, true, 0, 0), {"float32", ""});
  EXPECT_EQ(p.against, r);
  EXPECT_EQ(p.basis, BoundBasis::kReference);
  EXPECT_FALSE(p.no_rule);
  EXPECT_DOUBLE_EQ(p.rule.atol_qsteps, kReferenceMargin * (kMatchSteps + std::ldexp(1.0, -10)));
  EXPECT_DOUBLE_EQ(p.rule.atol_range, 0);
  EXPECT_FALSE(p.rule.target);
  EXPECT_NE(p.why.find("matched"), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("x86_64 test CPU"), std::string::npos) << p.why;
  // The cosine and SQNR floors are the recipe's (target) row's.
  const Bound row = derive_bound(r, "float32");
  EXPECT_DOUBLE_EQ(p.rule.min_cosine, row.min_cosine);
  EXPECT_DOUBLE_EQ(p.rule.min_sqnr_db, row.min_sqnr_db);

  // Should pass: a program one step from the emulation on one element (a rounding at a tie).
  const double scale = 0.05;
  const HostTensor emu = f64({1.0, -0.5, 0.25, 0.75, 0.1, -0.9});
  HostTensor one_step = f64({1.0 + scale, -0.5, 0.25, 0.75, 0.1, -0.9});
  EXPECT_TRUE(compare_tensor("y", one_step, emu, p.rule, scale).passed);
  // Should fail: five steps off on one element, which the 26-step golden row would admit.
  const HostTensor five_steps = f64({1.0, -0.5 - 5 * scale, 0.25, 0.75, 0.1, -0.9});
  const TensorReport t = compare_tensor("y", five_steps, emu, p.rule, scale);
  EXPECT_FALSE(t.passed) << t.failure;
  EXPECT_TRUE(compare_tensor("y", five_steps, emu, row, scale).passed)
      << "the target row admits it: the test would show nothing";
}

TEST(MatchedProgram, Int8DynamicThatMatchedIsJudgedByTheMatchCriterionNotTheRow) {
  const std::string r = "int8-dynamic-per-channel";
  const JudgePlan p = plan_judgement(int8_manifest(r, true, 0, 1.3e-7), {"float32", ""});
  EXPECT_EQ(p.against, r);
  const double range_term = kReferenceMargin * kExplainableRoundoffs * std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(p.rule.atol_range_unquantized, range_term);
  const Bound row = derive_bound(r, "float32", std::nullopt, BoundBasis::kReference);
  EXPECT_LT(range_term * 30, row.atol_range) << "tighter than the recipe's row by far";
  const HostTensor emu = f64({2.0, -1.0, 0.5, 1.5});
  // Should pass: float32 rounding of the epilogue (1e-6 of the range).
  EXPECT_TRUE(compare_tensor("y", f64({2.0 + 2e-6, -1.0, 0.5, 1.5}), emu, p.rule).passed);
  // Should fail: 1 % of the range, which the row (0.15 of it) admits.
  EXPECT_FALSE(compare_tensor("y", f64({2.0, -1.0 + 0.02, 0.5, 1.5}), emu, p.rule).passed);
  EXPECT_TRUE(compare_tensor("y", f64({2.0, -1.0 + 0.02, 0.5, 1.5}), emu, row).passed);
}

TEST(MatchedProgram, AProgramThatDepartedKeepsTheRowAndSaysHowFar) {
  const JudgePlan st = plan_judgement(
      int8_manifest("int8-static-per-channel", false, 12.3, 0), {"float32", ""});
  EXPECT_EQ(st.against, "golden");
  EXPECT_TRUE(st.rule.target);
  EXPECT_NE(st.why.find("departed"), std::string::npos) << st.why;
  EXPECT_NE(st.why.find("12.3 output steps"), std::string::npos) << st.why;
  const JudgePlan dy = plan_judgement(
      int8_manifest("int8-dynamic-per-channel", false, 0, 0.013), {"float32", ""});
  EXPECT_EQ(dy.against, "int8-dynamic-per-channel");
  EXPECT_DOUBLE_EQ(dy.rule.atol_range,
                   derive_bound("int8-dynamic-per-channel", "float32", std::nullopt,
                                BoundBasis::kReference).atol_range);
  EXPECT_NE(dy.why.find("0.013 of the range"), std::string::npos) << dy.why;
  // measure-tolerances' own-reference measurement is unchanged by the export's record.
  EXPECT_EQ(plan_judgement(int8_manifest("int8-static-per-channel", true, 0, 0), {"float32", ""},
                           /*use_truth=*/false).against,
            "golden");
}

// ---- question 2 ------------------------------------------------------------------------------

TEST(RecipeCost, ReportedAndJudgedOnlyAgainstABudget) {
  const HostTensor golden = f64({1, 5, 2, 0.5});
  const HostTensor emulation = f64({1.1, 4.8, 2.2, 0.4});
  const RecipeCost free = recipe_cost("int8-dynamic-per-channel", emulation, golden, true, {});
  EXPECT_TRUE(free.over_budget.empty());
  ASSERT_TRUE(free.top1_agrees.has_value());
  EXPECT_TRUE(*free.top1_agrees);
  EXPECT_LT(free.sqnr_db, 30);
  Budget strict;
  strict.min_sqnr_db = 30;
  const RecipeCost over = recipe_cost("int8-dynamic-per-channel", emulation, golden, true, strict);
  EXPECT_NE(over.over_budget.find("SQNR"), std::string::npos) << over.over_budget;
  Budget loose;
  loose.min_sqnr_db = 10;
  loose.min_cosine = 0.99;
  EXPECT_TRUE(recipe_cost("x", emulation, golden, false, loose).over_budget.empty());
  const RecipeCost swapped = recipe_cost("x", f64({6, 5, 2, 0.5}), golden, true, {});
  EXPECT_FALSE(*swapped.top1_agrees);
}

TEST(RecipeCost, CountsTopOneRowByRowForTheBundleBudget) {
  // Three rows of four classes: rows 0 and 2 keep their argmax, row 1 moves from class 1 to 3.
  const HostTensor golden = f64({9, 1, 0, 0, 0, 9, 0, 1, 0, 0, 9, 1}, {3, 4});
  const HostTensor emulation = f64({8, 1, 0, 0, 0, 5, 0, 6, 0, 0, 9, 2}, {3, 4});
  const RecipeCost c = recipe_cost("int8-static-per-channel", emulation, golden, true, {});
  EXPECT_EQ(c.top1_rows, 3u);
  EXPECT_EQ(c.top1_agreed, 2u);
  ASSERT_TRUE(c.top1_agrees.has_value());
  EXPECT_FALSE(*c.top1_agrees);
  // Not a classifier: no top-1 counted.
  EXPECT_EQ(recipe_cost("x", emulation, golden, false, {}).top1_rows, 0u);
}

TEST(Budget, TheCallersKeysReplaceTheManifestsOneByOne) {
  EXPECT_FALSE(effective_budget(std::nullopt, std::nullopt));
  Budget manifest;
  manifest.min_sqnr_db = 20;
  manifest.min_cosine = 0.99;
  Budget caller;
  caller.min_cosine = 0.9;
  caller.top1_agreement = 0.8;
  const std::optional<Budget> b = effective_budget(manifest, caller);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->min_sqnr_db, 20);       // the manifest's, untouched
  EXPECT_EQ(b->min_cosine, 0.9);       // the caller's replaces it
  EXPECT_EQ(b->top1_agreement, 0.8);   // the caller's, added
  EXPECT_EQ(effective_budget(std::nullopt, caller)->min_cosine, 0.9);
  EXPECT_EQ(effective_budget(manifest, std::nullopt)->min_sqnr_db, 20);
}

TEST(Budget, ArgumentsParseByTheManifestsKeysAndRefuseTheRestByName) {
  Budget b;
  parse_budget_argument("min_sqnr_db=20.5", b);
  parse_budget_argument("min_cosine=-0.25", b);
  parse_budget_argument("top1_agreement=1", b);
  EXPECT_EQ(b.min_sqnr_db, 20.5);
  EXPECT_EQ(b.min_cosine, -0.25);
  EXPECT_EQ(b.top1_agreement, 1);
  EXPECT_NE(describe_budget(b).find("top-1 agreement"), std::string::npos);
  for (const char* bad : {"top1=0.9", "min_sqnr_db", "min_sqnr_db=", "min_sqnr_db=20dB",
                          "min_sqnr_db=nan", "min_cosine=1.5", "top1_agreement=-0.1",
                          "min_sqnr_db=inf"}) {
    try {
      parse_budget_argument(bad, b);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << bad;
      EXPECT_NE(e.remedy().find("top1_agreement"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace etproof
