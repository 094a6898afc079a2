// The matrix's coverage (etproof/matrix.h): which columns ran here, the verdict's
// "N of M columns ran here" and whether --require / --require-all hold.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "etproof/core/error.h"
#include "etproof/replay/matrix.h"
#include "core/common.h"

namespace etproof {

// ---- coverage ------------------------------------------------------------------------------------

std::string CoverageColumn::label() const {
  return (backend.empty() ? "?" : backend) + "/" + (recipe.empty() ? "?" : recipe) +
         (machine.empty() ? "" : " @ " + machine);
}

namespace {

struct Requirement {
  std::string model;    // "" any
  std::string backend;
  std::string recipe;   // "" any
};

std::optional<Requirement> parse_requirement(const std::string& text) {
  Requirement r;
  std::string rest = text;
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    r.model = rest.substr(0, colon);
    rest = rest.substr(colon + 1);
    if (r.model.empty()) return std::nullopt;
  }
  const size_t slash = rest.find('/');
  r.backend = rest.substr(0, slash);
  if (slash != std::string::npos) {
    r.recipe = rest.substr(slash + 1);
    if (r.recipe.empty() || r.recipe.find('/') != std::string::npos) return std::nullopt;
  }
  if (r.backend.empty()) return std::nullopt;
  return r;
}

bool requirement_names(const Requirement& r, const CoverageColumn& c) {
  return (r.model.empty() || r.model == c.model) && r.backend == c.backend &&
         (r.recipe.empty() || r.recipe == c.recipe);
}

}  // namespace

void check_requirement(const std::string& require) {
  if (!parse_requirement(require))
    throw Error(ErrorKind::kInvalidArgument,
                "--require \"" + require + "\" does not name a column",
                "name a column as the matrix does: BACKEND/RECIPE (e.g. xnnpack/fp32), BACKEND alone "
                "(every recipe of it), or MODEL:BACKEND/RECIPE (or MODEL:BACKEND) for one model's columns only");
}

Coverage coverage(const Matrix& m) {
  Coverage cov;
  // The bundle columns: ran when some case was judged; otherwise why, from its not-run line.
  std::vector<bool> ran(m.columns.size(), false);
  std::vector<const Cell*> first_cell(m.columns.size(), nullptr);
  for (const Cell& c : m.cells) {
    if (c.column >= m.columns.size()) continue;
    if (is_judged(c.status)) ran[c.column] = true;
    if (!first_cell[c.column]) first_cell[c.column] = &c;
  }
  std::map<std::tuple<std::string, std::string, std::string>, size_t> by_bundle;  // (dir, bundle, machine) → column
  for (size_t i = 0; i < m.columns.size(); ++i) {
    const Column& c = m.columns[i];
    CoverageColumn k{c.model, c.backend, c.recipe, c.dir, c.bundle, ran[i], Status::kAgreed, "", c.machine};
    if (!k.ran) {
      if (first_cell[i]) {
        k.status = first_cell[i]->status;
        k.reason = first_cell[i]->detail;
      } else {
        k.status = Status::kBundleInvalid;
        k.reason = c.bundle + ": no golden case ran (the manifest lists none)";
      }
    }
    by_bundle.emplace(std::make_tuple(c.dir, c.bundle, c.machine), i);
    cov.columns.push_back(std::move(k));
  }
  std::vector<bool> reason_set(m.columns.size(), false);
  for (const NotRun& n : m.not_run) {
    if (!n.bundle.empty()) {
      const auto it = by_bundle.find({n.dir, n.bundle, n.machine});
      if (it != by_bundle.end()) {
        CoverageColumn& k = cov.columns[it->second];
        if (!k.ran && !reason_set[it->second]) {
          k.status = n.status;
          k.reason = n.reason;
          reason_set[it->second] = true;
        }
        continue;
      }
    }
    // A column of its own (no bundle): one per (dir, model, backend, recipe); a bundle of the
    // same column found in the directory stands for it.
    bool known = false;
    for (const CoverageColumn& k : cov.columns)
      known = known || (k.dir == n.dir && k.model == n.model && k.backend == n.backend && k.recipe == n.recipe &&
                        k.machine == n.machine);
    if (known) continue;
    cov.columns.push_back({n.model, n.backend, n.recipe, n.dir, "", false, n.status, n.reason, n.machine});
  }
  for (const CoverageColumn& k : cov.columns) cov.ran += k.ran;
  for (const std::string& text : m.required) {
    UnmetRequirement u{text, {}, 0};
    if (const auto r = parse_requirement(text))
      for (size_t i = 0; i < cov.columns.size(); ++i)
        if (requirement_names(*r, cov.columns[i])) {
          ++u.matched;
          if (!cov.columns[i].ran) u.not_run.push_back(i);
        }
    if (u.matched == 0 || !u.not_run.empty()) cov.unmet.push_back(std::move(u));
  }
  if (m.require_all) {
    UnmetRequirement u{"--require-all", {}, cov.columns.size()};
    for (size_t i = 0; i < cov.columns.size(); ++i)
      if (!cov.columns[i].ran) u.not_run.push_back(i);
    if (!u.not_run.empty()) cov.unmet.push_back(std::move(u));
  }
  return cov;
}

std::string coverage_text(const Coverage& c) {
  std::ostringstream os;
  os << c.ran << " of " << c.columns.size() << " column" << (c.columns.size() == 1 ? "" : "s") << " ran here";
  // Columns on emulated machines (matrix --emulate) ran here too, but not on this hardware: said.
  const size_t emulated = size_t(std::count_if(c.columns.begin(), c.columns.end(),
                                               [](const CoverageColumn& k) { return k.ran && !k.machine.empty(); }));
  if (emulated) os << ", " << emulated << " of them under emulation";
  if (c.ran == c.columns.size()) return os.str();
  // Grouped by status (first appearance), each label once with its count.
  std::vector<Status> statuses;
  std::map<Status, std::vector<std::pair<std::string, size_t>>> labels;
  std::map<Status, size_t> count;
  for (const CoverageColumn& k : c.columns) {
    if (k.ran) continue;
    if (!count[k.status]++) statuses.push_back(k.status);
    auto& l = labels[k.status];
    const std::string label = k.label();
    auto it = std::find_if(l.begin(), l.end(), [&](const auto& p) { return p.first == label; });
    if (it == l.end())
      l.push_back({label, 1});
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (Status s : statuses) {
    std::vector<std::string> names;
    for (const auto& [label, n] : labels[s]) names.push_back(n > 1 ? label + " ×" + std::to_string(n) : label);
    parts.push_back(std::to_string(count[s]) + " " + std::string(to_string(s)) + ": " + detail::join(names));
  }
  os << " (" << detail::join(parts, "; ") << ")";
  return os.str();
}

}  // namespace etproof
