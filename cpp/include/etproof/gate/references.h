// etproof/gate/references.h — what a column is judged against, and how the bound follows from it
// (docs/design.md §5, "two questions per cell").
//
// A bundle exported by this etproof carries, beside its float32 goldens, references per golden
// case and output (manifest.h: GoldenCase::references): "float64" — the model run in float64, the
// truth — and the eager emulation of the column's recipe ("int8-dynamic-per-channel", …) or of a
// reduced precision ("float16", "bfloat16"). The replay asks two questions of each output:
//
//  1. Is the backend faithful to its recipe? (the verdict)
//     - float recipes (fp32) at precision p: the output against float64 truth, with the bound of
//       p's row (basis reference) WIDENED by M = 4 times the error against truth of a reference
//       computation in p — the float32 golden for float32, the precision's eager emulation for
//       float16/bfloat16 (widen_by_reference). A kernel closer to the truth than the golden is
//       therefore never called drifted, and anything the old golden-based bound passed still
//       passes (triangle inequalities, see widen_by_reference).
//     - int8-dynamic-per-channel, where the emulation follows XNNPACK's qd8 arithmetic
//       (ReferenceInfo::emulates "xnnpack-qd8": activations quantized per row / per pixel / per
//       image as the lowered program does): the output against that emulation, with the recipe's
//       row measured against it (data/bounds.json), not against the float32 golden.
//     - int8-static-per-channel (and an int8-dynamic bundle whose emulation is the PT2E graph as
//       it is): against the float32 golden — XNNPACK's static kernels are several output steps
//       from the PT2E emulation on deep models (measured, data/bounds.json); the emulation gives the
//       cost.
//     - a PT2E int8 recipe whose delegate computes its float parts in a reduced precision
//       (OpenVINO's int8 on a CPU with bfloat16 units) and whose bundle carries the emulation
//       rounded to it ("RECIPE-PRECISION", python/etproof/export/quantize.py rounded_emulation):
//       against the emulation, the backend's reference-basis row widened by M times the rounded
//       emulation's distance from it — a quantized model moves its outputs by whole steps under
//       a sub-step perturbation, and this measures by how much on each case. Where that widened
//       bound is no bound (no_bound_reason), or its cosine or SQNR floor is looser than the
//       golden-basis row's, the output falls back to that row against the golden
//       (AppliedBound::fell_back), never to no verdict and never to a looser bound.
//     - either int8 recipe whose program matched its emulation when the export half ran it on
//       every golden case (ReferenceInfo::program_at_export): against that emulation, with a
//       bound of a few output steps (matched_program_bound), not the recipe's wide row.
//     - integer and bool outputs: against the float32 golden, exactly (gate.h).
//     - a bundle without the references (exported before them), a caller-supplied bound, or a
//       pair the table has no reference row for: against the float32 golden with the golden-basis
//       row, as before references existed (the plan says why).
//  2. What did the recipe cost? The emulation against the float32 golden (quantization or
//     reduced-precision error): reported per output, judged only against the manifest's budget.
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"

namespace etproof {

// The precision a column computes in on THIS machine: the manifest's, except where the delegate
// decides at compile time from the CPU it runs on. OpenVINO's CPU plugin compiles an fp32 program
// with its INFERENCE_PRECISION_HINT, which defaults to bf16 on CPUs with native bfloat16 (AVX512_BF16,
// AMX) and f32 elsewhere (OpenVINO documentation, "CPU Device": "Inference precision hint");
// ExecuTorch's OpenVINO compile specs cannot change it. The export half records what the export
// machine's plugin reported; this asks this machine's plugin the same question, through the C API
// (ov_core_get_property "CPU" "INFERENCE_PRECISION_HINT") of the OpenVINO runtime the delegate
// loads (OPENVINO_LIB_PATH).
struct PrecisionHere {
  std::string precision;  // "float32" | "bfloat16" | "float16" | the manifest's
  std::string reason;     // why it differs from the manifest's; empty when it does not
};
[[nodiscard]] PrecisionHere precision_here(const Manifest& m);
// The same decision given the plugin's answer ("f32", "bf16", "f16"; nullopt: not asked or no
// answer — the manifest's precision stands). Pure: the tests drive it.
[[nodiscard]] PrecisionHere precision_given(const Manifest& m,
                                            const std::optional<std::string>& openvino_hint);
// A reference computation's distance from float64 truth, on one output (float64 arithmetic).
struct ReferenceError {
  double max_abs_error = 0;  // max |ref − truth|, in the output's units
  double cosine = 1;         // cosine(ref, truth)
  double sqnr_db = std::numeric_limits<double>::infinity();  // 10·log10(Σt² / Σ(ref−t)²)
};
// Shapes must match (Error{kShapeMismatch}); any numeric dtypes (compared as float64). Non-finite
// pairs that are the same NaN/inf count as equal; others make the error infinite.
[[nodiscard]] ReferenceError reference_error(const HostTensor& reference, const HostTensor& truth);

// The margin M on a reference's own error: a faithful implementation of the same precision, in
// another order of operations, errs by the same order as the reference computation; M = 4 is
// the table's margin on measured errors (gate.cpp), used here for the same reason.
inline constexpr double kReferenceMargin = 4;

// Widens a RESOLVED bound (resolve_bound; absolute) judged against a reference computation into
// one judged against truth, by M times that computation's own error against truth e:
//   atol       = atol_B + M·max|ref − t|                        (sup norm: |a−t| ≤ |a−ref| + |ref−t|)
//   min_cosine = cos(acos(cos_B) + M·acos(cos(ref, t)))         (angles on the sphere add)
//   min_sqnr   = −20·log10(10^(−S_B/20) + M·10^(−S_e/20))        (noise amplitudes ‖·‖₂ add)
//   rtol unchanged; no SQNR rule in B: none after. The result is absolute (not a rule).
[[nodiscard]] Bound widen_by_reference(const Bound& resolved, const ReferenceError& e,
                                       double margin = kReferenceMargin);

// The unit roundoff u = 2^-p of a precision's significand (round to nearest): float32 2^-24,
// float16 2^-11, bfloat16 2^-8, float64 2^-53; 0 for a name it does not know.
[[nodiscard]] double unit_roundoff(const std::string& precision);

// The cap on a reference computation's own error against truth (docs/design.md §5, "the
// widening's cap"): a computation in precision p with unit roundoff u_p that is the model
// evaluated at the same state as the truth errs, on an output whose truth spans R = max|t|, by
//   max|ref − t| ≤ kExplainableRoundoffs · u_p · R
// or its gap is not rounding: the references disagree (another model state, an edited file).
// The count is a stated limit, not a measurement: 2^14 unit roundoffs, i.e. 14 of float32's 24
// significand bits lost relative to the output's range (9.8e-4·R). The forward error of a
// computation of depth d whose intermediate values reach κ·R is at most about d·κ·u·R (Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1); the most the golden set, the
// test bundles, the verdict models and the demo show is offset_linear's cancellation of a +100
// offset, 1.37e-05 on a range of 0.90 = 256 u (seed2; 747 float outputs; measured 2026-12-04 on
// an AMD EPYC, torch 2.13.0, by .venv/bin/python scripts/reference_gaps.py build/test-bundles
// build/demo/bundles build/golden-set/bundles), 64 times inside the cap. For float16 (8·R) and
// bfloat16 (64·R) the cap admits any gap: there the bound's own limit (no_bound_reason) refuses.
inline constexpr double kExplainableRoundoffs = 16384;

// Why a widening reference cannot widen a bound: its gap to truth is more than its precision
// explains (the cap above), or not finite where truth is. Empty when it can. `reference` and
// `precision` name it in the message ("the float32 golden", "float32").
[[nodiscard]] std::string references_disagree(const std::string& reference,
                                              const std::string& precision,
                                              const ReferenceError& e, double truth_range);

// Why a resolved, absolute bound is no bound on an output whose reference spans R = max|ref|
// (> 0): atol ≥ R admits any output of the same range, a cosine floor ≤ 0 admits a vector at
// right angles, an SQNR floor ≤ 0 dB admits noise as strong as the signal. Empty when it is a
// bound. R = 0 (an all-zero reference): only the atol is judged, and no atol is refused.
[[nodiscard]] std::string no_bound_reason(const Bound& resolved, double reference_range);

// An int8 program matched its recipe's emulation at export (ReferenceInfo::program_at_export,
// measured by the export half on every golden case; python/etproof/export/references.py
// MATCH_STEPS, held equal by a test) when every float output of every case was within
// kMatchSteps of the output's quantization scale (up to the float32 rounding of the values it is
// measured on: 2^-10 step, STEP_ROUNDING) where the manifest records one (int8 static:
// the program and the emulation requantize the same integers; a value a rounding away from a
// tie lands one step over), else within kExplainableRoundoffs unit roundoffs of float32 of the
// emulation's range (int8 dynamic: float outputs from exact integer products and reordered
// float epilogues).
inline constexpr double kMatchSteps = 1;
// Such a column is judged against the emulation by kReferenceMargin × that criterion (the margin
// the table sets every measured term with): 4 output steps where the scale is recorded, else
// 4 × 2^14 × 2^-24 = 3.9e-3 of the emulation's range, rtol 0 — in place of the recipe's row
// (int8-static: 26 steps against the golden; int8-dynamic: 0.15 of the range against its qd8
// emulation). The cosine and SQNR floors stay the row's (`row`, the recipe's derived rule).
// A program that did not match keeps the row, and the plan says how far it departed.
[[nodiscard]] Bound matched_program_bound(const Bound& row, const ProgramAtExport& at_export);

// How one bundle's outputs are judged on this machine (question 1), and which emulation states
// the recipe's cost (question 2).
struct JudgePlan {
  std::string precision;     // the precision judged (precision_here)
  std::string precision_reason;
  BoundBasis basis = BoundBasis::kGolden;
  std::string against = "golden";  // "golden", "float64" (truth) or an emulation's name
  // float64 plans: "golden" or "float16"/"bfloat16"; a quantized recipe's emulation computed in
  // a reduced precision: its rounded emulation "RECIPE-PRECISION" (the emulation is then the
  // truth the bound is widened from); else empty
  std::string widen_by;
  // Plans widened by a rounded emulation: the golden-basis rule (the recipe's golden row) an
  // output is judged by where its widened bound is no bound (AppliedBound::fell_back); absent
  // elsewhere.
  std::optional<Bound> fallback;
  std::string cost_reference;  // the emulation compared with the golden (question 2), or empty
  // "float64" where the bundle carries truth and the judgement does not already hold the golden
  // to it (every plan but a float column widened by the golden): each float output's golden is
  // checked against truth (golden_disagrees), and a case whose golden disagrees beyond float32
  // rounding is inconclusive; empty otherwise (no truth, or use_truth false)
  std::string golden_truth;
  std::string why;           // one line: what is judged against what, or why the golden basis
  Bound rule;                // derive_bound(recipe, precision, compute unit, basis), when known
  std::optional<Error> no_rule;  // derive_bound's Error{kCapabilityUnavailable} when the table
                                 // has no row for the plan (the numbers are still measured)
};
// Never throws. `use_truth` false (measure-tolerances): every column is measured against its own
// reference computation (the float32 golden, or the recipe's or precision's emulation) without
// truth — what the reference-basis rows of the table measure — even where the table has no row.
[[nodiscard]] JudgePlan plan_judgement(const Manifest& m, const PrecisionHere& here,
                                       bool use_truth = true);

// The bound applied to one output of one case, as the replay applies it and `inspect` prints it:
// the plan's rule resolved on the reference the output is judged against, widened where the plan
// widens (against float64 truth, or against a recipe's emulation computed in a reduced precision)
// by M times the widening reference's own error against it, and checked.
struct AppliedBound {
  // What compare_tensor judges with: the plan's rule (resolved by compare_tensor on the reference)
  // against the golden or an emulation; against float64 truth, the rule resolved on truth and
  // widened (absolute). Inconclusive: the rule, for the numbers shown.
  Bound bound;
  Bound resolved;              // the same, resolved: the absolute numbers applied (reports)
  Bound noise_rule;            // the sign-flip noise level's rule (CompareOptions::noise_rule)
  std::string against;         // "golden", "float64" or an emulation's name
  std::string widened_by;      // the widening reference ("golden", "bfloat16", …); empty: none
  std::optional<ReferenceError> widening;  // that reference against truth
  double reference_range = 0;  // R = max|reference judged against|
  // Non-empty: the case cannot be judged (status inconclusive): the references disagree beyond
  // what their precision explains (references_disagree; the golden against truth where the plan
  // checks it, golden_disagrees), or the widened bound is no bound (no_bound_reason).
  std::string inconclusive;
  // Non-empty: judged against the golden by the plan's fallback rule instead, and why: the
  // recipe's emulation moves further under the precision's rounding than a bound can widen by,
  // or than leaves it stricter than the golden row (a quantized model that amplifies sub-step
  // perturbations: MobileNetV3-Small's int8).
  std::string fell_back;
};
// Why an output's float32 golden cannot be judged against or costed from: it is further from
// the float64 truth the bundle carries than float32 rounding explains (references_disagree, the
// same cap as a float column's widening), e.g. a golden edited together with its hash. Empty
// when it agrees, when the plan checks no golden (JudgePlan::golden_truth empty) or for an integer
// output. `reference_of` as for applied_bound; throws what it throws.
[[nodiscard]] std::string golden_disagrees(
    const JudgePlan& plan, const HostTensor& golden,
    const std::function<const HostTensor&(const std::string&)>& reference_of);

// `golden` is the output's float32 golden; `reference_of(name)` returns the case's reference
// tensor of that name for this output (float64 truth, an emulation), throwing as the replay does
// when it is missing. Throws Error{kShapeMismatch} when references and golden disagree in shape.
[[nodiscard]] AppliedBound applied_bound(
    const JudgePlan& plan, const Bound& rule, const HostTensor& golden,
    const std::function<const HostTensor&(const std::string&)>& reference_of,
    const std::optional<double>& quant_scale);

// A plan widened by a rounded emulation whose outputs were judged (`judged` float outputs, `fell`
// of them by the golden row: AppliedBound::fell_back): what the judgement line gains ("" when none
// fell back). Where every one did, the column's bound is the plan's fallback (the caller sets it,
// as the replay and `inspect` both do).
[[nodiscard]] std::string fallback_note(const JudgePlan& plan, size_t fell, size_t judged);

// Question 2 for one output: an emulation against the float32 golden.
struct RecipeCost {
  std::string reference;     // the emulation's name
  std::string output;        // the output it was measured on (set by the replay)
  double max_abs_error = 0;
  double cosine = 1;
  double sqnr_db = std::numeric_limits<double>::infinity();
  std::optional<bool> top1_agrees;  // classifier outputs (labels name it): argmax equal in every row
  size_t top1_rows = 0;      // classifier outputs: rows (samples; the last axis is the classes)
  size_t top1_agreed = 0;    //   and how many of them keep the golden's top-1 class
  // Without a budget (neither the manifest's nor the caller's): the default budget it breaks
  // (kDefaultCostSqnrDb), a flag shown where verdicts are read, never a failure; empty: within.
  std::string over_default;
  std::string over_budget;   // the per-output budget rules it breaks (SQNR, cosine); empty: within
                             // or none (top-1 agreement is judged over the bundle: Top1Agreement in replay.h)
  // The program's output against the same emulation (set by the replay): how far the delegate is
  // from its recipe's eager emulation — reported here; it is the verdict itself where the column
  // is judged against the emulation (int8-dynamic with the qd8 emulation).
  std::optional<ReferenceError> program_vs_emulation;
};
[[nodiscard]] RecipeCost recipe_cost(const std::string& reference_name, const HostTensor& emulation,
                                     const HostTensor& golden, bool classifier,
                                     const std::optional<Budget>& budget);

// The default budget for what a recipe or a machine's precision may cost before the matrix flags
// the column (its grid cell, its table row and the verdict line), when no budget is set: the
// emulation against the float32 golden at SQNR ≥ 20 dB, noise power at most 1 % of the signal's.
// A flag, not a verdict (the verdict is the backend's faithfulness; a user --budget or the
// manifest's replaces the default and judges). 20 dB is below every honest int8-dynamic column
// of the golden set (worst 21.7 dB, efficientnet_lite0 astronaut; data/bounds.json's
// int8-dynamic row) and above what the recipes that lost their signal cost there (int8-static
// 4.3 dB on efficientnet_lite0, MiniLM's broken embedding).
inline constexpr double kDefaultCostSqnrDb = 20;

// The budget a replay judges the recipe's cost by: the manifest's, with each key the caller set
// (`--budget KEY=VALUE`, ReplayOptions::budget) replacing the manifest's; nullopt when neither
// sets one.
[[nodiscard]] std::optional<Budget> effective_budget(const std::optional<Budget>& manifest,
                                                     const std::optional<Budget>& caller);
// "min_sqnr_db=20", "min_cosine=0.99" or "top1_agreement=0.9" (the manifest's keys) into
// `budget`. Throws Error{kInvalidArgument} naming the key or value and the accepted forms.
void parse_budget_argument(const std::string& key_value, Budget& budget);
// "SQNR ≥ 20 dB, cosine ≥ 0.99, top-1 agreement ≥ 0.9" (the keys set).
[[nodiscard]] std::string describe_budget(const Budget& b);

// A copy converted to float64 (element order kept).
[[nodiscard]] HostTensor as_float64(const HostTensor& t);

}  // namespace etproof
