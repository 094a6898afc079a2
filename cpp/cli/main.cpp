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

#include "etproof/replay/attribute.h"
#include "etproof/render/attribute.h"
#include "etproof/replay/backends_report.h"
#include "etproof/render/backends.h"
#include "etproof/replay/bench.h"
#include "etproof/runtime/bundle.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/runtime/export_half.h"
#include "etproof/gate/gate.h"
#include "etproof/demo/classify.h"
#include "etproof/demo/image.h"
#include "etproof/replay/inspect.h"
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

namespace fs = std::filesystem;
using etproof::Error;
using etproof::ErrorKind;

#include "commands.h"

using namespace etproof_cli;

namespace {

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
  std::vector<std::string> backends_emulate;
  backends->add_option("--emulate", backends_emulate,
                       "also say what each emulated machine runs (ARCH/CPU or arm64/phones; matrix --emulate): "
                       "its features and the delegates its cross-built worker registers")
      ->allow_extra_args(false);

  auto* exp = app.add_subcommand(
      "export", "export a model (runs the export half: python -m etproof export ARGS…)");
  exp->allow_extras();

  std::string bundle;
  auto* inspect = app.add_subcommand("inspect", "a bundle's manifest, delegates and delegation");
  inspect->add_option("BUNDLE", bundle, "bundle directory or manifest")->required();
  inspect->add_flag("--json", json, "JSON output");

  std::string gen_out, gen_class, gen_namespace;
  auto* gen = app.add_subcommand("gen", "write a typed C++ API for a bundle (a class per model; docs/api.md)");
  gen->add_option("BUNDLE", bundle, "bundle directory, manifest or .pte")->required();
  gen->add_option("--out", gen_out, "directory for the class's header and source, named after it in snake_case (EfficientnetLite0: efficientnet_lite0.h, .cpp; created)")->required();
  gen->add_option("--class", gen_class, "the class's name (default: the model's name in CamelCase)");
  auto* gen_ns = gen->add_option("--namespace", gen_namespace,
                                 "its namespace, e.g. myapp::models (default etproof_models)");
  bool gen_global = false;
  gen->add_flag("--no-namespace", gen_global, "declare the class in the global namespace")->excludes(gen_ns);

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
  std::string parity_emulate;
  parity->add_option("--emulate", parity_emulate,
                     "run the program on one emulated CPU instead (ARCH/CPU, e.g. arm64/neoverse-n1: the worker "
                     "./setup.sh cross-built for aarch64, under qemu-aarch64); the report and the record say so");

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
  std::vector<std::string> matrix_emulate;
  matrix->add_option("--emulate", matrix_emulate,
                     "also replay every column on an emulated CPU, as a column of its own (xnnpack/fp32 @ "
                     "arm64/neoverse-n1): ARCH/CPU with a QEMU CPU model and its feature switches "
                     "(arm64/cortex-a53, arm64/neoverse-n1, arm64/max,sme=off, arm64/max) or the set "
                     "arm64/phones (those four); repeatable. Runs the worker ./setup.sh cross-built for aarch64 "
                     "under qemu-aarch64; every report and record says the run was emulated")
      ->allow_extra_args(false);
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
  std::string bench_emulate;
  bench->add_option("--emulate", bench_emulate,
                    "run on one emulated CPU instead (ARCH/CPU, as matrix --emulate): QEMU's times, not a "
                    "device's, comparable between profiles of one emulator at most; the report and records say so");
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

  if (backends->parsed()) return cmd_backends(json, runtime_only, probe_dir, ledger, backends_emulate);
  if (coverage->parsed()) return cmd_coverage(cov);
  if (inspect->parsed()) return cmd_inspect(bundle, json);
  if (gen->parsed())
    return cmd_gen(bundle, gen_out, gen_class,
                   gen_global ? std::optional<std::string>("")
                   : gen_ns->count() ? std::optional<std::string>(gen_namespace) : std::nullopt);
  if (run->parsed()) return cmd_run(bundle, input_args, out_dir, methods);
  etproof::check_bound_override(caller);
  std::optional<etproof::Budget> budget;
  for (const std::string& kv : budget_args)
    etproof::parse_budget_argument(kv, budget ? *budget : budget.emplace());
  if (worker_memory_mib >= 0) isolation.memory_limit_bytes = uint64_t(worker_memory_mib * double(1 << 20));
  if (bench->parsed()) {
    isolation.enabled = !bench_in_process;
    return cmd_bench(bench_args, json, markdown, bench_options, ledger, isolation, bench_emulate);
  }
  if (attribute->parsed()) {
    isolation.enabled = attribute_isolate;
    attribute_args.json = attribute_args.json || json;
    return cmd_attribute(attribute_bundles, attribute_args, caller, isolation);
  }
  if (parity->parsed()) {
    isolation.enabled = isolate;
    return cmd_parity(bundle, json, caller, budget, methods, ledger, allow_edited_goldens, isolation,
                      parity_verbose, parity_emulate);
  }
  if (matrix->parsed()) {
    isolation.enabled = !in_process;
    std::optional<etproof::BenchOptions> bench_for_matrix;
    if (matrix_bench) bench_for_matrix = etproof::BenchOptions{.warmup = 3, .seconds = 1.0};
    return cmd_matrix(dirs, json, markdown, matrix_junit, matrix_html, caller, budget, jobs, methods, ledger, isolation,
                      bench_for_matrix, matrix_required, matrix_require_all, matrix_emulate);
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
