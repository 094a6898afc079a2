// The gate's rules on a floating output (gate/rules.h), one function each; their arguments are
// docs/design.md §5's.
#include "gate/rules.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/common.h"

namespace etproof::detail {

namespace {

std::string fmt(double v, int precision = 6) { return format_number(v, precision); }

// ---- whole tensor ----------------------------------------------------------------------------------

// NaN matches only NaN and ±inf only the same inf.
std::optional<std::string> nonfinite_rule(const TensorFacts& f) {
  const size_t n = f.all.nonfinite_mismatch;
  if (!n) return std::nullopt;
  const size_t i = f.first_nonfinite;
  std::ostringstream os;
  os << "non-finite mismatch: " << n << " element(s) where NaN/inf in one "
     << "tensor is not the same NaN/inf in the other, first at "
     << index_to_string(unravel(i, f.shape)) << " (actual " << fmt(f.actual[i]) << ", reference "
     << fmt(f.reference[i]) << ")";
  return os.str();
}

// Constant output where the reference varies: a dead model (all zeros, a saturated layer) can sit
// inside a loose bound; it never passes.
std::optional<std::string> constant_rule(const TensorFacts& f) {
  if (!(f.reference.size() >= 2 && f.all.a_constant && !f.all.r_constant)) return std::nullopt;
  const double a0 = f.actual[0];
  return "constant output: every element is " + fmt(a0) + (a0 == 0 ? " (all zeros)" : "") +
         " where the reference varies";
}

// Elementwise: |a − r| ≤ atol + rtol·|r| (non-finite mismatches are the rule above's).
std::optional<std::string> allclose_rule(const TensorFacts& f) {
  if (!(f.over > f.all.nonfinite_mismatch)) return std::nullopt;
  const TensorReport& rep = f.rep;
  std::ostringstream os;
  os << "allclose: " << f.over << " of " << f.reference.size() << " elements ("
     << fixed_number(100 * rep.fraction_over, 2) << "%) exceed atol + rtol·|ref|; worst at "
     << index_to_string(rep.worst_index) << " actual " << fmt(rep.worst_actual) << " reference "
     << fmt(rep.worst_reference) << " (|a−r| " << fmt(f.worst_err) << " = " << fmt(rep.worst_ratio, 4)
     << "× the bound)";
  return os.str();
}

// Direction: the cosine over the finite pairs ≥ the bound's floor (skipped where the reference has
// no energy: TensorReport::cosine_skipped).
std::optional<std::string> cosine_rule(const TensorFacts& f) {
  if (f.rep.cosine_skipped || f.rep.cosine >= f.bound.min_cosine) return std::nullopt;
  return "cosine " + cosine_text(f.rep.cosine) + " < min " + cosine_text(f.bound.min_cosine);
}

// Error power: the SQNR over the finite pairs ≥ the bound's floor (skipped where the reference has
// no energy: TensorReport::sqnr_skipped).
std::optional<std::string> sqnr_rule(const TensorFacts& f) {
  if (f.rep.sqnr_skipped || f.finite_sqnr >= f.bound.min_sqnr_db) return std::nullopt;
  return "sqnr below bound: SQNR " + sqnr_text(f.finite_sqnr) + " dB < " + fmt(f.bound.min_sqnr_db, 4) + " dB";
}

// Opposite sign where |reference| exceeds the noise level: more than any honest error the table
// measured (counted in the pass: TensorReport::sign_flips).
std::optional<std::string> sign_flip_rule(const TensorFacts& f) {
  const TensorReport& rep = f.rep;
  if (!rep.sign_flips) return std::nullopt;
  std::ostringstream os;
  os << "sign flip: " << rep.sign_flips << " element(s) of opposite sign where |reference| > the noise level "
     << fmt(rep.noise_level, 4) << " (atol/" << fmt(rep.noise_margin) << "); largest at "
     << index_to_string(rep.worst_sign_flip) << " actual " << fmt(rep.sign_flip_actual)
     << " reference " << fmt(rep.sign_flip_reference);
  return os.str();
}

// Typical error: the median |a − r| over the finite pairs as a fraction of R = max|reference|
// (TensorReport::reference_range; an error over a zero range is +inf) ≤ the bound's
// median_range_error. allclose judges the worst element and SQNR the error's power; an error
// spread thinly over every element moves the median first. It applies only where a bound carries
// the threshold: no row of data/bounds.json sets one (none has been measured), a caller's
// --threshold median_range_error=F does.
std::optional<std::string> median_error_rule(const TensorFacts& f) {
  const auto it = f.bound.thresholds.find("median_range_error");
  if (it == f.bound.thresholds.end()) return std::nullopt;
  std::vector<double> err;
  err.reserve(f.actual.size());
  for (size_t i = 0; i < f.actual.size(); ++i)
    if (std::isfinite(f.actual[i]) && std::isfinite(f.reference[i])) err.push_back(std::fabs(f.actual[i] - f.reference[i]));
  if (err.empty()) return std::nullopt;
  const size_t mid = err.size() / 2;
  std::nth_element(err.begin(), err.begin() + long(mid), err.end());
  double median = err[mid];
  if (err.size() % 2 == 0) median = (median + *std::max_element(err.begin(), err.begin() + long(mid))) / 2;
  const double range = f.rep.reference_range;
  const double value = range > 0 ? median / range : (median > 0 ? std::numeric_limits<double>::infinity() : 0);
  f.measured["median_range_error"] = value;
  if (value <= it->second) return std::nullopt;
  return "median error: median |a−r| " + fmt(median, 4) + " = " + fmt(value, 4) + "·max|ref| > " + fmt(it->second, 4) +
         "·max|ref|";
}

// ---- one slice -------------------------------------------------------------------------------------

std::optional<std::string> slice_nonfinite_rule(const SliceFacts& f) {
  if (!f.sums.nonfinite_mismatch) return std::nullopt;
  return "non-finite mismatch on " + std::to_string(f.sums.nonfinite_mismatch) + " element(s)";
}

// Constant where the reference's spread is more than honest noise (2η) could erase.
std::optional<std::string> slice_constant_rule(const SliceFacts& f) {
  const SliceSums& s = f.sums;
  const double eta = (f.bound.atol + f.bound.rtol * s.r_abs_max) / f.margin;
  if (!(s.count >= 2 && s.a_constant && !s.r_constant && s.r_max - s.r_min > 2 * eta)) return std::nullopt;
  return "constant output: every element is " + fmt(s.a0) + (s.a0 == 0 ? " (all zeros)" : "") +
         " where the reference varies by " + fmt(s.r_max - s.r_min, 4);
}

std::optional<std::string> slice_allclose_rule(const SliceFacts& f) {
  const SliceSums& s = f.sums;
  if (!s.over) return std::nullopt;
  return "allclose: " + std::to_string(s.over) + " of " + std::to_string(s.count) +
         " elements exceed the bound, max |a−r| " + fmt(s.max_err, 4) + " = " + fmt(s.worst_ratio, 4) +
         "× the bound";
}

std::optional<std::string> slice_cosine_rule(const SliceFacts& f) {
  const SliceReport& sr = f.report;
  if (sr.cosine_skipped || sr.cosine >= sr.min_cosine) return std::nullopt;
  return "cosine " + cosine_text(sr.cosine) + " < min " + cosine_text(sr.min_cosine);
}

std::optional<std::string> slice_sqnr_rule(const SliceFacts& f) {
  const SliceReport& sr = f.report;
  if (sr.sqnr_skipped || sr.sqnr_db >= sr.min_sqnr_db || f.sums.nonfinite_mismatch) return std::nullopt;
  return "SQNR " + sqnr_text(sr.sqnr_db) + " dB < " + fmt(sr.min_sqnr_db, 4) + " dB";
}

}  // namespace

const std::vector<TensorRule>& tensor_rules() {
  static const std::vector<TensorRule> rules{
      {"non-finite", nonfinite_rule}, {"constant", constant_rule}, {"allclose", allclose_rule},
      {"cosine", cosine_rule},        {"sqnr", sqnr_rule},         {"sign-flip", sign_flip_rule},
      {"median-error", median_error_rule,
       RuleThreshold{"median_range_error", ThresholdCombine::kAdd, "≤",
                     "median |actual − reference| over the finite pairs, as a fraction of max|reference|"}}};
  return rules;
}

const std::vector<SliceRule>& slice_rules() {
  static const std::vector<SliceRule> rules{{"non-finite", slice_nonfinite_rule},
                                            {"constant", slice_constant_rule},
                                            {"allclose", slice_allclose_rule},
                                            {"cosine", slice_cosine_rule},
                                            {"sqnr", slice_sqnr_rule}};
  return rules;
}

}  // namespace etproof::detail

namespace etproof {

std::vector<RuleThreshold> rule_thresholds() {
  std::vector<RuleThreshold> out;
  for (const detail::TensorRule& r : detail::tensor_rules())
    if (r.threshold) out.push_back(*r.threshold);
  return out;
}

}  // namespace etproof

namespace etproof::detail {

double cosine_of(double dot, double na, double nr) {
  // Two all-zero tensors are identical (1); one zero-norm tensor against a non-zero one shares
  // no direction (0).
  if (na == 0 && nr == 0) return 1;
  if (na == 0 || nr == 0) return 0;
  return std::clamp(dot / (std::sqrt(na) * std::sqrt(nr)), -1.0, 1.0);
}

double sqnr_of(double sig, double noise) {
  if (noise == 0) return std::numeric_limits<double>::infinity();
  if (sig == 0) return -std::numeric_limits<double>::infinity();
  return 10 * std::log10(sig / noise);
}

std::vector<int64_t> unravel(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<size_t>(shape[d]);
    if (extent == 0) break;
    idx[d] = static_cast<int64_t>(flat % extent);
    flat /= extent;
  }
  return idx;
}

std::string index_to_string(const std::vector<int64_t>& idx) {
  return idx.empty() ? std::string("[]") : shape_to_string(idx);
}

}  // namespace etproof::detail

namespace etproof {

std::string_view rule_explanation(std::string_view rule) {
  if (rule == "non-finite") return "a NaN or infinity where the reference has a number, or the other way round";
  if (rule == "constant") return "an output that does not vary where its reference does (a dead model, a saturated layer)";
  if (rule == "allclose") return "an element further from its reference than atol + rtol·|ref|";
  if (rule == "cosine") return "the output points another way than its reference (a permutation, a sign, a wrong row)";
  if (rule == "sqnr")
    return "too much error power for the signal: a wrong scale, offset or noise that the elementwise and "
           "direction rules can miss";
  if (rule == "sign-flip")
    return "an element of the opposite sign where |reference| exceeds the noise level (atol + rtol·|ref|)/M: "
           "more than any honest error the bound table measured";
  if (rule == "median-error") return "an error spread over most elements: the median |a−r| over max|ref|";
  if (rule == "slice") return "one slice (a row of a batch, a channel) fails a rule the whole tensor passes";
  if (rule == "exact") return "an integer or bool output differs from its golden";
  return "";
}

std::string rules_legend(const std::vector<std::string>& rules) {
  std::string out;
  for (const std::string& r : rules)
    if (const std::string_view e = rule_explanation(r); !e.empty()) out += "  " + r + ": " + std::string(e) + "\n";
  return out.empty() ? out : "rules that failed:\n" + out;
}

}  // namespace etproof
