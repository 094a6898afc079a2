// Private to the runtime layer: LoadedModel::load's stages (load_checks.cpp), each one check of the
// program against its manifest and this machine, in the order load() runs them, and the
// ExecuTorch <-> etproof conversions loaded_model.cpp shares with them. Each throws the Error the
// stage names (etproof/runtime/bundle.h, LoadedModel::load, lists them).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>

#include "etproof/core/manifest.h"
#include "etproof/runtime/backend_quirks.h"
#include "runtime/bundle_files.h"

namespace etproof {

// One method of the program, as loaded: its manifest signature and what ExecuTorch records of
// its inputs.
struct LoadedMethod {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<bool> input_planned;  // per input: ExecuTorch copies it into planned memory
  // Per input: the sizes the program records (MethodMeta). For a dynamic dimension that is the
  // largest size ExecuTorch planned memory for (a dynamic-bound tensor's upper bound).
  std::vector<std::vector<int64_t>> input_bounds;
};

namespace load_detail {
namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using bundle_detail::Bytes;

// "InvalidProgram (0x23)": ExecuTorch's name of an error and its code.
std::string et_error_text(et::Error e);
ScalarType to_scalar_type(DType d);
std::optional<DType> from_scalar_type(ScalarType t);
// A dtype's etproof name, or "ExecuTorch ScalarType N" for one etproof has no name for.
std::string scalar_type_name(ScalarType t);
bool readable_program_string(const char* p, const Bytes* program);

// The MethodMeta of every method the manifest lists (bytes: the program ExecuTorch loaded from,
// nullptr when it loaded by path). A method the program lacks: Error{kArtifactMismatch} naming the
// program's methods; one it cannot describe: Error{kLoadFailed}.
std::vector<et::MethodMeta> method_metas(Module& module, const std::vector<LoadedMethod>& methods,
                                         const Bytes* bytes, const Manifest& m, const std::string& pte);
// The delegate ids the program contains (distinct, sorted, every method's); Error{kArtifactMismatch}
// when they are not the manifest's, Error{kLoadFailed} when one cannot be read.
std::vector<std::string> read_program_delegates(const std::vector<et::MethodMeta>& metas, const Bytes* program,
                                                const Manifest& m, const std::string& pte);
// Error{kBackendNotLinked} / Error{kBackendUnavailable} naming each delegate this binary cannot run.
void refuse_unavailable_delegates(const std::vector<std::string>& delegates, const Manifest& m);
// What a target-bound artifact was compiled for (the program's header; nullopt: none) and the
// backend module that can explain a failed load as another target's (nullptr: none).
struct TargetPlan {
  std::optional<std::string> blob;
  const BackendQuirks* quirks = nullptr;
};
// Error{kTargetMismatch} when the program's target is not this machine's.
TargetPlan check_program_target(const Manifest& m, const Bytes* program, const std::vector<std::string>& delegates);
// Each method's signature against its manifest specs (Error{kArtifactMismatch} listing every
// disagreement); records what ExecuTorch plans for each input (LoadedMethod::input_planned, input_bounds).
void check_signature(std::vector<LoadedMethod>& methods, bool several, const std::vector<et::MethodMeta>& metas,
                     const Manifest& m);
// Error{kLoadFailed} when the program plans more memory than this machine has.
void check_planned_memory(const std::vector<LoadedMethod>& methods, const std::vector<et::MethodMeta>& metas,
                          const Manifest& m, const std::string& pte);
// Refuses operators this binary has no kernel for (the manifest's list), then loads every method,
// turning ExecuTorch's refusal into the Error it means (a target mismatch, a missing kernel, a
// failed load with what ExecuTorch said); ExecuTorch's Error lines of a good load go to stderr.
void load_methods(Module& module, const std::vector<LoadedMethod>& methods, const Manifest& m,
                  const TargetPlan& target, const std::string& with_data, const std::vector<std::string>& quoted);

}  // namespace load_detail
}  // namespace etproof
