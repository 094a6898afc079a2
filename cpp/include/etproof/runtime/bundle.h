// etproof/runtime/bundle.h — the runtime binding: open a bundle, check it, load it into ExecuTorch, run it.
//
// Ownership and lifetime: a Bundle owns its Manifest and paths (plain values) and, once its
// artifact is verified, the program bytes that were hashed, shared between copies (a Bundle stays
// cheap to copy). A LoadedModel owns an executorch::extension::Module and shares those bytes, so
// they outlive the Module whatever happens to the Bundle; it also owns the planned memory. Tensors
// it returns are copies (HostTensor) and outlive it. LoadedModel is move-only and not thread-safe
// (ExecuTorch's Module is not).
//
// The program is read once: verifying reads the .pte with one sized read into memory, hashes that
// buffer (SHA-256, OpenSSL EVP) and keeps it; LoadedModel::load hands the same buffer to
// ExecuTorch's BufferDataLoader. A bundle with data files (.ptd) is hashed once, file by file,
// and keeps no bytes: ExecuTorch loads it by path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etproof/core/manifest.h"
#include "etproof/runtime/isolation.h"
#include "etproof/core/npy.h"

namespace etproof {

struct Bundle {
  std::filesystem::path dir;            // the bundle directory
  std::filesystem::path manifest_path;  // dir / NAME.etproof.json
  std::filesystem::path artifact_path;  // dir / manifest.artifact.file
  std::filesystem::path goldens_dir;    // dir / NAME.goldens
  Manifest manifest;
  // True once the artifact (and every data file) was found to have the manifest's size and
  // SHA-256 (open_bundle by default, or verify_artifact). LoadedModel::load verifies a bundle
  // that is not.
  bool artifact_verified = false;
  // The .pte's bytes exactly as hashed, when verified and the bundle has no data files; null
  // otherwise. Held until the last copy of the Bundle and the last LoadedModel loaded from it go:
  // a caller that opens many bundles keeps memory flat by letting each go before the next, or,
  // to keep many verified Bundles at once, by resetting `program`; LoadedModel::load then reads
  // the file again, once, without hashing it again.
  std::shared_ptr<const std::vector<uint8_t>> program;
};

struct OpenOptions {
  // true: check the artifact against the manifest now (verify_artifact). false: read and check
  // the manifest only, touching neither the .pte nor its data files, so a caller can refuse the
  // bundle (its delegates not linked here: registry.h delegate_availability) before paying for
  // the hash; verify_artifact or LoadedModel::load checks the artifact later.
  bool verify_artifact = true;
};

// Opens a bundle given its directory, its manifest path, or a file inside it (the .pte). Reads and
// validates the manifest (Error{kManifestInvalid}: unreadable schema, a name that is not the file
// name, a backend/recipe/precision the backend table does not list, a backend that cannot own the
// recorded delegates). With options.verify_artifact (the default) then calls verify_artifact.
// Reads nothing else (not the goldens).
Bundle open_bundle(const std::filesystem::path& path, const OpenOptions& options = {});

// Checks that the artifact exists and that its size and SHA-256 equal the manifest's, and the same
// for each data file; every problem is listed at once in one Error{kArtifactMismatch} ("re-export
// the bundle; the .pte (or its .ptd) was changed or truncated after export"). Error{kIo} when a file exists but
// cannot be read. Reads each file once: the .pte of a bundle without data files into
// bundle.program (one sized read; the SHA-256 is taken of those bytes), data files streamed.
// Sets bundle.artifact_verified. Does nothing when the bundle is already verified.
void verify_artifact(Bundle& bundle);

// Every bundle directory directly under `dir` (those containing a *.etproof.json), sorted by name;
// dot directories (an export's staging folder .NAME.tmp-PID-*, left by a killed export) are skipped,
// as are entries whose type cannot be read (a symlink loop). Error{kIo} when `dir` is not a
// directory or cannot be listed.
std::vector<std::filesystem::path> find_bundles(const std::filesystem::path& dir);

// What is wrong with a golden case's input and output files against the manifest's
// goldens[i].files (GoldenCase::files): each missing, symbolic-link, wrong-size or
// wrong-SHA-256 file, one line each, naming it. Empty: the files are as exported (or, for a
// bundle that predates goldens[i].files, none of them is a symbolic link). Error{kIo} only
// when a file exists but cannot be read.
std::vector<std::string> golden_file_problems(const Bundle& b, const GoldenCase& c);

// Whether read_golden_inputs/outputs refuse files golden_file_problems finds fault with.
enum class GoldenCheck {
  kHashes,       // refuse them: Error{kArtifactMismatch} naming each (the default)
  kAllowEdited,  // read them anyway (parity --allow-edited-goldens; the caller reports the case
                 // as drifted, never as agreed)
};

// A golden case's tensors, read from NAME.goldens/ and checked against the specs of the case's
// method (GoldenCase::method; Manifest::inputs/outputs for a case naming none). With
// GoldenCheck::kHashes the case's files are checked first (golden_file_problems): a changed,
// truncated, missing or symlinked golden is Error{kArtifactMismatch} naming the file, remedy:
// re-export (or --allow-edited-goldens to see the numbers). Throws Error{kIo}/{kNpyInvalid}, and
// Error{kDtypeMismatch}/{kShapeMismatch} when a file disagrees with the manifest's spec;
// Error{kManifestInvalid} when the case names a method or tensor the manifest does not list.
// The files are read twice (hashed, then parsed).
std::map<std::string, HostTensor> read_golden_inputs(const Bundle& b, const GoldenCase& c,
                                                     GoldenCheck check = GoldenCheck::kHashes);
std::map<std::string, HostTensor> read_golden_outputs(const Bundle& b, const GoldenCase& c,
                                                      GoldenCheck check = GoldenCheck::kHashes);

// One reference captured at export for a golden case (GoldenCase::references, manifest.h
// ReferenceInfo: "float64" the truth, the recipe's name for its PT2E emulation, "float16" /
// "bfloat16" the precision emulations), by output name, read from NAME.goldens/. Returns {} when
// the case carries no reference `name` (a bundle that predates references, or one whose
// Manifest::references records it as not captured).
// Each file is checked before it is parsed: its size and SHA-256 against the manifest's
// (Error{kArtifactMismatch} naming the file, remedy: re-export), then its dtype (Error{
// kDtypeMismatch}: an integer or bool output's reference has that output's dtype; a floating
// output's is float64 for "float64" and float32 for the emulations, any floating dtype accepted)
// and its shape against the output spec of the case's method (Error{kShapeMismatch});
// Error{kIo}/{kNpyInvalid} as
// read_npy. The file is read twice (hashed, then parsed); references are small (one output each).
std::map<std::string, HostTensor> read_golden_reference(const Bundle& b, const GoldenCase& c,
                                                        const std::string& name);

class LoadedModel {
 public:
  // Loads the program and every method the manifest lists (Manifest::methods: "forward" for a
  // schema-1 bundle), in manifest order. A bundle not yet verified is verified first
  // (verify_artifact's errors), so loading never runs unchecked bytes; a verified one loads from
  // bundle.program, without reading the file again. A method the manifest lists that the program
  // lacks: Error{kArtifactMismatch} naming it and the program's methods. Before loading the
  // methods, reads the delegate ids from the program itself (the union over its methods of
  // MethodMeta::num_backends / get_backend_name), compares them with the manifest's `delegates`
  // (Error{kArtifactMismatch}), checks each method's signature against its manifest inputs and
  // outputs (Error{kArtifactMismatch}; with several methods each problem names its method), and
  // refuses, naming
  // the missing ids and listing the registered ones (registry.h delegate_availability), with
  // Error{kBackendNotLinked} when any is not registered here, else Error{kBackendUnavailable}
  // when any reports itself unavailable. An ExecuTorch refusal becomes Error{kLoadFailed} with
  // ExecuTorch's code. A truncated or corrupted .pte never crashes: it is refused before or by
  // ExecuTorch's loader (open_bundle's hash check catches it first).
  static LoadedModel load(const Bundle& bundle);
  // The same in a worker process when isolation.enabled (etproof/isolation.h): the worker opens
  // the bundle again from bundle.manifest_path (so the manifest and every file are read and
  // verified there, from disk: an in-memory edit of `bundle` is not seen), loads it and answers
  // each run(); the errors above come back unchanged, and a worker that dies (a signal, a limit)
  // is Error{kCrashed}, here or on a later run(). Without isolation.enabled: load(bundle).
  static LoadedModel load(const Bundle& bundle, const Isolation& isolation);

  LoadedModel(LoadedModel&&) noexcept;
  LoadedModel& operator=(LoadedModel&&) noexcept;
  ~LoadedModel();

  // Delegate ids present in the program (distinct, sorted; every method's), as read from
  // MethodMeta.
  const std::vector<std::string>& program_delegates() const;

  // The methods loaded, in the manifest's order (schema 1: "forward").
  std::vector<std::string> method_names() const;

  // Runs `method` on named inputs. A method that was not loaded (the manifest does not list it):
  // Error{kInvalidArgument} naming it and the loaded methods. Every input of that method must be
  // given exactly once; each is checked against the method's manifest spec (Error{kDtypeMismatch},
  // Error{kShapeMismatch} naming the input, expected and given; Error{kInvalidArgument} for an
  // unknown or missing input; with several methods the message names the method) BEFORE anything
  // runs. Execution failure: Error{kRunFailed} with ExecuTorch's code. An output whose shape is
  // not the manifest's (its rank, a static size, or a dimension that is an input's Dim,
  // outputs[i].dynamic_dims, at another size than that input was given): Error{kOutputShapeMismatch}
  // naming the output, both shapes and the delegates (the program ran: a drift of shape, the
  // backend's). Returns the method's outputs by manifest name, copied to host.
  // Inputs the program plans memory for (ExecuTorch's default memory planning, which etproof's
  // exporter uses) are not copied here: ExecuTorch gets tensors over the HostTensors' bytes (their
  // dtype is the manifest's, their layout dense C-order by construction) and Method::set_input
  // copies them into the program's own buffer, reading them only. An input the program does not
  // plan is copied first, as ExecuTorch would compute on the given bytes in place. Either way
  // `inputs` are unchanged after the call (bundle_test checks it).
  std::map<std::string, HostTensor> run(const std::string& method, const std::map<std::string, HostTensor>& inputs);
  // The same on the first method the manifest lists (a schema-1 bundle's "forward").
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& inputs);

 private:
  struct Impl;
  static std::unique_ptr<Impl> impl_for(const Manifest& m);  // name and method specs, nothing loaded
  explicit LoadedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace etproof
