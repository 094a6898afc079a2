// etproof export — the export half, in Python (python -m etproof export ARGS…): main hands it the
// command line before parsing (run_export); registered here for `etproof --help` and
// `etproof export --help`'s place in the list.
#include "etproof/runtime/export_half.h"
#include "subcommands.h"

namespace etproof_cli {

int run_export(int argc, char** argv) { return etproof::run_export_half(argc, argv); }

Subcommand register_export(CLI::App& app) {
  auto* sub = app.add_subcommand("export", "export a model (runs the export half: python -m etproof export ARGS…)");
  sub->allow_extras();
  return {sub, nullptr};
}

}  // namespace etproof_cli
