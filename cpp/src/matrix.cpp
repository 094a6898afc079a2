// The matrix (DESIGN.md §6): golden cases × (backend, recipe) columns. Every column found is
// reported — measured, or with the reason it was not.
#include "etproof/matrix.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "etproof/backend_table.h"
#include "etproof/bundle.h"
#include "etproof/error.h"
#include "etproof/registry.h"
#include "etproof/replay.h"
#include "common.h"

// Column::dir and NotRun::dir are filled in once per directory by build_matrix, after the
// columns are built; the brace-initialized records below leave them empty until then.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace etproof {

int Matrix::exit_code() const {
  if (measured == 0) return 1;
  for (const Cell& c : cells)
    if (fails_run(c.status)) return 1;
  for (const NotRun& n : not_run)
    if (fails_run(n.status)) return 1;
  for (const XfailOutcome& x : xfail)
    if (x.result == XfailResult::kXpass) return 1;
  return 0;
}

namespace {

std::string fmt(double v, int precision = 3) {
  return detail::format_number(v, precision);
}

using detail::cosine_text;

using detail::join;
nlohmann::json opt_num(const std::optional<double>& v) { return detail::json_number(v); }
std::string error_text(const Error& e) { return detail::error_line(e); }

std::string column_label(const Column& c) { return c.backend + "/" + c.recipe; }

void note_case(Matrix& m, const std::string& id) {
  if (std::find(m.cases.begin(), m.cases.end(), id) == m.cases.end()) m.cases.push_back(id);
}

// After a column's cases ran: every case that could not be gated becomes part of a not_run line,
// one per status, with the cases and the first reason. A column refused as a whole is one line.
void note_unmeasured(Matrix& m, size_t col, const ParityReport& r) {
  const Column& column = m.columns[col];
  if (r.refused) {
    m.not_run.push_back({column.backend, column.recipe, *r.refused,
                         column.bundle + ": " + (r.error ? error_text(*r.error) : "refused"),
                         "", column.model});
    return;
  }
  std::map<Status, std::vector<const CaseReport*>> by_status;
  for (const CaseReport& c : r.cases)
    if (!is_judged(c.status)) by_status[c.status].push_back(&c);
  for (const auto& [status, cases] : by_status) {
    std::vector<std::string> ids;
    for (const CaseReport* c : cases) ids.push_back(c->case_id);
    std::ostringstream os;
    os << column.bundle << ": " << cases.size() << " of " << r.cases.size() << " case(s) ("
       << join(ids) << "): " << cases.front()->detail;
    m.not_run.push_back({column.backend, column.recipe, status, os.str(), "", column.model});
  }
}

// One cell from one case of the replay: its status and its worst numbers over the outputs.
Cell cell_of(const CaseReport& c, size_t col, bool bounded) {
  Cell cell;
  cell.case_id = c.case_id;
  cell.column = col;
  cell.status = c.status;
  cell.detail = c.detail;
  auto worst = [](std::optional<double>& slot, double v, bool larger) {
    if (!slot || (larger ? v > *slot : v < *slot) || std::isnan(v)) slot = v;
  };
  for (const TensorReport& t : c.outputs) {
    worst(cell.max_abs_error, t.max_abs_error, true);
    worst(cell.cosine, t.cosine, false);
    worst(cell.sqnr_db, t.sqnr_db, false);
    worst(cell.range_error, t.range_error, true);
    if (bounded) {
      if (!cell.headroom || t.headroom < *cell.headroom) cell.atol = t.atol;
      worst(cell.headroom, t.headroom, false);
    }
  }
  return cell;
}

// One bundle: replayed by the engine (replay.h), its outcome laid out as a column of cells.
void run_column(Matrix& m, const std::filesystem::path& path, const ReplayOptions& options) {
  const ParityReport r = replay(path, options);
  if (!r.manifest_read) {  // nothing known about it: a not-run line alone
    m.not_run.push_back({path.filename().string(), "", r.refused.value_or(Status::kBundleInvalid),
                         path.filename().string() + ": " +
                             (r.error ? error_text(*r.error) : "unreadable"),
                         "", ""});
    return;
  }
  Column column{r.bundle, r.backend, r.recipe, r.precision, r.delegates, std::nullopt, r.model};
  if (r.no_bound.empty()) column.bound = r.bound;
  column.sha256 = r.bundle_sha256;
  column.created_utc = r.bundle_created_utc;
  column.toolchain = r.bundle_toolchain;
  m.columns.push_back(std::move(column));
  const size_t col = m.columns.size() - 1;
  for (const CaseReport& c : r.cases) {
    note_case(m, c.case_id);
    m.cells.push_back(cell_of(c, col, r.no_bound.empty()));
    if (is_judged(c.status)) ++m.measured;
  }
  note_unmeasured(m, col, r);
}

// One entry of dir/export-report.json, as read: what an export-half xfail record is matched to.
struct ExportEntry {
  std::optional<std::string> model;  // "model", else the NAME of "bundle"; unknown otherwise
  std::string backend;
  std::string recipe;
  std::string status;
  std::optional<size_t> not_run;     // its line in Matrix::not_run, where it made one
};

// dir/export-report.json, written by the export half.
std::vector<ExportEntry> read_export_report(Matrix& m, const std::filesystem::path& dir) {
  std::vector<ExportEntry> entries;
  const auto path = dir / "export-report.json";
  if (!std::filesystem::exists(path)) return entries;
  try {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open");
    nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& r : doc.at("results")) {
      const std::string status = r.at("status").get<std::string>();
      const std::string backend = r.at("backend").get<std::string>();
      const std::string recipe = r.value("recipe", std::string());
      const std::string reason = r.value("reason", std::string("(no reason recorded)"));
      const std::string stage = r.value("stage", std::string());
      ExportEntry entry{std::nullopt, backend, recipe, status, std::nullopt};
      if (r.contains("model"))
        entry.model = r.at("model").get<std::string>();
      else if (r.contains("bundle"))
        entry.model = model_of_bundle(r.at("bundle").get<std::string>(), backend, recipe);
      const size_t before = m.not_run.size();
      if (status == "export-refused") {
        m.not_run.push_back({backend, recipe, CellStatus::kExportRefused, reason});
      } else if (status == "export-failed") {
        m.not_run.push_back({backend, recipe, CellStatus::kExportFailed,
                             (stage.empty() ? "" : "at " + stage + ": ") + reason});
      } else if (status == "exported") {
        // The same model's column (any model's, when the report does not name one).
        auto same = [&](const std::string& b, const std::string& r, const std::string& model) {
          return b == backend && r == recipe && (!entry.model || model.empty() || model == *entry.model);
        };
        bool found = false;
        for (const Column& c : m.columns) found = found || same(c.backend, c.recipe, c.model);
        for (const NotRun& n : m.not_run) found = found || same(n.backend, n.recipe, n.model);
        if (!found)
          m.not_run.push_back({backend, recipe, CellStatus::kBundleInvalid,
                               "export-report.json says exported, but no bundle for it is in " +
                                   dir.string()});
      } else {
        m.not_run.push_back({backend, recipe, CellStatus::kExportFailed,
                             "export-report.json has unknown status \"" + status + "\""});
      }
      if (m.not_run.size() > before) {
        entry.not_run = before;
        m.not_run.back().model = entry.model.value_or("");
      }
      entries.push_back(std::move(entry));
    }
  } catch (const std::exception& e) {
    m.not_run.push_back({"", "", CellStatus::kBundleInvalid,
                         path.string() + " is unreadable (" + e.what() +
                             "); the export half's refusals cannot be shown"});
  }
  return entries;
}

// ---- expected failures (DIR/xfail.json, docs/xfail.md) -----------------------------------------

bool column_matches(const Column& c, const XfailRecord& r) {
  return xfail_matches_column(r, c.model, c.bundle, c.backend, c.recipe);
}

std::string count_text(const std::map<CellStatus, size_t>& count) {
  std::vector<std::string> parts;
  for (const auto& [s, n] : count) parts.push_back(std::to_string(n) + " " + std::string(to_string(s)));
  return join(parts);
}

// A runtime record: the cells of every column it matches.
XfailOutcome apply_runtime_record(Matrix& m, const XfailRecord& r, const std::string& file) {
  XfailOutcome out{r, XfailResult::kStale, ""};
  std::vector<std::string> matched;
  std::map<CellStatus, size_t> count;
  for (size_t col = 0; col < m.columns.size(); ++col) {
    if (!column_matches(m.columns[col], r)) continue;
    matched.push_back(m.columns[col].bundle);
    for (const Cell& cell : m.cells) {  // the replay engine already applied the record
      if (cell.column != col || !xfail_covers_case(r, cell.case_id)) continue;
      ++count[cell.status];
    }
  }
  if (matched.empty()) {
    out.detail = "matches no column (no bundle of model " + r.model + " for " + r.backend + "/" +
                 r.recipe + " in this directory); remove it or re-export the column";
    return out;
  }
  out.result = count.count(CellStatus::kXpass)   ? XfailResult::kXpass
               : count.count(CellStatus::kXfail) ? XfailResult::kXfail
                                                 : XfailResult::kNotExercised;
  out.detail = "column " + join(matched) +
               (r.cases.empty() ? "" : " (cases " + join(r.cases) + ")") + ": " +
               (count.empty() ? "no cells" : count_text(count));
  std::vector<std::string> absent;
  for (const std::string& id : r.cases)
    if (std::find(m.cases.begin(), m.cases.end(), id) == m.cases.end()) absent.push_back(id);
  if (!absent.empty()) out.detail += "; no such case here: " + join(absent);
  if (out.result == XfailResult::kXpass)
    out.detail += "; unexpected pass: update or remove the xfail record in " + file;
  else if (out.result == XfailResult::kNotExercised)
    out.detail += "; nothing it matched was judged here, so the record is neither confirmed nor "
                  "contradicted";
  return out;
}

// An export record: the export-report entries (and bundles) of its pair.
XfailOutcome apply_export_record(Matrix& m, const XfailRecord& r, const std::string& file,
                                 const std::vector<ExportEntry>& entries) {
  XfailOutcome out{r, XfailResult::kStale, ""};
  size_t failed = 0, exported = 0, unknown_model = 0;
  std::vector<std::string> seen;
  for (const ExportEntry& e : entries) {
    if (e.backend != r.backend || e.recipe != r.recipe) continue;
    if (!e.model) {
      ++unknown_model;
      continue;
    }
    if (*e.model != r.model) continue;
    seen.push_back(e.status);
    if (e.status == "exported") {
      ++exported;
    } else if (e.status == "export-failed") {
      ++failed;
      if (e.not_run) {
        NotRun& n = m.not_run[*e.not_run];
        n.status = CellStatus::kXfail;
        n.reason = "expected failure (" + file + ", recorded " + r.recorded + "): " + r.reason +
                   "; export-failed " + n.reason;
      }
    }
  }
  // A bundle of the pair in the directory exported too, whatever the report says.
  bool bundle_present = false;
  for (const Column& c : m.columns) bundle_present = bundle_present || column_matches(c, r);
  if (bundle_present && exported == 0) {
    ++exported;
    seen.push_back("bundle present");
  }
  if (seen.empty()) {
    out.detail = "matches no export-report.json entry and no bundle of model " + r.model +
                 " for " + r.backend + "/" + r.recipe + "; remove it or re-export the pair";
    if (unknown_model)
      out.detail += " (" + std::to_string(unknown_model) +
                    " export-report.json entr(ies) for the pair do not name their model; "
                    "re-export to record it)";
    return out;
  }
  out.detail = "export half: " + join(seen);
  if (exported) {
    out.result = XfailResult::kXpass;
    out.detail += "; unexpected pass: it exported; update or remove the xfail record in " + file;
  } else if (failed) {
    out.result = XfailResult::kXfail;
  } else {
    out.result = XfailResult::kNotExercised;
    out.detail += "; the export half did not attempt it, so the record is neither confirmed nor "
                  "contradicted";
  }
  return out;
}

void apply_xfail(Matrix& m, const std::vector<XfailRecord>& records,
                 const std::vector<ExportEntry>& entries) {
  for (const XfailRecord& r : records)
    m.xfail.push_back(r.half == "runtime" ? apply_runtime_record(m, r, m.xfail_file)
                                          : apply_export_record(m, r, m.xfail_file, entries));
}

const Cell* find_cell(const Matrix& m, const std::string& case_id, size_t col) {
  for (const Cell& c : m.cells)
    if (c.case_id == case_id && c.column == col) return &c;
  return nullptr;
}

std::string cell_text(const Cell* c) {
  if (!c) return "-";
  std::string s(to_string(c->status));
  if (c->max_abs_error) s += " " + fmt(*c->max_abs_error, 2);
  if (c->cosine) s += " " + cosine_text(*c->cosine);
  return s;
}

std::string bound_text(const std::optional<Bound>& b) {
  if (!b) return "no bound";
  return describe_bound(*b) + (b->caller_supplied ? " (caller-supplied)" : " (derived)");
}

std::string not_run_label(const NotRun& n) {
  return (n.model.empty() ? "" : n.model + " ") + (n.backend.empty() ? "?" : n.backend) + "/" +
         (n.recipe.empty() ? "?" : n.recipe);
}

// "3 not-linked, 1 export-refused": a count per status, in the map's order.
template <typename Status>
std::string counts_text(const std::map<Status, size_t>& counts) {
  std::string out;
  for (const auto& [status, n] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(to_string(status));
  return out;
}

std::string summary(const Matrix& m) {
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

std::string verdict(const Matrix& m) {
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
bool drifted_under_derived(const Matrix& m) {
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted && m.columns[c.column].bound &&
        !m.columns[c.column].bound->caller_supplied)
      return true;
  return false;
}

constexpr const char* kBoundHint =
    "hint: the bounds were derived from measurements on the golden set (cpp/src/gate.cpp); if a "
    "bound does not fit "
    "this model, pass --atol/--rtol/--min-cosine/--min-sqnr (the report then says the bound was "
    "caller-supplied)";

}  // namespace

Matrix build_matrix(const std::filesystem::path& dir, const BoundOverride& caller) {
  if (!std::filesystem::is_directory(dir))
    throw Error(ErrorKind::kIo, "bundle directory " + dir.string() + " does not exist",
                "pass the directory the export half wrote (etproof export … --out DIR), or "
                "export the demo bundles first");
  Matrix m;
  // Read first: a malformed file is an error before anything runs.
  std::vector<XfailRecord> records;
  if (std::filesystem::exists(dir / "xfail.json")) {
    m.xfail_file = (dir / "xfail.json").string();
    records = read_xfail(dir / "xfail.json");
  }
  if (!caller.empty()) {
    std::vector<std::string> given;
    auto add = [&](const std::optional<double>& v, const char* flag) {
      if (v) given.push_back(std::string(flag) + " " + fmt(*v, 12));
    };
    add(caller.atol, "--atol");
    add(caller.rtol, "--rtol");
    add(caller.min_cosine, "--min-cosine");
    add(caller.min_sqnr_db, "--min-sqnr");
    m.caller_bound = join(given, " ");
  }
  ReplayOptions options;
  options.caller = caller;
  options.xfail = records;
  options.xfail_file = m.xfail_file;
  for (const auto& path : find_bundles(dir)) {
    try {
      run_column(m, path, options);
    } catch (const Error& e) {  // anything unforeseen in one column never stops the others
      m.not_run.push_back({path.filename().string(), "", CellStatus::kBundleInvalid,
                           path.filename().string() + ": " + error_text(e)});
    }
  }
  const std::vector<ExportEntry> entries = read_export_report(m, dir);
  apply_xfail(m, records, entries);
  m.dirs = {dir.string()};
  if (!m.xfail_file.empty()) m.xfail_files = {m.xfail_file};
  for (Column& c : m.columns) c.dir = dir.string();
  for (NotRun& n : m.not_run) n.dir = dir.string();
  return m;
}

Matrix build_matrix(const std::vector<std::filesystem::path>& dirs, const BoundOverride& caller) {
  if (dirs.size() == 1) return build_matrix(dirs.front(), caller);
  Matrix out;
  for (const auto& dir : dirs) {
    Matrix m = build_matrix(dir, caller);
    const size_t offset = out.columns.size();
    for (Column& c : m.columns) out.columns.push_back(std::move(c));
    for (const std::string& id : m.cases) note_case(out, id);
    for (Cell& c : m.cells) {
      c.column += offset;
      out.cells.push_back(std::move(c));
    }
    for (NotRun& n : m.not_run) out.not_run.push_back(std::move(n));
    out.measured += m.measured;
    out.caller_bound = m.caller_bound;
    for (XfailOutcome& x : m.xfail) out.xfail.push_back(std::move(x));
    for (const std::string& f : m.xfail_files) out.xfail_files.push_back(f);
    out.dirs.push_back(dir.string());
  }
  if (!out.xfail_files.empty()) out.xfail_file = out.xfail_files.front();
  return out;
}

std::vector<std::string> Matrix::models() const {
  std::vector<std::string> out;
  for (const Column& c : columns)
    if (std::find(out.begin(), out.end(), c.model) == out.end()) out.push_back(c.model);
  return out;
}

namespace {

bool grouped(const Matrix& m) { return m.models().size() > 1 || m.dirs.size() > 1; }

// A column's label within its model: backend/recipe, plus the directory where two columns of the
// same model share a backend/recipe.
std::string label_in_model(const Matrix& m, size_t col) {
  const Column& c = m.columns[col];
  for (size_t i = 0; i < m.columns.size(); ++i)
    if (i != col && m.columns[i].model == c.model && column_label(m.columns[i]) == column_label(c))
      return column_label(c) + " [" + c.dir + "]";
  return column_label(c);
}

std::string model_label(const std::string& model) { return model.empty() ? "(unknown model)" : model; }

// Cases of one model's columns, in row order.
std::vector<std::string> model_cases(const Matrix& m, const std::string& model) {
  std::vector<std::string> out;
  for (const std::string& id : m.cases)
    for (const Cell& c : m.cells)
      if (c.case_id == id && m.columns[c.column].model == model) {
        out.push_back(id);
        break;
      }
  return out;
}

// The end of both text forms: the columns not run, the summary, the verdict and the bound hint.
void write_text_tail(std::ostringstream& os, const Matrix& m) {
  if (!m.not_run.empty()) {
    os << "\nnot run:\n";
    for (const NotRun& n : m.not_run)
      os << "  " << not_run_label(n) << ": " << to_string(n.status)
         << (fails_run(n.status) ? " (fails the run)" : "") << ": " << n.reason << "\n";
  }
  os << "\n" << summary(m) << "\n" << verdict(m) << "\n";
  if (drifted_under_derived(m)) os << kBoundHint << "\n";
}

std::string to_text_grouped(const Matrix& m) {
  std::ostringstream os;
  if (!m.caller_bound.empty())
    os << "bound: caller-supplied for every column (" << m.caller_bound
       << "); fields not given come from each column's derived bound\n\n";
  const std::vector<std::string> models = m.models();
  os << models.size() << " model(s), " << m.columns.size() << " column(s) in " << m.dirs.size()
     << " director" << (m.dirs.size() == 1 ? "y" : "ies") << " (" << join(m.dirs)
     << "); rows are (model, case), columns (backend, recipe)\n";
  size_t width = 0;
  for (size_t col = 0; col < m.columns.size(); ++col)
    width = std::max(width, label_in_model(m, col).size());
  for (const std::string& model : models) {
    const auto cases = model_cases(m, model);
    os << "\n" << model_label(model) << "  (" << cases.size() << " case(s): " << join(cases)
       << ")\n";
    for (size_t col = 0; col < m.columns.size(); ++col) {
      const Column& c = m.columns[col];
      if (c.model != model) continue;
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
      os << "  " << std::left << std::setw(static_cast<int>(width)) << label_in_model(m, col)
         << "  " << (count.empty() ? std::string("no cells") : count_text(count));
      if (err)
        os << "; worst: max abs error " << fmt(*err, 3) << " (" << (rel ? fmt(*rel, 3) : "-")
           << "·max|ref|), cosine " << (cos ? cosine_text(*cos) : "-") << ", SQNR "
           << (sqnr ? fmt(*sqnr, 4) : "-") << " dB, headroom " << (head ? fmt(*head, 3) : "-");
      os << "\n";
    }
  }
  // Each distinct bound once, with the (recipe, precision) it belongs to.
  std::vector<std::pair<std::string, std::string>> bounds;
  for (const Column& c : m.columns) {
    std::pair<std::string, std::string> b{c.recipe + " / " + c.precision, bound_text(c.bound)};
    if (std::find(bounds.begin(), bounds.end(), b) == bounds.end()) bounds.push_back(b);
  }
  if (!bounds.empty()) {
    os << "\nbounds (per recipe / precision; a derived rule is resolved per output):\n";
    for (const auto& [pair, text] : bounds) os << "  " << pair << ": " << text << "\n";
  }
  bool any = false;
  for (const Cell& c : m.cells)
    if (c.status == CellStatus::kDrifted || c.status == CellStatus::kXpass) {
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
  return os.str();
}

}  // namespace

std::string to_text(const Matrix& m) {
  if (grouped(m)) return to_text_grouped(m);
  std::ostringstream os;
  if (!m.caller_bound.empty())
    os << "bound: caller-supplied for every column (" << m.caller_bound
       << "); fields not given come from each column's derived bound\n\n";
  if (m.columns.empty()) {
    os << "no bundle columns (matrix takes directories that hold bundles, e.g. "
          "build/golden-set/bundles; for one bundle use etproof parity BUNDLE)\n";
  } else {
    std::vector<std::string> header{"case"};
    for (const Column& c : m.columns) header.push_back(column_label(c));
    std::vector<std::vector<std::string>> rows;
    for (const std::string& id : m.cases) {
      std::vector<std::string> row{id};
      for (size_t col = 0; col < m.columns.size(); ++col)
        row.push_back(cell_text(find_cell(m, id, col)));
      rows.push_back(std::move(row));
    }
    std::vector<size_t> width(header.size(), 0);
    auto measure = [&](const std::vector<std::string>& r) {
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    };
    measure(header);
    for (const auto& r : rows) measure(r);
    auto line = [&](const std::vector<std::string>& r) {
      for (size_t i = 0; i < r.size(); ++i)
        os << std::left << std::setw(static_cast<int>(width[i])) << r[i]
           << (i + 1 < r.size() ? "  " : "");
      os << "\n";
    };
    line(header);
    std::vector<std::string> rule;
    for (size_t w : width) rule.push_back(std::string(w, '-'));
    line(rule);
    for (const auto& r : rows) line(r);
    os << "(cells: status, max abs error, cosine)\n\ncolumns:\n";
    for (const Column& c : m.columns) {
      os << "  " << column_label(c) << "  bundle " << c.bundle << ", precision " << c.precision
         << ", delegates in program: " << (c.delegates.empty() ? "none" : join(c.delegates))
         << (c.backend == "portable" ? " (portable kernels)" : "") << "\n";
      os << "    bound: " << bound_text(c.bound) << "\n";
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
           << (atol ? " (against the resolved atol " + fmt(*atol, 4) + ")" : std::string())
           << "\n";
    }
    bool any = false;
    for (const Cell& c : m.cells)
      if (c.status == CellStatus::kDrifted) {
        if (!any) os << "\nfailures:\n";
        any = true;
        os << "  " << c.case_id << " × " << column_label(m.columns[c.column]) << ": "
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
  return os.str();
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
    os << "| " << esc((grouped(m) ? model_label(c.model) + " " : std::string()) + column_label(c))
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
  os << "\n" << summary(m) << " — **" << verdict(m) << "**\n";
  if (!m.caller_bound.empty())
    os << "\nBound: caller-supplied for every column (" << esc(m.caller_bound) << ").\n";
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
  }
  nlohmann::json not_run = nlohmann::json::array();
  for (const NotRun& n : m.not_run)
    not_run.push_back({{"backend", n.backend},
                       {"recipe", n.recipe},
                       {"status", std::string(to_string(n.status))},
                       {"fails_run", fails_run(n.status)},
                       {"reason", n.reason},
                       {"dir", n.dir},
                       {"model", n.model}});
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
  return {{"columns", cols},
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
          {"models", m.models()},
          {"dirs", m.dirs},
          {"xfail_files", m.xfail_files}};
}

std::string to_junit(const Matrix& m) {
  using detail::xml_escape;
  std::ostringstream suites;
  size_t tests = 0, failures = 0, skipped = 0;
  auto skips = [](CellStatus s) {
    return s == CellStatus::kXfail || s == CellStatus::kNotLinked ||
           s == CellStatus::kUnavailable || s == CellStatus::kExportRefused;
  };
  auto testcase = [&](std::ostringstream& os, const std::string& classname,
                      const std::string& name, CellStatus status, const std::string& detail,
                      const std::string& out, size_t& f, size_t& s) {
    os << "    <testcase classname=\"" << xml_escape(classname) << "\" name=\""
       << xml_escape(name) << "\">\n";
    const std::string msg = std::string(to_string(status)) + (detail.empty() ? "" : ": " + detail);
    if (fails_run(status)) {
      ++f;
      os << "      <failure type=\"" << to_string(status) << "\" message=\"" << xml_escape(msg)
         << "\"/>\n";
    } else if (skips(status)) {
      ++s;
      os << "      <skipped message=\"" << xml_escape(msg) << "\"/>\n";
    }
    if (!out.empty()) os << "      <system-out>" << xml_escape(out) << "</system-out>\n";
    os << "    </testcase>\n";
  };
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    std::ostringstream cases;
    size_t t = 0, f = 0, s = 0;
    const std::string classname = model_label(c.model) + "." + c.backend + "." + c.recipe;
    for (const Cell& cell : m.cells) {
      if (cell.column != col) continue;
      ++t;
      std::ostringstream out;
      out << to_string(cell.status);
      if (cell.max_abs_error) out << ", max abs error " << fmt(*cell.max_abs_error, 4);
      if (cell.range_error) out << " (" << fmt(*cell.range_error, 3) << "·max|ref|)";
      if (cell.cosine) out << ", cosine " << cosine_text(*cell.cosine);
      if (cell.sqnr_db) out << ", SQNR " << fmt(*cell.sqnr_db, 4) << " dB";
      if (cell.atol) out << ", resolved atol " << fmt(*cell.atol, 4);
      if (cell.headroom) out << ", headroom " << fmt(*cell.headroom, 3);
      out << "; bound: " << bound_text(c.bound);
      testcase(cases, classname, cell.case_id, cell.status, cell.detail, out.str(), f, s);
    }
    tests += t;
    failures += f;
    skipped += s;
    suites << "  <testsuite name=\"" << xml_escape(model_label(c.model) + " " + label_in_model(m, col))
           << "\" tests=\"" << t << "\" failures=\"" << f << "\" errors=\"0\" skipped=\"" << s
           << "\">\n" << cases.str() << "  </testsuite>\n";
  }
  if (!m.not_run.empty() || m.measured == 0) {
    std::ostringstream cases;
    size_t t = 0, f = 0, s = 0;
    for (const NotRun& n : m.not_run) {
      ++t;
      testcase(cases, "not-run", not_run_label(n), n.status, n.reason, "", f, s);
    }
    if (m.measured == 0) {
      ++t;
      ++f;
      cases << "    <testcase classname=\"matrix\" name=\"something was measured\">\n"
            << "      <failure message=\"nothing was measured\"/>\n    </testcase>\n";
    }
    tests += t;
    failures += f;
    skipped += s;
    suites << "  <testsuite name=\"not run\" tests=\"" << t << "\" failures=\"" << f
           << "\" errors=\"0\" skipped=\"" << s << "\">\n" << cases.str() << "  </testsuite>\n";
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"etproof matrix\" tests=\""
     << tests << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped
     << "\">\n" << suites.str() << "</testsuites>\n";
  return os.str();
}

}  // namespace etproof
