// replay/repeat.h — private to the replay layer: runs that must repeat (Repetition;
// CaseReport::repeats, Status::kNondeterministic).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"

namespace etproof::detail {

// One case's judged run as replay() kept it for the repeats: its inputs and the program's outputs.
struct JudgedRun {
  std::map<std::string, HostTensor> inputs, outputs;
};

// The cases of one case run (one case, or a sequence's steps in order: case_runs) as replayed,
// with the index of the first in ParityReport::cases; judged[i] is step i's judged run, nullopt
// where it did not run (an error), which also stops the steps after it.
struct ReplayedRun {
  std::vector<const GoldenCase*> steps;
  size_t first = 0;
  std::vector<std::optional<JudgedRun>> judged;
};

// Runs each case that ran again: o.repetition.repeat - 1 more times on `model` (a program that writes state,
// `fresh_state`: each time on a program loaded afresh), then once on each of o.repetition.fresh_loads programs
// loaded afresh (LoadedModel::load(b, o.isolation)); compares every run's outputs byte for byte
// with the judged run's and sets CaseReport::repeats. Errors of the later runs (a load, a run, a
// crashed worker) are recorded in RepeatReport::failed, never thrown.
void repeat_runs(ParityReport& r, const Bundle& b, LoadedModel& model, const ReplayOptions& o,
                 const std::vector<ReplayedRun>& runs, bool fresh_state);

// Each case whose repeats were not identical (RepeatReport::identical) becomes nondeterministic
// and fails: its detail names the runs, the distinct outputs, the largest difference and output,
// and the judged run's own status and detail (which no xfail record covers).
void judge_repeats(ParityReport& r);

}  // namespace etproof::detail
