// etproof measure-tolerances — the bound table re-measured on every golden of every bundle in
// DIR…: worst error per (recipe, precision) in the gate's scale-free terms, and whether the table
// covers it by the margin. Exit 0: it does; 1: it does not (re-measure the table), or nothing was
// measured; 2: an error.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "etproof/render/junit.h"
#include "etproof/render/tolerances.h"
#include "etproof/replay/tolerances.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct MeasureTolerancesOptions {
  std::vector<std::string> dirs;
  size_t jobs = default_jobs();
  FormatOption format;
  std::string junit;
  double margin = etproof::kDefaultMargin;
  etproof::BoundOverride caller;
  bool own_reference = false;
};

// Default: the golden set (else the demo) and the test bundles beside this executable.
std::vector<fs::path> default_dirs() {
  std::vector<fs::path> dirs;
  const fs::path demo = default_bundles_dir();
  const fs::path build = demo.parent_path().parent_path();
  const fs::path golden = build / "golden-set" / "bundles";
  std::error_code ec;  // a default that cannot be examined is left out, as one that is absent
  for (const fs::path& d : {fs::is_directory(golden, ec) ? golden : demo, build / "test-bundles"})
    if (fs::is_directory(d, ec)) dirs.push_back(d);
  if (dirs.empty()) dirs.push_back(demo);  // refused by name below
  return dirs;
}

int run_measure_tolerances(const MeasureTolerancesOptions& o) {
  etproof::check_bound_override(o.caller);
  std::vector<fs::path> dirs(o.dirs.begin(), o.dirs.end());
  if (dirs.empty()) dirs = default_dirs();
  const etproof::ToleranceReport r =
      etproof::measure_tolerances(dirs, {o.margin, o.caller, o.jobs, o.own_reference});
  if (!o.junit.empty()) write_junit(o.junit, etproof::to_junit(r));
  std::cout << etproof::render_as(etproof::tolerance_renderers(), o.format.format, r);
  return r.exit_code();
}

}  // namespace

Subcommand register_measure_tolerances(CLI::App& app) {
  auto o = std::make_shared<MeasureTolerancesOptions>();
  auto* sub = app.add_subcommand(
      "measure-tolerances",
      "re-measure the bound table on every golden of every bundle in DIR…: worst error per "
      "(recipe, precision) in the gate's scale-free terms, and whether the table covers it by "
      "the margin (exit 1 when it does not)");
  sub->add_option("DIR", o->dirs,
                  "bundle directories (default: <etproof's dir>/golden-set/bundles, else "
                  "<etproof's dir>/demo/bundles, and <etproof's dir>/test-bundles)");
  add_jobs_option(sub, o->jobs);
  add_format_option(sub, o->format, etproof::tolerance_renderers());
  add_records_nothing_flag(sub);
  sub->add_option("--junit", o->junit, "also write a JUnit XML report to FILE");
  sub->add_option("--margin", o->margin,
                  "amplitude margin the table must keep over the worst observation "
                  "(default 4: the margin the table was set with)");
  add_bound_options(sub, o->caller, ", instead of the table");
  sub->add_flag("--own-reference", o->own_reference,
                "measure each column against its own reference computation (the float32 "
                "golden, or the precision's emulation) with no truth and no widening, "
                "instead of as the gate judges it");
  return {sub, [o] { return run_measure_tolerances(*o); }};
}

}  // namespace etproof_cli
