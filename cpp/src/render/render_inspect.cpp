// etproof/render_inspect.cpp — the formats of `etproof inspect` (etproof/render/inspect.h).
#include "etproof/render/formats.h"
#include "etproof/render/inspect.h"

namespace etproof {
namespace {

std::string json_text_report(const Inspection& i) { return json_report(to_json(i)); }

constexpr Renderer<Inspection> kInspectionRenderers[] = {
    {"text", to_text, "the manifest, the delegates and the delegation per operator, tensors, goldens, the bound"},
    {"json", json_text_report, "the same, for tools"},
};

}  // namespace

Renderers<Inspection> inspection_renderers() { return kInspectionRenderers; }

}  // namespace etproof
