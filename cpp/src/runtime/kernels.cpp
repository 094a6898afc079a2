// etproof/kernels.cpp — the operators a program calls, asked of this binary's kernel registry
// (etproof/kernels.h).
#include "etproof/runtime/kernels.h"

#include <set>
#include <string_view>

#include <executorch/runtime/kernel/operator_registry.h>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/registry.h"
#include "core/common.h"

namespace etproof {
namespace {

std::string_view name_space_of(const std::string& op) {
  const size_t sep = op.find("::");
  return sep == std::string::npos ? std::string_view() : std::string_view(op).substr(0, sep);
}

}  // namespace

std::vector<std::string> registered_operators() {
  std::set<std::string> names;
  const auto kernels = ::executorch::ET_RUNTIME_NAMESPACE::get_registered_kernels();
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].name_ != nullptr) names.insert(kernels[i].name_);
  return {names.begin(), names.end()};
}

std::vector<std::string> missing_kernels(const std::vector<std::string>& ops) {
  const auto have = registered_operators();
  const std::set<std::string> registered(have.begin(), have.end());
  std::set<std::string> seen;
  std::vector<std::string> missing;
  for (const auto& op : ops)
    if (!registered.count(op) && seen.insert(op).second) missing.push_back(op);
  return missing;
}

// The words come from the backend table's kernel_libraries (docs/backends.md), which the export
// half's etproof.export.lower.kernel_library_for reads too.
std::string kernel_library_for(const std::string& op) {
  const std::string_view ns = name_space_of(op);
  const KernelLibraryEntry* lib = nullptr;
  for (const auto& l : backend_table().kernel_libraries)
    if (ns == l.name_space) lib = &l;
  if (lib == nullptr) return "the library that registers " + op;
  const std::string& text = lib->library;
  if (!lib->wheel_component) return text + ", which this wheel ships no C++ component of: build it from ExecuTorch's source";
  std::optional<Component> comp;
  for (const auto& c : offered_components())
    if (c.name == *lib->wheel_component) comp = c;
  const std::string target = "executorch::" + *lib->wheel_component;
  if (!comp) return text + " (" + target + ", which the installed wheel does not offer: build it from ExecuTorch's source)";
  if (!comp->linked) return text + " (link " + target + ", " + comp->library + ", from the wheel)";
  return text + " (" + target + " is linked here and registers no kernel under this name: build the library from "
         "ExecuTorch's source with it, or link your own kernel registered under it)";
}

std::vector<std::string> missing_operators_in_log(const std::vector<std::string>& lines) {
  static constexpr std::string_view kMark = "Missing operator: ";
  std::set<std::string> seen;
  std::vector<std::string> ops;
  for (const auto& line : lines) {
    const size_t at = line.find(kMark);
    if (at == std::string::npos) continue;
    std::string_view rest = std::string_view(line).substr(at + kMark.size());
    if (!rest.empty() && rest.front() == '[') {  // "[N] NAME": the instruction's operator index
      const size_t close = rest.find("] ");
      if (close == std::string_view::npos) continue;
      rest.remove_prefix(close + 2);
    }
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\n' || rest.back() == '\r')) rest.remove_suffix(1);
    if (!rest.empty() && seen.insert(std::string(rest)).second) ops.emplace_back(rest);
  }
  return ops;
}

Error kernel_missing_error(const std::string& bundle, const std::vector<std::string>& missing,
                           const std::string& found, std::optional<uint32_t> et_error) {
  std::vector<std::string> libraries;
  for (const auto& op : missing) libraries.push_back(op + ": " + kernel_library_for(op));
  const bool one = missing.size() == 1;
  return Error(ErrorKind::kKernelMissing,
               "bundle '" + bundle + "': its program calls " + (one ? "an operator" : std::to_string(missing.size()) + " operators") +
                   " this binary has no kernel for: " + detail::join(missing) + " (" + found + ")",
               "link the kernel library that provides " + std::string(one ? "it" : "each") + " — " +
                   detail::join(libraries, "; ") + " — or re-export the model so that its program does not call " +
                   (one ? "it" : "them") + ": decompose " + (one ? "it" : "each") +
                   " into operators this binary has (rewrite that part of the model, or give the export a "
                   "decomposition for it), or lower to a backend whose delegate takes it",
               et_error);
}

}  // namespace etproof
