// The backends with quirks (etproof/runtime/backend_quirks.h): one line per module.
#include "etproof/runtime/backend_quirks.h"

namespace etproof {

extern const BackendQuirks kOpenvinoQuirks;  // backend_openvino.cpp

const std::vector<const BackendQuirks*>& all_backend_quirks() {
  static const std::vector<const BackendQuirks*> modules{&kOpenvinoQuirks};
  return modules;
}

namespace {
template <typename Field>
const BackendQuirks* find(std::string_view value, Field field) {
  if (value.empty()) return nullptr;
  for (const BackendQuirks* q : all_backend_quirks())
    if (q->*field == value) return q;
  return nullptr;
}
}  // namespace

const BackendQuirks* quirks_for_key(std::string_view key) { return find(key, &BackendQuirks::key); }
const BackendQuirks* quirks_for_delegate(std::string_view id) { return find(id, &BackendQuirks::delegate_id); }
const BackendQuirks* quirks_for_target(std::string_view kind) { return find(kind, &BackendQuirks::target_kind); }

}  // namespace etproof
