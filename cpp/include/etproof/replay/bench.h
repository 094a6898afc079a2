// etproof/replay/bench.h — speed beside accuracy: how long a bundle takes to load and to
// run, and how much memory it needs, measured on its own golden inputs (the program and inputs
// the gate judged), in this process.
//
// Per bundle: the first load in the process (open_bundle with its SHA-256 check + LoadedModel::load:
// what a program pays once) and a warm load (the median of `warm_loads` further loads of the same,
// already verified bytes); per method, the latency of one call on the first golden case of that
// method (warmup calls first, not timed; then `runs` calls, or as many as fit in `seconds`): median,
// p90, p99, min and mean in milliseconds, and the throughput of one stream (calls per second,
// 1000 / mean); the peak resident memory the load and the calls added to the process (Linux:
// VmHWM after the calls minus VmRSS before the load, with the peak reset first through
// /proc/self/clear_refs; nullopt where that is not available).
//
// Threads: `threads` > 0 resizes ExecuTorch's shared thread pool (extension/threadpool, used by the
// XNNPACK delegate and the optimized kernels) before the load; the report records the pool's size
// as ExecuTorch reports it after the load (`threads_used`). The OpenVINO delegate schedules its own
// inference threads (OpenVINO's CPU plugin: by default one stream over the physical cores) and is
// not changed by it; the portable kernels run on the calling thread.
//
// `etproof bench` measures each bundle in its own worker process (the isolated bench() below;
// `--in-process` turns it off): its memory figure is then that bundle's alone (in one process a
// later bundle reuses memory an earlier one freed, and its peak shows almost nothing), and a crash
// is that bundle's `crashed`.
//
// Errors: a bundle that cannot be run here is refused exactly as replay() refuses it (replay.h
// prepare(): the same status and Error — not-linked, unavailable, bundle-invalid with
// artifact-mismatch, load-failed, …); a call that fails is that method's Error (run-failed, …).
// Nothing is written.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/runtime/isolation.h"
#include "etproof/core/status.h"

namespace etproof {

struct BenchOptions {
  size_t threads = 0;     // ExecuTorch's thread pool size; 0: as ExecuTorch sizes it (its default)
  size_t warmup = 5;      // untimed calls before the timed ones, per method
  size_t runs = 0;        // timed calls per method; 0: as many as fit in `seconds` (at least 10)
  double seconds = 1.0;   // the time budget per method when runs == 0
  size_t warm_loads = 3;  // loads timed after the first (the warm-load median)
  std::vector<std::string> methods;  // the methods timed; empty: every method the manifest lists
};

// Summary statistics of one sample of call times, in milliseconds. The quantiles are the sample's
// nearest-rank quantiles (the ceil(q·n)-th smallest).
struct Latency {
  size_t runs = 0;
  double median_ms = 0, p90_ms = 0, p99_ms = 0, min_ms = 0, mean_ms = 0;
  double throughput_per_s = 0;  // 1000 / mean_ms: calls per second of one stream
};
// The statistics of `samples_ms` (at least one). Throws Error{kInvalidArgument} when empty.
Latency latency_of(std::vector<double> samples_ms);

struct MethodBench {
  std::string method;
  std::string case_id;             // the golden case whose inputs were used (case_label)
  std::optional<Latency> latency;  // nullopt when the call failed (error set)
  std::optional<Error> error;
};

// A sequence case (a prompt, then decode steps: GoldenCase::sequence) timed as a language model's
// user times it: the bundle's first sequence case whose methods are selected, run whole from a
// program loaded afresh (the load untimed), `runs` times (BenchOptions::runs; 0: as many as fit
// in `seconds`, at least 3), after one untimed run. A step's tokens are the size of its first
// input's first dynamic dimension (manifest inputs[i].dynamic_dims: a prompt's length), 1 where
// the method's inputs have none.
struct SequenceBench {
  std::string case_id;               // the sequence case's id (its steps are CASE/stepK)
  size_t steps = 0;                  // step 0 the prefill, the rest decode steps
  size_t prefill_tokens = 0;         // step 0's tokens
  size_t decode_tokens = 0;          // the decode steps' tokens, together
  size_t runs = 0;
  double prefill_ms = 0;             // median over the runs of step 0's call, milliseconds
  double prefill_p90_ms = 0;         // its 90th percentile (Latency's rank), milliseconds
  double prefill_tokens_per_s = 0;   // prefill_tokens / prefill_ms, per second
  double decode_ms_per_token = 0;    // median over the runs of the decode steps' time / decode_tokens
  double decode_tokens_per_s = 0;    // 1000 / decode_ms_per_token (0 without decode steps)
  double decode_p90_ms_per_token = 0;  // the 90th percentile of the decode steps' time / decode_tokens
  std::optional<Error> error;        // a step that failed: nothing above but case_id and steps
};

struct BenchReport {
  std::string path;  // as given
  std::string bundle, model, backend, recipe, precision;
  std::string bundle_sha256, bundle_created_utc;         // the manifest's, for the ledger
  std::map<std::string, std::string> bundle_toolchain;  // the export half's versions
  std::vector<std::string> delegates;  // from the program
  // Set when the bundle could not be run here: replay's status and Error for it.
  std::optional<Status> refused;
  std::optional<Error> error;
  double first_load_ms = 0;  // open_bundle (SHA-256 included) + LoadedModel::load, the first time
  std::optional<double> warm_load_ms;  // median of BenchOptions::warm_loads further loads
  size_t threads_requested = 0;        // BenchOptions::threads (0: ExecuTorch's default)
  size_t threads_used = 0;             // ExecuTorch's thread pool size after the load
  std::optional<double> peak_rss_mb;   // the resident memory the load and the calls added (MiB)
  std::vector<MethodBench> methods;
  std::optional<SequenceBench> sequence;  // where the bundle has a sequence case (SequenceBench)
  // Whether everything asked for was measured (not refused, no method or sequence failed).
  bool ok() const;
};

// Benchmarks one bundle (a directory or its NAME.etproof.json). Never throws for what a bundle can
// do wrong (see above); a BenchOptions::methods name the manifest does not list is a refusal with
// Error{kInvalidArgument}, as in replay().
[[nodiscard]] BenchReport bench(const std::filesystem::path& bundle, const BenchOptions& options = {});
// The same in a worker process when isolation.enabled (etproof/isolation.h; `matrix --bench`
// unless --in-process): the worker runs bench() and sends the report back; a worker that dies or
// exceeds a limit is a refusal with status crashed (Error{kCrashed}). Memory is then the worker's.
[[nodiscard]] BenchReport bench(const std::filesystem::path& bundle, const BenchOptions& options,
                                const Isolation& isolation);
// The worker's BENCH request (etproof/runtime/isolation.h WorkerServices::bench): the options as
// sent, and the service that runs bench() in the worker and answers to_json({report}). serve_bench
// throws nlohmann::json's exception for a field missing or of the wrong type.
[[nodiscard]] nlohmann::json bench_options_json(const BenchOptions& options);
[[nodiscard]] nlohmann::json serve_bench(const std::string& bundle, const nlohmann::json& options);
// One report of to_json's list read back (what a worker sends). Throws Error{kCrashed} when a
// field is missing or of the wrong type (a worker's reply that does not parse).
[[nodiscard]] BenchReport bench_report_from_json(const nlohmann::json& report);

// Text: one line per (bundle, method), with the load, latency, throughput, memory and threads,
// and a line for the sequence case (prefill and decode tokens per second); a refused bundle is
// one line with its status and reason.
[[nodiscard]] std::string to_text(const std::vector<BenchReport>& reports);
// Markdown: the same as a table.
[[nodiscard]] std::string to_markdown(const std::vector<BenchReport>& reports);
// JSON: {"bench": [report...]}, every field above (milliseconds as numbers, absent values null;
// "sequence": {case, steps, error, prefill_tokens, decode_tokens, runs, prefill_ms,
// prefill_tokens_per_s, decode_ms_per_token, decode_tokens_per_s} or null).
[[nodiscard]] nlohmann::json to_json(const std::vector<BenchReport>& reports);

}  // namespace etproof
