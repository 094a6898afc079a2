// etproof CLI — what several subcommands share (cpp/cli/common.h).
#include "common.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "etproof/runtime/emulation.h"
#include "etproof/runtime/registry.h"

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

void write_junit(const std::string& file, const std::string& xml) {
  std::ofstream out(file);
  out << xml;
  if (!out) throw Error(ErrorKind::kIo, "cannot write " + file, "pass a writable --junit FILE");
}

// ---- evidence ledger (etproof/ledger.h) --------------------------------------------------------
void add_ledger_options(CLI::App* sub, LedgerOption& ledger) {
  auto* l = sub->add_option("--ledger", ledger.file,
                            "append this run's evidence records here (default: $ETPROOF_LEDGER, "
                            "else $XDG_STATE_HOME/etproof/ledger.jsonl, ~/.local/state/…)");
  sub->add_flag("--no-ledger", ledger.off, "record nothing")->excludes(l);
}

void add_records_nothing_flag(CLI::App* sub) {
  sub->add_flag("--no-ledger")->description("accepted and changes nothing: " + sub->get_name() +
                                            " records no evidence (parity, matrix, bench and backends --probe do)");
}

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
    // One short line (every recording run prints it): the path, and where it came from only when
    // the path does not say so itself (ETPROOF_LEDGER).
    std::cerr << "ledger: recorded " << records.size() << (records.size() == 1 ? " record" : " records")
              << " in " << path.string() << (why == "ETPROOF_LEDGER" ? " (ETPROOF_LEDGER)" : "")
              << "; --no-ledger skips it\n";
    return true;
  } catch (const Error& e) {
    std::cerr << "ledger: nothing recorded in " << path.string() << ": [" << etproof::to_string(e.kind())
              << "] " << e.cause() << "\nremedy: " << e.remedy() << "\n";
    return o.file.empty();
  }
}

// ---- shared options ----------------------------------------------------------------------------
void add_method_option(CLI::App* sub, std::vector<std::string>& methods, const std::string& what) {
  // One NAME per --method: what follows is the BUNDLE or DIR, never another name.
  sub->add_option("--method", methods,
                  "NAME of a method to " + what + "; repeatable (default: every method the manifest lists)")
      ->allow_extra_args(false);
}

void add_bound_options(CLI::App* sub, etproof::BoundOverride& caller, const std::string& scope) {
  sub->add_option("--atol", caller.atol, "caller bound" + scope + ": absolute tolerance");
  sub->add_option("--rtol", caller.rtol, "caller bound" + scope + ": relative tolerance");
  sub->add_option("--min-cosine", caller.min_cosine, "caller bound" + scope + ": minimum cosine similarity");
  sub->add_option("--min-sqnr", caller.min_sqnr_db, "caller bound" + scope + ": minimum SQNR per output, in dB");
  std::string names;
  for (const etproof::RuleThreshold& t : etproof::rule_thresholds())
    names += (names.empty() ? "" : "; ") + std::string(t.name) + " " + std::string(t.relation) + " F: " +
             std::string(t.meaning);
  sub->add_option_function<std::vector<std::string>>(
         "--threshold",
         [&caller](const std::vector<std::string>& args) {
           for (const std::string& a : args) etproof::parse_threshold_argument(a, caller);
         },
         "caller bound" + scope + ": a gate rule's own threshold, NAME=VALUE, repeatable (" + names + ")")
      ->allow_extra_args(false);
}

void add_budget_option(CLI::App* sub, std::vector<std::string>& budget_args) {
  sub->add_option("--budget", budget_args,
                  "what the recipe may cost (its emulation against the float32 golden): "
                  "KEY=VALUE, repeatable; min_sqnr_db, min_cosine, top1_agreement (fraction of "
                  "classifier rows keeping the golden's top-1); each replaces the bundle's own");
}

std::optional<etproof::Budget> parse_budget(const std::vector<std::string>& budget_args) {
  std::optional<etproof::Budget> budget;
  for (const std::string& kv : budget_args) etproof::parse_budget_argument(kv, budget ? *budget : budget.emplace());
  return budget;
}

void add_repeat_options(CLI::App* sub, etproof::Repetition& r) {
  sub->add_option("--repeat", r.repeat,
                  "run each case N times in all on one loaded program (default " + std::to_string(r.repeat) +
                      "): the first run is judged, every later one must give the same bytes, else the case "
                      "is nondeterministic (fails the run)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--fresh-loads", r.fresh_loads,
                  "also run each case once on each of K programs loaded afresh, compared the same way "
                  "(default " + std::to_string(r.fresh_loads) + ")")
      ->check(CLI::NonNegativeNumber);
}

void add_worker_limits(CLI::App* sub, WorkerLimits& limits) {
  sub->add_option("--worker-timeout", limits.isolation.time_limit_s,
                  "seconds each load and each method call may take in the worker process before it is "
                  "killed and the case is crashed (default 600; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--worker-memory", limits.memory_mib,
                  "the worker process's address-space limit in MiB (default: 3/4 of this machine's "
                  "memory; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
}

etproof::Isolation WorkerLimits::resolve(bool enabled) const {
  etproof::Isolation out = isolation;
  if (memory_mib >= 0) out.memory_limit_bytes = uint64_t(memory_mib * double(1 << 20));
  out.enabled = enabled;
  return out;
}

// Columns replayed at once (default: the core count); the output does not depend on it.
size_t default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

void add_jobs_option(CLI::App* sub, size_t& jobs) {
  sub->add_option("--jobs,-j", jobs, "bundles replayed at once (default: the core count)")
      ->check(CLI::PositiveNumber);
}

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

}  // namespace etproof_cli
