// etproof/render/attribute.h — the attribution and the bisection as text and JSON, and what
// `etproof attribute` prints.
// The render layer: formats only; the report itself and how it is made: etproof/replay/attribute.h.
#pragma once

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/render/formats.h"
#include "etproof/replay/attribute.h"
#include "etproof/replay/matrix.h"

namespace etproof {

// The table and summary as text (one row per tap: position, operator, module path, source line,
// max abs error, cosine, SQNR, step, verdict) and as JSON.
std::string to_text(const Attribution& a);
nlohmann::json to_json(const Attribution& a);
// The rounds, then the final attribution (to_text/to_json of it, with "bisect": {rounds, resolved,
// stopped} in JSON).
std::string to_text(const Bisection& b);
nlohmann::json to_json(const Bisection& b);

// What `etproof attribute` prints: each bundle's attribution, or its bisection (--bisect), in the
// order the bundles were given.
struct AttributePrintout {
  std::vector<std::variant<Attribution, Bisection>> results;
  // Result i's attribution (a bisection's final one).
  [[nodiscard]] const Attribution& attribution(size_t i) const;
  // to_json of each result, in order: always a list (what plot_attributions draws).
  [[nodiscard]] nlohmann::json docs() const;
};

// text: each result's to_text, a blank line between; json: to_json of the one result, or the list
// of several.
[[nodiscard]] Renderers<AttributePrintout> attribute_renderers();

// ---- pictures ----------------------------------------------------------------------------------
// Draws `reports` (to_json of Attributions: one object or a list; columns of one model share the
// picture) as SQNR against depth into `file` (.svg or .png), through the export half's matplotlib
// (`python -m etproof plot-attribution`, python/etproof/cli/plot.py), written atomically there. Returns
// the export half's exit status (0: drawn); throws Error{kIo} when the temporary report cannot be
// written, and as run_export_half_command.
int plot_attributions(const nlohmann::json& reports, const std::filesystem::path& file,
                      bool stdout_to_stderr = false);

// For `matrix --html`: fills m.attributions, one figure per model with at least one column whose
// bundle has a tapped twin: each such column attributed (its summary, or the error's one-line text
// when it cannot be), and their curves drawn with plot_attributions into an SVG embedded as a
// data: URI (why_not says why not, e.g. the export half missing). Never throws for one column or
// one picture: the page is written regardless. Replays every twin once more (a twin is the size of
// its program plus its taps' values: the cost of the page, not of the matrix).
void attach_attributions(Matrix& m, const AttributeOptions& options = {});

}  // namespace etproof
