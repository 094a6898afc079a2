// etproof/registry.cpp — what this binary can run, read from ExecuTorch's backend registry.
#include "etproof/registry.h"

#include <map>

#include <executorch/runtime/backend/interface.h>

namespace etproof {
namespace et = ::executorch::runtime;

std::vector<RuntimeBackend> registered_backends() {
  std::vector<RuntimeBackend> out;
  const size_t n = et::get_num_registered_backends();
  for (size_t i = 0; i < n; ++i) {
    auto name = et::get_backend_name(i);
    if (!name.ok() || *name == nullptr) continue;
    RuntimeBackend b;
    b.id = *name;
    b.registered = true;
    const et::BackendInterface* cls = et::get_backend_class(*name);
    b.available = cls != nullptr && cls->is_available();
    out.push_back(std::move(b));
  }
  return out;
}

std::optional<RuntimeBackend> find_backend(const std::string& id) {
  const et::BackendInterface* cls = et::get_backend_class(id.c_str());
  if (cls == nullptr) return std::nullopt;
  return RuntimeBackend{id, true, cls->is_available()};
}

std::optional<std::vector<std::string>> runtime_ids_for_backend(const std::string& backend_key) {
  // Interim: issue 3 moves these facts into the backend table that both halves read.
  static const std::map<std::string, std::vector<std::string>> kIds = {
      {"portable", {}},
      {"xnnpack", {"XnnpackBackend"}},
  };
  auto it = kIds.find(backend_key);
  if (it == kIds.end()) return std::nullopt;
  return it->second;
}

}  // namespace etproof
