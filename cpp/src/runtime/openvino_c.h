// openvino_c.h — OpenVINO's C API as etproof asks it things (internal to cpp/src): the library
// the OpenVINO delegate loads (OPENVINO_LIB_PATH, libopenvino_c), opened with dlopen, and an
// ov_core on it. Caller: backend_openvino.cpp (the CPU plugin's INFERENCE_PRECISION_HINT and
// the runtime requirements it compiles for).
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace etproof::detail {

// An ov_core_t of the OpenVINO C library at OPENVINO_LIB_PATH (dlopen RTLD_NOW | RTLD_LOCAL; the
// handle is kept: the delegate loads the same library), freed with the object. `core` is null,
// with `why` set, where the variable is unset, the library does not load, it lacks
// ov_core_create/ov_core_free, or ov_core_create fails. sym() resolves another C API function
// (nullptr when absent).
class OpenvinoCore {
 public:
  OpenvinoCore();
  ~OpenvinoCore();
  OpenvinoCore(const OpenvinoCore&) = delete;
  OpenvinoCore& operator=(const OpenvinoCore&) = delete;
  void* core = nullptr;
  std::string why;
  std::string library;  // the path opened
  void* sym(const char* name) const;

 private:
  void* handle_ = nullptr;
};

// One question put to OpenVINO once per process (a caller keeps it static): the first get() opens
// an OpenvinoCore and calls `ask` with it, which returns the answer or leaves it unset with `why`
// set; every call returns that answer, with why_not set to the reason where there is none.
class OpenvinoAnswer {
 public:
  using Ask = std::function<std::optional<std::string>(OpenvinoCore& ov, std::string& why)>;
  std::optional<std::string> get(const Ask& ask, std::string& why_not) {
    std::call_once(once_, [&] {
      OpenvinoCore ov;
      if (!ov.core)
        why_ = ov.why;
      else
        answer_ = ask(ov, why_);
    });
    why_not = why_;
    return answer_;
  }

 private:
  std::once_flag once_;
  std::optional<std::string> answer_;
  std::string why_;
};

}  // namespace etproof::detail
