// `etproof measure-tolerances` (tolerances.h): the bound table re-measured in its own terms.
#include "etproof/replay/tolerances.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/replay/matrix.h"
#include "etproof/gate/references.h"
#include "etproof/replay/replay.h"
#include "core/common.h"

namespace etproof {

namespace {

namespace fs = std::filesystem;
using detail::cosine_text;
using detail::format_number;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

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
                             c.case_id, t.against,
                             t.fell_back.empty() || !r.fallback_bound ? r.bound : *r.fallback_bound,
                             t, c.xfail.has_value(),
                             c.xfail ? c.xfail->reason : std::string()});
  }
}

// What one group's outputs add up to beside the GroupObservation itself: the distinct cases,
// models and bundles, and what the margin checks and the suggested terms need.
struct GroupTally {
  std::set<std::string> cases, models, bundles;
  bool any_sqnr = false;
  double row_need = 0;  // what the table's atol_range term itself must cover, by the margin
  // The margin checks per output, against its floors as judged (widened ones included); the
  // worst excess of each is kept for the report.
  double cos_excess = 0, sqnr_excess = 0;
  std::string cos_fail, sqnr_fail;
  // Widened outputs: the angle and noise amplitude the row itself must cover by the margin,
  // i.e. M × the observation less what the widening added (references.h, widen_by_reference).
  double theta_need = 0, noise_need = 0;
};

// The group's worst numbers (range error, q-step error, 1 − cosine, SQNR, elementwise ratio),
// each with where it was seen; ties go to the later output.
void track_worst(GroupObservation& g, GroupTally& tally, const OutputObservation& o) {
  const TensorReport& t = o.report;
  if (t.range_error >= g.worst_range_error) {
    g.worst_range_error = t.range_error;
    g.worst_range_at = where(o);
  }
  if (t.qstep_error && (!g.worst_qstep_error || *t.qstep_error >= *g.worst_qstep_error)) {
    g.worst_qstep_error = t.qstep_error;
    g.worst_qstep_at = where(o);
  }
  const double omc = 1 - t.cosine;
  if (omc >= g.worst_one_minus_cosine || g.worst_cosine_at.empty()) {
    g.worst_one_minus_cosine = std::max(omc, g.worst_one_minus_cosine);
    g.worst_cosine_at = where(o);
  }
  if (!t.sqnr_skipped) {
    tally.any_sqnr = true;
    if (t.sqnr_db <= g.worst_sqnr_db) {
      g.worst_sqnr_db = t.sqnr_db;
      g.worst_sqnr_at = where(o);
    }
  }
  if (t.worst_ratio >= g.worst_ratio) {
    g.worst_ratio = t.worst_ratio;
    g.worst_ratio_at = where(o);
  }
}

// What the row's own terms must cover for this output, by the margin M: its atol_range share and,
// for a widened output (judged against truth), the angle and noise amplitude less what the
// widening added.
void track_need(GroupObservation& g, GroupTally& tally, const OutputObservation& o, double M) {
  const TensorReport& t = o.report;
  // Against truth, the row covers what the kernel adds to the reference's own error.
  if (t.widening_error) g.widened = true;
  const double added =
      t.widening_error ? std::max(0.0, M * t.max_abs_error - kReferenceMargin * *t.widening_error)
                       : M * t.max_abs_error;
  if (t.reference_range > 0) tally.row_need = std::max(tally.row_need, added / t.reference_range);
  if (t.widening_error && !t.cosine_skipped && !t.exact) {
    const double row_theta = std::acos(std::clamp(o.bound.min_cosine, -1.0, 1.0));
    const double added = std::acos(std::clamp(t.min_cosine, -1.0, 1.0)) - row_theta;
    tally.theta_need = std::max(tally.theta_need,
                                M * std::acos(std::clamp(t.cosine, -1.0, 1.0)) - std::max(0.0, added));
  }
  if (t.widening_error && !t.sqnr_skipped && !t.exact && t.min_sqnr_db != -kInf &&
      o.bound.min_sqnr_db != -kInf) {
    auto amp = [](double db) { return std::isfinite(db) ? std::pow(10.0, -db / 20) : 0.0; };
    const double added = amp(t.min_sqnr_db) - amp(o.bound.min_sqnr_db);
    tally.noise_need = std::max(tally.noise_need, M * amp(t.sqnr_db) - std::max(0.0, added));
  }
}

// The margin checks of one output against the floors it was judged by (Mc: the margin, 1 for a
// target row): the worst cosine and SQNR excess kept with its text; a non-numeric failure, which
// no margin covers, listed in g.not_covered.
void check_margin(GroupObservation& g, GroupTally& tally, const OutputObservation& o, double Mc) {
  const TensorReport& t = o.report;
  if (!t.cosine_skipped && !t.exact) {
    const double excess = Mc * Mc * (1 - t.cosine) - (1 - t.min_cosine);
    if (excess > tally.cos_excess) {
      tally.cos_excess = excess;
      tally.cos_fail = "cosine: " + fmt(Mc * Mc) + " × (1 − " + cosine_text(t.cosine) + ") > 1 − " +
                       cosine_text(t.min_cosine) + " (" + where(o) + ")";
    }
  }
  if (!t.sqnr_skipped && !t.exact && t.min_sqnr_db != -kInf) {
    const double excess = t.min_sqnr_db - (t.sqnr_db - 20 * std::log10(Mc));
    if (excess > tally.sqnr_excess) {
      tally.sqnr_excess = excess;
      tally.sqnr_fail = "SQNR: " + fmt(t.sqnr_db) + " dB − " + fmt(20 * std::log10(Mc)) +
                        " dB < floor " + fmt(t.min_sqnr_db) + " dB (" + where(o) + ")";
    }
  }
  // A non-numeric rule failed (NaN/inf, constant output): no margin can cover it.
  if (!t.passed && (t.failure.find("non-finite") != std::string::npos ||
                    t.failure.find("constant output") != std::string::npos))
    g.not_covered.push_back(where(o) + ": " + t.failure);
}

// The suggested terms: M× the observation, rounded outwards; a widened row's floors from the need
// the widening leaves.
void suggest_terms(GroupObservation& g, const GroupTally& tally, double M) {
  g.suggest_atol_range = round2(tally.row_need, true);
  if (g.worst_qstep_error) g.suggest_atol_qsteps = round2(M * *g.worst_qstep_error, true);
  g.suggest_min_cosine = 1 - round2(M * M * g.worst_one_minus_cosine, true);
  if (tally.any_sqnr && std::isfinite(g.worst_sqnr_db))
    g.suggest_min_sqnr_db = std::floor((g.worst_sqnr_db - 20 * std::log10(M)) * 10) / 10;
  if (g.widened) {  // what the row must hold once the widening is counted
    g.suggest_min_cosine = 1 - round2(1 - std::cos(std::min(tally.theta_need, kPi)), true);
    if (g.suggest_min_sqnr_db)
      g.suggest_min_sqnr_db =
          tally.noise_need > 0 ? std::floor(-20 * std::log10(tally.noise_need) * 10) / 10 : kInf;
  }
}

// Coverage by the margin: g.covered, with what is not covered in g.not_covered.
void judge_coverage(GroupObservation& g, const GroupTally& tally, double margin) {
  if (g.outputs == 0) {
    g.covered = true;  // only xfail outputs: nothing to cover (listed separately)
  } else if (!g.bound) {
    g.not_covered.push_back("no bound for this recipe/precision: " + g.bound_error);
  } else {
    const Bound& b = *g.bound;
    // A target term is what the table holds a recipe to, not a measurement with a margin: its
    // (non-xfail) observations must lie within it, with no margin.
    const double M = b.target && !b.caller_supplied ? 1.0 : margin;
    if (M * g.worst_ratio > 1)
      g.not_covered.push_back("elementwise: " + fmt(M) + " × worst ratio " +
                              fmt(g.worst_ratio) + " > 1 (" + g.worst_ratio_at + ")");
    if (!tally.cos_fail.empty()) g.not_covered.push_back(tally.cos_fail);
    if (!tally.sqnr_fail.empty()) g.not_covered.push_back(tally.sqnr_fail);
    g.covered = g.not_covered.empty();
  }
}

// One (recipe, precision, against) group's observations summed up by the margin M: counts, worst
// numbers, suggested terms and coverage. An xfail or inconclusive output is counted and no more.
GroupObservation observe_group(const std::tuple<std::string, std::string, std::string>& key,
                               const std::vector<const OutputObservation*>& obs, double M) {
  GroupObservation g;
  std::tie(g.recipe, g.precision, g.against) = key;
  GroupTally tally;
  const bool target = obs.front()->bound.target && !obs.front()->bound.caller_supplied;
  const double Mc = target ? 1.0 : M;
  for (const OutputObservation* o : obs) {
    if (!g.bound && o->bound.source.rfind("none: ", 0) != 0) g.bound = o->bound;
    if (o->bound.source.rfind("none: ", 0) == 0) g.bound_error = o->bound.source.substr(6);
    if (o->xfail) {
      ++g.xfail_outputs;
      continue;
    }
    if (!o->report.inconclusive.empty()) {
      ++g.inconclusive_outputs;
      continue;
    }
    ++g.outputs;
    tally.cases.insert(o->dir + "/" + o->bundle + "/" + o->case_id);
    tally.models.insert(o->model);
    tally.bundles.insert(o->dir + "/" + o->bundle);
    if (!o->report.passed) ++g.failed_outputs;
    track_worst(g, tally, *o);
    track_need(g, tally, *o, M);
    check_margin(g, tally, *o, Mc);
  }
  g.cases = tally.cases.size();
  g.models = tally.models.size();
  g.bundles = tally.bundles.size();
  suggest_terms(g, tally, M);
  judge_coverage(g, tally, M);
  return g;
}

// rep.groups from rep.outputs: one per (recipe, precision, against), in that order.
void summarize(ToleranceReport& rep) {
  std::map<std::tuple<std::string, std::string, std::string>,
           std::vector<const OutputObservation*>>
      by_group;
  for (const auto& o : rep.outputs) by_group[{o.recipe, o.precision, o.against}].push_back(&o);
  for (const auto& [key, obs] : by_group) rep.groups.push_back(observe_group(key, obs, rep.margin));
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
  rep.own_reference = opt.own_reference;
  rep.caller_bound = describe_override(opt.caller);
  for (const fs::path& dir : dirs) {
    const std::string remedy = "pass directories the export half wrote (etproof export … --out DIR)";
    if (!detail::is_directory_path(dir, remedy))
      throw Error(ErrorKind::kIo, "bundle directory " + dir.string() + ": " + detail::not_a_directory_text(dir), remedy);
    rep.dirs.push_back(dir.string());
    std::vector<XfailRecord> records;
    if (detail::path_exists(dir / "xfail.json", "check the file, or remove it if no failure is expected"))
      records = read_xfail(dir / "xfail.json");
    ReplayOptions options;
    options.caller = opt.caller;
    options.xfail = records;
    options.use_truth = !opt.own_reference;  // as judged, or each column against its own
                                             // reference computation (references.h)
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
