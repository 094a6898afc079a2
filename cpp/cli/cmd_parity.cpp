// etproof parity — the gate on one bundle: every golden case replayed and judged against its bound
// (exit 0 pass, 1 drift, 2 an error).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/core/manifest.h"
#include "etproof/render/parity.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct ParityOptions {
  std::string bundle;
  FormatOption format;
  bool verbose = false;
  std::vector<std::string> methods;
  etproof::BoundOverride caller;
  std::vector<std::string> budget;
  LedgerOption ledger;
  bool allow_edited_goldens = false;
  bool isolate = false;
  WorkerLimits workers;
  etproof::Repetition repetition;  // --repeat, --fresh-loads: each case once by default
  std::string emulate;
  mutable bool json_printed = false;  // --json: the JSON document went out (an error's included)
};

// A --method the bundle does not list is a usage error, refused up front (exit 2, no evidence)
// from the manifest alone; a manifest that cannot be read is left to the replay to report.
void check_methods(const std::string& path, const std::vector<std::string>& methods) {
  if (methods.empty()) return;
  std::optional<etproof::Manifest> m;
  try {
    m = etproof::open_bundle(path, etproof::OpenOptions{.verify_artifact = false}).manifest;
  } catch (const Error&) {
  }
  if (m)
    if (auto e = etproof::unknown_methods_error(*m, methods)) throw *e;
}

// {"kind", "cause", "remedy"} of an error, as parity --json prints it under "error".
nlohmann::json error_json(const Error& e) {
  return {{"kind", std::string(etproof::to_string(e.kind()))}, {"cause", e.cause()}, {"remedy", e.remedy()}};
}

// The error that stopped the replay, naming the bundle and the case it stopped at where its cause
// does not; with --json, the report so far is printed as JSON first (its cases, each case's
// status, and "error": kind, cause, remedy), so a script reading stdout always gets JSON.
Error located(const ParityOptions& o, const etproof::ParityReport& r, const Error& e) {
  std::string where, case_id;
  for (const etproof::CaseReport& c : r.cases)
    if (c.error && &*c.error == &e) case_id = c.case_id;
  if (!case_id.empty() && e.cause().find(case_id) == std::string::npos) where = "case " + case_id;
  const std::string bundle = r.bundle.empty() ? o.bundle : r.bundle;
  std::string prefix;
  if (e.cause().find(bundle) == std::string::npos) prefix = "bundle " + bundle;
  if (!where.empty()) prefix += (prefix.empty() ? "" : ", ") + where;
  const Error out(e.kind(), prefix.empty() ? e.cause() : prefix + ": " + e.cause(), e.remedy(), e.et_error());
  if (o.format.format == "json") {
    // Without a manifest there is no report to show (no bound, no cases): the bundle and the error.
    nlohmann::json doc = r.manifest_read ? etproof::to_json(r) : nlohmann::json{{"bundle", o.bundle}};
    doc["passed"] = false;
    doc["error"] = error_json(out);
    if (!case_id.empty()) doc["error"]["case"] = case_id;
    std::cout << doc.dump(2) << "\n";
    o.json_printed = true;
  }
  return out;
}

// run_parity, and with --json an error refused before any replay (a usage error, an emulator
// that cannot start) also printed as a JSON document: {"bundle", "passed": false, "error"}.
int run_parity_printing_json(const ParityOptions& o);

int run_parity(const ParityOptions& o) {
  etproof::check_bound_override(o.caller);
  etproof::ReplayOptions options;
  options.budget = parse_budget(o.budget);
  options.isolation = o.workers.resolve(o.isolate);
  check_methods(o.bundle, o.methods);
  options.caller = o.caller;
  options.methods = o.methods;
  options.allow_edited_goldens = o.allow_edited_goldens;
  options.repetition = o.repetition;
  // --emulate ARCH/CPU: one emulated machine (etproof/emulation.h), found and asked what it is
  // before anything runs; the program runs in its worker, and the record carries that machine.
  const std::optional<nlohmann::json> machine = use_emulated_machine("parity", o.emulate, options.isolation);
  LedgerOption ledger = o.ledger;
  if (o.allow_edited_goldens && !ledger.off) {
    // Numbers against goldens that may not be the export's are no evidence about the bundle.
    std::cerr << "ledger: nothing recorded (--allow-edited-goldens: a run against edited goldens is "
                 "not evidence)\n";
    ledger.off = true;
  }
  const etproof::ParityReport r = etproof::replay(o.bundle, options);
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
  if (error) throw located(o, r, *error);
  const etproof::ParityPrintout printout{r, machine, o.emulate, o.verbose};
  std::cout << etproof::render_as(etproof::parity_renderers(), o.format.format, printout);
  if (!recorded) return kExitError;
  return r.passed ? 0 : 1;
}

int run_parity_printing_json(const ParityOptions& o) {
  try {
    return run_parity(o);
  } catch (const Error& e) {
    if (o.format.format == "json" && !o.json_printed)
      std::cout << nlohmann::json{{"bundle", o.bundle}, {"passed", false}, {"error", error_json(e)}}.dump(2)
                << "\n";
    throw;
  }
}

}  // namespace

Subcommand register_parity(CLI::App& app) {
  auto o = std::make_shared<ParityOptions>();
  auto* sub = app.add_subcommand("parity", "the gate on one bundle (exit 0 pass, 1 drift)");
  sub->add_option("BUNDLE", o->bundle, "bundle directory or manifest")->required();
  add_format_option(sub, o->format, etproof::parity_renderers());
  sub->add_flag("--verbose,-v", o->verbose,
                "also print the bound's source: the measurements and citations its numbers come from");
  add_method_option(sub, o->methods, "replay the golden cases of");
  add_bound_options(sub, o->caller, "");
  add_budget_option(sub, o->budget);
  add_ledger_options(sub, o->ledger);
  sub->add_flag("--allow-edited-goldens", o->allow_edited_goldens,
                "replay cases whose golden files no longer match the manifest's SHA-256 (their numbers "
                "are shown, the case is drifted whatever they are; nothing is recorded)");
  sub->add_flag("--isolate", o->isolate,
                "run the program in a worker process: a crash inside ExecuTorch becomes a crashed "
                "case instead of ending etproof");
  add_worker_limits(sub, o->workers);
  add_repeat_options(sub, o->repetition);
  sub->add_option("--emulate", o->emulate,
                  "run the program on one emulated CPU instead (ARCH/CPU, e.g. arm64/neoverse-n1: the worker "
                  "./setup.sh cross-built for aarch64, under qemu-aarch64); the report and the record say so");
  return {sub, [o] { return run_parity_printing_json(*o); }};
}

}  // namespace etproof_cli
