// etproof matrix — every golden case × every bundle column: rows are (model, case), columns
// (backend, recipe); --emulate adds a column per emulated machine, --bench their speed.
// Exit: Matrix::exit_code (0 passed; 1 drift, a broken column, no bound, nothing measured or a
// --require'd column that did not run), 2 an error.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/render/attribute.h"
#include "etproof/render/junit.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/attribute.h"
#include "etproof/replay/bench.h"
#include "etproof/replay/matrix.h"
#include "etproof/runtime/emulation.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct MatrixOptions {
  std::vector<std::string> dirs;
  std::string junit, html;
  size_t jobs = default_jobs();
  std::vector<std::string> methods;
  FormatOption format;
  etproof::BoundOverride caller;
  std::vector<std::string> budget;
  LedgerOption ledger;
  bool bench = false;
  bool in_process = false;
  WorkerLimits workers;
  std::vector<std::string> required;
  std::vector<std::string> emulate;
  bool require_all = false;
  // --repeat, --fresh-loads: each case twice by default, so that a program whose outputs change
  // from run to run is caught (nondeterministic) in every matrix.
  etproof::Repetition repetition{.repeat = 2, .fresh_loads = 0};
};

// What the run itself takes, once the options are checked.
struct MatrixRun {
  std::vector<fs::path> dirs;
  std::optional<etproof::Budget> budget;
  etproof::Isolation isolation;
  std::optional<etproof::BenchOptions> bench;
};

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

// --emulate: each machine parsed, its emulator found and its worker asked what it is before
// anything runs (a missing emulator or an unknown CPU is an error of the command, exit 2).
struct Emulated {
  std::vector<etproof::Emulation> emulations;
  std::vector<nlohmann::json> machines;
};

Emulated probe_emulations(const std::vector<std::string>& emulate) {
  Emulated out;
  for (const std::string& spec : emulate)
    for (const etproof::Emulation& e : etproof::parse_emulation(spec)) {
      if (std::any_of(out.emulations.begin(), out.emulations.end(),
                      [&](const etproof::Emulation& x) { return x.label() == e.label(); }))
        continue;
      const nlohmann::json guest = etproof::probe_emulated_worker(e);
      out.machines.push_back(
          etproof::emulated_machine(e, etproof::find_emulator(e.arch), guest, etproof::machine_info()));
      out.emulations.push_back(e);
    }
  return out;
}

// The run's records, and with --bench the columns' performance records too, as `etproof bench`
// writes them. False when an explicit --ledger could not be written.
bool record_matrix(const etproof::Matrix& m, const LedgerOption& ledger, bool bench) {
  const bool recorded = record_evidence(ledger, "matrix", [&](const etproof::RecordContext& ctx) {
    return etproof::records_from_matrix(ctx, m);
  });
  if (!bench) return recorded;
  std::vector<etproof::BenchReport> reports;
  for (const etproof::Column& c : m.columns)
    if (c.speed) reports.push_back(*c.speed);
  const bool bench_recorded = record_evidence(ledger, "bench", [&](const etproof::RecordContext& ctx) {
    return etproof::records_from_bench(ctx, reports);
  });
  return recorded && bench_recorded;
}

// --junit FILE and --html FILE, written beside the report printed. The HTML page (--html, or
// --format html) shows which layer drifted where a column's bundle has a tapped twin.
void write_reports(etproof::Matrix& m, const MatrixOptions& o, const MatrixRun& run) {
  if (!o.junit.empty()) write_junit(o.junit, etproof::to_junit(m));
  if (!o.html.empty() || o.format.format == "html") {
    // Which layer drifted, where a column's bundle has a tapped twin (etproof/attribute.h).
    etproof::AttributeOptions attribution;
    attribution.replay.caller = o.caller;
    attribution.replay.isolation = run.isolation;
    etproof::attach_attributions(m, attribution);
  }
  if (!o.html.empty()) etproof::write_html(m, o.html);
}

int run_matrix(const MatrixOptions& o) {
  etproof::check_bound_override(o.caller);
  MatrixRun run{.dirs = {o.dirs.begin(), o.dirs.end()}, .budget = parse_budget(o.budget),
                .isolation = o.workers.resolve(!o.in_process)};
  if (o.bench) run.bench = etproof::BenchOptions{.warmup = 3, .seconds = 1.0};
  if (run.dirs.empty()) run.dirs.push_back(default_bundles_dir());
  for (const std::string& r : o.required) etproof::check_requirement(r);  // a usage error: before any run
  check_writable(o.html, "the HTML page", "--html");
  check_writable(o.junit, "the JUnit report", "--junit");
  const Emulated emulated = probe_emulations(o.emulate);
  etproof::Matrix m =
      etproof::build_matrix(run.dirs, o.caller, o.jobs, run.budget, o.methods, run.isolation, o.repetition);
  etproof::add_emulated_columns(m, run.dirs, emulated.emulations, emulated.machines, o.caller, o.jobs, run.budget,
                                o.methods, run.isolation, o.repetition);
  m.required = o.required;
  m.require_all = o.require_all;
  if (run.bench) etproof::bench_columns(m, *run.bench, run.isolation);
  const bool recorded = record_matrix(m, o.ledger, run.bench.has_value());
  write_reports(m, o, run);
  std::cout << etproof::render_as(etproof::matrix_renderers(), o.format.format, m);
  return recorded ? m.exit_code() : kExitError;
}

void add_column_options(CLI::App* sub, MatrixOptions& o) {
  sub->add_option("--require", o.required,
                  "a COLUMN that must have run here, as the matrix names it: BACKEND/RECIPE (e.g. xnnpack/fp32; "
                  "every model's), BACKEND (every recipe of it) or MODEL:BACKEND/RECIPE; repeatable or "
                  "comma-separated. One that did not run (not-linked, unavailable, export-refused, …), or that "
                  "no column of the matrix has, fails the run (exit 1, named in the verdict)")
      ->allow_extra_args(false)
      ->delimiter(',');
  sub->add_option("--emulate", o.emulate,
                  "also replay every column on an emulated CPU, as a column of its own (xnnpack/fp32 @ "
                  "arm64/neoverse-n1): ARCH/CPU with a QEMU CPU model and its feature switches "
                  "(arm64/cortex-a53, arm64/neoverse-n1, arm64/max,sme=off, arm64/max) or the set "
                  "arm64/phones (those four); repeatable. Runs the worker ./setup.sh cross-built for aarch64 "
                  "under qemu-aarch64; every report and record says the run was emulated")
      ->allow_extra_args(false);
  sub->add_flag("--require-all", o.require_all,
                "every column must have run here: any column that did not fails the run (exit 1)");
}

}  // namespace

Subcommand register_matrix(CLI::App& app) {
  auto o = std::make_shared<MatrixOptions>();
  auto* sub = app.add_subcommand("matrix", "every golden case × every bundle column");
  sub->add_option("DIR", o->dirs,
                  "bundle directories (default: <etproof's dir>/demo/bundles); rows are "
                  "(model, case), columns (backend, recipe)");
  sub->add_option("--junit", o->junit, "also write a JUnit XML report to FILE");
  sub->add_option("--html", o->html,
                  "also write the matrix as one self-contained HTML page to FILE (atomically; "
                  "cells coloured by status, each opening to its numbers)");
  add_jobs_option(sub, o->jobs);
  add_method_option(sub, o->methods, "replay in every bundle that lists it (a bundle listing none is left out, "
                                     "named with the reason)");
  add_format_option(sub, o->format, etproof::matrix_renderers());
  add_bound_options(sub, o->caller, ", applied to every column");
  add_budget_option(sub, o->budget);
  add_ledger_options(sub, o->ledger);
  sub->add_flag("--bench", o->bench,
                "also benchmark every column that ran (etproof bench: latency and memory on its golden "
                "inputs, one column at a time) and show its speed-up against portable and XNNPACK fp32");
  sub->add_flag("--in-process", o->in_process,
                "run every program in this process instead of one worker process per column (faster "
                "to start; a crash inside ExecuTorch then ends the run)");
  add_worker_limits(sub, o->workers);
  add_repeat_options(sub, o->repetition);
  add_column_options(sub, *o);
  return {sub, [o] { return run_matrix(*o); }};
}

}  // namespace etproof_cli
