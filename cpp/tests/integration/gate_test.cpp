// The gate (integration): parity on real exported programs run through the real ExecuTorch
// runtime, and the SQNR floor and float32 bound on them. Its rules on constructed tensors and the
// bound table are unit/gate_test.cpp's.
#include "etproof/gate/gate.h"
#include "etproof/gate/references.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::demo_bundles;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

using etproof::testing::f32;

// A float32 tensor's values times k (float32 again).
HostTensor scaled(const HostTensor& t, double k) {
  std::vector<float> v;
  for (double x : t.to_double()) v.push_back(static_cast<float>(x * k));
  return f32(v, t.shape);
}

// A copy of a test bundle in a scratch directory, with every golden output multiplied by k.
fs::path copy_with_scaled_goldens(const std::string& name, double k) {
  const fs::path dir = scratch_dir() / name;
  fs::copy(test_bundles() / name, dir, fs::copy_options::recursive);
  etproof::testing::scale_goldens(dir, k);
  return dir;
}

Bound bound(double atol, double rtol, double min_cosine) {
  Bound b;
  b.atol = atol;
  b.rtol = rtol;
  b.min_cosine = min_cosine;
  b.source = "test";
  b.caller_supplied = true;
  return b;
}

// An SQNR floor as the gate's reports print it (4 significant digits).
std::string fmt_db(double v) {
  std::ostringstream os;
  os << std::setprecision(4) << v;
  return os.str();
}

// One term of the bound table, by axis ("recipe"/"precision") and key.
BoundTerm term(const std::string& axis, const std::string& key) {
  for (const BoundTerm& t : bound_table())
    if (t.axis == axis && t.key == key) return t;
  ADD_FAILURE() << "no " << axis << " " << key;
  return BoundTerm{};
}

// ---- the SQNR floor -----------------------------------------------------------------------------

TEST(SqnrFloor, RejectsAReferenceScaledByHalfThatAnAbsoluteAtolAndCosineLetThrough) {
  // The real int8 tiny model's outputs (±0.45) against its goldens × 0.5. Cosine is exactly as
  // good as before (scale-invariant). SQNR sees that the output is twice the reference:
  // Σr² / Σ(a−r)² = 1, 0 dB. The scale-free atol (a fraction of max|ref|) sees it too, where an
  // absolute atol measured on ±10 logits (the old table's 1.6) did not.
  const auto name = std::string("tiny-xnnpack-int8-dynamic-per-channel");
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / name);
  const Bundle b = open_bundle(test_bundles() / name);
  LoadedModel model = LoadedModel::load(b);
  const Bound derived = derive_bound(b.manifest.recipe, b.manifest.precision);
  const double floor = term("recipe", "int8-dynamic-per-channel").min_sqnr_db;
  ASSERT_NEAR(derived.min_sqnr_db, floor, 1e-6);
  for (const GoldenCase& g : b.manifest.goldens) {
    const auto actual = model.run(read_golden_inputs(b, g));
    const HostTensor ref = read_golden_outputs(b, g).at("y");
    const HostTensor half = scaled(ref, 0.5);
    const TensorReport r = compare_tensor("y", actual.at("y"), half, derived);
    EXPECT_FALSE(r.passed) << g.id;
    EXPECT_NEAR(r.sqnr_db, 0, 0.1) << g.id;  // a − r ≈ r: noise power = signal power
    EXPECT_GT(r.cosine, derived.min_cosine) << g.id;
    EXPECT_GT(r.fraction_over, 0) << g.id;  // the range-relative atol catches it as well
    EXPECT_NE(r.failure.find("sqnr below bound: SQNR 0.0 dB < " + fmt_db(floor) + " dB"),
              std::string::npos)
        << r.failure;
    // An absolute atol of the old table's size and no SQNR floor lets it through: the gap the
    // floor and the scale-free atol close.
    Bound absolute = bound(1.6, 0, derived.min_cosine);
    EXPECT_TRUE(compare_tensor("y", actual.at("y"), half, absolute).passed) << g.id;
    // And the true reference still agrees under the derived rule.
    EXPECT_TRUE(compare_tensor("y", actual.at("y"), ref, derived).passed) << g.id;
  }
}

TEST(SqnrFloor, ParityOnABundleWithHalvedGoldensDriftsAndSaysWhy) {
  const auto name = std::string("tiny-xnnpack-int8-dynamic-per-channel");
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / name);
  const fs::path dir = copy_with_scaled_goldens(name, 0.5);
  const ParityReport r = run_parity(open_bundle(dir));
  EXPECT_FALSE(r.passed) << to_text(r);
  EXPECT_FALSE(r.bound.caller_supplied);
  ASSERT_EQ(r.cases.size(), 3u);
  for (const CaseReport& c : r.cases) {
    EXPECT_FALSE(c.passed) << c.case_id;
    EXPECT_NE(c.outputs.at(0).failure.find("sqnr below bound"), std::string::npos)
        << c.outputs.at(0).failure;
  }
  // The floor is the table's, for what the column is judged against (the recipe's emulation).
  const Bundle opened = open_bundle(dir, OpenOptions{.verify_artifact = false});
  const JudgePlan plan = plan_judgement(opened.manifest, precision_here(opened.manifest));
  const std::string floor = fmt_db(plan.rule.min_sqnr_db);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("SQNR ≥ " + floor + " dB"), std::string::npos) << text;
  EXPECT_NE(text.find("SQNR 0.0 dB (floor " + floor + " dB)"), std::string::npos) << text;
  // Drift under a derived bound ends with the hint to pass a caller bound.
  EXPECT_NE(text.find("pass --atol/--rtol/--min-cosine/--min-sqnr"), std::string::npos) << text;
  const auto j = to_json(r);
  EXPECT_NEAR(j.at("bound").at("min_sqnr_db").get<double>(), plan.rule.min_sqnr_db, 1e-9);
  // Under a caller bound the hint is not given: the caller chose the bound.
  Bound caller = r.bound;
  caller.caller_supplied = true;
  const ParityReport rc = run_parity(open_bundle(dir), caller);
  EXPECT_FALSE(rc.passed);
  EXPECT_EQ(to_text(rc).find("hint:"), std::string::npos) << to_text(rc);
}

// ---- float32 on large outputs -------------------------------------------------------------------

TEST(Fp32Bound, AcceptsFloat32RoundingOnOutputsNear300AndStillRejectsInt8) {
  const Bound fp32 = derive_bound("fp32", "float32");
  EXPECT_DOUBLE_EQ(fp32.rtol, 1e-5);
  // The user's case: a Linear with weights × 1000, one output 284.74243 vs 284.74219.
  {
    auto r = compare_tensor("y", f32({284.74243f, -12.5f, 3.25f}), f32({284.74219f, -12.5f, 3.25f}),
                            fp32);
    EXPECT_TRUE(r.passed) << r.failure;
    // The atol rule resolves against this output's own range, not the demo's logits.
    EXPECT_NEAR(r.atol, kAtolFloor + fp32.atol_range * r.reference_range, 1e-12);
    EXPECT_NEAR(r.reference_range, 284.74219, 1e-3);
  }
  // 1e-6-relative errors of alternating sign on 256 outputs ≈ 300.
  std::vector<float> ref, act;
  for (int i = 0; i < 256; ++i) {
    const double r = 300 + 0.37 * (i % 17) - 0.21 * (i % 5);
    ref.push_back(static_cast<float>(r));
    act.push_back(static_cast<float>(r * (1 + (i % 2 ? 1e-6 : -1e-6))));
  }
  auto r = compare_tensor("y", f32(act), f32(ref), fp32);
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_GT(r.max_abs_error, fp32.atol);
  EXPECT_LT(r.worst_ratio, 0.2);  // 1e-6 relative against 1e-5: a tenth of the rtol term
  EXPECT_GT(r.sqnr_db, 110);
  // 1e-4-relative errors are not float32 rounding: rejected.
  std::vector<float> bad;
  for (size_t i = 0; i < ref.size(); ++i) bad.push_back(ref[i] * (i % 2 ? 1.0001f : 0.9999f));
  EXPECT_FALSE(compare_tensor("y", f32(bad), f32(ref), fp32).passed);

  // The real int8 tiny model judged by this fp32 bound is still drift, on every case.
  const auto dir = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(dir);
  const ParityReport q = run_parity(open_bundle(dir), fp32);
  EXPECT_FALSE(q.passed) << to_text(q);
  for (const CaseReport& c : q.cases) {
    EXPECT_FALSE(c.passed) << c.case_id;
    EXPECT_NE(c.outputs.at(0).failure.find("allclose"), std::string::npos);
    EXPECT_NE(c.outputs.at(0).failure.find("sqnr below bound"), std::string::npos);
  }
}

// ---- parity on real exported programs ----------------------------------------------------------

TEST(Parity, TinyBundlesPassWithTheDerivedBound) {
  for (const char* name :
       {"tiny-portable-fp32", "tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel"}) {
    const auto dir = test_bundles() / name;
    ETPROOF_REQUIRE_BUNDLE(dir);
    const Bundle b = open_bundle(dir);
    const ParityReport r = run_parity(b);
    EXPECT_TRUE(r.passed) << to_text(r);
    EXPECT_FALSE(r.bound.caller_supplied);
    EXPECT_EQ(r.cases.size(), b.manifest.goldens.size());
    ASSERT_FALSE(r.cases.empty());
    for (const auto& c : r.cases) {
      ASSERT_EQ(c.outputs.size(), 1u);
      EXPECT_EQ(c.outputs[0].output, "y");
      EXPECT_EQ(c.outputs[0].numel, 4u);
      EXPECT_LE(c.outputs[0].worst_ratio, 1);
    }
    if (b.manifest.backend == "xnnpack")
      EXPECT_EQ(r.delegates, std::vector<std::string>{"XnnpackBackend"}) << name;
    else
      EXPECT_TRUE(r.delegates.empty()) << name;
    const std::string text = to_text(r);
    EXPECT_NE(text.find("(derived)"), std::string::npos) << text;
    EXPECT_NE(text.find("result: PASS"), std::string::npos) << text;
  }
}

TEST(Parity, Int8OutputsJudgedByTheFp32BoundAreDrift) {
  const auto dir = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);
  const Bound fp32 = derive_bound("fp32", "float32");
  ParityReport r;
  ASSERT_NO_THROW(r = run_parity(b, fp32));  // drift is a value, never an exception
  EXPECT_FALSE(r.passed) << to_text(r);
  EXPECT_TRUE(r.bound.caller_supplied);
  size_t failed = 0;
  for (const auto& c : r.cases)
    for (const auto& t : c.outputs)
      if (!t.passed) {
        ++failed;
        EXPECT_FALSE(t.failure.empty());
        EXPECT_GT(t.worst_ratio, 1);
      }
  EXPECT_GT(failed, 0u);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("supplied by the caller"), std::string::npos) << text;
  EXPECT_NE(text.find("DRIFT"), std::string::npos) << text;
  const auto j = to_json(r);
  EXPECT_FALSE(j.at("passed").get<bool>());
  EXPECT_TRUE(j.at("bound").at("caller_supplied").get<bool>());
}

TEST(Parity, DemoInt8JudgedByTheFp32BoundIsDriftAndByItsOwnAgrees) {
  const auto dir = demo_bundles() / "efficientnet_lite0-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);
  LoadedModel model = LoadedModel::load(b);
  const ParityReport own = run_parity(b, model);
  EXPECT_TRUE(own.passed) << to_text(own);
  const ParityReport strict = run_parity(b, model, derive_bound("fp32", "float32"));
  EXPECT_FALSE(strict.passed) << to_text(strict);
  for (const auto& c : strict.cases) EXPECT_FALSE(c.passed) << c.case_id;
}

TEST(Parity, DemoFp32BundlesPassAndReportEveryField) {
  for (const char* name : {"efficientnet_lite0-portable-fp32", "efficientnet_lite0-xnnpack-fp32"}) {
    const auto dir = demo_bundles() / name;
    ETPROOF_REQUIRE_BUNDLE(dir);
    const ParityReport r = run_parity(open_bundle(dir));
    EXPECT_TRUE(r.passed) << to_text(r);
    EXPECT_EQ(r.cases.size(), 6u);
    const auto j = to_json(r);
    for (const auto& c : j.at("cases"))
      for (const auto& o : c.at("outputs")) {
        for (const char* key : {"worst_index", "worst_actual", "worst_reference", "max_abs_error",
                                "worst_ratio", "fraction_over", "cosine", "sqnr_db", "headroom"})
          EXPECT_TRUE(o.contains(key)) << key;
        EXPECT_EQ(o.at("worst_index").size(), 2u);
      }
  }
}

}  // namespace
}  // namespace etproof
