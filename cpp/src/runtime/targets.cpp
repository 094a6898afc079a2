// Artifacts bound to a target (etproof/runtime/targets.h), through the backend modules that know
// how each kind is read and asked (etproof/runtime/backend_quirks.h).
#include "etproof/runtime/targets.h"

#include "etproof/runtime/backend_quirks.h"

namespace etproof {

namespace {

std::string checked_kinds() {
  std::string kinds;
  for (const BackendQuirks* q : all_backend_quirks())
    if (!q->target_kind.empty() && q->requirements_here)
      kinds += (kinds.empty() ? "" : ", ") + std::string(q->target_kind);
  return kinds.empty() ? std::string("none") : kinds;
}

std::string described(const BackendQuirks& q, const std::string& requirements) {
  return q.describe_requirements ? q.describe_requirements(requirements) : "'" + requirements + "'";
}

}  // namespace

TargetCheck check_target(const Target& target) {
  TargetCheck c;
  const BackendQuirks* q = quirks_for_target(target.kind);
  if (!q || !q->requirements_here) {
    c.why = "target kind '" + target.kind + "' is not one this binary checks (it checks " + checked_kinds() + ")";
    return c;
  }
  std::string why_not;
  const std::optional<std::string> here = q->requirements_here(why_not);
  if (!here) {
    c.why = "this machine's " + std::string(q->display) + " could not be asked for its requirements: " + why_not;
    return c;
  }
  c.checked = true;
  c.here = *here;
  c.matches = *here == target.requirements;
  if (!c.matches)
    c.why = "its " + std::string(q->target_artifact) + " was compiled for " + described(*q, target.requirements) +
            " ('" + target.requirements + "'); this machine's " + std::string(q->target_runtime) +
            " compiles for " + described(*q, *here) + " ('" + *here +
            "') and refuses a blob compiled for other requirements";
  return c;
}

std::string target_remedy(const Target& target) {
  if (const BackendQuirks* q = quirks_for_target(target.kind); q && q->target_remedy) return q->target_remedy(target);
  return "run it on the target it was compiled for, or re-export it for this one";
}

bool says_other_target(std::string_view line) {
  for (const BackendQuirks* q : all_backend_quirks())
    if (q->says_other_target && q->says_other_target(line)) return true;
  return false;
}

}  // namespace etproof
