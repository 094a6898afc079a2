// etproof/render/bench.h — what `etproof bench` prints, and the formats it prints it in.
// The reports' renderers (to_text, to_markdown, to_json) are the replay layer's: etproof/replay/bench.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/render/formats.h"
#include "etproof/replay/bench.h"

namespace etproof {

// The bundles measured, and the machine they were measured on.
struct BenchPrintout {
  const std::vector<BenchReport>& reports;
  // The emulated machine (emulated_machine's record: emulator, cpu, …) and the ARCH/CPU it was asked
  // as (--emulate); nullopt and "": this machine.
  std::optional<nlohmann::json> machine;
  std::string emulated_as;
};

// text and markdown: a note that the times are QEMU's when emulated, then to_text / to_markdown;
// json: to_json(reports) with "machine" (null: this machine).
[[nodiscard]] Renderers<BenchPrintout> bench_renderers();

}  // namespace etproof
