// etproof/render_matrix_html.cpp — the matrix as one self-contained HTML page (etproof/matrix.h:
// to_html, write_html). No network asset: the style is inline, and there is no script.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "etproof/render/matrix.h"
#include "etproof/core/error.h"
#include "etproof/replay/matrix.h"
#include "render/render_matrix.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
namespace {

// Every string that comes from a manifest, a report or an error goes through this.
std::string esc(const std::string& s) { return detail::xml_escape(s); }

// The legend, in the order a reader meets them; every status of etproof/status.h.
struct Swatch {
  CellStatus status;
  const char* meaning;
};
constexpr Swatch kLegend[] = {
    {CellStatus::kAgreed, "within its bound on the named delegate (or portable kernels); shaded by headroom"},
    {CellStatus::kAgreedUndelegated, "agreed, but no delegate took the graph: a claim about portable kernels"},
    {CellStatus::kDrifted, "ran, outside its bound"},
    {CellStatus::kOverBudget, "within its bound, but the recipe's cost breaks the budget"},
    {CellStatus::kNondeterministic, "ran more than once and gave other bytes on another run"},
    {CellStatus::kXfail, "drifted (or failed to export) as DIR/xfail.json expects"},
    {CellStatus::kXpass, "an expected failure that passed: update or remove the record"},
    {CellStatus::kNoBound, "ran, but no bound is known for its recipe/precision"},
    {CellStatus::kInconclusive, "ran, but its references disagree or no bound narrower than the output follows"},
    {CellStatus::kLoadFailed, "ExecuTorch refused to load the program"},
    {CellStatus::kRunFailed, "ExecuTorch failed to run it"},
    {CellStatus::kCrashed, "the worker process running it died"},
    {CellStatus::kBundleInvalid, "manifest, artifact or goldens cannot be used as they are"},
    {CellStatus::kExportFailed, "quantize, lower or serialize failed"},
    {CellStatus::kExportRefused, "the export half refused: a toolchain is missing"},
    {CellStatus::kNotLinked, "this binary has no runtime for the delegate"},
    {CellStatus::kUnavailable, "linked, but not available on this machine"},
    {CellStatus::kNotRunnableHere, "compiled for another target (an OpenVINO blob of another ISA class)"},
};

// The CSS class of a status: "s-" and its spelling.
std::string status_class(CellStatus s) { return "s-" + std::string(to_string(s)); }

// An agreed cell's background: the greener, the more headroom it kept (headroom 1: nothing
// measured against the bound; 0: at the bound).
std::string headroom_style(const Cell& c) {
  if (!c.headroom || !is_agreement(c.status)) return "";
  const double h = std::clamp(*c.headroom, 0.0, 1.0);
  const int lightness = static_cast<int>(std::lround(90 - 32 * h));
  const int hue = c.status == CellStatus::kAgreed ? 130 : 165;
  return " style=\"background:hsl(" + std::to_string(hue) + ",55%," + std::to_string(lightness) + "%)\"";
}

// "Which layer drifted" (etproof/attribute.h): each tapped column's summary, then the plot.
void write_attribution(std::ostringstream& os, const Matrix& m, const AttributionFigure& f) {
  os << "<div class=\"attribution\" data-model=\"" << esc(f.model) << "\">\n<h3>Which layer drifted</h3>\n<ul>\n";
  for (const auto& [col, line] : f.lines)
    os << "<li data-bundle=\"" << esc(m.columns[col].bundle) << "\"><b>" << esc(label_in_model(m, col)) << "</b>: "
       << esc(line) << "</li>\n";
  os << "</ul>\n";
  if (!f.image.empty())
    os << "<img class=\"attribution\" alt=\"" << esc("SQNR against depth, " + f.model)
       << "\" src=\"" << esc(f.image) << "\">\n";
  else
    os << "<p class=\"muted\">No plot: " << esc(f.why_not) << "</p>\n";
  os << "</div>\n";
}

constexpr const char* kStyle = R"(
:root { --ok:#2e9e4f; --bad:#c62828; --warn:#e08a00; --fail:#7b1fa2; --off:#9e9e9e; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.2em 2em; color:#212121; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.2em; margin: 1.6em 0 .4em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: 1em 0 .3em; }
.verdict { padding: .6em 1em; border-radius: 6px; font-weight: 600; margin: .6em 0; }
.verdict.pass { background:#e6f4ea; border-left: 6px solid var(--ok); }
.verdict.fail { background:#fdecea; border-left: 6px solid var(--bad); }
.verdict small { display:block; font-weight: 400; }
.muted { color:#616161; }
table { border-collapse: collapse; margin: .3em 0 1em; }
th, td { border: 1px solid #ddd; padding: 3px 7px; vertical-align: top; text-align: left; }
thead th { background:#f5f5f5; font-weight: 600; }
th.case { background:#fafafa; font-weight: 500; white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
table.grid { font-size: .9em; }
table.grid thead th { font-size: .95em; max-width: 9em; }
td.cell details summary { cursor: pointer; list-style: none; white-space: nowrap; }
td.cell details summary::-webkit-details-marker { display: none; }
td.cell details[open] summary { font-weight: 600; }
td.cell dl { margin: .3em 0 0; display: grid; grid-template-columns: auto auto; gap: 0 .6em; font-size: .9em; }
td.cell dt { color:#424242; } td.cell dd { margin: 0; font-variant-numeric: tabular-nums; }
td.cell .detail { grid-column: 1 / -1; max-width: 32em; white-space: pre-wrap; word-break: break-word; }
td.absent { color:#9e9e9e; text-align: center; }
.word { font-family: ui-monospace, monospace; font-size: .95em; }
img.attribution { max-width: 100%; height: auto; border: 1px solid #ddd; }
.num { font-variant-numeric: tabular-nums; color:#424242; font-size: .9em; }
.s-agreed { background:#c8ebd0; }
.s-agreed-undelegated { background:#d3efe9; outline: 2px dashed #26a69a; outline-offset: -3px; }
.s-drifted { background:#f8c9c4; color:#7f0000; }
.s-over-budget { background:#ffccbc; color:#6d2c00; outline: 2px dotted #e64a19; outline-offset: -3px; }
.s-nondeterministic { background:#f8bbd0; color:#5d0028; outline: 2px double #ad1457; outline-offset: -3px; }
.s-xfail { background:#ffe0b2; }
.s-xpass { background:#e1bee7; color:#4a0072; }
.s-no-bound { background:#fff59d; }
.s-load-failed, .s-run-failed, .s-crashed, .s-bundle-invalid, .s-export-failed { background:#ef9a9a; color:#5f0000; }
.s-export-refused, .s-not-linked, .s-unavailable { background:#eeeeee; color:#424242; }
.fails { color: var(--bad); font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: .3em .8em; margin: .4em 0 1em; padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: .4em; font-size: .9em; max-width: 30em; }
.legend .chip { display: inline-block; min-width: 10.5em; padding: 1px 6px; border: 1px solid #ccc; border-radius: 3px; }
.shade { display: inline-flex; vertical-align: middle; }
.shade span { width: 2.2em; height: 1em; display: inline-block; }
nav ul { columns: 3; padding-left: 1.2em; margin: .3em 0; }
td.reason { max-width: 60em; white-space: pre-wrap; word-break: break-word; }
)";

std::string number_row(const char* name, const std::string& value) {
  return std::string("<dt>") + name + "</dt><dd>" + value + "</dd>";
}

// One cell of the grid: its status word (and a short number) as the summary, every number it has
// when opened.
void write_cell(std::ostringstream& os, const Matrix& m, const std::string& model, const std::string& id,
                size_t col) {
  const Column& c = m.columns[col];
  const Cell* cell = find_cell(m, id, col);
  if (!cell) {
    os << "<td class=\"absent\" title=\"" << esc(label_in_model(m, col)) << " has no case " << esc(id)
       << "\">–</td>";
    return;
  }
  const std::string word(to_string(cell->status));
  os << "<td class=\"cell " << status_class(cell->status) << "\"" << headroom_style(*cell)
     << " data-model=\"" << esc(model) << "\" data-case=\"" << esc(id) << "\" data-column=\""
     << esc(label_in_model(m, col)) << "\" data-bundle=\"" << esc(c.bundle) << "\" data-dir=\""
     << esc(c.dir) << "\" data-status=\"" << word << "\"><details><summary><span class=\"word\">" << word
     << "</span>";
  if (cell->cosine) os << " <span class=\"num\">cos " << esc(cosine_text(*cell->cosine)) << "</span>";
  os << "</summary><dl>";
  auto opt = [](const std::optional<double>& v, int precision) { return v ? esc(fmt(*v, precision)) : "–"; };
  os << number_row("max abs error", opt(cell->max_abs_error, 4))
     << number_row("cosine", cell->cosine ? esc(cosine_text(*cell->cosine)) : "–")
     << number_row("SQNR", cell->sqnr_db ? esc(detail::sqnr_text(*cell->sqnr_db)) + " dB" : "–")
     << number_row("headroom", cell->headroom ? esc(fmt(*cell->headroom, 3)) : "– (no bound)")
     << number_row("range error", cell->range_error ? esc(fmt(*cell->range_error, 3)) + "·max|ref|" : "–")
     << number_row("atol", opt(cell->atol, 4));
  if (!cell->detail.empty()) os << "<dd class=\"detail\">" << esc(cell->detail) << "</dd>";
  os << "</dl></details></td>";
}

// The columns of one model: bundle, delegates, the bound and what it was judged against.
void write_columns(std::ostringstream& os, const Matrix& m, const std::vector<size_t>& cols) {
  os << "<table class=\"columns\"><thead><tr><th>column</th><th>bundle</th><th>precision</th>"
        "<th>delegates in program</th><th>bound</th><th>judged against</th>";
  const bool speed = std::any_of(cols.begin(), cols.end(), [&](size_t i) { return m.columns[i].speed.has_value(); });
  if (speed) os << "<th>median latency (--bench)</th>";
  os << "</tr></thead><tbody>\n";
  for (size_t col : cols) {
    const Column& c = m.columns[col];
    os << "<tr><td class=\"word\">" << esc(label_in_model(m, col)) << "</td><td>" << esc(c.bundle)
       << "<br><span class=\"muted\">" << esc(c.dir) << "</span></td><td>" << esc(c.precision) << "</td><td>"
       << (c.delegates.empty() ? std::string("none") : esc(join(c.delegates)))
       << (c.backend == "portable" ? " (portable kernels)" : "") << "</td><td>" << esc(bound_text(c.bound))
       << "</td><td>" << esc(c.against);
    if (!c.judgement.empty()) os << "<br><span class=\"muted\">" << esc(c.judgement) << "</span>";
    if (!c.precision_reason.empty()) os << "<br><span class=\"muted\">" << esc(c.precision_reason) << "</span>";
    os << "</td>";
    if (speed) {
      os << "<td>";
      if (c.speed && !c.speed->methods.empty() && c.speed->methods.front().latency)
        os << esc(detail::format_number(c.speed->methods.front().latency->median_ms, 3)) << " ms";
      else if (c.speed)
        os << "not measured";
      os << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</tbody></table>\n";
}

void write_not_run(std::ostringstream& os, const std::vector<const NotRun*>& rows, bool with_model) {
  if (rows.empty()) return;
  os << "<h3>Not run</h3>\n<table class=\"not-run\"><thead><tr>" << (with_model ? "<th>model</th>" : "")
     << "<th>column</th><th>status</th><th>fails the run</th><th>reason</th></tr></thead><tbody>\n";
  for (const NotRun* n : rows) {
    os << "<tr class=\"not-run-row\" data-status=\"" << to_string(n->status) << "\">";
    if (with_model) os << "<td>" << esc(model_label(n->model)) << "</td>";
    os << "<td class=\"word\">" << esc(n->backend.empty() ? "?" : n->backend) << "/"
       << esc(n->recipe.empty() ? "?" : n->recipe) << "</td><td class=\"word " << status_class(n->status) << "\">"
       << to_string(n->status) << "</td><td>"
       << (fails_run(n->status) ? "<span class=\"fails\">yes</span>" : "no") << "</td><td class=\"reason\">"
       << esc(n->reason) << (n->dir.empty() ? "" : "<br><span class=\"muted\">" + esc(n->dir) + "</span>")
       << "</td></tr>\n";
  }
  os << "</tbody></table>\n";
}

void write_legend(std::ostringstream& os, const Matrix& m) {
  std::map<CellStatus, size_t> count;
  for (const Cell& c : m.cells) ++count[c.status];
  for (const NotRun& n : m.not_run) ++count[n.status];
  os << "<ul class=\"legend\">\n";
  for (const Swatch& s : kLegend) {
    os << "<li><span class=\"chip word " << status_class(s.status) << "\">" << to_string(s.status);
    if (count[s.status]) os << " (" << count[s.status] << ")";
    os << "</span><span>" << s.meaning
       << (fails_run(s.status) ? " <span class=\"fails\">fails the run</span>" : "") << "</span></li>\n";
  }
  os << "<li><span class=\"shade\">";
  for (double h : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    Cell c;
    c.headroom = h;
    os << "<span" << headroom_style(c) << " title=\"headroom " << fmt(h, 2) << "\"></span>";
  }
  os << "</span><span>agreed cells: paler near the bound (headroom 0), greener with headroom to spare "
        "(1 − the worst measured/allowed ratio)</span></li>\n</ul>\n";
}

// The page's head and style, its title and the run's verdict with its exit status and summary;
// the caller's bound and budget when given; the bound and emulation hints; the legend.
void write_head(std::ostringstream& os, const Matrix& m) {
  const int code = m.exit_code();
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>etproof matrix: "
     << esc(code == 0 ? "PASS" : "FAIL") << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  os << "<h1>etproof matrix</h1>\n<p class=\"muted\">" << esc(join(m.dirs))
     << " — rows are (model, golden case), columns (backend, recipe). Open a cell for its numbers.</p>\n";
  os << "<div class=\"verdict " << (code == 0 ? "pass" : "fail") << "\" id=\"verdict\" data-exit-code=\"" << code
     << "\">" << esc(verdict(m)) << "<small>exit status " << code
     << (code == 0 ? ": the run passes" : ": the run fails") << " — " << esc(summary(m)) << "</small></div>\n";
  if (!m.caller_bound.empty())
    os << "<p>Bound: caller-supplied for every column (" << esc(m.caller_bound)
       << "); fields not given come from each column's derived bound.</p>\n";
  if (!m.caller_budget.empty())
    os << "<p>Budget: the recipe's cost judged by " << esc(m.caller_budget)
       << " (--budget; keys not given come from each bundle's own budget).</p>\n";
  if (drifted_under_derived(m)) os << "<p class=\"muted\">" << esc(kBoundHint) << "</p>\n";
  if (const std::string h = emulation_hint(m); !h.empty()) os << "<p class=\"muted\">" << esc(h) << "</p>\n";
  write_legend(os, m);
}

// With several models: a link to each model's section, with its cells counted by status.
void write_nav(std::ostringstream& os, const Matrix& m, const std::vector<std::string>& models) {
  if (models.size() <= 1) return;
  os << "<nav><ul>\n";
  for (size_t i = 0; i < models.size(); ++i) {
    std::map<CellStatus, size_t> count;
    for (const Cell& c : m.cells)
      if (m.columns[c.column].model == models[i]) ++count[c.status];
    os << "<li><a href=\"#model-" << i << "\">" << esc(model_label(models[i])) << "</a> <span class=\"muted\">"
       << esc(count_text(count)) << "</span></li>\n";
  }
  os << "</ul></nav>\n";
}

// Model `i`'s section: its grid of cases × columns, its columns, its not-run lines and, where
// m.attributions has its figure, which layer drifted.
void write_model(std::ostringstream& os, const Matrix& m, size_t i, const std::string& model) {
  std::vector<size_t> cols;
  for (size_t col = 0; col < m.columns.size(); ++col)
    if (m.columns[col].model == model) cols.push_back(col);
  os << "<section class=\"model\" id=\"model-" << i << "\" data-model=\"" << esc(model) << "\">\n<h2>"
     << esc(model_label(model)) << "</h2>\n<div class=\"scroll\"><table class=\"grid\"><thead><tr><th>case</th>";
  for (size_t col : cols)
    os << "<th title=\"" << esc(m.columns[col].bundle + ": " + bound_text(m.columns[col].bound)) << "\">"
       << esc(label_in_model(m, col)) << "</th>";
  os << "</tr></thead><tbody>\n";
  for (const std::string& id : model_cases(m, model)) {
    os << "<tr><th class=\"case\">" << esc(id) << "</th>";
    for (size_t col : cols) write_cell(os, m, model, id, col);
    os << "</tr>\n";
  }
  os << "</tbody></table></div>\n";
  write_columns(os, m, cols);
  std::vector<const NotRun*> rows;
  for (const NotRun& n : m.not_run)
    if (n.model == model) rows.push_back(&n);
  write_not_run(os, rows, false);
  for (const AttributionFigure& f : m.attributions)
    if (f.model == model) write_attribution(os, m, f);
  os << "</section>\n";
}

// Not-run lines of models that have no column here (every export refused, or a manifest that
// could not be read): listed too, never left out.
void write_other_not_run(std::ostringstream& os, const Matrix& m, const std::vector<std::string>& models) {
  std::vector<const NotRun*> other;
  for (const NotRun& n : m.not_run)
    if (std::find(models.begin(), models.end(), n.model) == models.end()) other.push_back(&n);
  if (other.empty()) return;
  os << "<section class=\"model\" id=\"not-run-other\">\n<h2>Columns of models with no runnable column</h2>\n";
  write_not_run(os, other, true);
  os << "</section>\n";
}

// The bundles --method left out, with the reason.
void write_left_out(std::ostringstream& os, const Matrix& m) {
  if (m.left_out.empty()) return;
  os << "<section id=\"left-out\">\n<h2>Left out by --method " << esc(join(m.methods, " --method "))
     << "</h2>\n<p class=\"muted\">Not columns; they do not fail the run.</p>\n<table><thead><tr><th>bundle</th>"
        "<th>model</th><th>reason</th></tr></thead><tbody>\n";
  for (const LeftOut& l : m.left_out)
    os << "<tr class=\"left-out-row\"><td>" << esc(l.bundle) << "<br><span class=\"muted\">" << esc(l.dir)
       << "</span></td><td>" << esc(model_label(l.model)) << "</td><td class=\"reason\">" << esc(l.reason)
       << "</td></tr>\n";
  os << "</tbody></table>\n</section>\n";
}

// The xfail records with their outcomes.
void write_xfail(std::ostringstream& os, const Matrix& m) {
  if (m.xfail.empty()) return;
  os << "<section id=\"xfail\">\n<h2>Expected failures</h2>\n<p class=\"muted\">" << esc(join(m.xfail_files))
     << "</p>\n<table><thead><tr><th>model</th><th>column</th><th>half</th><th>recorded</th><th>outcome</th>"
        "<th>reason</th><th>detail</th></tr></thead><tbody>\n";
  for (const XfailOutcome& x : m.xfail)
    os << "<tr><td>" << esc(x.record.model) << "</td><td class=\"word\">" << esc(x.record.backend) << "/"
       << esc(x.record.recipe) << "</td><td>" << esc(x.record.half) << "</td><td>" << esc(x.record.recorded)
       << "</td><td class=\"word\">" << to_string(x.result)
       << (x.result == XfailResult::kXpass ? " <span class=\"fails\">fails the run</span>" : "")
       << "</td><td class=\"reason\">" << esc(x.record.reason) << "</td><td class=\"reason\">" << esc(x.detail)
       << "</td></tr>\n";
  os << "</tbody></table>\n</section>\n";
}

}  // namespace

std::string to_html(const Matrix& m) {
  std::ostringstream os;
  write_head(os, m);
  const std::vector<std::string> models = m.models();
  write_nav(os, m, models);
  if (m.columns.empty())
    os << "<p>No bundle columns: matrix takes directories that hold bundles (e.g. build/golden-set/bundles).</p>\n";
  for (size_t i = 0; i < models.size(); ++i) write_model(os, m, i, models[i]);
  write_other_not_run(os, m, models);
  write_left_out(os, m);
  write_xfail(os, m);
  os << "<p class=\"muted\">Written by etproof matrix --html. The same matrix: etproof matrix --json.</p>\n"
        "</body>\n</html>\n";
  return os.str();
}

void write_html(const Matrix& m, const std::filesystem::path& file) {
  const std::string page = to_html(m);
  try {
    detail::write_file_atomic(file, page);
  } catch (const Error& e) {
    throw Error(ErrorKind::kIo, "cannot write the HTML page " + file.string() + ": " + e.cause(),
                "pass --html a path in a writable directory (the page is written beside it, then renamed "
                "into place; nothing is left half-written)");
  }
}

}  // namespace etproof
