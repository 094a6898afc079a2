// What a column is judged against (etproof/references.h; docs/design.md §5).
#include "etproof/gate/references.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>

#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "core/common.h"
#include "etproof/runtime/backend_quirks.h"

namespace etproof {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

bool has_reference(const Manifest& m, const std::string& name) {
  auto it = m.references.find(name);
  return it != m.references.end() && it->second.captured;
}

std::string why_missing(const Manifest& m, const std::string& name) {
  auto it = m.references.find(name);
  if (it == m.references.end()) return "the bundle carries no " + name + " reference";
  return "the " + name + " reference was not captured at export (" + it->second.reason + ")";
}

// Why a plan falls back to the golden basis when the table has no reference-basis row.
std::string no_reference_row(bool float_recipe, const std::string& precision, const std::string& backend) {
  return float_recipe ? "the bound table has no " + precision + " row against the reference"
                      : "the " + backend + " delegate's int8 kernels are not within a few steps of this recipe's "
                        "PT2E emulation (measured: data/bounds.json), so it is judged against the "
                        "golden; the emulation gives the recipe's cost";
}

// What a faithful emulation computes, by its ReferenceInfo::emulates (docs/manifest.md,
// `references`), for the judgement line: ", activations quantized as XNNPACK's qd8 kernels do";
// "" for any other (the PT2E graph as it is, or no such reference): the one list of faithful
// emulations.
std::string emulation_text(const Manifest& m, const std::string& name) {
  auto it = m.references.find(name);
  const std::string e = it == m.references.end() ? std::string() : it->second.emulates;
  if (e == "xnnpack-qd8") return ", activations quantized as XNNPACK's qd8 kernels do";
  if (e == "torchao") return ", the eager model as torchao's quantize_ left it";
  if (e == "xnnpack-qb4w")
    return ", int4 group scales rounded to bfloat16 as XNNPACK's blockwise kernels keep them";
  if (e == "pt2e-weight-only") return ", int8 weights dequantized and the rest in float";
  return "";
}

// A recipe emulation the delegate's arithmetic is known to follow (ReferenceInfo::emulates):
// only those are judged against. The PT2E graph as it is quantizes dynamic activations per
// tensor where XNNPACK's qd8 kernels quantize per row, so a bundle exported before the qd8
// emulation stays judged against the golden. "torchao": the eager module torchao's quantize_
// made (int8-weight-only: int8 weights dequantized, which the program computes as written);
// "xnnpack-qb4w": that module with its int4 group scales in bfloat16, as XNNPACK's blockwise
// 4-bit kernels keep them (8da4w; activations per token, as its qd8 kernels take them);
// "pt2e-weight-only": a weight-only scheme's converted graph (Core ML's and Vulkan's int8-weight-only),
// int8 weights dequantized and everything else float, which is what the program computes.
bool faithful_emulation(const Manifest& m, const std::string& name) {
  return !emulation_text(m, name).empty();
}

// The export half's run of the program against the emulation `name`, where recorded.
const ProgramAtExport* at_export(const Manifest& m, const std::string& name) {
  auto it = m.references.find(name);
  return it != m.references.end() && it->second.program_at_export
             ? &*it->second.program_at_export
             : nullptr;
}

// "0 output steps and 1.3e-07 of the range over 4 cases on x86_64 AMD EPYC (Linux)".
std::string at_export_text(const ProgramAtExport& x) {
  auto figure = [](double v, const std::string& unit) {
    return std::isfinite(v) ? detail::format_number(v, 3) + unit
                            : "non-finite values where the emulation is finite (or the reverse)";
  };
  std::vector<std::string> parts;
  if (x.max_steps) parts.push_back(figure(*x.max_steps, " output steps"));
  if (x.max_range_error) parts.push_back(figure(*x.max_range_error, " of the range"));
  return "worst " + detail::join(parts, " and ") + " over " + std::to_string(x.cases) +
         " golden case" + (x.cases == 1 ? "" : "s") + " on " + x.machine;
}

}  // namespace

HostTensor as_float64(const HostTensor& t) {
  HostTensor out;
  out.dtype = DType::kFloat64;
  out.shape = t.shape;
  const std::vector<double> v = t.to_double();
  out.data.resize(v.size() * sizeof(double));
  if (!v.empty()) std::memcpy(out.data.data(), v.data(), out.data.size());
  return out;
}

PrecisionHere precision_given(const Manifest& m, const std::optional<std::string>& hint) {
  PrecisionHere p{m.precision, ""};
  const BackendQuirks* q = quirks_for_key(m.backend);
  if (!q || !q->precision_of_hint || !hint) return p;
  const std::string here = q->precision_of_hint(*hint);
  if (here == m.precision) return p;
  p.reason = std::string(q->precision_hint_source) + " " + *hint + " (computes in " + here +
             "; exported where it was " + m.precision + ")";
  p.precision = here;
  return p;
}

PrecisionHere precision_here(const Manifest& m) {
  const BackendQuirks* q = quirks_for_key(m.backend);
  if (!q || !q->precision_hint) return {m.precision, ""};
  std::string why_not;
  return precision_given(m, q->precision_hint(why_not));
}

ReferenceError reference_error(const HostTensor& ref, const HostTensor& truth) {
  if (ref.shape != truth.shape)
    throw Error(ErrorKind::kShapeMismatch,
                "a reference of shape " + shape_to_string(ref.shape) +
                    " against truth of shape " + shape_to_string(truth.shape),
                "re-export the bundle; its references disagree");
  const std::vector<double> r = ref.to_double(), t = truth.to_double();
  ReferenceError e;
  double dot = 0, nr = 0, nt = 0, noise = 0;
  bool nonfinite = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!std::isfinite(r[i]) || !std::isfinite(t[i])) {
      const bool same = (std::isnan(r[i]) && std::isnan(t[i])) || r[i] == t[i];
      if (!same) nonfinite = true;
      continue;
    }
    const double d = r[i] - t[i];
    e.max_abs_error = std::max(e.max_abs_error, std::fabs(d));
    dot += r[i] * t[i];
    nr += r[i] * r[i];
    nt += t[i] * t[i];
    noise += d * d;
  }
  if (nonfinite) return {kInf, -1, -kInf};
  e.cosine = (nr == 0 && nt == 0) ? 1
             : (nr == 0 || nt == 0) ? 0
                                    : std::clamp(dot / (std::sqrt(nr) * std::sqrt(nt)), -1.0, 1.0);
  e.sqnr_db = noise == 0 ? kInf : nt == 0 ? -kInf : 10 * std::log10(nt / noise);
  return e;
}

Bound widen_by_reference(const Bound& b, const ReferenceError& e, double margin) {
  Bound w = b;
  w.atol = b.atol + margin * e.max_abs_error;
  const double theta = std::acos(std::clamp(b.min_cosine, -1.0, 1.0)) +
                       margin * std::acos(std::clamp(e.cosine, -1.0, 1.0));
  w.min_cosine = theta >= kPi ? -1 : std::cos(theta);
  if (b.min_sqnr_db != -kInf) {
    const double nb = std::pow(10.0, -b.min_sqnr_db / 20);
    const double ne = e.sqnr_db == kInf ? 0 : std::pow(10.0, -e.sqnr_db / 20);
    w.min_sqnr_db = -20 * std::log10(nb + margin * ne);
  }
  w.atol_range = w.atol_qsteps = w.atol_range_unquantized = 0;
  return w;
}

double unit_roundoff(const std::string& precision) {
  if (precision == "float32") return std::ldexp(1.0, -24);
  if (precision == "float16") return std::ldexp(1.0, -11);
  if (precision == "bfloat16") return std::ldexp(1.0, -8);
  if (precision == "float64") return std::ldexp(1.0, -53);
  return 0;
}

std::string references_disagree(const std::string& reference, const std::string& precision,
                                 const ReferenceError& e, double truth_range) {
  const double u = unit_roundoff(precision);
  const std::string fmt_e = detail::format_number(e.max_abs_error, 3);
  if (!std::isfinite(e.max_abs_error))
    return "the references disagree: " + reference + " has non-finite values (NaN or inf) where "
           "float64 truth has finite ones, or the other way round: an overflow or 0/0 in " +
           precision + " that float64 does not have, or an edited file; no rounding explains it, "
           "so no bound follows from it";
  if (u == 0) return "";
  const double cap = kExplainableRoundoffs * u * truth_range;
  if (e.max_abs_error <= cap) return "";
  return "the references disagree: " + reference + " is " + fmt_e + " off float64 truth on an "
         "output whose truth spans ±" + detail::format_number(truth_range, 4) + " (" +
         detail::format_number(truth_range > 0 ? e.max_abs_error / truth_range : kInf, 3) +
         " of the range), more than " + precision + " rounding explains (at most " +
         detail::format_number(kExplainableRoundoffs, 6) + " unit roundoffs of the range, " +
         detail::format_number(cap, 3) + "): they were not computed from the same model state, "
         "or one of them was edited";
}

std::string no_bound_reason(const Bound& b, double range) {
  std::vector<std::string> why;
  if (range > 0 && b.atol >= range)
    why.push_back("atol " + detail::format_number(b.atol, 3) + " ≥ max|ref| " +
                  detail::format_number(range, 3));
  if (range > 0 && b.min_cosine <= 0)
    why.push_back("cosine floor " + detail::cosine_text(b.min_cosine) + " ≤ 0");
  if (range > 0 && b.min_sqnr_db != -kInf && b.min_sqnr_db <= 0)
    why.push_back("SQNR floor " + detail::format_number(b.min_sqnr_db, 3) + " dB ≤ 0");
  if (why.empty()) return "";
  return "no bound: the widened bound would admit more than the output spans (" +
         detail::join(why, ", ") + ")";
}

namespace {

// Takes the widened bound: a.bound and a.resolved, and the sign-flip noise level
// (CompareOptions::noise_rule): the rule's own η = atol/M plus the widening reference's measured
// gap once (what an honest kernel may add to it against its reference), never the M times that
// gap which widens the bound. Requires a.widening.
void take_widened(AppliedBound& a, const Bound& rule, const Bound& widened) {
  a.bound = a.resolved = widened;
  a.noise_rule = rule;
  a.noise_rule.atol = rule.atol + kBoundMargin * a.widening->max_abs_error;
}

// applied_bound against a quantized recipe's emulation computed in a reduced precision: the row
// resolved on the emulation and widened by M times the rounded emulation's distance from it
// (the same widening as against truth, the emulation in the truth's place); where that is no
// bound, or its cosine or SQNR floor is looser than the golden row's, the plan's golden-basis
// fallback on the golden (fell_back says why).
AppliedBound applied_on_emulation(const JudgePlan& plan, const Bound& rule, const HostTensor& golden,
                                  const std::function<const HostTensor&(const std::string&)>& reference_of,
                                  const std::optional<double>& scale) {
  AppliedBound a;
  a.against = plan.against;
  const HostTensor& emulation = reference_of(plan.against);
  a.widened_by = plan.widen_by;
  a.widening = reference_error(reference_of(plan.widen_by), emulation);
  a.reference_range = reference_range(emulation);
  a.resolved = resolve_bound(rule, a.reference_range, scale);
  Bound widened = widen_by_reference(a.resolved, *a.widening);
  widened.source = rule.source;
  // The golden row resolved on the golden: what judges this output where the widened bound
  // cannot, and the floors it must not be looser than.
  std::optional<Bound> golden_rule;
  if (plan.fallback) golden_rule = resolve_bound(*plan.fallback, reference_range(golden), scale);
  std::string none = no_bound_reason(widened, a.reference_range);
  if (none.empty() && golden_rule &&
      (widened.min_cosine < golden_rule->min_cosine ||
       (golden_rule->min_sqnr_db != -kInf && widened.min_sqnr_db < golden_rule->min_sqnr_db)))
    // A widened bound looser than the golden row's floors would judge this output less strictly
    // than the golden basis does: the golden row judges it instead.
    none = "looser than the golden row: widened, the bound would be cosine ≥ " +
           detail::cosine_text(widened.min_cosine) + ", SQNR ≥ " +
           detail::format_number(widened.min_sqnr_db, 3) + " dB, the golden row's cosine ≥ " +
           detail::cosine_text(golden_rule->min_cosine) + ", SQNR ≥ " +
           detail::format_number(golden_rule->min_sqnr_db, 3) + " dB";
  if (none.empty()) {
    take_widened(a, rule, widened);
    return a;
  }
  const std::string gap =
      std::isfinite(a.widening->max_abs_error)
          ? detail::format_number(a.reference_range > 0
                                      ? a.widening->max_abs_error / a.reference_range
                                      : kInf,
                                  3) + " of the range, SQNR " + detail::sqnr_text(a.widening->sqnr_db) + " dB"
          : std::string("non-finite where the emulation is finite");
  none = none + ": the " + plan.widen_by + " emulation is " + gap + " from the " + plan.against +
         " emulation, so the model moves its outputs too far under that rounding to be judged "
         "more strictly against its emulation";
  if (!golden_rule) {
    a.inconclusive = none;
    a.bound = a.noise_rule = rule;
    return a;
  }
  a.fell_back = none + "; judged against the float32 golden by the recipe's golden row";
  a.against = "golden";
  a.widened_by.clear();
  a.widening.reset();
  a.reference_range = reference_range(golden);
  a.bound = a.noise_rule = *plan.fallback;
  a.resolved = *golden_rule;
  return a;
}

}  // namespace

AppliedBound applied_bound(const JudgePlan& plan, const Bound& rule, const HostTensor& golden,
                           const std::function<const HostTensor&(const std::string&)>& reference_of,
                           const std::optional<double>& scale) {
  AppliedBound a;
  a.against = plan.against;
  a.bound = a.noise_rule = rule;
  if (!plan.widen_by.empty() && plan.against != "float64" && !is_integer_dtype(golden.dtype)) {
    a = applied_on_emulation(plan, rule, golden, reference_of, scale);
    if (a.inconclusive.empty()) a.inconclusive = golden_disagrees(plan, golden, reference_of);
    return a;
  }
  if (plan.against != "float64" || is_integer_dtype(golden.dtype)) {
    // Against the golden (integer outputs always) or the recipe's emulation: the rule itself,
    // which compare_tensor resolves on that reference.
    if (is_integer_dtype(golden.dtype)) a.against = "golden";
    a.reference_range =
        reference_range(a.against == "golden" ? golden : reference_of(a.against));
    a.resolved = resolve_bound(rule, a.reference_range, scale);
    a.inconclusive = golden_disagrees(plan, golden, reference_of);
    return a;
  }
  const HostTensor& truth = reference_of("float64");
  const HostTensor& own = plan.widen_by == "golden" ? golden : reference_of(plan.widen_by);
  a.widened_by = plan.widen_by;
  a.widening = reference_error(own, truth);
  a.reference_range = reference_range(truth);
  const Bound resolved = resolve_bound(rule, a.reference_range, scale);
  a.resolved = resolved;
  const std::string who = plan.widen_by == "golden" ? std::string("the float32 golden")
                                                    : "the " + plan.widen_by + " emulation";
  const std::string precision = plan.widen_by == "golden" ? std::string("float32") : plan.widen_by;
  a.inconclusive = references_disagree(who, precision, *a.widening, a.reference_range);
  if (!a.inconclusive.empty()) return a;  // judged (for its numbers) by the unwidened rule
  Bound widened = widen_by_reference(resolved, *a.widening);
  widened.source = rule.source;
  const std::string none = no_bound_reason(widened, a.reference_range);
  if (!none.empty()) {
    a.inconclusive = none + ": " + who + " itself is " +
                     detail::format_number(a.widening->max_abs_error, 3) + " off float64 truth (" +
                     detail::format_number(a.reference_range > 0
                                               ? a.widening->max_abs_error / a.reference_range
                                               : kInf,
                                           3) +
                     " of the range), so " + precision + " arithmetic cannot carry this output";
    return a;
  }
  take_widened(a, rule, widened);
  return a;
}

namespace {

// The column's own reference computation, from its recipe and the precision judged.
struct OwnReference {
  bool float_recipe = false;  // "fp32", and "fp16" (Core ML, QNN: precision float16): no quantization
  bool reduced = false;       // the precision judged is float16 or bfloat16
  // The float32 golden ("golden"), or the emulation of the recipe (int8) or of the reduced
  // precision.
  std::string name;
  bool present = false;       // the golden, or a reference the bundle captured
};

OwnReference own_reference(const Manifest& m, const std::string& precision) {
  OwnReference o;
  o.float_recipe = m.recipe == "fp32" || m.recipe == "fp16";
  o.reduced = precision == "float16" || precision == "bfloat16";
  o.name = !o.float_recipe ? m.recipe : o.reduced ? precision : "golden";
  o.present = o.name == "golden" || has_reference(m, o.name);
  return o;
}

// p.rule and p.basis from the bound table's row for `basis`, p.no_rule cleared; false (and
// p.no_rule set to derive_bound's error) when the table has none.
bool try_rule(JudgePlan& p, const Manifest& m, BoundBasis basis) {
  try {
    p.rule = derive_bound(m.backend + "/" + m.recipe, p.precision, m.compute_unit, basis);
    p.basis = basis;
    p.no_rule.reset();
    return true;
  } catch (const Error& e) {
    p.no_rule = e;
    return false;
  }
}

// measure-tolerances: each column against its own reference computation, which is what the
// reference-basis rows measure (the golden-basis row where the own reference IS the golden).
// False when the pair has no such row (int8 unless its emulation is faithful).
bool plan_measuring(JudgePlan& p, const Manifest& m, const OwnReference& own) {
  if (!(own.float_recipe || faithful_emulation(m, own.name)) ||
      !try_rule(p, m, own.name == "golden" ? BoundBasis::kGolden : BoundBasis::kReference))
    return false;
  p.against = own.name;
  p.why = "against " +
          (own.name == "golden" ? std::string("the float32 golden") : "the " + own.name + " emulation") +
          " (measuring the reference-basis row)";
  return true;
}

// A quantized program that matched its recipe's emulation when the export half ran it: judged
// against that emulation by the match criterion (matched_program_bound). False when it was not
// measured, did not match, or the table has no row for the pair.
bool plan_matched_program(JudgePlan& p, const Manifest& m, const OwnReference& own) {
  const ProgramAtExport* x = own.float_recipe ? nullptr : at_export(m, own.name);
  if (!(x && x->matched && (try_rule(p, m, BoundBasis::kReference) || try_rule(p, m, BoundBasis::kGolden))))
    return false;
  p.rule = matched_program_bound(p.rule, *x);
  p.basis = BoundBasis::kReference;
  p.against = own.name;
  p.why = "against the recipe's own eager emulation (" + own.name +
          "), which the program matched when the export half ran it (" + at_export_text(*x) +
          "): " + detail::format_number(kReferenceMargin, 3) + " x the match criterion";
  return true;
}

// A PT2E int8 column whose delegate computes its float parts in the reduced precision judged (a
// bundle carrying the emulation rounded to it, "RECIPE-PRECISION"): against the emulation, the
// pair's reference-basis row widened by M x the rounded emulation's distance from it per output
// (applied_on_emulation), the golden-basis row the fallback where that is no bound. False when
// the bundle has no rounded emulation or the table no reference row for the pair.
bool plan_rounded_emulation(JudgePlan& p, const Manifest& m, const OwnReference& own) {
  const std::string rounded = own.name + "-" + p.precision;
  if (own.float_recipe || !own.reduced || !has_reference(m, rounded)) return false;
  JudgePlan golden = p;
  if (!try_rule(p, m, BoundBasis::kReference)) return false;
  if (try_rule(golden, m, BoundBasis::kGolden)) p.fallback = golden.rule;
  p.against = own.name;
  p.widen_by = rounded;
  p.why = "against the recipe's own eager emulation (" + own.name + "), the bound widened by " +
          detail::format_number(kReferenceMargin, 3) + "x its distance from the same emulation "
          "computed in " + p.precision + " (" + rounded + "), as the delegate computes the float "
          "parts";
  if (const ProgramAtExport* x = at_export(m, own.name))
    p.why += "; the program at export: " + at_export_text(*x);
  return true;
}

// Why a quantized column whose emulation the delegate does not follow is judged against the golden.
std::string unfaithful_emulation_reason(const Manifest& m, const OwnReference& own, const std::string& precision) {
  std::string why = m.recipe == "int8-dynamic-per-channel"
                        ? "the bundle's int8-dynamic emulation quantizes activations per tensor (the "
                          "PT2E graph as it is), which XNNPACK does not compute; re-export it for the "
                          "qd8 emulation the column is judged against"
                        : no_reference_row(own.float_recipe, precision, m.backend);
  if (const ProgramAtExport* x = at_export(m, own.name))
    why += "; the program departed from the " + own.name + " emulation when the export half "
           "ran it (" + at_export_text(*x) + ")";
  return why;
}

// The reference-basis plan, its row already in p.rule: a float column against float64 truth, its
// bound widened by its own reference's error there; a quantized one against its recipe's emulation.
void plan_reference_basis(JudgePlan& p, const Manifest& m, const OwnReference& own) {
  if (own.float_recipe) {
    p.against = "float64";
    p.widen_by = own.name;
    p.why = "against float64 truth; the " + p.precision + " bound widened by " +
            detail::format_number(kReferenceMargin, 3) + "x the " +
            (own.reduced ? p.precision + " emulation" : std::string("float32 golden")) +
            "'s own error against truth";
    return;
  }
  p.against = own.name;
  p.why = "against the recipe's own eager emulation (" + own.name + emulation_text(m, own.name) + ")";
  if (const ProgramAtExport* x = at_export(m, own.name))
    p.why += " with the recipe's row: the program departed from it when the export half ran "
             "it (" + at_export_text(*x) + ")";
}

}  // namespace

namespace {

JudgePlan plan_for(const Manifest& m, const PrecisionHere& here, bool use_truth) {
  JudgePlan p;
  p.precision = here.precision;
  p.precision_reason = here.reason;
  const OwnReference own = own_reference(m, p.precision);
  if (own.name != "golden" && own.present) p.cost_reference = own.name;
  std::string fallback;  // why the golden basis, when it comes to that
  if (!own.present) {
    fallback = why_missing(m, own.name);
  } else if (!use_truth) {
    if (plan_measuring(p, m, own)) return p;
    fallback = no_reference_row(own.float_recipe, p.precision, m.backend);
  } else if (own.float_recipe && !has_reference(m, "float64")) {
    fallback = why_missing(m, "float64");
  } else if (plan_matched_program(p, m, own) || plan_rounded_emulation(p, m, own)) {
    return p;
  } else if (!own.float_recipe && !faithful_emulation(m, own.name)) {
    fallback = unfaithful_emulation_reason(m, own, p.precision);
  } else if (try_rule(p, m, BoundBasis::kReference)) {
    plan_reference_basis(p, m, own);
    return p;
  } else {
    fallback = no_reference_row(own.float_recipe, p.precision, m.backend);
  }
  p.against = "golden";
  p.widen_by.clear();
  if (try_rule(p, m, BoundBasis::kGolden)) p.why = "against the float32 golden (" + fallback + ")";
  return p;
}

}  // namespace

JudgePlan plan_judgement(const Manifest& m, const PrecisionHere& here, bool use_truth) {
  JudgePlan p = plan_for(m, here, use_truth);
  // Where the judgement does not already hold the golden to truth (only a float column widened
  // by the golden does), the golden is checked against the truth the bundle carries: a golden
  // edited with its hash, or computed from another model state, is not a reference a column may
  // pass against, nor a basis for the recipe's cost.
  if (use_truth && !(p.against == "float64" && p.widen_by == "golden") && has_reference(m, "float64"))
    p.golden_truth = "float64";
  return p;
}

std::string golden_disagrees(const JudgePlan& plan, const HostTensor& golden,
                             const std::function<const HostTensor&(const std::string&)>& reference_of) {
  if (plan.golden_truth.empty() || is_integer_dtype(golden.dtype)) return "";
  const HostTensor& truth = reference_of(plan.golden_truth);
  return references_disagree("the float32 golden", "float32", reference_error(golden, truth),
                             reference_range(truth));
}

// The match criterion admits one step up to the float32 rounding of the dequantized values it is
// measured on (python/etproof/export/references.py STEP_ROUNDING, held equal by a test): an output spans
// at most 256 steps, so two float32 values differ from their exact difference by at most
// 2 x 2^-24 x 256 = 2^-15 steps; 2^-10 admits that 32 times over.
constexpr double kStepRounding = 0x1p-10;

Bound matched_program_bound(const Bound& row, const ProgramAtExport& x) {
  Bound b = row;
  b.atol = kAtolFloor;
  b.rtol = 0;
  b.atol_range = 0;
  b.atol_qsteps = kReferenceMargin * (kMatchSteps + kStepRounding);
  b.atol_range_unquantized =
      kReferenceMargin * kExplainableRoundoffs * unit_roundoff("float32");
  b.target = false;
  b.caller_supplied = false;
  b.source = "the program matched its recipe's emulation at export (" + at_export_text(x) +
             "; matched: within " + detail::format_number(kMatchSteps, 3) +
             " output step where the scale is recorded, else within 2^14 float32 unit roundoffs "
             "of the range): atol " + detail::format_number(b.atol_qsteps, 3) +
             " output steps, or " + detail::format_number(b.atol_range_unquantized, 3) +
             "·max|ref| where no scale is recorded (references.h, kReferenceMargin x the "
             "criterion); cosine and SQNR floors the recipe's row's";
  return b;
}

std::string fallback_note(const JudgePlan& plan, size_t fell, size_t judged) {
  if (!plan.fallback || fell == 0) return "";
  return "; " + std::to_string(fell) + " of " + std::to_string(judged) +
         " float outputs judged against the float32 golden by the recipe's golden row instead: "
         "widened by their " + plan.widen_by + " emulation, no bound or none stricter than that "
         "row's was left";
}

RecipeCost recipe_cost(const std::string& name, const HostTensor& emulation,
                       const HostTensor& golden, bool classifier,
                       const std::optional<Budget>& budget) {
  RecipeCost c;
  c.reference = name;
  const ReferenceError e = reference_error(emulation, golden);
  c.max_abs_error = e.max_abs_error;
  c.cosine = e.cosine;
  c.sqnr_db = e.sqnr_db;
  if (classifier && !golden.shape.empty() && golden.numel() > 0) {
    // argmax per row of the last axis (the classes)
    const size_t n = static_cast<size_t>(golden.shape.back());
    const std::vector<double> a = emulation.to_double(), g = golden.to_double();
    for (size_t row = 0; n && row * n < g.size(); ++row) {
      auto first = [&](const std::vector<double>& v) {
        return std::max_element(v.begin() + row * n, v.begin() + (row + 1) * n) - v.begin();
      };
      ++c.top1_rows;
      if (first(a) == first(g)) ++c.top1_agreed;
    }
    c.top1_agrees = c.top1_agreed == c.top1_rows;
  }
  if (budget) {
    std::vector<std::string> over;
    if (budget->min_sqnr_db && !(c.sqnr_db >= *budget->min_sqnr_db))
      over.push_back("SQNR " + detail::sqnr_text(c.sqnr_db) + " dB < budget " +
                     detail::format_number(*budget->min_sqnr_db, 4) + " dB");
    if (budget->min_cosine && !(c.cosine >= *budget->min_cosine))
      over.push_back("cosine " + detail::cosine_text(c.cosine) + " < budget " +
                     detail::cosine_text(*budget->min_cosine));
    c.over_budget = detail::join(over, "; ");
  }
  return c;
}

std::optional<Budget> effective_budget(const std::optional<Budget>& manifest,
                                       const std::optional<Budget>& caller) {
  if (!caller) return manifest;
  Budget b = manifest.value_or(Budget{});
  if (caller->min_sqnr_db) b.min_sqnr_db = caller->min_sqnr_db;
  if (caller->min_cosine) b.min_cosine = caller->min_cosine;
  if (caller->top1_agreement) b.top1_agreement = caller->top1_agreement;
  if (caller->min_greedy_tokens) b.min_greedy_tokens = caller->min_greedy_tokens;
  return b;
}

void parse_budget_argument(const std::string& kv, Budget& b) {
  const std::string forms =
      "pass --budget KEY=VALUE with KEY one of min_sqnr_db (dB), min_cosine (in [-1, 1]), "
      "top1_agreement (in [0, 1]), min_greedy_tokens (a whole number >= 1), e.g. --budget "
      "min_sqnr_db=20 --budget top1_agreement=0.9";
  const size_t eq = kv.find('=');
  if (eq == std::string::npos)
    throw Error(ErrorKind::kInvalidArgument, "--budget " + kv + " has no '='", forms);
  const std::string key = kv.substr(0, eq), text = kv.substr(eq + 1);
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    throw Error(ErrorKind::kInvalidArgument,
                "--budget " + key + ": \"" + text + "\" is not a finite number", forms);
  auto in = [&](double lo, double hi, const char* range) {
    if (v < lo || v > hi)
      throw Error(ErrorKind::kInvalidArgument,
                  "--budget " + key + "=" + text + " is outside " + range, forms);
    return v;
  };
  if (key == "min_sqnr_db")
    b.min_sqnr_db = v;
  else if (key == "min_cosine")
    b.min_cosine = in(-1, 1, "[-1, 1]");
  else if (key == "top1_agreement")
    b.top1_agreement = in(0, 1, "[0, 1]");
  else if (key == "min_greedy_tokens") {
    if (v != std::floor(v)) throw Error(ErrorKind::kInvalidArgument, "--budget " + key + "=" + text + " is not a whole number", forms);
    b.min_greedy_tokens = static_cast<int64_t>(in(1, 1e6, "[1, 1000000]"));
  } else
    throw Error(ErrorKind::kInvalidArgument, "--budget has no key \"" + key + "\"", forms);
}

std::string describe_budget(const Budget& b) {
  std::vector<std::string> parts;
  if (b.min_sqnr_db) parts.push_back("SQNR ≥ " + detail::format_number(*b.min_sqnr_db, 4) + " dB");
  if (b.min_cosine) parts.push_back("cosine ≥ " + detail::cosine_text(*b.min_cosine));
  if (b.top1_agreement)
    parts.push_back("top-1 agreement ≥ " + detail::format_number(*b.top1_agreement, 4));
  if (b.min_greedy_tokens) parts.push_back("greedy tokens ≥ " + std::to_string(*b.min_greedy_tokens));
  return detail::join(parts, ", ");
}

}  // namespace etproof
