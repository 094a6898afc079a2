// etproof/backends_report.cpp — the runtime half of `etproof backends`, probed.
#include "etproof/replay/backends_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/export_half.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/gate/gate.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/replay.h"
#include "core/common.h"

namespace etproof {
namespace fs = std::filesystem;

namespace {

using detail::error_line;
using detail::join;

std::string num(double v) {
  std::ostringstream os;
  os << std::setprecision(3) << v;
  return os.str();
}

}  // namespace

RuntimeProbe probe_runtime(const std::string& id, const fs::path& dir) {
  RuntimeProbe p;
  const std::string what = id.empty() ? "portable (no delegate)" : id;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) {
    p.status = "no-bundle";
    p.detail = "probe bundle directory " + (dir.empty() ? std::string("not given") : dir.string() + " is absent") +
               " (export it: " + export_half_command("test-bundles") + " --out DIR)";
    return p;
  }
  // Candidates: programs exported for exactly this id; fp32 first, then the smallest program.
  struct Cand { fs::path path; bool fp32; uint64_t bytes; std::string name; };
  std::vector<Cand> cands;
  for (const fs::path& b : find_bundles(dir)) {
    try {
      fs::path manifest;
      for (const auto& f : fs::directory_iterator(b))
        if (f.path().string().ends_with(".etproof.json")) manifest = f.path();
      const Manifest m = read_manifest(manifest);
      const bool match = id.empty() ? (m.backend == "portable" && m.delegates.empty())
                                    : (m.delegates == std::vector<std::string>{id});
      if (match) cands.push_back({b, m.recipe == "fp32", m.artifact.bytes, m.name});
    } catch (const std::exception&) {
      // an unreadable bundle is not a probe candidate; the matrix reports it
    }
  }
  if (cands.empty()) {
    p.status = "no-bundle";
    p.detail = "no bundle in " + dir.string() + " delegates to " + what +
               " alone (export one for it into that directory)";
    return p;
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    if (a.fp32 != b.fp32) return a.fp32;
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    return a.name < b.name;
  });
  const Cand& c = cands.front();
  p.bundle = c.name;
  const ParityReport r = replay(c.path);
  p.outcome = r.refused ? *r.refused : r.passed ? Status::kAgreed : Status::kDrifted;
  for (const CaseReport& cs : r.cases)  // a case that could not be judged says why
    if (!r.refused && !is_judged(cs.status) && !r.passed) p.outcome = cs.status;
  p.status = std::string(to_string(*p.outcome));
  p.model = r.model, p.recipe = r.recipe, p.precision = r.precision;
  p.bundle_sha256 = r.bundle_sha256;
  p.bundle_created_utc = r.bundle_created_utc;
  p.bundle_toolchain = r.bundle_toolchain;
  if (r.refused) {
    p.detail = r.error ? error_line(*r.error) : p.status;
    return p;
  }
  double max_abs = 0, min_sqnr = std::numeric_limits<double>::infinity();
  size_t outputs = 0;
  std::string failure;
  for (const auto& cs : r.cases) {
    if (!is_judged(cs.status) && failure.empty()) failure = cs.case_id + ": " + cs.detail;
    for (const auto& t : cs.outputs) {
      ++outputs;
      max_abs = std::max(max_abs, t.max_abs_error);
      if (!t.sqnr_skipped) min_sqnr = std::min(min_sqnr, t.sqnr_db);
      if (!t.passed && failure.empty()) failure = cs.case_id + "/" + t.output + ": " + t.failure;
    }
  }
  p.cases = r.cases.size();
  if (outputs) {
    p.max_abs_error = max_abs;
    p.min_sqnr_db = min_sqnr;
  }
  p.bound = r.bound;
  p.detail = std::to_string(r.cases.size()) + " golden case(s), " + std::to_string(outputs) +
             " output(s) ran through " + (r.delegates.empty() ? "portable kernels" : join(r.delegates)) +
             "; max |err| " + num(max_abs) + ", min SQNR " +
             (std::isinf(min_sqnr) ? std::string("inf") : num(min_sqnr)) + " dB; bound " +
             describe_bound(r.bound) + (failure.empty() ? "" : "; " + failure);
  return p;
}

RuntimeHalf runtime_half(const fs::path& probe_bundles) {
  RuntimeHalf h;
  h.environment_note = prepare_backend_environment();
  h.components = offered_components();
  h.probe_dir = probe_bundles.string();
  const bool probing = !probe_bundles.empty();

  std::vector<std::string> ids;
  for (const auto& e : backend_table().backends)
    for (const auto& id : e.runtime_ids)
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  for (const auto& b : registered_backends())
    if (std::find(ids.begin(), ids.end(), b.id) == ids.end()) ids.push_back(b.id);

  for (const auto& id : ids) {
    RuntimeIdReport r;
    r.runtime = classify_runtime_id(id);
    if (r.runtime.status != RuntimeStatus::kAvailable)
      r.probe.detail = "not run: " + std::string(to_string(r.runtime.status));
    else if (!probing)
      r.probe.detail = "not run: probes not asked for";
    else
      r.probe = probe_runtime(id, probe_bundles);
    h.ids.push_back(std::move(r));
  }

  for (const auto& e : backend_table().backends) {
    RuntimeKeyReport k;
    k.key = e.key;
    k.name = e.name;
    k.ids = e.runtime_ids;
    if (e.upstream_status == "removed") {
      k.status = RuntimeStatus::kRemovedUpstream;
      k.reason = "removed upstream" + (e.upstream_since ? " in ExecuTorch " + *e.upstream_since : "") +
                 (e.upstream_note ? " (" + *e.upstream_note + ")" : "");
      k.probe.detail = "not run: removed upstream";
    } else if (e.kind == "portable") {
      bool linked = false;
      for (const auto& c : h.components)
        if (e.wheel_component && c.name == *e.wheel_component) linked = c.linked;
      k.status = linked ? RuntimeStatus::kAvailable : RuntimeStatus::kNotLinked;
      k.reason = linked ? "no delegate: runs on the linked " + *e.wheel_component + " kernels"
                        : "the operator kernels (" + e.wheel_component.value_or("?") + ") are not linked";
      if (linked && probing) k.probe = probe_runtime("", probe_bundles);
      else k.probe.detail = linked ? "not run: probes not asked for" : "not run: not linked";
    } else if (e.runtime_ids.empty()) {
      k.status = RuntimeStatus::kNoRuntime;
      k.reason = e.kind == "operators"
                     ? "not a delegate: its programs call its own operators, which need kernels "
                       "built with " + e.build_flag.value_or("a source build") + " for " + e.hardware
                     : "registers no runtime id: " + (e.hardware.empty() ? std::string("no runtime") : e.hardware);
      k.probe.detail = "not run: no runtime id";
    } else {
      // Every id of the key must be available for the key to be; the first that is not answers.
      for (const auto& id : e.runtime_ids) {
        const RuntimeIdStatus s = classify_runtime_id(id, &e);
        const RuntimeIdReport* r = nullptr;
        for (const auto& x : h.ids)
          if (x.runtime.id == id) r = &x;
        if (k.reason.empty() || s.status != RuntimeStatus::kAvailable) {
          k.status = s.status;
          k.reason = id + ": " + s.reason;
          if (r) k.probe = r->probe;
          if (s.status != RuntimeStatus::kAvailable) break;
        }
      }
      if (k.status == RuntimeStatus::kAvailable && k.probe.status != "agreed")
        k.reason += "; unproven here: the probe did not agree (" + k.probe.status + ")";
    }
    h.keys.push_back(std::move(k));
  }
  return h;
}

}  // namespace etproof
