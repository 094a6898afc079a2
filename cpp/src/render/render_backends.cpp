// etproof/render_backends.cpp — the runtime half of `etproof backends` as text and JSON
// (etproof/backends_report.h), and what the command prints (etproof/render/backends.h).
#include <algorithm>
#include <iomanip>
#include <sstream>

#include "etproof/render/backends.h"
#include "etproof/render/formats.h"
#include "etproof/replay/backends_report.h"
#include "core/common.h"

namespace etproof {
using detail::join;

nlohmann::json to_json(const RuntimeProbe& p) {
  nlohmann::json j{{"status", p.status}, {"detail", p.detail}};
  j["bundle"] = p.bundle.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.bundle);
  return j;
}

nlohmann::json to_json(const RuntimeHalf& h) {
  nlohmann::json rt = nlohmann::json::array();
  for (const auto& r : h.ids) {
    const auto& s = r.runtime;
    rt.push_back({{"id", s.id}, {"keys", s.keys},
                  {"component", s.component ? nlohmann::json(*s.component) : nlohmann::json(nullptr)},
                  {"linked", s.linked}, {"registered", s.registered}, {"available", s.available},
                  {"status", std::string(to_string(s.status))}, {"reason", s.reason},
                  {"probe", to_json(r.probe)}});
  }
  nlohmann::json by_key = nlohmann::json::array();
  for (const auto& k : h.keys)
    by_key.push_back({{"backend", k.key}, {"name", k.name}, {"ids", k.ids},
                      {"status", std::string(to_string(k.status))}, {"reason", k.reason},
                      {"probe", to_json(k.probe)}});
  nlohmann::json offered = nlohmann::json::array(), linked = nlohmann::json::array();
  for (const auto& c : h.components) {
    offered.push_back(c.name);
    if (c.linked) linked.push_back(c.name);
  }
  return {{"runtime", rt}, {"runtime_by_backend", by_key},
          {"components", {{"offered", offered}, {"linked", linked}}},
          {"probe_bundles", h.probe_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.probe_dir)},
          {"environment", h.environment_note.empty() ? nlohmann::json(nullptr)
                                                     : nlohmann::json(h.environment_note)}};
}

std::string to_text(const RuntimeHalf& h) {
  std::ostringstream os;
  size_t w = 8;
  for (const auto& k : h.keys) w = std::max(w, k.key.size());
  os << "runtime half (this binary: ExecuTorch's backend registry; probes from "
     << (h.probe_dir.empty() ? std::string("nowhere: not asked") : h.probe_dir) << "):\n";
  for (const auto& k : h.keys) {
    os << "  " << std::left << std::setw(static_cast<int>(w)) << k.key << "  "
       << std::setw(22) << to_string(k.status) << "  " << k.reason;
    if (k.probe.status != "not-run")
      os << "\n  " << std::string(w, ' ') << "  probe: " << k.probe.status
         << (k.probe.bundle.empty() ? "" : " (" + k.probe.bundle + ")") << ": " << k.probe.detail;
    os << "\n";
  }
  std::vector<std::string> reg, other;
  for (const auto& r : h.ids) {
    if (r.runtime.registered)
      reg.push_back(r.runtime.id + (r.runtime.available ? "" : " (unavailable)"));
    if (r.runtime.registered && r.runtime.keys.empty()) other.push_back(r.runtime.id);
  }
  os << "  registry: " << (reg.empty() ? "no delegate registered" : join(reg)) << "\n";
  if (!other.empty()) os << "  registered but not in the backend table: " << join(other) << "\n";
  std::vector<std::string> offered, linked;
  for (const auto& c : h.components) {
    offered.push_back(c.name);
    if (c.linked) linked.push_back(c.name);
  }
  os << "  wheel components offered: " << join(offered) << "\n";
  os << "  linked into this binary:   " << (linked.empty() ? "none" : join(linked)) << "\n";
  if (!h.environment_note.empty()) os << "  note: " << h.environment_note << "\n";
  os << "  a program loads only when each of its delegates is linked, registered and available\n";
  return os.str();
}

namespace {

// What each emulated machine runs: its features and the delegates its worker registers.
std::string emulated_text(const nlohmann::json& emulated) {
  std::ostringstream os;
  for (const nlohmann::json& e : emulated) {
    const nlohmann::json& m = e.at("machine");
    std::string features, registered;
    for (const auto& f : m.at("features")) features += (features.empty() ? "" : " ") + f.get<std::string>();
    for (const auto& r : e.at("registered")) registered += (registered.empty() ? "" : ", ") + r.get<std::string>();
    os << "\nemulated " << e.at("profile").get<std::string>() << " (" << m.value("emulator", std::string())
       << ", " << m.value("cpu", std::string()) << "; features: " << features
       << "): runs portable kernels and " << (registered.empty() ? "no delegate" : registered)
       << " (matrix --emulate " << e.at("profile").get<std::string>() << ")\n";
  }
  return os.str();
}

// The export half's answer, one line per backend (status, reason), or why it did not answer.
std::string export_half_text(const BackendsPrintout& p) {
  std::ostringstream os;
  os << "\nexport half (" << p.export_python << " -m etproof probe, cached):\n";
  if (!p.export_half) {
    os << "  not answered: " << p.export_error << "\n";
    return os.str();
  }
  size_t w = 8;
  for (const auto& e : *p.export_half) w = std::max(w, e.value("backend", std::string()).size());
  for (const auto& e : *p.export_half)
    os << "  " << std::left << std::setw(static_cast<int>(w)) << e.value("backend", std::string("?")) << "  "
       << std::setw(16) << e.value("status", std::string("?")) << "  " << e.value("reason", std::string())
       << "\n";
  return os.str();
}

std::string text_printout(const BackendsPrintout& p) {
  return to_text(p.runtime) + (p.emulated ? emulated_text(*p.emulated) : std::string()) + export_half_text(p);
}

std::string json_printout(const BackendsPrintout& p) {
  nlohmann::json doc = to_json(p.runtime);
  doc["export"] = p.export_half ? *p.export_half : nlohmann::json(nullptr);
  doc["export_error"] = p.export_half ? nlohmann::json(nullptr) : nlohmann::json(p.export_error);
  if (p.emulated) doc["emulated"] = *p.emulated;
  return json_report(doc);
}

constexpr Renderer<BackendsPrintout> kBackendsRenderers[] = {
    {"text", text_printout, "per backend: what this binary runs (probed), what the export half lowers"},
    {"json", json_printout, "both halves per backend with the probes' details, for tools"},
};

}  // namespace

Renderers<BackendsPrintout> backends_renderers() { return kBackendsRenderers; }

}  // namespace etproof
