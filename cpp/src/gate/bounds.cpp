// The bound table (docs/design.md §5): every tolerance etproof derives, one row per term in
// data/bounds.json (each citing its measurement), embedded at configure time and read here;
// derive_bound / override_bound / resolve_bound over it. The rules that use a bound are gate.cpp.
#include "etproof/gate/gate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "etproof/core/error.h"
#include "etproof/core/schema.h"
#include "etproof/bound_table_data.h"  // generated: kBoundTableJson, kBoundTablePath
#include "core/common.h"
#include "core/json_parse.h"
#include "gate/rules.h"

namespace etproof {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// The bound table — the one home of every tolerance etproof derives: data/bounds.json, one row
// per term (schema/bounds.schema.json says what each field means; each row's `source` is its
// citation, its `why` the reasoning). The numbers live there; how they combine is this file's.
//
// A bound is the sum of terms along independent axes: what the recipe did to the weights and
// activations (quantization) and what the delegate computes in (precision), plus the compute unit
// where a backend records one. derive_bound adds the atol and rtol terms, multiplies the cosine
// floors and adds the noise powers the SQNR floors allow, so an int8 model on a float16 delegate
// is charged for both.
//
// Every term is SCALE-FREE, so one table fits logits, probabilities, unit-norm embeddings and
// large activations alike (gate.h: resolve_bound turns a rule into numbers per output tensor):
//   atol_range  — a fraction of the output's reference range R = max|reference|: the error a
//                 computation makes is proportional to the magnitudes flowing through it, and R
//                 is the one scale every output has;
//   atol_qsteps — for a quantization term, the same term in quantization steps of the output
//                 (outputs[i].quantization.scale in the manifest, recorded for int8-static);
//                 used instead of the range form where the scale is recorded;
//   rtol, min_cosine, min_sqnr_db — scale-free already (min_sqnr_db null in the file: the term
//                 adds no noise, +inf here).
// plus the absolute floor kAtolFloor (gate.h) on every derived atol, for all-zero references.
//
// Every measured number is a measurement run by this binary's runtime (`etproof
// measure-tolerances`, cpp/src/replay/tolerances.cpp), times one stated margin M = 4 in error
// amplitude:
//   atol_range  = M × the worst max|a − r| / R over every output of every case, rounded up
//   atol_qsteps = M × the worst max|a − r| / scale, rounded up
//   min_cosine  = 1 − M² × the worst (1 − cosine)   (1 − cosine grows with the square of the
//                                                     error amplitude), rounded down
//   min_sqnr_db = the worst SQNR − 20·log10(M) = worst − 12.04 dB (M× the noise amplitude is
//                 M² its power), rounded down.
//   rtol        = 0 where measured: the worst error did not grow with |r| beyond the range term.
//                 The one exception is float32's rtol, float32's own rounding bound (its row).
// Cells recorded as expected failures (DIR/xfail.json) are excluded from the worst figures.
// measure-tolerances observes (recipe, precision) pairs, so each term is read off the pair that
// isolates it: precision terms off recipe fp32 (which adds nothing), recipe terms off precision
// float32 (whose term, ~1e-5 of the range, is negligible next to any quantization term).
// Rows marked `derived` are a numerical argument (unit roundoff), not a measurement (the float16
// row: 8 unit roundoffs, by the same margin; cpp/tests/unit/bound_table_test.cpp recomputes it).
// Reproduce (x86-64, ExecuTorch 1.5.1, XNNPACK from the wheel) — one command prints, per
// (recipe, precision), the worst observation in these terms, the table's term, whether the table
// covers it by the margin, and the term M× the observation suggests:
//   build/etproof measure-tolerances build/golden-set/bundles build/test-bundles
// Re-measure when ExecuTorch, XNNPACK or the golden set changes, and on each new machine class.
// ---------------------------------------------------------------------------------------------

constexpr const char* kRemedy =
    "fix data/bounds.json (schema/bounds.schema.json says what each field means) and rebuild";

// The declared threshold of that name, or nullptr.
std::optional<RuleThreshold> find_threshold(std::string_view name) {
  for (const RuleThreshold& t : rule_thresholds())
    if (t.name == name) return t;
  return std::nullopt;
}

std::string threshold_names() {
  std::string out;
  for (const RuleThreshold& t : rule_thresholds()) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out.empty() ? "none" : out;
}

bool holds_for(const BoundTerm& t, BoundBasis basis) {
  return std::find(t.bases.begin(), t.bases.end(), to_string(basis)) != t.bases.end();
}

// The rows of a document that follows schema/bounds.schema.json, in order; bases in the order
// golden, reference. Throws Error{kManifestInvalid} "ORIGIN: FIELD: problem; …" for every
// schema problem at once, then for a row repeating an earlier row's axis and key on a basis
// (derive_bound would never reach it).
std::vector<BoundTerm> read_rows(const json& doc, const std::string& origin) {
  if (auto problems = schema::validate(doc, schema::Document::kBounds); !problems.empty())
    throw Error(ErrorKind::kManifestInvalid, origin + ": " + detail::join(schema::problem_lines(problems), "; "),
                kRemedy);
  std::vector<BoundTerm> out;
  const json& rows = doc.at("rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    BoundTerm t;
    t.axis = r.at("axis").get<std::string>();
    t.key = r.at("key").get<std::string>();
    t.atol_range = r.at("atol_range").get<double>();
    t.atol_qsteps = r.at("atol_qsteps").get<double>();
    t.rtol = r.at("rtol").get<double>();
    t.min_cosine = r.at("min_cosine").get<double>();
    const json& sqnr = r.at("min_sqnr_db");
    t.min_sqnr_db = sqnr.is_null() ? std::numeric_limits<double>::infinity() : sqnr.get<double>();
    t.source = r.at("source").get<std::string>();
    t.target = r.at("target").get<bool>();
    t.derived = r.at("derived").get<bool>();
    if (r.contains("thresholds"))
      for (const auto& [name, value] : r.at("thresholds").items()) {
        if (!find_threshold(name))
          throw Error(ErrorKind::kManifestInvalid,
                      origin + ": rows[" + std::to_string(i) + "].thresholds." + name +
                          ": no gate rule declares a threshold of that name (declared: " + threshold_names() + ")",
                      kRemedy);
        t.thresholds[name] = value.get<double>();
      }
    const auto bases = r.at("bases").get<std::vector<std::string>>();
    for (BoundBasis b : {BoundBasis::kGolden, BoundBasis::kReference})
      if (std::find(bases.begin(), bases.end(), to_string(b)) != bases.end()) t.bases.emplace_back(to_string(b));
    for (size_t j = 0; j < out.size(); ++j)
      for (BoundBasis b : {BoundBasis::kGolden, BoundBasis::kReference})
        if (out[j].axis == t.axis && out[j].key == t.key && holds_for(out[j], b) && holds_for(t, b))
          throw Error(ErrorKind::kManifestInvalid,
                      origin + ": rows[" + std::to_string(i) + "]: " + t.axis + " '" + t.key + "' against the " +
                          std::string(to_string(b)) + " is already rows[" + std::to_string(j) + "]",
                      kRemedy);
    out.push_back(std::move(t));
  }
  return out;
}

// The embedded table, read once (thread-safe: a function-local static); throws as read_rows
// where the embedded file is bad (configure does not check it), on every call until it is fixed.
const std::vector<BoundTerm>& table() {
  static const std::vector<BoundTerm> rows = [] {
    const detail::JsonSource source{ErrorKind::kManifestInvalid, build::kBoundTablePath, kRemedy};
    const json doc = detail::parse_json(build::kBoundTableJson, source);
    return detail::reading_json(source, [&] { return read_rows(doc, build::kBoundTablePath); });
  }();
  return rows;
}

const BoundTerm* find_term(const std::vector<BoundTerm>& rows, const std::string& axis, const std::string& key,
                           BoundBasis basis) {
  for (const auto& t : rows)
    if (t.axis == axis && t.key == key && holds_for(t, basis)) return &t;
  return nullptr;
}

std::string known_keys(const std::vector<BoundTerm>& rows, const std::string& axis, BoundBasis basis) {
  std::string out;
  for (const auto& t : rows) {
    if (t.axis != axis || !holds_for(t, basis)) continue;
    if (!out.empty()) out += ", ";
    out += t.key;
  }
  return out.empty() ? "none" : out;
}

std::string fmt(double v, int precision = 6) { return detail::format_number(v, precision); }
using detail::cosine_text;

}  // namespace

std::string describe_bound(const Bound& b) {
  std::ostringstream os;
  os << "atol " << fmt(b.atol);
  if (b.atol_range != 0) os << " + " << fmt(b.atol_range, 4) << "·max|ref|";
  if (b.atol_qsteps != 0)
    os << " + (" << fmt(b.atol_qsteps, 4) << (b.atol_qsteps == 1 ? " quant step" : " quant steps") << ", or "
       << fmt(b.atol_range_unquantized, 4) << "·max|ref| where no output scale is recorded)";
  else if (b.atol_range_unquantized != 0)
    os << " + " << fmt(b.atol_range_unquantized, 4) << "·max|ref| (where no output scale is recorded)";
  os << " + rtol " << fmt(b.rtol) << "·|ref|, cosine ≥ " << cosine_text(b.min_cosine) << ", ";
  if (b.min_sqnr_db == -std::numeric_limits<double>::infinity())
    os << "no SQNR floor";
  else
    os << "SQNR ≥ " << fmt(b.min_sqnr_db, 4) << " dB";
  os << describe_thresholds(b);
  return os.str();
}

std::string describe_thresholds(const Bound& b) {
  std::string out;
  for (const auto& [name, value] : b.thresholds) {
    const auto spec = find_threshold(name);
    out += ", " + name + " " + std::string(spec ? spec->relation : "") + " " + fmt(value, 4);
  }
  return out;
}

nlohmann::json thresholds_json(const Bound& b) {
  json out = json::object();
  for (const auto& [name, value] : b.thresholds) out[name] = detail::json_number(value);
  return out;
}

double combine_threshold(ThresholdCombine how, const std::vector<double>& terms) {
  if (terms.empty())
    throw Error(ErrorKind::kInvalidArgument, "combine_threshold: no terms", "pass at least one term");
  if (how == ThresholdCombine::kNoisePower) return combine_sqnr_floors(terms);
  double out = how == ThresholdCombine::kMultiply ? 1 : 0;
  for (double t : terms) out = how == ThresholdCombine::kMultiply ? out * t : out + t;
  return out;
}

double reference_range(const HostTensor& reference) {
  double r = 0;
  for (double v : reference.to_double())
    if (std::isfinite(v)) r = std::max(r, std::fabs(v));
  return r;
}

Bound resolve_bound(const Bound& rule, double range, const std::optional<double>& quant_scale) {
  if (!rule.scale_relative()) return rule;
  Bound b = rule;
  const bool stepped = quant_scale && *quant_scale > 0 && rule.atol_qsteps != 0;
  b.atol = rule.atol + rule.atol_range * range +
           (stepped ? rule.atol_qsteps * *quant_scale : rule.atol_range_unquantized * range);
  b.atol_range = b.atol_qsteps = b.atol_range_unquantized = 0;
  return b;
}

double combine_sqnr_floors(const std::vector<double>& floors_db) {
  double noise = 0;  // relative noise power each floor allows, Σ 10^(−s/10)
  for (double s : floors_db)
    if (s != std::numeric_limits<double>::infinity()) noise += std::pow(10.0, -s / 10);
  return noise == 0 ? std::numeric_limits<double>::infinity() : -10 * std::log10(noise);
}

std::string_view to_string(BoundBasis b) {
  return b == BoundBasis::kGolden ? "golden" : "reference";
}

Bound derive_bound(const std::string& recipe, const std::string& precision,
                   const std::optional<std::string>& compute_unit, BoundBasis basis) {
  return derive_bound(table(), recipe, precision, compute_unit, basis);
}

namespace {

// The thresholds of the rows a bound is derived from, each combined as its rule declares.
std::map<std::string, double> combined_thresholds(const std::vector<const BoundTerm*>& terms) {
  std::map<std::string, std::vector<double>> by_name;
  for (const BoundTerm* t : terms)
    if (t)
      for (const auto& [name, value] : t->thresholds) by_name[name].push_back(value);
  std::map<std::string, double> out;
  for (const auto& [name, values] : by_name) out[name] = combine_threshold(find_threshold(name)->combine, values);
  return out;
}

}  // namespace

Bound derive_bound(const std::vector<BoundTerm>& rows, const std::string& recipe, const std::string& precision,
                   const std::optional<std::string>& compute_unit, BoundBasis basis) {
  // A recipe named with its backend ("openvino/int8-static-per-channel"): the backend's own row
  // wins, else the recipe's (a backend's own quantizer is measured on that backend).
  const BoundTerm* r = find_term(rows, "recipe", recipe, basis);
  if (const size_t slash = recipe.find('/'); !r && slash != std::string::npos)
    r = find_term(rows, "recipe", recipe.substr(slash + 1), basis);
  const BoundTerm* p = find_term(rows, "precision", precision, basis);
  const BoundTerm* c = compute_unit ? find_term(rows, "compute_unit", *compute_unit, basis) : nullptr;
  std::vector<std::string> missing;
  const std::string against = " against the " + std::string(to_string(basis));
  if (!r)
    missing.push_back("recipe \"" + recipe + "\"" + against + " (in the table: " +
                      known_keys(rows, "recipe", basis) + ")");
  if (!p)
    missing.push_back("precision \"" + precision + "\"" + against + " (in the table: " +
                      known_keys(rows, "precision", basis) + ")");
  if (compute_unit && !c)
    missing.push_back("compute unit \"" + *compute_unit + "\"" + against + " (in the table: " +
                      known_keys(rows, "compute_unit", basis) + ")");
  if (!missing.empty()) {
    std::string cause = "no measured bound for recipe \"" + recipe + "\" / precision \"" +
                        precision + "\"" +
                        (compute_unit ? " / compute unit \"" + *compute_unit + "\"" : "") +
                        ": the bound table has no entry for ";
    for (size_t i = 0; i < missing.size(); ++i) cause += (i ? "; " : "") + missing[i];
    throw Error(ErrorKind::kCapabilityUnavailable, cause,
                "pass --atol/--rtol/--min-cosine (and optionally --min-sqnr) as a caller bound, "
                "or measure this recipe and precision and add a row for it to data/bounds.json");
  }
  Bound b;
  std::string source;
  std::vector<double> floors;
  for (const BoundTerm* t : {r, p, c}) {
    if (!t) continue;
    if (t->atol_qsteps != 0) {
      b.atol_qsteps += t->atol_qsteps;
      b.atol_range_unquantized += t->atol_range;
    } else {
      b.atol_range += t->atol_range;
    }
    b.rtol += t->rtol;
    b.target = b.target || t->target;
    b.min_cosine *= t->min_cosine;
    floors.push_back(t->min_sqnr_db);
    if (!source.empty()) source += " + ";
    source += (t->axis == "compute_unit" ? std::string("compute unit") : t->axis) + " " + t->key + " [" +
              t->source + "]";
  }
  // No term with a floor: nothing was measured to set one, so no SQNR rule (not "exact").
  b.min_sqnr_db = combine_sqnr_floors(floors);
  if (b.min_sqnr_db == std::numeric_limits<double>::infinity())
    b.min_sqnr_db = -std::numeric_limits<double>::infinity();
  b.thresholds = combined_thresholds({r, p, c});
  b.atol = kAtolFloor;
  b.source = "derived: " + source;
  b.caller_supplied = false;
  return b;
}

void check_bound_override(const BoundOverride& o) {
  for (auto [v, flag] : {std::pair{o.atol, "--atol"}, {o.rtol, "--rtol"}, {o.min_cosine, "--min-cosine"},
                         {o.min_sqnr_db, "--min-sqnr"}})
    if (v && std::isnan(*v))
      throw Error(ErrorKind::kInvalidArgument, std::string(flag) + " is NaN",
                  "pass a number (--min-sqnr -inf turns the SQNR rule off)");
  for (auto [v, flag] : {std::pair{o.atol, "--atol"}, {o.rtol, "--rtol"}})
    if (v && *v < 0)
      throw Error(ErrorKind::kInvalidArgument, std::string(flag) + " " + fmt(*v, 12) + " is negative",
                  "pass a tolerance of 0 or more (it is a distance: |actual - reference|)");
  if (o.min_cosine && (*o.min_cosine < -1 || *o.min_cosine > 1))
    throw Error(ErrorKind::kInvalidArgument, "--min-cosine " + fmt(*o.min_cosine, 12) + " is outside [-1, 1]",
                "pass a cosine between -1 (the rule off) and 1 (identical direction)");
  for (const auto& [name, value] : o.thresholds) {
    if (!find_threshold(name))
      throw Error(ErrorKind::kInvalidArgument, "--threshold " + name + ": no gate rule declares a threshold of that name",
                  "name one of: " + threshold_names());
    if (std::isnan(value))
      throw Error(ErrorKind::kInvalidArgument, "--threshold " + name + " is NaN", "pass a number");
  }
}

std::string describe_override(const BoundOverride& o) {
  std::vector<std::string> given;
  for (auto [v, flag] : {std::pair{o.atol, "--atol"}, {o.rtol, "--rtol"}, {o.min_cosine, "--min-cosine"},
                         {o.min_sqnr_db, "--min-sqnr"}})
    if (v) given.push_back(std::string(flag) + " " + fmt(*v, 12));
  for (const auto& [name, value] : o.thresholds) given.push_back("--threshold " + name + "=" + fmt(value, 12));
  return detail::join(given, " ");
}

void parse_threshold_argument(const std::string& arg, BoundOverride& o) {
  const size_t eq = arg.find('=');
  const std::string remedy = "pass --threshold NAME=VALUE, NAME one of: " + threshold_names();
  if (eq == std::string::npos || eq == 0)
    throw Error(ErrorKind::kInvalidArgument, "--threshold '" + arg + "' is not NAME=VALUE", remedy);
  const std::string name = arg.substr(0, eq), text = arg.substr(eq + 1);
  if (!find_threshold(name))
    throw Error(ErrorKind::kInvalidArgument, "--threshold " + name + ": no gate rule declares a threshold of that name",
                remedy);
  double value = 0;
  size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw Error(ErrorKind::kInvalidArgument, "--threshold " + name + ": '" + text + "' is not a number", remedy);
  o.thresholds[name] = value;
}

Bound override_bound(const BoundOverride& o, const std::string& recipe,
                     const std::string& precision,
                     const std::optional<std::string>& compute_unit, BoundBasis basis) {
  check_bound_override(o);
  std::optional<Bound> derived;
  try {
    derived = derive_bound(recipe, precision, compute_unit, basis);
  } catch (const Error& e) {
    if (!(o.atol && o.rtol && o.min_cosine)) {
      std::vector<std::string> missing;
      if (!o.atol) missing.push_back("--atol");
      if (!o.rtol) missing.push_back("--rtol");
      if (!o.min_cosine) missing.push_back("--min-cosine");
      std::string m;
      for (size_t i = 0; i < missing.size(); ++i) m += (i ? ", " : "") + missing[i];
      throw Error(ErrorKind::kInvalidArgument,
                  e.cause() + ", so a partial caller bound cannot be completed (missing " + m + ")",
                  "pass all of --atol, --rtol and --min-cosine (--min-sqnr is optional)");
    }
  }
  Bound b = derived.value_or(Bound{});
  if (o.atol) {
    b.atol = *o.atol;
    b.atol_range = b.atol_qsteps = b.atol_range_unquantized = 0;  // absolute
  }
  if (o.rtol) b.rtol = *o.rtol;
  if (o.min_cosine) b.min_cosine = *o.min_cosine;
  if (o.min_sqnr_db) b.min_sqnr_db = *o.min_sqnr_db;
  for (const auto& [name, value] : o.thresholds) b.thresholds[name] = value;
  std::string source = "caller: " + describe_override(o);
  bool rest = !(o.atol && o.rtol && o.min_cosine && o.min_sqnr_db);
  if (derived)
    for (const auto& [name, value] : derived->thresholds) rest = rest || !o.thresholds.count(name);
  if (rest)
    source += derived ? "; the rest from the " + derived->source
                      : std::string("; no SQNR floor (no bound is derivable for this pair)");
  b.source = source;
  b.caller_supplied = true;
  return b;
}

std::vector<BoundTerm> bound_table() { return table(); }

std::vector<BoundTerm> parse_bound_table(const nlohmann::json& doc, const std::string& origin) {
  const detail::JsonSource source{ErrorKind::kManifestInvalid, origin, kRemedy};
  detail::check_json_depth(doc, source);
  return detail::reading_json(source, [&] { return read_rows(doc, origin); });
}

const char* embedded_bound_table_json() { return build::kBoundTableJson; }

nlohmann::json to_json(const Bound& b) {
  nlohmann::json j = {{"atol", b.atol},
          {"rtol", b.rtol},
          {"min_cosine", b.min_cosine},
          {"min_sqnr_db", detail::json_number(b.min_sqnr_db)},  // "-inf": no SQNR rule
          {"source", b.source},
          {"caller_supplied", b.caller_supplied},
          {"atol_range", b.atol_range},
          {"atol_qsteps", b.atol_qsteps},
          {"atol_range_unquantized", b.atol_range_unquantized},
          {"scale_relative", b.scale_relative()},
          {"target", b.target},
          {"rule", describe_bound(b)}};
  if (!b.thresholds.empty()) j["thresholds"] = thresholds_json(b);
  return j;
}

}  // namespace etproof
