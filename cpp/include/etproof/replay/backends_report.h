// etproof/replay/backends_report.h — the runtime half of `etproof backends`, probed.
//
// For every runtime id the backend table names or the registry holds: linked / registered /
// available (etproof/registry.h), and a one-operation probe — the smallest bundle exported for
// that id alone (from the probe bundle directory, e.g. build/test-bundles/tiny-xnnpack-fp32) run
// through it and gated against its goldens. For every export key of the table: one line, with a
// reason for every negative. Plain values; no lifetime ties to anything.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/gate/gate.h"
#include "etproof/runtime/registry.h"
#include "etproof/core/status.h"

namespace etproof {

struct RuntimeProbe {
  // What the replay of the probe bundle gave (etproof/status.h): agreed, drifted, or why it could
  // not be judged (not-linked, load-failed, run-failed, bundle-invalid, no-bound, …); nullopt
  // when nothing was replayed.
  std::optional<Status> outcome;
  // The outcome's spelling, or "no-bundle" (nothing exported for it in the probe directory) or
  // "not-run" (not available here, or probes not asked for).
  std::string status = "not-run";
  std::string bundle;  // the bundle run, when one was
  std::string detail;  // numbers, or why not
  // The replay's numbers, where it measured any: cases run, the worst max |a − r| and the lowest
  // SQNR (dB; +inf when identical) over every output, and the bound judged by.
  size_t cases = 0;
  std::optional<double> max_abs_error;
  std::optional<double> min_sqnr_db;
  std::optional<Bound> bound;
  std::string model, recipe, precision;  // the probe bundle's, as its manifest records them
  std::string bundle_sha256;           // the probe bundle's artifact hash (its manifest's)
  std::string bundle_created_utc;
  std::map<std::string, std::string> bundle_toolchain;
};

struct RuntimeIdReport {
  RuntimeIdStatus runtime;
  RuntimeProbe probe;
};

struct RuntimeKeyReport {
  std::string key;
  std::string name;
  std::vector<std::string> ids;
  RuntimeStatus status = RuntimeStatus::kNotLinked;
  std::string reason;
  RuntimeProbe probe;
};

struct RuntimeHalf {
  std::vector<RuntimeIdReport> ids;     // table ids (table order), then ids only the registry has
  std::vector<RuntimeKeyReport> keys;   // one per export key of the table, table order
  std::vector<Component> components;    // offered by the wheel, each with linked
  std::string probe_dir;                // "" when probes were not asked for
  std::string environment_note;         // prepare_backend_environment()'s note
};

// Probes with bundles found directly under `probe_bundles` (empty: no probes, status "not-run").
[[nodiscard]] RuntimeHalf runtime_half(const std::filesystem::path& probe_bundles);

// The probe alone: the smallest fp32-first bundle in `dir` whose program delegates to exactly
// `id` (portable: no delegate, backend "portable", when `id` is empty), run and gated.
[[nodiscard]] RuntimeProbe probe_runtime(const std::string& id, const std::filesystem::path& dir);


}  // namespace etproof
