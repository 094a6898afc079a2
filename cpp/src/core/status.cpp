// etproof/status.cpp — the one status vocabulary (etproof/status.h).
#include "etproof/core/status.h"


#include "etproof/core/error.h"

namespace etproof {
std::string_view to_string(Status s) {
  switch (s) {
    case Status::kAgreed: return "agreed";
    case Status::kAgreedUndelegated: return "agreed-undelegated";
    case Status::kDrifted: return "drifted";
    case Status::kOverBudget: return "over-budget";
    case Status::kExportRefused: return "export-refused";
    case Status::kExportFailed: return "export-failed";
    case Status::kNotLinked: return "not-linked";
    case Status::kUnavailable: return "unavailable";
    case Status::kLoadFailed: return "load-failed";
    case Status::kRunFailed: return "run-failed";
    case Status::kBundleInvalid: return "bundle-invalid";
    case Status::kNoBound: return "no-bound";
    case Status::kXfail: return "xfail";
    case Status::kXpass: return "xpass";
    case Status::kCrashed: return "crashed";
    case Status::kInconclusive: return "inconclusive";
    case Status::kNotRunnableHere: return "not-runnable-here";
    case Status::kNondeterministic: return "nondeterministic";
  }
  return "unknown";
}

std::optional<Status> status_from_string(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(Status::kNondeterministic); ++i)
    if (to_string(static_cast<Status>(i)) == s) return static_cast<Status>(i);
  return std::nullopt;
}

bool fails_run(Status s) {
  switch (s) {
    case Status::kDrifted:
    case Status::kOverBudget:
    case Status::kBundleInvalid:
    case Status::kLoadFailed:
    case Status::kRunFailed:
    case Status::kExportFailed:
    case Status::kNoBound:
    case Status::kXpass:
    case Status::kCrashed:
    case Status::kInconclusive:
    case Status::kNondeterministic:
      return true;
    case Status::kAgreed:
    case Status::kAgreedUndelegated:
    case Status::kXfail:
    case Status::kExportRefused:
    case Status::kNotLinked:
    case Status::kUnavailable:
    case Status::kNotRunnableHere:
      return false;
  }
  return true;
}

bool is_judged(Status s) {
  return s == Status::kAgreed || s == Status::kAgreedUndelegated || s == Status::kDrifted ||
         s == Status::kOverBudget || s == Status::kXfail || s == Status::kXpass;
}

bool is_agreement(Status s) { return s == Status::kAgreed || s == Status::kAgreedUndelegated; }

Status status_of(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::kBackendNotLinked: return Status::kNotLinked;
    case ErrorKind::kBackendUnavailable: return Status::kUnavailable;
    case ErrorKind::kKernelMissing:  // the method cannot load here: as ExecuTorch's OperatorMissing was
    case ErrorKind::kLoadFailed: return Status::kLoadFailed;
    case ErrorKind::kRunFailed:
    case ErrorKind::kOutOfMemory:  // the column could not be run here, as when ExecuTorch fails
      return Status::kRunFailed;
    case ErrorKind::kCapabilityUnavailable: return Status::kNoBound;
    case ErrorKind::kCrashed: return Status::kCrashed;
    case ErrorKind::kTargetMismatch: return Status::kNotRunnableHere;
    case ErrorKind::kOutputShapeMismatch: return Status::kDrifted;  // the program ran: a drift of shape
    case ErrorKind::kIo:
    case ErrorKind::kManifestInvalid:
    case ErrorKind::kArtifactMismatch:
    case ErrorKind::kDtypeMismatch:
    case ErrorKind::kDtypeUnsupported:
    case ErrorKind::kShapeMismatch:
    case ErrorKind::kNpyInvalid:
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kXfailInvalid:
    case ErrorKind::kLedgerInvalid:
    case ErrorKind::kGoldenInvalid:
      return Status::kBundleInvalid;
  }
  return Status::kBundleInvalid;
}

std::string count_text(const std::map<Status, size_t>& count) {
  std::string out;
  for (const auto& [s, n] : count) {
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + std::string(to_string(s));
  }
  return out;
}

}  // namespace etproof
