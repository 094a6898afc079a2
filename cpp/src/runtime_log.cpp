#include "etproof/runtime_log.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <executorch/runtime/platform/platform.h>

namespace etproof {
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
  std::fprintf(stderr, "%c executorch:%s:%zu] %.*s\n", static_cast<char>(level), filename, line,
               static_cast<int>(length), message);
}

}  // namespace

bool install_runtime_log_filter() {
  return executorch::runtime::register_pal(
      executorch::runtime::PalImpl::create(emit, __FILE__));
}

}  // namespace etproof
