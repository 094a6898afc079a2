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
#include "text_format.h"

// Column::dir and NotRun::dir are filled in once per directory by build_matrix, after the
// columns are built; the brace-initialized records below leave them empty until then.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace etproof {

std::string_view to_string(CellStatus s) {
  switch (s) {
    case CellStatus::kAgreed: return "agreed";
    case CellStatus::kAgreedUndelegated: return "agreed-undelegated";
    case CellStatus::kDrifted: return "drifted";
    case CellStatus::kExportRefused: return "export-refused";
    case CellStatus::kExportFailed: return "export-failed";
    case CellStatus::kNotLinked: return "not-linked";
    case CellStatus::kUnavailable: return "unavailable";
    case CellStatus::kLoadFailed: return "load-failed";
    case CellStatus::kRunFailed: return "run-failed";
    case CellStatus::kBundleInvalid: return "bundle-invalid";
    case CellStatus::kNoBound: return "no-bound";
    case CellStatus::kXfail: return "xfail";
    case CellStatus::kXpass: return "xpass";
  }
  return "unknown";
}

std::string_view to_string(XfailResult r) {
  switch (r) {
    case XfailResult::kXfail: return "xfail";
    case XfailResult::kXpass: return "xpass";
    case XfailResult::kNotExercised: return "not-exercised";
    case XfailResult::kStale: return "stale";
  }
  return "unknown";
}

bool fails_run(CellStatus s) {
  switch (s) {
    case CellStatus::kDrifted:
    case CellStatus::kBundleInvalid:
    case CellStatus::kLoadFailed:
    case CellStatus::kRunFailed:
    case CellStatus::kExportFailed:
    case CellStatus::kNoBound:
    case CellStatus::kXpass:
      return true;
    case CellStatus::kAgreed:
    case CellStatus::kAgreedUndelegated:
    case CellStatus::kXfail:
    case CellStatus::kExportRefused:
    case CellStatus::kNotLinked:
    case CellStatus::kUnavailable:
      return false;
  }
  return true;
}

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

nlohmann::json opt_num(const std::optional<double>& v) {
  if (v && std::isfinite(*v)) return *v;
  return nullptr;
}

std::string error_text(const Error& e) {
  std::string s = "[" + std::string(to_string(e.kind())) + "] " + e.cause();
  if (e.et_error()) {
    std::ostringstream os;
    os << " (executorch error 0x" << std::hex << *e.et_error() << ")";
    s += os.str();
  }
  if (!e.remedy().empty()) s += "; remedy: " + e.remedy();
  return s;
}

std::string column_label(const Column& c) { return c.backend + "/" + c.recipe; }

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

void note_case(Matrix& m, const std::string& id) {
  if (std::find(m.cases.begin(), m.cases.end(), id) == m.cases.end()) m.cases.push_back(id);
}

// A column that could not run at all: one cell per golden case with `status`, and a not_run line.
void fail_column(Matrix& m, size_t col, const std::vector<GoldenCase>& goldens, CellStatus status,
                 const std::string& reason) {
  for (const GoldenCase& g : goldens) {
    note_case(m, g.id);
    Cell cell;
    cell.case_id = g.id;
    cell.column = col;
    cell.status = status;
    cell.detail = reason;
    m.cells.push_back(std::move(cell));
  }
  const Column& c = m.columns[col];
  m.not_run.push_back({c.backend, c.recipe, status, c.bundle + ": " + reason});
  m.not_run.back().model = c.model;
}

// Which of the ids are not registered / not available in this binary, if any.
std::optional<std::pair<CellStatus, std::string>> check_delegates(
    const std::vector<std::string>& ids, const std::string& backend_key) {
  std::vector<std::string> not_linked, unavailable;
  for (const std::string& id : ids) {
    auto b = find_backend(id);
    if (!b || !b->registered)
      not_linked.push_back(id);
    else if (!b->available)
      unavailable.push_back(id);
  }
  std::vector<std::string> registered;
  for (const RuntimeBackend& b : registered_backends())
    registered.push_back(b.id + (b.available ? "" : " (unavailable)"));
  const std::string reg = registered.empty() ? "none" : join(registered);
  if (!not_linked.empty()) {
    const std::string needs = runtime_needs_text(not_linked.front(), backend_key);
    return std::make_pair(CellStatus::kNotLinked,
                          "delegate " + join(not_linked) +
                              " is not linked into this binary (registered here: " + reg + ")" +
                              (needs.empty() ? "" : "; " + needs));
  }
  if (!unavailable.empty())
    return std::make_pair(CellStatus::kUnavailable,
                          "delegate " + join(unavailable) +
                              " is registered but reports itself unavailable on this machine");
  return std::nullopt;
}

// After a column's cases ran: every case that could not be gated becomes part of a not_run line,
// one per status, with the cases and the first reason.
void note_unmeasured(Matrix& m, size_t col) {
  std::map<CellStatus, std::vector<const Cell*>> by_status;
  size_t total = 0;
  for (const Cell& c : m.cells) {
    if (c.column != col) continue;
    ++total;
    if (c.status != CellStatus::kAgreed && c.status != CellStatus::kAgreedUndelegated &&
        c.status != CellStatus::kDrifted)
      by_status[c.status].push_back(&c);
  }
  const Column& column = m.columns[col];
  for (const auto& [status, cells] : by_status) {
    std::vector<std::string> ids;
    for (const Cell* c : cells) ids.push_back(c->case_id);
    std::ostringstream os;
    os << column.bundle << ": " << cells.size() << " of " << total << " case(s) (" << join(ids)
       << "): " << cells.front()->detail;
    m.not_run.push_back({column.backend, column.recipe, status, os.str()});
    m.not_run.back().model = column.model;
  }
}

void run_column(Matrix& m, const std::filesystem::path& path, const BoundOverride& caller) {
  // 1. Open: manifest and artifact hash. If the manifest reads but the artifact does not match,
  //    the column is still shown (its cases are known); otherwise it becomes a not_run line.
  Bundle bundle;
  try {
    bundle = open_bundle(path);
  } catch (const Error& e) {
    std::optional<Manifest> manifest;
    try {
      std::filesystem::path mp = path;
      if (std::filesystem::is_directory(path))
        for (const auto& entry : std::filesystem::directory_iterator(path)) {
          const std::string fn = entry.path().filename().string();
          if (fn.size() > 13 && fn.ends_with(".etproof.json")) mp = entry.path();
        }
      manifest = read_manifest(mp);
    } catch (const Error&) {
    }
    if (!manifest) {
      m.not_run.push_back({path.filename().string(), "", CellStatus::kBundleInvalid,
                           path.filename().string() + ": " + error_text(e)});
      return;
    }
    Column c{manifest->name, manifest->backend, manifest->recipe, manifest->precision,
             manifest->delegates, std::nullopt, manifest->model};
    m.columns.push_back(c);
    fail_column(m, m.columns.size() - 1, manifest->goldens, CellStatus::kBundleInvalid,
                error_text(e));
    return;
  }
  const Manifest& man = bundle.manifest;
  m.columns.push_back({man.name, man.backend, man.recipe, man.precision, man.delegates,
                       std::nullopt, man.model});
  const size_t col = m.columns.size() - 1;

  // 2. The bound: a column whose recipe/precision has no bound still runs, so its numbers are
  //    shown, but cannot be judged (no-bound, which fails the run).
  std::string no_bound;
  try {
    m.columns[col].bound = caller.empty()
                               ? derive_bound(man.recipe, man.precision, man.compute_unit)
                               : override_bound(caller, man.recipe, man.precision, man.compute_unit);
  } catch (const Error& e) {
    no_bound = "ran, but no bound is known for recipe " + man.recipe + " / precision " +
               man.precision + "; pass one (--atol/--rtol/--min-cosine/--min-sqnr) or measure it "
               "into the table in cpp/src/gate.cpp: " + error_text(e);
  }

  // 3. The delegates the program needs, against this binary's registry.
  if (auto why = check_delegates(man.delegates, man.backend)) {
    fail_column(m, col, man.goldens, why->first, why->second);
    return;
  }

  // 4. Load. The loader reads the delegate ids from the program itself; a delegate the manifest
  //    did not record is caught here.
  std::optional<LoadedModel> model;
  try {
    model.emplace(LoadedModel::load(bundle));
  } catch (const Error& e) {
    CellStatus status = CellStatus::kLoadFailed;
    if (e.kind() == ErrorKind::kBackendUnavailable) {
      status = CellStatus::kNotLinked;
      for (const RuntimeBackend& b : registered_backends())
        if (!b.available && e.cause().find(b.id) != std::string::npos)
          status = CellStatus::kUnavailable;
    } else if (e.kind() == ErrorKind::kManifestInvalid ||
               e.kind() == ErrorKind::kArtifactMismatch) {
      status = CellStatus::kBundleInvalid;
    }
    fail_column(m, col, man.goldens, status, error_text(e));
    return;
  }
  m.columns[col].delegates = model->program_delegates();
  if (auto why = check_delegates(model->program_delegates(), man.backend)) {
    fail_column(m, col, man.goldens, why->first, why->second);
    return;
  }
  // Without a bound, measure against one no output can exceed: the numbers, not a verdict.
  Bound unbounded;
  unbounded.atol = std::numeric_limits<double>::infinity();
  unbounded.min_cosine = -std::numeric_limits<double>::infinity();
  const Bound& bound = m.columns[col].bound ? *m.columns[col].bound : unbounded;
  const bool undelegated = man.backend != "portable" && model->program_delegates().empty();

  // 5. Every golden case: run, gate every output. One case's failure never stops the next.
  for (const GoldenCase& g : man.goldens) {
    note_case(m, g.id);
    Cell cell;
    cell.case_id = g.id;
    cell.column = col;
    std::map<std::string, HostTensor> inputs, reference;
    try {
      inputs = read_golden_inputs(bundle, g);
      reference = read_golden_outputs(bundle, g);
    } catch (const Error& e) {
      cell.status = CellStatus::kBundleInvalid;
      cell.detail = "goldens unreadable: " + error_text(e);
      m.cells.push_back(std::move(cell));
      continue;
    }
    std::map<std::string, HostTensor> actual;
    try {
      actual = model->run(inputs);
    } catch (const Error& e) {
      cell.status = e.kind() == ErrorKind::kRunFailed ? CellStatus::kRunFailed
                                                      : CellStatus::kBundleInvalid;
      cell.detail = error_text(e);
      m.cells.push_back(std::move(cell));
      continue;
    }
    bool passed = !reference.empty();
    std::vector<std::string> failures;
    try {
      for (const auto& [name, ref] : reference) {
        auto it = actual.find(name);
        if (it == actual.end())
          throw Error(ErrorKind::kManifestInvalid,
                      "the program returned no output \"" + name + "\"",
                      "re-export the bundle; its goldens and outputs disagree");
        TensorReport t = compare_tensor(name, it->second, ref, bound, output_scale(man, name));
        passed = passed && t.passed;
        if (!t.passed) failures.push_back(name + ": " + t.failure);
        auto worst = [](std::optional<double>& slot, double v, bool larger) {
          if (!slot || (larger ? v > *slot : v < *slot) || std::isnan(v)) slot = v;
        };
        worst(cell.max_abs_error, t.max_abs_error, true);
        worst(cell.cosine, t.cosine, false);
        worst(cell.sqnr_db, t.sqnr_db, false);
        worst(cell.range_error, t.range_error, true);
        if (no_bound.empty()) {
          if (!cell.headroom || t.headroom < *cell.headroom) cell.atol = t.atol;
          worst(cell.headroom, t.headroom, false);
        }
      }
    } catch (const Error& e) {
      cell = Cell{g.id, col, CellStatus::kBundleInvalid, {}, {}, {}, {}, {}, {}, error_text(e)};
      m.cells.push_back(std::move(cell));
      continue;
    }
    if (!no_bound.empty()) {  // measured numbers, no verdict: not counted as measured
      cell.status = CellStatus::kNoBound;
      cell.detail = no_bound;
      m.cells.push_back(std::move(cell));
      continue;
    }
    ++m.measured;
    if (!passed) {
      cell.status = CellStatus::kDrifted;
      cell.detail = join(failures, "; ");
    } else if (undelegated) {
      cell.status = CellStatus::kAgreedUndelegated;
      cell.detail = "no delegate in the program: ran on portable kernels, not " + man.backend;
    } else {
      cell.status = CellStatus::kAgreed;
    }
    m.cells.push_back(std::move(cell));
  }
  note_unmeasured(m, col);
}

// One entry of dir/export-report.json, as read: what an export-half xfail record is matched to.
struct ExportEntry {
  std::optional<std::string> model;  // "model", else the NAME of "bundle"; unknown otherwise
  std::string backend;
  std::string recipe;
  std::string status;
  std::optional<size_t> not_run;     // its line in Matrix::not_run, where it made one
};

// NAME of a bundle named NAME-BACKEND-RECIPE; nullopt when the name has another form.
std::optional<std::string> model_of_bundle(const std::string& bundle, const std::string& backend,
                                           const std::string& recipe) {
  const std::string suffix = "-" + backend + "-" + recipe;
  if (bundle.size() <= suffix.size() || !bundle.ends_with(suffix)) return std::nullopt;
  return bundle.substr(0, bundle.size() - suffix.size());
}

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

std::string record_label(const XfailRecord& r) {
  return r.model + " " + r.backend + "/" + r.recipe + " (" + r.half + " half" +
         (r.cases.empty() ? "" : ", cases " + join(r.cases)) + ")";
}

bool valid_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (d[i] < '0' || d[i] > '9') return false;
  const int month = std::stoi(d.substr(5, 2)), day = std::stoi(d.substr(8, 2));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

bool column_matches(const Column& c, const XfailRecord& r) {
  if (c.backend != r.backend || c.recipe != r.recipe) return false;
  return c.model == r.model || model_of_bundle(c.bundle, c.backend, c.recipe) == r.model;
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
    for (Cell& cell : m.cells) {
      if (cell.column != col) continue;
      if (!r.cases.empty() &&
          std::find(r.cases.begin(), r.cases.end(), cell.case_id) == r.cases.end())
        continue;
      if (cell.status == CellStatus::kDrifted) {
        cell.status = CellStatus::kXfail;
        cell.detail = "expected failure (" + file + ", recorded " + r.recorded + "): " + r.reason +
                      "; measured: " + cell.detail;
      } else if (cell.status == CellStatus::kAgreed ||
                 cell.status == CellStatus::kAgreedUndelegated) {
        cell.status = CellStatus::kXpass;
        cell.detail = "unexpected pass: update or remove the xfail record in " + file +
                      " (recorded " + r.recorded + ": " + r.reason + ")";
      }
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

std::vector<XfailRecord> read_xfail(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw Error(ErrorKind::kIo, "cannot read " + file.string(),
                "check the file's permissions, or remove it if no failure is expected");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kXfailInvalid, file.string() + " is not JSON: " + e.what(),
                "fix it to follow docs/xfail.md");
  }
  std::vector<std::string> problems;
  std::vector<XfailRecord> records;
  if (!doc.is_object()) {
    problems.push_back("the top level must be an object {\"schema_version\", \"records\"}");
  } else {
    for (const auto& [key, v] : doc.items())
      if (key != "schema_version" && key != "records") problems.push_back(key + ": unknown field");
    if (!doc.contains("schema_version"))
      problems.push_back("schema_version: missing (must be 1)");
    else if (!doc["schema_version"].is_number_integer() || doc["schema_version"].get<int64_t>() != 1)
      problems.push_back("schema_version: must be 1, got " + doc["schema_version"].dump());
    if (!doc.contains("records")) {
      problems.push_back("records: missing (a list of records)");
    } else if (!doc["records"].is_array()) {
      problems.push_back("records: must be a list, got " + doc["records"].dump());
    } else {
      const auto& list = doc["records"];
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string at = "records[" + std::to_string(i) + "]";
        const auto& r = list[i];
        if (!r.is_object()) {
          problems.push_back(at + ": must be an object");
          continue;
        }
        XfailRecord rec;
        const std::pair<const char*, std::string*> fields[] = {
            {"model", &rec.model},   {"backend", &rec.backend}, {"recipe", &rec.recipe},
            {"half", &rec.half},     {"reason", &rec.reason},   {"recorded", &rec.recorded}};
        for (const auto& [key, v] : r.items()) {
          bool known = key == "cases";
          for (const auto& f : fields) known = known || key == f.first;
          if (!known) problems.push_back(at + "." + key + ": unknown field");
        }
        bool ok = true;
        for (const auto& [name, slot] : fields) {
          if (!r.contains(name)) {
            problems.push_back(at + "." + name + ": missing");
            ok = false;
          } else if (!r[name].is_string() || r[name].get<std::string>().empty()) {
            problems.push_back(at + "." + name + ": must be a non-empty string, got " +
                               r[name].dump());
            ok = false;
          } else {
            *slot = r[name].get<std::string>();
          }
        }
        if (r.contains("cases")) {
          const auto& cs = r["cases"];
          bool cases_ok = cs.is_array() && !cs.empty();
          if (cases_ok)
            for (const auto& c : cs) {
              cases_ok = cases_ok && c.is_string() && !c.get<std::string>().empty();
              if (cases_ok) rec.cases.push_back(c.get<std::string>());
            }
          if (!cases_ok) {
            problems.push_back(at + ".cases: must be a non-empty list of case ids, got " +
                               cs.dump());
            ok = false;
          }
        }
        if (!ok) continue;
        if (!rec.cases.empty() && rec.half != "runtime") {
          problems.push_back(at + ".cases: only a runtime record names cases (half is \"" +
                             rec.half + "\")");
          continue;
        }
        if (rec.half != "export" && rec.half != "runtime") {
          problems.push_back(at + ".half: must be \"export\" or \"runtime\", got \"" + rec.half +
                             "\"");
          continue;
        }
        if (!valid_date(rec.recorded)) {
          problems.push_back(at + ".recorded: must be a date YYYY-MM-DD, got \"" + rec.recorded +
                             "\"");
          continue;
        }
        for (size_t j = 0; j < records.size(); ++j)
          if (records[j].model == rec.model && records[j].backend == rec.backend &&
              records[j].recipe == rec.recipe && records[j].half == rec.half)
            problems.push_back(at + ": the same model/backend/recipe/half as an earlier record (" +
                               record_label(rec) + "); keep one");
        records.push_back(std::move(rec));
      }
    }
  }
  if (!problems.empty())
    throw Error(ErrorKind::kXfailInvalid, file.string() + ": " + join(problems, "; "),
                "fix it to follow docs/xfail.md (or remove it if no failure is expected)");
  return records;
}

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
  for (const auto& path : find_bundles(dir)) {
    try {
      run_column(m, path, caller);
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
