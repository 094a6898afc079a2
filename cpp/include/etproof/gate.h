// etproof/gate.h — the gate: replay goldens, measure drift against a derived bound (DESIGN.md §5).
//
// Per element: |actual − reference| ≤ atol + rtol·|reference| (numpy.allclose's form).
// Per tensor:   cosine(actual, reference) ≥ min_cosine, and
//               SQNR = 10·log10(Σr² / Σ(a−r)²) ≥ min_sqnr_db (skipped when the reference is all
//               zeros; the other rules still apply). Cosine cannot see scale (a·0.5 has cosine 1);
//               SQNR can.
// NaN matches only NaN (at the same index); ±inf only the same inf. An output that is constant
// (all elements equal, all zeros included) where the reference is not never passes.
// Drift is a measurement, returned in a report, never thrown.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/bundle.h"
#include "etproof/npy.h"

namespace etproof {

struct Bound {
  double atol = 0;        // absolute term, in the output's units
  double rtol = 0;        // relative term, fraction of |reference|
  double min_cosine = 1;  // minimum cosine similarity per tensor
  // Minimum SQNR per tensor, in dB. −inf (the default): no SQNR rule.
  double min_sqnr_db = -std::numeric_limits<double>::infinity();
  std::string source;     // where the numbers come from (measurement, with the command)
  bool caller_supplied = false;
};

// The bound a manifest's recipe and precision (and compute unit, when recorded) imply, from the
// one table in gate.cpp. Recipe and precision compound: the atol and rtol terms add, the cosine
// floors multiply, and the SQNR floors combine as noise powers add:
//   floor = −10·log10(Σ 10^(−floor_i/10))   (a term with no floor, +inf, contributes 0; when no
//                                             term has a floor the bound has no SQNR rule)
// Throws Error{kCapabilityUnavailable} when the table has no entry, naming the pair and the
// remedy (pass a bound explicitly).
Bound derive_bound(const std::string& recipe, const std::string& precision,
                   const std::optional<std::string>& compute_unit = std::nullopt);

// Combines SQNR floors (dB) as derive_bound does: noise powers add. +inf terms contribute 0;
// all +inf (or none) gives +inf.
double combine_sqnr_floors(const std::vector<double>& floors_db);

// A caller's bound, field by field (the CLI's --atol/--rtol/--min-cosine/--min-sqnr). Fields left
// unset come from the derived bound.
struct BoundOverride {
  std::optional<double> atol, rtol, min_cosine, min_sqnr_db;
  bool empty() const { return !atol && !rtol && !min_cosine && !min_sqnr_db; }
};

// The bound a caller's override gives for this recipe/precision: the derived bound with the given
// fields replaced, caller_supplied = true, and a source naming what was given. Where the table
// has no entry, atol, rtol and min_cosine must all be given (min_sqnr_db unset: no SQNR rule);
// otherwise throws Error{kInvalidArgument} naming the missing fields.
Bound override_bound(const BoundOverride& o, const std::string& recipe,
                     const std::string& precision,
                     const std::optional<std::string>& compute_unit = std::nullopt);

// One row of that table, read-only: a term along one axis ("recipe", "precision",
// "compute_unit") with the measurement it came from. derive_bound sums these.
struct BoundTerm {
  std::string axis;
  std::string key;
  double atol = 0;
  double rtol = 0;
  double min_cosine = 1;
  double min_sqnr_db = std::numeric_limits<double>::infinity();  // +inf: adds no noise
  std::string source;
};
std::vector<BoundTerm> bound_table();

struct TensorReport {
  std::string output;
  bool passed = false;
  std::string failure;                 // empty when passed; else the rule that failed
  size_t numel = 0;
  std::vector<int64_t> worst_index;    // multi-index of the element with the largest bound ratio
  double worst_actual = 0;
  double worst_reference = 0;
  double max_abs_error = 0;
  double worst_ratio = 0;              // max |a−r| / (atol + rtol|r|); ≤ 1 within the bound
  double fraction_over = 0;            // fraction of elements outside the bound, 0..1
  double cosine = 0;
  double sqnr_db = 0;                  // 10·log10(Σr² / Σ(a−r)²); +inf when identical
  bool sqnr_skipped = false;           // reference all zeros: the SQNR rule did not apply
  double headroom = 0;                 // 1 − worst_ratio (negative when over)
};

// Compares one output. Shapes and dtypes must match (Error{kShapeMismatch}/{kDtypeMismatch}).
TensorReport compare_tensor(const std::string& output, const HostTensor& actual,
                            const HostTensor& reference, const Bound& bound);

struct CaseReport {
  std::string case_id;
  std::string data;  // "real" | "synthetic"
  bool passed = false;
  std::vector<TensorReport> outputs;
};

struct ParityReport {
  std::string bundle;
  std::string backend;
  std::string recipe;
  std::string precision;
  std::vector<std::string> delegates;  // read from the program at load
  Bound bound;
  std::vector<CaseReport> cases;
  bool passed = false;                 // every case passed and at least one case ran
};

// Loads the bundle, runs every golden case and gates each output. `bound` overrides the derived
// one (and the report says so). Load/run failures propagate as Error.
ParityReport run_parity(const Bundle& bundle, const std::optional<Bound>& bound = std::nullopt);
// Same, on an already loaded model (the matrix reuses one load per column).
ParityReport run_parity(const Bundle& bundle, LoadedModel& model,
                        const std::optional<Bound>& bound = std::nullopt);

// Text report. When it drifted under a derived bound, it ends with a hint: pass a caller bound.
std::string to_text(const ParityReport& r);
// "atol A + rtol R·|ref|, cosine ≥ C, SQNR ≥ S dB" (or "no SQNR floor").
std::string describe_bound(const Bound& b);
nlohmann::json to_json(const ParityReport& r);
nlohmann::json to_json(const Bound& b);

}  // namespace etproof
