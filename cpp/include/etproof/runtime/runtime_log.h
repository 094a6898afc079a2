// etproof/runtime/runtime_log.h — how much of ExecuTorch's own log reaches stderr.
//
// ExecuTorch logs through its platform layer (runtime/platform/platform.h). Its default sink prints
// every Info line, e.g. the XNNPACK delegate's CPU probing ("cpuinfo_utils.cpp … Reading file
// /sys/devices/soc0/image_version") on each load — noise in a report. This installs a sink, with
// ExecuTorch's own register_pal(), that keeps Error and Fatal lines (they carry the details behind
// an error code) and drops Debug/Info unless the environment says otherwise:
//   ETPROOF_LOG=info   (or debug) prints everything, in ExecuTorch's format.
#pragma once

#include <string>
#include <vector>

namespace etproof {

// Installs the filter for this process. Call once, before the first ExecuTorch call.
// Returns false when ExecuTorch refused the registration (its default sink then stays).
// Idempotent: later calls return the first call's answer.
bool install_runtime_log_filter();

// While one is alive, ExecuTorch's Error and Fatal lines logged on the thread that created it are
// collected into `lines()` instead of printed — e.g. the reason a delegate gives inside
// is_available(), or the "Missing operator" lines of a method that does not load. Per thread, so
// that bundles loaded at once (matrix --jobs) never take each other's lines; ExecuTorch logs on
// the calling thread. Nested captures on one thread: the innermost collects. Needs the filter
// installed (the constructor installs it).
class RuntimeLogCapture {
 public:
  RuntimeLogCapture();
  ~RuntimeLogCapture();
  RuntimeLogCapture(const RuntimeLogCapture&) = delete;
  RuntimeLogCapture& operator=(const RuntimeLogCapture&) = delete;
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  friend struct RuntimeLogSink;
  std::vector<std::string> lines_;
  RuntimeLogCapture* outer_ = nullptr;  // the capture this one hides on its thread, restored after
};

}  // namespace etproof
