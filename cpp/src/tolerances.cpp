// `etproof measure-tolerances` (tolerances.h): the bound table re-measured in its own terms.
#include "etproof/tolerances.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "etproof/bundle.h"
#include "etproof/error.h"
#include "etproof/matrix.h"
#include "etproof/replay.h"
#include "common.h"

namespace etproof {

namespace {

namespace fs = std::filesystem;
using detail::cosine_text;
using detail::format_number;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string fmt(double v, int precision = 4) { return format_number(v, precision); }

std::string error_text(const Error& e) { return detail::error_line(e); }

// Rounded outwards to 2 significant digits: up (a tolerance) or down (a floor).
double round2(double v, bool up) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  const double e = std::pow(10.0, std::floor(std::log10(v)) - 1);
  return (up ? std::ceil(v / e - 1e-9) : std::floor(v / e + 1e-9)) * e;
}

std::string where(const OutputObservation& o) {
  return o.bundle + " " + o.case_id + "/" + o.report.output;
}

// One bundle's replay (replay.h): every output of every case it measured becomes an
// observation; what it could not run is listed in `skipped`. Without a bound the numbers are still
// measured (against a bound nothing exceeds) so the report can say what the table would need.
void observe(ToleranceReport& rep, const fs::path& dir, const ParityReport& r) {
  auto skip = [&](const std::string& why) {
    rep.skipped.push_back({dir.string(), r.bundle, r.backend, r.recipe, why});
  };
  if (r.refused) {
    skip(r.error ? error_text(*r.error) : std::string(to_string(*r.refused)));
    return;
  }
  for (const CaseReport& c : r.cases) {
    if (c.outputs.empty()) {
      skip("case " + c.case_id + ": " + c.detail);
      continue;
    }
    for (const TensorReport& t : c.outputs)
      rep.outputs.push_back({dir.string(), r.bundle, r.model, r.backend, r.recipe, r.precision,
                             c.case_id, r.bound, t, c.xfail.has_value(),
                             c.xfail ? c.xfail->reason : std::string()});
  }
}

void summarize(ToleranceReport& rep) {
  std::map<std::pair<std::string, std::string>, std::vector<const OutputObservation*>> by_group;
  for (const auto& o : rep.outputs) by_group[{o.recipe, o.precision}].push_back(&o);
  const double M = rep.margin;
  for (const auto& [key, obs] : by_group) {
    GroupObservation g;
    g.recipe = key.first;
    g.precision = key.second;
    std::set<std::string> cases, models, bundles;
    bool any_sqnr = false;
    for (const OutputObservation* o : obs) {
      if (!g.bound && o->bound.source.rfind("none: ", 0) != 0) g.bound = o->bound;
      if (o->bound.source.rfind("none: ", 0) == 0) g.bound_error = o->bound.source.substr(6);
      if (o->xfail) {
        ++g.xfail_outputs;
        continue;
      }
      const TensorReport& t = o->report;
      ++g.outputs;
      cases.insert(o->dir + "/" + o->bundle + "/" + o->case_id);
      models.insert(o->model);
      bundles.insert(o->dir + "/" + o->bundle);
      if (!t.passed) ++g.failed_outputs;
      if (t.range_error >= g.worst_range_error) {
        g.worst_range_error = t.range_error;
        g.worst_range_at = where(*o);
      }
      if (t.qstep_error && (!g.worst_qstep_error || *t.qstep_error >= *g.worst_qstep_error)) {
        g.worst_qstep_error = t.qstep_error;
        g.worst_qstep_at = where(*o);
      }
      const double omc = 1 - t.cosine;
      if (omc >= g.worst_one_minus_cosine || g.worst_cosine_at.empty()) {
        g.worst_one_minus_cosine = std::max(omc, g.worst_one_minus_cosine);
        g.worst_cosine_at = where(*o);
      }
      if (!t.sqnr_skipped) {
        any_sqnr = true;
        if (t.sqnr_db <= g.worst_sqnr_db) {
          g.worst_sqnr_db = t.sqnr_db;
          g.worst_sqnr_at = where(*o);
        }
      }
      if (t.worst_ratio >= g.worst_ratio) {
        g.worst_ratio = t.worst_ratio;
        g.worst_ratio_at = where(*o);
      }
      // A non-numeric rule failed (NaN/inf, constant output): no margin can cover it.
      if (!t.passed && (t.failure.find("non-finite") != std::string::npos ||
                        t.failure.find("constant output") != std::string::npos))
        g.not_covered.push_back(where(*o) + ": " + t.failure);
    }
    g.cases = cases.size();
    g.models = models.size();
    g.bundles = bundles.size();
    // Suggested terms: M× the observation, rounded outwards.
    g.suggest_atol_range = round2(M * g.worst_range_error, true);
    if (g.worst_qstep_error) g.suggest_atol_qsteps = round2(M * *g.worst_qstep_error, true);
    g.suggest_min_cosine = 1 - round2(M * M * g.worst_one_minus_cosine, true);
    if (any_sqnr && std::isfinite(g.worst_sqnr_db))
      g.suggest_min_sqnr_db = std::floor((g.worst_sqnr_db - 20 * std::log10(M)) * 10) / 10;
    // Coverage by the margin.
    if (g.outputs == 0) {
      g.covered = true;  // only xfail outputs: nothing to cover (listed separately)
    } else if (!g.bound) {
      g.not_covered.push_back("no bound for this recipe/precision: " + g.bound_error);
    } else {
      const Bound& b = *g.bound;
      // A target term is what the table holds a recipe to, not a measurement with a margin: its
      // (non-xfail) observations must lie within it, with no margin.
      const double M = b.target && !b.caller_supplied ? 1.0 : rep.margin;
      if (M * g.worst_ratio > 1)
        g.not_covered.push_back("elementwise: " + fmt(M) + " × worst ratio " +
                                fmt(g.worst_ratio) + " > 1 (" + g.worst_ratio_at + ")");
      if (M * M * g.worst_one_minus_cosine > 1 - b.min_cosine)
        g.not_covered.push_back("cosine: " + fmt(M * M) + " × (1 − " +
                                cosine_text(1 - g.worst_one_minus_cosine) + ") > 1 − " +
                                cosine_text(b.min_cosine) + " (" + g.worst_cosine_at + ")");
      if (any_sqnr && b.min_sqnr_db != -kInf &&
          g.worst_sqnr_db - 20 * std::log10(M) < b.min_sqnr_db)
        g.not_covered.push_back("SQNR: " + fmt(g.worst_sqnr_db) + " dB − " +
                                fmt(20 * std::log10(M)) + " dB < floor " +
                                fmt(b.min_sqnr_db) + " dB (" + g.worst_sqnr_at + ")");
      g.covered = g.not_covered.empty();
    }
    rep.groups.push_back(std::move(g));
  }
}

}  // namespace

int ToleranceReport::exit_code() const {
  if (groups.empty()) return 1;
  size_t measured = 0;
  for (const auto& g : groups) {
    measured += g.outputs;
    if (!g.covered) return 1;
  }
  return measured == 0 ? 1 : 0;
}

ToleranceReport measure_tolerances(const std::vector<fs::path>& dirs,
                                   const ToleranceOptions& opt) {
  if (!(opt.margin >= 1) || !std::isfinite(opt.margin))
    throw Error(ErrorKind::kInvalidArgument,
                "--margin " + fmt(opt.margin) + " is not a number ≥ 1",
                "pass the amplitude margin the table must keep, e.g. --margin 4");
  ToleranceReport rep;
  rep.margin = opt.margin;
  if (!opt.caller.empty()) {
    std::vector<std::string> given;
    auto add = [&](const std::optional<double>& v, const char* flag) {
      if (v) given.push_back(std::string(flag) + " " + format_number(*v, 12));
    };
    add(opt.caller.atol, "--atol");
    add(opt.caller.rtol, "--rtol");
    add(opt.caller.min_cosine, "--min-cosine");
    add(opt.caller.min_sqnr_db, "--min-sqnr");
    for (size_t i = 0; i < given.size(); ++i) rep.caller_bound += (i ? " " : "") + given[i];
  }
  for (const fs::path& dir : dirs) {
    if (!fs::is_directory(dir))
      throw Error(ErrorKind::kIo, "bundle directory " + dir.string() + " does not exist",
                  "pass directories the export half wrote (etproof export … --out DIR)");
    rep.dirs.push_back(dir.string());
    std::vector<XfailRecord> records;
    if (fs::exists(dir / "xfail.json")) records = read_xfail(dir / "xfail.json");
    ReplayOptions options;
    options.caller = opt.caller;
    options.xfail = records;
    options.use_truth = false;  // each column against its own reference computation: what the
                                // reference-basis rows measure (references.h)
    // Replayed in parallel (opt.jobs), observed in the directory's order.
    for (const BundleReplay& b : replay_all(find_bundles(dir), options, opt.jobs)) {
      if (b.report)
        observe(rep, dir, *b.report);
      else
        rep.skipped.push_back({dir.string(), b.path.filename().string(), "", "", b.unforeseen});
    }
  }
  summarize(rep);
  return rep;
}

}  // namespace etproof
