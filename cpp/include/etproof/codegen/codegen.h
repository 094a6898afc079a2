// etproof/codegen/codegen.h — `etproof gen`: a typed C++ API for one bundle, generated from its manifest
// (docs/api.md, "The generated C++ API"; the runtime side is etproof/typed.h).
//
// The header declares one class named after the model. Per method METHOD (schema 1: `forward`):
// `struct MethodInputs` / `struct MethodOutputs` whose members are the manifest's tensor names,
// each an etproof::Tensor<T, E...> of the manifest's dtype and shape (a -1 is etproof::dyn), and
// `MethodOutputs method(const MethodInputs&)` plus a positional overload; the first method is also
// `run` (with `Inputs` / `Outputs`). Constants name the bundle the code was generated from (its
// program's SHA-256, which `open` checks), its backend, recipe, precision and delegates; a bundle
// with labels gets `kLabels` and `top_k`; one with image preprocessing gets `preprocessing()` and
// `preprocess` (from a file or an RGB8 buffer: etproof/image.h, the export half's arithmetic).
#pragma once

#include <filesystem>
#include <string>

#include "etproof/runtime/bundle.h"

namespace etproof {

struct GenOptions {
  // The class's name; empty: the manifest's model name in CamelCase ("efficientnet_lite0" ->
  // EfficientnetLite0). Must be a C++ identifier and no keyword.
  std::string class_name;
  // The namespace it is declared in ("a::b" nests); empty: the global namespace.
  std::string namespace_name = "etproof_models";
};

struct GeneratedCode {
  std::string class_name;
  std::string header_name;  // CLASS-in-snake_case.h ("efficientnet_lite0.h")
  std::string source_name;  // the same stem, .cpp
  std::string header;       // file contents
  std::string source;
  bool written = false;     // write_model_api: whether either file changed on disk
};

// The code for an opened bundle (only its manifest is read). Throws Error{kInvalidArgument} for a
// class or namespace name that is no C++ identifier (or is a keyword), and when two tensor names of
// one method, or two method names, become the same identifier.
GeneratedCode generate_model_api(const Bundle& bundle, const GenOptions& options);

// Opens the bundle at `bundle` (open_bundle: the manifest read and checked, the program's hash
// verified) and writes both files into `out_dir` (created), each through a temporary file and a
// rename, and only when its contents changed (a build that regenerates recompiles nothing that did
// not change). Returns what was written. Throws open_bundle's errors, generate_model_api's, and
// Error{kIo} naming the path that could not be written (nothing half-written is left).
GeneratedCode write_model_api(const std::filesystem::path& bundle,
                              const std::filesystem::path& out_dir, const GenOptions& options);

}  // namespace etproof
