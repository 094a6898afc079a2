// etproof/render/tolerances.h — measure-tolerances' report as text, JSON and Markdown.
// The render layer: formats only; the report itself and how it is made: etproof/replay/tolerances.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "etproof/replay/tolerances.h"

namespace etproof {

[[nodiscard]] std::string to_text(const ToleranceReport& r);
[[nodiscard]] std::string to_markdown(const ToleranceReport& r);
[[nodiscard]] nlohmann::json to_json(const ToleranceReport& r);

}  // namespace etproof
