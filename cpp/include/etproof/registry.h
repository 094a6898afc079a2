// etproof/registry.h — the runtime half of `etproof backends`: what this binary can run.
//
// Read from ExecuTorch's own backend registry (runtime/backend/interface.h:
// get_num_registered_backends / get_backend_name / get_backend_class / is_available), never
// from compile-time flags. A backend will load only when it is registered AND available.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace etproof {

struct RuntimeBackend {
  std::string id;          // ExecuTorch backend id, e.g. "XnnpackBackend"
  bool registered = false;
  bool available = false;  // BackendInterface::is_available() on this machine
};

// Every backend registered in this process's ExecuTorch registry, in registry order.
std::vector<RuntimeBackend> registered_backends();

// The entry for `id`, or nullopt when the id is not registered in this binary.
std::optional<RuntimeBackend> find_backend(const std::string& id);

// The ExecuTorch backend id(s) an etproof export key maps to ("xnnpack" -> {"XnnpackBackend"};
// "portable" -> {}). Unknown keys give nullopt. (Issue 3 moves this into the backend table.)
std::optional<std::vector<std::string>> runtime_ids_for_backend(const std::string& backend_key);

}  // namespace etproof
