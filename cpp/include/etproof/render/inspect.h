// etproof/render/inspect.h — the formats `etproof inspect` prints a bundle's inspection in.
// The renderers themselves (to_text, to_json) are the replay layer's: etproof/replay/inspect.h.
#pragma once

#include "etproof/render/formats.h"
#include "etproof/replay/inspect.h"

namespace etproof {

// text (to_text) and json (to_json, printed).
[[nodiscard]] Renderers<Inspection> inspection_renderers();

}  // namespace etproof
