// etproof/registry.cpp — what this binary can run, read from ExecuTorch's backend registry.
#include "etproof/runtime/registry.h"

#if defined(__APPLE__)
#include <mach-o/dyld.h>  // macOS: the loaded images from dyld (no dl_iterate_phdr)
#else
#include <link.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <executorch/runtime/backend/interface.h>

#include "etproof/core/backend_table.h"
#include "etproof/build_config.h"  // generated: kOfferedComponents, kOpenvinoLib
#include "etproof/runtime/backend_quirks.h"
#include "etproof/runtime/runtime_log.h"
#include "core/common.h"

namespace etproof {
namespace et = ::executorch::runtime;

namespace {

using detail::join;

// is_available(), asked once per id; its Error log lines captured as the reason.
struct Availability {
  bool available = false;
  std::string detail;
};

Availability availability(const std::string& id, const et::BackendInterface* cls) {
  static std::mutex mu;
  static std::map<std::string, Availability> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  Availability a;
  {
    RuntimeLogCapture capture;
    a.available = cls->is_available();
    if (!a.available) a.detail = join(capture.lines(), "; ");
    // A backend module says where the delegate looked for what it needs (backend_quirks.h).
    if (const BackendQuirks* q = quirks_for_delegate(id); !a.available && q && q->unavailable_hint)
      a.detail += std::string(a.detail.empty() ? "" : "; ") + q->unavailable_hint();
  }
  return cache.emplace(id, a).first->second;
}

std::set<std::string> loaded_object_names() {
  std::set<std::string> names;
#if defined(__APPLE__)
  for (uint32_t i = 0, n = _dyld_image_count(); i < n; ++i)
    if (const char* name = _dyld_get_image_name(i); name && *name)
      names.insert(std::filesystem::path(name).filename().string());
#else
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::set<std::string>*>(data)->insert(
              std::filesystem::path(info->dlpi_name).filename().string());
        return 0;
      },
      &names);
#endif
  return names;
}

}  // namespace

const std::string& prepare_backend_environment() {
  static const std::string done = [] {
    std::string said;
    for (const BackendQuirks* q : all_backend_quirks())
      if (q->prepare_environment)
        if (std::string s = q->prepare_environment(); !s.empty()) said += (said.empty() ? "" : "; ") + s;
    return said;
  }();
  return done;
}

std::vector<RuntimeBackend> registered_backends() {
  prepare_backend_environment();
  std::vector<RuntimeBackend> out;
  const size_t n = et::get_num_registered_backends();
  for (size_t i = 0; i < n; ++i) {
    auto name = et::get_backend_name(i);
    if (!name.ok() || *name == nullptr) continue;
    RuntimeBackend b;
    b.id = *name;
    b.registered = true;
    const et::BackendInterface* cls = et::get_backend_class(*name);
    if (cls != nullptr) {
      const Availability a = availability(b.id, cls);
      b.available = a.available;
      b.unavailable_detail = a.detail;
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::optional<RuntimeBackend> find_backend(const std::string& id) {
  prepare_backend_environment();
  const et::BackendInterface* cls = et::get_backend_class(id.c_str());
  if (cls == nullptr) return std::nullopt;
  const Availability a = availability(id, cls);
  return RuntimeBackend{id, true, a.available, a.detail};
}

DelegateAvailability delegate_availability(const std::vector<std::string>& ids) {
  DelegateAvailability out;
  for (const std::string& id : ids) {
    if (std::find(out.not_linked.begin(), out.not_linked.end(), id) != out.not_linked.end() ||
        std::find(out.unavailable.begin(), out.unavailable.end(), id) != out.unavailable.end())
      continue;
    const auto b = find_backend(id);
    if (!b || !b->registered)
      out.not_linked.push_back(id);
    else if (!b->available)
      out.unavailable.push_back(id);
  }
  for (const RuntimeBackend& b : registered_backends())
    out.registered.push_back(b.id + (b.available ? "" : " (unavailable)"));
  return out;
}

std::optional<std::vector<std::string>> runtime_ids_for_backend(const std::string& backend_key) {
  const BackendEntry* e = find_backend_entry(backend_key);
  if (e == nullptr) return std::nullopt;
  return e->runtime_ids;
}

std::vector<Component> offered_components() {
  const auto loaded = loaded_object_names();
  std::vector<Component> out;
  for (const auto& c : build::kOfferedComponents)
    out.push_back({c.name, c.library, loaded.count(c.library) > 0});
  return out;
}

std::string_view to_string(RuntimeStatus s) {
  switch (s) {
    case RuntimeStatus::kAvailable: return "available";
    case RuntimeStatus::kUnavailable: return "unavailable";
    case RuntimeStatus::kLinkedNotRegistered: return "linked-not-registered";
    case RuntimeStatus::kNotLinked: return "not-linked";
    case RuntimeStatus::kNoRuntime: return "no-runtime";
    case RuntimeStatus::kRemovedUpstream: return "removed-upstream";
  }
  return "unknown";
}

RuntimeIdStatus classify_runtime_id(const std::string& id, const BackendEntry* as) {
  RuntimeIdStatus r;
  r.id = id;
  const auto entries = entries_for_runtime_id(id);
  const BackendEntry* entry = nullptr;
  for (const BackendEntry* e : entries) {
    r.keys.push_back(e->key);
    if (!entry || (!entry->wheel_component && e->wheel_component)) entry = e;
  }
  if (as) entry = as;
  if (entry) r.component = entry->wheel_component;

  std::optional<Component> comp;
  if (r.component)
    for (const auto& c : offered_components())
      if (c.name == *r.component) comp = c;
  r.linked = comp && comp->linked;

  if (const auto b = find_backend(id)) {
    r.registered = true;
    r.linked = true;  // registered implies its code is in this process
    r.available = b->available;
    if (b->available) {
      r.status = RuntimeStatus::kAvailable;
      r.reason = "registered; is_available() is true on this machine";
    } else {
      r.status = RuntimeStatus::kUnavailable;
      r.reason = "registered, but is_available() is false on this machine" +
                 (b->unavailable_detail.empty() ? std::string()
                                                : ": " + b->unavailable_detail);
      if (entry && !entry->hardware.empty()) r.reason += " (needs: " + entry->hardware;
      if (entry && !entry->runtime_env.empty())
        r.reason += std::string(entry->hardware.empty() ? " (needs" : ";") + " env " +
                    join(entry->runtime_env);
      if (entry && (!entry->hardware.empty() || !entry->runtime_env.empty())) r.reason += ")";
    }
    if (entries.empty()) r.reason += "; this id is not in the backend table (data/backends.json)";
    return r;
  }

  if (entry && entry->upstream_status == "removed") {
    r.status = RuntimeStatus::kRemovedUpstream;
    r.reason = "removed upstream" +
               (entry->upstream_since ? " in ExecuTorch " + *entry->upstream_since : std::string()) +
               (entry->upstream_note ? " (" + *entry->upstream_note + ")" : std::string());
    return r;
  }
  if (comp && comp->linked) {
    r.status = RuntimeStatus::kLinkedNotRegistered;
    r.reason = comp->library + " is loaded in this process but " + id +
               " is not in the registry: its static registrar was dropped at link time (link the "
               "component with --no-as-needed / whole-archive, as executorch::" + comp->name +
               " does)";
    return r;
  }
  r.status = RuntimeStatus::kNotLinked;
  const std::string where =
      entry ? " (runtime: " + (entry->runtime_os.empty() ? std::string("no OS") : join(entry->runtime_os)) +
                  (entry->hardware.empty() ? std::string() : "; " + entry->hardware) + ")"
            : std::string();
  if (comp) {
    r.reason = "the wheel offers " + comp->name + " (" + comp->library +
               ") but this binary does not link it";
  } else if (r.component) {
    r.reason = "this executorch wheel ships no " + *r.component + where;
  } else if (entry && entry->build_flag) {
    r.reason = "no executorch wheel ships it: needs a source build with " + *entry->build_flag +
               where;
  } else if (entry) {
    r.reason = "no executorch wheel ships it" + where;
  } else {
    r.reason = "not registered, and not in the backend table (data/backends.json)";
  }
  return r;
}

}  // namespace etproof
