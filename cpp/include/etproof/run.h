// etproof/run.h — run a bundle's program once on caller-given inputs (`etproof run`): the program
// as the bundle recorded it, through the same load path as the gate (bundle.h), with a summary of
// each output. No bound and no verdict: judging is replay.h's job.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etproof/labels.h"
#include "etproof/npy.h"

namespace etproof {

struct RunOutput {
  std::string name;                            // the manifest's output name
  HostTensor tensor;                           // as the program returned it
  // Over the non-NaN elements, in the output's units (all 0 when there are none):
  double min = 0, max = 0, mean = 0;
  size_t argmax = 0;                           // flat index of the first maximum
  size_t nan_count = 0;
  std::vector<Ranked> top;                     // top 5 by the manifest's labels, when they name
                                               // this output; empty otherwise
  std::optional<std::filesystem::path> written;  // OUT_DIR/NAME.npy, when an out_dir was given
};

struct RunResult {
  std::string bundle;                   // the manifest's name
  std::string backend;                  // the manifest's backend (export key)
  std::vector<std::string> delegates;   // delegate ids present in the program, sorted
  std::vector<RunOutput> outputs;       // in the manifest's output order
};

// Opens and verifies the bundle (open_bundle), reads each input from its .npy file, loads and runs
// the program (LoadedModel::run checks names, dtypes and shapes before running), and, when
// `out_dir` is not empty, writes each output there as NAME.npy (creating the directory).
// Throws what those do: Error{kManifestInvalid}, {kArtifactMismatch}, {kIo}, {kNpyInvalid},
// {kBackendNotLinked}, {kBackendUnavailable}, {kLoadFailed}, {kDtypeMismatch}, {kShapeMismatch},
// {kInvalidArgument} (an input the program does not have, or one missing), {kRunFailed}; and
// Error{kIo} when out_dir cannot be created or written.
[[nodiscard]] RunResult run_bundle(const std::filesystem::path& bundle,
                                   const std::map<std::string, std::filesystem::path>& input_files,
                                   const std::filesystem::path& out_dir = {});

// "ran NAME (backend B, delegates D)", then per output its dtype, shape, min/max/mean, the first
// 8 values, the top 5 labels where the manifest has them, and the file written.
[[nodiscard]] std::string to_text(const RunResult& r);

}  // namespace etproof
