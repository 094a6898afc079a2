// etproof/runtime/targets.h — artifacts bound to a target: whether this machine can load a bundle whose
// delegate's artifact was compiled for a target (Manifest::target; docs/manifest.md "target";
// data/backends.json runtime_needs.target says which backends are target-bound and how).
//
// OpenVINO: ExecuTorch's OpenVINO delegate carries the CPU plugin's compiled blob, which opens
// with a runtime requirements block ("RR_UPCVO", a uint32 version, a uint64 length, then text such
// as "meta=1.0;ov=2026.4.1;isa=Intel AVX2"); the plugin refuses a blob whose requirements are not
// its own ("[CPU] Cannot import compiled blob: it was built for a different runtime configuration
// (OpenVINO version/isa mismatch)"). LoadedModel::load compares the manifest's requirements with
// the ones this machine's plugin writes, asked of OpenVINO itself, before loading, and refuses a
// mismatch as Error{kTargetMismatch} (status not-runnable-here) naming both.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "etproof/core/manifest.h"

namespace etproof {

inline constexpr const char* kOpenvinoCpuTarget = "openvino-cpu";

// The runtime requirements text of the first OpenVINO CPU blob header in `bytes` (a blob, or a
// .pte holding one); nullopt where there is none or it is malformed (a length past the end or
// over 4096 bytes, text that is not printable ASCII).
[[nodiscard]] std::optional<std::string> openvino_requirements_in(std::string_view bytes);

// The runtime requirements this machine's OpenVINO CPU plugin writes into a blob it compiles,
// asked of OpenVINO itself once per process: through its C API at OPENVINO_LIB_PATH, a
// one-operator model (Parameter, ReLU, Result; float32 [1]) is compiled for "CPU" and exported
// into a temporary file whose header is read. nullopt, with why_not set, where OpenVINO cannot be
// asked (no OPENVINO_LIB_PATH, the library or a C API function missing, a call failing).
[[nodiscard]] std::optional<std::string> openvino_cpu_requirements(std::string& why_not);

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

// Whether an ExecuTorch/OpenVINO load log line says the blob was compiled for another runtime
// configuration (OpenVINO's own words, above): a load failure explained this way is a target
// mismatch, not an ExecuTorch version problem.
[[nodiscard]] bool says_other_target(std::string_view line);

}  // namespace etproof
