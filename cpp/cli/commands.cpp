// etproof CLI — the subcommands (cpp/cli/commands.h), called by main.cpp's option parsing.
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

#include "etproof/replay/attribute.h"
#include "etproof/render/attribute.h"
#include "etproof/replay/backends_report.h"
#include "etproof/render/backends.h"
#include "etproof/replay/bench.h"
#include "etproof/runtime/bundle.h"
#include "etproof/codegen/codegen.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/runtime/export_half.h"
#include "etproof/gate/gate.h"
#include "etproof/demo/classify.h"
#include "etproof/demo/image.h"
#include "etproof/replay/inspect.h"
#include "etproof/runtime/emulation.h"
#include "etproof/runtime/isolation.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/render/junit.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/core/npy.h"
#include "etproof/runtime/registry.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/runtime/run.h"
#include "etproof/runtime/runtime_log.h"
#include "etproof/replay/tolerances.h"
#include "etproof/render/tolerances.h"


#include "commands.h"

namespace etproof_cli {

std::string g_command_line;



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
                 const LedgerOption& ledger, const std::vector<std::string>& emulate) {
  // --emulate: what each emulated machine's worker is and registers (HELLO), asked before the rest.
  nlohmann::json emulated = nlohmann::json::array();
  for (const std::string& spec : emulate)
    for (const etproof::Emulation& e : etproof::parse_emulation(spec)) {
      const nlohmann::json guest = etproof::probe_emulated_worker(e);
      emulated.push_back({{"profile", e.label()},
                          {"machine", etproof::emulated_machine(e, etproof::find_emulator(e.arch), guest,
                                                                etproof::machine_info())},
                          {"registered", guest.at("registered")}});
    }
  const etproof::RuntimeHalf rt =
      etproof::runtime_half(probe_dir.empty() ? default_probe_dir() : fs::path(probe_dir));
  std::string export_why_not = "skipped (--runtime-only)";
  std::optional<nlohmann::json> exp;
  if (!runtime_only) exp = etproof::query_export_half(export_why_not);
  nlohmann::json doc = etproof::to_json(rt);
  doc["export"] = exp ? *exp : nlohmann::json(nullptr);
  doc["export_error"] = exp ? nlohmann::json(nullptr) : nlohmann::json(export_why_not);
  if (!emulate.empty()) doc["emulated"] = emulated;
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
  for (const nlohmann::json& e : emulated) {
    const nlohmann::json& m = e.at("machine");
    std::string features, registered;
    for (const auto& f : m.at("features")) features += (features.empty() ? "" : " ") + f.get<std::string>();
    for (const auto& r : e.at("registered")) registered += (registered.empty() ? "" : ", ") + r.get<std::string>();
    std::cout << "\nemulated " << e.at("profile").get<std::string>() << " (" << m.value("emulator", std::string())
              << ", " << m.value("cpu", std::string()) << "; features: " << features
              << "): runs portable kernels and " << (registered.empty() ? "no delegate" : registered)
              << " (matrix --emulate " << e.at("profile").get<std::string>() << ")\n";
  }
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

// ---- gen ---------------------------------------------------------------------------------------
int cmd_gen(const std::string& bundle, const std::string& out_dir, const std::string& class_name,
            const std::optional<std::string>& namespace_name) {
  etproof::GenOptions o;
  o.class_name = class_name;
  if (namespace_name) o.namespace_name = *namespace_name;
  const etproof::GeneratedCode g = etproof::write_model_api(bundle, out_dir, o);
  std::cout << (g.written ? "wrote " : "up to date: ") << (fs::path(out_dir) / g.header_name).string()
            << " and " << g.source_name
            << ": class " << (o.namespace_name.empty() ? "" : o.namespace_name + "::") << g.class_name
            << "\nnext: compile " << g.source_name << " into your program and link etproof::codegen "
            << "(docs/api.md; or let CMake's etproof_add_model do it)\n";
  return 0;
}

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

// --emulate ARCH/CPU for a command that runs on one machine (parity, bench): that machine found
// and asked what it is before anything runs, `isolation` pointed at its worker; its record
// (emulated_machine), or nullopt without --emulate. A set is a usage error.
std::optional<nlohmann::json> use_emulated_machine(const std::string& command, const std::string& emulate,
                                                   etproof::Isolation& isolation) {
  if (emulate.empty()) return std::nullopt;
  const std::vector<etproof::Emulation> es = etproof::parse_emulation(emulate);
  if (es.size() != 1)
    throw Error(ErrorKind::kInvalidArgument, command + " --emulate " + emulate + " names " + std::to_string(es.size()) +
                                                 " machines; " + command + " runs on one",
                "give one ARCH/CPU, or run matrix --emulate " + emulate + " for the set");
  const nlohmann::json guest = etproof::probe_emulated_worker(es[0]);
  isolation.enabled = true;
  isolation.emulation = es[0];
  return etproof::emulated_machine(es[0], etproof::find_emulator(es[0].arch), guest, etproof::machine_info());
}

int cmd_parity(const std::string& path, bool json, const etproof::BoundOverride& caller,
               const std::optional<etproof::Budget>& budget, const std::vector<std::string>& methods,
               LedgerOption ledger, bool allow_edited_goldens, const etproof::Isolation& isolation,
               bool verbose, const std::string& emulate) {
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
  // --emulate ARCH/CPU: one emulated machine (etproof/emulation.h), found and asked what it is
  // before anything runs; the program runs in its worker, and the record carries that machine.
  const std::optional<nlohmann::json> machine = use_emulated_machine("parity", emulate, options.isolation);
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
                          etproof::RecordContext on = ctx;
                          if (machine) on.machine = *machine;
                          return etproof::records_from_parity(on, r);
                        });
  if (error) throw *error;
  if (json) {
    nlohmann::json doc = etproof::to_json(r);  // the bound's source always
    doc["machine"] = machine ? *machine : nlohmann::json(nullptr);
    std::cout << json_text(doc) << "\n";
  } else {
    if (machine)
      std::cout << "on " << emulate << ", emulated (" << machine->value("emulator", std::string()) << ", "
                << machine->value("cpu", std::string()) << "): evidence about the program, not a device\n";
    std::cout << (verbose ? with_bound_source(etproof::to_text(r), r.bound) : etproof::to_text(r));
  }
  if (!recorded) return kExitError;
  return r.passed ? 0 : 1;
}

// ---- attribute ---------------------------------------------------------------------------------
// The tapped twin of each BUNDLE replayed and read in graph order (etproof/attribute.h), printed in
// turn (JSON: one object, or a list for several); --plot draws them on one picture through the
// export half's matplotlib (python -m etproof plot-attribution). Exit 0 when every tap and output
// of every bundle agrees, 1 when something drifts (the table names where), 2 an error.

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
              const LedgerOption& ledger, const etproof::Isolation& given_isolation, const std::string& emulate) {
  etproof::Isolation isolation = given_isolation;
  const std::optional<nlohmann::json> machine = use_emulated_machine("bench", emulate, isolation);
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
    etproof::RecordContext on = ctx;
    if (machine) on.machine = *machine;
    return etproof::records_from_bench(on, reports);
  });
  // Under emulation the times are QEMU's: comparable between profiles of one emulator at most.
  const std::string emulated_note =
      machine ? "on " + emulate + ", emulated (" + machine->value("emulator", std::string()) + ", " +
                    machine->value("cpu", std::string()) + "): QEMU's times, not a device's\n"
              : std::string();
  if (json) {
    nlohmann::json doc = etproof::to_json(reports);
    doc["machine"] = machine ? *machine : nlohmann::json(nullptr);
    std::cout << json_text(doc) << "\n";
  } else if (markdown) {
    std::cout << (machine ? "_" + emulated_note.substr(0, emulated_note.size() - 1) + "_\n\n" : std::string())
              << etproof::to_markdown(reports);
  } else {
    std::cout << emulated_note << etproof::to_text(reports);
  }
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
               const std::vector<std::string>& required, bool require_all,
               const std::vector<std::string>& emulate) {
  std::vector<fs::path> dirs(dir_args.begin(), dir_args.end());
  if (dirs.empty()) dirs.push_back(default_bundles_dir());
  for (const std::string& r : required) etproof::check_requirement(r);  // a usage error: before any run
  check_writable(html, "the HTML page", "--html");
  check_writable(junit, "the JUnit report", "--junit");
  // --emulate: each machine parsed, its emulator found and its worker asked what it is before
  // anything runs (a missing emulator or an unknown CPU is an error of the command, exit 2).
  std::vector<etproof::Emulation> emulations;
  std::vector<nlohmann::json> machines;
  for (const std::string& spec : emulate)
    for (const etproof::Emulation& e : etproof::parse_emulation(spec)) {
      if (std::any_of(emulations.begin(), emulations.end(),
                      [&](const etproof::Emulation& x) { return x.label() == e.label(); }))
        continue;
      const nlohmann::json guest = etproof::probe_emulated_worker(e);
      machines.push_back(etproof::emulated_machine(e, etproof::find_emulator(e.arch), guest, etproof::machine_info()));
      emulations.push_back(e);
    }
  etproof::Matrix m = etproof::build_matrix(dirs, caller, jobs, budget, methods, isolation);
  etproof::add_emulated_columns(m, dirs, emulations, machines, caller, jobs, budget, methods, isolation);
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

}  // namespace etproof_cli
