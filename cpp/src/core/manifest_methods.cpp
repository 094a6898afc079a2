// etproof/manifest_methods.cpp — a manifest's methods (schema_version 2, docs/manifest.md):
// finding one by name, which ones a --method selection picks, and how a case is named
// (METHOD/CASE). Declared in etproof/manifest.h; the reading itself is manifest.cpp's (with
// manifest_tensors.cpp and manifest_references.cpp).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etproof/core/error.h"
#include "etproof/core/manifest.h"
#include "core/common.h"

namespace etproof {

const MethodSpec& find_method(const Manifest& m, const std::string& name) {
  std::vector<std::string> names;
  for (const MethodSpec& s : m.methods) {
    if (s.name == name) return s;
    names.push_back("'" + s.name + "'");
  }
  throw Error(ErrorKind::kInvalidArgument,
              "bundle '" + m.name + "' has no method '" + name + "' (its methods: " + detail::join_or_none(names) + ")",
              "name one of the methods its manifest lists (etproof inspect BUNDLE shows them)");
}

bool has_several_methods(const Manifest& m) {
  return m.methods.size() > 1 || (m.methods.size() == 1 && m.methods.front().name != "forward");
}

std::string case_label(const Manifest& m, const GoldenCase& c) {
  if (c.sequence) return c.sequence->case_id + "/step" + std::to_string(c.sequence->step);
  return has_several_methods(m) ? c.method + "/" + c.id : c.id;
}

std::vector<std::vector<const GoldenCase*>> case_runs(const Manifest& m) {
  std::vector<std::vector<const GoldenCase*>> runs;
  std::map<std::string, size_t> where;  // sequence case -> its run
  for (const GoldenCase& g : m.goldens) {
    if (!g.sequence) {
      runs.push_back({&g});
      continue;
    }
    auto [it, fresh] = where.emplace(g.sequence->case_id, runs.size());
    if (fresh) runs.emplace_back();
    runs[it->second].push_back(&g);
  }
  for (auto& run : runs)
    std::stable_sort(run.begin(), run.end(), [](const GoldenCase* a, const GoldenCase* b) {
      return a->sequence && b->sequence && a->sequence->step < b->sequence->step;
    });
  return runs;
}

MethodSelection select_methods(const Manifest& m, const std::vector<std::string>& requested) {
  MethodSelection out;
  for (const MethodSpec& s : m.methods)
    if (requested.empty() || std::find(requested.begin(), requested.end(), s.name) != requested.end())
      out.selected.push_back(s.name);
  for (const std::string& name : requested)
    if (std::none_of(m.methods.begin(), m.methods.end(), [&](const MethodSpec& s) { return s.name == name; }) &&
        std::find(out.missing.begin(), out.missing.end(), name) == out.missing.end())
      out.missing.push_back(name);
  return out;
}

std::optional<Error> unknown_methods_error(const Manifest& m, const std::vector<std::string>& requested) {
  const MethodSelection s = select_methods(m, requested);
  if (s.missing.empty()) return std::nullopt;
  std::vector<std::string> missing, listed;
  for (const std::string& n : s.missing) missing.push_back("'" + n + "'");
  for (const MethodSpec& spec : m.methods) listed.push_back("'" + spec.name + "'");
  return Error(ErrorKind::kInvalidArgument,
               "bundle '" + m.name + "' has no method " + detail::join(missing) + " (its methods: " +
                   detail::join_or_none(listed) + ")",
               "ask for methods its manifest lists (`etproof inspect BUNDLE` shows them; --method "
               "NAME), or for none: every method");
}

}  // namespace etproof
