// The matrix (docs/design.md §6): golden cases × (backend, recipe) columns. Every column found is
// reported — measured, or with the reason it was not.
#include "etproof/replay/matrix.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/export_half.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "etproof/replay/replay.h"
#include "core/common.h"
#include "core/json_parse.h"

// Column::dir and NotRun::dir are filled in once per directory by build_matrix, after the
// columns are built; the brace-initialized records below leave them empty until then.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace etproof {

bool column_matches(const Column& c, const XfailRecord& r) {
  return xfail_matches_column(r, c.model, c.bundle, c.backend, c.recipe);
}

int Matrix::exit_code() const {
  if (measured == 0) return 1;
  for (const Cell& c : cells)
    if (fails_run(c.status)) return 1;
  for (const NotRun& n : not_run)
    if (fails_run(n.status)) return 1;
  for (const XfailOutcome& x : xfail)
    if (x.result == XfailResult::kXpass) return 1;
  if ((!required.empty() || require_all) && !coverage(*this).unmet.empty()) return 1;
  return 0;
}

// ---- text width ------------------------------------------------------------------------------------

std::string fit_text(const std::string& text, size_t width) {
  width = std::max<size_t>(width, 16);
  auto is_lead = [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; };
  auto columns = [&](std::string_view s) {
    size_t n = 0;
    for (char ch : s) n += is_lead(ch);
    return n;
  };
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    std::string line = text.substr(start, end - start);
    start = newline ? end + 1 : end;
    if (columns(line) > width) {
      const size_t indent = std::min(line.find_first_not_of(' '), line.size());
      const std::string more(std::min(indent + 4, width / 2), ' ');
      while (columns(line) > width) {
        const size_t content = std::min(line.find_first_not_of(' '), line.size());
        // `hard`: where column `width` ends; `cut`: the last space up to there after some text.
        size_t col = 0, hard = line.size(), cut = std::string::npos;
        for (size_t i = 0; i < line.size(); ++i) {
          if (!is_lead(line[i])) continue;
          if (line[i] == ' ' && i > content) cut = i;
          if (col == width) {
            hard = i;
            break;
          }
          ++col;
        }
        const size_t at = cut != std::string::npos ? cut : hard;
        std::string head = line.substr(0, at);
        while (!head.empty() && head.back() == ' ') head.pop_back();
        out += head;
        const size_t rest = line.find_first_not_of(' ', at);
        if (rest == std::string::npos) {
          line.clear();
          break;
        }
        out += '\n';
        line = more + line.substr(rest);
      }
    }
    out += line;
    if (newline) out += '\n';
  }
  return out;
}

namespace {

using detail::cosine_text;

using detail::join;
std::string error_text(const Error& e) { return detail::error_line(e); }


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
                         "", column.model, column.bundle});
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
    m.not_run.push_back({column.backend, column.recipe, status, os.str(), "", column.model, column.bundle});
  }
}

// One cell from one case of the replay: its status and its worst numbers over the outputs.
Cell cell_of(const CaseReport& c, size_t col, bool bounded) {
  Cell cell;
  cell.case_id = c.case_id;
  cell.column = col;
  cell.status = c.status;
  cell.detail = c.detail;
  cell.repeats = c.repeats;
  const auto worst = detail::keep_worst;
  for (const TensorReport& t : c.outputs) {
    if (!cell.passing) cell.passing.emplace();
    add_passing(*cell.passing, passing_bound(t));
    for (const std::string& rule : t.failed_rules)
      if (std::find(cell.failed_rules.begin(), cell.failed_rules.end(), rule) == cell.failed_rules.end())
        cell.failed_rules.push_back(rule);
    worst(cell.max_abs_error, t.max_abs_error, true);
    // An exact (integer or bool) output's cosine and SQNR are not judged and mean nothing here.
    if (!t.exact) {
      worst(cell.cosine, t.cosine, false);
      worst(cell.sqnr_db, t.sqnr_db, false);
      worst(cell.range_error, t.range_error, true);
    }
    if (bounded) {
      if (!cell.headroom || t.headroom < *cell.headroom) cell.atol = t.atol;
      worst(cell.headroom, t.headroom, false);
    }
  }
  if (cell.failed_rules.empty() && (c.status == Status::kDrifted || c.status == Status::kXfail))
    cell.failed_rules.push_back("other");  // a shape, an edited golden: no rule's numbers say
  for (const RecipeCost& k : c.costs) {
    worst(cell.cost_sqnr_db, k.sqnr_db, false);
    if (cell.cost_over_default.empty() && !k.over_default.empty())
      cell.cost_over_default = k.reference + " " + k.output + ": " + k.over_default;
  }
  return cell;
}

// One bundle's replay (replay.h) laid out as a column of cells.
void lay_out_column(Matrix& m, const std::filesystem::path& path, const ParityReport& r) {
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
  column.against = r.against;
  column.judgement = r.judgement;
  column.mutable_buffers = r.mutable_buffers;
  column.state_shared_across_methods = r.state_shared_across_methods;
  column.precision_reason = r.precision_reason;
  column.path = path.string();
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

// One result of dir/export-report.json: its entry, and the not-run line it makes (if any).
ExportEntry export_entry(Matrix& m, const nlohmann::json& r, const std::filesystem::path& dir) {
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
  return entry;
}

// dir/export-report.json, written by the export half. Unreadable (io; not JSON, too deep, a field
// missing or of another type: manifest-invalid, as the bundles beside it would be), it is one
// bundle-invalid not-run line with the reason, and none of its entries: never the end of the run.
std::vector<ExportEntry> read_export_report(Matrix& m, const std::filesystem::path& dir) {
  std::vector<ExportEntry> entries;
  const auto path = dir / "export-report.json";
  const size_t lines_before = m.not_run.size();
  const detail::JsonSource source{ErrorKind::kManifestInvalid, path.string(),
                                  "re-export into this directory (" + etproof_command() + " export writes it)"};
  try {
    if (!detail::path_exists(path, "check the path")) return entries;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::kIo, "cannot open " + path.string(), "check the file's permissions");
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json doc = detail::parse_json(text.str(), source);
    detail::reading_json(source, [&] {
      for (const auto& r : doc.at("results")) entries.push_back(export_entry(m, r, dir));
    });
  } catch (const Error& e) {
    m.not_run.resize(lines_before);  // the entries read before the bad one are dropped too
    entries.clear();
    m.not_run.push_back({"", "", CellStatus::kBundleInvalid,
                         "export-report.json is unreadable (" + e.cause() +
                             "); the export half's refusals cannot be shown"});
  }
  return entries;
}

// ---- expected failures (DIR/xfail.json, docs/xfail.md) -----------------------------------------

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

// The bundles of `dir` to replay, each with its options. A method selection: each bundle replays
// the methods it lists of those asked for; one that lists none is left out (appended to
// m.left_out with the reason). Its manifest alone is read here; an unreadable one is replayed
// without a selection, so its refusal is shown as ever.
std::pair<std::vector<std::filesystem::path>, std::vector<ReplayOptions>> plan_replays(
    Matrix& m, const std::filesystem::path& dir, const ReplayOptions& options,
    const std::vector<std::string>& methods) {
  std::vector<std::filesystem::path> paths;
  std::vector<ReplayOptions> per_path;
  for (const std::filesystem::path& path : find_bundles(dir)) {
    ReplayOptions o = options;
    if (!methods.empty()) {
      std::optional<Manifest> manifest;
      try {
        manifest = open_bundle(path, OpenOptions{.verify_artifact = false}).manifest;
      } catch (const Error&) {
        // Unreadable: replayed without a selection, so its refusal is shown as ever.
      }
      if (manifest) {
        const MethodSelection s = select_methods(*manifest, methods);
        if (s.selected.empty()) {
          std::vector<std::string> listed;
          for (const MethodSpec& spec : manifest->methods) listed.push_back("'" + spec.name + "'");
          std::vector<std::string> asked;
          for (const std::string& n : methods) asked.push_back("'" + n + "'");
          m.left_out.push_back({manifest->name, manifest->model, "",
                                "has no method " + join(asked, " or ") + " (its methods: " +
                                    join(listed) + ")"});
          continue;
        }
        o.methods = s.selected;
      }
    }
    paths.push_back(path);
    per_path.push_back(std::move(o));
  }
  return {std::move(paths), std::move(per_path)};
}

}  // namespace

Matrix build_matrix(const std::filesystem::path& dir, const BoundOverride& caller, size_t jobs,
                    const std::optional<Budget>& budget, const std::vector<std::string>& methods,
                    const Isolation& isolation, const Repetition& repetition) {
  const std::string remedy =
      "pass the directory the export half wrote (etproof export … --out DIR), or export the demo "
      "bundles first";
  if (!detail::is_directory_path(dir, remedy))
    throw Error(ErrorKind::kIo, "bundle directory " + dir.string() + ": " + detail::not_a_directory_text(dir), remedy);
  Matrix m;
  // Read first: a malformed file is an error before anything runs.
  std::vector<XfailRecord> records;
  if (detail::path_exists(dir / "xfail.json", "check the file, or remove it if no failure is expected")) {
    m.xfail_file = (dir / "xfail.json").string();
    records = read_xfail(dir / "xfail.json");
  }
  if (!caller.empty()) m.caller_bound = describe_override(caller);
  if (budget) m.caller_budget = describe_budget(*budget);
  ReplayOptions options;
  options.caller = caller;
  options.budget = budget;
  options.xfail = records;
  options.xfail_file = m.xfail_file;
  options.isolation = isolation;
  options.repetition = repetition;
  m.repetition = repetition;
  // Every column is replayed on its own (in parallel when jobs > 1), then laid out in the
  // directory's order: the result never depends on the scheduling.
  m.methods = methods;
  const auto [paths, per_path] = plan_replays(m, dir, options, methods);
  for (const BundleReplay& b : replay_all(paths, per_path, jobs)) {
    if (b.report) {
      lay_out_column(m, b.path, *b.report);
    } else {
      const std::string name = b.path.filename().string();
      m.not_run.push_back({name, "", Status::kBundleInvalid, name + ": " + b.unforeseen, "", ""});
    }
  }
  const std::vector<ExportEntry> entries = read_export_report(m, dir);
  apply_xfail(m, records, entries);
  m.dirs = {dir.string()};
  if (!m.xfail_file.empty()) m.xfail_files = {m.xfail_file};
  for (Column& c : m.columns) c.dir = dir.string();
  for (NotRun& n : m.not_run) n.dir = dir.string();
  for (LeftOut& l : m.left_out) l.dir = dir.string();
  return m;
}

namespace {
// Appends m's columns, cells (their column indices moved past out's), cases, not-run and left-out
// lines and measured count to `out`.
void append_columns(Matrix& out, Matrix& m) {
  const size_t offset = out.columns.size();
  for (Column& c : m.columns) out.columns.push_back(std::move(c));
  for (const std::string& id : m.cases) note_case(out, id);
  for (Cell& c : m.cells) {
    c.column += offset;
    out.cells.push_back(std::move(c));
  }
  for (NotRun& n : m.not_run) out.not_run.push_back(std::move(n));
  for (LeftOut& l : m.left_out) out.left_out.push_back(std::move(l));
  out.measured += m.measured;
}
}  // namespace

Matrix build_matrix(const std::vector<std::filesystem::path>& dirs, const BoundOverride& caller,
                    size_t jobs, const std::optional<Budget>& budget,
                    const std::vector<std::string>& methods, const Isolation& isolation,
                    const Repetition& repetition) {
  if (dirs.size() == 1) return build_matrix(dirs.front(), caller, jobs, budget, methods, isolation, repetition);
  Matrix out;
  out.methods = methods;
  out.repetition = repetition;
  for (const auto& dir : dirs) {
    Matrix m = build_matrix(dir, caller, jobs, budget, methods, isolation, repetition);
    append_columns(out, m);
    out.caller_bound = m.caller_bound;
    out.caller_budget = m.caller_budget;
    for (XfailOutcome& x : m.xfail) out.xfail.push_back(std::move(x));
    for (const std::string& f : m.xfail_files) out.xfail_files.push_back(f);
    out.dirs.push_back(dir.string());
  }
  if (!out.xfail_files.empty()) out.xfail_file = out.xfail_files.front();
  return out;
}

void add_emulated_columns(Matrix& m, const std::vector<std::filesystem::path>& dirs,
                          const std::vector<Emulation>& emulations, const std::vector<nlohmann::json>& machines,
                          const BoundOverride& caller, size_t jobs, const std::optional<Budget>& budget,
                          const std::vector<std::string>& methods, const Isolation& isolation,
                          const Repetition& repetition) {
  if (machines.size() != emulations.size())
    throw Error(ErrorKind::kInvalidArgument,
                "add_emulated_columns: " + std::to_string(emulations.size()) + " emulation(s) but " +
                    std::to_string(machines.size()) + " machine record(s)",
                "give one machine record (emulated_machine) per emulation");
  for (size_t i = 0; i < emulations.size(); ++i) {
    Isolation on = isolation;
    on.enabled = true;
    on.emulation = emulations[i];
    Matrix e = build_matrix(dirs, caller, jobs, budget, methods, on, repetition);
    const std::string label = emulations[i].label();
    for (Column& c : e.columns) {
      c.machine = label;
      c.machine_record = machines[i];
    }
    // The export half's lines (no bundle) are the host matrix's: not repeated per machine.
    std::erase_if(e.not_run, [](const NotRun& n) { return n.bundle.empty(); });
    for (NotRun& n : e.not_run) n.machine = label;
    e.left_out.clear();  // the method selection leaves out the same bundles on every machine
    append_columns(m, e);
  }
}

void bench_columns(Matrix& m, const BenchOptions& options, const Isolation& isolation) {
  for (size_t col = 0; col < m.columns.size(); ++col) {
    if (!m.columns[col].machine.empty()) continue;  // emulated: QEMU's speed is no device's
    bool ran = false;
    for (const Cell& c : m.cells) ran = ran || (c.column == col && (is_judged(c.status) || c.status == Status::kNoBound || c.status == Status::kInconclusive));
    if (ran) m.columns[col].speed = bench(m.columns[col].path, options, isolation);
  }
}

namespace {
std::optional<double> first_median(const Column& c) {
  if (!c.speed || c.speed->refused || c.speed->methods.empty() || !c.speed->methods.front().latency) return std::nullopt;
  return c.speed->methods.front().latency->median_ms;
}
}  // namespace

std::optional<double> speedup_against(const Matrix& m, size_t col, const std::string& backend,
                                      const std::string& recipe) {
  const auto mine = first_median(m.columns[col]);
  if (!mine || *mine <= 0) return std::nullopt;
  for (const Column& c : m.columns)
    if (c.model == m.columns[col].model && c.backend == backend && c.recipe == recipe && c.dir == m.columns[col].dir)
      if (const auto theirs = first_median(c)) return *theirs / *mine;
  return std::nullopt;
}

std::vector<std::string> Matrix::models() const {
  std::vector<std::string> out;
  for (const Column& c : columns)
    if (std::find(out.begin(), out.end(), c.model) == out.end()) out.push_back(c.model);
  return out;
}

}  // namespace etproof
