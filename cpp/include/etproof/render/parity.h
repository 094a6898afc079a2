// etproof/render/parity.h — the parity report as text and JSON.
// The render layer: formats only; the report itself and how it is made: etproof/replay/replay.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "etproof/replay/replay.h"

namespace etproof {

// Text report. When it drifted under a derived bound, it ends with a hint: pass a caller bound.
[[nodiscard]] std::string to_text(const ParityReport& r);
[[nodiscard]] nlohmann::json to_json(const ParityReport& r);

}  // namespace etproof
