// The coverage page's claims (coverage_claims.h): a record's status read back, the entries of one
// summary row sorted by half and status, and the row's cells — the export half, the runtime half
// and the claim (etproof/evidence/coverage.h lists the claims).
#include "evidence/coverage_claims.h"

#include <cmath>
#include <map>
#include <set>

#include "etproof/core/status.h"
#include "etproof/evidence/ledger.h"
#include "etproof/runtime/registry.h"
#include "core/json_parse.h"

using nlohmann::json;

namespace etproof::coverage_detail {
namespace {

using detail::read_json_number;

// What a record's status says, for the claims. A replay status (etproof/status.h) is read back
// with status_from_string and judged by its predicates; the words that are not replay statuses
// are in other_words(), the one place they are listed here.
enum class Other {
  kNone,                 // a replay status, or a word this binary does not know
  kExported,             // kExported: a bundle exists, with a delegate call where one is due
  kExportedUndelegated,  // kExportedUndelegated: a delegate backend's program without one
  kAvailable,            // export half: its probe lowered to the delegate; runtime half: the
                         // registry's RuntimeStatus::kAvailable, nothing run
  kRefused,              // the export half's probe refused (its toolchain is missing)
  kRemovedUpstream,      // the backend table's and the registry's "removed-upstream"
  kRegistryOnly,         // the registry's "linked-not-registered" / "no-runtime": nothing run
  kFailed,               // a probe failure, as ledgers before the status vocabulary wrote it
};

// The words, from the enums that spell them where one does. The registry's "not-linked" and
// "unavailable" are spelled as the replay statuses are, and read as those.
const std::vector<std::pair<std::string, Other>>& other_words() {
  static const std::vector<std::pair<std::string, Other>> words = {
      {kExported, Other::kExported},
      {kExportedUndelegated, Other::kExportedUndelegated},
      {std::string(to_string(RuntimeStatus::kAvailable)), Other::kAvailable},
      {"refused", Other::kRefused},  // the export half's probe (python/etproof/backends.py)
      {std::string(to_string(RuntimeStatus::kRemovedUpstream)), Other::kRemovedUpstream},
      {std::string(to_string(RuntimeStatus::kLinkedNotRegistered)), Other::kRegistryOnly},
      {std::string(to_string(RuntimeStatus::kNoRuntime)), Other::kRegistryOnly},
      {"failed", Other::kFailed},
  };
  return words;
}

struct Reading {
  std::optional<Status> status;
  Other other = Other::kNone;
};

Reading read_status(const std::string& st) {
  Reading r;
  r.status = status_from_string(st);
  if (!r.status)
    for (const auto& [word, other] : other_words())
      if (st == word) r.other = other;
  return r;
}

Reading reading_of(const json& r) { return read_status(s(r, "status")); }

// The claims' predicates.
bool ran_ok(const Reading& r) { return r.status == Status::kAgreed; }
bool lowered(const Reading& r) { return r.other == Other::kExported || r.other == Other::kAvailable; }
// A failure of the run (fails_run) other than an unexpected pass or a recipe over its budget,
// which have claims of their own (the export half's export-failed is never a runtime record); or
// an old ledger's probe "failed".
bool run_failure(const Reading& r) {
  return (r.status && fails_run(*r.status) && *r.status != Status::kXpass &&
          *r.status != Status::kExportFailed && *r.status != Status::kOverBudget) ||
         r.other == Other::kFailed;
}

// The lowest of the values seen (a NaN, once seen, stays: it is the worst).
void lowest(std::optional<double>& slot, const std::optional<double>& v) {
  detail::keep_worst(slot, v, /*larger_is_worse=*/false);
}

std::string newest_date(const std::vector<const Entry*>& es) {
  std::string d;
  for (auto* e : es) d = std::max(d, date_of(*e->r));
  return d;
}

bool all_stale(const std::vector<const Entry*>& es) {
  if (es.empty()) return false;
  for (auto* e : es)
    if (e->stale.empty()) return false;
  return true;
}

// " **(stale)**" when every entry of `es` is stale; "" otherwise.
std::string stale_mark(const std::vector<const Entry*>& es) {
  return all_stale(es) ? std::string(" **(stale)**") : std::string();
}

// Whether any entry's status reads as `other`.
bool has(const std::vector<const Entry*>& es, Other other) {
  for (auto* e : es)
    if (reading_of(*e->r).other == other) return true;
  return false;
}

// "status (note N)" for each distinct status; the reason in full in `notes`.
std::string statuses_text(const std::vector<const Entry*>& es, Notes& notes) {
  std::vector<std::string> seen;
  std::string out;
  for (auto* e : es) {
    const std::string st = s(*e->r, "status");
    if (std::find(seen.begin(), seen.end(), st) != seen.end()) continue;
    seen.push_back(st);
    std::string reason = s(*e->r, "reason");
    out += (out.empty() ? "" : "; ") + st + (reason.empty() ? "" : " " + notes.cite(reason));
  }
  return out;
}

// One row's entries by half, and within a half by what their status says (an entry may sit in
// several buckets of its half; `exp` and `run` hold every entry of the half, in input order).
struct Buckets {
  std::vector<const Entry*> exp, run, run_ok, run_undeleg, run_bad, run_over, run_xfail, run_xpass,
      exp_ok, exp_undeleg;
};

Buckets sort_entries(const std::vector<const Entry*>& entries) {
  Buckets b;
  for (const Entry* e : entries) {
    const Reading st = reading_of(*e->r);
    if ((*e->r)["half"] == "export") {
      b.exp.push_back(e);
      if (lowered(st)) b.exp_ok.push_back(e);
      if (st.other == Other::kExportedUndelegated) b.exp_undeleg.push_back(e);
    } else {
      b.run.push_back(e);
      if (ran_ok(st)) b.run_ok.push_back(e);
      if (st.status == Status::kAgreedUndelegated) b.run_undeleg.push_back(e);
      if (run_failure(st)) b.run_bad.push_back(e);
      if (st.status == Status::kOverBudget) b.run_over.push_back(e);
      if (st.status == Status::kXfail) b.run_xfail.push_back(e);
      if (st.status == Status::kXpass) b.run_xpass.push_back(e);
    }
  }
  return b;
}

// The export-half cell: "lowers (N bundles + probe, DATE)" with the other statuses after "also";
// else the statuses seen with their notes; "—" without export evidence.
std::string export_cell(const Buckets& b, Notes& notes) {
  if (!b.exp_ok.empty()) {
    size_t bundles = 0;
    bool probe = false;
    for (auto* e : b.exp_ok)
      if (is_probe(*e->r)) probe = true;
      else ++bundles;
    std::string what_ = bundles ? plural(bundles, "bundle") : "";
    if (probe) what_ += std::string(what_.empty() ? "" : " + ") + "probe";
    std::string cell = "lowers (" + what_ + ", " + newest_date(b.exp_ok) + ")" + stale_mark(b.exp_ok);
    std::vector<const Entry*> other;
    for (auto* e : b.exp)
      if (!lowered(reading_of(*e->r))) other.push_back(e);
    if (!other.empty()) cell += "; also " + statuses_text(other, notes);
    return cell;
  }
  if (!b.exp.empty()) return statuses_text(b.exp, notes) + " (" + newest_date(b.exp) + ")" + stale_mark(b.exp);
  return "—";
}

// "agreed: N models, M cases[ + probe][; worst SQNR X dB, cosine Y]" over the agreeing runs. A
// case counts once however many records measured it (model|recipe|precision|case id), and records
// without case ids add their `cases` count.
std::string agreed_text(const std::vector<const Entry*>& run_ok) {
  std::set<std::string> models;
  std::set<std::string> case_keys;  // model|recipe|precision|case: a case a matrix and a parity
  size_t cases = 0;                 // run both measured counts once
  bool probe = false;
  std::optional<double> sqnr, cosine;
  for (auto* e : run_ok) {
    const json& r = *e->r;
    if (is_probe(r)) probe = true;
    else models.insert(s(r, "model"));
    if (r.contains("numbers") && r["numbers"].is_object()) {
      const json& n = r["numbers"];
      if (!is_probe(r)) {
        const json ids = n.value("case_ids", json());
        if (ids.is_array()) {
          for (const auto& id : ids)
            if (id.is_string())
              case_keys.insert(s(r, "model") + "|" + s(r, "recipe") + "|" + s(r, "precision") +
                               "|" + id.get<std::string>());
        } else {
          cases += count_of(n.value("cases", json())).value_or(0);
        }
      }
      lowest(sqnr, read_json_number(n.value("sqnr_db", json())));
      lowest(cosine, read_json_number(n.value("cosine", json())));
    }
  }
  cases += case_keys.size();
  std::string w;
  if (!models.empty()) w = plural(models.size(), "model") + ", " + plural(cases, "case");
  if (probe) w += std::string(w.empty() ? "" : " + ") + "probe";
  std::string text = "agreed: " + w;
  if (sqnr || cosine) {
    text += "; worst";
    if (sqnr) text += " SQNR " + sqnr_cell(*sqnr) + " dB";
    if (cosine) text += std::string(sqnr ? "," : "") + " cosine " + detail::cosine_text(*cosine);
  }
  return text;
}

// What the agreeing runs were judged against and by, and what the recipe cost: "; against its
// emulation (N models), the golden (M models); bound at its loosest SQNR ≥ F dB, cosine ≥ C;
// recipe cost SQNR down to X dB". The references are the records' `numbers.against` (an
// emulation, float64 truth or the golden: a column whose outputs all fell back to its golden row
// counts as judged against the golden); the bound is the lowest floors of their `numbers.bound`
// (ParityReport::bound: the column's row, as matrix and parity printed it; an SQNR floor of -inf,
// no SQNR rule, is left out); the cost is the lowest `numbers.cost_sqnr_db` (the recipe's
// emulation against the golden). A part without numbers is left out; "" when none has any.
std::string bound_and_cost_text(const std::vector<const Entry*>& run_ok) {
  std::map<std::string, std::set<std::string>> against;  // "its emulation" -> models
  std::optional<double> floor_sqnr, floor_cosine, cost;
  for (auto* e : run_ok) {
    const json& r = *e->r;
    if (is_probe(r) || !r.contains("numbers") || !r["numbers"].is_object()) continue;
    const json& n = r["numbers"];
    const std::string a = s(n, "against");
    if (!a.empty())
      against[a == "golden" ? "the golden" : a == "float64" ? "float64 truth" : "its emulation"]
          .insert(s(r, "model"));
    const json bound = n.value("bound", json());
    if (bound.is_object()) {
      const auto sqnr = read_json_number(bound.value("min_sqnr_db", json()));
      if (sqnr && std::isfinite(*sqnr)) lowest(floor_sqnr, sqnr);
      lowest(floor_cosine, read_json_number(bound.value("min_cosine", json())));
    }
    lowest(cost, read_json_number(n.value("cost_sqnr_db", json())));
  }
  std::string text;
  if (!against.empty()) {
    std::vector<std::string> groups;
    for (const auto& [what, models] : against)
      groups.push_back(what + " (" + plural(models.size(), "model") + ")");
    text += "; against " + detail::join(groups);
  }
  if (floor_sqnr || floor_cosine) {
    text += "; bound at its loosest";
    if (floor_sqnr) text += " SQNR ≥ " + sqnr_cell(*floor_sqnr) + " dB";
    if (floor_cosine) text += std::string(floor_sqnr ? "," : "") + " cosine ≥ " + detail::cosine_text(*floor_cosine);
  }
  if (cost) text += "; recipe cost SQNR down to " + sqnr_cell(*cost) + " dB";
  return text;
}

// "; also STATUS N cases, …" for the runtime entries that did not agree (statuses in order, each
// with the cases its records counted); "" when every one agreed.
std::string also_text(const std::vector<const Entry*>& run) {
  std::map<std::string, size_t> others;
  for (auto* e : run) {
    if (ran_ok(reading_of(*e->r))) continue;
    const std::string st = s(*e->r, "status");
    size_t c = 0;
    if (e->r->contains("numbers") && (*e->r)["numbers"].is_object())
      c = count_of((*e->r)["numbers"].value("cases", json())).value_or(0);
    others[st] += c;
  }
  std::string also;
  for (const auto& [st, c] : others)
    also += (also.empty() ? "" : ", ") + st + (c ? " " + plural(c, "case") : "");
  return also.empty() ? "" : "; also " + also;
}

// The runtime-half cell: what agreed (agreed_text, its date) and what else ran; else the statuses
// seen with their notes; "—" without runtime evidence.
std::string runtime_cell(const Buckets& b, Notes& notes) {
  if (!b.run_ok.empty())
    return agreed_text(b.run_ok) + " (" + newest_date(b.run_ok) + ")" + stale_mark(b.run_ok) +
           bound_and_cost_text(b.run_ok) + also_text(b.run);
  if (!b.run.empty()) return statuses_text(b.run, notes) + " (" + newest_date(b.run) + ")" + stale_mark(b.run);
  return "—";
}

// The claim: nothing is "works" on evidence weaker than a run. `emulated`: a run of the row was on
// an emulated machine, whose agreement is a claim level of its own.
std::string claim_of(const Buckets& b, bool emulated) {
  if (!b.run_ok.empty()) {
    std::string claim = (emulated ? "agrees under emulation" : "**works**") + stale_mark(b.run_ok);
    if (!b.run_bad.empty()) claim += ", with failures";
    return claim;
  }
  if (!b.run_undeleg.empty()) return "runs undelegated" + stale_mark(b.run_undeleg);
  if (!b.run_bad.empty()) {
    // Inconclusive alone: it ran, but its references could not judge it (neither works nor fails).
    const bool only_inconclusive = std::all_of(b.run_bad.begin(), b.run_bad.end(), [](const Entry* e) {
      return reading_of(*e->r).status == Status::kInconclusive;
    });
    return (only_inconclusive ? "ran, not judged (inconclusive)" : "fails at run time") + stale_mark(b.run_bad);
  }
  // Over budget: the program was faithful to its recipe (a run within its bound); the recipe's
  // cost broke the budget. A claim about the recipe on this model, not a backend failure.
  if (!b.run_over.empty())
    return std::string(emulated ? "faithful under emulation" : "faithful") + ", recipe over budget" +
           stale_mark(b.run_over);
  if (!b.run_xpass.empty())
    return "agreed against an expected failure (xpass: update the xfail record)" + stale_mark(b.run_xpass);
  if (!b.run_xfail.empty()) return "known failure (xfail)" + stale_mark(b.run_xfail);
  if (!b.exp_ok.empty()) {
    std::string claim = "lowers" + stale_mark(b.exp_ok);
    if (b.run.empty()) return claim + " (not run)";
    std::string st;
    for (auto* e : b.run) {
      const std::string x = s(*e->r, "status");
      if (st.find(x) == std::string::npos) st += (st.empty() ? "" : "/") + x;
    }
    return claim + " (not run: " + st + ")";
  }
  if (!b.exp_undeleg.empty()) return "lowers without a delegate" + stale_mark(b.exp_undeleg);
  if (has(b.exp, Other::kRemovedUpstream) || has(b.run, Other::kRemovedUpstream)) return "removed upstream";
  if (!b.exp.empty() && !b.run.empty() && !has(b.run, Other::kAvailable)) return "refused";
  if (!b.exp.empty())
    return "refused" + std::string(has(b.run, Other::kAvailable) ? " (runtime registered, unproven)" : "");
  if (!b.run.empty()) return has(b.run, Other::kAvailable) ? "registered, unproven (nothing run)" : "not runnable here";
  return "never run";
}

}  // namespace

Summary summarize(const std::vector<const Entry*>& entries, Notes& notes) {
  const Buckets b = sort_entries(entries);
  Summary out;
  out.export_cell = export_cell(b, notes);
  out.runtime_cell = runtime_cell(b, notes);
  // A run under emulation (machine.emulated, etproof/emulation.h) is evidence about the program
  // and the kernels, never about hardware: its agreement is a claim level of its own.
  const bool emulated = std::any_of(entries.begin(), entries.end(), [](const Entry* e) {
    const json m = e->r->value("machine", json::object());
    return m.is_object() && m.value("emulated", false) == true;
  });
  out.claim = claim_of(b, emulated);
  return out;
}

}  // namespace etproof::coverage_detail
