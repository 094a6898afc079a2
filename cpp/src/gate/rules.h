// Private to the gate: the rules compare_tensor applies to a floating output, each one small unit
// behind one interface (docs/design.md §5 gives each rule's argument). A rule reads the facts the
// one pass over the elements measured and answers its failure text, or nullopt when it holds or
// does not apply. compare_tensor lists every failing rule, in the order of the tables below.
//
// A new rule: a function and a row in tensor_rules() (and slice_rules() when it judges slices). A
// rule with a threshold of its own declares it in its row (RuleThreshold: name, how the table's
// terms combine, relation); the bound carries it by that name (Bound::thresholds, from
// data/bounds.json rows' `thresholds` or --threshold NAME=VALUE), and the rule records its
// measurement in TensorFacts::measured under the same name. Reports, JSON, the ledger and the
// CLI take both from there: no other file changes.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etproof/gate/gate.h"

namespace etproof::detail {

// Running sums over one slice (or the whole tensor), from the one pass over the elements.
struct SliceSums {
  double dot = 0, na = 0, nr = 0, noise = 0;  // finite pairs only: Σ a·r, Σ a², Σ r², Σ (a − r)²
  double allowance = 0;                       // Σ η_i² over the finite pairs: the noise power an
                                              // honest backend may add (η_i = bound_i / M)
  double max_err = 0, worst_ratio = 0;
  size_t nonfinite_mismatch = 0;
  size_t over = 0;                            // finite pairs outside the elementwise bound
  size_t count = 0;
  bool a_constant = true, r_constant = true;
  double a0 = 0, r0 = 0;                      // the first element of each
  double r_min = std::numeric_limits<double>::infinity();
  double r_max = -std::numeric_limits<double>::infinity();
  double r_abs_max = 0;
};

// What the whole-tensor rules read: the report's numbers (filled before the rules run), the sums
// over the tensor, the resolved bound, the elements, and what the pass found.
struct TensorFacts {
  const TensorReport& rep;
  const SliceSums& all;
  const Bound& bound;
  const std::vector<double>& actual;
  const std::vector<double>& reference;
  const std::vector<int64_t>& shape;
  size_t over = 0;             // elements whose |a − r| exceeds atol + rtol·|r| (non-finite ones too)
  size_t first_nonfinite = 0;  // the first non-finite mismatch (== numel when none)
  double worst_err = 0;        // |a − r| at rep.worst_index
  double finite_sqnr = 0;      // the SQNR over the finite pairs (dB), which the SQNR rule judges
  // Where a rule with its own threshold records the number it judged, under the threshold's name
  // (TensorReport::measured); compare_tensor copies the applied threshold beside it.
  std::map<std::string, double>& measured;
};

struct TensorRule {
  std::string_view name;
  std::optional<std::string> (*judge)(const TensorFacts&);
  // The rule's own threshold, where it has one (RuleThreshold, etproof/gate/gate.h): the rule
  // applies only where the bound carries a value of that name.
  std::optional<RuleThreshold> threshold{};
};
// non-finite, constant output, allclose, cosine, SQNR, sign flip, median error: the order failures
// are listed in.
const std::vector<TensorRule>& tensor_rules();

// What a slice rule reads: its sums, its report (numbers and relaxed floors filled), the bound and
// the bound's margin over honest noise (M, or 1: compare_tensor).
struct SliceFacts {
  const SliceSums& sums;
  const SliceReport& report;
  const Bound& bound;
  double margin = 1;
};

struct SliceRule {
  std::string_view name;
  std::optional<std::string> (*judge)(const SliceFacts&);
};
// non-finite, constant output, allclose, cosine, SQNR on one slice, in that order.
const std::vector<SliceRule>& slice_rules();

// Shared by the gate's sources: the cosine of two vectors from Σ a·r, Σ a², Σ r² (1 when both are
// zero, 0 when one is), and the SQNR in dB from Σ r² and Σ (a − r)² (inf when noise is 0).
double cosine_of(double dot, double na, double nr);
double sqnr_of(double sig, double noise);
// The multi-index of flat index `flat` in `shape`, and its text "[i, j, …]".
std::vector<int64_t> unravel(size_t flat, const std::vector<int64_t>& shape);
std::string index_to_string(const std::vector<int64_t>& idx);

}  // namespace etproof::detail
