// etproof — the command-line front end of the runtime half (docs/design.md §8).
//
// Exit codes: 0 success / parity passed / matrix passed; 1 drift (parity) or a failing matrix
// (see Matrix::exit_code: drift, a broken column, no bound, nothing measured, or a column --require
// names that did not run here); 2 an error (printed as "error [kind]: cause" + "remedy: …").
// `etproof export …` hands its arguments to the export half and returns its exit code.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "etproof/attribute.h"
#include "etproof/backends_report.h"
#include "etproof/bench.h"
#include "etproof/bundle.h"
#include "etproof/coverage.h"
#include "etproof/error.h"
#include "etproof/export_half.h"
#include "etproof/gate.h"
#include "etproof/classify.h"
#include "etproof/image.h"
#include "etproof/inspect.h"
#include "etproof/isolation.h"
#include "etproof/ledger.h"
#include "etproof/manifest.h"
#include "etproof/junit.h"
#include "etproof/matrix.h"
#include "etproof/npy.h"
#include "etproof/registry.h"
#include "etproof/replay.h"
#include "etproof/run.h"
#include "etproof/runtime_log.h"
#include "etproof/tolerances.h"

namespace fs = std::filesystem;
using etproof::Error;
using etproof::ErrorKind;

namespace {

constexpr int kExitError = 2;

void print_error(const Error& e) {
  std::cerr << "error [" << etproof::to_string(e.kind()) << "]: " << e.cause() << "\n";
  if (!e.remedy().empty()) std::cerr << "remedy: " << e.remedy() << "\n";
  if (e.et_error()) {
    std::ostringstream os;
    os << "executorch error 0x" << std::hex << std::setw(2) << std::setfill('0') << *e.et_error();
    std::cerr << os.str() << " (runtime/core/error.h)\n";
  }
}

// A JSON report as printed: a byte that is not UTF-8 (a file name's, on Linux) becomes U+FFFD
// instead of nlohmann's type_error.316 ending the command after its work.
std::string json_text(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// <directory of this executable>/demo/bundles (etproof::executable_path: /proc/self/exe on
// Linux, _NSGetExecutablePath on macOS).
fs::path default_bundles_dir() {
  std::error_code ec;
  fs::path exe = etproof::executable_path(ec);
  if (ec)
    throw Error(ErrorKind::kIo, "cannot find this executable's directory: " + ec.message(),
                "pass the bundle directory explicitly");
  return exe.parent_path() / "demo" / "bundles";
}

// ---- evidence ledger (etproof/ledger.h) --------------------------------------------------------
std::string g_command_line;  // the command as typed, recorded with each record

struct LedgerOption {
  std::string file;  // --ledger FILE
  bool off = false;  // --no-ledger
};

// Appends what `build` makes of this run to the ledger, and says where on stderr (stdout and the
// JSON outputs stay as they were). Returns false when an explicit --ledger could not be written.
bool record_evidence(const LedgerOption& o, const std::string& kind,
                     const std::function<std::vector<nlohmann::json>(const etproof::RecordContext&)>& build) {
  if (o.off) return true;
  fs::path path;
  std::string why = "--ledger";
  if (!o.file.empty()) {
    path = o.file;
  } else if (auto p = etproof::default_ledger_path(&why)) {
    path = *p;
  } else {
    std::cerr << "ledger: nothing recorded (" << why << "; pass --ledger FILE)\n";
    return true;
  }
  try {
    const auto records = build(etproof::current_context(kind, g_command_line, path));
    if (records.empty()) return true;  // nothing to record (a run that measured nothing): say nothing
    etproof::append_records(path, records);
    std::cerr << "ledger: recorded " << records.size() << (records.size() == 1 ? " record" : " records")
              << " in " << path.string() << " (" << why << "; --no-ledger turns this off)\n";
    return true;
  } catch (const Error& e) {
    std::cerr << "ledger: nothing recorded in " << path.string() << ": [" << etproof::to_string(e.kind())
              << "] " << e.cause() << "\nremedy: " << e.remedy() << "\n";
    return o.file.empty();
  }
}

// ---- backends ----------------------------------------------------------------------------------
// Default probe bundles: <directory of this executable>/test-bundles (test.sh / setup.sh export
// them there).
fs::path default_probe_dir() {
  std::error_code ec;
  fs::path exe = etproof::executable_path(ec);
  return ec ? fs::path() : exe.parent_path() / "test-bundles";
}

int cmd_backends(bool json, bool runtime_only, const std::string& probe_dir,
                 const LedgerOption& ledger) {
  const etproof::RuntimeHalf rt =
      etproof::runtime_half(probe_dir.empty() ? default_probe_dir() : fs::path(probe_dir));
  std::string export_why_not = "skipped (--runtime-only)";
  std::optional<nlohmann::json> exp;
  if (!runtime_only) exp = etproof::query_export_half(export_why_not);
  nlohmann::json doc = etproof::to_json(rt);
  doc["export"] = exp ? *exp : nlohmann::json(nullptr);
  doc["export_error"] = exp ? nlohmann::json(nullptr) : nlohmann::json(export_why_not);
  std::cout.flush();
  const bool recorded = record_evidence(ledger, "backends", [&](const etproof::RecordContext& ctx) {
    return etproof::records_from_backends(ctx, rt, exp.value_or(nlohmann::json()));
  });
  const int ok = recorded ? 0 : kExitError;
  if (json) {
    std::cout << json_text(doc) << "\n";
    return ok;
  }
  std::cout << etproof::to_text(rt);
  std::cout << "\nexport half (" << etproof::export_python() << " -m etproof probe, cached):\n";
  if (!exp) {
    std::cout << "  not answered: " << export_why_not << "\n";
    return ok;
  }
  size_t w = 8;
  for (const auto& e : *exp) w = std::max(w, e.value("backend", std::string()).size());
  for (const auto& e : *exp)
    std::cout << "  " << std::left << std::setw(static_cast<int>(w))
              << e.value("backend", std::string("?")) << "  " << std::setw(16)
              << e.value("status", std::string("?")) << "  " << e.value("reason", std::string())
              << "\n";
  return ok;
}

// ---- export: the export half, in Python -------------------------------------------------------
int cmd_export(int argc, char** argv) { return etproof::run_export_half(argc, argv); }

// ---- inspect -----------------------------------------------------------------------------------
int cmd_inspect(const std::string& path, bool json) {
  const etproof::Inspection i = etproof::inspect_bundle(path);
  std::cout << (json ? json_text(etproof::to_json(i)) + "\n" : etproof::to_text(i));
  return 0;
}

// ---- run ---------------------------------------------------------------------------------------
int cmd_run(const std::string& path, const std::vector<std::string>& input_args,
            const std::string& out_dir, const std::vector<std::string>& methods) {
  std::map<std::string, fs::path> inputs;
  for (const std::string& arg : input_args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      throw Error(ErrorKind::kInvalidArgument, "--input \"" + arg + "\" is not NAME=FILE.npy",
                  "pass each input as --input NAME=FILE.npy");
    if (!inputs.emplace(arg.substr(0, eq), arg.substr(eq + 1)).second)
      throw Error(ErrorKind::kInvalidArgument, "input \"" + arg.substr(0, eq) + "\" given twice",
                  "pass each input once");
  }
  std::cout << etproof::to_text(etproof::run_bundle(path, inputs, out_dir, methods));
  return 0;
}

// ---- parity ------------------------------------------------------------------------------------
// The bound's source and citations (parity --verbose), as an indented paragraph placed after the
// report's bound line (the line and its continuations); the report is unchanged without it.
std::string with_bound_source(const std::string& text, const etproof::Bound& bound) {
  const size_t at = text.find("\nbound: ");
  if (at == std::string::npos || bound.source.empty()) return text;
  size_t end = text.find('\n', at + 1);
  while (end != std::string::npos && text.compare(end + 1, 4, "    ") == 0) end = text.find('\n', end + 1);
  if (end == std::string::npos) return text;
  return text.substr(0, end + 1) + etproof::fit_text("  source: " + bound.source + "\n") + text.substr(end + 1);
}

int cmd_parity(const std::string& path, bool json, const etproof::BoundOverride& caller,
               const std::optional<etproof::Budget>& budget, const std::vector<std::string>& methods,
               LedgerOption ledger, bool allow_edited_goldens, const etproof::Isolation& isolation,
               bool verbose) {
  // A --method the bundle does not list is a usage error, refused up front (exit 2, no evidence)
  // from the manifest alone; a manifest that cannot be read is left to the replay to report.
  if (!methods.empty()) {
    std::optional<etproof::Manifest> m;
    try {
      m = etproof::open_bundle(path, etproof::OpenOptions{.verify_artifact = false}).manifest;
    } catch (const Error&) {
    }
    if (m)
      if (auto e = etproof::unknown_methods_error(*m, methods)) throw *e;
  }
  etproof::ReplayOptions options;
  options.caller = caller;
  options.budget = budget;
  options.methods = methods;
  options.allow_edited_goldens = allow_edited_goldens;
  options.isolation = isolation;
  if (allow_edited_goldens && !ledger.off) {
    // Numbers against goldens that may not be the export's are no evidence about the bundle.
    std::cerr << "ledger: nothing recorded (--allow-edited-goldens: a run against edited goldens is "
                 "not evidence)\n";
    ledger.off = true;
  }
  const etproof::ParityReport r = etproof::replay(path, options);
  // What stopped it, if anything: the bundle could not be run or a case measured, or no bound is
  // known. A bundle that could not be judged is evidence too (not-linked, load-failed, …); a
  // caller's incomplete bound is a usage error, not evidence.
  const Error* error = r.first_error();
  if (!error && r.bound_error) error = &*r.bound_error;
  const bool recorded = (error && error->kind() == ErrorKind::kInvalidArgument) ||
                        record_evidence(ledger, "parity", [&](const etproof::RecordContext& ctx) {
                          return etproof::records_from_parity(ctx, r);
                        });
  if (error) throw *error;
  if (json)
    std::cout << json_text(etproof::to_json(r)) << "\n";  // the bound's source always
  else
    std::cout << (verbose ? with_bound_source(etproof::to_text(r), r.bound) : etproof::to_text(r));
  if (!recorded) return kExitError;
  return r.passed ? 0 : 1;
}

// ---- attribute ---------------------------------------------------------------------------------
// The tapped twin of each BUNDLE replayed and read in graph order (etproof/attribute.h), printed in
// turn (JSON: one object, or a list for several); --plot draws them on one picture through the
// export half's matplotlib (python -m etproof plot-attribution). Exit 0 when every tap and output
// of every bundle agrees, 1 when something drifts (the table names where), 2 an error.
struct AttributeArgs {
  std::string case_id, output, plot, model, bisect_out;
  bool json = false, bisect = false;
};

int cmd_attribute(const std::vector<std::string>& paths, const AttributeArgs& args, const etproof::BoundOverride& caller,
                  const etproof::Isolation& isolation) {
  etproof::AttributeOptions options;
  options.case_id = args.case_id;
  options.output = args.output;
  options.replay.caller = caller;
  options.replay.isolation = isolation;
  const bool json = args.json;
  const std::string& plot = args.plot;
  std::vector<etproof::Attribution> all;
  nlohmann::json docs = nlohmann::json::array();
  std::vector<std::string> texts;
  for (const std::string& p : paths) {
    if (args.bisect) {
      etproof::BisectOptions bo;
      bo.model = args.model;
      if (!args.bisect_out.empty()) bo.work = fs::path(args.bisect_out) / fs::path(p).filename();
      etproof::Bisection b = etproof::bisect(p, options, bo);
      docs.push_back(etproof::to_json(b));
      texts.push_back(etproof::to_text(b));
      all.push_back(std::move(b.final));
    } else {
      all.push_back(etproof::attribute(p, options));
      docs.push_back(etproof::to_json(all.back()));
      texts.push_back(etproof::to_text(all.back()));
    }
  }
  if (json) {
    std::cout << json_text(docs.size() == 1 ? docs[0] : docs) << "\n";
  } else {
    for (size_t i = 0; i < texts.size(); ++i) std::cout << (i ? "\n" : "") << texts[i];
  }
  if (!plot.empty() && etproof::plot_attributions(docs, plot, /*stdout_to_stderr=*/json) != 0) return kExitError;
  const bool drift = std::any_of(all.begin(), all.end(), [](const etproof::Attribution& a) {
    return a.earliest_drift || !a.outputs_passed;
  });
  return drift ? 1 : 0;
}

// ---- bench -------------------------------------------------------------------------------------
// One BUNDLE given and refused: its Error, as parity's (exit 2). Otherwise every bundle of every
// argument (a bundle, or a directory of bundles) is measured or listed with why not; exit 1 when
// one could not be measured for a reason that fails a run (fails_run), or nothing was measured.
int cmd_bench(const std::vector<std::string>& args, bool json, bool markdown, const etproof::BenchOptions& o,
              const LedgerOption& ledger, const etproof::Isolation& isolation) {
  std::vector<fs::path> paths;
  for (const std::string& a : args) {
    const fs::path p(a);
    std::error_code ec;
    bool is_bundle_dir = false;  // holds a manifest itself (else: a directory of bundles)
    if (fs::is_directory(p, ec))
      for (const auto& e : fs::directory_iterator(p, ec)) {
        const std::string f = e.path().filename().string();
        is_bundle_dir = is_bundle_dir || (f.size() > 13 && f.substr(f.size() - 13) == ".etproof.json");
      }
    if (fs::is_directory(p, ec) && !is_bundle_dir) {
      for (const fs::path& b : etproof::find_bundles(p)) paths.push_back(b);
    } else {
      paths.push_back(p);
    }
  }
  std::vector<etproof::BenchReport> reports;
  for (const fs::path& p : paths) reports.push_back(etproof::bench(p, o, isolation));
  if (reports.size() == 1 && reports.front().refused && reports.front().error) throw *reports.front().error;
  // Performance records, one per method measured (ledger.h records_from_bench).
  const bool recorded = record_evidence(ledger, "bench", [&](const etproof::RecordContext& ctx) {
    return etproof::records_from_bench(ctx, reports);
  });
  if (json)
    std::cout << json_text(etproof::to_json(reports)) << "\n";
  else if (markdown)
    std::cout << etproof::to_markdown(reports);
  else
    std::cout << etproof::to_text(reports);
  bool any = false, failed = false;
  for (const etproof::BenchReport& r : reports) {
    any = any || r.ok();
    failed = failed || (r.refused && etproof::fails_run(*r.refused));
    for (const auto& m : r.methods) failed = failed || m.error.has_value();
  }
  if (!recorded) return kExitError;
  return any && !failed ? 0 : 1;
}

// ---- matrix ------------------------------------------------------------------------------------
// A report FILE (--html, --junit) must be writable before the run, not found unwritable after it:
// its directory is created and a file created and removed beside it. Error{kIo} naming FILE.
// `what` names it as write_html does ("the HTML page").
void check_writable(const std::string& file, const std::string& what, const std::string& flag) {
  if (file.empty()) return;
  const fs::path p(file);
  const std::string remedy = "pass " + flag + " a path in a writable directory";
  std::error_code ec;
  if (!p.parent_path().empty()) fs::create_directories(p.parent_path(), ec);
  if (fs::is_directory(p, ec)) throw Error(ErrorKind::kIo, "cannot write " + what + " " + file + ": it is a directory", remedy);
  const fs::path probe = p.string() + ".etproof-probe-" + std::to_string(::getpid());
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::kIo, "cannot write " + what + " " + file + ": " + std::strerror(errno), remedy);
  }
  fs::remove(probe, ec);
}

int cmd_matrix(const std::vector<std::string>& dir_args, bool json, bool markdown,
               const std::string& junit, const std::string& html, const etproof::BoundOverride& caller,
               const std::optional<etproof::Budget>& budget, size_t jobs,
               const std::vector<std::string>& methods, const LedgerOption& ledger,
               const etproof::Isolation& isolation, const std::optional<etproof::BenchOptions>& bench,
               const std::vector<std::string>& required, bool require_all) {
  std::vector<fs::path> dirs(dir_args.begin(), dir_args.end());
  if (dirs.empty()) dirs.push_back(default_bundles_dir());
  for (const std::string& r : required) etproof::check_requirement(r);  // a usage error: before any run
  check_writable(html, "the HTML page", "--html");
  check_writable(junit, "the JUnit report", "--junit");
  etproof::Matrix m = etproof::build_matrix(dirs, caller, jobs, budget, methods, isolation);
  m.required = required;
  m.require_all = require_all;
  if (bench) etproof::bench_columns(m, *bench, isolation);
  const nlohmann::json doc = etproof::to_json(m);
  const bool recorded = record_evidence(ledger, "matrix", [&](const etproof::RecordContext& ctx) {
    return etproof::records_from_matrix(ctx, m);
  });
  // --bench: the columns' performance records too, as `etproof bench` writes them.
  bool bench_recorded = true;
  if (bench) {
    std::vector<etproof::BenchReport> reports;
    for (const etproof::Column& c : m.columns)
      if (c.speed) reports.push_back(*c.speed);
    bench_recorded = record_evidence(ledger, "bench", [&](const etproof::RecordContext& ctx) {
      return etproof::records_from_bench(ctx, reports);
    });
  }
  if (!junit.empty()) {
    std::ofstream out(junit);
    out << etproof::to_junit(m);
    if (!out) throw Error(ErrorKind::kIo, "cannot write " + junit, "pass a writable --junit FILE");
  }
  if (!html.empty()) {
    // Which layer drifted, where a column's bundle has a tapped twin (etproof/attribute.h).
    etproof::AttributeOptions attribution;
    attribution.replay.caller = caller;
    attribution.replay.isolation = isolation;
    etproof::attach_attributions(m, attribution);
    etproof::write_html(m, html);
  }
  if (json) {
    std::cout << json_text(doc) << "\n";
  } else if (markdown) {
    std::cout << etproof::to_markdown(m);
  } else {
    std::string header = "matrix: ";
    for (size_t i = 0; i < dirs.size(); ++i) header += (i ? ", " : "") + dirs[i].string();
    std::cout << etproof::fit_text(header + "\n") << "\n" << etproof::to_text(m);
  }
  return recorded && bench_recorded ? m.exit_code() : kExitError;
}

// ---- coverage ----------------------------------------------------------------------------------
int cmd_coverage(const etproof::CoverageRequest& a) {
  const etproof::CoverageOutcome o = etproof::run_coverage(a);
  std::cout << o.page;
  std::cerr << o.message;
  return o.exit_code;
}

// ---- measure-tolerances ------------------------------------------------------------------------
// Exit 0: the bound table covers every observation by the margin; 1: it does not (re-measure the
// table), or nothing was measured; 2: an error.
int cmd_measure_tolerances(const std::vector<std::string>& dir_args, bool json, bool markdown,
                           const std::string& junit, double margin,
                           const etproof::BoundOverride& caller, size_t jobs,
                           bool own_reference) {
  std::vector<fs::path> dirs;
  for (const auto& d : dir_args) dirs.emplace_back(d);
  if (dirs.empty()) {  // default: the golden set (else the demo) and the test bundles beside us
    const fs::path demo = default_bundles_dir();
    const fs::path build = demo.parent_path().parent_path();
    const fs::path golden = build / "golden-set" / "bundles";
    std::error_code ec;  // a default that cannot be examined is left out, as one that is absent
    for (const fs::path& d : {fs::is_directory(golden, ec) ? golden : demo, build / "test-bundles"})
      if (fs::is_directory(d, ec)) dirs.push_back(d);
    if (dirs.empty()) dirs.push_back(demo);  // refused by name below
  }
  const etproof::ToleranceReport r = etproof::measure_tolerances(dirs, {margin, caller, jobs, own_reference});
  if (!junit.empty()) {
    std::ofstream out(junit);
    out << etproof::to_junit(r);
    if (!out)
      throw Error(ErrorKind::kIo, "cannot write " + junit, "pass a writable --junit FILE");
  }
  if (json)
    std::cout << json_text(etproof::to_json(r)) << "\n";
  else if (markdown)
    std::cout << etproof::to_markdown(r);
  else
    std::cout << etproof::to_text(r);
  return r.exit_code();
}

// ---- classify ----------------------------------------------------------------------------------
int cmd_classify(const std::string& image, const std::string& backend, const std::string& recipe,
                 const std::string& dir_arg, size_t k) {
  const fs::path dir = dir_arg.empty() ? default_bundles_dir() : fs::path(dir_arg);
  std::cout << etproof::to_text(etproof::classify_image(image, dir, backend, recipe, k));
  return 0;
}

int run_cli(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "export") return cmd_export(argc - 2, argv + 2);

  g_command_line = etproof::command_line_text(argc, argv);
  CLI::App app{"etproof — export PyTorch models through ExecuTorch and prove the numbers did "
               "not change (runtime half)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("etproof ") + ETPROOF_VERSION);

  bool json = false, markdown = false;
  bool runtime_only = false;
  std::string probe_dir;
  auto* backends = app.add_subcommand(
      "backends", "both halves per backend: what lowers here, and what this binary runs (probed)");
  backends->add_flag("--json", json, "JSON output");
  backends->add_flag("--runtime-only", runtime_only, "skip the export half (no Python)");
  backends->add_option("--probe-bundles", probe_dir,
                       "bundles the runtime probes run (default: <etproof's dir>/test-bundles)");
  // Evidence (backends, matrix, parity, bench): where this run's records are appended.
  LedgerOption ledger;
  auto add_ledger_options = [&ledger](CLI::App* sub) {
    auto* l = sub->add_option("--ledger", ledger.file,
                              "append this run's evidence records here (default: $ETPROOF_LEDGER, "
                              "else $XDG_STATE_HOME/etproof/ledger.jsonl, ~/.local/state/…)");
    sub->add_flag("--no-ledger", ledger.off, "record nothing")->excludes(l);
  };
  add_ledger_options(backends);

  auto* exp = app.add_subcommand(
      "export", "export a model (runs the export half: python -m etproof export ARGS…)");
  exp->allow_extras();

  std::string bundle;
  auto* inspect = app.add_subcommand("inspect", "a bundle's manifest, delegates and delegation");
  inspect->add_option("BUNDLE", bundle, "bundle directory or manifest")->required();
  inspect->add_flag("--json", json, "JSON output");

  std::vector<std::string> input_args;
  std::string out_dir;
  auto* run = app.add_subcommand("run", "run a bundle on .npy inputs");
  run->add_option("BUNDLE", bundle, "bundle directory or manifest")->required();
  run->add_option("--input", input_args, "NAME=FILE.npy, once per input (none for a program without inputs)");
  run->add_option("--out", out_dir, "write NAME.npy per output here (METHOD.NAME.npy with several methods)");
  // The methods run or replayed (run, parity, matrix): default every method the manifest lists.
  std::vector<std::string> methods;
  auto add_method_option = [&methods](CLI::App* sub, const std::string& what) {
    // One NAME per --method: what follows is the BUNDLE or DIR, never another name.
    sub->add_option("--method", methods,
                    "NAME of a method to " + what + "; repeatable (default: every method the manifest lists)")
        ->allow_extra_args(false);
  };
  add_method_option(run, "run (each gets the --input values named as its inputs)");

  // A caller bound (parity and matrix): each flag replaces that field of the derived bound.
  etproof::BoundOverride caller;
  auto add_bound_options = [&caller](CLI::App* sub, const std::string& scope) {
    sub->add_option("--atol", caller.atol, "caller bound" + scope + ": absolute tolerance");
    sub->add_option("--rtol", caller.rtol, "caller bound" + scope + ": relative tolerance");
    sub->add_option("--min-cosine", caller.min_cosine,
                    "caller bound" + scope + ": minimum cosine similarity");
    sub->add_option("--min-sqnr", caller.min_sqnr_db,
                    "caller bound" + scope + ": minimum SQNR per output, in dB");
  };
  // The caller's accuracy budget (parity and matrix): what the recipe may cost.
  std::vector<std::string> budget_args;
  auto add_budget_option = [&budget_args](CLI::App* sub) {
    sub->add_option("--budget", budget_args,
                    "what the recipe may cost (its emulation against the float32 golden): "
                    "KEY=VALUE, repeatable; min_sqnr_db, min_cosine, top1_agreement (fraction of "
                    "classifier rows keeping the golden's top-1); each replaces the bundle's own");
  };
  auto* parity = app.add_subcommand("parity", "the gate on one bundle (exit 0 pass, 1 drift)");
  parity->add_option("BUNDLE", bundle, "bundle directory or manifest")->required();
  parity->add_flag("--json", json, "JSON output (the bound's source and citations always)");
  bool parity_verbose = false;
  parity->add_flag("--verbose,-v", parity_verbose,
                   "also print the bound's source: the measurements and citations its numbers come from");
  add_method_option(parity, "replay the golden cases of");
  add_bound_options(parity, "");
  add_budget_option(parity);
  add_ledger_options(parity);
  bool allow_edited_goldens = false;
  parity->add_flag("--allow-edited-goldens", allow_edited_goldens,
                   "replay cases whose golden files no longer match the manifest's SHA-256 (their numbers "
                   "are shown, the case is drifted whatever they are; nothing is recorded)");

  // Worker processes (etproof/isolation.h): matrix uses them unless --in-process, parity when
  // --isolate; both take the limits.
  etproof::Isolation isolation;
  double worker_memory_mib = -1;
  auto add_worker_limits = [&isolation, &worker_memory_mib](CLI::App* sub) {
    sub->add_option("--worker-timeout", isolation.time_limit_s,
                    "seconds each load and each method call may take in the worker process before it is "
                    "killed and the case is crashed (default 600; 0: no limit)")
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--worker-memory", worker_memory_mib,
                    "the worker process's address-space limit in MiB (default: 3/4 of this machine's "
                    "memory; 0: no limit)")
        ->check(CLI::NonNegativeNumber);
  };
  bool isolate = false;
  parity->add_flag("--isolate", isolate,
                   "run the program in a worker process: a crash inside ExecuTorch becomes a crashed "
                   "case instead of ending etproof");
  add_worker_limits(parity);

  AttributeArgs attribute_args;
  bool attribute_isolate = false;
  auto* attribute = app.add_subcommand(
      "attribute", "which layer drifted: the bundle's tapped twin replayed, every tap against its bound in graph order "
                   "(exit 0 all agree, 1 a drift)");
  std::vector<std::string> attribute_bundles;
  attribute->add_option("BUNDLE", attribute_bundles,
                        "bundle directories or manifests (exported with --taps: BUNDLE/NAME.taps); several "
                        "columns of one model share a --plot")
      ->required();
  attribute->add_option("--plot", attribute_args.plot,
                        "also draw SQNR against depth, one line per bundle, with the bound and the earliest "
                        "drift, into FILE.svg or FILE.png (the export half's matplotlib)");
  attribute->add_option("--case", attribute_args.case_id,
                        "the golden case to attribute (default: the first case with a drift, else the first)");
  attribute->add_option("--output", attribute_args.output,
                        "the model output to explain: only the taps whose value reaches it are read (default: all)");
  attribute->add_flag("--bisect", attribute_args.bisect,
                      "narrow the earliest drift of a spaced twin: export twins tapping every node between the "
                      "last agreeing tap and the drift (the export half, python -m etproof export --taps-range) "
                      "until no untapped node lies between them");
  attribute->add_option("--model", attribute_args.model,
                        "with --bisect: the MODEL to export from (default: the twin's taps.exported_from)");
  attribute->add_option("--bisect-out", attribute_args.bisect_out,
                        "with --bisect: keep the narrowed bundles in DIR/BUNDLE/round-N (default: a temporary "
                        "directory, removed)");
  attribute->add_flag("--json", attribute_args.json, "JSON output");
  add_bound_options(attribute, "");
  attribute->add_flag("--isolate", attribute_isolate,
                      "run the twin in a worker process: a crash inside ExecuTorch becomes an error instead of ending etproof");

  std::vector<std::string> dirs;
  std::string matrix_junit, matrix_html;
  auto* matrix = app.add_subcommand("matrix", "every golden case × every bundle column");
  matrix->add_option("DIR", dirs,
                     "bundle directories (default: <etproof's dir>/demo/bundles); rows are "
                     "(model, case), columns (backend, recipe)");
  matrix->add_option("--junit", matrix_junit, "also write a JUnit XML report to FILE");
  matrix->add_option("--html", matrix_html,
                     "also write the matrix as one self-contained HTML page to FILE (atomically; "
                     "cells coloured by status, each opening to its numbers)");
  // Columns replayed at once (default: the core count); the output does not depend on it.
  size_t jobs = std::max(1u, std::thread::hardware_concurrency());
  auto add_jobs_option = [&jobs](CLI::App* sub) {
    sub->add_option("--jobs,-j", jobs, "bundles replayed at once (default: the core count)")
        ->check(CLI::PositiveNumber);
  };
  add_jobs_option(matrix);
  add_method_option(matrix, "replay in every bundle that lists it (a bundle listing none is left out, "
                            "named with the reason)");
  auto* mj = matrix->add_flag("--json", json, "JSON output");
  auto* mm = matrix->add_flag("--markdown", markdown, "Markdown output");
  mj->excludes(mm);
  add_bound_options(matrix, ", applied to every column");
  add_budget_option(matrix);
  add_ledger_options(matrix);
  bool matrix_bench = false;
  matrix->add_flag("--bench", matrix_bench,
                   "also benchmark every column that ran (etproof bench: latency and memory on its golden "
                   "inputs, one column at a time) and show its speed-up against portable and XNNPACK fp32");
  bool in_process = false;
  matrix->add_flag("--in-process", in_process,
                   "run every program in this process instead of one worker process per column (faster "
                   "to start; a crash inside ExecuTorch then ends the run)");
  add_worker_limits(matrix);
  std::vector<std::string> matrix_required;
  bool matrix_require_all = false;
  matrix->add_option("--require", matrix_required,
                     "a COLUMN that must have run here, as the matrix names it: BACKEND/RECIPE (e.g. xnnpack/fp32; "
                     "every model's), BACKEND (every recipe of it) or MODEL:BACKEND/RECIPE; repeatable or "
                     "comma-separated. One that did not run (not-linked, unavailable, export-refused, …), or that "
                     "no column of the matrix has, fails the run (exit 1, named in the verdict)")
      ->allow_extra_args(false)
      ->delimiter(',');
  matrix->add_flag("--require-all", matrix_require_all,
                   "every column must have run here: any column that did not fails the run (exit 1)");

  etproof::CoverageRequest cov;
  auto* coverage = app.add_subcommand(
      "coverage", "the backend-coverage page (Markdown), rendered from evidence ledger(s) alone");
  coverage->add_option("--ledger", cov.ledgers,
                       "ledger to read; repeat to merge (concatenated, de-duplicated by id); "
                       "default: the ledger runs record to ($ETPROOF_LEDGER, else "
                       "$XDG_STATE_HOME/etproof/ledger.jsonl)");
  coverage->add_option("--out", cov.out, "write the page here (atomically) instead of stdout");
  coverage->add_flag("--check", cov.check,
                     "compare with --out FILE (default docs/backend-coverage.md) instead of "
                     "writing; exit 1 with a diff when it differs");
  coverage->add_option("--max-age-days", cov.max_age_days,
                       "evidence older than this (before --as-of) is marked stale (default 90)")
      ->check(CLI::NonNegativeNumber);
  coverage->add_option("--as-of", cov.as_of,
                       "YYYY-MM-DD the age is measured from (default: the newest record's date)");

  std::vector<std::string> tol_dirs;
  std::string tol_junit;
  double margin = etproof::kDefaultMargin;
  auto* tolerances = app.add_subcommand(
      "measure-tolerances",
      "re-measure the bound table on every golden of every bundle in DIR…: worst error per "
      "(recipe, precision) in the gate's scale-free terms, and whether the table covers it by "
      "the margin (exit 1 when it does not)");
  tolerances->add_option("DIR", tol_dirs,
                         "bundle directories (default: <etproof's dir>/golden-set/bundles, else "
                         "<etproof's dir>/demo/bundles, and <etproof's dir>/test-bundles)");
  add_jobs_option(tolerances);
  auto* tj = tolerances->add_flag("--json", json, "JSON output");
  auto* tm = tolerances->add_flag("--markdown", markdown, "Markdown output");
  tj->excludes(tm);
  tolerances->add_option("--junit", tol_junit, "also write a JUnit XML report to FILE");
  tolerances->add_option("--margin", margin,
                         "amplitude margin the table must keep over the worst observation "
                         "(default 4: the margin the table was set with)");
  add_bound_options(tolerances, ", instead of the table");
  bool own_reference = false;
  tolerances->add_flag("--own-reference", own_reference,
                       "measure each column against its own reference computation (the float32 "
                       "golden, or the precision's emulation) with no truth and no widening, "
                       "instead of as the gate judges it");

  std::vector<std::string> bench_args;
  etproof::BenchOptions bench_options;
  auto* bench = app.add_subcommand("bench", "load time, latency and memory of bundles on their golden inputs");
  bench->add_option("BUNDLE", bench_args, "bundle directories or manifests, or directories of bundles")->required();
  bench->add_option("--threads", bench_options.threads,
                    "size of ExecuTorch's thread pool (XNNPACK, optimized kernels); default: ExecuTorch's");
  bench->add_option("--warmup", bench_options.warmup, "untimed calls per method first (default 5)");
  auto* bench_runs = bench->add_option("--runs", bench_options.runs, "timed calls per method")->check(CLI::PositiveNumber);
  bench->add_option("--seconds", bench_options.seconds,
                    "time per method when --runs is not given (default 1; at least 10 calls)")
      ->check(CLI::PositiveNumber)
      ->excludes(bench_runs);
  auto* bj = bench->add_flag("--json", json, "JSON output");
  auto* bm = bench->add_flag("--markdown", markdown, "Markdown output");
  bj->excludes(bm);
  bench->add_option("--method", bench_options.methods, "NAME of a method to time; repeatable (default: every method)")
      ->allow_extra_args(false);
  add_ledger_options(bench);
  bool bench_in_process = false;
  bench->add_flag("--in-process", bench_in_process,
                  "measure every bundle in this process instead of each in its own worker process (then "
                  "a bundle's peak memory can hide in memory an earlier one freed, and a crash ends the run)");
  add_worker_limits(bench);

  std::string image, backend, recipe, bundles_dir;
  size_t top = 5;
  auto* classify = app.add_subcommand("classify", "classify a photo with a demo bundle");
  classify->add_option("IMAGE", image, "JPEG/PNG/BMP image")->required();
  classify->add_option("--backend", backend, "export key of the bundle to use (e.g. xnnpack)");
  classify->add_option("--recipe", recipe, "recipe of the bundle to use (e.g. fp32)");
  classify->add_option("--bundles", bundles_dir,
                       "bundle directory (default: <etproof's dir>/demo/bundles)");
  classify->add_option("--top", top, "how many classes to print")->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }

  if (backends->parsed()) return cmd_backends(json, runtime_only, probe_dir, ledger);
  if (coverage->parsed()) return cmd_coverage(cov);
  if (inspect->parsed()) return cmd_inspect(bundle, json);
  if (run->parsed()) return cmd_run(bundle, input_args, out_dir, methods);
  etproof::check_bound_override(caller);
  std::optional<etproof::Budget> budget;
  for (const std::string& kv : budget_args)
    etproof::parse_budget_argument(kv, budget ? *budget : budget.emplace());
  if (worker_memory_mib >= 0) isolation.memory_limit_bytes = uint64_t(worker_memory_mib * double(1 << 20));
  if (bench->parsed()) {
    isolation.enabled = !bench_in_process;
    return cmd_bench(bench_args, json, markdown, bench_options, ledger, isolation);
  }
  if (attribute->parsed()) {
    isolation.enabled = attribute_isolate;
    attribute_args.json = attribute_args.json || json;
    return cmd_attribute(attribute_bundles, attribute_args, caller, isolation);
  }
  if (parity->parsed()) {
    isolation.enabled = isolate;
    return cmd_parity(bundle, json, caller, budget, methods, ledger, allow_edited_goldens, isolation,
                      parity_verbose);
  }
  if (matrix->parsed()) {
    isolation.enabled = !in_process;
    std::optional<etproof::BenchOptions> bench_for_matrix;
    if (matrix_bench) bench_for_matrix = etproof::BenchOptions{.warmup = 3, .seconds = 1.0};
    return cmd_matrix(dirs, json, markdown, matrix_junit, matrix_html, caller, budget, jobs, methods, ledger, isolation,
                      bench_for_matrix, matrix_required, matrix_require_all);
  }
  if (tolerances->parsed())
    return cmd_measure_tolerances(tol_dirs, json, markdown, tol_junit, margin, caller, jobs,
                                  own_reference);
  if (classify->parsed()) return cmd_classify(image, backend, recipe, bundles_dir, top);
  std::cerr << app.help();
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  etproof::install_runtime_log_filter();
  etproof::prepare_backend_environment();
  try {
    return run_cli(argc, argv);
  } catch (const Error& e) {
    print_error(e);
    return kExitError;
  } catch (const std::bad_alloc&) {
    // Not a bug: the machine or the process's limit ran out (a very large input or bundle file).
    // The stack is unwound, so what the command held is freed; should even this message not fit,
    // a fixed one is written.
    try {
      print_error(etproof::out_of_memory_error(std::string("in etproof ") + (argc > 1 ? argv[1] : "")));
    } catch (...) {
      std::fputs("error [out-of-memory]: out of memory (std::bad_alloc)\n", stderr);
    }
    return kExitError;
  } catch (const fs::filesystem_error& e) {
    // A filesystem call the library does not check itself (each one it knows of is an io Error
    // naming its path): still an io error with its path, never "a bug".
    std::string paths = e.path1().string();
    if (!e.path2().empty()) paths += ", " + e.path2().string();
    print_error(Error(ErrorKind::kIo, (paths.empty() ? "" : paths + ": ") + e.code().message() + " (" + e.what() + ")",
                      "check the path, its permissions and free space"));
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "error [internal]: " << e.what()
              << "\nremedy: this is a bug in etproof; please report it with the command line\n";
    return kExitError;
  } catch (...) {
    std::cerr << "error [internal]: unknown exception\n";
    return kExitError;
  }
}
