// The gate (unit): its rules on constructed tensors and the bound table. Parity on real exported
// programs run through the real ExecuTorch runtime is integration/gate_test.cpp's.
#include "etproof/gate/gate.h"
#include "etproof/gate/references.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/replay/tolerances.h"
#include "etproof/render/tolerances.h"
#include "test_support.h"

namespace etproof {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using etproof::testing::f64;

using etproof::testing::f32;

Bound bound(double atol, double rtol, double min_cosine) {
  Bound b;
  b.atol = atol;
  b.rtol = rtol;
  b.min_cosine = min_cosine;
  b.source = "test";
  b.caller_supplied = true;
  return b;
}

// A bound so loose that only the non-numeric rules (NaN, inf, constant output) can fail.
const Bound kLoose = bound(1e9, 0, -1);

TEST(GateRules, NaNMatchesNaN) {
  auto r = compare_tensor("y", f64({1, kNaN, 3}), f64({1, kNaN, 3}), bound(1e-6, 0, 0.999));
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.failure, "");
  EXPECT_EQ(r.max_abs_error, 0);
}

TEST(GateRules, NaNAgainstANumberFailsEvenUnderALooseBound) {
  auto r = compare_tensor("y", f64({1, kNaN, 3}), f64({1, 2, 3}), kLoose);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("non-finite"), std::string::npos) << r.failure;
  EXPECT_EQ(r.worst_index, (std::vector<int64_t>{1}));
  // And the other way round: a number where the reference is NaN.
  auto r2 = compare_tensor("y", f64({1, 2, 3}), f64({1, kNaN, 3}), kLoose);
  EXPECT_FALSE(r2.passed);
  EXPECT_NE(r2.failure.find("non-finite"), std::string::npos) << r2.failure;
}

TEST(GateRules, InfMatchesOnlyTheSameInf) {
  EXPECT_TRUE(compare_tensor("y", f64({kInf, 1, 2}), f64({kInf, 1, 2}), bound(0, 0, 0.99)).passed);
  auto r = compare_tensor("y", f64({-kInf, 1, 2}), f64({kInf, 1, 2}), kLoose);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("non-finite"), std::string::npos) << r.failure;
  EXPECT_FALSE(compare_tensor("y", f64({1e30, 1, 2}), f64({kInf, 1, 2}), kLoose).passed);
}

TEST(GateRules, AllZerosOutputFailsWhereTheReferenceIsNot) {
  // Every element is within atol 1 of the reference, and cosine is not checked: only the
  // constant-output rule can catch a dead model here.
  auto r = compare_tensor("y", f64({0, 0, 0, 0}), f64({0.1, -0.2, 0.05, 0}), bound(1, 0, -1));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("constant output"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("all zeros"), std::string::npos) << r.failure;
  EXPECT_EQ(r.fraction_over, 0);  // it really was inside the elementwise bound
}

TEST(GateRules, ConstantOutputFails) {
  auto r = compare_tensor("y", f64({0.5, 0.5, 0.5}), f64({0.4, 0.5, 0.6}), kLoose);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("constant output"), std::string::npos) << r.failure;
}

TEST(GateRules, ConstantOutputPassesWhereTheReferenceIsConstantToo) {
  auto r = compare_tensor("y", f64({2, 2, 2}), f64({2, 2, 2}), bound(0, 0, 0.999));
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_TRUE(std::isinf(r.sqnr_db) && r.sqnr_db > 0);
  EXPECT_DOUBLE_EQ(r.cosine, 1);
}

TEST(GateRules, SignFlipFailsOnCosineUnderALooseElementwiseBound) {
  const std::vector<double> ref{1, -2, 3, -4};
  const std::vector<double> act{-1, 2, -3, 4};
  // |a − r| = 2|r| ≤ 10 + 1·|r| for every element: allclose alone would pass it.
  auto r = compare_tensor("y", f64(act), f64(ref), bound(10, 1, 0.9));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.fraction_over, 0);
  EXPECT_NEAR(r.cosine, -1, 1e-12);
  EXPECT_NE(r.failure.find("cosine"), std::string::npos) << r.failure;
  EXPECT_EQ(r.failure.find("allclose"), std::string::npos) << r.failure;
}

TEST(GateRules, JustInsideAndJustOutsideTheBound) {
  // tolerance at reference 10: atol 0.1 + rtol 0.01·10 = 0.2
  const Bound b = bound(0.1, 0.01, 0.9);
  auto inside = compare_tensor("y", f64({10.199, 0, -5}), f64({10, 0, -5}), b);
  EXPECT_TRUE(inside.passed) << inside.failure;
  EXPECT_LE(inside.worst_ratio, 1);
  EXPECT_GT(inside.headroom, 0);
  EXPECT_NEAR(inside.worst_ratio, 0.199 / 0.2, 1e-9);
  EXPECT_EQ(inside.fraction_over, 0);

  auto outside = compare_tensor("y", f64({10.201, 0, -5}), f64({10, 0, -5}), b);
  EXPECT_FALSE(outside.passed);
  EXPECT_GT(outside.worst_ratio, 1);
  EXPECT_LT(outside.headroom, 0);
  EXPECT_NEAR(outside.fraction_over, 1.0 / 3, 1e-12);
  EXPECT_NE(outside.failure.find("allclose"), std::string::npos) << outside.failure;
  EXPECT_NEAR(outside.max_abs_error, 0.201, 1e-9);
}

TEST(GateRules, WorstElementIsTheLargestBoundRatioWithItsMultiIndex) {
  std::vector<double> ref(24), act(24);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = act[i] = static_cast<double>(i) - 7.5;
  // Flat 23 = [1, 2, 3] in [2, 3, 4]: the largest error. Flat 5 = [0, 1, 1]: a smaller one.
  act[23] += 0.5;
  act[5] -= 0.25;
  auto r = compare_tensor("y", f64(act, {2, 3, 4}), f64(ref, {2, 3, 4}), bound(1e-3, 0, 0.9));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst_index, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.worst_reference, 15.5);
  EXPECT_DOUBLE_EQ(r.worst_actual, 16.0);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 0.5);
  EXPECT_NEAR(r.fraction_over, 2.0 / 24, 1e-12);
  EXPECT_EQ(r.numel, 24u);
  // The ratio picks the worst element, not the absolute error: with rtol dominating, a smaller
  // error on a small reference is worse than a larger one on a large reference.
  auto r2 = compare_tensor("y", f64({100.5, 1.3}), f64({100, 1}), bound(0, 0.01, 0.9));
  EXPECT_EQ(r2.worst_index, (std::vector<int64_t>{1}));
}

TEST(GateRules, SqnrAndCosineAreMeasured) {
  // reference energy 1+4+9+16 = 30, noise 0.01·4 = 0.04 → 10·log10(750)
  auto r = compare_tensor("y", f64({1.1, 2.1, 3.1, 4.1}), f64({1, 2, 3, 4}), bound(1, 0, 0.99));
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_NEAR(r.sqnr_db, 10 * std::log10(750.0), 1e-9);
  EXPECT_GT(r.cosine, 0.99);
  EXPECT_LT(r.cosine, 1);
}

TEST(GateRules, ShapeAndDtypeMustMatch) {
  try {
    (void)compare_tensor("y", f64({1, 2}), f64({1, 2, 3}), kLoose);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShapeMismatch);
    EXPECT_NE(e.cause().find("\"y\""), std::string::npos);
  }
  try {
    (void)compare_tensor("y", f32({1, 2}), f64({1, 2}), kLoose);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDtypeMismatch);
  }
}

// ---- exact integers, slices, sign flips (issue 9 §3) -------------------------------------------

template <typename T>
HostTensor ints(DType dtype, std::vector<T> v, std::vector<int64_t> shape = {}) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : shape;
  t.data.resize(v.size() * sizeof(T));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

TEST(ExactIntegers, TopkIndicesEditedByOneDriftAndNameTheIndex) {
  // topk's int64 indices into a vocabulary of 100: the golden's index 42 came back as 43.
  const std::vector<int64_t> ref{3, 17, 42, 8, 99};
  std::vector<int64_t> act = ref;
  act[2] = 43;
  // A loose float bound (OpenVINO bfloat16: 0.16·max|ref| = 15.8 here) would admit +1 — and +15.
  const Bound loose = derive_bound("fp32", "bfloat16");
  ASSERT_TRUE(compare_tensor("idx", f64({3, 17, 43, 8, 99}, {1, 5}), f64({3, 17, 42, 8, 99}, {1, 5}),
                             loose)
                  .passed);
  const auto r = compare_tensor("idx", ints(DType::kInt64, act, {1, 5}),
                                ints(DType::kInt64, ref, {1, 5}), loose);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.first_mismatch, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(r.first_mismatch_actual, 43);
  EXPECT_EQ(r.first_mismatch_reference, 42);
  EXPECT_EQ(r.atol, 0);
  EXPECT_TRUE(r.cosine_skipped && r.sqnr_skipped);  // measured, not judged
  EXPECT_NE(r.failure.find("exact: 1 of 5"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("[0, 2] actual 43 reference 42"), std::string::npos) << r.failure;
  // The same indices unchanged pass.
  EXPECT_TRUE(compare_tensor("idx", ints(DType::kInt64, ref, {1, 5}),
                             ints(DType::kInt64, ref, {1, 5}), loose)
                  .passed);
}

TEST(ExactIntegers, Int64IsComparedWithoutRoundingThroughDouble) {
  // 2^53 and 2^53 + 1 are the same double: the exact rule must still see them differ.
  const int64_t big = int64_t{1} << 53;
  const auto r = compare_tensor("id", ints(DType::kInt64, std::vector<int64_t>{big + 1}),
                                ints(DType::kInt64, std::vector<int64_t>{big}), kLoose);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.first_mismatch_actual, big + 1);
}

TEST(ExactIntegers, Int8OutputWithItsPositivesZeroedDrifts) {
  // An int8 ReLU whose positive values come back as 0, judged under the int8-static rule with
  // the output's quantization scale recorded (26 steps of 0.1 = atol 2.6 would admit a 0 for 2).
  const std::vector<int8_t> ref{0, 5, 0, 2, 3, 0, 1, 0};
  const std::vector<int8_t> act{0, 0, 0, 0, 0, 0, 0, 0};
  const auto r = compare_tensor("y", ints(DType::kInt8, act), ints(DType::kInt8, ref),
                                derive_bound("int8-static-per-channel", "float32"), 0.1);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.mismatches, 4u);
  EXPECT_EQ(r.first_mismatch, (std::vector<int64_t>{1}));
  EXPECT_EQ(r.first_mismatch_actual, 0);
  EXPECT_EQ(r.first_mismatch_reference, 5);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 5);
  // uint8 and bool are exact too.
  EXPECT_FALSE(compare_tensor("m", ints(DType::kBool, std::vector<uint8_t>{1, 0}),
                              ints(DType::kBool, std::vector<uint8_t>{1, 1}), kLoose)
                   .passed);
  EXPECT_FALSE(compare_tensor("m", ints(DType::kUInt8, std::vector<uint8_t>{200, 0}),
                              ints(DType::kUInt8, std::vector<uint8_t>{201, 0}), kLoose)
                   .passed);
}

TEST(ExactIntegers, IntegerAtolOneAdmitsPlusMinusOneOnly) {
  const auto ref = ints(DType::kInt32, std::vector<int32_t>{10, 20, 30, -5});
  const auto off_by_one = ints(DType::kInt32, std::vector<int32_t>{11, 19, 30, -4});
  const auto off_by_two = ints(DType::kInt32, std::vector<int32_t>{10, 22, 30, -5});
  EXPECT_FALSE(compare_tensor("c", off_by_one, ref, kLoose).passed);  // exact by default
  CompareOptions one;
  one.integer_atol = 1;
  const auto ok = compare_tensor("c", off_by_one, ref, kLoose, std::nullopt, one);
  EXPECT_TRUE(ok.passed) << ok.failure;
  EXPECT_EQ(ok.mismatches, 0u);
  EXPECT_DOUBLE_EQ(ok.worst_ratio, 1);
  const auto bad = compare_tensor("c", off_by_two, ref, kLoose, std::nullopt, one);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.first_mismatch, (std::vector<int64_t>{1}));
  EXPECT_NE(bad.failure.find("integer_atol 1"), std::string::npos) << bad.failure;
  CompareOptions negative;
  negative.integer_atol = -1;
  try {
    (void)compare_tensor("c", off_by_one, ref, kLoose, std::nullopt, negative);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.cause().find("integer_atol"), std::string::npos) << e.cause();
  }
}

// A batch of 4 rows of 16: rows 0, 1, 3 of amplitude 10, row 2 of amplitude 2.5 (so it carries
// 2% of the energy: zeroing it leaves the tensor's cosine at 0.99).
std::vector<float> batch_of_four() {
  std::vector<float> v(64);
  for (size_t row = 0; row < 4; ++row)
    for (size_t j = 0; j < 16; ++j)
      v[row * 16 + j] = static_cast<float>((row == 2 ? 2.5 : 10.0) *
                                           std::sin(0.7 * static_cast<double>(j) + static_cast<double>(row)));
  return v;
}

TEST(Slices, ABatchWithOneRowZeroedDriftsAndNamesTheRow) {
  const std::vector<float> ref = batch_of_four();
  std::vector<float> act = ref;
  for (size_t j = 0; j < 16; ++j) act[2 * 16 + j] = 0;
  const Bound int8 = derive_bound("int8-dynamic-per-channel", "float32");  // atol 0.28·max|ref|
  const auto r = compare_tensor("y", f32(act, {4, 16}), f32(ref, {4, 16}), int8);
  EXPECT_FALSE(r.passed);
  // The whole tensor alone would pass: every element inside the bound, cosine 0.99.
  EXPECT_EQ(r.fraction_over, 0);
  EXPECT_GT(r.cosine, 0.98);
  EXPECT_GE(r.cosine, int8.min_cosine);
  ASSERT_TRUE(r.slice_axis.has_value());
  EXPECT_EQ(*r.slice_axis, 0);
  ASSERT_EQ(r.slices.size(), 4u);
  ASSERT_TRUE(r.worst_slice.has_value());
  EXPECT_EQ(r.slices[*r.worst_slice].index, 2);
  EXPECT_FALSE(r.slices[2].passed);
  EXPECT_EQ(r.slices[2].cosine, 0);
  for (size_t k : {0u, 1u, 3u}) EXPECT_TRUE(r.slices[k].passed) << r.slices[k].failure;
  EXPECT_NE(r.failure.find("slice 2 of axis 0"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("cosine 0 <"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("constant output"), std::string::npos) << r.failure;

  // slice_axis −1 turns slicing off: then only the whole tensor is judged, and it passes.
  CompareOptions none;
  none.slice_axis = -1;
  const auto unsliced = compare_tensor("y", f32(act, {4, 16}), f32(ref, {4, 16}), int8,
                                       std::nullopt, none);
  EXPECT_TRUE(unsliced.passed) << unsliced.failure;
  EXPECT_FALSE(unsliced.slice_axis.has_value());
  EXPECT_TRUE(unsliced.slices.empty());
}

TEST(Slices, TheSameBatchHonestPasses) {
  const std::vector<float> ref = batch_of_four();
  std::vector<float> act = ref;
  // Int8-like error: up to 0.3 (1/10 of the bound's atol 2.8), alternating in sign.
  for (size_t i = 0; i < act.size(); ++i) act[i] += (i % 2 ? 0.3f : -0.2f);
  const auto r = compare_tensor("y", f32(act, {4, 16}), f32(ref, {4, 16}),
                                derive_bound("int8-dynamic-per-channel", "float32"));
  EXPECT_TRUE(r.passed) << r.failure;
  ASSERT_EQ(r.slices.size(), 4u);
  for (const SliceReport& s : r.slices) EXPECT_TRUE(s.passed) << s.index << ": " << s.failure;
  // The worst slice is the one with the lowest cosine: row 2, the smallest signal.
  EXPECT_EQ(r.slices[*r.worst_slice].index, 2);
}

TEST(Slices, TheDefaultRuleIsTheBatchAxisWhenItHasMoreThanOneItem) {
  EXPECT_EQ(resolve_slice_axis({4, 16}, std::nullopt), std::optional<int64_t>(0));
  EXPECT_EQ(resolve_slice_axis({1, 1000}, std::nullopt), std::nullopt);
  EXPECT_EQ(resolve_slice_axis({16}, std::nullopt), std::nullopt);
  EXPECT_EQ(resolve_slice_axis({4, 16}, -1), std::nullopt);
  EXPECT_EQ(resolve_slice_axis({1, 8, 64}, 1), std::optional<int64_t>(1));
  // An explicit axis slices along it: slice 1 of axis 1 in a [1, 3, 2] tensor is the middle pair.
  const auto r = compare_tensor("y", f64({1, 2, 0, 0, 5, 6}, {1, 3, 2}),
                                f64({1, 2, 3, 4, 5, 6}, {1, 3, 2}), bound(1, 0, 0.9),
                                std::nullopt, CompareOptions{1, std::nullopt});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.slices.size(), 3u);
  EXPECT_EQ(r.slices[*r.worst_slice].index, 1);
  EXPECT_NE(r.failure.find("slice 1 of axis 1"), std::string::npos) << r.failure;
  try {
    (void)compare_tensor("y", f64({1, 2}, {1, 2}), f64({1, 2}, {1, 2}), kLoose, std::nullopt,
                         CompareOptions{2, std::nullopt});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.cause().find("slice axis 2"), std::string::npos) << e.cause();
  }
}

TEST(Slices, ASliceAtTheNoiseLevelIsNotJudgedByDirection) {
  // Row 1's reference is ~1e-6 of the range: float32 noise of the bound's own size turns its
  // direction, and that is not drift (allclose still judges every element).
  std::vector<double> ref{10, -7, 3, 5, 1e-6, -2e-6, 1e-6, 3e-6};
  std::vector<double> act = ref;
  const Bound fp32 = derive_bound("fp32", "float32");  // atol 1.9e-5·10 = 1.9e-4
  for (size_t j = 4; j < 8; ++j) act[j] = -ref[j];     // below η = 4.75e-5: no sign flips either
  const auto r = compare_tensor("y", f64(act, {2, 4}), f64(ref, {2, 4}), fp32);
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_TRUE(r.slices[1].cosine_skipped);
  EXPECT_LT(r.slices[1].cosine, 0);
  EXPECT_EQ(r.sign_flips, 0u);
}

TEST(SignFlips, PlusThreeReturnedAsMinusThreeDriftsUnderALooseBound) {
  // OpenVINO's bfloat16 bound: 0.16·max|ref| = 0.16·67 = 10.72; +3 → −3 is an error of 6, inside.
  const std::vector<double> ref{67, -20, 3, 15, -41, 8, 30, -12};
  std::vector<double> act = ref;
  act[2] = -3;
  const Bound bf16 = derive_bound("fp32", "bfloat16");
  const auto r = compare_tensor("y", f64(act), f64(ref), bf16);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.fraction_over, 0);            // allclose passes it
  EXPECT_GE(r.cosine, bf16.min_cosine);     // so does cosine
  EXPECT_GE(r.sqnr_db, bf16.min_sqnr_db);   // and SQNR
  EXPECT_EQ(r.sign_flips, 1u);
  EXPECT_EQ(r.worst_sign_flip, (std::vector<int64_t>{2}));
  EXPECT_DOUBLE_EQ(r.sign_flip_reference, 3);
  EXPECT_DOUBLE_EQ(r.sign_flip_actual, -3);
  EXPECT_NEAR(r.noise_level, 0.16 * 67 / kBoundMargin, 1e-6);
  EXPECT_NE(r.failure.find("sign flip: 1 element"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("[2] actual -3 reference 3"), std::string::npos) << r.failure;
}

TEST(SignFlips, HonestNoiseUnderTheSameBoundPasses) {
  // bfloat16-sized noise (up to 2.0 = 0.03·max|ref|, the table's worst observation is 0.0388),
  // which flips the sign of references nearer zero than the noise level 2.68: not drift.
  const std::vector<double> ref{67, -20, 3, 15, -41, 0.5, 30, -1.2};
  const std::vector<double> act{66.2, -19.1, 4.1, 13.6, -42, -1.5, 31.3, 0.8};
  const auto r = compare_tensor("y", f64(act), f64(ref), derive_bound("fp32", "bfloat16"));
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.sign_flips, 0u);
}

TEST(SignFlips, UnderATargetOrACallersAtolTheNoiseLevelIsTheAtolItself) {
  // int8-static is a target (26 output steps), not M× a measurement: honest static int8 was
  // measured erring by up to 22.2 steps, so a logit of +0.69 returned as −0.12 (13 steps, seen on
  // efficientnet_lite0's golden set) is not drift.
  const std::vector<double> ref{6.5, 0.69, -2.0, 3.1, -0.5, 1.2};
  std::vector<double> act = ref;
  act[1] = -0.12;
  const auto target = compare_tensor("logits", f64(act, {1, 6}), f64(ref, {1, 6}),
                                     derive_bound("int8-static-per-channel", "float32"), 0.0611);
  EXPECT_TRUE(target.passed) << target.failure;
  EXPECT_EQ(target.noise_margin, 1);
  EXPECT_NEAR(target.noise_level, target.atol, 1e-12);
  EXPECT_EQ(target.sign_flips, 0u);
  // A caller's absolute atol: its margin is unknown, the noise level is the atol.
  const auto caller = compare_tensor("logits", f64(act, {1, 6}), f64(ref, {1, 6}),
                                     bound(1, 0, 0.9));
  EXPECT_EQ(caller.noise_margin, 1);
  EXPECT_EQ(caller.sign_flips, 0u);
  // The measured int8-dynamic rule (0.28·max|ref| = 1.82, η = 0.455) sees the same flip.
  const auto measured = compare_tensor("logits", f64(act, {1, 6}), f64(ref, {1, 6}),
                                       derive_bound("int8-dynamic-per-channel", "float32"));
  EXPECT_EQ(measured.noise_margin, kBoundMargin);
  EXPECT_FALSE(measured.passed);
  EXPECT_EQ(measured.sign_flips, 1u);
}

TEST(SignFlips, TheMarginIsTheTablesMargin) { EXPECT_EQ(kBoundMargin, kDefaultMargin); }

TEST(GateReportJson, CarriesTheNewRulesFields) {
  const auto r = compare_tensor("idx", ints(DType::kInt64, std::vector<int64_t>{1, 3}),
                                ints(DType::kInt64, std::vector<int64_t>{1, 2}), kLoose);
  const auto j = to_json(r);
  EXPECT_TRUE(j.at("exact").get<bool>());
  EXPECT_EQ(j.at("mismatches").get<size_t>(), 1u);
  EXPECT_EQ(j.at("first_mismatch"), nlohmann::json::array({1}));
  EXPECT_EQ(j.at("first_mismatch_actual").get<int64_t>(), 3);
  const auto f = to_json(compare_tensor("y", f32(batch_of_four(), {4, 16}),
                                        f32(batch_of_four(), {4, 16}), kLoose));
  EXPECT_EQ(f.at("slice_axis").get<int64_t>(), 0);
  EXPECT_EQ(f.at("slices").size(), 4u);
  for (const char* key : {"index", "cosine", "sqnr_db", "max_abs_error", "passed"})
    EXPECT_TRUE(f.at("slices")[0].contains(key)) << key;
  EXPECT_TRUE(f.at("worst_slice").is_number());
  EXPECT_EQ(f.at("sign_flips").get<size_t>(), 0u);
  EXPECT_FALSE(f.at("exact").get<bool>());
}

// A parity report built by hand (no bundle): an XNNPACK int8-dynamic column judged by `bound`.
ParityReport constructed_report(const Bound& bound) {
  ParityReport p;
  p.bundle = "constructed";
  p.backend = "xnnpack";
  p.recipe = "int8-dynamic-per-channel";
  p.precision = "float32";
  p.bound = bound;
  return p;
}

// Its case c0 (synthetic) with `status`; the outputs are the caller's.
CaseReport constructed_case(Status status) {
  CaseReport c;
  c.case_id = "c0";
  c.data = "synthetic";
  c.status = status;
  return c;
}

TEST(GateReportText, ParityTextShowsTheExactTheSliceAndTheSignFlipLines) {
  // The three rules as the parity report prints them (the outputs from compare_tensor above).
  const std::vector<float> ref = batch_of_four();
  std::vector<float> zeroed = ref;
  for (size_t j = 0; j < 16; ++j) zeroed[2 * 16 + j] = 0;
  const Bound int8 = derive_bound("int8-dynamic-per-channel", "float32");
  std::vector<double> flip_ref{67, -20, 3, 15, -41, 8, 30, -12}, flip_act = flip_ref;
  flip_act[5] = -8;  // int8-dynamic: atol 0.28·67 = 18.8, η = 4.7 < 8: a flip inside allclose
  ParityReport p = constructed_report(int8);
  CaseReport c = constructed_case(Status::kDrifted);
  c.outputs.push_back(compare_tensor("batch", f32(zeroed, {4, 16}), f32(ref, {4, 16}), int8));
  c.outputs.push_back(compare_tensor("flip", f64(flip_act), f64(flip_ref), int8));
  c.outputs.push_back(compare_tensor("idx", ints(DType::kInt64, std::vector<int64_t>{4, 8}),
                                     ints(DType::kInt64, std::vector<int64_t>{4, 7}), int8));
  p.cases.push_back(c);
  const std::string text = to_text(p);
  EXPECT_NE(text.find("slices along axis 0: 4, 1 failing; worst slice 2: cosine 0"),
            std::string::npos) << text;
  EXPECT_NE(text.find("sign flips: 1 above the noise level atol/4"), std::string::npos) << text;
  EXPECT_NE(text.find("bound: exact (integer output"), std::string::npos) << text;
  EXPECT_NE(text.find("first at [1]: actual 8, reference 7"), std::string::npos) << text;
  const auto j = to_json(p);
  const auto& outs = j.at("cases")[0].at("outputs");
  EXPECT_EQ(outs[0].at("worst_slice").get<int64_t>(), 2);
  EXPECT_EQ(outs[1].at("sign_flips").get<size_t>(), 1u);
  EXPECT_TRUE(outs[2].at("exact").get<bool>());
  // The keys every output had before these rules are still there.
  for (const auto& o : outs)
    for (const char* key : {"output", "passed", "failure", "numel", "worst_index", "max_abs_error",
                            "worst_ratio", "fraction_over", "cosine", "sqnr_db", "headroom", "atol",
                            "rtol", "reference_range", "range_error"})
      EXPECT_TRUE(o.contains(key)) << key;
}

TEST(BoundTable, EveryEntryCitesItsMeasurement) {
  const auto table = bound_table();
  ASSERT_FALSE(table.empty());
  for (const BoundTerm& t : table) {
    EXPECT_FALSE(t.source.empty()) << t.axis << " " << t.key;
    EXPECT_GE(t.atol, 0);
    EXPECT_GE(t.rtol, 0);
    EXPECT_LE(t.min_cosine, 1);
    EXPECT_GT(t.min_cosine, 0);
  }
}

// One term of the bound table, by axis ("recipe"/"precision") and key.
BoundTerm term(const std::string& axis, const std::string& key) {
  for (const BoundTerm& t : bound_table())
    if (t.axis == axis && t.key == key) return t;
  ADD_FAILURE() << "no " << axis << " " << key;
  return BoundTerm{};
}

TEST(BoundTable, RecipeAndPrecisionCompound) {
  const BoundTerm int8 = term("recipe", "int8-dynamic-per-channel");
  const BoundTerm fp32 = term("recipe", "fp32");
  const BoundTerm f32p = term("precision", "float32");
  const Bound q = derive_bound("int8-dynamic-per-channel", "float32");
  EXPECT_DOUBLE_EQ(q.atol, kAtolFloor);  // the table is scale-free: only the floor is absolute
  EXPECT_DOUBLE_EQ(q.atol_range, int8.atol_range + f32p.atol_range);
  EXPECT_DOUBLE_EQ(q.rtol, int8.rtol + f32p.rtol);
  EXPECT_DOUBLE_EQ(q.min_cosine, int8.min_cosine * f32p.min_cosine);
  EXPECT_FALSE(q.caller_supplied);
  EXPECT_NE(q.source.find("int8-dynamic-per-channel"), std::string::npos) << q.source;
  EXPECT_NE(q.source.find("float32"), std::string::npos) << q.source;
  const Bound f = derive_bound("fp32", "float32");
  EXPECT_DOUBLE_EQ(f.atol_range, fp32.atol_range + f32p.atol_range);
  EXPECT_DOUBLE_EQ(f.min_cosine, fp32.min_cosine * f32p.min_cosine);
  // Quantization can only loosen the bound.
  EXPECT_GT(q.atol_range, f.atol_range);
  EXPECT_LT(q.min_cosine, f.min_cosine);
}

TEST(BoundTable, UnknownPairIsRefusedWithARemedy) {
  for (auto [recipe, precision] : {std::pair<std::string, std::string>{"fp32", "float16"},
                                   {"int4-weight-only", "float32"}}) {
    try {
      derive_bound(recipe, precision);
      FAIL() << recipe << "/" << precision << " derived a bound it never measured";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCapabilityUnavailable);
      EXPECT_NE(e.cause().find(recipe), std::string::npos) << e.cause();
      EXPECT_NE(e.cause().find(precision), std::string::npos) << e.cause();
      EXPECT_NE(e.remedy().find("--atol/--rtol/--min-cosine"), std::string::npos) << e.remedy();
    }
  }
  // A compute unit nobody measured is unknown too, never ignored.
  EXPECT_THROW(derive_bound("fp32", "float32", std::string("ane")), Error);
}

// ---- the SQNR floor -----------------------------------------------------------------------------

TEST(SqnrFloor, AllZeroReferenceSkipsTheSqnrRuleOnly) {
  // No signal to measure noise against: SQNR is skipped, allclose still judges.
  Bound b = bound(0.05, 0, -1);
  b.min_sqnr_db = 40;
  auto r = compare_tensor("y", f64({0.01, -0.02, 0.0}), f64({0, 0, 0}), b);
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_TRUE(r.sqnr_skipped);
  EXPECT_EQ(r.sqnr_db, -kInf);  // measured (no signal, some noise), just not judged
  auto over = compare_tensor("y", f64({0.1, -0.02, 0.0}), f64({0, 0, 0}), b);
  EXPECT_FALSE(over.passed);
  EXPECT_NE(over.failure.find("allclose"), std::string::npos) << over.failure;
  EXPECT_EQ(over.failure.find("sqnr"), std::string::npos) << over.failure;
}

TEST(SqnrFloor, FloorsCompoundAsNoisePowersAdd) {
  // −10·log10(10^(−s1/10) + 10^(−s2/10)); a term with no floor (+inf) adds no noise.
  EXPECT_NEAR(combine_sqnr_floors({10, 10}), 10 - 10 * std::log10(2.0), 1e-12);
  EXPECT_NEAR(combine_sqnr_floors({20, 30}), -10 * std::log10(0.01 + 0.001), 1e-12);
  EXPECT_DOUBLE_EQ(combine_sqnr_floors({kInf, 20}), 20);
  EXPECT_EQ(combine_sqnr_floors({kInf, kInf}), kInf);

  const BoundTerm int8 = term("recipe", "int8-dynamic-per-channel");
  const BoundTerm fp32 = term("recipe", "fp32");
  const BoundTerm f32p = term("precision", "float32");
  // The floors come from the table (each cites its measurement); the rule is how they compound.
  ASSERT_TRUE(std::isfinite(int8.min_sqnr_db));
  ASSERT_TRUE(std::isfinite(f32p.min_sqnr_db));
  EXPECT_GT(f32p.min_sqnr_db, int8.min_sqnr_db);  // float32 adds far less noise than int8
  EXPECT_EQ(fp32.min_sqnr_db, kInf);  // no noise of its own

  const Bound q = derive_bound("int8-dynamic-per-channel", "float32");
  const double expected = -10 * std::log10(std::pow(10, -int8.min_sqnr_db / 10) +
                                           std::pow(10, -f32p.min_sqnr_db / 10));
  EXPECT_NEAR(q.min_sqnr_db, expected, 1e-12);
  EXPECT_LT(q.min_sqnr_db, int8.min_sqnr_db);          // both noises charged…
  EXPECT_GT(q.min_sqnr_db, int8.min_sqnr_db - 1e-3);   // …and float32's is negligible next to int8's
  EXPECT_DOUBLE_EQ(derive_bound("fp32", "float32").min_sqnr_db, f32p.min_sqnr_db);
  const auto j = to_json(q);
  EXPECT_NEAR(j.at("min_sqnr_db").get<double>(), expected, 1e-12);
  EXPECT_NE(describe_bound(q).find("SQNR ≥ "), std::string::npos) << describe_bound(q);
  // A bound with no floor says so.
  EXPECT_NE(describe_bound(kLoose).find("no SQNR floor"), std::string::npos);
  EXPECT_TRUE(j.contains("min_sqnr_db"));
  // No SQNR rule is a floor of −inf, written as every etproof JSON writes a non-finite number
  // (parity --json, matrix --json and the ledger alike): the string "-inf".
  EXPECT_EQ(to_json(kLoose).at("min_sqnr_db"), "-inf");
}

// The two questions get two words: over-budget (faithful; the recipe's cost broke the budget) is
// its own status — it fails a run, was judged, is no agreement — and parity's text says OVER
// BUDGET with the budget named, never DRIFT; one drifted case beside it makes the result DRIFT.
TEST(Status, OverBudgetIsItsOwnWordInTheVocabularyAndTheReport) {
  EXPECT_EQ(to_string(Status::kOverBudget), "over-budget");
  EXPECT_EQ(status_from_string("over-budget"), Status::kOverBudget);
  EXPECT_TRUE(fails_run(Status::kOverBudget));
  EXPECT_TRUE(is_judged(Status::kOverBudget));
  EXPECT_FALSE(is_agreement(Status::kOverBudget));
  const Bound fp32 = derive_bound("fp32", "float32");
  ParityReport p = constructed_report(fp32);
  CaseReport c = constructed_case(Status::kOverBudget);
  c.detail = "y: the recipe's cost is over the budget (SQNR 4.3 dB < 20 dB)";
  c.outputs.push_back(compare_tensor("y", f64({1, 2, 3}), f64({1, 2, 3}), fp32));
  p.cases.push_back(c);
  const std::string text = to_text(p);
  EXPECT_NE(text.find("case c0 (synthetic): OVER BUDGET"), std::string::npos) << text;
  EXPECT_NE(text.find("why: y: the recipe's cost is over the budget (SQNR 4.3 dB < 20 dB)"), std::string::npos) << text;
  EXPECT_NE(text.find("result: OVER BUDGET (1 of 1 cases within the bound, 1 of them over the budget)"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("DRIFT"), std::string::npos) << text;
  EXPECT_EQ(to_json(p).at("cases")[0].at("status"), "over-budget");
  CaseReport d = c;
  d.case_id = "c1";
  d.status = Status::kDrifted;
  p.cases.push_back(d);
  EXPECT_NE(to_text(p).find("result: DRIFT"), std::string::npos) << to_text(p);
}

}  // namespace
}  // namespace etproof
