// etproof/error.cpp — the one error type (etproof/error.h).
#include "etproof/core/error.h"

#include <utility>

namespace etproof {
namespace {

std::string compose_what(const std::string& cause, const std::string& remedy) {
  if (remedy.empty()) return cause;
  return cause + " (remedy: " + remedy + ")";
}

}  // namespace

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kIo: return "io";
    case ErrorKind::kManifestInvalid: return "manifest-invalid";
    case ErrorKind::kArtifactMismatch: return "artifact-mismatch";
    case ErrorKind::kBackendNotLinked: return "backend-not-linked";
    case ErrorKind::kBackendUnavailable: return "backend-unavailable";
    case ErrorKind::kCapabilityUnavailable: return "capability-unavailable";
    case ErrorKind::kDtypeMismatch: return "dtype-mismatch";
    case ErrorKind::kDtypeUnsupported: return "dtype-unsupported";
    case ErrorKind::kShapeMismatch: return "shape-mismatch";
    case ErrorKind::kKernelMissing: return "kernel-missing";
    case ErrorKind::kLoadFailed: return "load-failed";
    case ErrorKind::kRunFailed: return "run-failed";
    case ErrorKind::kNpyInvalid: return "npy-invalid";
    case ErrorKind::kInvalidArgument: return "invalid-argument";
    case ErrorKind::kXfailInvalid: return "xfail-invalid";
    case ErrorKind::kLedgerInvalid: return "ledger-invalid";
    case ErrorKind::kGoldenInvalid: return "golden-invalid";
    case ErrorKind::kOutOfMemory: return "out-of-memory";
    case ErrorKind::kCrashed: return "crashed";
    case ErrorKind::kTargetMismatch: return "target-mismatch";
    case ErrorKind::kOutputShapeMismatch: return "output-shape-mismatch";
  }
  return "unknown";
}

std::optional<ErrorKind> error_kind_from_string(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(ErrorKind::kOutputShapeMismatch); ++i)
    if (to_string(static_cast<ErrorKind>(i)) == s) return static_cast<ErrorKind>(i);
  return std::nullopt;
}

Error out_of_memory_error(const std::string& what) {
  return Error(ErrorKind::kOutOfMemory, "out of memory " + what + " (an allocation failed: std::bad_alloc)",
               "free memory or raise the process's memory limit (ulimit -v) and retry; where an "
               "input or a bundle's file is very large, check that it is the one you meant");
}

Error::Error(ErrorKind kind, std::string cause, std::string remedy,
             std::optional<uint32_t> et_error)
    : std::runtime_error(compose_what(cause, remedy)),
      kind_(kind),
      cause_(std::move(cause)),
      remedy_(std::move(remedy)),
      et_error_(et_error) {}

}  // namespace etproof
