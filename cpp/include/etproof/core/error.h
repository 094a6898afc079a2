// etproof/core/error.h — the one error type of the runtime half.
//
// Every failure that is not a measurement is thrown as etproof::Error: a kind (stable, for
// programs), a cause (what went wrong, with the offending path/name/value) and a remedy (what the
// user should do). Where an ExecuTorch call failed, `et_error` keeps ExecuTorch's own code
// (runtime/core/error.h, e.g. 0x20 NotFound) so a reader can look it up upstream.
// Drift is never an Error: the gate returns it as a value (etproof/gate.h).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace etproof {

enum class ErrorKind {
  kIo,                     // a file could not be read or written
  kManifestInvalid,        // manifest missing, unparsable, wrong schema_version, field invalid
  kArtifactMismatch,       // .pte bytes differ from the manifest (size or SHA-256), or missing
  kBackendNotLinked,       // the program needs a delegate this binary has not linked/registered
  kBackendUnavailable,     // the program needs a delegate that is registered but unavailable here
  kCapabilityUnavailable,  // the bundle needs something else this build lacks
  kDtypeMismatch,          // a tensor's dtype differs from what the manifest says
  kDtypeUnsupported,       // a dtype etproof or the runtime cannot carry
  kShapeMismatch,          // a tensor's shape differs from what the manifest says
  kKernelMissing,          // the program calls an operator this binary registers no kernel for
  kLoadFailed,             // ExecuTorch refused to load the program or method
  kRunFailed,              // ExecuTorch failed while executing
  kNpyInvalid,             // a .npy file is malformed or truncated
  kInvalidArgument,        // the caller asked for something that does not exist
  kXfailInvalid,           // an expected-failure file (DIR/xfail.json) does not follow docs/xfail.md
  kLedgerInvalid,          // an evidence ledger (JSON lines) has a line that is not a valid record
  kGoldenInvalid,          // a golden case that certifies nothing (no finite reference value, or
                           // every floating input non-finite)
  kOutOfMemory,            // an allocation failed (std::bad_alloc): not a bug, nor bad input as such
  kCrashed,                // the worker process running the program died (a signal, an abort, a
                           // memory or time limit: etproof/isolation.h); etproof itself went on
  kTargetMismatch,         // the delegate's artifact was compiled for another target than this
                           // machine (Manifest::target; etproof/targets.h): OpenVINO's CPU blob
                           // for another OpenVINO version or ISA class
  kOutputShapeMismatch,    // the program ran and returned an output of another shape than the
                           // manifest (and the program's own method metadata, checked at load)
                           // declares: the backend computed a wrong shape (a drift of shape)
};

// Stable lower-case name of a kind ("manifest-invalid", "artifact-mismatch", …) used in JSON.
std::string_view to_string(ErrorKind kind);
// The inverse of to_string; nullopt for any other text.
std::optional<ErrorKind> error_kind_from_string(std::string_view s);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string cause, std::string remedy,
        std::optional<uint32_t> et_error = std::nullopt);

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& cause() const noexcept { return cause_; }
  const std::string& remedy() const noexcept { return remedy_; }
  // ExecuTorch's error code when the failure came from an ExecuTorch call.
  std::optional<uint32_t> et_error() const noexcept { return et_error_; }

 private:
  ErrorKind kind_;
  std::string cause_;
  std::string remedy_;
  std::optional<uint32_t> et_error_;
};

// What a failed allocation (std::bad_alloc) becomes where it is caught (the CLI's main, the
// replay of one bundle in replay_all): Error{kOutOfMemory} "out of memory WHAT (an allocation
// failed: std::bad_alloc)", `what` saying what was being done ("replaying DIR/NAME"), with the remedy.
Error out_of_memory_error(const std::string& what);

}  // namespace etproof
