// core/manifest_reader.h — the manifest reader's parts (docs/manifest.md), shared by
// manifest.cpp (entry points, top-level fields), manifest_tensors.cpp (inputs, outputs and what
// names them) and manifest_references.cpp (references, goldens, methods, budget).
//
// Each part runs on a document schema/manifest.schema.json has already accepted (etproof/core/
// schema.h): it extracts the typed Manifest and checks only what the schema cannot state —
// names that refer to other fields, sorted and distinct lists, bounds that depend on another
// field, integers beyond int64. Every problem is recorded with its field path.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etproof/core/manifest.h"
#include "core/json_reader.h"

namespace etproof::detail {

class ManifestReader : public JsonReader {
 public:
  // manifest_tensors.cpp
  // `key` ("inputs" or "outputs") of `obj`, whose field path is `parent` ("" at the top level,
  // "methods[1]" within a schema-2 method).
  std::vector<TensorSpec> tensor_specs(const json& obj, const std::string& parent, const char* key);
  // outputs[i].dynamic_dims[k].name: each one of the method's inputs' dynamic dimensions (read by
  // tensor_specs; `parent` is the method's path, "" for schema 1).
  void output_dims_named(const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs,
                         const std::string& parent);
  std::optional<ImagePreprocessing> preprocessing(const json& doc, const std::vector<TensorSpec>& inputs);
  std::optional<Labels> labels(const json& doc, const std::vector<TensorSpec>& outputs);

  // manifest_references.cpp
  std::map<std::string, ReferenceInfo> references(const json& doc);
  std::optional<Budget> budget(const json& doc);
  // `goldens` of `obj` (field path `parent`, as tensor_specs), the cases of `method`.
  std::vector<GoldenCase> goldens(const json& obj, const std::string& parent, const std::string& method,
                                  const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs,
                                  const std::map<std::string, ReferenceInfo>& refs);
  // Schema 2's methods, each as schema 1's top-level fields; needs m.references.
  void methods(const json& doc, Manifest& m);
  // goldens[i].sequence over every method: each sequence's steps 0..n-1, each once; in schema 2
  // no sequence named as a method. Needs m.goldens and m.methods.
  void sequences(const Manifest& m);
  // greedy.output: an output (floating, rank >= 2) of every method a sequence step runs through.
  void greedy(const json& doc, Manifest& m);

 private:
  void output_options(const json& e, const std::string& path, TensorSpec& t);
  void dynamic_dims(const json& e, const std::string& path, TensorSpec& t);
  std::optional<ProgramAtExport> program_at_export(const json& p);
  std::map<std::string, std::string> golden_files(const json& g, const std::string& path, const char* key,
                                                  const std::vector<TensorSpec>& specs);
  std::map<std::string, std::map<std::string, FileRef>> golden_references(
      const json& g, const std::string& path, const std::map<std::string, ReferenceInfo>& refs,
      const std::vector<TensorSpec>& outputs);
  std::vector<FileRef> golden_hashes(const json& g, const std::string& path, const GoldenCase& c);
};

// Whether `specs` has one named `name`.
inline bool names_one_of(const std::vector<TensorSpec>& specs, const std::string& name) {
  return std::any_of(specs.begin(), specs.end(), [&](const TensorSpec& t) { return t.name == name; });
}

}  // namespace etproof::detail
