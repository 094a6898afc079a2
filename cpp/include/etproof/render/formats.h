// etproof/render/formats.h — the formats a report can be printed in: per report type, one table of
// renderers (name, function, help), defined beside that report's renderers. The CLI's --format NAME
// takes its choices and its help from the table of the report its command prints; a new format is
// a renderer and its row in that table.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"

namespace etproof {

// One format of one report type.
template <class Report>
struct Renderer {
  std::string_view name;                  // --format NAME: lower case, no spaces
  std::string (*render)(const Report&);   // the whole report as printed, ending in a newline
  std::string_view help;                  // what that format holds, for --help
};

// A report type's renderers, its default (text) first.
template <class Report>
using Renderers = std::span<const Renderer<Report>>;

// The renderer named `name` in `table`; nullptr when it has none of that name.
template <class Report>
const Renderer<Report>* find_renderer(Renderers<Report> table, std::string_view name) {
  for (const Renderer<Report>& r : table)
    if (r.name == name) return &r;
  return nullptr;
}

// `report` rendered as `name`; Error{kInvalidArgument} naming the format when `table` has none.
template <class Report>
std::string render_as(Renderers<Report> table, std::string_view name, const Report& report) {
  if (const Renderer<Report>* r = find_renderer(table, name)) return r->render(report);
  std::string names;
  for (const Renderer<Report>& r : table) names += (names.empty() ? "" : ", ") + std::string(r.name);
  throw Error(ErrorKind::kInvalidArgument, "no format '" + std::string(name) + "' for this report",
              "pick one of: " + names);
}

// A JSON report as printed: indented by 2, a byte that is not UTF-8 (a file name's, on Linux)
// written as U+FFFD instead of failing the command after its work, and a final newline.
[[nodiscard]] std::string json_report(const nlohmann::json& doc);

}  // namespace etproof
