// etproof bench — load time, latency and memory of bundles on their golden inputs.
// One BUNDLE given and refused: its Error, as parity's (exit 2). Otherwise every bundle of every
// argument (a bundle, or a directory of bundles) is measured or listed with why not; exit 1 when
// one could not be measured for a reason that fails a run (fails_run), or nothing was measured.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/render/bench.h"
#include "etproof/replay/bench.h"
#include "etproof/core/status.h"
#include "etproof/replay/matrix.h"
#include "etproof/runtime/bundle.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct BenchCommandOptions {
  std::vector<std::string> bundles;
  etproof::BenchOptions bench;
  FormatOption format;
  LedgerOption ledger;
  std::string emulate;
  bool in_process = false;
  WorkerLimits workers;
};

// Each argument: a bundle (a directory holding a manifest, or a manifest), or a directory of bundles.
std::vector<fs::path> bundle_paths(const std::vector<std::string>& args) {
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
  return paths;
}

int run_bench(const BenchCommandOptions& o) {
  etproof::Isolation isolation = o.workers.resolve(!o.in_process);
  const std::optional<nlohmann::json> machine = use_emulated_machine("bench", o.emulate, isolation);
  std::vector<etproof::BenchReport> reports;
  for (const fs::path& p : bundle_paths(o.bundles)) reports.push_back(etproof::bench(p, o.bench, isolation));
  if (reports.size() == 1 && reports.front().refused && reports.front().error) throw *reports.front().error;
  // Performance records, one per method measured (ledger.h records_from_bench).
  const bool recorded = record_evidence(o.ledger, "bench", [&](const etproof::RecordContext& ctx) {
    etproof::RecordContext on = ctx;
    if (machine) on.machine = *machine;
    return etproof::records_from_bench(on, reports);
  });
  const etproof::BenchPrintout printout{reports, machine, o.emulate};
  std::cout << etproof::render_as(etproof::bench_renderers(), o.format.format, printout);
  bool any = false, failed = false;
  for (const etproof::BenchReport& r : reports) {
    any = any || r.ok();
    failed = failed || (r.refused && etproof::fails_run(*r.refused));
    for (const auto& m : r.methods) failed = failed || m.error.has_value();
  }
  if (!recorded) return kExitError;
  return any && !failed ? 0 : 1;
}

}  // namespace

Subcommand register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchCommandOptions>();
  etproof::BenchOptions& b = o->bench;
  auto* sub = app.add_subcommand("bench", "load time, latency and memory of bundles on their golden inputs");
  sub->add_option("BUNDLE", o->bundles, "bundle directories or manifests, or directories of bundles")->required();
  sub->add_option("--threads", b.threads,
                  "size of ExecuTorch's thread pool (XNNPACK, optimized kernels); default: ExecuTorch's");
  sub->add_option("--warmup", b.warmup, "untimed calls per method first (default 5)");
  auto* runs = sub->add_option("--runs", b.runs, "timed calls per method")->check(CLI::PositiveNumber);
  sub->add_option("--seconds", b.seconds, "time per method when --runs is not given (default 1; at least 10 calls)")
      ->check(CLI::PositiveNumber)
      ->excludes(runs);
  add_format_option(sub, o->format, etproof::bench_renderers());
  sub->add_option("--method", b.methods, "NAME of a method to time; repeatable (default: every method)")
      ->allow_extra_args(false);
  add_ledger_options(sub, o->ledger);
  sub->add_option("--emulate", o->emulate,
                  "run on one emulated CPU instead (ARCH/CPU, as matrix --emulate): QEMU's times, not a "
                  "device's, comparable between profiles of one emulator at most; the report and records say so");
  sub->add_flag("--in-process", o->in_process,
                "measure every bundle in this process instead of each in its own worker process (then "
                "a bundle's peak memory can hide in memory an earlier one freed, and a crash ends the run)");
  add_worker_limits(sub, o->workers);
  return {sub, [o] { return run_bench(*o); }};
}

}  // namespace etproof_cli
