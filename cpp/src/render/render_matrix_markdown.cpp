// etproof/render_matrix_markdown.cpp — the matrix as Markdown (etproof/render/matrix.h: to_markdown).
#include <sstream>

#include "etproof/render/matrix.h"
#include "etproof/replay/matrix.h"
#include "render/render_matrix.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
namespace {

// A table cell's text: '|' escaped, a newline a space.
std::string esc(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

// The case × column grid of `columns` over `cases`: each cell's status word, max abs error and
// cosine; "–" where the column has no such case.
void write_grid(std::ostringstream& os, const Matrix& m, const std::vector<size_t>& columns,
                const std::vector<std::string>& cases) {
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
}

// One grid per model (with several models or directories), else one grid of every column.
void write_grids(std::ostringstream& os, const Matrix& m) {
  if (grouped(m)) {
    for (const std::string& model : m.models()) {
      std::vector<size_t> cols;
      for (size_t col = 0; col < m.columns.size(); ++col)
        if (m.columns[col].model == model) cols.push_back(col);
      os << "### " << esc(model_label(model)) << "\n\n";
      write_grid(os, m, cols, model_cases(m, model));
      os << "\n";
    }
  } else {
    std::vector<size_t> cols;
    for (size_t col = 0; col < m.columns.size(); ++col) cols.push_back(col);
    write_grid(os, m, cols, m.cases);
  }
}

// The columns: bundle, delegates in the program, bound.
void write_columns(std::ostringstream& os, const Matrix& m) {
  os << "\n| column | bundle | delegates in program | bound |\n| --- | --- | --- | --- |\n";
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    os << "| " << esc((grouped(m) ? model_label(c.model) + " " : std::string()) + label_in_model(m, col))
       << " | " << esc(c.bundle) << " | "
       << (c.delegates.empty() ? std::string("none") : esc(join(c.delegates))) << " | "
       << esc(bound_text(c.bound)) << " |\n";
  }
}

// The not-run lines, the bundles --method left out and the xfail records, each a table when any.
void write_not_run(std::ostringstream& os, const Matrix& m) {
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
}

// `matrix --bench`: one row per benchmarked column (latency, threads, memory, speed-ups); nothing
// when no column was.
void write_speed(std::ostringstream& os, const Matrix& m) {
  bool speed = false;
  for (const Column& c : m.columns) speed = speed || c.speed.has_value();
  if (!speed) return;
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

}  // namespace

std::string to_markdown(const Matrix& m) {
  std::ostringstream os;
  write_grids(os, m);
  write_columns(os, m);
  write_not_run(os, m);
  write_speed(os, m);
  os << "\n" << summary(m) << " — **" << verdict(m) << "**\n";
  if (!m.caller_bound.empty())
    os << "\nBound: caller-supplied for every column (" << esc(m.caller_bound) << ").\n";
  if (!m.caller_budget.empty())
    os << "\nBudget: the recipe's cost judged by " << esc(m.caller_budget) << " (--budget).\n";
  return os.str();
}

}  // namespace etproof
