// etproof inspect — a bundle's manifest, delegates and delegation.
#include <iostream>
#include <memory>
#include <string>

#include "common.h"
#include "etproof/render/inspect.h"
#include "etproof/replay/inspect.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct InspectOptions {
  std::string bundle;
  FormatOption format;
};

int run_inspect(const InspectOptions& o) {
  const etproof::Inspection i = etproof::inspect_bundle(o.bundle);
  std::cout << etproof::render_as(etproof::inspection_renderers(), o.format.format, i);
  return 0;
}

}  // namespace

Subcommand register_inspect(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "a bundle's manifest, delegates and delegation");
  sub->add_option("BUNDLE", o->bundle, "bundle directory or manifest")->required();
  add_format_option(sub, o->format, etproof::inspection_renderers());
  return {sub, [o] { return run_inspect(*o); }};
}

}  // namespace etproof_cli
