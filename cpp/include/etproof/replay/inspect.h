// etproof/replay/inspect.h — `etproof inspect`: what a bundle holds (manifest, the delegates in the
// program as the runtime reads them, delegation per operator, tensors, goldens, the derived bound).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/gate/references.h"
#include "etproof/gate/gate.h"
#include "etproof/runtime/targets.h"

namespace etproof {

struct Inspection {
  Bundle bundle;                       // opened and verified (open_bundle)
  // The delegates in the program, read by the runtime; the manifest's record is the fallback
  // when this binary cannot load the program (delegates_from says which one it is).
  std::vector<std::string> delegates;
  std::string delegates_from = "manifest";  // "program" | "manifest"
  std::string load_note;               // why the program could not be loaded here, if it could not
  // The manifest's target against this machine (etproof/targets.h), where the manifest has one.
  std::optional<TargetCheck> target_check;
  // The bound as parity and matrix apply it on this machine (references.h: plan_judgement, the
  // same plan the replay makes): the rule, what it is judged against and why, and per golden
  // case and float output the bound as applied (resolved, widened against truth where the plan
  // widens), read from the bundle's references without running the program.
  std::optional<Bound> bound;          // the plan's rule (nullopt: none derivable)
  std::string bound_note;              // why none is derivable, if none is
  std::string judged;                  // the plan's one line: what against what
  std::string precision;               // the precision judged here (precision_here)
  std::string precision_reason;        // why it differs from the manifest's, if it does
  struct Applied {
    std::string case_id, output;
    AppliedBound bound;
  };
  std::vector<Applied> applied;        // float outputs of every case (integer outputs are exact)
  std::string applied_note;            // why applied is empty or partial (unreadable references)
};

// Opens the bundle (Errors as open_bundle: manifest-invalid, artifact-mismatch, io), tries to load
// it (a failure is recorded in load_note, never thrown) and derives its bound.
[[nodiscard]] Inspection inspect_bundle(const std::filesystem::path& path);

// Text. A program with several methods (has_several_methods) shows each method ("method NAME")
// with its inputs and outputs, and its goldens as METHOD/CASE.
[[nodiscard]] std::string to_text(const Inspection& i);
// {"bundle", "name", "model", "weights"?, "engine", "backend", "recipe", "precision",
//  "compute_unit"?, "delegates", "delegates_from", "manifest_delegates", "load_error"?,
//  "delegation"?, "inputs", "outputs", "methods"?, "goldens", "artifact", "bound", "labels"?,
//  "preprocessing", "toolchain", "created_utc"}
// "inputs" and "outputs" are the first method's; "methods" ([{"name", "inputs", "outputs"}]) and
// each golden's "method" are there only for a program with several methods.
[[nodiscard]] nlohmann::json to_json(const Inspection& i);

}  // namespace etproof
