// cpp/src/render_matrix.h — private to the library: the small text pieces the matrix's renderers
// (render_matrix.cpp: text, Markdown, JSON; render_matrix_html.cpp: HTML; render_junit.cpp: JUnit)
// share.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "etproof/matrix.h"
#include "common.h"

namespace etproof::render {

using detail::cosine_text;
using detail::join;
inline std::string fmt(double v, int precision = 3) { return detail::format_number(v, precision); }
inline nlohmann::json opt_num(const std::optional<double>& v) { return detail::json_number(v); }
inline std::string column_label(const Column& c) { return c.backend + "/" + c.recipe; }

// A column's label within its model: backend/recipe, plus the directory where two columns of the
// same model share a backend/recipe.
inline std::string label_in_model(const Matrix& m, size_t col) {
  const Column& c = m.columns[col];
  for (size_t i = 0; i < m.columns.size(); ++i)
    if (i != col && m.columns[i].model == c.model && column_label(m.columns[i]) == column_label(c))
      return column_label(c) + " [" + c.dir + "]";
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

inline bool column_matches(const Column& c, const XfailRecord& r) {
  return xfail_matches_column(r, c.model, c.bundle, c.backend, c.recipe);
}

inline std::string count_text(const std::map<CellStatus, size_t>& count) {
  std::vector<std::string> parts;
  for (const auto& [s, n] : count) parts.push_back(std::to_string(n) + " " + std::string(to_string(s)));
  return join(parts);
}

inline const Cell* find_cell(const Matrix& m, const std::string& case_id, size_t col) {
  for (const Cell& c : m.cells)
    if (c.case_id == case_id && c.column == col) return &c;
  return nullptr;
}

inline std::string cell_text(const Cell* c) {
  if (!c) return "-";
  std::string s(to_string(c->status));
  if (c->max_abs_error) s += " " + fmt(*c->max_abs_error, 2);
  if (c->cosine) s += " " + cosine_text(*c->cosine);
  return s;
}

inline std::string bound_text(const std::optional<Bound>& b) {
  if (!b) return "no bound";
  return describe_bound(*b) + (b->caller_supplied ? " (caller-supplied)" : " (derived)");
}

inline std::string not_run_label(const NotRun& n) {
  return (n.model.empty() ? "" : n.model + " ") + (n.backend.empty() ? "?" : n.backend) + "/" +
         (n.recipe.empty() ? "?" : n.recipe);
}

// "3 not-linked, 1 export-refused": a count per status, in the map's order.
template <typename Status>
inline std::string counts_text(const std::map<Status, size_t>& counts) {
  std::string out;
  for (const auto& [status, n] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(to_string(status));
  return out;
}

inline std::string summary(const Matrix& m) {
  std::map<CellStatus, size_t> count;
  for (const Cell& c : m.cells) ++count[c.status];
  std::ostringstream os;
  os << m.measured << " cells measured: " << count[CellStatus::kAgreed] << " agreed, "
     << count[CellStatus::kDrifted] << " drifted";
  for (CellStatus s : {CellStatus::kAgreedUndelegated, CellStatus::kXfail, CellStatus::kXpass})
    if (count[s]) os << ", " << count[s] << " " << to_string(s);
  const size_t unmeasured = m.cells.size() - m.measured;
  if (unmeasured) {
    os << "; " << unmeasured << " not measured (";
    bool first = true;
    for (auto [s, n] : count) {
      if (s == CellStatus::kAgreed || s == CellStatus::kDrifted ||
          s == CellStatus::kAgreedUndelegated || s == CellStatus::kXfail ||
          s == CellStatus::kXpass || n == 0)
        continue;
      os << (first ? "" : ", ") << n << " " << to_string(s);
      first = false;
    }
    os << ")";
  }
  if (!m.not_run.empty()) {
    std::map<CellStatus, size_t> nr;
    for (const NotRun& n : m.not_run) ++nr[n.status];
    os << "; " << m.not_run.size() << " not run (" << counts_text(nr) << ")";
  }
  if (!m.xfail.empty()) {
    std::map<XfailResult, size_t> xr;
    for (const XfailOutcome& x : m.xfail) ++xr[x.result];
    os << "; " << m.xfail.size() << " xfail record(s) (" << counts_text(xr) << ")";
  }
  return os.str();
}

inline std::string verdict(const Matrix& m) {
  if (m.exit_code() == 0) return "PASS";
  std::vector<std::string> why;
  if (m.measured == 0) why.push_back("nothing was measured");
  size_t drifted = 0;
  for (const Cell& c : m.cells) drifted += c.status == CellStatus::kDrifted;
  if (drifted) why.push_back(std::to_string(drifted) + " cell(s) drifted");
  for (const NotRun& n : m.not_run)
    if (fails_run(n.status)) why.push_back(not_run_label(n) + " " + std::string(to_string(n.status)));
  for (const XfailOutcome& x : m.xfail)
    if (x.result == XfailResult::kXpass)
      why.push_back(x.record.backend + "/" + x.record.recipe + " xpass (" + x.record.half +
                    " half): unexpected pass: update or remove the xfail record in " +
                    m.xfail_file);
  return "FAIL: " + join(why, "; ");
}

// Drift under a derived bound: say how to pass one, as parity does.
inline bool drifted_under_derived(const Matrix& m) {
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted && m.columns[c.column].bound &&
        !m.columns[c.column].bound->caller_supplied)
      return true;
  return false;
}

inline constexpr const char* kBoundHint =
    "hint: the bounds were derived from measurements on the golden set (cpp/src/bounds.cpp); if a "
    "bound does not fit "
    "this model, pass --atol/--rtol/--min-cosine/--min-sqnr (the report then says the bound was "
    "caller-supplied)";

}  // namespace etproof::render
