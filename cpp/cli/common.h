// cpp/cli/common.h — what several etproof subcommands share (cpp/cli/common.cpp): the exit code of
// an error, the command line recorded with each record, printing an Error, the default
// bundle directory, the evidence ledger, and the options several subcommands take (--ledger,
// --method, the caller bound, --budget, the worker limits, --jobs) with what they become after
// parsing.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/gate/gate.h"
#include "etproof/gate/references.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/isolation.h"

namespace etproof_cli {

namespace fs = std::filesystem;
using etproof::Error;
using etproof::ErrorKind;

inline constexpr int kExitError = 2;
extern std::string g_command_line;  // the command as typed, recorded with each record

void print_error(const Error& e);

// <directory of this executable>/demo/bundles.
fs::path default_bundles_dir();

// --junit FILE (matrix, measure-tolerances): `xml` written there; Error{kIo} when it cannot be.
void write_junit(const std::string& file, const std::string& xml);

// ---- evidence (backends, matrix, parity, bench): where this run's records are appended ----------
struct LedgerOption {
  std::string file;  // --ledger FILE
  bool off = false;  // --no-ledger
};
void add_ledger_options(CLI::App* sub, LedgerOption& ledger);
// --no-ledger on a command that runs a bundle but records no evidence (attribute, run, classify,
// measure-tolerances): accepted, so that a script can pass it to every command that runs one; its
// help says the command records nothing.
void add_records_nothing_flag(CLI::App* sub);

// Appends what `build` makes of this run to the ledger and says where on stderr. Returns false
// when an explicit --ledger could not be written.
bool record_evidence(const LedgerOption& o, const std::string& kind,
                     const std::function<std::vector<nlohmann::json>(const etproof::RecordContext&)>& build);

// ---- the methods run or replayed (run, parity, matrix): default every method the manifest lists -
void add_method_option(CLI::App* sub, std::vector<std::string>& methods, const std::string& what);

// ---- a caller bound (parity, attribute, matrix, measure-tolerances) ----------------------------
// Each flag replaces that field of the derived bound; `scope` follows "caller bound" in the help.
void add_bound_options(CLI::App* sub, etproof::BoundOverride& caller, const std::string& scope);

// ---- the caller's accuracy budget (parity, matrix): what the recipe may cost -------------------
void add_budget_option(CLI::App* sub, std::vector<std::string>& budget_args);
std::optional<etproof::Budget> parse_budget(const std::vector<std::string>& budget_args);

// ---- worker processes (etproof/isolation.h): matrix and bench unless --in-process, parity with
// --isolate ------------------------------------------------------------------------------------
struct WorkerLimits {
  etproof::Isolation isolation;
  double memory_mib = -1;  // --worker-memory; negative: not given
  // The isolation the command runs with: the limits given, enabled or not.
  etproof::Isolation resolve(bool enabled) const;
};
void add_worker_limits(CLI::App* sub, WorkerLimits& limits);

// ---- columns or bundles replayed at once (matrix, measure-tolerances) ---------------------------
void add_jobs_option(CLI::App* sub, size_t& jobs);

// --repeat N, --fresh-loads K (parity, matrix; etproof::Repetition): `r` holds the defaults, shown
// in the help.
void add_repeat_options(CLI::App* sub, etproof::Repetition& r);
size_t default_jobs();

// --emulate ARCH/CPU for a command that runs on one machine (parity, bench): that machine found
// and asked what it is before anything runs, `isolation` pointed at its worker; its record, or
// nullopt without --emulate. A set is a usage error.
std::optional<nlohmann::json> use_emulated_machine(const std::string& command, const std::string& emulate,
                                                   etproof::Isolation& isolation);

}  // namespace etproof_cli
