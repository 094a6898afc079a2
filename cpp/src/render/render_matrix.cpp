// etproof/render_matrix.cpp — the matrix as text (etproof/render/matrix.h), and the matrix's table of
// formats (matrix_renderers: text here; Markdown, JSON, HTML and JUnit each in a file of its own).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "etproof/render/formats.h"
#include "etproof/render/junit.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/matrix.h"
#include "render/render_matrix.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
namespace {

// The end of both text forms: the columns not run, the summary, the verdict and the bound hint.
// `matrix --bench`: one line per benchmarked column (bench_columns), "" when none was.
std::string speed_lines(const Matrix& m) {
  std::ostringstream os;
  bool any = false;
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    if (!c.speed) continue;
    if (!any) os << "\nspeed (--bench: one call on each column's first golden case; etproof bench):\n";
    any = true;
    os << "  " << c.model << " " << label_in_model(m, col) << ": ";
    const BenchReport& b = *c.speed;
    if (b.refused) {
      os << "not measured, " << to_string(*b.refused) << ": " << (b.error ? b.error->cause() : "refused") << "\n";
      continue;
    }
    const MethodBench& first = b.methods.front();
    if (!first.latency) {
      os << first.method << " failed: " << (first.error ? first.error->cause() : "") << "\n";
      continue;
    }
    os << "median " << detail::format_number(first.latency->median_ms, 3) << " ms, p90 "
       << detail::format_number(first.latency->p90_ms, 3) << " ms (" << first.latency->runs << " runs, "
       << b.threads_used << " threads)";
    if (b.peak_rss_mb) os << ", peak +" << detail::format_number(*b.peak_rss_mb, 3) << " MiB";
    for (const auto& [backend, recipe] : {std::pair<std::string, std::string>{"portable", "fp32"}, {"xnnpack", "fp32"}}) {
      if (c.backend == backend && c.recipe == recipe) continue;
      if (const auto x = speedup_against(m, col, backend, recipe))
        os << ", " << detail::format_number(*x, 3) << "× " << backend << "/" << recipe;
    }
    os << "\n";
  }
  return os.str();
}

void write_text_tail(std::ostringstream& os, const Matrix& m) {
  os << speed_lines(m);
  // One line per distinct reason, naming every column (and model) it covers.
  const std::vector<NotRunGroup> groups = not_run_groups(m);
  if (!groups.empty()) {
    os << "\nnot run (" << groups.size() << " reason" << (groups.size() == 1 ? "" : "s") << "):\n";
    for (const NotRunGroup& g : groups)
      os << "  " << group_label(m, g) << ": " << to_string(g.status)
         << (fails_run(g.status) ? " (fails the run)" : "") << ": " << g.reason << "\n";
  }
  if (!m.left_out.empty()) {
    os << "\nleft out by --method " << join(m.methods, " --method ") << " (not a column; does not fail the run):\n";
    for (const LeftOut& l : m.left_out) os << "  " << l.bundle << " (" << l.dir << "): " << l.reason << "\n";
  }
  os << "\n" << summary(m) << "\n" << verdict(m) << "\n";
  if (drifted_under_derived(m)) os << kBoundHint << "\n";
  if (const std::string h = emulation_hint(m); !h.empty()) os << h << "\n";
}

// Display width (UTF-8 code points) and left-aligned padding to it.
size_t text_width(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}
std::string pad(const std::string& s, size_t width) {
  const size_t w = text_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}
std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Rows of cells under a header, in as many blocks of columns as fit kTextWidth; the first column
// (the row's name) repeats in each block.
void write_table(std::ostream& os, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, const std::string& indent = "") {
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], text_width(r[i]));
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  size_t first = 1;
  while (first < header.size() || first == 1) {
    size_t last = first, used = indent.size() + width[0];
    while (last < header.size() && (last == first || used + 2 + width[last] <= kTextWidth)) used += 2 + width[last++];
    if (first > 1) os << "\n";
    auto line = [&](const std::vector<std::string>& r) {
      std::string out = indent + pad(r.empty() ? "" : r[0], width[0]);
      for (size_t i = first; i < last; ++i) out += "  " + pad(i < r.size() ? r[i] : "", width[i]);
      os << rstrip(out) << "\n";
    };
    line(header);
    std::vector<std::string> rule;
    for (size_t w : width) rule.push_back(std::string(w, '-'));
    line(rule);
    for (const auto& r : rows) line(r);
    if (last >= header.size()) break;
    first = last;
  }
}

// The caller's bound and budget, when given (both text layouts).
void caller_lines(std::ostream& os, const Matrix& m) {
  if (!m.caller_bound.empty())
    os << "bound: caller-supplied for every column (" << m.caller_bound
       << "); fields not given come from each column's derived bound\n";
  if (!m.caller_budget.empty())
    os << "budget: the recipe's cost judged by " << m.caller_budget
       << " (--budget; keys not given come from each bundle's own budget)\n";
  if (!m.caller_bound.empty() || !m.caller_budget.empty()) os << "\n";
}

// ---- grouped (several models or directories) ------------------------------------------------------

// Column `col`'s row of its model's table: its label, its cells counted by status (with the worst
// cost flagged over the default budget), then — when a cell measured an error — its worst numbers:
// max abs error, range error (·max|ref|), cosine, SQNR dB and headroom.
std::vector<std::string> column_summary_row(const Matrix& m, size_t col, bool one_minus) {
  std::map<CellStatus, size_t> count;
  std::optional<double> err, rel, cos, sqnr, head;
  auto hi = [](std::optional<double>& slot, const std::optional<double>& v) {
    if (v && (!slot || *v > *slot)) slot = v;
  };
  auto lo = [](std::optional<double>& slot, const std::optional<double>& v) {
    if (v && (!slot || *v < *slot)) slot = v;
  };
  for (const Cell& cell : m.cells) {
    if (cell.column != col) continue;
    ++count[cell.status];
    hi(err, cell.max_abs_error);
    hi(rel, cell.range_error);
    lo(cos, cell.cosine);
    lo(sqnr, cell.sqnr_db);
    lo(head, cell.headroom);
  }
  std::vector<std::string> r{label_in_model(m, col), count.empty() ? std::string("no cells") : count_text(count)};
  if (const std::optional<double> cost = worst_flagged_cost(m, col)) r[1] += ", cost " + fmt(*cost, 3) + " dB!";
  if (err)
    for (const std::string& v : {fmt(*err, 3), rel ? fmt(*rel, 3) : "-", cos ? cosine_cell(*cos, one_minus) : "-",
                                  sqnr ? fmt(*sqnr, 4) : "-", head ? fmt(*head, 3) : "-"})
      r.push_back(v);
  return r;
}

// One table per model, one row per column (column_summary_row), every table with the same widths.
void write_model_tables(std::ostringstream& os, const Matrix& m, const std::vector<std::string>& models) {
  const std::vector<std::string> header{"column", "cells", "max abs err", "·max|ref|", "cosine", "SQNR dB",
                                        "headroom"};
  std::vector<size_t> width(header.size(), 0);
  std::vector<std::vector<std::string>> rows;
  // One spelling of the cosine in the tables: where any worst cosine is written 1−ε, every one is.
  bool one_minus = false;
  for (const Cell& c : m.cells) one_minus = one_minus || (c.cosine && detail::cosine_near_one(*c.cosine));
  for (size_t col = 0; col < m.columns.size(); ++col) rows.push_back(column_summary_row(m, col, one_minus));
  for (size_t i = 0; i < header.size(); ++i) width[i] = text_width(header[i]);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], text_width(r[i]));
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t i = 0; i < r.size(); ++i) out += "  " + pad(r[i], width[i]);
    os << rstrip(out) << "\n";
  };
  for (const std::string& model : models) {
    const auto cases = model_cases(m, model);
    os << "\n" << model_label(model) << "  (" << cases.size() << " case(s): " << join(cases) << ")\n";
    line(header);
    std::vector<std::string> state;  // each distinct state rule, once
    for (size_t col = 0; col < m.columns.size(); ++col) {
      const Column& c = m.columns[col];
      if (c.model != model) continue;
      line(rows[col]);
      const std::string rule = detail::state_rule(c.mutable_buffers, c.state_shared_across_methods);
      if (!c.mutable_buffers.empty() && std::find(state.begin(), state.end(), rule) == state.end())
        state.push_back(rule);
    }
    for (const std::string& rule : state) os << "  state: " << rule << "\n";
  }
}

// Each distinct bound once, with the (recipe, precision) and reference it belongs to; then the
// columns computed here in another precision than their recipe names.
void write_bounds(std::ostringstream& os, const Matrix& m) {
  std::vector<std::pair<std::string, std::string>> bounds;
  for (const Column& c : m.columns) {
    const std::string against = c.against == "golden"  ? "the float32 golden"
                                : c.against == "float64" ? "float64 truth, widened"
                                                         : "its " + c.against + " emulation";
    std::pair<std::string, std::string> b{
        c.recipe + " / " + c.precision + ", against " + against, bound_text(c.bound)};
    if (std::find(bounds.begin(), bounds.end(), b) == bounds.end()) bounds.push_back(b);
  }
  if (!bounds.empty()) {
    os << "\nbounds (per recipe / precision; a derived rule is resolved per output):\n";
    for (const auto& [pair, text] : bounds) os << "  " << pair << ":\n    " << text << "\n";
  }
  for (const Column& c : m.columns)
    if (!c.precision_reason.empty())
      os << "precision here: " << c.bundle << ": " << c.precision_reason << "\n";
}

// The drifted, over-budget, xpass and inconclusive cells, each with its model, case, column and
// detail.
void write_grouped_failures(std::ostringstream& os, const Matrix& m) {
  bool any = false;
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted || c.status == CellStatus::kOverBudget ||
        c.status == CellStatus::kXpass || c.status == CellStatus::kInconclusive ||
        c.status == CellStatus::kNondeterministic) {
      if (!any) os << "\nfailures:\n";
      any = true;
      const Column& col = m.columns[c.column];
      os << "  " << model_label(col.model) << " " << c.case_id << " × "
         << label_in_model(m, c.column) << ": " << to_string(c.status) << ": " << c.detail << "\n";
    }
  if (any) os << failed_rules_legend(m);
}

// Each xfail record with its outcome, then the xfail cells of the columns it names.
void write_grouped_xfail(std::ostringstream& os, const Matrix& m) {
  if (m.xfail.empty()) return;
  os << "\nexpected failures (" << join(m.xfail_files) << "):\n";
  for (const XfailOutcome& x : m.xfail) {
    os << "  " << record_label(x.record) << ", recorded " << x.record.recorded << ": "
       << to_string(x.result) << (x.result == XfailResult::kXpass ? " (fails the run)" : "")
       << ": " << x.detail << "\n";
    std::vector<std::string> cells;
    for (const Cell& c : m.cells)
      if (c.status == CellStatus::kXfail && column_matches(m.columns[c.column], x.record))
        cells.push_back(c.case_id + (c.cosine ? " (cosine " + cosine_text(*c.cosine) + ")" : ""));
    if (!cells.empty()) os << "    xfail cells: " << join(cells) << "\n";
  }
}

std::string to_text_grouped(const Matrix& m) {
  std::ostringstream os;
  caller_lines(os, m);
  const std::vector<std::string> models = m.models();
  const Coverage cov = coverage(m);
  os << models.size() << " model(s), " << cov.columns.size() << " column(s) (" << m.columns.size()
     << " with a bundle) in " << m.dirs.size() << " director" << (m.dirs.size() == 1 ? "y" : "ies") << ": "
     << join(m.dirs) << "\nrows are (model, case), columns (backend, recipe); per column: its cells by status "
     << "and its worst numbers\n";
  write_model_tables(os, m, models);
  write_bounds(os, m);
  write_grouped_failures(os, m);
  write_grouped_xfail(os, m);
  write_text_tail(os, m);
  return fit_text(os.str());
}

// ---- one model in one directory ---------------------------------------------------------------------

// The case × column grid. Two copies of one bundle (the same backend/recipe from two directories)
// are told apart by their directory.
void write_grid(std::ostringstream& os, const Matrix& m) {
  std::vector<std::string> header{"case"};
  for (size_t col = 0; col < m.columns.size(); ++col) header.push_back(label_in_model(m, col));
  // One spelling of the cosine per column: where any cell is written 1−ε, every cell is.
  std::vector<bool> one_minus(m.columns.size(), false);
  for (const Cell& c : m.cells)
    if (c.cosine && detail::cosine_near_one(*c.cosine)) one_minus[c.column] = true;
  std::vector<std::vector<std::string>> rows;
  for (const std::string& id : m.cases) {
    std::vector<std::string> row{id};
    for (size_t col = 0; col < m.columns.size(); ++col) row.push_back(cell_text(find_cell(m, id, col), one_minus[col]));
    rows.push_back(std::move(row));
  }
  write_table(os, header, rows);
  os << "(cells: status, max abs error, cosine)\n";
}

// Column `col`'s worst measured values, so the margin to the bound is visible at a glance: its
// largest max abs error and range error, its lowest cosine, SQNR and headroom (with that cell's
// atol). "" when no cell of it measured an error.
std::string worst_measured_line(const Matrix& m, size_t col) {
  std::optional<double> err, rel, cos, sqnr, head, atol;
  bool one_minus = false;  // the column's grid writes its cosines 1−ε: so does this line
  auto lower = [](std::optional<double>& slot, const std::optional<double>& v) {
    if (v && (!slot || *v < *slot)) slot = v;
  };
  for (const Cell& cell : m.cells) {
    if (cell.column != col) continue;
    one_minus = one_minus || (cell.cosine && detail::cosine_near_one(*cell.cosine));
    if (!cell.max_abs_error) continue;
    if (!err || *cell.max_abs_error > *err) err = cell.max_abs_error;
    if (cell.range_error && (!rel || *cell.range_error > *rel)) rel = cell.range_error;
    lower(cos, cell.cosine);
    lower(sqnr, cell.sqnr_db);
    if (cell.headroom && (!head || *cell.headroom < *head)) atol = cell.atol;
    lower(head, cell.headroom);
  }
  if (!err) return "";
  std::ostringstream os;
  os << "    worst measured: max abs error " << fmt(*err, 4)
     << (rel ? " (" + fmt(*rel, 3) + "·max|ref|)" : std::string()) << ", cosine "
     << (cos ? cosine_cell(*cos, one_minus) : "-") << ", SQNR " << (sqnr ? fmt(*sqnr, 4) : "-")
     << " dB, headroom " << (head ? fmt(*head, 3) : "- (no bound)")
     << (atol ? " (atol " + fmt(*atol, 4) + ")" : std::string()) << "\n";
  return os.str();
}

// Per column: its bundle and precision, the delegates in its program, its bound, its judgement
// and its worst measured values.
void write_column_details(std::ostringstream& os, const Matrix& m) {
  os << "\ncolumns:\n";
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    os << "  " << label_in_model(m, col) << "  bundle " << c.bundle << ", precision " << c.precision << "\n"
       << "    delegates in program: " << (c.delegates.empty() ? "none" : join(c.delegates))
       << (c.backend == "portable" ? " (portable kernels)" : "") << "\n";
    if (!c.mutable_buffers.empty())
      os << "    state: " << detail::state_rule(c.mutable_buffers, c.state_shared_across_methods) << "\n";
    os << "    bound: " << bound_text(c.bound) << "\n";
    if (!c.judgement.empty()) os << "    judged: " << c.judgement << "\n";
    os << worst_measured_line(m, col);
  }
}

// The drifted, over-budget and inconclusive cells, each with its case, column and detail.
void write_failures(std::ostringstream& os, const Matrix& m) {
  bool any = false;
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted || c.status == CellStatus::kOverBudget ||
        c.status == CellStatus::kInconclusive || c.status == CellStatus::kNondeterministic) {
      if (!any) os << "\nfailures:\n";
      any = true;
      os << "  " << c.case_id << " × " << label_in_model(m, c.column) << ": "
         << to_string(c.status) << ": " << c.detail << "\n";
    }
  if (any) os << failed_rules_legend(m);
}

// Each xfail record with its outcome and reason; for a runtime record, the numbers of each xfail
// or xpass cell of the columns it names.
void write_xfail(std::ostringstream& os, const Matrix& m) {
  if (m.xfail.empty()) return;
  os << "\nexpected failures (" << m.xfail_file << "):\n";
  for (const XfailOutcome& x : m.xfail) {
    os << "  " << record_label(x.record) << ", recorded " << x.record.recorded << ": "
       << to_string(x.result)
       << (x.result == XfailResult::kXpass ? " (fails the run)" : "") << ": " << x.detail
       << "\n    reason: " << x.record.reason << "\n";
    if (x.record.half != "runtime") continue;
    for (const Cell& c : m.cells) {
      if (!column_matches(m.columns[c.column], x.record) ||
          (c.status != CellStatus::kXfail && c.status != CellStatus::kXpass))
        continue;
      os << "    " << c.case_id << ": " << to_string(c.status);
      if (c.max_abs_error) os << ", max abs error " << fmt(*c.max_abs_error, 4);
      if (c.cosine) os << ", cosine " << cosine_text(*c.cosine);
      if (c.sqnr_db) os << ", SQNR " << fmt(*c.sqnr_db, 4) << " dB";
      if (c.headroom) os << ", headroom " << fmt(*c.headroom, 3);
      os << "\n";
    }
  }
}

// ---- the table of formats -----------------------------------------------------------------------------

// `etproof matrix`'s text: the directories it read, then to_text.
std::string text_report(const Matrix& m) { return fit_text("matrix: " + join(m.dirs) + "\n") + "\n" + to_text(m); }
std::string json_text_report(const Matrix& m) { return json_report(to_json(m)); }

constexpr Renderer<Matrix> kMatrixRenderers[] = {
    {"text", text_report,
     "the case × column grid (one model), else a table per model; the not-run lines, the summary, the verdict"},
    {"json", json_text_report, "every column, cell, not-run line and the coverage, for tools"},
    {"markdown", to_markdown, "a case × column grid per model, the columns and the not-run lines"},
    {"junit", to_junit, "JUnit XML: a testsuite per column, a testcase per cell (as --junit FILE writes)"},
    {"html", to_html, "one self-contained HTML page (as --html FILE writes)"},
    {"csv", to_csv, "one row per cell: model, case, column, status and the numbers --json gives it"},
};

}  // namespace

std::string to_text(const Matrix& m) {
  if (grouped(m)) return to_text_grouped(m);
  std::ostringstream os;
  caller_lines(os, m);
  if (m.columns.empty()) {
    os << "no bundle columns (matrix takes directories that hold bundles, e.g. "
          "build/golden-set/bundles; for one bundle use etproof parity BUNDLE)\n";
  } else {
    write_grid(os, m);
    write_column_details(os, m);
    write_failures(os, m);
  }
  write_xfail(os, m);
  write_text_tail(os, m);
  return fit_text(os.str());
}

Renderers<Matrix> matrix_renderers() { return kMatrixRenderers; }

}  // namespace etproof
