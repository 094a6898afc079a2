// cpp/src/runtime/bundle_files.h — private to the library: what bundle.cpp (open, check) shares with
// loaded_model.cpp (load, run): reading a bundle's files once, and matching tensors to the
// manifest's specs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "etproof/runtime/bundle.h"

namespace etproof::bundle_detail {

inline constexpr const char* kReexport =
    "re-export the bundle; the .pte (or its .ptd) was changed or truncated after export";

using Bytes = std::vector<uint8_t>;

// What one pass over a file found.
struct FileRead {
  uint64_t bytes = 0;          // read until end of file, or `expected` + 1 when it is longer
  std::string sha256;          // of those bytes, lower-case hex ("" when not hashed)
  std::shared_ptr<Bytes> kept; // the bytes, when asked to keep them and there were `expected`
};

// Reads a file once, in 1 MiB steps, hashing each step while it is in cache (when `hash`). With
// `keep`, into one buffer of `expected` bytes that is returned. Throws Error{kIo}.
FileRead read_file(const std::filesystem::path& path, uint64_t expected, bool keep, bool hash);

// The artifact and every data file against the manifest (every problem at once,
// Error{kArtifactMismatch}); the program's bytes when the bundle has no data files.
std::shared_ptr<const Bytes> check_artifacts(const Bundle& b);

// A shape against a spec's (−1: any extent).
bool shape_matches(const std::vector<int64_t>& given, const std::vector<int64_t>& spec);
const TensorSpec* find_spec(const std::vector<TensorSpec>& specs, const std::string& name);
std::vector<std::string> spec_names(const std::vector<TensorSpec>& specs);

// The methods of a manifest: Manifest::methods, or, for a Manifest built by hand without them,
// one "forward" of its top-level inputs and outputs.
std::vector<MethodSpec> methods_of(const Manifest& m);

// The specs (inputs or outputs) of a golden case's method. A case naming no method, or a
// Manifest without methods: the top-level ones. A case naming a method the manifest does not
// list: Error{kManifestInvalid} (the reader never builds one).
const std::vector<TensorSpec>& case_specs(const Bundle& b, const GoldenCase& c, bool inputs);

}  // namespace etproof::bundle_detail
