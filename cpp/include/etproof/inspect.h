// etproof/inspect.h — `etproof inspect`: what a bundle holds (manifest, the delegates in the
// program as the runtime reads them, delegation per operator, tensors, goldens, the derived bound).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/bundle.h"
#include "etproof/gate.h"

namespace etproof {

struct Inspection {
  Bundle bundle;                       // opened and verified (open_bundle)
  // The delegates in the program, read by the runtime; the manifest's record is the fallback
  // when this binary cannot load the program (delegates_from says which one it is).
  std::vector<std::string> delegates;
  std::string delegates_from = "manifest";  // "program" | "manifest"
  std::string load_note;               // why the program could not be loaded here, if it could not
  std::optional<Bound> bound;          // derive_bound of the manifest's recipe and precision
  std::string bound_note;              // why none is derivable, if none is
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
