// replay/case_tensors.cpp — one golden case's tensors, read and checked (replay/case_tensors.h).
#include "replay/case_tensors.h"

#include <cmath>

#include "core/common.h"

namespace etproof::detail {

namespace {

bool is_floating(DType d) { return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kFloat64; }

bool any_finite(const HostTensor& t) {
  for (size_t i = 0; i < t.numel(); ++i)
    if (std::isfinite(t.value_as_double(i))) return true;
  return false;
}

// A golden that certifies nothing (the export half's check_goldens_certify, at replay: a bundle
// edited or written by another tool): every floating input (there is one) entirely non-finite, or
// a non-empty floating output whose golden has no finite value. NaN matches NaN in the gate and
// cosine and SQNR skip non-finite values, so a program emitting only NaN would agree with it.
void check_certifies(const std::string& label, const std::map<std::string, HostTensor>& inputs,
                     const std::map<std::string, HostTensor>& reference) {
  constexpr const char* kRemedy =
      "re-export the bundle with golden inputs whose values are finite; where the model's own output on "
      "that input is all NaN (an overflow or 0/0), fix the model or pick another input";
  std::vector<std::string> floats;
  bool all_non_finite = true;
  for (const auto& [name, t] : inputs)
    if (is_floating(t.dtype)) {
      floats.push_back(name);
      all_non_finite = all_non_finite && t.numel() > 0 && !any_finite(t);
    }
  if (!floats.empty() && all_non_finite)
    throw Error(ErrorKind::kGoldenInvalid,
                "golden case '" + label + "': every floating input (" + join(floats) +
                    ") is entirely NaN or infinite, so the case certifies nothing",
                kRemedy);
  for (const auto& [name, t] : reference)
    if (is_floating(t.dtype) && t.numel() > 0 && !any_finite(t))
      throw Error(ErrorKind::kGoldenInvalid,
                  "golden case '" + label + "': output '" + name + "' has no finite value in its golden (" +
                      std::to_string(t.numel()) + " elements, all NaN or infinite), so any program emitting NaN "
                      "would agree with it",
                  kRemedy);
}

}  // namespace

CaseTensors read_case(const Bundle& b, const GoldenCase& g, const std::string& label, const JudgePlan& plan,
                      bool allow_edited) {
  CaseTensors t;
  const GoldenCheck check = allow_edited ? GoldenCheck::kAllowEdited : GoldenCheck::kHashes;
  if (allow_edited) t.edited = golden_file_problems(b, g);
  t.inputs = read_golden_inputs(b, g, check);
  t.reference = read_golden_outputs(b, g, check);
  check_certifies(label, t.inputs, t.reference);
  for (const std::string& name : {plan.against, plan.widen_by, plan.cost_reference, plan.golden_truth})
    if (!name.empty() && name != "golden" && !t.refs.count(name))
      t.refs[name] = read_golden_reference(b, g, name);
  return t;
}

}  // namespace etproof::detail
