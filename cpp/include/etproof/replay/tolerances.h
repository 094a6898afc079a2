// etproof/replay/tolerances.h — `etproof measure-tolerances`: re-measures the bound table (data/bounds.json)
// on every golden of every bundle in some directories, in the gate's own scale-free terms, and
// says whether the table covers each observation by a stated margin.
//
// Each output is measured as the gate judges it (references.h, plan_judgement): a float column of
// a bundle with references against float64 truth, its bound the table's row WIDENED by
// kReferenceMargin× the golden's (or the precision's emulation's) own error against truth; an
// int8 column against the float32 golden; integers exactly. `own_reference` (--own-reference)
// instead measures every column against its own reference computation (the float32 golden, or
// the precision's emulation) with no truth and no widening: the reference-basis rows' own terms.
//
// For each (recipe, precision, against) it reports the worst observation over every output of
// every case of every bundle that runs in this binary:
//   range error   max|a − r| / max|r|          (the atol_range term's unit)
//   step error    max|a − r| / output scale    (the atol_qsteps term's unit; where recorded)
//   1 − cosine, SQNR (dB), and the worst ratio of |a − r| to the resolved (widened) bound
// with how many outputs, cases and models it rests on, the table's term, whether the table
// covers it by the margin M (default 4, the margin the table itself was set with):
//   covered ⇔ M × worst ratio ≤ 1   (the elementwise bound as judged, rtol and widening included,
//                                     has M× amplitude room; against truth that is
//                                     M·|a − t| ≤ row + kReferenceMargin·|golden − t|: the row
//                                     covers by M what the kernel adds to the golden's own error)
//           ∧ per output M² × (1 − cosine) ≤ 1 − its cosine floor as judged
//           ∧ per output SQNR − 20·log10(M) ≥ its SQNR floor as judged (where it has one)
//           ∧ no output failed a non-numeric rule (NaN/inf mismatch, constant output)
// and the term M× the observation suggests (what to paste into the table): against truth, the
// atol_range term is M·|a − t| − kReferenceMargin·|golden − t| over max|t| (what the row itself
// must cover); cosine and SQNR are suggested from the raw observation against truth, before the
// widening (conservative). A bound with a target term (Bound::target: e.g.
// int8-static-per-channel, held to the int8-dynamic figures) is checked with M = 1: its non-xfail
// observations must lie within it.
// Cells covered by DIR/xfail.json (runtime records, docs/xfail.md) are reported separately and
// excluded from the worst figures and the coverage verdict.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/gate/gate.h"

namespace etproof {

// The default margin: 4× in error amplitude (16× in 1 − cosine and in noise power, 12.04 dB of
// SQNR) — the margin every measured entry of the table was set with, so a re-measurement on the
// same machine class reproduces it, and a run-to-run or photo-to-photo swing of up to 4× in the
// worst error does not flip the verdict.
inline constexpr double kDefaultMargin = 4.0;

struct ToleranceOptions {
  double margin = kDefaultMargin;
  BoundOverride caller;  // empty: each bundle's derived bound (the table)
  size_t jobs = 1;       // bundles replayed at once (threads); the report does not depend on it
  bool own_reference = false;  // true: each column against its own reference computation, no
                               // truth (the reference-basis rows' terms); false: as judged
};

// One output of one golden case of one bundle, judged by the gate.
struct OutputObservation {
  std::string dir;
  std::string bundle;
  std::string model;
  std::string backend;
  std::string recipe;
  std::string precision;
  std::string case_id;
  std::string against;              // "golden", "float64" (truth) or an emulation's name
  Bound bound;                      // the rule (derived or caller-supplied) it was judged by,
                                    // before any widening (the report's floors are as judged)
  TensorReport report;              // the gate's report, with the bound as resolved
  bool xfail = false;               // covered by a runtime record in DIR/xfail.json
  std::string xfail_reason;
};

// The worst observation per (recipe, precision, against), xfail outputs excluded.
struct GroupObservation {
  std::string recipe;
  std::string precision;
  std::string against;              // what its outputs were measured against
  bool widened = false;             // its bounds were widened by a reference's error (truth)
  size_t outputs = 0, cases = 0, models = 0, bundles = 0;
  size_t xfail_outputs = 0;         // reported separately, not in the figures below
  size_t inconclusive_outputs = 0;  // references that disagree or no bound (references.h,
                                    // applied_bound): not a measurement of the backend, counted
                                    // here and left out of the figures below
  std::optional<Bound> bound;       // the table's rule (or the caller's); nullopt: none known
  std::string bound_error;          // why no bound is known, when none is
  double worst_range_error = 0;     // max|a−r|/max|r|
  std::string worst_range_at;       // bundle/case/output
  std::optional<double> worst_qstep_error;  // where any output recorded a scale
  std::string worst_qstep_at;
  double worst_one_minus_cosine = 0;
  std::string worst_cosine_at;
  double worst_sqnr_db = std::numeric_limits<double>::infinity();
  std::string worst_sqnr_at;
  double worst_ratio = 0;           // worst |a−r| / resolved bound (rtol included)
  std::string worst_ratio_at;
  size_t failed_outputs = 0;        // outputs the gate failed (non-xfail)
  bool covered = false;             // the table covers the observation by the margin
  std::vector<std::string> not_covered;  // each reason it does not
  // What M× the observation suggests, in the table's terms (rounded outwards to 2 significant
  // digits; SQNR down to 0.1 dB).
  double suggest_atol_range = 0;
  std::optional<double> suggest_atol_qsteps;
  double suggest_min_cosine = 1;
  std::optional<double> suggest_min_sqnr_db;  // nullopt: every SQNR was +inf (exact)
};

// A bundle that was found but not measured, with why (not linked here, load failed, …).
struct SkippedBundle {
  std::string dir;
  std::string bundle;
  std::string backend;
  std::string recipe;
  std::string reason;
};

struct ToleranceReport {
  std::vector<std::string> dirs;
  double margin = kDefaultMargin;
  std::string caller_bound;         // the caller's bound flags; empty: derived (the table)
  bool own_reference = false;       // ToleranceOptions::own_reference
  std::vector<OutputObservation> outputs;
  std::vector<GroupObservation> groups;
  std::vector<SkippedBundle> skipped;
  // 0: every (recipe, precision) observed is covered by its bound with the margin; 1: some is
  // not (or nothing was measured). --check semantics: the table is stale when this is 1.
  int exit_code() const;
};

// Runs every golden case of every bundle under each dir (find_bundles) that this binary can run.
// Throws Error{kIo} when a dir does not exist, Error{kXfailInvalid} for a malformed xfail.json;
// a bundle that cannot be opened, loaded or run is listed in `skipped`, never stops the others.
[[nodiscard]] ToleranceReport measure_tolerances(const std::vector<std::filesystem::path>& dirs,
                                   const ToleranceOptions& options = {});

// JUnit XML: etproof/junit.h (the evidence library).

}  // namespace etproof
