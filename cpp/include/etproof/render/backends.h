// etproof/render/backends.h — the runtime half of `etproof backends` as text and JSON.
// The render layer: formats only; the report itself and how it is made: etproof/replay/backends_report.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "etproof/replay/backends_report.h"

namespace etproof {

// {"runtime": [{"id","keys","component","linked","registered","available","status","reason",
//   "probe": {"status","bundle","detail"}}], "runtime_by_backend": [{"backend","name","ids",
//   "status","reason","probe"}], "components": {"offered": [...], "linked": [...]},
//   "probe_bundles": DIR, "environment": NOTE}
[[nodiscard]] nlohmann::json to_json(const RuntimeHalf& h);
[[nodiscard]] std::string to_text(const RuntimeHalf& h);

}  // namespace etproof
