// etproof/runtime/registry.h — the runtime half of `etproof backends`: what this binary can run.
//
// Read from ExecuTorch's own backend registry (runtime/backend/interface.h:
// get_num_registered_backends / get_backend_name / get_backend_class / is_available), never
// from compile-time flags. A backend will load only when it is linked AND registered AND
// available, and each of the three negatives is answered separately, with its reason:
//   not-linked             the component's library is not in this process (or no wheel ships one)
//   linked-not-registered  its library is mapped, but its id is absent from the registry: the
//                          static registrar was dropped at link time
//   unavailable            registered, but is_available() says no on this machine
// Which ids belong to which export key and component comes from the backend table
// (etproof/backend_table.h); which components the wheel offered, from configure time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etproof {

struct RuntimeBackend {
  std::string id;          // ExecuTorch backend id, e.g. "XnnpackBackend"
  bool registered = false;
  bool available = false;  // BackendInterface::is_available() on this machine
  // When unavailable: what the backend said while answering (its ExecuTorch Error log lines,
  // e.g. OpenVINO's "OpenVINO runtime not found (dlopen failed: …)"); empty when it said nothing.
  std::string unavailable_detail;
};

// Every backend registered in this process's ExecuTorch registry, in registry order.
// is_available() is asked once per id per process (the answer and its log lines are kept).
std::vector<RuntimeBackend> registered_backends();

// The entry for `id`, or nullopt when the id is not registered in this binary.
std::optional<RuntimeBackend> find_backend(const std::string& id);

// Whether the delegates a program records can run in this binary, asked of the registry
// (find_backend) without loading the program: a caller refuses a bundle here before hashing or
// loading its artifact (a matrix skips Core ML and Vulkan programs this way).
struct DelegateAvailability {
  std::vector<std::string> not_linked;   // not registered here: the runtime library is not linked
  std::vector<std::string> unavailable;  // registered, but is_available() is false on this machine
  std::vector<std::string> registered;   // every registered id, "Id" or "Id (unavailable)", in
                                         // registry order: what a refusal lists as "registered here"
  bool ok() const { return not_linked.empty() && unavailable.empty(); }
};
// Answers for `ids` (a manifest's `delegates`, or LoadedModel::program_delegates()), each id once,
// in the given order. An empty `ids` (a portable program) is always ok(). Throws nothing.
DelegateAvailability delegate_availability(const std::vector<std::string>& ids);

// The ExecuTorch backend id(s) an export key maps to, from the backend table ("xnnpack" ->
// {"XnnpackBackend"}; "portable" -> {}). Unknown keys give nullopt.
std::optional<std::vector<std::string>> runtime_ids_for_backend(const std::string& backend_key);

// ---- components: what the wheel offered, what this binary linked -------------------------------

struct Component {
  std::string name;     // CMake component of the wheel, e.g. "backend_xnnpack"
  std::string library;  // its shared library's file name
  bool linked = false;  // that library is mapped into this process
};

// Every component the installed wheel offered at configure time (its executorch::<name>
// targets), each with whether this binary has it linked (read from the loaded objects,
// dl_iterate_phdr — so the delegate-free test binary answers for itself).
std::vector<Component> offered_components();

// ---- one runtime id, classified --------------------------------------------------------------

enum class RuntimeStatus {
  kAvailable,            // linked, registered, available
  kUnavailable,          // registered, is_available() false
  kLinkedNotRegistered,  // library mapped, id absent from the registry
  kNotLinked,            // library not in this process / not offered / no wheel ships it
  kNoRuntime,            // the key registers no runtime id (TOSA, operator libraries)
  kRemovedUpstream,      // removed from ExecuTorch (MPS, 1.5)
};
std::string_view to_string(RuntimeStatus s);  // "available", "unavailable", "linked-not-registered", …

struct RuntimeIdStatus {
  std::string id;
  std::vector<std::string> keys;   // export keys of the table that register it ([] if unknown)
  std::optional<std::string> component;  // wheel component from the table, if any
  bool linked = false;
  bool registered = false;
  bool available = false;
  RuntimeStatus status = RuntimeStatus::kNotLinked;
  std::string reason;              // why, for every status (positive ones say what was checked)
};

// Classifies one runtime id against the registry, the loaded components and the table. `as` picks
// the table entry whose facts phrase the reason (VulkanBackend: vulkan or webgpu); default: the
// first entry that names a wheel component, else the first.
struct BackendEntry;
RuntimeIdStatus classify_runtime_id(const std::string& id, const BackendEntry* as = nullptr);

// OPENVINO_LIB_PATH: when unset, points it at the OpenVINO C runtime found beside the executorch
// package at configure time (the `openvino` pip package), before anything asks OpenvinoBackend.
// Returns what was done ("" when nothing). Called by registered_backends()/find_backend().
const std::string& prepare_backend_environment();

}  // namespace etproof
