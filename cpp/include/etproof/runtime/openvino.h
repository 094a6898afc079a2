// etproof/runtime/openvino.h — OpenVINO's own facts, as its backend module reads and asks them
// (cpp/src/runtime/backend_openvino.cpp; the hooks: etproof/runtime/backend_quirks.h).
//
// ExecuTorch's OpenVINO delegate carries the CPU plugin's compiled blob, which opens with a
// runtime requirements block ("RR_UPCVO", a uint32 version, a uint64 length, then text such as
// "meta=1.0;ov=2026.4.1;isa=Intel AVX2"); the plugin refuses a blob whose requirements are not
// its own ("[CPU] Cannot import compiled blob: it was built for a different runtime configuration
// (OpenVINO version/isa mismatch)"). Its CPU plugin also decides at compile time what precision
// an fp32 program computes in (INFERENCE_PRECISION_HINT). Both are asked of the OpenVINO C
// library the delegate loads (OPENVINO_LIB_PATH).
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

// This machine's OpenVINO CPU plugin's INFERENCE_PRECISION_HINT ("f32", "bf16", …), asked once
// per process of the OpenVINO C library at OPENVINO_LIB_PATH; nullopt, with why_not, where it
// cannot be asked.
[[nodiscard]] std::optional<std::string> openvino_inference_precision(std::string& why_not);

}  // namespace etproof
