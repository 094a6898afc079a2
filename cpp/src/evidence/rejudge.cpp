// etproof/evidence/rejudge.cpp — recorded evidence judged again under other bounds
// (etproof/evidence/rejudge.h).
#include "etproof/evidence/rejudge.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "etproof/replay/matrix.h"
#include "core/common.h"

namespace etproof {

namespace {
using json = nlohmann::json;
using detail::format_number;

// The rules each bound field replaces (cpp/src/gate/rules.h's names).
const std::vector<std::string> kAtolRules = {"allclose", "sign-flip"};

std::string str(const json& r, const char* key) {
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A recorded number (json_number's spelling), from numbers.passing_bound.KEY, else numbers.FALLBACK.
std::optional<double> measured(const json& numbers, const char* key, const char* fallback) {
  if (auto pb = numbers.find("passing_bound"); pb != numbers.end() && pb->is_object() && pb->contains(key))
    return detail::read_json_number(pb->at(key));
  if (auto it = numbers.find(fallback); it != numbers.end()) return detail::read_json_number(*it);
  return std::nullopt;
}

bool judged_status(const std::string& s) {
  return s == "agreed" || s == "agreed-undelegated" || s == "drifted" || s == "over-budget" || s == "xfail" ||
         s == "xpass";
}

// One rule replaced by the new bound, judged on the record's number; false (with `why`) when it
// fails, nullopt (with `refusal`) when the record lacks the number.
struct Check {
  bool ok = true;
  std::vector<std::string> why;
  std::string refusal;
};

void check(Check& c, const std::optional<double>& v, const std::string& what, double limit, bool at_most) {
  if (!c.refusal.empty()) return;
  if (!v) {
    c.refusal = "the record has no " + what + " to judge";
    return;
  }
  const bool pass = at_most ? *v <= limit : *v >= limit;  // NaN fails both
  c.ok = c.ok && pass;
  c.why.push_back(what + " " + format_number(*v, 4) + (pass ? (at_most ? " ≤ " : " ≥ ") : (at_most ? " > " : " < ")) +
                  format_number(limit, 4));
}

// Whether the record's faithfulness, re-derived: its failed rules where recorded, else its status.
std::optional<std::vector<std::string>> failed_rules(const json& numbers) {
  auto it = numbers.find("failed_rules");
  if (it == numbers.end() || !it->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const json& r : *it)
    if (r.is_string()) out.push_back(r.get<std::string>());
  return out;
}

Rejudged judge_one(const json& r, const RejudgeBound& b) {
  Rejudged j{str(r, "id"), str(r, "time_utc"), str(r, "kind"), str(r, "model"), str(r, "backend"), str(r, "recipe"),
             "", str(r, "status"), std::nullopt, false, false, ""};
  if (const json& m = r.at("machine"); m.is_object() && m.value("emulated", false)) j.machine = m.value("profile", "");
  const json& numbers = r.at("numbers");
  const std::optional<std::vector<std::string>> rules = failed_rules(numbers);
  // An xfail record covers a drift or a recipe over its budget: its failed rules say which.
  const bool xfail_over = j.recorded == "xfail" && rules && rules->empty();
  const bool recorded_faithful = j.recorded == "agreed" || j.recorded == "agreed-undelegated" ||
                                 j.recorded == "over-budget" || j.recorded == "xpass" || xfail_over;
  // The rules the record failed that the new bound does not replace.
  std::vector<std::string> kept;
  for (const std::string& rule : rules.value_or(std::vector<std::string>{})) {
    const bool replaced = (b.atol && std::find(kAtolRules.begin(), kAtolRules.end(), rule) != kAtolRules.end()) ||
                          (b.min_cosine && rule == "cosine") || (b.min_sqnr_db && rule == "sqnr");
    if (!replaced) kept.push_back(rule);
  }
  const bool any_rule_bound = b.atol || b.min_cosine || b.min_sqnr_db;
  if (!recorded_faithful && !rules && any_rule_bound) {
    j.why = "the record does not say which rules failed (recorded before etproof kept them): re-run it to record them";
    return j;
  }
  Check c;
  if (b.atol) check(c, measured(numbers, "atol", "max_abs_error"), "max |a - r|", *b.atol, true);
  if (b.min_cosine) check(c, measured(numbers, "min_cosine", "cosine"), "cosine", *b.min_cosine, false);
  if (b.min_sqnr_db) check(c, measured(numbers, "min_sqnr_db", "sqnr_db"), "SQNR dB", *b.min_sqnr_db, false);
  if (!c.refusal.empty()) {
    j.why = c.refusal;
    return j;
  }
  const bool faithful = rules ? kept.empty() && c.ok : recorded_faithful && c.ok;
  if (!kept.empty()) c.why.push_back("still fails " + detail::join(kept));
  bool over = j.recorded == "over-budget" || xfail_over;
  if (b.budget_min_sqnr_db && faithful) {
    const std::optional<double> cost =
        numbers.contains("cost_sqnr_db") ? detail::read_json_number(numbers.at("cost_sqnr_db")) : std::nullopt;
    if (cost) {
      over = !(*cost >= *b.budget_min_sqnr_db);
      c.why.push_back("recipe cost SQNR " + format_number(*cost, 4) + " dB" + (over ? " < " : " ≥ ") + "budget " +
                      format_number(*b.budget_min_sqnr_db, 4));
    } else if (!rules) {
      j.why = "the record has no recipe cost (cost_sqnr_db, recorded before etproof kept it) to judge a budget on";
      return j;
    } else {  // recorded by this etproof: no emulation measured, so the recipe costs nothing to judge
      over = false;
      c.why.push_back("no recipe cost (no emulation): within any budget");
    }
  }
  j.now = !faithful ? Status::kDrifted
          : over    ? Status::kOverBudget
          : j.recorded == "agreed-undelegated" ? Status::kAgreedUndelegated
                                                : Status::kAgreed;
  const std::string base = j.recorded == "xfail" ? (xfail_over ? "over-budget" : "drifted")
                           : j.recorded == "xpass" ? "agreed"
                                                   : j.recorded;
  j.changed = base != to_string(*j.now);
  if (!rules && !any_rule_bound) c.why.push_back("as recorded (no failed rules kept)");
  else if (rules && !any_rule_bound && j.changed) c.why.push_back("its failed rules say otherwise");
  j.now_fails = j.changed && fails_run(*j.now) && !fails_run(*status_from_string(base));
  j.why = detail::join(c.why, "; ");
  return j;
}

std::string label(const Rejudged& j) {
  return j.time_utc.substr(0, 10) + " " + j.kind + " " + (j.model.empty() ? "" : j.model + " ") + j.backend + "/" +
         j.recipe + (j.machine.empty() ? "" : " @ " + j.machine);
}

std::string bound_text(const RejudgeBound& b) {
  std::vector<std::string> parts;
  if (b.atol) parts.push_back("max |a - r| ≤ " + format_number(*b.atol, 4));
  if (b.min_cosine) parts.push_back("cosine ≥ " + format_number(*b.min_cosine, 6));
  if (b.min_sqnr_db) parts.push_back("SQNR ≥ " + format_number(*b.min_sqnr_db, 4) + " dB");
  if (b.budget_min_sqnr_db) parts.push_back("budget min_sqnr_db " + format_number(*b.budget_min_sqnr_db, 4));
  return parts.empty() ? "the recorded bounds" : detail::join(parts, ", ");
}
}  // namespace

RejudgeReport rejudge(const std::vector<json>& records, const RejudgeBound& bound) {
  RejudgeReport out;
  out.bound = bound;
  for (const json& r : records) {
    if (str(r, "half") != "runtime" || !judged_status(str(r, "status")) || !r.contains("numbers") ||
        !r.at("numbers").is_object())
      continue;
    const std::string kind = str(r, "kind");
    if (kind != "matrix" && kind != "parity") continue;
    Rejudged j = judge_one(r, bound);
    if (!j.now)
      ++out.refused;
    else if (j.changed)
      ++out.changed;
    else
      ++out.unchanged;
    out.now_fail += j.now_fails ? 1 : 0;
    out.records.push_back(std::move(j));
  }
  return out;
}

std::string to_text(const RejudgeReport& r) {
  std::ostringstream os;
  os << "rejudge: " << r.records.size() << " judged runtime records of " << detail::join(r.ledgers) << "\n";
  os << "under: " << bound_text(r.bound)
     << (r.bound.empty() ? "" : " (the rest of each record's bound as recorded)") << "\n";
  for (const Rejudged& j : r.records)
    if (j.now && j.changed)
      os << "  " << label(j) << ": " << j.recorded << " -> " << to_string(*j.now) << ": " << j.why << "\n";
  std::map<std::string, size_t> refusals;
  for (const Rejudged& j : r.records)
    if (!j.now) ++refusals[j.why];
  for (const auto& [why, n] : refusals) os << "refused (" << n << "): " << why << "\n";
  os << "result: " << r.unchanged << " unchanged, " << r.changed << " changed (" << r.now_fail
     << " now failing), " << r.refused << " refused\n";
  return fit_text(os.str());
}

json to_json(const RejudgeReport& r) {
  json records = json::array();
  for (const Rejudged& j : r.records)
    records.push_back({{"id", j.id}, {"time_utc", j.time_utc}, {"kind", j.kind}, {"model", j.model},
                       {"backend", j.backend}, {"recipe", j.recipe}, {"machine", j.machine},
                       {"recorded", j.recorded}, {"now", j.now ? json(to_string(*j.now)) : json(nullptr)},
                       {"changed", j.changed}, {"why", j.why}});
  auto opt = [](const std::optional<double>& v) { return v ? detail::json_number(*v) : json(nullptr); };
  return {{"bound", {{"atol", opt(r.bound.atol)}, {"min_cosine", opt(r.bound.min_cosine)},
                     {"min_sqnr_db", opt(r.bound.min_sqnr_db)}, {"budget_min_sqnr_db", opt(r.bound.budget_min_sqnr_db)}}},
          {"ledgers", r.ledgers},
          {"counts", {{"unchanged", r.unchanged}, {"changed", r.changed}, {"refused", r.refused},
                      {"now_fail", r.now_fail}}},
          {"records", records}};
}

}  // namespace etproof
