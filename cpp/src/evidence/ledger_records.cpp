// The evidence ledger's records (etproof/ledger.h), built from the typed reports of `backends`,
// `matrix` and `parity`: the bundle facts come with each report, statuses are to_string(Status).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "etproof/replay/backends_report.h"
#include "etproof/evidence/ledger.h"
#include "etproof/replay/bench.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/core/status.h"
#include "core/common.h"

using nlohmann::json;

namespace etproof {
namespace {

using detail::join;
using detail::json_number;

// A status as the ledger writes it (etproof/status.h).
json word(Status s) { return std::string(to_string(s)); }

// j[key] when it is a string, else "" (the export half's answer is another program's JSON).
std::string text(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json base_record(const RecordContext& ctx, const std::string& half, const std::string& backend) {
  json r = json::object();
  r["schema"] = kLedgerSchema;
  r["time_utc"] = ctx.time_utc;
  r["command"] = ctx.command;
  r["kind"] = ctx.kind;
  r["machine"] = ctx.machine;
  r["toolchain"] = ctx.toolchain;
  r["etproof_commit"] = ctx.commit;
  r["etproof_commit_source"] = ctx.commit_source;
  r["half"] = half;
  r["backend"] = backend;
  return r;
}

// A bundle's facts as its manifest records them, which every report carries.
struct BundleFacts {
  const std::string& bundle;
  const std::string& sha256;
  const std::string& created_utc;
  const std::map<std::string, std::string>& toolchain;
  const std::string& model;
  const std::string& recipe;
  const std::string& precision;
};

BundleFacts facts_of(const Column& c) {
  return {c.bundle, c.sha256, c.created_utc, c.toolchain, c.model, c.recipe, c.precision};
}
BundleFacts facts_of(const ParityReport& r) {
  return {r.bundle, r.bundle_sha256, r.bundle_created_utc, r.bundle_toolchain,
          r.model,  r.recipe,        r.precision};
}
BundleFacts facts_of(const RuntimeProbe& p) {
  return {p.bundle, p.bundle_sha256, p.bundle_created_utc, p.bundle_toolchain,
          p.model,  p.recipe,        p.precision};
}

// bundle, bundle_sha256, bundle_created_utc, bundle_toolchain, model, recipe, precision: the
// name always, the rest where known.
void add_facts(json& r, const BundleFacts& f) {
  r["bundle"] = f.bundle;
  if (!f.sha256.empty()) r["bundle_sha256"] = f.sha256;
  if (!f.created_utc.empty()) r["bundle_created_utc"] = f.created_utc;
  if (!f.toolchain.empty()) r["bundle_toolchain"] = f.toolchain;
  if (!f.model.empty()) r["model"] = f.model;
  if (!f.recipe.empty()) r["recipe"] = f.recipe;
  if (!f.precision.empty()) r["precision"] = f.precision;
}

// The bound as the ledger keeps it (the rule's text stays in the command's own output).
json bound_numbers(const Bound& b) {
  json out = {{"atol", json_number(b.atol)},
              {"rtol", json_number(b.rtol)},
              {"min_cosine", json_number(b.min_cosine)},
              {"min_sqnr_db", json_number(b.min_sqnr_db)},
              {"caller_supplied", b.caller_supplied}};
  if (!b.thresholds.empty()) out["thresholds"] = thresholds_json(b);
  return out;
}

// Worst numbers over a set of measurements: the largest max |a − r|, the lowest cosine and SQNR
// (a NaN is the worst of all: it is kept).
struct Worst {
  std::vector<std::string> case_ids;
  std::optional<double> max_abs, cosine, sqnr;
  std::optional<PassingBound> passing;  // the minimum passing bound over every output (gate.h)
  std::vector<std::string> failed_rules;  // the gate rules any output failed, each once
  std::optional<double> cost_sqnr;        // the recipe's cost: its emulation's lowest SQNR

  void add_rules(const std::vector<std::string>& rules) {
    for (const std::string& r : rules)
      if (std::find(failed_rules.begin(), failed_rules.end(), r) == failed_rules.end()) failed_rules.push_back(r);
  }

  void add_passing(const std::optional<PassingBound>& p) {
    if (!p) return;
    if (!passing) passing.emplace();
    etproof::add_passing(*passing, *p);
  }

  void add_case(const std::string& id) {
    if (std::find(case_ids.begin(), case_ids.end(), id) == case_ids.end()) case_ids.push_back(id);
  }
  void add(const std::optional<double>& max_abs_v, const std::optional<double>& cosine_v,
           const std::optional<double>& sqnr_v) {
    keep(max_abs, max_abs_v, true);
    keep(cosine, cosine_v, false);
    keep(sqnr, sqnr_v, false);
  }
  // `against`: what the numbers were measured against ("golden", "float64", an emulation).
  json to_json(const std::optional<Bound>& bound, const std::string& against) const {
    json n = json::object();
    if (!against.empty()) n["against"] = against;
    n["cases"] = case_ids.size();
    n["case_ids"] = case_ids;
    if (max_abs) n["max_abs_error"] = json_number(*max_abs);
    if (cosine) n["cosine"] = json_number(*cosine);
    if (sqnr) n["sqnr_db"] = json_number(*sqnr);
    if (bound) n["bound"] = bound_numbers(*bound);
    if (passing) n["passing_bound"] = etproof::to_json(*passing);
    if (passing || !failed_rules.empty()) n["failed_rules"] = failed_rules;
    if (cost_sqnr) n["cost_sqnr_db"] = json_number(*cost_sqnr);
    return n;
  }

 private:
  static void keep(std::optional<double>& slot, const std::optional<double>& v, bool larger) {
    detail::keep_worst(slot, v, larger);
  }
};

// A record's "repeats" (the ledger schema's): over the cases it covers, the runs each had, the most
// distinct outputs any gave and the largest difference; null where none ran more than once.
json repeats_json(const std::vector<const RepeatReport*>& reports) {
  const RepeatReport* first = nullptr;
  size_t distinct = 1;
  double worst = 0;
  bool failed = false;
  for (const RepeatReport* p : reports) {
    if (!p) continue;
    first = first ? first : p;
    distinct = std::max(distinct, p->distinct);
    worst = std::max(worst, p->max_abs_difference);
    failed = failed || !p->failed.empty();
  }
  if (!first) return nullptr;
  return {{"runs", first->runs}, {"fresh_loads", first->fresh_loads}, {"distinct", distinct},
          {"identical", distinct == 1 && !failed},
          {"max_abs_difference", std::isfinite(worst) && distinct > 1 ? json(worst) : json(nullptr)}};
}

// The reason of the matrix's xfail record for (model, backend, recipe) on `half` (a model of ""
// on either side matches any), or "".
std::string xfail_reason(const Matrix& m, const std::string& half, const std::string& model,
                         const std::string& backend, const std::string& recipe) {
  for (const XfailOutcome& x : m.xfail) {
    const XfailRecord& r = x.record;
    if (r.half == half && r.backend == backend && r.recipe == recipe &&
        (model.empty() || r.model.empty() || r.model == model))
      return r.reason;
  }
  return "";
}

// A matrix column's runtime records: one per status among its cells, in order of appearance.
// `said` collects (column, status) for the not-run lines that would repeat them.
void column_runtime_records(const RecordContext& ctx, const Matrix& m, size_t ci,
                            std::set<std::pair<size_t, Status>>& said, std::vector<json>& out) {
  const Column& col = m.columns[ci];
  std::vector<Status> order;
  std::map<Status, std::pair<Worst, std::vector<std::string>>> by_status;
  std::map<Status, std::vector<const RepeatReport*>> repeats;
  for (const Cell& c : m.cells) {
    if (c.column != ci) continue;
    if (!by_status.count(c.status)) order.push_back(c.status);
    repeats[c.status].push_back(c.repeats ? &*c.repeats : nullptr);
    auto& [w, details] = by_status[c.status];
    w.add_case(c.case_id);
    w.add(c.max_abs_error, c.cosine, c.sqnr_db);
    w.add_passing(c.passing);
    w.add_rules(c.failed_rules);
    detail::keep_worst(w.cost_sqnr, c.cost_sqnr_db, false);
    if (!c.detail.empty() && std::find(details.begin(), details.end(), c.detail) == details.end())
      details.push_back(c.detail);
  }
  for (const Status st : order) {
    const auto& [w, details] = by_status[st];
    json r = base_record(ctx, "runtime", col.backend);
    add_facts(r, facts_of(col));
    r["backend_ids"] = col.delegates;
    r["status"] = word(st);
    if (json rj = repeats_json(repeats[st]); !rj.is_null()) r["repeats"] = std::move(rj);
    said.insert({ci, st});
    // Numbers where the cases ran (judged, or measured without a bound); otherwise which cases
    // the status covers.
    if (is_judged(st) || st == Status::kNoBound || st == Status::kInconclusive)
      r["numbers"] = w.to_json(col.bound, col.against);
    else
      r["case_ids"] = w.case_ids;
    if (st == Status::kAgreed) {
      out.push_back(std::move(r));
      continue;
    }
    // An xfail's reason is its record's; an xpass's, what the cells say (update the record).
    std::string reason;
    if (st == Status::kXfail || (st == Status::kXpass && details.empty()))
      reason = xfail_reason(m, "runtime", col.model, col.backend, col.recipe);
    if (reason.empty()) reason = join(details, "; ");
    if (!reason.empty()) r["reason"] = reason;
    out.push_back(std::move(r));
  }
}

// A not-run line's record, or nullopt when its column's cells already said the same.
std::optional<json> not_run_record(const RecordContext& ctx, const Matrix& m, const NotRun& n,
                                   const std::set<std::pair<size_t, Status>>& said) {
  const bool xfail_line = n.status == Status::kXfail || n.status == Status::kXpass;
  const bool export_half =
      n.status == Status::kExportRefused || n.status == Status::kExportFailed ||
      (xfail_line && !xfail_reason(m, "export", n.model, n.backend, n.recipe).empty());
  json r = base_record(ctx, export_half ? "export" : "runtime", n.backend);
  // The column it belongs to, when one was found.
  for (size_t ci = 0; ci < m.columns.size(); ++ci) {
    const Column& col = m.columns[ci];
    if (col.backend != n.backend || col.recipe != n.recipe || col.machine != n.machine ||
        !(n.model.empty() || col.model.empty() || n.model == col.model))
      continue;
    if (!col.bundle.empty()) {
      if (said.count({ci, n.status})) return std::nullopt;
      add_facts(r, facts_of(col));
    }
    if (!col.bundle.empty() || !export_half) r["backend_ids"] = col.delegates;
    if (!col.precision.empty()) r["precision"] = col.precision;
    break;
  }
  if (!n.recipe.empty()) r["recipe"] = n.recipe;
  if (!n.model.empty()) r["model"] = n.model;
  r["status"] = word(n.status);
  std::string reason = n.reason;
  if (n.status == Status::kXfail) {
    const std::string xr = xfail_reason(m, export_half ? "export" : "runtime",
                                        r.value("model", std::string()), n.backend, n.recipe);
    if (!xr.empty()) reason = xr + (reason.empty() || reason == xr ? "" : " (" + reason + ")");
  }
  if (!reason.empty()) r["reason"] = reason;
  return r;
}

}  // namespace

std::vector<json> records_from_backends(const RecordContext& ctx, const RuntimeHalf& runtime,
                                        const json& export_half) {
  std::vector<json> out;
  // Export half: what the export half's probe answered, per key.
  if (export_half.is_array()) {
    for (const auto& e : export_half) {
      if (!e.is_object()) continue;
      const std::string backend = text(e, "backend"), status = text(e, "status");
      const std::string reason = text(e, "reason");
      json r = base_record(ctx, "export", backend);
      r["model"] = "one-operation probe";
      if (e.contains("delegates")) r["backend_ids"] = e["delegates"];
      r["status"] = status;
      if (!reason.empty()) r[status == "available" ? "detail" : "reason"] = reason;
      out.push_back(std::move(r));
    }
  }
  // Runtime half: per key, the probe's outcome where it replayed a bundle, else the registry's.
  for (const RuntimeKeyReport& k : runtime.keys) {
    const RuntimeProbe& p = k.probe;
    json r = base_record(ctx, "runtime", k.key);
    if (!p.bundle.empty()) add_facts(r, facts_of(p));
    r["backend_ids"] = k.ids;
    const std::string registry(to_string(k.status));
    r["registry"] = registry;
    if (p.outcome) {
      r["status"] = word(*p.outcome);
      if (is_agreement(*p.outcome) || *p.outcome == Status::kDrifted || *p.outcome == Status::kOverBudget)
        r["detail"] = p.detail;
      if (!is_agreement(*p.outcome)) r["reason"] = p.detail;
      if (p.max_abs_error || p.min_sqnr_db) {
        json n = {{"cases", p.cases}};
        if (p.max_abs_error) n["max_abs_error"] = json_number(*p.max_abs_error);
        if (p.min_sqnr_db) n["sqnr_db"] = json_number(*p.min_sqnr_db);
        r["numbers"] = n;
      }
    } else {
      // Nothing ran: the registry's answer (available but unproven, not-linked, …).
      std::string why = k.reason;
      if (p.status == "no-bundle" || (k.status == RuntimeStatus::kAvailable && !p.detail.empty()))
        why += (why.empty() ? "" : "; ") +
               (p.detail.starts_with("not run: ") ? p.detail : "not run: " + p.detail);
      r["status"] = registry;
      r["reason"] = why;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<json> records_from_matrix(const RecordContext& ctx, const Matrix& m) {
  std::vector<json> out;
  std::set<std::string> bundles_seen;           // DIR/BUNDLE with an export record
  std::set<std::pair<size_t, Status>> said;     // (column, status) recorded from the cells
  for (size_t ci = 0; ci < m.columns.size(); ++ci) {
    const Column& col = m.columns[ci];
    // Export half: the bundle exists, so it lowered (with the delegates of its program).
    if (!col.bundle.empty() && bundles_seen.insert(col.dir + "/" + col.bundle).second) {
      json r = base_record(ctx, "export", col.backend);
      add_facts(r, facts_of(col));
      r["backend_ids"] = col.delegates;
      const bool lowered = !col.delegates.empty() || col.backend == "portable";
      r["status"] = lowered ? kExported : kExportedUndelegated;
      if (!lowered)
        r["reason"] = "the bundle's program has no delegate call: the partitioner tagged nothing";
      out.push_back(std::move(r));
    }
    // A column run on an emulated machine is recorded under that machine (emulated: true).
    if (col.machine_record.is_object()) {
      RecordContext on = ctx;
      on.machine = col.machine_record;
      column_runtime_records(on, m, ci, said, out);
    } else {
      column_runtime_records(ctx, m, ci, said, out);
    }
  }
  // Columns (or parts of them) not measured, and the export half's refusals and failures; an
  // emulated machine's under that machine.
  std::map<std::string, json> emulated;  // label → record
  for (const Column& c : m.columns)
    if (!c.machine.empty() && c.machine_record.is_object()) emulated.emplace(c.machine, c.machine_record);
  for (const NotRun& n : m.not_run) {
    std::optional<json> r;
    if (const auto it = emulated.find(n.machine); !n.machine.empty() && it != emulated.end()) {
      RecordContext on = ctx;
      on.machine = it->second;
      r = not_run_record(on, m, n, said);
    } else {
      r = not_run_record(ctx, m, n, said);
    }
    if (r) out.push_back(std::move(*r));
  }
  return out;
}

std::vector<json> records_from_parity(const RecordContext& ctx, const ParityReport& p) {
  if (!p.manifest_read) return {};
  json r = base_record(ctx, "runtime", p.backend);
  add_facts(r, facts_of(p));
  r["backend_ids"] = p.delegates;
  const Error* e = p.first_error();
  if (!e && p.bound_error) e = &*p.bound_error;
  if (e) {
    r["status"] = word(status_of(*e));
    r["reason"] = "[" + std::string(to_string(e->kind())) + "] " + e->cause();
    return {r};
  }
  Worst w;
  std::vector<std::string> failures;
  for (const CaseReport& c : p.cases) {
    w.add_case(c.case_id);
    bool output_failed = false;
    for (const TensorReport& t : c.outputs) {
      w.add(t.max_abs_error, t.cosine,
            t.sqnr_skipped ? std::nullopt : std::optional<double>(t.sqnr_db));
      w.add_passing(passing_bound(t));
      w.add_rules(t.failed_rules);
      if (!t.passed) failures.push_back(c.case_id + "/" + t.output + ": " + t.failure);
      output_failed = output_failed || !t.passed;
    }
    // Failed on the recipe's cost alone (the budget: over-budget) or on an edited golden: the
    // case's detail says how.
    if (!c.passed && (!output_failed || c.status == Status::kNondeterministic) && !c.detail.empty())
      failures.push_back(c.case_id + ": " + c.detail);
    if (!output_failed && (c.status == Status::kDrifted || c.status == Status::kXfail))
      w.add_rules({"other"});  // a shape, an edited golden: no rule's numbers say
    for (const RecipeCost& k : c.costs) detail::keep_worst(w.cost_sqnr, k.sqnr_db, false);
  }
  const bool delegated = !p.delegates.empty() || p.backend == "portable";
  if (p.passed) {
    r["status"] = word(delegated ? Status::kAgreed : Status::kAgreedUndelegated);
    if (!delegated) r["reason"] = "no delegate took the graph: ran on portable kernels";
  } else if (p.cases.empty()) {
    r["status"] = word(Status::kRunFailed);
    r["reason"] = "no golden case ran";
  } else {  // over-budget when every failing case was faithful and only its recipe cost too much
    const bool only_over = std::all_of(p.cases.begin(), p.cases.end(), [](const CaseReport& c) {
      return c.passed || c.status == Status::kOverBudget;
    });
    // Other bytes on another run: no single run's numbers can be trusted, whatever they were.
    const bool nondet = std::any_of(p.cases.begin(), p.cases.end(), [](const CaseReport& c) {
      return c.status == Status::kNondeterministic;
    });
    r["status"] = word(nondet ? Status::kNondeterministic : only_over ? Status::kOverBudget : Status::kDrifted);
    r["reason"] = join(failures, "; ");
  }
  r["numbers"] = w.to_json(p.bound, p.against);
  std::vector<const RepeatReport*> repeats;
  for (const CaseReport& c : p.cases) repeats.push_back(c.repeats ? &*c.repeats : nullptr);
  if (json rj = repeats_json(repeats); !rj.is_null()) r["repeats"] = std::move(rj);
  return {r};
}

std::vector<json> records_from_bench(const RecordContext& ctx, const std::vector<BenchReport>& reports) {
  std::vector<json> out;
  for (const BenchReport& b : reports) {
    if (b.refused) continue;
    for (const MethodBench& m : b.methods) {
      if (!m.latency) continue;
      json r = base_record(ctx, "runtime", b.backend);
      add_facts(r, {b.bundle, b.bundle_sha256, b.bundle_created_utc, b.bundle_toolchain, b.model, b.recipe,
                    b.precision});
      r["backend_ids"] = b.delegates;
      r["status"] = kMeasured;
      const Latency& l = *m.latency;
      r["performance"] = {{"method", m.method},
                          {"case", m.case_id},
                          {"runs", l.runs},
                          {"median_ms", detail::json_number(l.median_ms)},
                          {"p90_ms", detail::json_number(l.p90_ms)},
                          {"p99_ms", detail::json_number(l.p99_ms)},
                          {"min_ms", detail::json_number(l.min_ms)},
                          {"mean_ms", detail::json_number(l.mean_ms)},
                          {"throughput_per_s", detail::json_number(l.throughput_per_s)},
                          {"first_load_ms", detail::json_number(b.first_load_ms)},
                          {"warm_load_ms", b.warm_load_ms ? detail::json_number(*b.warm_load_ms) : json(nullptr)},
                          {"peak_rss_mb", b.peak_rss_mb ? detail::json_number(*b.peak_rss_mb) : json(nullptr)},
                          {"threads_requested", b.threads_requested},
                          {"threads_used", b.threads_used}};
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace etproof
