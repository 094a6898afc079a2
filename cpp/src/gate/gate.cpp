// The gate (docs/design.md §5): per-element allclose, per-tensor cosine and SQNR, non-finite
// rules, the constant-output rule, exact integers, slices and sign flips. The bound table is
// bounds.cpp.
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

namespace etproof {

namespace {

std::string fmt(double v, int precision = 6) {
  return detail::format_number(v, precision);
}

using detail::sqnr_text;
std::string fixed(double v, int decimals) { return detail::fixed_number(v, decimals); }

using detail::cosine_text;

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
  }
  rep.passed = rep.failure.empty();
}

// Running sums over one slice (or the whole tensor).
struct SliceSums {
  double dot = 0, na = 0, nr = 0, noise = 0;  // finite pairs only
  double allowance = 0;                       // Σ η_i² over the finite pairs: the noise power an
                                              // honest backend may add (η_i = bound_i / M)
  double max_err = 0, worst_ratio = 0;
  size_t nonfinite_mismatch = 0;
  size_t over = 0;                            // finite pairs outside the elementwise bound
  size_t count = 0;
  bool a_constant = true, r_constant = true;
  double a0 = 0, r0 = 0;
  double r_min = std::numeric_limits<double>::infinity();
  double r_max = -std::numeric_limits<double>::infinity();
  double r_abs_max = 0;
};

bool same_value(double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; }

}  // namespace

TensorReport compare_tensor(const std::string& output, const HostTensor& actual,
                            const HostTensor& reference, const Bound& rule,
                            const std::optional<double>& quant_scale,
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
  const Bound flip = options.noise_rule
                         ? resolve_bound(flip_rule, rep.reference_range, rep.quant_scale)
                         : bound;
  rep.noise_margin = flip_rule.scale_relative() && !flip_rule.target ? kBoundMargin : 1.0;
  rep.noise_level = flip.atol / rep.noise_margin;
  const std::vector<double> a = actual.to_double();
  const std::vector<double> r = reference.to_double();
  const size_t n = r.size();

  // Slices: element i lies in slice (i / inner) % extent of the axis.
  size_t inner = 1, extent = 0;
  if (axis) {
    rep.slice_axis = axis;
    extent = static_cast<size_t>(reference.shape[static_cast<size_t>(*axis)]);
    for (size_t d = static_cast<size_t>(*axis) + 1; d < reference.shape.size(); ++d)
      inner *= static_cast<size_t>(reference.shape[d]);
  }
  std::vector<SliceSums> slice(extent);

  SliceSums all;
  size_t over = 0;
  size_t first_nonfinite = n;
  size_t worst = 0, worst_flip = n;
  double worst_ratio = -1, worst_err = -1;
  for (size_t i = 0; i < n; ++i) {
    const double ai = a[i], ri = r[i];
    double err, ratio;
    const bool finite = std::isfinite(ai) && std::isfinite(ri);
    const double tol = bound.atol + bound.rtol * std::fabs(ri);
    if (!finite) {
      // NaN matches only NaN; ±inf only the same inf.
      const bool match = (std::isnan(ri) && std::isnan(ai)) ||
                         (std::isinf(ri) && std::isinf(ai) && ri == ai);
      if (match) {
        err = 0;
        ratio = 0;
      } else {
        err = std::numeric_limits<double>::infinity();
        ratio = std::numeric_limits<double>::infinity();
        if (first_nonfinite == n) first_nonfinite = i;
      }
    } else {
      err = std::fabs(ai - ri);
      ratio = tol > 0 ? err / tol : (err == 0 ? 0 : std::numeric_limits<double>::infinity());
      // A sign flip above the noise level: |a − r| > |r| > η_i, more than any honest error the
      // table measured (docs/design.md §5).
      if (ai * ri < 0 && std::fabs(ri) > (flip.atol + flip.rtol * std::fabs(ri)) / rep.noise_margin) {
        ++rep.sign_flips;
        if (worst_flip == n || std::fabs(ri) > std::fabs(r[worst_flip])) worst_flip = i;
      }
    }
    if (ratio > 1) ++over;
    if (ratio > worst_ratio || (ratio == worst_ratio && err > worst_err)) {
      worst_ratio = ratio;
      worst_err = err;
      worst = i;
    }
    auto add = [&](SliceSums& s) {
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
        const double eta = tol / margin;
        s.allowance += eta * eta;
        s.r_min = std::min(s.r_min, ri);
        s.r_max = std::max(s.r_max, ri);
        s.r_abs_max = std::max(s.r_abs_max, std::fabs(ri));
      }
    };
    add(all);
    if (axis) add(slice[(i / inner) % extent]);
  }
  if (n == 0) worst_ratio = 0;
  const size_t nonfinite_mismatch = all.nonfinite_mismatch;
  const double max_err = all.max_err;

  rep.max_abs_error = max_err;
  rep.range_error = rep.reference_range > 0 ? max_err / rep.reference_range
                    : max_err == 0          ? 0
                                            : std::numeric_limits<double>::infinity();
  if (rep.quant_scale) rep.qstep_error = max_err / *rep.quant_scale;
  rep.worst_ratio = worst_ratio;
  rep.headroom = 1 - worst_ratio;
  rep.fraction_over = n ? static_cast<double>(over) / static_cast<double>(n) : 0;
  if (n) {
    rep.worst_index = unravel(worst, reference.shape);
    rep.worst_actual = a[worst];
    rep.worst_reference = r[worst];
  }
  // Cosine over the finite pairs.
  rep.cosine = cosine_of(all.dot, all.na, all.nr);
  rep.sqnr_db = sqnr_of(all.nr, all.noise);
  const double finite_sqnr = rep.sqnr_db;  // over the finite pairs, for the SQNR rule
  if (nonfinite_mismatch) rep.sqnr_db = -std::numeric_limits<double>::infinity();
  // A reference with no energy has no signal to measure noise against: the SQNR rule is skipped
  // (allclose, cosine and the constant-output rule still judge it).
  rep.sqnr_skipped = all.nr == 0;

  // The rules, every failing one named at once.
  std::vector<std::string> failures;
  if (nonfinite_mismatch) {
    std::ostringstream os;
    os << "non-finite mismatch: " << nonfinite_mismatch << " element(s) where NaN/inf in one "
       << "tensor is not the same NaN/inf in the other, first at "
       << index_to_string(unravel(first_nonfinite, reference.shape)) << " (actual "
       << fmt(a[first_nonfinite]) << ", reference " << fmt(r[first_nonfinite]) << ")";
    failures.push_back(os.str());
  }
  // Constant output where the reference varies: a dead model (all zeros, a saturated layer)
  // can sit inside a loose bound; it never passes.
  if (n >= 2 && all.a_constant && !all.r_constant)
    failures.push_back("constant output: every element is " + fmt(a[0]) +
                       (a[0] == 0 ? " (all zeros)" : "") + " where the reference varies");
  if (over > nonfinite_mismatch) {
    std::ostringstream os;
    os << "allclose: " << over << " of " << n << " elements (" << fixed(100 * rep.fraction_over, 2)
       << "%) exceed atol + rtol·|ref|; worst at " << index_to_string(rep.worst_index)
       << " actual " << fmt(rep.worst_actual) << " reference " << fmt(rep.worst_reference)
       << " (|a−r| " << fmt(worst_err) << " = " << fmt(worst_ratio, 4) << "× the bound)";
    failures.push_back(os.str());
  }
  // A reference with no energy has no direction: the cosine rule is skipped too (the elementwise
  // rule, with a derived rule's absolute floor kAtolFloor, judges it).
  rep.cosine_skipped = all.nr == 0 && nonfinite_mismatch == 0;
  rep.min_cosine = bound.min_cosine;
  rep.min_sqnr_db = bound.min_sqnr_db;
  if (!rep.cosine_skipped && !(rep.cosine >= bound.min_cosine))
    failures.push_back("cosine " + cosine_text(rep.cosine) + " < min " + cosine_text(bound.min_cosine));
  if (!rep.sqnr_skipped && !(finite_sqnr >= bound.min_sqnr_db))
    failures.push_back("sqnr below bound: SQNR " + sqnr_text(finite_sqnr) + " dB < " +
                       fmt(bound.min_sqnr_db, 4) +
                       " dB (too much error power for the signal: a wrong scale, offset or "
                       "noise that the elementwise and direction rules can miss)");
  if (rep.sign_flips) {
    rep.worst_sign_flip = unravel(worst_flip, reference.shape);
    rep.sign_flip_actual = a[worst_flip];
    rep.sign_flip_reference = r[worst_flip];
    std::ostringstream os;
    os << "sign flip: " << rep.sign_flips << " element(s) of opposite sign to the reference "
       << "where |reference| exceeds the noise level (atol + rtol·|ref|)/" << fmt(rep.noise_margin)
       << " (atol/" << fmt(rep.noise_margin) << " = " << fmt(rep.noise_level, 4) << "); largest at "
       << index_to_string(rep.worst_sign_flip) << " actual " << fmt(rep.sign_flip_actual)
       << " reference " << fmt(rep.sign_flip_reference);
    failures.push_back(os.str());
  }

  // The slice rules: the same bound; cosine and SQNR floors relaxed only to what honest noise
  // (η_i per element, Σ η_i² in power) admits on a slice whose own signal is small.
  if (axis) {
    size_t failing = 0;
    for (size_t k = 0; k < extent; ++k) {
      const SliceSums& s = slice[k];
      SliceReport sr;
      sr.index = static_cast<int64_t>(k);
      sr.max_abs_error = s.max_err;
      sr.worst_ratio = s.worst_ratio;
      sr.cosine = cosine_of(s.dot, s.na, s.nr);
      sr.sqnr_db = s.nonfinite_mismatch ? -std::numeric_limits<double>::infinity()
                                        : sqnr_of(s.nr, s.noise);
      // At or below the noise level (Σr² ≤ Σ η²): honest noise alone can turn the slice's
      // direction, so neither rule judges it (allclose, sign flips and the constant rule do).
      const bool at_noise = !(s.nr > s.allowance);
      sr.cosine_skipped = sr.sqnr_skipped = at_noise;
      if (!at_noise) {
        // Honest noise power ≤ Σ η² ⇒ SQNR ≥ 10·log10(Σr²/Σ η²), and the angle to the reference
        // is at most asin(|e|/|r|) ⇒ cosine ≥ sqrt(1 − Σ η²/Σr²).
        const double rho = s.allowance / s.nr;
        sr.min_sqnr_db = std::min(bound.min_sqnr_db, rho > 0 ? -10 * std::log10(rho)
                                                             : std::numeric_limits<double>::infinity());
        sr.min_cosine = std::min(bound.min_cosine, std::sqrt(1 - rho));
      } else {
        sr.min_sqnr_db = -std::numeric_limits<double>::infinity();
        sr.min_cosine = -1;
      }
      std::vector<std::string> sf;
      if (s.nonfinite_mismatch)
        sf.push_back("non-finite mismatch on " + std::to_string(s.nonfinite_mismatch) +
                     " element(s)");
      // Constant where the reference's spread is more than honest noise (2η) could erase.
      const double eta = (bound.atol + bound.rtol * s.r_abs_max) / margin;
      if (s.count >= 2 && s.a_constant && !s.r_constant && s.r_max - s.r_min > 2 * eta)
        sf.push_back("constant output: every element is " + fmt(s.a0) +
                     (s.a0 == 0 ? " (all zeros)" : "") + " where the reference varies by " +
                     fmt(s.r_max - s.r_min, 4));
      if (s.over)
        sf.push_back("allclose: " + std::to_string(s.over) + " of " + std::to_string(s.count) +
                     " elements exceed the bound, max |a−r| " + fmt(s.max_err, 4) + " = " +
                     fmt(s.worst_ratio, 4) + "× the bound");
      if (!sr.cosine_skipped && !(sr.cosine >= sr.min_cosine))
        sf.push_back("cosine " + cosine_text(sr.cosine) + " < min " + cosine_text(sr.min_cosine));
      if (!sr.sqnr_skipped && !(sr.sqnr_db >= sr.min_sqnr_db) && !s.nonfinite_mismatch)
        sf.push_back("SQNR " + sqnr_text(sr.sqnr_db) + " dB < " + fmt(sr.min_sqnr_db, 4) + " dB");
      sr.passed = sf.empty();
      for (size_t j = 0; j < sf.size(); ++j) sr.failure += (j ? "; " : "") + sf[j];
      if (!sr.passed) ++failing;
      // The worst slice: a failing one before any passing one, then the lowest cosine.
      if (!rep.worst_slice) {
        rep.worst_slice = k;
      } else {
        const SliceReport& w = rep.slices[*rep.worst_slice];
        if ((!sr.passed && w.passed) || (sr.passed == w.passed && sr.cosine < w.cosine))
          rep.worst_slice = k;
      }
      rep.slices.push_back(std::move(sr));
    }
    if (failing) {
      const SliceReport& w = rep.slices[*rep.worst_slice];
      failures.push_back("slice " + std::to_string(w.index) + " of axis " + std::to_string(*axis) +
                         " (" + std::to_string(failing) + " of " + std::to_string(extent) +
                         " slices fail): " + w.failure);
    }
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
  return j;
}

}  // namespace etproof
