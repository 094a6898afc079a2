// etproof/render/backends.h — the runtime half of `etproof backends` as text and JSON, and what the
// command prints.
// The render layer: formats only; the report itself and how it is made: etproof/replay/backends_report.h.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "etproof/render/formats.h"
#include "etproof/replay/backends_report.h"

namespace etproof {

// {"runtime": [{"id","keys","component","linked","registered","available","status","reason",
//   "probe": {"status","bundle","detail"}}], "runtime_by_backend": [{"backend","name","ids",
//   "status","reason","probe"}], "components": {"offered": [...], "linked": [...]},
//   "probe_bundles": DIR, "environment": NOTE}
[[nodiscard]] nlohmann::json to_json(const RuntimeHalf& h);
[[nodiscard]] std::string to_text(const RuntimeHalf& h);

// What `etproof backends` prints: both halves per backend, and what each emulated machine runs.
struct BackendsPrintout {
  const RuntimeHalf& runtime;
  // The export half's answer (python -m etproof probe: one {"backend", "status", "reason"} per
  // backend), or nullopt and why not (export_error).
  std::optional<nlohmann::json> export_half;
  std::string export_error;
  std::string export_python;  // the interpreter that answered (export_python())
  // --emulate: one {"profile", "machine" (emulated_machine's record), "registered"} per machine;
  // nullopt when not asked.
  std::optional<nlohmann::json> emulated;
};

// text: to_text(runtime), each emulated machine, then the export half's table; json: to_json(runtime)
// with "export" (null when not answered), "export_error" (null when answered) and, with --emulate,
// "emulated".
[[nodiscard]] Renderers<BackendsPrintout> backends_renderers();

}  // namespace etproof
