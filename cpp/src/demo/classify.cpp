// etproof/classify.cpp — the classification demo: which bundle to run, and running it
// (etproof/classify.h).
#include "etproof/demo/classify.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/export_half.h"
#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "etproof/replay/replay.h"
#include "core/common.h"

namespace etproof {
namespace fs = std::filesystem;
using detail::join;

namespace {

struct Candidate {
  Bundle bundle;
  bool runnable = false;
  std::string why_not;  // when not runnable
};

std::string describe(const Candidate& c) {
  const auto& m = c.bundle.manifest;
  return m.backend + "/" + m.recipe + " (" + m.name + ")";
}

// The image classifiers (bundles with labels and image preprocessing) in `dir`, each with whether
// it can run in this binary, ordered by the backend table (ties go to the backend listed first in
// data/backends.json: portable, xnnpack, …, not to the directory's alphabetical order). Throws
// Error{kCapabilityUnavailable} when there is none, naming the bundles that could not be read.
std::vector<Candidate> gather_candidates(const fs::path& dir) {
  std::vector<Candidate> cands;
  std::vector<std::string> skipped;
  for (const auto& p : find_bundles(dir)) {
    Candidate c;
    try {
      c.bundle = open_bundle(p);
      c.bundle.program.reset();  // verified; kept without its bytes (memory flat, bundle.h)
    } catch (const Error& e) {
      skipped.push_back(p.filename().string() + ": [" + std::string(to_string(e.kind())) +
                        "] " + e.cause());
      continue;
    }
    const auto& m = c.bundle.manifest;
    if (!m.labels || !m.preprocessing) continue;  // not an image classifier
    std::vector<std::string> problems;
    if (auto why = check_delegates(m.delegates, m.backend)) problems.push_back(why->reason);
    if (m.backend != "portable" && !runtime_ids_for_backend(m.backend))
      problems.push_back("backend \"" + m.backend + "\" is unknown to this binary");
    c.runnable = problems.empty();
    c.why_not = join(problems, "; ");
    cands.push_back(std::move(c));
  }
  if (cands.empty())
    throw Error(ErrorKind::kCapabilityUnavailable,
                "no image-classification bundle (with labels and image preprocessing) in " +
                    dir.string() + (skipped.empty() ? "" : "; unreadable: " + join(skipped, "; ")),
                "export the demo bundles (./setup.sh, or " + export_half_command("demo") + " --out build/demo)");
  auto table_rank = [](const std::string& key) {
    const auto& entries = backend_table().backends;
    for (size_t i = 0; i < entries.size(); ++i)
      if (entries[i].key == key) return i;
    return entries.size();
  };
  std::stable_sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
    return table_rank(a.bundle.manifest.backend) < table_rank(b.bundle.manifest.backend);
  });
  return cands;
}

// Closest to the model the user evaluated first: recipe fp32 computed in float32, then any
// fp32 recipe (e.g. a delegate that computes in bfloat16), then the first one; null for none.
const Candidate* prefer_fp32(const std::vector<const Candidate*>& v) {
  for (auto* c : v)
    if (c->bundle.manifest.recipe == "fp32" && c->bundle.manifest.precision == "float32") return c;
  for (auto* c : v)
    if (c->bundle.manifest.recipe == "fp32") return c;
  return v.empty() ? nullptr : v.front();
}

// The bundle of the backend asked for (and the recipe, when given). Throws Error{kInvalidArgument}
// when there is none, Error{kBackendUnavailable} when none of them can run here; `avail_text`
// names the runnable bundles.
const Candidate* choose_for_backend(const std::vector<Candidate>& cands, const std::string& backend,
                                    const std::string& recipe, const fs::path& dir,
                                    const std::string& avail_text) {
  std::vector<const Candidate*> match, runnable;
  for (const auto& c : cands)
    if (c.bundle.manifest.backend == backend &&
        (recipe.empty() || c.bundle.manifest.recipe == recipe)) {
      match.push_back(&c);
      if (c.runnable) runnable.push_back(&c);
    }
  if (match.empty())
    throw Error(ErrorKind::kInvalidArgument,
                "no bundle for backend \"" + backend + "\"" +
                    (recipe.empty() ? "" : " with recipe \"" + recipe + "\"") + " in " +
                    dir.string(),
                "choose one of the backends that can run here: " + avail_text);
  if (runnable.empty())
    throw Error(ErrorKind::kBackendUnavailable,
                "backend \"" + backend + "\" cannot run here: " + match.front()->why_not,
                "choose one of the backends that can run here: " + avail_text);
  return prefer_fp32(runnable);
}

// With no backend asked for: a runnable delegated fp32 bundle, else a portable one, else any
// runnable one (of the recipe, when given). Throws Error{kBackendUnavailable} when none can run.
const Candidate* choose_any(const std::vector<Candidate>& cands, const std::string& recipe,
                            const fs::path& dir, const std::string& avail_text) {
  std::vector<const Candidate*> delegated, portable, other;
  for (const auto& c : cands) {
    if (!c.runnable || (!recipe.empty() && c.bundle.manifest.recipe != recipe)) continue;
    if (!c.bundle.manifest.delegates.empty() && c.bundle.manifest.recipe == "fp32")
      delegated.push_back(&c);
    else if (c.bundle.manifest.backend == "portable")
      portable.push_back(&c);
    else
      other.push_back(&c);
  }
  const Candidate* chosen = !delegated.empty() ? prefer_fp32(delegated)
                            : !portable.empty() ? prefer_fp32(portable)
                                                : prefer_fp32(other);
  if (!chosen)
    throw Error(ErrorKind::kBackendUnavailable,
                "no bundle in " + dir.string() + " can run in this binary" +
                    (recipe.empty() ? "" : " with recipe \"" + recipe + "\""),
                "link the delegates the bundles need, or export a portable bundle; runnable "
                "here: " + avail_text);
  return chosen;
}

}  // namespace

Bundle choose_classifier(const fs::path& dir, const std::string& backend,
                         const std::string& recipe) {
  const std::string remedy = "export the demo bundles (./setup.sh), or pass --bundles DIR";
  if (!detail::is_directory_path(dir, remedy))
    throw Error(ErrorKind::kIo, "bundle directory " + dir.string() + ": " + detail::not_a_directory_text(dir), remedy);
  const std::vector<Candidate> cands = gather_candidates(dir);
  std::vector<std::string> available;
  for (const auto& c : cands)
    if (c.runnable) available.push_back(describe(c));
  const std::string avail_text = available.empty() ? "none" : join(available);
  const Candidate* chosen = !backend.empty() ? choose_for_backend(cands, backend, recipe, dir, avail_text)
                                             : choose_any(cands, recipe, dir, avail_text);
  return chosen->bundle;
}

Classification classify_image(const fs::path& image, const fs::path& dir,
                              const std::string& backend, const std::string& recipe, size_t k) {
  if (!detail::path_exists(image, "check the path"))
    throw Error(ErrorKind::kIo, "image " + image.string() + " does not exist", "check the path");
  const Bundle chosen = choose_classifier(dir, backend, recipe);
  const Manifest& m = chosen.manifest;
  const auto& pp = *m.preprocessing;
  if (m.inputs.size() != 1 || m.inputs[0].name != pp.input)
    throw Error(ErrorKind::kCapabilityUnavailable,
                "bundle " + m.name + " needs inputs other than the image \"" + pp.input + "\"",
                "classify runs single-input image classifiers");
  const HostTensor x = load_image(image, pp, m.inputs[0]);
  // The replay engine's own open / check / load (replay.h, prepare): the same refusals as parity.
  Prepared p = prepare(chosen.dir);
  if (p.refused) throw *p.error;
  const auto outputs = p.model->run({{pp.input, x}});
  const auto it = outputs.find(m.labels->output);
  if (it == outputs.end())
    throw Error(ErrorKind::kManifestInvalid,
                "labels index output \"" + m.labels->output + "\", which the program lacks",
                "re-export the bundle");
  Classification c;
  c.image = image.string();
  c.bundle = m.name;
  c.backend = m.backend;
  c.recipe = m.recipe;
  c.delegates = p.model->program_delegates();
  c.top = top_k(it->second, m.labels->names, k);
  return c;
}

nlohmann::json to_json(const Classification& c) {
  return {{"image", c.image},   {"bundle", c.bundle},       {"backend", c.backend},
          {"recipe", c.recipe}, {"delegates", c.delegates}, {"top", to_json(c.top)}};
}

std::string to_text(const Classification& c) {
  std::ostringstream os;
  os << "image    " << c.image << "\n";
  os << "bundle   " << c.bundle << ": backend " << c.backend << ", recipe " << c.recipe
     << ", delegates " << (c.delegates.empty() ? "none (portable kernels)" : join(c.delegates))
     << "\n";
  for (const Ranked& r : c.top)
    os << "  " << std::fixed << std::setprecision(4) << r.probability << "  " << r.label << " ("
       << r.index << ")\n";
  return os.str();
}

}  // namespace etproof
