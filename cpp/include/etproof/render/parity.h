// etproof/render/parity.h — the parity report as text and JSON, and what `etproof parity` prints.
// The render layer: formats only; the report itself and how it is made: etproof/replay/replay.h.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "etproof/render/formats.h"
#include "etproof/replay/replay.h"

namespace etproof {

// Text report. When it drifted under a derived bound, it ends with a hint: pass a caller bound.
[[nodiscard]] std::string to_text(const ParityReport& r);
[[nodiscard]] nlohmann::json to_json(const ParityReport& r);

// What `etproof parity` prints: the report, the machine it ran on, and how much of the bound the
// text shows.
struct ParityPrintout {
  const ParityReport& report;
  // The emulated machine it ran on (emulated_machine's record: emulator, cpu, …) and the ARCH/CPU
  // it was asked as (--emulate); nullopt and "": this machine.
  std::optional<nlohmann::json> machine;
  std::string emulated_as;
  bool verbose = false;  // text: the bound's source and citations after its line (JSON has them always)
};

// text: a line saying the machine was emulated (when it was), then to_text(report), with the
// bound's source when verbose; json: to_json(report) with "machine" (null: this machine).
[[nodiscard]] Renderers<ParityPrintout> parity_renderers();

}  // namespace etproof
