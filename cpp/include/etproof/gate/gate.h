// etproof/gate/gate.h — the gate: measure drift against a derived bound (docs/design.md §5). Replaying a
// bundle's goldens through it is etproof/replay.h.
//
// Per element: |actual − reference| ≤ atol + rtol·|reference| (numpy.allclose's form).
// Per tensor:   cosine(actual, reference) ≥ min_cosine, and
//               SQNR = 10·log10(Σr² / Σ(a−r)²) ≥ min_sqnr_db (both skipped when the reference is
//               all zeros — no direction, no signal; the elementwise and constant-output rules
//               still apply). Cosine cannot see scale (a·0.5 has cosine 1); SQNR can.
// The bound is a scale-free RULE when derived (atol as a fraction of the output's max|reference|
// and, for int8-static outputs whose scale the manifest records, in quantization steps), resolved
// per output tensor into absolute numbers; a caller-supplied Bound is absolute. Reports show both
// the rule and the resolved atol.
// NaN matches only NaN (at the same index); ±inf only the same inf. An output that is constant
// (all elements equal, all zeros included) where the reference is not never passes.
// Three more rules (docs/design.md §5; CompareOptions below):
//  - Integer and bool outputs are compared EXACTLY (|a − r| ≤ integer_atol when one is declared),
//    never by the float bound; the report counts the mismatches and names the first.
//  - Slices: per output an optional slice axis (default: axis 0 when rank ≥ 2 and shape[0] > 1).
//    Cosine, SQNR, the error/bound ratio and the constant-output rule are also judged per slice,
//    and a failing slice fails the tensor; the worst slice is named.
//  - Sign flips: an element whose sign differs from its reference's while |reference| is above
//    the bound's noise level (kBoundMargin below) is drift, whatever the recipe.
// Drift is a measurement, returned in a report, never thrown.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/core/npy.h"

namespace etproof {

// A bound. Two kinds:
//  - absolute (a caller-supplied Bound, and what resolve_bound returns): atol in the output's
//    units, used as it is;
//  - a derived RULE, whose atol is scale-free and is resolved per output tensor (resolve_bound):
//      atol = atol (the absolute floor, kAtolFloor for a derived bound)
//           + atol_range · R                               R = max|reference| of that output
//           + (s ? atol_qsteps · s : atol_range_unquantized · R)
//                                                          s = the output's quantization scale,
//                                                              where the manifest records one
//    so the same rule fits logits (±10), probabilities (0..1), unit-norm embeddings and ±300
//    activations alike. rtol, min_cosine and min_sqnr_db are scale-free already.
struct Bound {
  double atol = 0;        // absolute term, in the output's units (derived: the floor only)
  double rtol = 0;        // relative term, fraction of |reference|
  double min_cosine = 1;  // minimum cosine similarity per tensor
  // Minimum SQNR per tensor, in dB. −inf (the default): no SQNR rule.
  double min_sqnr_db = -std::numeric_limits<double>::infinity();
  std::string source;     // where the numbers come from (measurement, with the command)
  bool caller_supplied = false;
  // Scale-free atol terms of a derived rule (0 in an absolute bound):
  double atol_range = 0;              // × max|reference|, always
  double atol_qsteps = 0;             // × the output's quantization scale, where recorded
  double atol_range_unquantized = 0;  // × max|reference|, in place of atol_qsteps where no
                                      // scale is recorded (the same quantization term in range
                                      // form)
  // A derived bound with a target term (a term the table sets as what a recipe should reach,
  // not a measurement of it, e.g. int8-static-per-channel): measure-tolerances checks such a
  // bound without its margin.
  bool target = false;
  // The thresholds of the rules that declare their own (gate/rules.cpp: a rule row's
  // `threshold`), by the threshold's name: from the bound table's rows (their `thresholds`,
  // combined as the rule declares) or a caller's --threshold NAME=VALUE. Absent: that rule does
  // not apply. Scale-free as the table gives them; resolve_bound keeps them as they are.
  std::map<std::string, double> thresholds;
  bool scale_relative() const {
    return atol_range != 0 || atol_qsteps != 0 || atol_range_unquantized != 0;
  }
};

// The absolute floor every derived rule's atol carries, so an all-zero reference (R = 0, where
// every range term vanishes) still admits float32 round-off on values that ought to be zero
// instead of demanding bit-exact zeros: 1e-9 is below one float32 ulp of any value ≥ 0.01
// (ulp(0.01) ≈ 9.3e-10) and negligible next to the range terms of any output with R ≥ 1e-3.
inline constexpr double kAtolFloor = 1e-9;

// The margin M the measured table entries were set with: atol_range = M × the worst observed
// error (4× in amplitude; tolerances.h's kDefaultMargin is the same number, and a test holds them
// equal). So atol / M is the worst error an honest backend showed when the table was measured —
// the bound's NOISE LEVEL η, below which the gate does not read meaning into an element's sign or
// a slice's shape (docs/design.md §5):
//   η_i = (atol + rtol·|r_i|) / M       (the resolved bound of element i, over M)
// Only a derived rule whose terms are all measurements carries that margin. For a target term
// (int8-static: honest errors measured up to 22.2 of its 26 steps) or a caller's absolute atol
// (whose margin nobody measured) the noise level is the bound itself (M taken as 1): the rules
// below then judge nothing allclose would not already see.
// Used by the sign-flip rule, the per-slice constant-output rule and the per-slice cosine/SQNR
// floors (TensorReport::noise_level, noise_margin).
inline constexpr double kBoundMargin = 4.0;

// The reference range R of a tensor: max |x| over its finite elements (0 when none).
double reference_range(const HostTensor& reference);

// Resolves a rule into the absolute bound used on one output: atol as above (the floor, the
// range terms and the quantization-step term), rtol/cosine/SQNR unchanged, scale-free fields 0.
// An absolute bound (scale_relative() false, e.g. caller-supplied) is returned unchanged.
Bound resolve_bound(const Bound& rule, double reference_range,
                    const std::optional<double>& quant_scale = std::nullopt);

// The bound a manifest's recipe and precision (and compute unit, when recorded) imply, from the
// one table, data/bounds.json (embedded at configure time; bound_table() below). Recipe and
// precision compound: the atol terms (range, quantization steps) and rtol add, the cosine floors
// multiply, and the SQNR floors combine as noise powers add:
//   floor = −10·log10(Σ 10^(−floor_i/10))   (a term with no floor, +inf, contributes 0; when no
//                                             term has a floor the bound has no SQNR rule)
// A term with a quantization-step form contributes atol_qsteps and, as atol_range_unquantized,
// its range form (used only where no scale is recorded); a term without one contributes to
// atol_range. The result is a rule (scale_relative()), resolved per output by the gate.
// Throws Error{kCapabilityUnavailable} when the table has no entry, naming the pair and the
// remedy (pass a bound explicitly). `recipe` may name its backend, "BACKEND/RECIPE" (the replay
// passes the manifest's so): a row keyed so is taken before the recipe's own row, since a
// backend's own quantizer is measured on that backend (openvino/int8-static-per-channel).
//
// `basis` says what the bound is measured against (docs/design.md §5, "two questions"):
//   kGolden     the float32 golden outputs: the bound of a bundle that carries no references
//               (exported before the export half captured them);
//   kReference  the reference computation of the column's own recipe and precision — the
//               float32 golden for fp32/float32, the recipe's eager emulation for the int8
//               recipes, the precision's eager emulation for float16/bfloat16. The replay judges
//               float precisions against float64 truth with this bound widened by that
//               reference's own error (references.h), and int8 recipes against their emulation.
// Rows that hold for both carry both bases (recipe fp32, precision float32).
enum class BoundBasis { kGolden, kReference };
std::string_view to_string(BoundBasis b);  // "golden" | "reference"
Bound derive_bound(const std::string& recipe, const std::string& precision,
                   const std::optional<std::string>& compute_unit = std::nullopt,
                   BoundBasis basis = BoundBasis::kGolden);

// Combines SQNR floors (dB) as derive_bound does: noise powers add. +inf terms contribute 0;
// all +inf (or none) gives +inf.
double combine_sqnr_floors(const std::vector<double>& floors_db);

// A caller's bound, field by field (the CLI's --atol/--rtol/--min-cosine/--min-sqnr, and
// --threshold NAME=VALUE for a rule's own threshold). Fields left unset come from the derived bound.
struct BoundOverride {
  std::optional<double> atol, rtol, min_cosine, min_sqnr_db;
  std::map<std::string, double> thresholds;  // by name (rule_thresholds() lists the names)
  bool empty() const { return !atol && !rtol && !min_cosine && !min_sqnr_db && thresholds.empty(); }
};

// Refuses a caller's bound no output could be judged by, with Error{kInvalidArgument} naming the
// flag: NaN anywhere; a negative --atol or --rtol (a tolerance is a distance); a --min-cosine
// outside [-1, 1] (a cosine's range: -1 turns the rule off, above 1 nothing could pass); a
// --threshold whose name no rule declares (the remedy lists them). --min-sqnr may be any other
// number (-inf turns the rule off). override_bound checks it first.
void check_bound_override(const BoundOverride& o);

// The caller's bound as the flags that give it ("--atol 0.001 --min-cosine 0.99 --threshold
// NAME=V"), in that order; "" when empty. Reports print it as the matrix's caller bound.
std::string describe_override(const BoundOverride& o);

// Parses one --threshold argument "NAME=VALUE" into `o`. Throws Error{kInvalidArgument} naming
// the argument where it has no '=', the value is not a number, or no rule declares the name.
void parse_threshold_argument(const std::string& arg, BoundOverride& o);

// How the terms of a rule's own threshold combine across the rows of a recipe, a precision and a
// compute unit (derive_bound): kAdd sums them (a tolerance, like atol); kMultiply multiplies
// them (a floor in (0, 1], like the cosine's); kNoisePower combines floors in dB as noise powers
// add, as the SQNR floors do (combine_sqnr_floors).
enum class ThresholdCombine { kAdd, kMultiply, kNoisePower };

// A threshold a rule declares (gate/rules.cpp, beside the rule): its name (the key in
// data/bounds.json rows' `thresholds`, in Bound::thresholds and after --threshold), how its terms
// combine, the relation the measured number must keep to it ("≤" or "≥"), and what it means.
struct RuleThreshold {
  std::string_view name;
  ThresholdCombine combine = ThresholdCombine::kAdd;
  std::string_view relation;  // "≤": the measurement may not exceed it; "≥": may not fall below
  std::string_view meaning;   // one line, with its unit
};
// Every threshold the rules declare, in the rules' order.
std::vector<RuleThreshold> rule_thresholds();

// Combines one threshold's terms as `how` says; an empty list is an error of the caller's.
double combine_threshold(ThresholdCombine how, const std::vector<double>& terms);

// The rule thresholds of a bound as text (", NAME ≤ V" each, in name order; "" when none) and as
// JSON ({NAME: V}); reports append them to their bound line and their bound object.
std::string describe_thresholds(const Bound& b);
[[nodiscard]] nlohmann::json thresholds_json(const Bound& b);

// The bound a caller's override gives for this recipe/precision: the derived bound with the given
// fields replaced, caller_supplied = true, and a source naming what was given. A given --atol
// replaces the whole derived atol rule (range and quantization-step terms included): the caller's
// atol is absolute. Where the table has no entry, atol, rtol and min_cosine must all be given
// (min_sqnr_db unset: no SQNR rule); otherwise throws Error{kInvalidArgument} naming the missing
// fields.
Bound override_bound(const BoundOverride& o, const std::string& recipe,
                     const std::string& precision,
                     const std::optional<std::string>& compute_unit = std::nullopt,
                     BoundBasis basis = BoundBasis::kGolden);

// One row of that table (data/bounds.json; schema/bounds.schema.json says what each field
// means), read-only: a term along one axis ("recipe", "precision", "compute_unit") with the
// measurement it came from. derive_bound sums these.
struct BoundTerm {
  std::string axis;
  std::string key;
  double atol = 0;         // absolute part: 0 in every row (the table is scale-free)
  double rtol = 0;
  double min_cosine = 1;
  double min_sqnr_db = std::numeric_limits<double>::infinity();  // +inf: adds no noise
  std::string source;
  double atol_range = 0;   // fraction of max|reference|
  double atol_qsteps = 0;  // quantization steps of the output, where recorded; 0: no such form
  bool target = false;     // a target, not a measurement (checked without margin)
  // The bases the row holds for (derive_bound's `basis`): "golden", "reference", or both.
  std::vector<std::string> bases;
  bool derived = false;    // from a numerical argument (unit roundoff), not a measurement:
                           // measure-tolerances shows observations beside it but does not
                           // propose a replacement
  // Terms of the rules' own thresholds, by name (a name no rule declares is refused on reading).
  std::map<std::string, double> thresholds;
};
// The rows as embedded, in the file's order. Throws as parse_bound_table, naming data/bounds.json,
// where the embedded file is bad (configure does not check it): so does every derive_bound.
std::vector<BoundTerm> bound_table();

// The rows of a bound-table document (the embedded one, or a file a test reads), in order, each
// row's bases in the order golden, reference; min_sqnr_db null in the document is +inf here.
// Throws Error{kManifestInvalid} "ORIGIN: FIELD: problem; …" listing every problem against
// schema/bounds.schema.json at once (FIELD as rows[3].min_cosine), or naming a row that repeats an
// earlier row's axis and key on a basis; also for a document nested more than 64 deep.
std::vector<BoundTerm> parse_bound_table(const nlohmann::json& doc, const std::string& origin);

// derive_bound over the rows of another table (e.g. one parse_bound_table read), with the same
// rules and errors as over the embedded one.
Bound derive_bound(const std::vector<BoundTerm>& table, const std::string& recipe,
                   const std::string& precision,
                   const std::optional<std::string>& compute_unit = std::nullopt,
                   BoundBasis basis = BoundBasis::kGolden);

// data/bounds.json's text, byte for byte as it was at configure time.
const char* embedded_bound_table_json();

// How one output is compared, beyond its bound. Read from the manifest by the caller
// (outputs[i].slice_axis, outputs[i].integer_atol); the defaults are the rules' defaults.
struct CompareOptions {
  // The axis whose slices are judged one by one (cosine, SQNR, error/bound ratio and the
  // constant-output rule per slice, with the output's bound). nullopt: the default rule — axis 0
  // when rank ≥ 2 and shape[0] > 1 (the batch axis), else none; −1: none; otherwise 0 ≤ axis <
  // rank (else compare_tensor throws Error{kInvalidArgument}). Integer outputs are not sliced:
  // the exact rule names the first differing element already.
  std::optional<int64_t> slice_axis;
  // Integer and bool outputs only (float outputs ignore it): the largest |a − r| accepted, in the
  // output's units. nullopt: exact (0). Must be finite and ≥ 0 (else Error{kInvalidArgument}).
  std::optional<double> integer_atol;
  // The rule whose noise level η the sign-flip rule uses (resolved on the reference like the
  // bound; its margin kBoundMargin where it is a measured rule). nullopt: the bound's own. The
  // replay sets it where the bound was widened against truth (references.h: applied_bound), so
  // the widening never blinds the sign-flip rule.
  std::optional<Bound> noise_rule;
};

// One slice's measurements (TensorReport::slices): the slice `index` along the report's
// slice_axis, judged with the output's bound (same resolved atol/rtol), its cosine and SQNR floors
// relaxed only where the slice's own signal is near the noise level (docs/design.md §5).
struct SliceReport {
  int64_t index = 0;
  bool passed = true;
  std::string failure;          // empty when passed; the slice rules that failed
  double cosine = 1;
  double sqnr_db = 0;           // +inf when identical, −inf where any non-finite pair mismatches
  double max_abs_error = 0;
  double worst_ratio = 0;       // max |a−r| / (atol + rtol|r|) over the slice
  double min_cosine = 1;        // the cosine floor this slice was held to
  double min_sqnr_db = 0;       // the SQNR floor this slice was held to (−inf: none)
  bool cosine_skipped = false;  // the slice's signal is at the noise level (or zero): not judged
  bool sqnr_skipped = false;    // idem for SQNR
};

struct TensorReport {
  std::string output;
  bool passed = false;
  std::string failure;                 // empty when passed; else the rule that failed
  // The names of the rules that failed, in the rules' order (rules.h: "non-finite", "constant",
  // "allclose", "cosine", "sqnr", "sign-flip", "median-error"; "slice" for the slice rules; "exact"
  // for an integer output): what `etproof rejudge` needs to re-judge recorded evidence.
  std::vector<std::string> failed_rules;
  size_t numel = 0;
  std::vector<int64_t> worst_index;    // multi-index of the element with the largest bound ratio
  double worst_actual = 0;
  double worst_reference = 0;
  double max_abs_error = 0;
  double worst_ratio = 0;              // max |a−r| / (atol + rtol|r|); ≤ 1 within the bound
  double fraction_over = 0;            // fraction of elements outside the bound, 0..1
  double cosine = 0;
  double sqnr_db = 0;                  // 10·log10(Σr² / Σ(a−r)²); +inf when identical
  bool sqnr_skipped = false;           // reference all zeros (or an exact output): the SQNR
                                       // rule did not apply
  bool cosine_skipped = false;         // reference all zeros: no direction, the cosine rule did
                                       // not apply (the elementwise rule and its floor judge);
                                       // true for an exact output too
  double headroom = 0;                 // 1 − worst_ratio (negative when over)
  double min_cosine = -1;              // the whole tensor's cosine floor as judged (the bound's,
                                       // or as widened: references.h); exact outputs: −1
  double min_sqnr_db = -std::numeric_limits<double>::infinity();  // its SQNR floor (−inf: none)
  // The bound as resolved for this output, and the scale-free terms of the error:
  double atol = 0;                     // resolved absolute atol used on this output
  double rtol = 0;
  double reference_range = 0;          // R = max|reference| (finite elements)
  std::optional<double> quant_scale;   // the output's recorded quantization scale, if any
  double range_error = 0;              // max_abs_error / R (inf when R = 0 and error > 0)
  std::optional<double> qstep_error;   // max_abs_error / scale, where a scale is recorded
  // The exact rule (integer and bool dtypes): cosine and SQNR are measured but not judged
  // (cosine_skipped and sqnr_skipped are true); atol is integer_atol (0 when exact), rtol 0.
  bool exact = false;
  std::optional<double> integer_atol;  // the tolerance declared for an integer output, if any
  size_t mismatches = 0;               // exact rule: elements with |a − r| > integer_atol
  std::vector<int64_t> first_mismatch; // multi-index of the first (C order); empty when none
  int64_t first_mismatch_actual = 0;
  int64_t first_mismatch_reference = 0;
  // The noise level η = atol / noise_margin (resolved atol of this output; each element adds its
  // rtol·|r|/noise_margin): the sign-flip threshold and the per-slice noise floor. noise_margin
  // is kBoundMargin for a measured derived rule, 1 for a target or a caller's absolute atol.
  // Both 0 for exact outputs.
  double noise_level = 0;
  double noise_margin = 0;
  // Sign flips: elements with a·r < 0 and |r| > η_i. The one with the largest |reference| named.
  size_t sign_flips = 0;
  std::vector<int64_t> worst_sign_flip;  // empty when none
  double sign_flip_actual = 0;
  double sign_flip_reference = 0;
  // Slices: the axis judged (nullopt: not sliced), one summary per slice, and the worst slice
  // (a failing one with the lowest cosine, else the lowest cosine) as an index into `slices`.
  std::optional<int64_t> slice_axis;
  std::vector<SliceReport> slices;
  std::optional<size_t> worst_slice;
  // The rules with thresholds of their own (RuleThreshold): each applied threshold (as in the
  // bound) and the number its rule measured, by the threshold's name; empty when none applied.
  std::map<std::string, double> thresholds;
  std::map<std::string, double> measured;
  // Set by the replay (etproof/references.h), not by compare_tensor:
  std::string against = "golden";      // what the output was compared with: "golden" (the
                                       // float32 golden), "float64" (truth) or an emulation
  std::string widened_by;              // the reference whose own error against truth (or against
                                       // the emulation judged against) widened the bound
                                       // ("golden", "bfloat16", "int8-static-per-channel-bfloat16",
                                       // …); empty: none
  std::optional<double> widening_error;  // that reference's max |ref − truth| (or |ref − emulation|)
  // Non-empty: this output could not be judged (references.h: applied_bound): the references
  // disagree beyond what their precision explains, or the widened bound is no bound. passed is
  // false and failure says the same; the numbers are against the unwidened rule.
  std::string inconclusive;
  // Non-empty: the plan widened by a rounded emulation left no bound on this output, so it was
  // judged against the golden by the recipe's golden row instead, and why (AppliedBound::fell_back).
  std::string fell_back;
};

// Compares one output. Shapes and dtypes must match (Error{kShapeMismatch}/{kDtypeMismatch}).
// A scale-relative `bound` (a derived rule) is first resolved for this output (resolve_bound,
// with R from `reference` and `quant_scale`); an absolute bound is used as it is. Integer and
// bool dtypes take the exact rule instead (the bound is not used). `options`: slice axis and
// integer tolerance; an invalid one throws Error{kInvalidArgument} naming it.
[[nodiscard]] TensorReport compare_tensor(const std::string& output, const HostTensor& actual,
                            const HostTensor& reference, const Bound& bound,
                            const std::optional<double>& quant_scale = std::nullopt,
                            const CompareOptions& options = {});

// True for the dtypes the exact rule judges: int8, uint8, int16, int32, int64, bool.
bool is_integer_dtype(DType d);

// The slice axis compare_tensor judges for this shape and option (nullopt: none): the default
// rule, −1, or the given axis (validated as compare_tensor does).
std::optional<int64_t> resolve_slice_axis(const std::vector<int64_t>& shape,
                                          const std::optional<int64_t>& slice_axis,
                                          const std::string& output = "");

// The quantization scale the manifest records for an output (outputs[i].quantization.scale): the
// first method's output of that name, else the first other method's that has one (the replay
// engine reads the scale from the spec of the case's own method).
std::optional<double> output_scale(const Manifest& m, const std::string& output);

// "atol A + rtol R·|ref|, cosine ≥ C, SQNR ≥ S dB" (or "no SQNR floor"); a rule spells its
// atol as "atol 1e-09 + F·max|ref| + (Q quant steps, or G·max|ref| where no scale is recorded)".
std::string describe_bound(const Bound& b);
[[nodiscard]] nlohmann::json to_json(const Bound& b);
// One output's report as JSON: every TensorReport field (non-finite numbers as json_number writes
// them), with `slices` [{index, passed, failure, cosine, sqnr_db, max_abs_error, worst_ratio,
// min_cosine, min_sqnr_db, cosine_skipped, sqnr_skipped}], `worst_slice` (a slice index or null),
// `slice_axis` (null: not sliced), `first_mismatch` and `worst_sign_flip` (null when none), and
// `thresholds` and `measured` ({NAME: number}) only where a rule with its own threshold applied,
// and `passing_bound` (to_json(passing_bound(t)), below).
[[nodiscard]] nlohmann::json to_json(const TensorReport& t);

// What a rule catches, in one line, by its name (TensorReport::failed_rules): a report prints it
// once, in its legend, not on every failing output; "" for a name it does not know.
[[nodiscard]] std::string_view rule_explanation(std::string_view rule);
// "rules that failed:\n  NAME: EXPLANATION\n…" for each of `rules` (in order, each once as given);
// "" when none has an explanation.
[[nodiscard]] std::string rules_legend(const std::vector<std::string>& rules);

// The minimum passing bound of one output (what Polygraphy prints as the smallest tolerance that
// would have passed): for each rule alone, the loosest threshold under which this output, as
// measured, passes it — so a reader can tell a bug from a bound that does not fit.
//   atol: with rtol 0, the smallest absolute tolerance for the elementwise rule, max |a − r|; raised,
//     where an element changed sign above the noise level, to noise_margin × that element's |r|
//     (the sign-flip rule's level η = atol / noise_margin must reach it). atol_of_range: atol / max|ref|.
//   min_cosine, min_sqnr_db: the lowest cosine and SQNR measured, the whole tensor's and every judged
//     slice's; nullopt where the rule does not apply (an exact output, a zero reference).
//   thresholds: each rule with a threshold of its own that applied (TensorReport::measured): the
//     value it measured, which is the threshold it would pass at.
// Every rule is taken alone: a bound built from all of them passes this output.
struct PassingBound {
  double atol = 0;
  double atol_of_range = 0;  // +inf where max|ref| is 0 and the error is not
  std::optional<double> min_cosine;
  std::optional<double> min_sqnr_db;
  std::map<std::string, double> thresholds;
};
[[nodiscard]] PassingBound passing_bound(const TensorReport& t);
// The passing bound of several outputs or cases together: the largest atol and atol_of_range, the
// lowest cosine and SQNR (where either applies), and each rule threshold at its worst (the largest
// for a "≤" threshold, the lowest for a "≥" one: RuleThreshold::relation).
void add_passing(PassingBound& into, const PassingBound& p);
// {"atol", "atol_of_range", "min_cosine", "min_sqnr_db" (null where the rule does not apply;
// non-finite numbers as json_number writes them), "thresholds" ({NAME: number}, only where any applied)}.
[[nodiscard]] nlohmann::json to_json(const PassingBound& p);
// "atol 5.4e-07 (7.9e-08 of the range), cosine 1-5.1e-15, SQNR 139.7 dB" (what applies).
[[nodiscard]] std::string passing_bound_text(const PassingBound& p);

}  // namespace etproof
