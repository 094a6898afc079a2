// etproof/ledger.h — the evidence ledger (DESIGN.md §7): every `backends`, `matrix` and `parity`
// run appends records to an append-only JSON-lines file, one record per line.
//
// A record (schema 1; absent means unknown, never a default):
//   id              first 16 hex of SHA-256 over the record's canonical JSON without `id`
//                   (nlohmann dump(): keys sorted, no spaces): concatenated ledgers de-duplicate
//   schema          1
//   time_utc        "YYYY-MM-DDTHH:MM:SSZ", when the run recorded it
//   machine         {os, kernel, cpu, cores, arch}
//   toolchain       this binary's {etproof, executorch, executorch_build, compiler}
//   etproof_commit  the source commit ("…+dirty" when tracked files differ from it), and
//   etproof_commit_source  "git" (asked at run time in the source tree), "build" (configure
//                   time: may be older than the binary), or "unknown"
//   command         the command line; kind: "backends" | "matrix" | "parity"
//   half            "export" | "runtime"
//   backend         export key; backend_ids: delegate ids (program's or table's)
//   model, recipe, precision, bundle, bundle_sha256, bundle_toolchain, bundle_created_utc
//                   where a bundle was involved (bundle facts from its manifest)
//   status          the matrix vocabulary (agreed, agreed-undelegated, drifted, export-refused,
//                   export-failed, not-linked, unavailable, load-failed, run-failed,
//                   bundle-invalid, no-bound, xfail, xpass, removed-upstream), plus "exported"
//                   (a bundle exists: it lowered) and, for `backends`, what each half answered
//                   (export: available/refused/…; runtime: the probe's agreed/drifted/run-failed,
//                   or the registry's not-linked/unavailable/linked-not-registered/no-runtime/
//                   available when nothing was run)
//   reason          where the status is not agreed/exported
//   numbers         where measured: {cases, case_ids, max_abs_error (worst), cosine (worst),
//                   sqnr_db (worst; "inf" when identical), bound {atol, rtol, min_cosine,
//                   min_sqnr_db, caller_supplied}}
//   detail          free text the command printed for it (e.g. the probe's line)
// Matrix runs record one runtime record per (column, status) — two agreed cases and four xfail
// cases of one column are two records — and one export record ("exported") per bundle found.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof {

inline constexpr int kLedgerSchema = 1;

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
// cpu (/proc/cpuinfo model name, else uname machine), cores (online CPUs), arch (uname machine)}.
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

// Records of one run, without ids (finalize() adds them).
// backends_doc: `etproof backends --json`'s document (to_json(RuntimeHalf) + "export",
// "export_error"); probe bundles are looked up in its "probe_bundles" directory.
std::vector<nlohmann::json> records_from_backends(const RecordContext& ctx,
                                                  const nlohmann::json& backends_doc);
// matrix_doc: to_json(Matrix); dir: the bundle directory it was built over (bundle facts are read
// from the manifests there).
std::vector<nlohmann::json> records_from_matrix(const RecordContext& ctx,
                                                const nlohmann::json& matrix_doc,
                                                const std::filesystem::path& dir);
// parity_doc: to_json(ParityReport); bundle: the bundle directory (or its manifest).
std::vector<nlohmann::json> records_from_parity(const RecordContext& ctx,
                                                const nlohmann::json& parity_doc,
                                                const std::filesystem::path& bundle);
// A parity run that ended in an Error before a report existed: one runtime record whose status
// comes from the error (not-linked/unavailable for a missing delegate, load-failed, run-failed,
// bundle-invalid) and whose reason is its cause. Its backend is "" when no manifest was readable
// (the CLI then records nothing).
nlohmann::json record_from_parity_error(const RecordContext& ctx,
                                        const std::filesystem::path& bundle,
                                        const std::string& error_kind, const std::string& cause);

// The id a record has (or should have): first 16 hex of SHA-256 of dump() without "id".
std::string record_id(const nlohmann::json& record);
// The record with its id set.
nlohmann::json finalize(nlohmann::json record);

// Appends records (ids added where missing), one line each, with ONE write(2) on a file opened
// O_WRONLY|O_APPEND|O_CREAT (parents created). Never rewrites: a file whose last byte is not a
// newline (an interrupted write) gets a newline first, so the broken line stays broken alone.
// Throws Error{kIo} naming the file.
void append_records(const std::filesystem::path& ledger, const std::vector<nlohmann::json>& records);

// Reads a ledger. Blank lines are skipped. A line that is not a JSON object, lacks a field the
// renderer needs (id, time_utc, half, backend, status, machine) or whose id does not match its
// content throws Error{kLedgerInvalid} "FILE:LINE: …" with the remedy. A missing file throws
// Error{kIo}.
std::vector<nlohmann::json> read_ledger(const std::filesystem::path& file);

// Concatenation, de-duplicated by id (first occurrence kept), in (time_utc, id) order.
std::vector<nlohmann::json> merge_records(const std::vector<std::vector<nlohmann::json>>& ledgers);

// Where runs record when no --ledger is given: $ETPROOF_LEDGER if set and non-empty, else
// $XDG_STATE_HOME/etproof/ledger.jsonl, else $HOME/.local/state/etproof/ledger.jsonl. nullopt
// (with `why`) when none of those variables is set.
std::optional<std::filesystem::path> default_ledger_path(std::string* why = nullptr);

}  // namespace etproof
