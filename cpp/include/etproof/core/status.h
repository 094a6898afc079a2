// etproof/core/status.h — the one status vocabulary: what can happen to a (bundle, golden case).
//
// Every place that says what became of a replay uses this enum and its spelling: the replay
// engine's case outcomes (etproof/replay.h), the matrix's cells and not-run lines, the backends
// probes, the evidence ledger's `status` field and the coverage page's claims (which are derived
// from it). docs/errors.md lists each status, what it means and whether it fails a run.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace etproof {

class Error;

enum class Status {
  kAgreed,             // ran on the named delegate (or is a portable column), within its bound
  kAgreedUndelegated,  // a delegate backend was requested, no delegate in the program, agreed
  kDrifted,            // ran, outside its bound: the backend is not faithful to its recipe (or an
                       // output's shape is not the golden's)
  kOverBudget,         // ran, faithful to its recipe (within its bound), but what the recipe costs
                       // (its emulation against the float32 golden) breaks the budget (the
                       // manifest's or --budget): the recipe's failure, not the backend's; the
                       // budget key and the measured cost are named. Fails a run
  kExportRefused,      // the export half refused (toolchain missing)
  kExportFailed,       // quantize / lower / serialize failed
  kNotLinked,          // this binary has no runtime for the delegate
  kUnavailable,        // registered but not available on this machine
  kLoadFailed,         // ExecuTorch refused to load (code kept)
  kRunFailed,          // ExecuTorch failed to run (code kept)
  kBundleInvalid,      // manifest invalid, artifact/manifest mismatch, goldens unreadable
  kNoBound,            // ran, but no bound is known for this recipe/precision; pass one (the
                       // measured numbers are still shown)
  kXfail,              // drifted (a cell) or export-failed (a not-run line) as a record in
                       // DIR/xfail.json expects; the reason and the measured numbers are shown
  kXpass,              // a record in DIR/xfail.json expected a failure and it passed: fails the
                       // run until the record is updated or removed
  kCrashed,            // the worker process running the program died: a signal (SIGSEGV, an
                       // abort), an out-of-memory kill or a time limit (etproof/isolation.h); the
                       // signal or limit is named, and the run went on
  kInconclusive,       // ran, but the case's references disagree beyond what their precisions
                       // explain, or the widened bound would admit more than the output spans
                       // (references.h: applied_bound): no verdict either way; both references
                       // and the gap are named (the measured numbers are still shown)
  kNotRunnableHere,    // the artifact was compiled for another target than this machine
                       // (Manifest::target, etproof/targets.h: an OpenVINO CPU blob of another
                       // ISA class or OpenVINO version); both sides are named. Like not-linked,
                       // it fails a run only where the column is required
  kNondeterministic,   // ran more than once (ReplayOptions::repeat, fresh_loads) and its outputs were
                       // not bit-identical across the runs (or a later run failed where the first
                       // ran): how many distinct outputs were seen, the largest difference and the
                       // first run's own verdict are named. Fails a run; no xfail record covers it
};

// Stable lower-case spelling: "agreed", "agreed-undelegated", "drifted", "over-budget", "export-refused",
// "export-failed", "not-linked", "unavailable", "load-failed", "run-failed", "bundle-invalid",
// "no-bound", "xfail", "xpass", "crashed", "inconclusive", "not-runnable-here", "nondeterministic".
std::string_view to_string(Status s);
// "3 agreed, 1 drifted": each status with its count, in the enum's order, comma-separated.
std::string count_text(const std::map<Status, size_t>& count);
// The inverse of to_string; nullopt for any other text.
std::optional<Status> status_from_string(std::string_view s);

// Whether a cell or not-run column with this status fails a run (matrix exit 1). Fails: drifted,
// over-budget, nondeterministic, xpass, and every column that was found but could not be judged —
// bundle-invalid, load-failed, run-failed, export-failed, no-bound, crashed, inconclusive (failures
// of the claim). Does not fail: agreed, agreed-undelegated, xfail, and the absent capabilities —
// not-linked, unavailable, export-refused (listed with their reasons).
bool fails_run(Status s);

// Whether the case ran and was gated against a bound: agreed, agreed-undelegated, drifted,
// over-budget, xfail, xpass. (no-bound and inconclusive ran but were not judged.)
bool is_judged(Status s);

// Whether the status says the claim held: agreed or agreed-undelegated.
bool is_agreement(Status s);

// The status an Error gives the (bundle, case) it stopped, by its kind alone (never its text):
//   backend-not-linked → not-linked; backend-unavailable → unavailable; load-failed and
//   kernel-missing → load-failed; run-failed and out-of-memory → run-failed (it could not be run
//   here); capability-unavailable → no-bound; crashed → crashed; every other kind
//   (io, manifest-invalid, artifact-mismatch, npy-invalid, dtype/shape mismatch, …) →
//   bundle-invalid (the bundle cannot be judged as it is).
Status status_of(const Error& e);

}  // namespace etproof
