// etproof/runtime/backend_quirks.h — what a backend does that the others do not, in one module per
// backend (cpp/src/runtime/backend_KEY.cpp; the export half's: python/etproof/export/quirks/). The
// runtime binding and the gate call these hooks and never name a backend. A backend with none
// has no module; every hook may be null (the default: nothing special).
//
// A new backend with quirks: its module defining one BackendQuirks, and a line in
// cpp/src/runtime/backend_quirks.cpp's list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etproof/core/manifest.h"

namespace etproof {

struct BackendQuirks {
  std::string_view key;          // the backend table's key ("openvino")
  std::string_view delegate_id;  // the id its delegate registers ("OpenvinoBackend")
  std::string_view display;      // how messages name it ("OpenVINO")

  // Before the delegate is asked anything: sets up what it needs in this process's environment.
  // Returns a sentence saying what it changed, or "" when nothing was needed.
  std::string (*prepare_environment)() = nullptr;
  // Appended to the delegate's own words when its is_available() says no: where it looked and
  // what to install.
  std::string (*unavailable_hint)() = nullptr;

  // Precision: the delegate's own answer to "what do you compute a float program in here"
  // (nullopt, with why_not, when it cannot be asked), the precision name that answer means
  // ("bf16" -> "bfloat16"), and how a report introduces it.
  std::optional<std::string> (*precision_hint)(std::string& why_not) = nullptr;
  std::string (*precision_of_hint)(const std::string& hint) = nullptr;
  std::string_view precision_hint_source;  // "OpenVINO's CPU plugin here compiles with INFERENCE_PRECISION_HINT"

  // Artifacts bound to a target (etproof/runtime/targets.h): the Target::kind it writes; the
  // requirements recorded in a program's bytes (nullopt: none there); this machine's (nullopt,
  // with why_not, when its runtime cannot be asked); a requirements text described for a reader;
  // whether a load log line says "compiled for another target"; a log phrase that means an import
  // failed; and where a mismatched bundle can run.
  std::string_view target_kind;
  std::string_view target_runtime;   // "OpenVINO CPU plugin": what compiles for this machine
  std::string_view target_artifact;  // "OpenVINO CPU blob": what is compiled
  std::optional<std::string> (*requirements_in)(std::string_view bytes) = nullptr;
  std::optional<std::string> (*requirements_here)(std::string& why_not) = nullptr;
  std::string (*describe_requirements)(const std::string& requirements) = nullptr;
  bool (*says_other_target)(std::string_view line) = nullptr;
  std::string_view import_failed_phrase;
  std::string (*target_remedy)(const Target& target) = nullptr;
};

// Every backend module this binary has, in a fixed order.
[[nodiscard]] const std::vector<const BackendQuirks*>& all_backend_quirks();
// The module of a backend key, a delegate id or a target kind; nullptr: no quirks.
[[nodiscard]] const BackendQuirks* quirks_for_key(std::string_view key);
[[nodiscard]] const BackendQuirks* quirks_for_delegate(std::string_view delegate_id);
[[nodiscard]] const BackendQuirks* quirks_for_target(std::string_view target_kind);

}  // namespace etproof
