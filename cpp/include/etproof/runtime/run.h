// etproof/runtime/run.h — run a bundle's program once on caller-given inputs (`etproof run`): the program
// as the bundle recorded it, through the same load path as the gate (bundle.h), with a summary of
// each output. No bound and no verdict: judging is replay.h's job.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/labels.h"
#include "etproof/core/npy.h"

namespace etproof {

struct RunOutput {
  std::string name;                            // the manifest's output name
  std::string method;                          // the method that returned it
  HostTensor tensor;                           // as the program returned it
  // Over the non-NaN elements, in the output's units (all 0 when there are none):
  double min = 0, max = 0, mean = 0;
  size_t argmax = 0;                           // flat index of the first maximum
  size_t nan_count = 0;
  std::vector<Ranked> top;                     // top 5 by the manifest's labels, when they name
                                               // this output; empty otherwise
  // OUT_DIR/NAME.npy (OUT_DIR/METHOD.NAME.npy when the bundle has several methods), when an
  // out_dir was given.
  std::optional<std::filesystem::path> written;
};

struct RunResult {
  std::string bundle;                   // the manifest's name
  std::string backend;                  // the manifest's backend (export key)
  std::vector<std::string> delegates;   // delegate ids present in the program, sorted
  std::vector<std::string> methods;     // the methods run, in the manifest's order
  bool several_methods = false;         // has_several_methods: outputs are named METHOD.OUTPUT
  std::vector<RunOutput> outputs;       // method by method, each in the manifest's output order
};

// Opens and verifies the bundle (open_bundle), runs each of `methods` (empty: every method the
// manifest lists) once, loading the program once (LoadedModel::run checks names, dtypes and shapes
// before running), and, when `out_dir` is not empty, writes each output there as NAME.npy, or
// METHOD.NAME.npy when the bundle has several methods (creating the directory).
// `input_files` is by input name: each file is given to every selected method with an input of
// that name (read once). Before anything is loaded, throws Error{kInvalidArgument} for a method
// the manifest does not list (naming it and the bundle's methods), a selected method missing one
// of its inputs (naming the method and the input), or an input no selected method has (naming the
// selected methods' inputs). Then throws what those do: Error{kManifestInvalid},
// {kArtifactMismatch}, {kIo}, {kNpyInvalid}, {kBackendNotLinked}, {kBackendUnavailable},
// {kLoadFailed}, {kDtypeMismatch}, {kShapeMismatch}, {kRunFailed}; and Error{kIo} when out_dir
// cannot be created or written.
[[nodiscard]] RunResult run_bundle(const std::filesystem::path& bundle,
                                   const std::map<std::string, std::filesystem::path>& input_files,
                                   const std::filesystem::path& out_dir = {},
                                   const std::vector<std::string>& methods = {});

// "ran NAME (backend B, delegates D)" (with ", methods M" when the bundle has several), then per
// output (named METHOD.OUTPUT when it has several) its dtype, shape, min/max/mean, the first 8
// values, the top 5 labels where the manifest has them, and the file written.
[[nodiscard]] std::string to_text(const RunResult& r);

// The same as one JSON object (`etproof run --format json`): {"bundle", "backend", "delegates",
// "methods", "outputs": [{"name" (METHOD.OUTPUT with several methods), "method", "dtype", "shape",
// "min", "max", "mean" (null where every element is NaN), "argmax", "nan_count", "top":
// [{"label", "index", "probability"}], "written" (the .npy path, or null)}]}.
[[nodiscard]] nlohmann::json to_json(const RunResult& r);

}  // namespace etproof
