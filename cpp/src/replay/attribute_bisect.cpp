// etproof/attribute_bisect.cpp — `etproof attribute --bisect`: the earliest drift of a spaced twin
// narrowed with narrower twins, each exported by the export half (etproof/attribute.h).
#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include "etproof/replay/attribute.h"
#include "etproof/runtime/bundle.h"
#include "etproof/runtime/export_half.h"
#include "core/common.h"

namespace etproof {

namespace fs = std::filesystem;

namespace {

// The eligible indices bracketing the earliest drift: (last agreeing tap before it, the drift).
// nullopt for the first: the drift is the first tap (the program's start bounds it).
struct Bracket {
  std::optional<size_t> before;
  size_t drift = 0;
};

Bracket bracket_of(const Attribution& a) {
  const size_t k = *a.earliest_drift;
  const auto index = [&](size_t i) -> size_t {
    const TapPoint& p = a.layers[i].point;
    if (!p.eligible_index)
      throw Error(ErrorKind::kInvalidArgument,
                  a.twin + " records no taps.points[].eligible_index: it was exported before they were "
                           "recorded, so --bisect cannot tell which nodes lie between its taps",
                  "re-export the bundle with its tapped twin (" + etproof_command() +
                      " export MODEL --backend B --recipe R --out DIR --taps)");
    return *p.eligible_index;
  };
  Bracket b;
  b.drift = index(k);
  if (k > 0) b.before = index(k - 1);
  return b;
}

BisectRound round_of(const Attribution& a) {
  BisectRound r;
  r.twin = a.twin;
  r.taps = a.taps.points.size();
  r.range = a.taps.range;
  if (a.earliest_drift) {
    const Bracket b = bracket_of(a);
    r.drift_eligible = b.drift;
    r.before_eligible = b.before;
  }
  return r;
}

// A directory of its own for the narrowed bundles, removed when done unless the caller named one.
struct WorkDir {
  fs::path path;
  bool owned = false;
  explicit WorkDir(const fs::path& given) {
    if (!given.empty()) {
      path = given;
      return;
    }
    std::string tmpl = (fs::temp_directory_path() / "etproof-bisect-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw Error(ErrorKind::kIo, "cannot create a temporary directory for --bisect: " + std::string(std::strerror(errno)),
                  "check the temporary directory's free space and permissions (TMPDIR)");
    path = tmpl;
    owned = true;
  }
  ~WorkDir() {
    std::error_code ec;
    if (owned) fs::remove_all(path, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
};

}  // namespace

Bisection bisect(const fs::path& bundle, const AttributeOptions& attribute_options, const BisectOptions& options) {
  const Bundle shipped = open_bundle(bundle, OpenOptions{.verify_artifact = false});
  Bisection b;
  b.kept = options.work.string();
  b.final = attribute(bundle, attribute_options);
  b.rounds.push_back(round_of(b.final));
  const std::string model = options.model.empty() ? b.final.taps.exported_from : options.model;
  // Every round attributes the case the first one chose, so that the rounds are one curve.
  AttributeOptions narrowed = attribute_options;
  narrowed.case_id = b.final.case_id;
  std::optional<WorkDir> work;
  for (size_t round = 1;; ++round) {
    const Attribution& a = b.final;
    if (!a.earliest_drift) {
      b.resolved = true;
      b.stopped = "no tap drifts: there is no drift to narrow";
      return b;
    }
    const Bracket br = bracket_of(a);
    const size_t first = br.before.value_or(0);
    if ((br.before && br.drift <= *br.before + 1) || (!br.before && br.drift == 0)) {
      b.resolved = true;
      b.stopped = br.before ? "the earliest drift directly follows an agreeing tap: no untapped node lies between them"
                            : "the earliest drift is the program's first eligible node";
      return b;
    }
    if (round > options.max_rounds) {
      b.stopped = "stopped after " + std::to_string(options.max_rounds) + " narrower twins; the drift starts among the "
                  "eligible nodes " + std::to_string(first) + ".." + std::to_string(br.drift);
      return b;
    }
    if (model.empty())
      throw Error(ErrorKind::kInvalidArgument,
                  a.twin + " does not record the MODEL it was exported from (taps.exported_from), and none was given",
                  "pass --model MODEL (what `etproof export` was given: a built-in name, MODULE:FUNCTION or "
                  "FILE.py:FUNCTION)");
    if (!work) work.emplace(options.work);
    const fs::path out = work->path / ("round-" + std::to_string(round));
    const std::vector<std::string> args{model,
                                        "--backend", shipped.manifest.backend,
                                        "--recipe", shipped.manifest.recipe,
                                        "--name", shipped.manifest.name,
                                        "--out", out.string(),
                                        "--taps",
                                        "--taps-range", std::to_string(first) + ":" + std::to_string(br.drift)};
    const int rc = run_export_half_command("export", args, /*stdout_to_stderr=*/true);
    if (rc != 0)
      throw Error(ErrorKind::kCapabilityUnavailable,
                  "the export half could not export the narrowed twin of " + shipped.manifest.name + " (eligible nodes " +
                      std::to_string(first) + ".." + std::to_string(br.drift) + " of " + model + "; exit status " +
                      std::to_string(rc) + ", its error above)",
                  "fix what the export says, or pass --model with the MODEL this bundle was exported from");
    const fs::path again = out / shipped.manifest.name;
    const Bundle reexported = open_bundle(again, OpenOptions{.verify_artifact = false});
    if (reexported.manifest.artifact.sha256 != shipped.manifest.artifact.sha256)
      throw Error(ErrorKind::kArtifactMismatch,
                  model + " no longer exports " + shipped.manifest.name + "'s program: its .pte SHA-256 is now " +
                      reexported.manifest.artifact.sha256 + ", the bundle's " + shipped.manifest.artifact.sha256,
                  "the model's code or weights changed since the bundle was exported: re-export the bundle with "
                  "--taps and attribute that, or pass --model with the MODEL it was exported from");
    b.final = attribute(again, narrowed);
    b.rounds.push_back(round_of(b.final));
    if (!b.final.earliest_drift) {
      b.stopped = "the narrowed twin does not drift where the wider one did (its taps changed what the "
                  "delegate computes: delegation " + std::string(b.final.taps.delegation_matches ? "matches" : "differs") +
                  "); the drift starts among the eligible nodes " + std::to_string(first) + ".." + std::to_string(br.drift);
      return b;
    }
    const Bracket now = bracket_of(b.final);
    if (now.drift == br.drift && now.before == br.before) {
      b.stopped = "the narrowed twin could tap no node between " + std::to_string(first) + " and " +
                  std::to_string(br.drift) + " (the byte budget)";
      return b;
    }
  }
}

}  // namespace etproof
