#include "etproof/runtime/runtime_log.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <executorch/runtime/platform/platform.h>

namespace etproof {

struct RuntimeLogSink {
  // The innermost capture alive on this thread (ExecuTorch logs on the calling thread).
  static RuntimeLogCapture*& active() {
    thread_local RuntimeLogCapture* a = nullptr;
    return a;
  }
  static bool capture(const char* message, size_t length) {
    RuntimeLogCapture* c = active();
    if (c == nullptr) return false;
    c->lines_.emplace_back(message, length);
    return true;
  }
};

namespace {

bool verbose() {
  const char* v = std::getenv("ETPROOF_LOG");
  if (v == nullptr) return false;
  std::string_view s(v);
  return s == "info" || s == "debug";
}

void emit(et_timestamp_t /*timestamp*/, et_pal_log_level_t level, const char* filename,
          const char* /*function*/, size_t line, const char* message, size_t length) {
  static const bool kVerbose = verbose();
  if (!kVerbose && level != kError && level != kFatal) return;
  if ((level == kError || level == kFatal) && RuntimeLogSink::capture(message, length)) return;
  std::fprintf(stderr, "%c executorch:%s:%zu] %.*s\n", static_cast<char>(level), filename, line,
               static_cast<int>(length), message);
}

}  // namespace

bool install_runtime_log_filter() {
  static const bool installed = executorch::runtime::register_pal(
      executorch::runtime::PalImpl::create(emit, __FILE__));
  return installed;
}

RuntimeLogCapture::RuntimeLogCapture() {
  install_runtime_log_filter();
  outer_ = RuntimeLogSink::active();
  RuntimeLogSink::active() = this;
}

RuntimeLogCapture::~RuntimeLogCapture() {
  if (RuntimeLogSink::active() == this) RuntimeLogSink::active() = outer_;
}

}  // namespace etproof
