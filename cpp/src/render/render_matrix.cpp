// etproof/render_matrix.cpp — the matrix as text and Markdown and JSON (etproof/matrix.h).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "etproof/render/matrix.h"
#include "etproof/replay/matrix.h"
#include "render/render_matrix.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
namespace {

bool grouped(const Matrix& m) { return m.models().size() > 1 || m.dirs.size() > 1; }


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

std::string to_text_grouped(const Matrix& m) {
  std::ostringstream os;
  caller_lines(os, m);
  const std::vector<std::string> models = m.models();
  const Coverage cov = coverage(m);
  os << models.size() << " model(s), " << cov.columns.size() << " column(s) (" << m.columns.size()
     << " with a bundle) in " << m.dirs.size() << " director" << (m.dirs.size() == 1 ? "y" : "ies") << ": "
     << join(m.dirs) << "\nrows are (model, case), columns (backend, recipe); per column: its cells by status "
     << "and its worst numbers\n";
  // One table per model, every one with the same column widths.
  const std::vector<std::string> header{"column", "cells", "max abs err", "·max|ref|", "cosine", "SQNR dB",
                                        "headroom"};
  std::vector<size_t> width(header.size(), 0);
  std::vector<std::vector<std::string>> rows(m.columns.size());
  for (size_t col = 0; col < m.columns.size(); ++col) {
    std::map<CellStatus, size_t> count;
    std::optional<double> err, rel, cos, sqnr, head;
    for (const Cell& cell : m.cells) {
      if (cell.column != col) continue;
      ++count[cell.status];
      auto hi = [](std::optional<double>& slot, const std::optional<double>& v) {
        if (v && (!slot || *v > *slot)) slot = v;
      };
      auto lo = [](std::optional<double>& slot, const std::optional<double>& v) {
        if (v && (!slot || *v < *slot)) slot = v;
      };
      hi(err, cell.max_abs_error);
      hi(rel, cell.range_error);
      lo(cos, cell.cosine);
      lo(sqnr, cell.sqnr_db);
      lo(head, cell.headroom);
    }
    std::vector<std::string>& r = rows[col];
    r = {label_in_model(m, col), count.empty() ? std::string("no cells") : count_text(count)};
    if (const std::optional<double> cost = worst_flagged_cost(m, col)) r[1] += ", cost " + fmt(*cost, 3) + " dB!";
    if (err)
      for (const std::string& v : {fmt(*err, 3), rel ? fmt(*rel, 3) : "-", cos ? cosine_text(*cos) : "-",
                                    sqnr ? fmt(*sqnr, 4) : "-", head ? fmt(*head, 3) : "-"})
        r.push_back(v);
  }
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
    for (size_t col = 0; col < m.columns.size(); ++col)
      if (m.columns[col].model == model) line(rows[col]);
  }
  // Each distinct bound once, with the (recipe, precision) it belongs to.
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
  bool any = false;
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted || c.status == CellStatus::kXpass ||
        c.status == CellStatus::kInconclusive) {
      if (!any) os << "\nfailures:\n";
      any = true;
      const Column& col = m.columns[c.column];
      os << "  " << model_label(col.model) << " " << c.case_id << " × "
         << label_in_model(m, c.column) << ": " << to_string(c.status) << ": " << c.detail << "\n";
    }
  if (!m.xfail.empty()) {
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
  write_text_tail(os, m);
  return fit_text(os.str());
}

}  // namespace

std::string to_text(const Matrix& m) {
  if (grouped(m)) return to_text_grouped(m);
  std::ostringstream os;
  caller_lines(os, m);
  if (m.columns.empty()) {
    os << "no bundle columns (matrix takes directories that hold bundles, e.g. "
          "build/golden-set/bundles; for one bundle use etproof parity BUNDLE)\n";
  } else {
    std::vector<std::string> header{"case"};
    // Two copies of one bundle (the same backend/recipe from two directories) are told apart by
    // their directory.
    for (size_t col = 0; col < m.columns.size(); ++col) header.push_back(label_in_model(m, col));
    std::vector<std::vector<std::string>> rows;
    for (const std::string& id : m.cases) {
      std::vector<std::string> row{id};
      for (size_t col = 0; col < m.columns.size(); ++col)
        row.push_back(cell_text(find_cell(m, id, col)));
      rows.push_back(std::move(row));
    }
    write_table(os, header, rows);
    os << "(cells: status, max abs error, cosine)\n\ncolumns:\n";
    for (const Column& c : m.columns) {
      os << "  " << label_in_model(m, static_cast<size_t>(&c - m.columns.data())) << "  bundle "
         << c.bundle << ", precision " << c.precision << "\n"
         << "    delegates in program: " << (c.delegates.empty() ? "none" : join(c.delegates))
         << (c.backend == "portable" ? " (portable kernels)" : "") << "\n";
      os << "    bound: " << bound_text(c.bound) << "\n";
      if (!c.judgement.empty()) os << "    judged: " << c.judgement << "\n";
      // The column's worst measured values, so the margin to the bound is visible at a glance.
      std::optional<double> err, rel, cos, sqnr, head, atol;
      auto lower = [](std::optional<double>& slot, const std::optional<double>& v) {
        if (v && (!slot || *v < *slot)) slot = v;
      };
      for (const Cell& cell : m.cells) {
        if (&m.columns[cell.column] != &c || !cell.max_abs_error) continue;
        if (!err || *cell.max_abs_error > *err) err = cell.max_abs_error;
        if (cell.range_error && (!rel || *cell.range_error > *rel)) rel = cell.range_error;
        lower(cos, cell.cosine);
        lower(sqnr, cell.sqnr_db);
        if (cell.headroom && (!head || *cell.headroom < *head)) atol = cell.atol;
        lower(head, cell.headroom);
      }
      if (err)
        os << "    worst measured: max abs error " << fmt(*err, 4)
           << (rel ? " (" + fmt(*rel, 3) + "·max|ref|)" : std::string()) << ", cosine "
           << (cos ? cosine_text(*cos) : "-") << ", SQNR " << (sqnr ? fmt(*sqnr, 4) : "-")
           << " dB, headroom " << (head ? fmt(*head, 3) : "- (no bound)")
           << (atol ? " (atol " + fmt(*atol, 4) + ")" : std::string()) << "\n";
    }
    bool any = false;
    for (const Cell& c : m.cells)
      if (c.status == CellStatus::kDrifted || c.status == CellStatus::kInconclusive) {
        if (!any) os << "\nfailures:\n";
        any = true;
        os << "  " << c.case_id << " × " << label_in_model(m, c.column) << ": "
           << to_string(c.status) << ": " << c.detail << "\n";
      }
  }
  if (!m.xfail.empty()) {
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
  write_text_tail(os, m);
  return fit_text(os.str());
}

std::string to_markdown(const Matrix& m) {
  auto esc = [](std::string s) {
    std::string out;
    for (char ch : s) {
      if (ch == '|') out += "\\|";
      else if (ch == '\n') out += ' ';
      else out += ch;
    }
    return out;
  };
  std::ostringstream os;
  auto grid = [&](const std::vector<size_t>& columns, const std::vector<std::string>& cases) {
  os << "| case |";
  for (size_t col : columns) os << " " << esc(label_in_model(m, col)) << " |";
  os << "\n| --- |";
  for (size_t i = 0; i < columns.size(); ++i) os << " --- |";
  os << "\n";
  for (const std::string& id : cases) {
    os << "| " << esc(id) << " |";
    for (size_t col : columns) {
      const Cell* c = find_cell(m, id, col);
      if (!c) {
        os << " – |";
        continue;
      }
      os << " `" << to_string(c->status) << "`";
      if (c->max_abs_error) os << " " << fmt(*c->max_abs_error, 2);
      if (c->cosine) os << " cos " << cosine_text(*c->cosine);
      os << " |";
    }
    os << "\n";
  }
  };
  if (grouped(m)) {
    for (const std::string& model : m.models()) {
      std::vector<size_t> cols;
      for (size_t col = 0; col < m.columns.size(); ++col)
        if (m.columns[col].model == model) cols.push_back(col);
      os << "### " << esc(model_label(model)) << "\n\n";
      grid(cols, model_cases(m, model));
      os << "\n";
    }
  } else {
    std::vector<size_t> cols;
    for (size_t col = 0; col < m.columns.size(); ++col) cols.push_back(col);
    grid(cols, m.cases);
  }
  os << "\n| column | bundle | delegates in program | bound |\n| --- | --- | --- | --- |\n";
  for (const Column& c : m.columns)
    os << "| " << esc((grouped(m) ? model_label(c.model) + " " : std::string()) +
                      label_in_model(m, static_cast<size_t>(&c - m.columns.data())))
       << " | " << esc(c.bundle) << " | "
       << (c.delegates.empty() ? std::string("none") : esc(join(c.delegates))) << " | "
       << esc(bound_text(c.bound)) << " |\n";
  if (!m.not_run.empty()) {
    os << "\n**Not run**\n\n| backend | recipe | status | fails the run | reason |\n"
          "| --- | --- | --- | --- | --- |\n";
    for (const NotRun& n : m.not_run)
      os << "| " << esc(n.backend) << " | " << esc(n.recipe) << " | `" << to_string(n.status)
         << "` | " << (fails_run(n.status) ? "yes" : "no") << " | " << esc(n.reason) << " |\n";
  }
  if (!m.left_out.empty()) {
    os << "\n**Left out** by `--method " << esc(join(m.methods, " --method ")) << "` (not columns; they do not "
          "fail the run)\n\n| bundle | reason |\n| --- | --- |\n";
    for (const LeftOut& l : m.left_out) os << "| " << esc(l.bundle) << " | " << esc(l.reason) << " |\n";
  }
  if (!m.xfail.empty()) {
    os << "\n**Expected failures** (`" << esc(m.xfail_file) << "`)\n\n"
          "| model | backend | recipe | half | recorded | outcome | fails the run | reason | detail |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const XfailOutcome& x : m.xfail)
      os << "| " << esc(x.record.model) << " | " << esc(x.record.backend) << " | "
         << esc(x.record.recipe) << " | " << x.record.half << " | " << x.record.recorded << " | `"
         << to_string(x.result) << "` | " << (x.result == XfailResult::kXpass ? "yes" : "no")
         << " | " << esc(x.record.reason) << " | " << esc(x.detail) << " |\n";
  }
  bool speed = false;
  for (const Column& c : m.columns) speed = speed || c.speed.has_value();
  if (speed) {
    os << "\n**Speed** (`--bench`: one call on each column's first golden case)\n\n"
          "| model | column | median ms | p90 ms | runs | threads | peak MiB | × portable/fp32 | × xnnpack/fp32 |\n"
          "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (size_t col = 0; col < m.columns.size(); ++col) {
      const Column& c = m.columns[col];
      if (!c.speed) continue;
      const BenchReport& b = *c.speed;
      os << "| " << esc(c.model) << " | " << esc(label_in_model(m, col)) << " | ";
      if (b.refused || b.methods.empty() || !b.methods.front().latency) {
        os << "not measured: " << esc(b.error ? b.error->cause() : b.methods.empty() || !b.methods.front().error
                                                                     ? std::string("refused")
                                                                     : b.methods.front().error->cause())
           << " | | | | | | |\n";
        continue;
      }
      const Latency& l = *b.methods.front().latency;
      auto x = [&](const char* backend) {
        const auto v = speedup_against(m, col, backend, "fp32");
        return v ? detail::format_number(*v, 3) : std::string("—");
      };
      os << detail::format_number(l.median_ms, 3) << " | " << detail::format_number(l.p90_ms, 3) << " | " << l.runs
         << " | " << b.threads_used << " | " << (b.peak_rss_mb ? detail::format_number(*b.peak_rss_mb, 3) : "—")
         << " | " << x("portable") << " | " << x("xnnpack") << " |\n";
    }
  }
  os << "\n" << summary(m) << " — **" << verdict(m) << "**\n";
  if (!m.caller_bound.empty())
    os << "\nBound: caller-supplied for every column (" << esc(m.caller_bound) << ").\n";
  if (!m.caller_budget.empty())
    os << "\nBudget: the recipe's cost judged by " << esc(m.caller_budget) << " (--budget).\n";
  return os.str();
}

nlohmann::json to_json(const Matrix& m) {
  nlohmann::json cols = nlohmann::json::array();
  for (const Column& c : m.columns)
    cols.push_back({{"backend", c.backend},
                    {"recipe", c.recipe},
                    {"precision", c.precision},
                    {"delegates", c.delegates},
                    {"bundle", c.bundle},
                    {"model", c.model},
                    {"dir", c.dir},
                    {"bound", c.bound ? to_json(*c.bound) : nlohmann::json(nullptr)}});
  for (size_t i = 0; i < m.columns.size(); ++i) {
    cols[i]["against"] = m.columns[i].against;
    if (!m.columns[i].judgement.empty()) cols[i]["judgement"] = m.columns[i].judgement;
    // Where it ran: null here (the run's machine), else the emulated machine's record.
    cols[i]["machine"] = m.columns[i].machine_record.is_null() ? nlohmann::json(nullptr) : m.columns[i].machine_record;
    cols[i]["column"] = column_label(m.columns[i]);
    if (!m.columns[i].precision_reason.empty())
      cols[i]["precision_reason"] = m.columns[i].precision_reason;
    if (m.columns[i].speed) {
      nlohmann::json sp = to_json(std::vector<BenchReport>{*m.columns[i].speed}).at("bench").at(0);
      for (const char* backend : {"portable", "xnnpack"}) {
        const auto x = speedup_against(m, i, backend, "fp32");
        sp[std::string("speedup_vs_") + backend + "_fp32"] = x ? detail::json_number(*x) : nlohmann::json(nullptr);
      }
      cols[i]["speed"] = std::move(sp);
    }
  }
  nlohmann::json cells = nlohmann::json::array();
  for (const Cell& c : m.cells) {
    const Column& col = m.columns[c.column];
    cells.push_back({{"case", c.case_id},
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
                     {"bound", col.bound ? to_json(*col.bound) : nlohmann::json(nullptr)},
                     {"detail", c.detail}});
    // The machine it ran on: null here, else the emulated machine's record (Column::machine_record).
    cells.back()["machine"] = col.machine_record.is_null() ? nlohmann::json(nullptr) : col.machine_record;
    if (c.cost_sqnr_db) cells.back()["cost_sqnr_db"] = opt_num(c.cost_sqnr_db);
    if (!c.cost_over_default.empty()) cells.back()["cost_over_default"] = c.cost_over_default;
  }
  nlohmann::json not_run = nlohmann::json::array();
  for (const NotRun& n : m.not_run)
    not_run.push_back({{"backend", n.backend},
                       {"recipe", n.recipe},
                       {"status", std::string(to_string(n.status))},
                       {"fails_run", fails_run(n.status)},
                       {"reason", n.reason},
                       {"dir", n.dir},
                       {"model", n.model},
                       {"machine", n.machine.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.machine)}});
  nlohmann::json records = nlohmann::json::array();
  for (const XfailOutcome& x : m.xfail)
    records.push_back({{"model", x.record.model},
                       {"backend", x.record.backend},
                       {"recipe", x.record.recipe},
                       {"half", x.record.half},
                       {"reason", x.record.reason},
                       {"recorded", x.record.recorded},
                       {"cases", x.record.cases.empty() ? nlohmann::json(nullptr)
                                                        : nlohmann::json(x.record.cases)},
                       {"outcome", std::string(to_string(x.result))},
                       {"fails_run", x.result == XfailResult::kXpass},
                       {"detail", x.detail}});
  // What was run (coverage): columns, never cells, with the requirements and what missed them.
  const Coverage cov = coverage(m);
  auto column_json = [](const CoverageColumn& k) {
    return nlohmann::json{{"model", k.model},   {"backend", k.backend},
                          {"recipe", k.recipe}, {"column", k.label()},
                          {"dir", k.dir},       {"bundle", k.bundle.empty() ? nlohmann::json(nullptr) : nlohmann::json(k.bundle)},
                          {"status", std::string(to_string(k.status))}, {"fails_run", fails_run(k.status)},
                          {"reason", k.reason}};
  };
  nlohmann::json not_ran = nlohmann::json::array();
  nlohmann::json by_status = nlohmann::json::object();
  for (const CoverageColumn& k : cov.columns) {
    if (k.ran) continue;
    not_ran.push_back(column_json(k));
    const std::string s(to_string(k.status));
    by_status[s] = by_status.value(s, 0) + 1;
  }
  nlohmann::json unmet = nlohmann::json::array(), required_not_run = nlohmann::json::array(),
                 required_absent = nlohmann::json::array();
  for (const UnmetRequirement& u : cov.unmet) {
    nlohmann::json cols_not_run = nlohmann::json::array();
    for (size_t i : u.not_run) {
      nlohmann::json c = column_json(cov.columns[i]);
      cols_not_run.push_back(c);
      c["require"] = u.require;
      required_not_run.push_back(std::move(c));
    }
    if (u.matched == 0) required_absent.push_back(u.require);
    unmet.push_back({{"require", u.require}, {"matched", u.matched}, {"not_run", cols_not_run},
                     {"text", unmet_text(cov, u)}});
  }
  const nlohmann::json coverage_doc = {{"columns", cov.columns.size()},
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
  nlohmann::json groups = nlohmann::json::array();
  for (const NotRunGroup& g : not_run_groups(m)) {
    nlohmann::json lines = nlohmann::json::array();
    for (const NotRun* n : g.lines)
      lines.push_back({{"model", n->model}, {"backend", n->backend}, {"recipe", n->recipe}, {"dir", n->dir}});
    groups.push_back({{"status", std::string(to_string(g.status))},
                      {"fails_run", fails_run(g.status)},
                      {"covers", group_label(m, g)},
                      {"reason", g.reason},
                      {"lines", lines}});
  }
  nlohmann::json doc = {{"columns", cols},
          {"coverage", coverage_doc},
          {"not_run_groups", groups},
          {"cases", m.cases},
          {"xfail", {{"file", m.xfail_file.empty() ? nlohmann::json(nullptr)
                                                   : nlohmann::json(m.xfail_file)},
                     {"records", records}}},
          {"cells", cells},
          {"not_run", not_run},
          {"measured", m.measured},
          {"exit_code", m.exit_code()},
          {"summary", summary(m)},
          {"verdict", verdict(m)},
          {"caller_bound", m.caller_bound.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(m.caller_bound)},
          {"caller_budget", m.caller_budget.empty() ? nlohmann::json(nullptr)
                                                    : nlohmann::json(m.caller_budget)},
          {"models", m.models()},
          {"dirs", m.dirs},
          {"xfail_files", m.xfail_files}};
  // With a method selection only (without one, the document is as before).
  if (!m.methods.empty()) {
    nlohmann::json left = nlohmann::json::array();
    for (const LeftOut& l : m.left_out)
      left.push_back({{"bundle", l.bundle}, {"model", l.model}, {"dir", l.dir}, {"reason", l.reason}});
    doc["methods"] = m.methods;
    doc["left_out"] = left;
  }
  return doc;
}

}  // namespace etproof
