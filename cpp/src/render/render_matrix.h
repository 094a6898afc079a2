// cpp/src/render/render_matrix.h — private to the library: the small text pieces the matrix's renderers
// (render_matrix.cpp: text; render_matrix_markdown.cpp: Markdown; render_matrix_json.cpp: JSON;
// render_matrix_html.cpp: HTML; render_junit.cpp: JUnit; …) share.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "etproof/core/backend_table.h"
#include "etproof/replay/matrix.h"
#include "etproof/gate/references.h"
#include "core/common.h"

namespace etproof::render {

using detail::cosine_text;
using detail::join;
inline std::string fmt(double v, int precision = 3) { return detail::format_number(v, precision); }
inline nlohmann::json opt_num(const std::optional<double>& v) { return detail::json_number(v); }
// "backend/recipe", with " @ MACHINE" for a column run on an emulated machine (Column::machine).
inline std::string column_label(const Column& c) {
  return c.backend + "/" + c.recipe + (c.machine.empty() ? "" : " @ " + c.machine);
}

// A column's label within its model: backend/recipe, plus what tells it apart where two columns
// of the same model share a backend/recipe — its directory (copies of one bundle in two
// directories), or its bundle's name (two bundles in one directory).
inline std::string label_in_model(const Matrix& m, size_t col) {
  const Column& c = m.columns[col];
  for (size_t i = 0; i < m.columns.size(); ++i)
    if (i != col && m.columns[i].model == c.model && column_label(m.columns[i]) == column_label(c))
      return column_label(c) + " [" + (m.columns[i].dir != c.dir ? c.dir : c.bundle) + "]";
  return column_label(c);
}

// Cases of one model's columns, in row order.
inline std::vector<std::string> model_cases(const Matrix& m, const std::string& model) {
  std::vector<std::string> out;
  for (const std::string& id : m.cases)
    for (const Cell& c : m.cells)
      if (c.case_id == id && m.columns[c.column].model == model) {
        out.push_back(id);
        break;
      }
  return out;
}

inline std::string model_label(const std::string& model) { return model.empty() ? "(unknown model)" : model; }

// Several models or directories: text and Markdown group the columns per model.
inline bool grouped(const Matrix& m) { return m.models().size() > 1 || m.dirs.size() > 1; }


inline const Cell* find_cell(const Matrix& m, const std::string& case_id, size_t col) {
  for (const Cell& c : m.cells)
    if (c.case_id == case_id && c.column == col) return &c;
  return nullptr;
}

// A cosine as cosine_text writes it, or, with one_minus, as 1−ε whatever its value below 1: for a
// column some of whose values need that form (one spelling per column).
inline std::string cosine_cell(double cosine, bool one_minus) {
  return one_minus && std::isfinite(cosine) && cosine < 1 ? "1-" + fmt(1 - cosine, 2) : cosine_text(cosine);
}

inline std::string cell_text(const Cell* c, bool one_minus = false) {
  if (!c) return "-";
  std::string s(to_string(c->status));
  if (c->max_abs_error) s += " " + fmt(*c->max_abs_error, 2);
  if (c->cosine) s += " " + cosine_cell(*c->cosine, one_minus);
  if (!c->cost_over_default.empty() && c->cost_sqnr_db)
    s += " (cost " + fmt(*c->cost_sqnr_db, 3) + " dB!)";
  return s;
}

// What the verdict line adds after the coverage: columns whose recipe or this
// machine's precision cost more than the default budget (the worst cell named), and columns that
// computed in a lower precision here than their recipe names. Empty when neither.
// The lowest cost SQNR among a column's cells flagged over the default budget; nullopt: none.
inline std::optional<double> worst_flagged_cost(const Matrix& m, size_t col) {
  std::optional<double> worst;
  for (const Cell& c : m.cells)
    if (c.column == col && !c.cost_over_default.empty() && c.cost_sqnr_db &&
        (!worst || *c.cost_sqnr_db < *worst))
      worst = c.cost_sqnr_db;
  return worst;
}

inline std::string cost_text(const Matrix& m) {
  std::vector<std::string> over, lower;
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const std::optional<double> worst = worst_flagged_cost(m, col);
    const Column& k = m.columns[col];
    const std::string label =
        (m.models().size() > 1 ? k.model + " " : std::string()) + k.backend + "/" + k.recipe;
    if (worst) over.push_back(label + " " + fmt(*worst, 3) + " dB");
    // Lower than the recipe names: judged here in another precision than its manifest's (OpenVINO's
    // hint asked here), or in one with a larger unit roundoff than the table's for the recipe
    // (OpenVINO's fp32 exported on a CPU with bfloat16 units records bfloat16 in its manifest).
    const RecipeEntry* named = find_recipe_entry(k.backend, k.recipe);
    if (!k.precision_reason.empty() ||
        (named && unit_roundoff(k.precision) > unit_roundoff(named->precision) && unit_roundoff(named->precision) > 0))
      lower.push_back(label + " in " + k.precision);
  }
  std::string out;
  auto add = [&](const std::string& head, std::vector<std::string>& items) {
    if (items.empty()) return;
    const size_t n = items.size();
    if (n > 4) {
      items.resize(3);
      items.push_back("… " + std::to_string(n - 3) + " more");
    }
    out += "; " + head + join(items);
  };
  add("cost over the default budget (SQNR < " + fmt(kDefaultCostSqnrDb, 3) +
          " dB, the recipe's or precision's emulation against the golden): ",
      over);
  add("computed here in a lower precision than the recipe names: ", lower);
  return out;
}

inline std::string bound_text(const std::optional<Bound>& b) {
  if (!b) return "no bound";
  return describe_bound(*b) + (b->caller_supplied ? " (caller-supplied)" : " (derived)");
}

inline std::string not_run_label(const NotRun& n) {
  return (n.model.empty() ? "" : n.model + " ") + (n.backend.empty() ? "?" : n.backend) + "/" +
         (n.recipe.empty() ? "?" : n.recipe) + (n.machine.empty() ? "" : " @ " + n.machine);
}

// "3 not-linked, 1 export-refused": a count per status, in the map's order.
template <typename Status>
inline std::string counts_text(const std::map<Status, size_t>& counts) {
  std::string out;
  for (const auto& [status, n] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(to_string(status));
  return out;
}

// The explanation of each gate rule a cell failed, once for the report (gate.h: rules_legend).
inline std::string failed_rules_legend(const Matrix& m) {
  std::vector<std::string> rules;
  for (const Cell& c : m.cells)
    for (const std::string& r : c.failed_rules)
      if (std::find(rules.begin(), rules.end(), r) == rules.end()) rules.push_back(r);
  return rules_legend(rules);
}

// Cells only (the verdict counts columns: coverage_text): "N cells measured: …; U cells not
// measured (…); X xfail record(s) (…)".
inline std::string summary(const Matrix& m) {
  std::map<CellStatus, size_t> count;
  for (const Cell& c : m.cells) ++count[c.status];
  std::ostringstream os;
  os << m.measured << (m.measured == 1 ? " cell" : " cells") << " measured: " << count[CellStatus::kAgreed] << " agreed, "
     << count[CellStatus::kDrifted] << " drifted";
  for (CellStatus s : {CellStatus::kOverBudget, CellStatus::kAgreedUndelegated, CellStatus::kXfail, CellStatus::kXpass})
    if (count[s]) os << ", " << count[s] << " " << to_string(s);
  // Inconclusive cells ran and were measured, but not judged (their references disagree).
  if (count[CellStatus::kInconclusive])
    os << "; " << count[CellStatus::kInconclusive] << " inconclusive (measured, not judged)";
  // Nondeterministic cells ran more than once and gave other bytes on another run.
  if (count[CellStatus::kNondeterministic])
    os << "; " << count[CellStatus::kNondeterministic] << " nondeterministic (other bytes on another run)";
  const size_t unmeasured =
      m.cells.size() - m.measured - count[CellStatus::kInconclusive] - count[CellStatus::kNondeterministic];
  if (unmeasured) {
    os << "; " << unmeasured << (unmeasured == 1 ? " cell" : " cells") << " not measured (";
    bool first = true;
    for (auto [s, n] : count) {
      if (is_judged(s) || s == CellStatus::kInconclusive || s == CellStatus::kNondeterministic || n == 0)
        continue;
      os << (first ? "" : ", ") << n << " " << to_string(s);
      first = false;
    }
    os << ")";
  }
  if (!m.xfail.empty()) {
    std::map<XfailResult, size_t> xr;
    for (const XfailOutcome& x : m.xfail) ++xr[x.result];
    os << "; " << m.xfail.size() << " xfail record(s) (" << counts_text(xr) << ")";
  }
  // The repeats describe runs: with no cell measured (nothing ran), there is nothing to repeat.
  if (m.repetition.any() && m.measured + count[CellStatus::kInconclusive] + count[CellStatus::kNondeterministic] > 0)
    os << "; each case ran " << m.repetition.repeat << "x"
       << (m.repetition.fresh_loads ? " + " + std::to_string(m.repetition.fresh_loads) + " fresh load(s)" : "")
       << (count[CellStatus::kNondeterministic] ? "" : ", bit-identical");
  return os.str();
}

// Why a requirement (--require, --require-all) is not met, for the verdict.
inline std::string unmet_text(const Coverage& cov, const UnmetRequirement& u) {
  if (u.matched == 0) return "required column " + u.require + " is not in the matrix";
  if (u.require == "--require-all")
    return "--require-all: " + std::to_string(u.not_run.size()) + " of " + std::to_string(u.matched) +
           " columns did not run";
  std::set<std::string> models, labels;
  for (const CoverageColumn& k : cov.columns) models.insert(k.model);
  for (size_t i : u.not_run) labels.insert(cov.columns[i].label());
  std::string out = "required column " + u.require + " did not run";
  if (u.not_run.size() <= 3) {
    std::vector<std::string> each;
    for (size_t i : u.not_run) {
      const CoverageColumn& k = cov.columns[i];
      std::string e = models.size() > 1 ? model_label(k.model) + " " : std::string();
      if (labels.size() > 1) e += k.label() + " ";
      each.push_back(e + std::string(to_string(k.status)));
    }
    return out + " (" + join(each) + ")";
  }
  std::map<CellStatus, size_t> count;
  for (size_t i : u.not_run) ++count[cov.columns[i].status];
  return out + " (" + std::to_string(u.not_run.size()) + " of its " + std::to_string(u.matched) +
         " columns: " + counts_text(count) + ")";
}

inline std::string verdict(const Matrix& m) {
  const Coverage cov = coverage(m);
  if (m.exit_code() == 0) return "PASS — " + coverage_text(cov) + cost_text(m);
  std::vector<std::string> why;
  if (m.measured == 0) why.push_back("nothing was measured");
  size_t drifted = 0;
  for (const Cell& c : m.cells) drifted += c.status == CellStatus::kDrifted;
  if (drifted) why.push_back(std::to_string(drifted) + " cell(s) drifted");
  size_t over = 0;
  for (const Cell& c : m.cells) over += c.status == CellStatus::kOverBudget;
  if (over)
    why.push_back(std::to_string(over) + " cell(s) over budget (faithful to the recipe; the recipe's "
                                         "cost breaks the budget)");
  size_t nondet = 0;
  for (const Cell& c : m.cells) nondet += c.status == CellStatus::kNondeterministic;
  if (nondet) why.push_back(std::to_string(nondet) + " cell(s) nondeterministic (other bytes on another run)");
  size_t inconclusive = 0;
  for (const Cell& c : m.cells) inconclusive += c.status == CellStatus::kInconclusive;
  if (inconclusive)
    why.push_back(std::to_string(inconclusive) +
                  " cell(s) inconclusive (their references disagree, or no bound narrower than "
                  "the output follows)");
  for (const NotRun& n : m.not_run)
    if (fails_run(n.status)) why.push_back(not_run_label(n) + " " + std::string(to_string(n.status)));
  for (const XfailOutcome& x : m.xfail)
    if (x.result == XfailResult::kXpass)
      why.push_back(x.record.backend + "/" + x.record.recipe + " xpass (" + x.record.half +
                    " half): unexpected pass: update or remove the xfail record in " +
                    m.xfail_file);
  for (const UnmetRequirement& u : cov.unmet) why.push_back(unmet_text(cov, u));
  return "FAIL: " + join(why, "; ") + " — " + coverage_text(cov) + cost_text(m);
}

// ---- not-run lines grouped by reason (text and JSON) ----------------------------------------------

// A not-run line's reason without the name of its bundle, so that the same refusal of many
// bundles (a delegate not linked, an export the recipe refused) reads the same.
inline std::string shared_reason(const NotRun& n) {
  std::string r = n.reason;
  if (n.bundle.empty()) return r;
  if (r.starts_with(n.bundle + ": ")) r.erase(0, n.bundle.size() + 2);
  auto replace_all = [&r](const std::string& from, const std::string& to) {
    for (size_t at = r.find(from); at != std::string::npos; at = r.find(from, at + to.size()))
      r.replace(at, from.size(), to);
  };
  replace_all("bundle '" + n.bundle + "': ", "");
  replace_all(n.bundle, "<bundle>");
  return r;
}

struct NotRunGroup {
  CellStatus status;
  std::string reason;                  // as shown: a lone line's own, else shared_reason
  std::vector<const NotRun*> lines;
};

// One group per (status, shared reason), in the order of first appearance.
inline std::vector<NotRunGroup> not_run_groups(const Matrix& m) {
  std::vector<NotRunGroup> groups;
  std::vector<std::string> keys;
  for (const NotRun& n : m.not_run) {
    const std::string shared = shared_reason(n);
    size_t i = 0;
    while (i < groups.size() && !(groups[i].status == n.status && keys[i] == shared)) ++i;
    if (i == groups.size()) {
      groups.push_back({n.status, n.reason, {}});
      keys.push_back(shared);
    }
    groups[i].lines.push_back(&n);
  }
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].lines.size() > 1) groups[i].reason = keys[i];
  return groups;
}

// What a group covers: "gelu_wide coreml/fp16" for one line; "coreml/fp16 ×17, coreml/fp32 ×17
// (every model: 17)" or "… in 3 models (a, b, c)" for many.
inline std::string group_label(const Matrix& m, const NotRunGroup& g) {
  if (g.lines.size() == 1) return not_run_label(*g.lines.front());
  std::vector<std::pair<std::string, size_t>> labels;
  std::vector<std::string> models;
  for (const NotRun* n : g.lines) {
    const std::string label = (n->backend.empty() ? "?" : n->backend) + "/" + (n->recipe.empty() ? "?" : n->recipe);
    auto it = std::find_if(labels.begin(), labels.end(), [&](const auto& p) { return p.first == label; });
    if (it == labels.end())
      labels.push_back({label, 1});
    else
      ++it->second;
    if (!n->model.empty() && std::find(models.begin(), models.end(), n->model) == models.end())
      models.push_back(n->model);
  }
  std::vector<std::string> names;
  for (const auto& [label, k] : labels) names.push_back(k > 1 ? label + " ×" + std::to_string(k) : label);
  if (models.size() <= 1) return (models.empty() ? std::string() : models.front() + " ") + join(names);
  std::set<std::string> every;  // every model the matrix names, with a bundle or without
  for (const Column& c : m.columns) every.insert(c.model);
  for (const NotRun& n : m.not_run)
    if (!n.model.empty()) every.insert(n.model);
  if (models.size() == every.size()) return join(names) + " (every model: " + std::to_string(models.size()) + ")";
  return join(names) + " in " + std::to_string(models.size()) + " models (" + join(models) + ")";
}

// The emulated columns (Column::machine) that drifted while the same bundle's column here did not:
// their labels, each once.
inline std::vector<std::string> drifted_only_under_emulation(const Matrix& m) {
  std::set<size_t> drifted;
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted) drifted.insert(c.column);
  std::vector<std::string> out;
  for (size_t i : drifted) {
    const Column& e = m.columns[i];
    if (e.machine.empty()) continue;
    bool here_drifted = false;
    for (size_t j : drifted)
      here_drifted = here_drifted || (m.columns[j].machine.empty() && m.columns[j].dir == e.dir &&
                                      m.columns[j].bundle == e.bundle);
    if (!here_drifted) out.push_back((e.model.empty() ? "" : e.model + " ") + column_label(e));
  }
  return out;
}

// Drift under a derived bound: say how to pass one, as parity does — not for a column that drifted
// only under emulation, whose bound agreed here (emulation_hint says what to do instead), nor for
// a cell with no numbers (an output of another shape: no bound would pass it).
inline bool drifted_under_derived(const Matrix& m) {
  const std::vector<std::string> emulated = drifted_only_under_emulation(m);
  for (const Cell& c : m.cells) {
    const Column& col = m.columns[c.column];
    if (c.status != CellStatus::kDrifted || !c.max_abs_error || !col.bound || col.bound->caller_supplied)
      continue;
    if (!col.machine.empty() &&
        std::find(emulated.begin(), emulated.end(), (col.model.empty() ? "" : col.model + " ") + column_label(col)) !=
            emulated.end())
      continue;
    return true;
  }
  return false;
}

// "" unless some column drifted only under emulation; then what to check before blaming the program.
inline std::string emulation_hint(const Matrix& m) {
  const std::vector<std::string> cols = drifted_only_under_emulation(m);
  if (cols.empty()) return "";
  return "hint: drifted only under emulation, where the arithmetic is QEMU's: " + join(cols) +
         ". Run the same profile on another QEMU (ETPROOF_QEMU_AARCH64) or on a device before blaming the "
         "program or its bound (docs/emulation.md)";
}

inline constexpr const char* kBoundHint =
    "hint: if a derived bound does not fit this model, pass --atol/--rtol/--min-cosine/--min-sqnr\n"
    "(the bounds: cpp/src/gate/bounds.cpp, from measurements on the golden set; the report then says caller-supplied)";

}  // namespace etproof::render
