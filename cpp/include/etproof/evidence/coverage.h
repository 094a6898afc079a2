// etproof/evidence/coverage.h — the backend-coverage page (docs/design.md §7), rendered from ledger records
// alone (etproof/ledger.h): a pure function of the records, the backend table embedded in this
// binary and this binary's toolchain versions. No wall clock: "stale by age" is measured from
// `as_of`, which defaults to the newest record's date.
//
// Per backend key of the table (every one, so a backend never run says "never run"), per machine
// with evidence: the claim and each half's newest evidence with its status, date, machine and
// numbers. A record's status is read back as a Status (etproof/status.h, status_from_string) and
// the claims follow its values and predicates (fails_run: "fails at run time"); the words that
// are not replay statuses (exported, exported-undelegated, the registry's available /
// removed-upstream / linked-not-registered / no-runtime, the export half's refused) are listed
// in coverage_claims.cpp.
// Claims:
//   works              a runtime run through the backend agreed (matrix/parity column or the
//                      `backends` one-operation probe)
//   runs undelegated   it ran and agreed, but no delegate took the graph (portable kernels)
//   fails at run time  it ran and drifted, or failed to load/run, with nothing agreeing
//   agreed against an expected failure   it agreed where an xfail record expected a failure
//   known failure      only expected failures (xfail) ran
//   lowers             only the export half passed: nothing ran it (never "works")
//   refused / removed upstream / registry only / never run
// A claim whose newest evidence is older than max_age_days before as_of, or was recorded by a
// toolchain other than `toolchain` (etproof or executorch version, or a bundle exported with
// another executorch), is marked stale.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof {

struct CoverageOptions {
  std::vector<std::string> sources;  // ledger names shown in the header, as given
  std::optional<std::string> as_of;  // "YYYY-MM-DD" or a time_utc; default: the newest record
  int max_age_days = 90;
  nlohmann::json toolchain;          // the current binary's (toolchain_info())
  std::string regenerate;            // the command that regenerates the page (shown in it)
};

// The page, Markdown. Records as merge_records() returns them (order does not matter).
// Throws Error{kInvalidArgument} for an unparsable as_of.
std::string render_coverage(const std::vector<nlohmann::json>& records, const CoverageOptions& o);

// Days since 1970-01-01 of "YYYY-MM-DD…"; nullopt when it does not start with a valid date.
std::optional<int64_t> day_number(const std::string& date);

// A record's machine as a kind: the ledger's `machine` without its kernel build and core count
// (os, arch, cpu, features, name, and whatever else it records), so that hosts of one kind — VMs
// on other kernels — are one machine on the page.
nlohmann::json machine_kind(const nlohmann::json& machine);

// The short name a machine kind gets on the page: "m-" + 8 hex of SHA-256 of machine_kind's
// canonical JSON, after the machine's `name` where it has one (ETPROOF_MACHINE_NAME; characters
// other than letters, digits, '.', '_' and '-' become '_', at most 40): "github-macos-arm64
// m-1a2b3c4d".
std::string machine_label(const nlohmann::json& machine);

// A short line diff of two texts ("--- expected" / "+++ actual", the first differing lines with
// "-"/"+" and line numbers), at most max_lines lines. Empty when equal.
std::string line_diff(const std::string& expected, const std::string& actual,
                      size_t max_lines = 40);

// `etproof coverage`: what the command was asked (its flags) and what it gives.
struct CoverageRequest {
  std::vector<std::string> ledgers;  // --ledger FILE…; none: the user's default ledger
  std::string out;                   // --out FILE: write the page there (atomically)
  bool check = false;                // --check: compare with the page (out, else
                                     // docs/backend-coverage.md) instead of writing it
  int max_age_days = 90;
  std::string as_of;
};
struct CoverageOutcome {
  int exit_code = 0;    // 0: rendered / written / matches; 1: --check found a difference
  std::string page;     // the page, when neither --out nor --check was given (for stdout)
  std::string message;  // what it did, for stderr (the diff and remedy when --check failed)
};
// Reads and merges the ledgers, renders the page and prints, writes or checks it. Throws
// Error{kInvalidArgument} for --check without --ledger (a committed page is checked against its
// own ledger only) or when no ledger can be found, Error{kIo} for unreadable ledgers or pages,
// Error{kLedgerInvalid} for a corrupt ledger line (read_ledger), or a record field of a type the
// page cannot be rendered around (naming the ledgers: an exception of the JSON library never escapes).
[[nodiscard]] CoverageOutcome run_coverage(const CoverageRequest& request);

}  // namespace etproof
