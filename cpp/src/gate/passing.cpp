// gate/passing.cpp — the minimum passing bound of one output (etproof/gate/gate.h: PassingBound).
#include <cmath>
#include <limits>

#include "etproof/gate/gate.h"
#include "core/common.h"

namespace etproof {

namespace {
// The lower of `slot` and `v` (NaN, once seen, stays: no floor passes it).
void lowest(std::optional<double>& slot, double v) {
  if (slot && std::isnan(*slot)) return;
  if (!slot || std::isnan(v) || v < *slot) slot = v;
}
}  // namespace

PassingBound passing_bound(const TensorReport& t) {
  PassingBound p;
  p.atol = t.max_abs_error;
  // An element that changed sign with |r| above η = atol / noise_margin fails the sign-flip rule.
  if (t.sign_flips > 0 && t.noise_margin > 0)
    p.atol = std::max(p.atol, t.noise_margin * std::fabs(t.sign_flip_reference));
  p.atol_of_range = t.reference_range > 0 ? p.atol / t.reference_range
                    : p.atol > 0          ? std::numeric_limits<double>::infinity()
                                          : 0.0;
  if (!t.cosine_skipped) lowest(p.min_cosine, t.cosine);
  if (!t.sqnr_skipped) lowest(p.min_sqnr_db, t.sqnr_db);
  for (const SliceReport& s : t.slices) {
    if (!s.cosine_skipped) lowest(p.min_cosine, s.cosine);
    if (!s.sqnr_skipped) lowest(p.min_sqnr_db, s.sqnr_db);
  }
  p.thresholds = t.measured;
  return p;
}

void add_passing(PassingBound& into, const PassingBound& p) {
  into.atol = std::max(into.atol, p.atol);
  into.atol_of_range = std::max(into.atol_of_range, p.atol_of_range);
  if (p.min_cosine) lowest(into.min_cosine, *p.min_cosine);
  if (p.min_sqnr_db) lowest(into.min_sqnr_db, *p.min_sqnr_db);
  for (const auto& [name, v] : p.thresholds) {
    auto it = into.thresholds.find(name);
    if (it == into.thresholds.end()) {
      into.thresholds[name] = v;
      continue;
    }
    bool at_least = false;  // a "≥" threshold: the lowest measured is the one that passes all
    for (const RuleThreshold& r : rule_thresholds())
      if (r.name == name) at_least = r.relation == "≥";
    it->second = at_least ? std::min(it->second, v) : std::max(it->second, v);
  }
}

nlohmann::json to_json(const PassingBound& p) {
  using detail::json_number;
  nlohmann::json j = {{"atol", json_number(p.atol)},
                      {"atol_of_range", json_number(p.atol_of_range)},
                      {"min_cosine", json_number(p.min_cosine)},
                      {"min_sqnr_db", json_number(p.min_sqnr_db)}};
  if (!p.thresholds.empty()) {
    nlohmann::json th = nlohmann::json::object();
    for (const auto& [name, v] : p.thresholds) th[name] = json_number(v);
    j["thresholds"] = th;
  }
  return j;
}

std::string passing_bound_text(const PassingBound& p) {
  std::string s = "atol " + detail::format_number(p.atol, 2);
  if (std::isfinite(p.atol_of_range) && p.atol > 0)
    s += " (" + detail::format_number(p.atol_of_range, 2) + " of the range)";
  if (p.min_cosine) s += ", cosine " + detail::cosine_text(*p.min_cosine);
  if (p.min_sqnr_db) s += ", SQNR " + detail::sqnr_text(*p.min_sqnr_db) + " dB";
  for (const auto& [name, v] : p.thresholds) s += ", " + name + " " + detail::format_number(v, 3);
  return s;
}

}  // namespace etproof
