// The gate (docs/design.md §5): per-element allclose, per-tensor cosine and SQNR, non-finite
// rules, the constant-output rule, exact integers, slices and sign flips. The bound table is
// data/bounds.json, read and combined by bounds.cpp.
#include "etproof/gate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

#include "etproof/core/error.h"
#include "core/common.h"
#include "gate/rules.h"

namespace etproof {

namespace {

std::string fmt(double v, int precision = 6) {
  return detail::format_number(v, precision);
}

using detail::sqnr_text;

using detail::cosine_text;
using detail::cosine_of;
using detail::index_to_string;
using detail::SliceSums;
using detail::sqnr_of;
using detail::unravel;

}  // namespace

bool is_integer_dtype(DType d) {
  switch (d) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> resolve_slice_axis(const std::vector<int64_t>& shape,
                                          const std::optional<int64_t>& slice_axis,
                                          const std::string& output) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (!slice_axis) {  // the default rule: the batch axis, when there is more than one item
    if (rank >= 2 && shape[0] > 1) return 0;
    return std::nullopt;
  }
  if (*slice_axis == -1) return std::nullopt;
  if (*slice_axis < 0 || *slice_axis >= rank)
    throw Error(ErrorKind::kInvalidArgument,
                "output \"" + output + "\": slice axis " + std::to_string(*slice_axis) +
                    " is outside its shape " + shape_to_string(shape) + " (rank " +
                    std::to_string(rank) + ")",
                "declare outputs[i].slice_axis as an axis 0.." + std::to_string(rank - 1) +
                    " of the output, or -1 for no slices");
  return *slice_axis;
}

namespace {

// Element i of an integer or bool tensor, exactly (value_as_double would round int64 > 2^53).
int64_t integer_at(const HostTensor& t, size_t i) {
  const uint8_t* p = t.data.data() + i * dtype_size(t.dtype);
  switch (t.dtype) {
    case DType::kInt8: return static_cast<int8_t>(*p);
    case DType::kUInt8: return *p;
    case DType::kBool: return *p != 0;
    case DType::kInt16: { int16_t v; std::memcpy(&v, p, sizeof v); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p, sizeof v); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p, sizeof v); return v; }
    default: return 0;
  }
}

// |a − b| without overflow (two int64s can differ by up to 2^64 − 1).
uint64_t integer_distance(int64_t a, int64_t b) {
  return a >= b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}

// The exact rule (integer and bool dtypes): every element within integer_atol (0: equal).
void compare_exact(TensorReport& rep, const HostTensor& actual, const HostTensor& reference,
                   const CompareOptions& options) {
  rep.exact = true;
  rep.integer_atol = options.integer_atol;
  const double tol = options.integer_atol.value_or(0);
  rep.atol = tol;
  rep.rtol = 0;
  const size_t n = reference.numel();
  // Accept |a − r| ≤ tol, compared as integers: ⌊tol⌋ (a tolerance ≥ 2^64 admits everything).
  const bool admits_all = tol >= 18446744073709551615.0;
  const auto limit = admits_all ? UINT64_MAX : static_cast<uint64_t>(std::floor(tol));
  size_t first = n, worst = 0;
  uint64_t worst_d = 0;
  double dot = 0, na = 0, nr = 0, noise = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t ai = integer_at(actual, i), ri = integer_at(reference, i);
    const uint64_t d = integer_distance(ai, ri);
    if (d > limit) {
      ++rep.mismatches;
      if (first == n) first = i;
    }
    if (d > worst_d) {
      worst_d = d;
      worst = i;
    }
    const double a = static_cast<double>(ai), r = static_cast<double>(ri);
    dot += a * r;
    na += a * a;
    nr += r * r;
    noise += static_cast<double>(d) * static_cast<double>(d);
  }
  rep.max_abs_error = static_cast<double>(worst_d);
  rep.worst_ratio = tol > 0 ? rep.max_abs_error / tol
                    : worst_d == 0 ? 0
                                   : std::numeric_limits<double>::infinity();
  rep.headroom = 1 - rep.worst_ratio;
  rep.fraction_over = n ? static_cast<double>(rep.mismatches) / static_cast<double>(n) : 0;
  rep.range_error = rep.reference_range > 0 ? rep.max_abs_error / rep.reference_range
                    : worst_d == 0          ? 0
                                            : std::numeric_limits<double>::infinity();
  if (n) {
    rep.worst_index = unravel(worst, reference.shape);
    rep.worst_actual = static_cast<double>(integer_at(actual, worst));
    rep.worst_reference = static_cast<double>(integer_at(reference, worst));
  }
  // Measured for the record, not judged: an index or a class id has no direction or signal.
  rep.cosine = cosine_of(dot, na, nr);
  rep.sqnr_db = sqnr_of(nr, noise);
  rep.cosine_skipped = rep.sqnr_skipped = true;
  if (first != n) {
    rep.first_mismatch = unravel(first, reference.shape);
    rep.first_mismatch_actual = integer_at(actual, first);
    rep.first_mismatch_reference = integer_at(reference, first);
    std::ostringstream os;
    os << "exact: " << rep.mismatches << " of " << n << " elements of an integer ("
       << to_string(reference.dtype) << ") output differ"
       << (tol > 0 ? " by more than the declared integer_atol " + fmt(tol) : std::string())
       << "; first at " << index_to_string(rep.first_mismatch) << " actual "
       << rep.first_mismatch_actual << " reference " << rep.first_mismatch_reference;
    rep.failure = os.str();
    rep.failed_rules = {"exact"};
  }
  rep.passed = rep.failure.empty();
}

bool same_value(double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; }

}  // namespace

namespace {

// Refuses a pair that cannot be compared: shapes or dtypes differ, or a wrong integer_atol.
void check_comparable(const std::string& output, const HostTensor& actual, const HostTensor& reference,
                      const CompareOptions& options) {
  if (actual.shape != reference.shape)
    throw Error(ErrorKind::kShapeMismatch,
                "output \"" + output + "\": actual shape " + shape_to_string(actual.shape) +
                    " differs from the reference's " + shape_to_string(reference.shape),
                "re-export the bundle so the program and its goldens agree");
  if (actual.dtype != reference.dtype)
    throw Error(ErrorKind::kDtypeMismatch,
                "output \"" + output + "\": actual dtype " + std::string(to_string(actual.dtype)) +
                    " differs from the reference's " + std::string(to_string(reference.dtype)),
                "re-export the bundle so the program's output dtype matches its goldens");
  if (options.integer_atol && !(std::isfinite(*options.integer_atol) && *options.integer_atol >= 0))
    throw Error(ErrorKind::kInvalidArgument,
                "output \"" + output + "\": integer_atol " + fmt(*options.integer_atol) +
                    " is not a finite number ≥ 0",
                "declare outputs[i].integer_atol as a finite tolerance ≥ 0, or leave it out for "
                "an exact comparison");
}

// The one pass over a floating output's elements: the sums over the tensor and each slice, the
// elements outside the bound, the worst element, the first non-finite mismatch, the sign flips.
struct Pass {
  SliceSums all;
  std::vector<SliceSums> slices;  // one per index of the slice axis; empty when not sliced
  size_t inner = 1;               // element i lies in slice (i / inner) % slices.size()
  size_t over = 0, first_nonfinite = 0, worst = 0, worst_flip = 0, sign_flips = 0;
  double worst_ratio = -1, worst_err = -1;
};

void add_element(SliceSums& s, double ai, double ri, double err, double ratio, bool finite, double eta) {
  if (s.count == 0) {
    s.a0 = ai;
    s.r0 = ri;
  } else {
    s.a_constant = s.a_constant && same_value(ai, s.a0);
    s.r_constant = s.r_constant && same_value(ri, s.r0);
  }
  ++s.count;
  s.max_err = std::max(s.max_err, err);
  s.worst_ratio = std::max(s.worst_ratio, ratio);
  if (err == std::numeric_limits<double>::infinity() && !finite) ++s.nonfinite_mismatch;
  if (finite) {
    if (ratio > 1) ++s.over;
    s.dot += ai * ri;
    s.na += ai * ai;
    s.nr += ri * ri;
    s.noise += (ai - ri) * (ai - ri);
    s.allowance += eta * eta;
    s.r_min = std::min(s.r_min, ri);
    s.r_max = std::max(s.r_max, ri);
    s.r_abs_max = std::max(s.r_abs_max, std::fabs(ri));
  }
}

// `bound`: the resolved bound; `flip`: the sign-flip rule's, with `noise_margin` its margin;
// `margin`: the bound's own margin over honest noise (η_i = bound_i / margin).
Pass measure(const std::vector<double>& a, const std::vector<double>& r, const Bound& bound, const Bound& flip,
             double noise_margin, double margin, const std::vector<int64_t>& shape, std::optional<int64_t> axis) {
  Pass p;
  const size_t n = r.size();
  p.first_nonfinite = p.worst_flip = n;
  if (axis) {
    p.slices.resize(static_cast<size_t>(shape[static_cast<size_t>(*axis)]));
    for (size_t d = static_cast<size_t>(*axis) + 1; d < shape.size(); ++d) p.inner *= static_cast<size_t>(shape[d]);
  }
  for (size_t i = 0; i < n; ++i) {
    const double ai = a[i], ri = r[i];
    double err = 0, ratio = 0;
    const bool finite = std::isfinite(ai) && std::isfinite(ri);
    const double tol = bound.atol + bound.rtol * std::fabs(ri);
    if (!finite) {
      // NaN matches only NaN; ±inf only the same inf.
      const bool match = (std::isnan(ri) && std::isnan(ai)) || (std::isinf(ri) && std::isinf(ai) && ri == ai);
      if (!match) {
        err = ratio = std::numeric_limits<double>::infinity();
        if (p.first_nonfinite == n) p.first_nonfinite = i;
      }
    } else {
      err = std::fabs(ai - ri);
      ratio = tol > 0 ? err / tol : (err == 0 ? 0 : std::numeric_limits<double>::infinity());
      // A sign flip above the noise level: |a − r| > |r| > η_i, more than any honest error the
      // table measured (docs/design.md §5).
      if (ai * ri < 0 && std::fabs(ri) > (flip.atol + flip.rtol * std::fabs(ri)) / noise_margin) {
        ++p.sign_flips;
        if (p.worst_flip == n || std::fabs(ri) > std::fabs(r[p.worst_flip])) p.worst_flip = i;
      }
    }
    if (ratio > 1) ++p.over;
    if (ratio > p.worst_ratio || (ratio == p.worst_ratio && err > p.worst_err)) {
      p.worst_ratio = ratio;
      p.worst_err = err;
      p.worst = i;
    }
    add_element(p.all, ai, ri, err, ratio, finite, tol / margin);
    if (axis) add_element(p.slices[(i / p.inner) % p.slices.size()], ai, ri, err, ratio, finite, tol / margin);
  }
  if (n == 0) p.worst_ratio = 0;
  return p;
}

// The report's numbers from the pass (everything the rules read but the slices).
void fill_numbers(TensorReport& rep, const Pass& p, const Bound& bound, const std::vector<double>& a,
                  const std::vector<double>& r, const std::vector<int64_t>& shape) {
  const size_t n = r.size();
  rep.max_abs_error = p.all.max_err;
  rep.range_error = rep.reference_range > 0 ? p.all.max_err / rep.reference_range
                    : p.all.max_err == 0    ? 0
                                            : std::numeric_limits<double>::infinity();
  if (rep.quant_scale) rep.qstep_error = p.all.max_err / *rep.quant_scale;
  rep.worst_ratio = p.worst_ratio;
  rep.headroom = 1 - p.worst_ratio;
  rep.fraction_over = n ? static_cast<double>(p.over) / static_cast<double>(n) : 0;
  if (n) {
    rep.worst_index = unravel(p.worst, shape);
    rep.worst_actual = a[p.worst];
    rep.worst_reference = r[p.worst];
  }
  // Cosine and SQNR over the finite pairs; the reported SQNR is −inf where a non-finite mismatch is.
  rep.cosine = cosine_of(p.all.dot, p.all.na, p.all.nr);
  rep.sqnr_db = sqnr_of(p.all.nr, p.all.noise);
  if (p.all.nonfinite_mismatch) rep.sqnr_db = -std::numeric_limits<double>::infinity();
  // A reference with no energy has no signal to measure noise against, and no direction: the SQNR
  // and cosine rules are skipped (allclose, with a derived rule's absolute floor kAtolFloor, and
  // the constant-output rule still judge it).
  rep.sqnr_skipped = p.all.nr == 0;
  rep.cosine_skipped = p.all.nr == 0 && p.all.nonfinite_mismatch == 0;
  rep.min_cosine = bound.min_cosine;
  rep.min_sqnr_db = bound.min_sqnr_db;
  rep.sign_flips = p.sign_flips;
  if (p.sign_flips) {
    rep.worst_sign_flip = unravel(p.worst_flip, shape);
    rep.sign_flip_actual = a[p.worst_flip];
    rep.sign_flip_reference = r[p.worst_flip];
  }
}

// One slice's report: its numbers, its floors — the bound's cosine and SQNR floors relaxed only to
// what honest noise (η_i per element, Σ η_i² in power) admits on a slice whose own signal is
// small — and the slice rules' verdict.
SliceReport judge_slice(size_t k, const SliceSums& s, const Bound& bound, double margin) {
  SliceReport sr;
  sr.index = static_cast<int64_t>(k);
  sr.max_abs_error = s.max_err;
  sr.worst_ratio = s.worst_ratio;
  sr.cosine = cosine_of(s.dot, s.na, s.nr);
  sr.sqnr_db = s.nonfinite_mismatch ? -std::numeric_limits<double>::infinity() : sqnr_of(s.nr, s.noise);
  // At or below the noise level (Σr² ≤ Σ η²): honest noise alone can turn the slice's direction,
  // so neither rule judges it (allclose, sign flips and the constant rule do).
  const bool at_noise = !(s.nr > s.allowance);
  sr.cosine_skipped = sr.sqnr_skipped = at_noise;
  if (!at_noise) {
    // Honest noise power ≤ Σ η² ⇒ SQNR ≥ 10·log10(Σr²/Σ η²), and the angle to the reference is at
    // most asin(|e|/|r|) ⇒ cosine ≥ sqrt(1 − Σ η²/Σr²).
    const double rho = s.allowance / s.nr;
    sr.min_sqnr_db = std::min(bound.min_sqnr_db, rho > 0 ? -10 * std::log10(rho) : std::numeric_limits<double>::infinity());
    sr.min_cosine = std::min(bound.min_cosine, std::sqrt(1 - rho));
  } else {
    sr.min_sqnr_db = -std::numeric_limits<double>::infinity();
    sr.min_cosine = -1;
  }
  const detail::SliceFacts facts{s, sr, bound, margin};
  for (const detail::SliceRule& rule : detail::slice_rules())
    if (auto failure = rule.judge(facts)) sr.failure += (sr.failure.empty() ? "" : "; ") + *failure;
  sr.passed = sr.failure.empty();
  return sr;
}

// The slices' reports, the worst slice (a failing one before any passing one, then the lowest
// cosine), and the failure line naming it when any slice fails.
std::optional<std::string> judge_slices(TensorReport& rep, const Pass& p, const Bound& bound, double margin,
                                        int64_t axis) {
  size_t failing = 0;
  for (size_t k = 0; k < p.slices.size(); ++k) {
    SliceReport sr = judge_slice(k, p.slices[k], bound, margin);
    if (!sr.passed) ++failing;
    if (!rep.worst_slice) {
      rep.worst_slice = k;
    } else {
      const SliceReport& w = rep.slices[*rep.worst_slice];
      if ((!sr.passed && w.passed) || (sr.passed == w.passed && sr.cosine < w.cosine)) rep.worst_slice = k;
    }
    rep.slices.push_back(std::move(sr));
  }
  if (!failing) return std::nullopt;
  const SliceReport& w = rep.slices[*rep.worst_slice];
  return "slice " + std::to_string(w.index) + " of axis " + std::to_string(axis) + " (" + std::to_string(failing) +
         " of " + std::to_string(p.slices.size()) + " slices fail): " + w.failure;
}

}  // namespace

TensorReport compare_tensor(const std::string& output, const HostTensor& actual,
                            const HostTensor& reference, const Bound& rule,
                            const std::optional<double>& quant_scale,
                            const CompareOptions& options) {
  check_comparable(output, actual, reference, options);
  const bool integer = is_integer_dtype(reference.dtype);
  // Validated even where unused (integer outputs), so a wrong declaration is never silent.
  const std::optional<int64_t> axis = resolve_slice_axis(reference.shape, options.slice_axis, output);

  TensorReport rep;
  rep.output = output;
  rep.numel = reference.numel();
  rep.reference_range = reference_range(reference);
  if (integer) {
    compare_exact(rep, actual, reference, options);
    return rep;
  }
  if (quant_scale && *quant_scale > 0) rep.quant_scale = quant_scale;
  const Bound bound = resolve_bound(rule, rep.reference_range, rep.quant_scale);
  rep.atol = bound.atol;
  rep.rtol = bound.rtol;
  // The margin the atol carries over honest noise: M for a rule whose atol comes from measured
  // table terms (M × the worst observed error); 1 where it does not — a target term (int8-static:
  // honest errors were measured up to 22.2 of its 26 steps) or a caller's absolute atol, whose
  // margin nobody measured: there the noise level is the atol itself.
  const double margin = rule.scale_relative() && !rule.target ? kBoundMargin : 1.0;
  // The sign-flip rule's noise level: the bound's own, or CompareOptions::noise_rule's (a bound
  // widened against truth keeps its rule's noise level: references.h, applied_bound).
  const Bound& flip_rule = options.noise_rule ? *options.noise_rule : rule;
  const Bound flip = options.noise_rule ? resolve_bound(flip_rule, rep.reference_range, rep.quant_scale) : bound;
  rep.noise_margin = flip_rule.scale_relative() && !flip_rule.target ? kBoundMargin : 1.0;
  rep.noise_level = flip.atol / rep.noise_margin;
  if (axis) rep.slice_axis = axis;
  const std::vector<double> a = actual.to_double();
  const std::vector<double> r = reference.to_double();
  const Pass p = measure(a, r, bound, flip, rep.noise_margin, margin, reference.shape, axis);
  fill_numbers(rep, p, bound, a, r, reference.shape);

  // The rules, every failing one named at once.
  std::map<std::string, double> measured;
  const detail::TensorFacts facts{rep,    p.all,           bound,       a, r, reference.shape, p.over,
                                  p.first_nonfinite, p.worst_err, sqnr_of(p.all.nr, p.all.noise), measured};
  std::vector<std::string> failures;
  for (const detail::TensorRule& rule_unit : detail::tensor_rules())
    if (auto failure = rule_unit.judge(facts)) {
      failures.push_back(std::move(*failure));
      rep.failed_rules.emplace_back(rule_unit.name);
    }
  for (const auto& [name, value] : measured) rep.thresholds[name] = bound.thresholds.at(name);
  rep.measured = std::move(measured);
  if (axis)
    if (auto failure = judge_slices(rep, p, bound, margin, *axis)) {
      failures.push_back(std::move(*failure));
      rep.failed_rules.emplace_back("slice");
    }

  rep.passed = failures.empty();
  for (size_t i = 0; i < failures.size(); ++i) rep.failure += (i ? "; " : "") + failures[i];
  return rep;
}

std::optional<double> output_scale(const Manifest& m, const std::string& output) {
  for (const TensorSpec& t : m.outputs)
    if (t.name == output) return t.quantization ? std::optional<double>(t.quantization->scale) : std::nullopt;
  for (const MethodSpec& method : m.methods)
    for (const TensorSpec& t : method.outputs)
      if (t.name == output) return t.quantization ? std::optional<double>(t.quantization->scale) : std::nullopt;
  return std::nullopt;
}

nlohmann::json to_json(const TensorReport& t) {
  using detail::json_number;
  nlohmann::json slices = nlohmann::json::array();
  for (const SliceReport& s : t.slices)
    slices.push_back({{"index", s.index},
                      {"passed", s.passed},
                      {"failure", s.failure},
                      {"cosine", json_number(s.cosine)},
                      {"sqnr_db", json_number(s.sqnr_db)},
                      {"max_abs_error", json_number(s.max_abs_error)},
                      {"worst_ratio", json_number(s.worst_ratio)},
                      {"min_cosine", json_number(s.min_cosine)},
                      {"min_sqnr_db", json_number(s.min_sqnr_db)},
                      {"cosine_skipped", s.cosine_skipped},
                      {"sqnr_skipped", s.sqnr_skipped}});
  nlohmann::json j = {{"output", t.output},
                      {"passed", t.passed},
                      {"failure", t.failure},
                      {"numel", t.numel},
                      {"worst_index", t.worst_index},
                      {"worst_actual", json_number(t.worst_actual)},
                      {"worst_reference", json_number(t.worst_reference)},
                      {"max_abs_error", json_number(t.max_abs_error)},
                      {"worst_ratio", json_number(t.worst_ratio)},
                      {"fraction_over", t.fraction_over},
                      {"cosine", json_number(t.cosine)},
                      {"sqnr_db", json_number(t.sqnr_db)},
                      {"sqnr_skipped", t.sqnr_skipped},
                      {"cosine_skipped", t.cosine_skipped},
                      {"headroom", json_number(t.headroom)},
                      {"atol", json_number(t.atol)},
                      {"rtol", json_number(t.rtol)},
                      // the floors as applied to this output (widened against truth where they were)
                      {"min_cosine", json_number(t.min_cosine)},
                      {"min_sqnr_db", json_number(t.min_sqnr_db)},
                      {"reference_range", json_number(t.reference_range)},
                      {"quant_scale", json_number(t.quant_scale)},
                      {"range_error", json_number(t.range_error)},
                      {"qstep_error", json_number(t.qstep_error)},
                      {"exact", t.exact},
                      {"integer_atol", json_number(t.integer_atol)},
                      {"mismatches", t.mismatches},
                      {"first_mismatch", t.first_mismatch.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(t.first_mismatch)},
                      {"noise_level", json_number(t.noise_level)},
                      {"noise_margin", json_number(t.noise_margin)},
                      {"sign_flips", t.sign_flips},
                      {"worst_sign_flip", t.worst_sign_flip.empty()
                                              ? nlohmann::json(nullptr)
                                              : nlohmann::json(t.worst_sign_flip)},
                      {"slice_axis", t.slice_axis ? nlohmann::json(*t.slice_axis)
                                                  : nlohmann::json(nullptr)},
                      {"slices", slices},
                      {"worst_slice", t.worst_slice ? nlohmann::json(t.slices[*t.worst_slice].index)
                                                    : nlohmann::json(nullptr)}};
  if (!t.first_mismatch.empty()) {
    j["first_mismatch_actual"] = t.first_mismatch_actual;
    j["first_mismatch_reference"] = t.first_mismatch_reference;
  }
  if (!t.worst_sign_flip.empty()) {
    j["sign_flip_actual"] = json_number(t.sign_flip_actual);
    j["sign_flip_reference"] = json_number(t.sign_flip_reference);
  }
  j["against"] = t.against;
  if (!t.widened_by.empty()) {
    j["widened_by"] = t.widened_by;
    j["widening_error"] = json_number(t.widening_error);
  }
  if (!t.inconclusive.empty()) j["inconclusive"] = t.inconclusive;
  if (!t.fell_back.empty()) j["fell_back"] = t.fell_back;
  if (!t.measured.empty()) {
    j["thresholds"] = nlohmann::json::object();
    j["measured"] = nlohmann::json::object();
    for (const auto& [name, value] : t.thresholds) j["thresholds"][name] = json_number(value);
    for (const auto& [name, value] : t.measured) j["measured"][name] = json_number(value);
  }
  j["passing_bound"] = to_json(passing_bound(t));
  j["failed_rules"] = t.failed_rules;
  return j;
}

}  // namespace etproof
