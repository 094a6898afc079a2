// etproof/evidence/ledger.h — the evidence ledger (docs/design.md §7): every `backends`, `matrix` and `parity`
// run appends records to an append-only JSON-lines file, one record per line.
//
// A record (schema 1; absent means unknown, never a default):
//   id              first 16 hex of SHA-256 over the record's canonical JSON without `id`
//                   (nlohmann dump(): keys sorted, no spaces; a byte that is not UTF-8, from a
//                   file name, written as U+FFFD, as on the line): concatenated ledgers de-duplicate
//   schema          1
//   time_utc        "YYYY-MM-DDTHH:MM:SSZ", when the run recorded it
//   machine         {os, kernel, cpu, cores, arch, features?, name?}; features: the ISA
//                   features that select kernels, sorted (machine_info); absent in records
//                   written before them
//   toolchain       this binary's {etproof, executorch, executorch_build, compiler}
//   etproof_commit  the source commit ("…+dirty" when tracked files differ from it), and
//   etproof_commit_source  "git" (asked at run time in the source tree), "build" (configure
//                   time: may be older than the binary), or "unknown"
//   command         the command line; kind: "backends" | "matrix" | "parity" | "bench"
//   half            "export" | "runtime"
//   backend         export key; backend_ids: delegate ids (program's or table's)
//   model, recipe, precision, bundle, bundle_sha256, bundle_toolchain, bundle_created_utc
//                   where a bundle was involved (bundle facts from its manifest)
//   status          the replay vocabulary (etproof/status.h, written with to_string(Status):
//                   agreed, agreed-undelegated, drifted, export-refused, export-failed,
//                   not-linked, unavailable, load-failed, run-failed, bundle-invalid, no-bound,
//                   xfail, xpass), plus kExported / kExportedUndelegated (a bundle exists: it
//                   lowered) and, for `backends`, what each half answered (export: the export
//                   half's available/refused/removed-upstream; runtime: the probe's outcome, or
//                   the registry's to_string(RuntimeStatus) — available, not-linked,
//                   unavailable, linked-not-registered, no-runtime, removed-upstream — when
//                   nothing was run)
//   reason          where the status is not agreed/exported
//   numbers         where measured: {cases, case_ids, against (what the numbers were measured
//                   against: "golden", "float64" truth or an emulation's name; references.h;
//                   absent in older ledgers), max_abs_error (worst), cosine (worst),
//                   sqnr_db (worst; "inf" when identical), bound {atol, rtol, min_cosine,
//                   min_sqnr_db ("-inf": no SQNR rule; older ledgers have
//                   null there), caller_supplied}}. Non-finite numbers are the strings "inf",
//                   "-inf", "nan", as in every JSON etproof writes (`parity --json` included).
//   detail          free text the command printed for it (e.g. the probe's line)
//   performance     `bench` records only (status "measured"): records_from_bench below
// Matrix runs record one runtime record per (column, status) — two agreed cases and four xfail
// cases of one column are two records — and one export record ("exported") per bundle found.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof {

struct Matrix;        // etproof/matrix.h
struct ParityReport;  // etproof/replay.h
struct RuntimeHalf;   // etproof/backends_report.h
struct BenchReport;   // etproof/bench.h

inline constexpr int kLedgerSchema = 1;

// The export half's record statuses that are not replay statuses (etproof/status.h): a bundle
// exists, so it lowered — with a delegate call, or (a delegate backend's program) without one.
inline constexpr const char* kExported = "exported";
inline constexpr const char* kExportedUndelegated = "exported-undelegated";
// A performance record's status (`etproof bench`): the speed was measured. Not a replay status.
inline constexpr const char* kMeasured = "measured";

// What every record of one run shares.
struct RecordContext {
  std::string time_utc;
  std::string command;  // the command line as typed
  std::string kind;     // "backends" | "matrix" | "parity"
  nlohmann::json machine;
  nlohmann::json toolchain;
  std::string commit;
  std::string commit_source;  // "git" | "build" | "unknown"
};

// This machine: {os (/etc/os-release PRETTY_NAME, else uname sysname), kernel (uname release),
// cpu (/proc/cpuinfo model name, else uname machine), cores (online CPUs), arch (uname machine),
// features (the /proc/cpuinfo flags or Features among those that select ExecuTorch's and its
// delegates' kernels: avx2 … avx512_bf16, avx512_fp16, amx_*; asimddp, i8mm, sve, sme …; Linux),
// name ($ETPROOF_MACHINE_NAME, only when set: a CI runner's kind, or one of two configurations of
// one host — it makes them two machines)}.
nlohmann::json machine_info();
// This binary: {etproof, executorch, executorch_build, compiler}.
nlohmann::json toolchain_info();
// The source commit: `git -C <source dir> rev-parse` at run time when the source tree this binary
// was built from (ETPROOF_SOURCE_DIR in the environment, else the configure-time path) is a git
// checkout; "+dirty" when tracked files differ, not counting `exclude` (the ledger being written
// and the coverage page, so recording evidence into the tree does not dirty it). Otherwise the
// configure-time commit with source "build", or "unknown".
struct CommitInfo {
  std::string commit;
  std::string source;
};
CommitInfo etproof_commit(const std::vector<std::filesystem::path>& exclude = {});

// The context for a run now: time, machine, toolchain, commit (excluding `ledger` from dirt).
RecordContext current_context(const std::string& kind, const std::string& command,
                              const std::filesystem::path& ledger);

// Records of one run, without ids (finalize() adds them), built from the typed reports alone:
// a report carries its bundle's facts (the manifest's name, SHA-256, creation time, toolchain,
// model, recipe, precision), so no manifest is read again and no report's JSON is parsed. Statuses
// are written with to_string(Status) (etproof/status.h); the few words that are not replay
// statuses are kExported / kExportedUndelegated below and, for `backends`, the registry's
// (to_string(RuntimeStatus)) and the export half's own.
//
// `etproof backends`: one export record per entry of `export_half` (the export half's answer,
// `python -m etproof probe --json`'s "export" list: [{backend, status, reason?, delegates?}]; null
// when it did not answer: no export records), then one runtime record per export key of
// `runtime`: the probe's outcome where it replayed a bundle (agreed/drifted with the bundle's
// facts, its detail line and numbers {cases, max_abs_error, sqnr_db}; any other outcome with the
// probe's line as its reason), else the registry's answer with its reason.
std::vector<nlohmann::json> records_from_backends(const RecordContext& ctx,
                                                  const RuntimeHalf& runtime,
                                                  const nlohmann::json& export_half);
// `etproof matrix`: per column, one export record (kExported, or kExportedUndelegated when a
// delegate backend's program has no delegate call) and one runtime record per status among its
// cells (numbers where the cases ran: agreed, agreed-undelegated, drifted, xfail, xpass,
// no-bound; otherwise the case ids); then one record per not-run line that a column's cells have
// not already said (export-refused/export-failed and export xfail lines on the export half).
std::vector<nlohmann::json> records_from_matrix(const RecordContext& ctx, const Matrix& matrix);
// `etproof parity`: one runtime record. A report with an Error — the bundle could not be run or
// a case could not be measured (first_error()), else no bound is known (bound_error) — gets its
// status from the Error's kind alone (status_of: not-linked, unavailable, load-failed,
// run-failed, no-bound, bundle-invalid) and the reason "[kind] cause". Otherwise agreed,
// agreed-undelegated (no delegate in a delegate backend's program), drifted (the failing rules
// as the reason) or run-failed (no golden case), with the numbers. Xfail records are not applied
// (`parity` applies none). Empty when no manifest was read: nothing a claim could rest on.
std::vector<nlohmann::json> records_from_parity(const RecordContext& ctx,
                                                const ParityReport& report);

// `etproof bench`: one performance record per method measured (kind "bench", half "runtime",
// status kMeasured, the bundle's facts, backend_ids, and `performance`: {method, case, runs,
// median_ms, p90_ms, p99_ms, min_ms, mean_ms, throughput_per_s, first_load_ms, warm_load_ms,
// peak_rss_mb, threads_requested, threads_used}; milliseconds, MiB). A bundle or method that
// could not be measured records nothing: speed is no claim, and parity records the refusal.
// The coverage page shows these in its Speed section, never among the claims.
std::vector<nlohmann::json> records_from_bench(const RecordContext& ctx,
                                               const std::vector<BenchReport>& reports);

// The id a record has (or should have): first 16 hex of SHA-256 of dump() without "id".
std::string record_id(const nlohmann::json& record);
// The record with its id set.
nlohmann::json finalize(nlohmann::json record);

// Appends records (ids added where missing), one line each, with ONE write(2) on a file opened
// O_WRONLY|O_APPEND|O_CREAT (parents created), under an exclusive flock(2): processes appending
// to one ledger at once leave every line whole (Ledger.TwoProcessesAppendingAtOnceKeepEveryLine).
// Never rewrites: a file whose last byte is not a newline (an interrupted write) gets a newline
// first, so the broken line stays broken alone.
// Throws Error{kIo} naming the file.
void append_records(const std::filesystem::path& ledger, const std::vector<nlohmann::json>& records);

// Reads a ledger. Blank lines are skipped. A line that is not a JSON object (not JSON at all, a
// number out of double's range, nested more than 64 levels deep), lacks a field the renderer needs
// (id, time_utc, half, backend, status, machine) or whose id does not match its content throws
// Error{kLedgerInvalid} "FILE:LINE: …" with the remedy. A missing file throws Error{kIo}.
std::vector<nlohmann::json> read_ledger(const std::filesystem::path& file);

// Concatenation, de-duplicated by id (first occurrence kept), in (time_utc, id) order.
std::vector<nlohmann::json> merge_records(const std::vector<std::vector<nlohmann::json>>& ledgers);

// Where runs record when no --ledger is given: $ETPROOF_LEDGER if set and non-empty, else
// $XDG_STATE_HOME/etproof/ledger.jsonl, else $HOME/.local/state/etproof/ledger.jsonl. nullopt
// (with `why`) when none of those variables is set.
std::optional<std::filesystem::path> default_ledger_path(std::string* why = nullptr);

// The command line as a record's `command`: the program's file name, then each argument, quoted
// for a POSIX shell where it holds a blank, a quote or a `$`.
[[nodiscard]] std::string command_line_text(int argc, char** argv);

}  // namespace etproof
