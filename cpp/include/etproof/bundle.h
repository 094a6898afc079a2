// etproof/bundle.h — the runtime binding: open a bundle, check it, load it into ExecuTorch, run it.
//
// Ownership and lifetime: a Bundle owns its Manifest and paths (plain values, freely copyable).
// A LoadedModel owns an executorch::extension::Module and therefore the program bytes and the
// planned memory; tensors it returns are copies (HostTensor) and outlive it. LoadedModel is
// move-only and not thread-safe (ExecuTorch's Module is not).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etproof/manifest.h"
#include "etproof/npy.h"

namespace etproof {

struct Bundle {
  std::filesystem::path dir;            // the bundle directory
  std::filesystem::path manifest_path;  // dir / NAME.etproof.json
  std::filesystem::path artifact_path;  // dir / manifest.artifact.file
  std::filesystem::path goldens_dir;    // dir / NAME.goldens
  Manifest manifest;
};

// Opens a bundle given its directory or its manifest path. Reads and validates the manifest
// (Error{kManifestInvalid}); checks the artifact exists, that its size and SHA-256 equal the
// manifest's (Error{kArtifactMismatch}: "re-export the bundle; the .pte was changed or
// truncated after export"), and the same for each data file. Reads nothing else.
Bundle open_bundle(const std::filesystem::path& path);

// Every bundle directory directly under `dir` (those containing a *.etproof.json), sorted by name.
// Does not open them.
std::vector<std::filesystem::path> find_bundles(const std::filesystem::path& dir);

// A golden case's tensors, read from NAME.goldens/. Throws Error{kIo}/{kNpyInvalid}, and
// Error{kDtypeMismatch}/{kShapeMismatch} when a file disagrees with the manifest's spec.
std::map<std::string, HostTensor> read_golden_inputs(const Bundle& b, const GoldenCase& c);
std::map<std::string, HostTensor> read_golden_outputs(const Bundle& b, const GoldenCase& c);

class LoadedModel {
 public:
  // Loads the program and its "forward" method. Before loading the method, reads the delegate
  // ids from the program itself (MethodMeta::num_backends / get_backend_name) and refuses with
  // Error{kBackendUnavailable} naming the missing id and listing the registered ones when any is
  // not registered or not available. An ExecuTorch refusal becomes Error{kLoadFailed} with
  // ExecuTorch's code. A truncated or corrupted .pte never crashes: it is refused before or by
  // ExecuTorch's loader (open_bundle's hash check catches it first).
  static LoadedModel load(const Bundle& bundle);

  LoadedModel(LoadedModel&&) noexcept;
  LoadedModel& operator=(LoadedModel&&) noexcept;
  ~LoadedModel();

  // Delegate ids present in the program (distinct, sorted), as read from MethodMeta.
  const std::vector<std::string>& program_delegates() const;

  // Runs forward on named inputs. Every manifest input must be given exactly once; each is
  // checked against the manifest (Error{kDtypeMismatch}, Error{kShapeMismatch} naming the input,
  // expected and given) BEFORE anything runs. Execution failure: Error{kRunFailed} with
  // ExecuTorch's code. Returns outputs by manifest name, copied to host.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& inputs);

 private:
  struct Impl;
  explicit LoadedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace etproof
