// etproof/render_bench.cpp — what `etproof bench` prints (etproof/render/bench.h).
#include "etproof/render/bench.h"
#include "etproof/render/formats.h"

namespace etproof {
namespace {

// Under emulation the times are QEMU's: comparable between profiles of one emulator at most.
// The note's line, "" on this machine.
std::string emulated_note(const BenchPrintout& p) {
  if (!p.machine) return "";
  return "on " + p.emulated_as + ", emulated (" + p.machine->value("emulator", std::string()) + ", " +
         p.machine->value("cpu", std::string()) + "): QEMU's times, not a device's\n";
}

std::string text_printout(const BenchPrintout& p) { return emulated_note(p) + to_text(p.reports); }

std::string markdown_printout(const BenchPrintout& p) {
  const std::string note = emulated_note(p);
  return (note.empty() ? std::string() : "_" + note.substr(0, note.size() - 1) + "_\n\n") + to_markdown(p.reports);
}

std::string json_printout(const BenchPrintout& p) {
  nlohmann::json doc = to_json(p.reports);
  doc["machine"] = p.machine ? *p.machine : nlohmann::json(nullptr);
  return json_report(doc);
}

constexpr Renderer<BenchPrintout> kBenchRenderers[] = {
    {"text", text_printout, "one line per (bundle, method): load, latency, throughput, memory, threads"},
    {"json", json_printout, "every measurement in milliseconds and MiB, and the machine, for tools"},
    {"markdown", markdown_printout, "the same lines as a table"},
};

}  // namespace

Renderers<BenchPrintout> bench_renderers() { return kBenchRenderers; }

}  // namespace etproof
