// etproof backends — both halves per backend: what lowers here (the export half, cached) and what
// this binary runs (probed on the probe bundles); --emulate adds what each emulated machine runs.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/render/backends.h"
#include "etproof/replay/backends_report.h"
#include "etproof/runtime/emulation.h"
#include "etproof/runtime/export_half.h"
#include "etproof/runtime/isolation.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct BackendsOptions {
  FormatOption format;
  bool runtime_only = false;
  std::string probe_dir;
  LedgerOption ledger;
  std::vector<std::string> emulate;
};

// Default probe bundles: <directory of this executable>/test-bundles (test.sh / setup.sh export
// them there).
fs::path default_probe_dir() {
  std::error_code ec;
  fs::path exe = etproof::executable_path(ec);
  return ec ? fs::path() : exe.parent_path() / "test-bundles";
}

// --emulate: what each emulated machine's worker is and registers (HELLO), asked before the rest.
nlohmann::json probe_emulated(const std::vector<std::string>& emulate) {
  nlohmann::json emulated = nlohmann::json::array();
  for (const std::string& spec : emulate)
    for (const etproof::Emulation& e : etproof::parse_emulation(spec)) {
      const nlohmann::json guest = etproof::probe_emulated_worker(e);
      emulated.push_back({{"profile", e.label()},
                          {"machine", etproof::emulated_machine(e, etproof::find_emulator(e.arch), guest,
                                                                etproof::machine_info())},
                          {"registered", guest.at("registered")}});
    }
  return emulated;
}

int run_backends(const BackendsOptions& o) {
  const nlohmann::json emulated = probe_emulated(o.emulate);
  const etproof::RuntimeHalf rt =
      etproof::runtime_half(o.probe_dir.empty() ? default_probe_dir() : fs::path(o.probe_dir));
  std::string export_why_not = "skipped (--runtime-only)";
  std::optional<nlohmann::json> exp;
  if (!o.runtime_only) exp = etproof::query_export_half(export_why_not);
  std::cout.flush();
  const bool recorded = record_evidence(o.ledger, "backends", [&](const etproof::RecordContext& ctx) {
    return etproof::records_from_backends(ctx, rt, exp.value_or(nlohmann::json()));
  });
  const etproof::BackendsPrintout printout{
      rt, exp, export_why_not, etproof::export_python(),
      o.emulate.empty() ? std::nullopt : std::optional<nlohmann::json>(emulated)};
  std::cout << etproof::render_as(etproof::backends_renderers(), o.format.format, printout);
  return recorded ? 0 : kExitError;
}

}  // namespace

Subcommand register_backends(CLI::App& app) {
  auto o = std::make_shared<BackendsOptions>();
  auto* sub = app.add_subcommand(
      "backends", "both halves per backend: what lowers here, and what this binary runs (probed)");
  add_format_option(sub, o->format, etproof::backends_renderers());
  sub->add_flag("--runtime-only", o->runtime_only, "skip the export half (no Python)");
  sub->add_option("--probe-bundles", o->probe_dir,
                  "bundles the runtime probes run (default: <etproof's dir>/test-bundles)");
  add_ledger_options(sub, o->ledger);
  sub->add_option("--emulate", o->emulate,
                  "also say what each emulated machine runs (ARCH/CPU or arm64/phones; matrix --emulate): "
                  "its features and the delegates its cross-built worker registers")
      ->allow_extra_args(false);
  return {sub, [o] { return run_backends(*o); }};
}

}  // namespace etproof_cli
