// etproof/runtime/targets.h — artifacts bound to a target: whether this machine can load a bundle whose
// delegate's artifact was compiled for a target (Manifest::target; docs/manifest.md "target";
// data/backends.json runtime_needs.target says which backends are target-bound and how).
//
// Which target kinds exist and how each is read and asked is the backend's module
// (etproof/runtime/backend_quirks.h: OpenVINO's CPU blob, etproof/runtime/openvino.h).
// LoadedModel::load compares the manifest's requirements with the ones this machine's runtime
// writes, before loading, and refuses a mismatch as Error{kTargetMismatch} (status
// not-runnable-here) naming both.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "etproof/core/manifest.h"

namespace etproof {

// A bundle's target against this machine.
struct TargetCheck {
  bool checked = false;  // false: a kind this binary does not check, or the runtime could not say
  bool matches = true;   // checked: the artifact loads here as far as its target says
  std::string here;      // checked: this machine's side ("meta=1.0;ov=2026.4.1;isa=Intel AVX2")
  std::string why;       // not checked: why; a mismatch: both sides, named
};
[[nodiscard]] TargetCheck check_target(const Target& target);

// The remedy of a target mismatch: where the bundle can be run or re-exported.
[[nodiscard]] std::string target_remedy(const Target& target);

// Whether a load log line says the artifact was compiled for another target (a backend module's
// own words): a load failure explained this way is a target mismatch, not an ExecuTorch version
// problem.
[[nodiscard]] bool says_other_target(std::string_view line);

}  // namespace etproof
