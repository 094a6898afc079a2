// etproof/render_matrix_json.cpp — the matrix as JSON (etproof/render/matrix.h: to_json).
#include "etproof/render/matrix.h"
#include "etproof/replay/matrix.h"
#include "render/render_matrix.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
namespace {

using json = nlohmann::json;

json null_if_empty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// Column `i`: its identity, bound and reference, where it ran (machine: null here, else the
// emulated machine's record), and with --bench its speed and speed-ups.
json column_json(const Matrix& m, size_t i) {
  const Column& c = m.columns[i];
  json col = {{"backend", c.backend},
              {"recipe", c.recipe},
              {"precision", c.precision},
              {"delegates", c.delegates},
              {"bundle", c.bundle},
              {"model", c.model},
              {"dir", c.dir},
              {"bound", c.bound ? to_json(*c.bound) : json(nullptr)}};
  col["against"] = c.against;
  if (!c.mutable_buffers.empty()) {
    col["state"] = {{"mutable_buffers", c.mutable_buffers}, {"per_case", "fresh"}};
    if (c.state_shared_across_methods) col["state"]["shared_across_methods"] = true;
  }
  if (!c.judgement.empty()) col["judgement"] = c.judgement;
  col["machine"] = c.machine_record.is_null() ? json(nullptr) : c.machine_record;
  col["column"] = column_label(c);
  if (!c.precision_reason.empty()) col["precision_reason"] = c.precision_reason;
  if (c.speed) {
    json sp = to_json(std::vector<BenchReport>{*c.speed}).at("bench").at(0);
    for (const char* backend : {"portable", "xnnpack"}) {
      const auto x = speedup_against(m, i, backend, "fp32");
      sp[std::string("speedup_vs_") + backend + "_fp32"] = x ? detail::json_number(*x) : json(nullptr);
    }
    col["speed"] = std::move(sp);
  }
  return col;
}

// A cell: its case and column, status, numbers (null when not measured), bound and detail; the
// machine it ran on (Column::machine_record; null here); its recipe cost where measured.
json cell_json(const Matrix& m, const Cell& c) {
  const Column& col = m.columns[c.column];
  json cell = {{"case", c.case_id},
               {"backend", col.backend},
               {"recipe", col.recipe},
               {"bundle", col.bundle},
               {"status", std::string(to_string(c.status))},
               {"max_abs_error", opt_num(c.max_abs_error)},
               {"cosine", opt_num(c.cosine)},
               {"sqnr_db", opt_num(c.sqnr_db)},
               {"headroom", opt_num(c.headroom)},
               {"model", col.model},
               {"dir", col.dir},
               {"range_error", opt_num(c.range_error)},
               {"atol", opt_num(c.atol)},
               {"bound", col.bound ? to_json(*col.bound) : json(nullptr)},
               {"detail", c.detail}};
  cell["machine"] = col.machine_record.is_null() ? json(nullptr) : col.machine_record;
  if (c.cost_sqnr_db) cell["cost_sqnr_db"] = opt_num(c.cost_sqnr_db);
  if (!c.cost_over_default.empty()) cell["cost_over_default"] = c.cost_over_default;
  if (c.repeats) cell["repeats"] = to_json(*c.repeats);
  if (c.passing) cell["passing_bound"] = to_json(*c.passing);
  return cell;
}

json not_run_json(const NotRun& n) {
  return {{"backend", n.backend},
          {"recipe", n.recipe},
          {"status", std::string(to_string(n.status))},
          {"fails_run", fails_run(n.status)},
          {"reason", n.reason},
          {"dir", n.dir},
          {"model", n.model},
          {"machine", null_if_empty(n.machine)}};
}

json xfail_json(const XfailOutcome& x) {
  return {{"model", x.record.model},
          {"backend", x.record.backend},
          {"recipe", x.record.recipe},
          {"half", x.record.half},
          {"reason", x.record.reason},
          {"recorded", x.record.recorded},
          {"cases", x.record.cases.empty() ? json(nullptr) : json(x.record.cases)},
          {"outcome", std::string(to_string(x.result))},
          {"fails_run", x.result == XfailResult::kXpass},
          {"detail", x.detail}};
}

json coverage_column_json(const CoverageColumn& k) {
  return {{"model", k.model},   {"backend", k.backend},
          {"recipe", k.recipe}, {"column", k.label()},
          {"dir", k.dir},       {"bundle", null_if_empty(k.bundle)},
          {"status", std::string(to_string(k.status))}, {"fails_run", fails_run(k.status)},
          {"reason", k.reason}};
}

// What was run (coverage()): columns, never cells, with the requirements and what missed them.
json coverage_json(const Matrix& m) {
  const Coverage cov = coverage(m);
  json not_ran = json::array();
  json by_status = json::object();
  for (const CoverageColumn& k : cov.columns) {
    if (k.ran) continue;
    not_ran.push_back(coverage_column_json(k));
    const std::string s(to_string(k.status));
    by_status[s] = by_status.value(s, 0) + 1;
  }
  json unmet = json::array(), required_not_run = json::array(), required_absent = json::array();
  for (const UnmetRequirement& u : cov.unmet) {
    json cols_not_run = json::array();
    for (size_t i : u.not_run) {
      json c = coverage_column_json(cov.columns[i]);
      cols_not_run.push_back(c);
      c["require"] = u.require;
      required_not_run.push_back(std::move(c));
    }
    if (u.matched == 0) required_absent.push_back(u.require);
    unmet.push_back({{"require", u.require}, {"matched", u.matched}, {"not_run", cols_not_run},
                     {"text", unmet_text(cov, u)}});
  }
  return {{"columns", cov.columns.size()},
          {"ran", cov.ran},
          {"not_run", cov.columns.size() - cov.ran},
          {"not_run_by_status", by_status},
          {"columns_not_run", not_ran},
          {"required", m.required},
          {"require_all", m.require_all},
          {"unmet", unmet},
          {"required_not_run", required_not_run},
          {"required_absent", required_absent},
          {"text", coverage_text(cov)}};
}

// The not-run lines as the text groups them (not_run_groups).
json not_run_groups_json(const Matrix& m) {
  json groups = json::array();
  for (const NotRunGroup& g : not_run_groups(m)) {
    json lines = json::array();
    for (const NotRun* n : g.lines)
      lines.push_back({{"model", n->model}, {"backend", n->backend}, {"recipe", n->recipe}, {"dir", n->dir}});
    groups.push_back({{"status", std::string(to_string(g.status))},
                      {"fails_run", fails_run(g.status)},
                      {"covers", group_label(m, g)},
                      {"reason", g.reason},
                      {"lines", lines}});
  }
  return groups;
}

}  // namespace

nlohmann::json to_json(const Matrix& m) {
  json cols = json::array(), cells = json::array(), not_run = json::array(), records = json::array();
  for (size_t i = 0; i < m.columns.size(); ++i) cols.push_back(column_json(m, i));
  for (const Cell& c : m.cells) cells.push_back(cell_json(m, c));
  for (const NotRun& n : m.not_run) not_run.push_back(not_run_json(n));
  for (const XfailOutcome& x : m.xfail) records.push_back(xfail_json(x));
  json doc = {{"columns", cols},
              {"coverage", coverage_json(m)},
              {"not_run_groups", not_run_groups_json(m)},
              {"cases", m.cases},
              {"xfail", {{"file", null_if_empty(m.xfail_file)}, {"records", records}}},
              {"cells", cells},
              {"not_run", not_run},
              {"measured", m.measured},
              {"exit_code", m.exit_code()},
              {"summary", summary(m)},
              {"verdict", verdict(m)},
              {"caller_bound", null_if_empty(m.caller_bound)},
              {"caller_budget", null_if_empty(m.caller_budget)},
              {"models", m.models()},
              {"dirs", m.dirs},
              {"xfail_files", m.xfail_files}};
  // With a method selection only (without one, the document has neither key).
  if (!m.methods.empty()) {
    json left = json::array();
    for (const LeftOut& l : m.left_out)
      left.push_back({{"bundle", l.bundle}, {"model", l.model}, {"dir", l.dir}, {"reason", l.reason}});
    doc["methods"] = m.methods;
    doc["left_out"] = left;
  }
  return doc;
}

}  // namespace etproof
