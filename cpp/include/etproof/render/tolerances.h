// etproof/render/tolerances.h — measure-tolerances' report as text, JSON and Markdown, and its table of formats.
// The render layer: formats only; the report itself and how it is made: etproof/replay/tolerances.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "etproof/render/formats.h"
#include "etproof/replay/tolerances.h"

namespace etproof {

[[nodiscard]] std::string to_text(const ToleranceReport& r);
[[nodiscard]] std::string to_markdown(const ToleranceReport& r);
[[nodiscard]] nlohmann::json to_json(const ToleranceReport& r);

// `etproof measure-tolerances --format NAME`: text, json (to_json, printed), markdown and junit
// (to_junit, etproof/render/junit.h).
[[nodiscard]] Renderers<ToleranceReport> tolerance_renderers();

}  // namespace etproof
