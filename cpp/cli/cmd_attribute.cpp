// etproof attribute — which layer drifted. The tapped twin of each BUNDLE replayed and read in
// graph order (etproof/attribute.h), printed in turn (JSON: one object, or a list for several);
// --plot draws them on one picture through the export half's matplotlib (python -m etproof
// plot-attribution). Exit 0 when every tap and output of every bundle agrees, 1 when something
// drifts (the table names where), 2 an error.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/render/attribute.h"
#include "etproof/replay/attribute.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct AttributeOptions {
  std::vector<std::string> bundles;
  std::string case_id, output, plot, model, bisect_out;
  bool bisect = false;
  FormatOption format;
  etproof::BoundOverride caller;
  bool isolate = false;
};

// Each bundle attributed (or bisected), in order.
etproof::AttributePrintout attribute_all(const AttributeOptions& a, const etproof::AttributeOptions& options) {
  etproof::AttributePrintout out;
  for (const std::string& p : a.bundles) {
    if (a.bisect) {
      etproof::BisectOptions bo;
      bo.model = a.model;
      if (!a.bisect_out.empty()) bo.work = fs::path(a.bisect_out) / fs::path(p).filename();
      out.results.emplace_back(etproof::bisect(p, options, bo));
    } else {
      out.results.emplace_back(etproof::attribute(p, options));
    }
  }
  return out;
}

int run_attribute(const AttributeOptions& a) {
  etproof::check_bound_override(a.caller);
  etproof::AttributeOptions options;
  options.case_id = a.case_id;
  options.output = a.output;
  options.replay.caller = a.caller;
  options.replay.isolation = WorkerLimits{}.resolve(a.isolate);
  const etproof::AttributePrintout r = attribute_all(a, options);
  std::cout << etproof::render_as(etproof::attribute_renderers(), a.format.format, r);
  // The plot's own messages go to stderr when stdout is a document for tools (any format but text).
  if (!a.plot.empty() && etproof::plot_attributions(r.docs(), a.plot, a.format.format != "text") != 0)
    return kExitError;
  bool drift = false;
  for (size_t i = 0; i < r.results.size(); ++i)
    drift = drift || r.attribution(i).earliest_drift || !r.attribution(i).outputs_passed;
  return drift ? 1 : 0;
}

void add_bisect_options(CLI::App* sub, AttributeOptions& o) {
  sub->add_flag("--bisect", o.bisect,
                "narrow the earliest drift of a spaced twin: export twins tapping every node between the "
                "last agreeing tap and the drift (the export half, python -m etproof export --taps-range) "
                "until no untapped node lies between them");
  sub->add_option("--model", o.model, "with --bisect: the MODEL to export from (default: the twin's taps.exported_from)");
  sub->add_option("--bisect-out", o.bisect_out,
                  "with --bisect: keep the narrowed bundles in DIR/BUNDLE/round-N (default: a temporary "
                  "directory, removed)");
}

}  // namespace

Subcommand register_attribute(CLI::App& app) {
  auto o = std::make_shared<AttributeOptions>();
  auto* sub = app.add_subcommand(
      "attribute", "which layer drifted: the bundle's tapped twin replayed, every tap against its bound in graph order "
                   "(exit 0 all agree, 1 a drift)");
  sub->add_option("BUNDLE", o->bundles,
                  "bundle directories or manifests (exported with --taps: BUNDLE/NAME.taps); several "
                  "columns of one model share a --plot")
      ->required();
  sub->add_option("--plot", o->plot,
                  "also draw SQNR against depth, one line per bundle, with the bound and the earliest "
                  "drift, into FILE.svg or FILE.png (the export half's matplotlib)");
  sub->add_option("--case", o->case_id,
                  "the golden case to attribute (default: the first case with a drift, else the first)");
  sub->add_option("--output", o->output,
                  "the model output to explain: only the taps whose value reaches it are read (default: all)");
  add_bisect_options(sub, *o);
  add_format_option(sub, o->format, etproof::attribute_renderers());
  add_records_nothing_flag(sub);
  add_bound_options(sub, o->caller, "");
  sub->add_flag("--isolate", o->isolate,
                "run the twin in a worker process: a crash inside ExecuTorch becomes an error instead of ending etproof");
  return {sub, [o] { return run_attribute(*o); }};
}

}  // namespace etproof_cli
